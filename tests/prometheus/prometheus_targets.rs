//! What real monitoring setups look like, through a real Prometheus and a real VictoriaMetrics
//! scraping the simulator: a target down from the start, one engine scraped by two jobs, an
//! HA replica pair, a 15 s scrape interval, and a backend that answers 30 s late.
//!
//! Skipped (with a printed reason) when `prometheus` or `victoria-metrics` is missing, unless
//! `KVTOP_TEST_REQUIRE_ALL` is set.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use super::prometheus_live::{Backend, host_port, poll_until, prometheus, victoria_metrics};
use common::victoria::VmServer;
use kvtop::config::PrometheusConfig;
use kvtop::sources::prometheus::decode::decode_answer;
use kvtop::sources::prometheus::{
    ClientSettings, LabelMap, PromClient, QueryPlan, SlowAnswers, poll_once,
};
use kvtop_core::fleet::{
    DerivedPayload, DerivedReport, EngineStatus, Fleet, FleetSettings, QuantileWindow, ScrapeError,
    SourceReport, TargetHealth,
};
use kvtop_sim::{SimConfig, SimHandle, SimVersion};

fn client(url: &str) -> PromClient {
    PromClient::new(
        &PrometheusConfig::at(url.to_owned()),
        ClientSettings {
            timeout: Duration::from_secs(5),
            body_limit: 16 * 1024 * 1024,
            user_agent: "kvtop-test".into(),
        },
    )
    .expect("client")
}

async fn simulator() -> SimHandle {
    kvtop_sim::start(SimConfig {
        engines: 3,
        version: SimVersion::V1,
        seed: 11,
        ..SimConfig::default()
    })
    .await
    .expect("simulator")
}

/// The simulated engines that serve.
fn serving(sim: &SimHandle) -> Vec<&kvtop_sim::SimEndpoint> {
    sim.engines.iter().filter(|e| !e.down).collect()
}

/// A scrape config at `interval`: one job per `(job, extra labels)`, each listing every
/// serving engine with its pod, plus `extra` YAML targets in the first job.
fn config(sim: &SimHandle, interval: &str, jobs: &[(&str, &[&str])], extra: &str) -> String {
    let timeout = if interval == "1s" { "900ms" } else { "5s" };
    let mut yaml = format!(
        "global:\n  scrape_interval: {interval}\n  scrape_timeout: {timeout}\nscrape_configs:\n"
    );
    for (i, (job, replicas)) in jobs.iter().enumerate() {
        let _ = writeln!(yaml, "  - job_name: {job}\n    static_configs:");
        let replicas: Vec<&str> = if replicas.is_empty() {
            vec![""]
        } else {
            replicas.to_vec()
        };
        for engine in serving(sim) {
            for replica in &replicas {
                let replica = if replica.is_empty() {
                    String::new()
                } else {
                    format!(", prometheus_replica: \"{replica}\"")
                };
                let _ = writeln!(
                    yaml,
                    "      - targets: [\"{}\"]\n        labels: {{pod: \"{}\", namespace: \"llm\"{replica}}}",
                    host_port(&engine.url),
                    engine.name
                );
            }
        }
        if i == 0 {
            yaml.push_str(extra);
        }
    }
    yaml
}

fn into_fleet(url: &str, payload: DerivedPayload) -> Fleet {
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.ingest_source(SourceReport::Cycle(DerivedReport {
        source: url.to_owned(),
        at: kvtop_core::clock::unix_now(),
        took: 0.1,
        outcome: Ok(payload),
    }));
    fleet
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_prometheus_cannot_scrape_is_a_down_row_with_its_error() {
    if common::have_program("prometheus") {
        target_down_from_the_start(prometheus, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_victoria_metrics_cannot_scrape_is_a_down_row_with_its_error() {
    if common::have_program("victoria-metrics") {
        target_down_from_the_start(victoria_metrics, false).await;
    }
}

/// A front end without the targets API (Mimir, a VictoriaMetrics cluster's vmselect) before a
/// real server: the targets come from `up`, so the dead target still has its DOWN row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_targets_api_a_target_down_from_the_start_is_a_down_row_from_up() {
    if common::have_program("prometheus") {
        target_down_from_the_start(
            |config| {
                let server = prometheus(config);
                Box::new(NoTargetsApi::before(server))
            },
            true,
        )
        .await;
    }
}

/// Passes every request to the server behind, but answers 404 for `/api/v1/targets`.
struct NoTargetsApi {
    behind: Box<dyn Backend>,
    url: String,
    proxy: tokio::task::JoinHandle<()>,
}

impl NoTargetsApi {
    fn before(behind: Box<dyn Backend>) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", std_listener.local_addr().expect("addr"));
        let upstream = behind.url().trim_end_matches('/').to_owned();
        let proxy = tokio::spawn(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
            let http = reqwest::Client::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                let (http, upstream) = (http.clone(), upstream.clone());
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&request);
                    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let (status, body) = if path.starts_with("/api/v1/targets") {
                        (404, b"404 page not found\n".to_vec())
                    } else {
                        match http.get(format!("{upstream}{path}")).send().await {
                            Ok(r) => (
                                r.status().as_u16(),
                                r.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
                            ),
                            Err(_) => (502, Vec::new()),
                        }
                    };
                    let head = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                });
            }
        });
        NoTargetsApi { behind, url, proxy }
    }
}

impl Backend for NoTargetsApi {
    fn url(&self) -> &str {
        &self.url
    }
    fn log(&self) -> String {
        self.behind.log()
    }
}

impl Drop for NoTargetsApi {
    fn drop(&mut self) {
        self.proxy.abort();
    }
}

async fn target_down_from_the_start(start: impl FnOnce(&str) -> Box<dyn Backend>, from_up: bool) {
    let sim = simulator().await;
    let dead = "      - targets: [\"127.0.0.1:1\"]\n        labels: {pod: \"dead-pod\", namespace: \"llm\"}\n";
    let server = start(&config(&sim, "1s", &[("vllm", &[])], dead));
    let backend = server.as_ref();
    let client = client(backend.url());
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);
    let engines = serving(&sim).len();
    let payload = poll_until(
        &client,
        &plan,
        backend,
        "the engines and the dead target",
        |p| {
            p.engines.len() == engines
                && p.targets.as_ref().is_some_and(|targets| {
                    targets
                        .iter()
                        .any(|t| t.instance.pod == "dead-pod" && t.health == TargetHealth::Down)
                })
        },
    )
    .await;
    let fleet = into_fleet(backend.url(), payload);
    let row = fleet
        .engines()
        .iter()
        .find(|r| r.name == "dead-pod")
        .expect("a row for the target Prometheus cannot scrape");
    assert_eq!(row.status, EngineStatus::Down);
    let error = fleet
        .target(row.target)
        .and_then(|t| t.last_error.as_ref())
        .map(|(_, e)| e.clone());
    let Some(ScrapeError::Other(text)) = error else {
        panic!("no error on the dead target: {error:?}");
    };
    // The targets API gives the server's own error; `up` only that it is 0.
    if from_up {
        assert_eq!(text, "Prometheus cannot scrape it (up == 0)");
    } else {
        assert!(
            text.starts_with("Prometheus cannot scrape it: ")
                && text.contains("connection refused"),
            "{text}"
        );
    }
    let counts = fleet.counts();
    assert_eq!((counts.up, counts.down), (engines, 1), "{counts:?}");
    drop(server);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_scraping_one_engine_give_one_row_through_prometheus() {
    if common::have_program("prometheus") {
        one_row_per_engine(prometheus, &[("vllm-pods", &[]), ("vllm-monitor", &[])]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_scraping_one_engine_give_one_row_through_victoria_metrics() {
    if common::have_program("victoria-metrics") {
        one_row_per_engine(
            victoria_metrics,
            &[("vllm-pods", &[]), ("vllm-monitor", &[])],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_pair_gives_one_row_through_prometheus() {
    if common::have_program("prometheus") {
        one_row_per_engine(prometheus, &[("vllm", &["prom-0", "prom-1"])]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_pair_gives_one_row_through_victoria_metrics() {
    if common::have_program("victoria-metrics") {
        one_row_per_engine(victoria_metrics, &[("vllm", &["prom-0", "prom-1"])]).await;
    }
}

/// Each engine reported twice (two jobs, or two replicas) is one row whose tok/s is one
/// report's as the server computes it, never their sum.
async fn one_row_per_engine(
    start: impl FnOnce(&str) -> Box<dyn Backend>,
    jobs: &[(&str, &[&str])],
) {
    let sim = simulator().await;
    let server = start(&config(&sim, "1s", jobs, ""));
    let backend = server.as_ref();
    let client = client(backend.url());
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);
    let engines = serving(&sim).len();
    let gen_tps = "sum by (pod, job, prometheus_replica) (rate(vllm:generation_tokens_total[15s]))";
    // Wait until both reports of every engine have a rate.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let at = loop {
        let at = kvtop_core::clock::unix_now() - 3.0;
        let raw = client.query(gen_tps, Some(at)).await.expect("gen_tps");
        let answer = decode_answer(raw.status, &raw.body).expect("gen_tps answer");
        if answer.series.len() == 2 * engines
            && answer
                .series
                .iter()
                .all(|s| s.sample().is_some_and(|v| v > 0.0))
        {
            break at;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never two reports of every engine: {:?}\n{}",
            answer.series,
            backend.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let payload = poll_once(&client, &plan, Some(at), &mut SlowAnswers::default(), 1)
        .await
        .expect("a cycle");
    assert_eq!(payload.engines.len(), engines, "{:?}", payload.engines);
    let raw = client.query(gen_tps, Some(at)).await.expect("gen_tps");
    let answer = decode_answer(raw.status, &raw.body).expect("gen_tps answer");
    for engine in &payload.engines {
        let reports: Vec<f64> = answer
            .series
            .iter()
            .filter(|s| s.label("pod") == Some(engine.instance.pod.as_str()))
            .filter_map(|s| s.sample())
            .collect();
        assert_eq!(reports.len(), 2, "{}: {reports:?}", engine.instance.pod);
        let tps = engine.signals.gen_tps.expect("tok/s");
        assert!(
            reports
                .iter()
                .any(|r| (r - tps).abs() <= 1e-9 * r.abs().max(1.0)),
            "{}: kvtop {tps}, the server's reports {reports:?}",
            engine.instance.pod
        );
        assert!(engine.signals.running.is_some());
    }
    let fleet = into_fleet(backend.url(), payload);
    assert_eq!(fleet.engines().len(), engines);
    drop(server);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_15s_scrape_interval_still_gives_rates_and_quantiles_through_prometheus() {
    if common::have_program("prometheus") {
        sparse_scrapes(prometheus).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_15s_scrape_interval_still_gives_rates_and_quantiles_through_victoria_metrics() {
    if common::have_program("victoria-metrics") {
        sparse_scrapes(victoria_metrics).await;
    }
}

/// With the console's shortest window (15 s) and a 15 s scrape interval, rates and quantiles
/// are computed over four intervals (1 m) and are there.
async fn sparse_scrapes(start: impl FnOnce(&str) -> Box<dyn Backend>) {
    let sim = simulator().await;
    let server = start(&config(&sim, "15s", &[("vllm", &[])], ""));
    let backend = server.as_ref();
    let client = client(backend.url());
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);
    let engines = serving(&sim).len();
    let payload = poll_until(&client, &plan, backend, "rates and quantiles", |p| {
        p.engines.len() == engines
            && p.engines
                .iter()
                .all(|e| e.signals.gen_tps.is_some() && e.signals.itl_p95.is_some())
    })
    .await;
    assert_eq!(payload.window_secs, Some(60.0));
    let fleet = into_fleet(backend.url(), payload);
    assert_eq!(fleet.window_label(), "1m");
    for row in fleet.engines() {
        // Sampled up to one scrape interval ago: still Up.
        assert_eq!(row.status, EngineStatus::Up, "{}", row.name);
    }
    drop(server);
    sim.shutdown().await;
}

/// VictoriaMetrics at its default `-search.latencyOffset` answers 30 s late: the rows' age
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_backend_shows_its_lag() {
    if !common::have_program("victoria-metrics") {
        return;
    }
    let sim = simulator().await;
    let server = VmServer::start(
        &config(&sim, "1s", &[("vllm", &[])], ""),
        Duration::from_secs(30),
    );
    let client = client(&server.url);
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);
    let engines = serving(&sim).len();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(75);
    let mut slow = SlowAnswers::default();
    let payload = loop {
        let payload = poll_once(&client, &plan, None, &mut slow, 1).await;
        if let Ok(p) = &payload
            && p.engines.len() == engines
        {
            break p.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "VictoriaMetrics never answered: {payload:?}\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let now = kvtop_core::clock::unix_now();
    let fleet = into_fleet(&server.url, payload);
    for row in fleet.engines() {
        let age = now - row.last_ok.expect("a sample time");
        assert!(age >= 29.0, "{}: age {age}", row.name);
        assert_ne!(
            row.status,
            EngineStatus::Up,
            "{}: 30 s old is not fresh",
            row.name
        );
    }
    drop(server);
    sim.shutdown().await;
}

/// `kvtop check --prometheus URL -o json` lists every engine Prometheus knows, the one it
/// cannot scrape as DOWN with its error, with signals that agree with Prometheus' answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_through_prometheus_lists_every_engine_with_its_signals() {
    if !common::have_program("prometheus") {
        return;
    }
    check_lists_every_engine(prometheus).await;
}

/// The same through VictoriaMetrics (its targets API, its words for the dead target).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_through_victoria_metrics_lists_every_engine_with_its_signals() {
    if !common::have_program("victoria-metrics") {
        return;
    }
    check_lists_every_engine(victoria_metrics).await;
}

async fn check_lists_every_engine(start: impl FnOnce(&str) -> Box<dyn Backend>) {
    let sim = simulator().await;
    let dead = "      - targets: [\"127.0.0.1:1\"]\n        labels: {pod: \"dead-pod\", namespace: \"llm\"}\n";
    let server = start(&config(&sim, "1s", &[("vllm", &[])], dead));
    let backend = server.as_ref();
    let client = client(backend.url());
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);
    let engines = serving(&sim).len();
    // Every engine, and a decode-time quantile for each: the histograms have had observations
    // within the window (on a loaded machine the first ones can take a few scrapes).
    poll_until(
        &client,
        &plan,
        backend,
        "the engines and their decode times",
        |p| p.engines.len() == engines && p.engines.iter().all(|e| e.signals.decode_p95.is_some()),
    )
    .await;
    let url = backend.url().to_owned();
    let home = tempfile::tempdir().expect("temp home");
    let recording = home.path().join("prom.kvr");
    let kvtop = {
        let home = home.path().to_owned();
        move |args: Vec<String>| {
            std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"))
                .args(args)
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", home.join("config"))
                .env("XDG_STATE_HOME", home.join("state"))
                .env_remove("KVTOP_CONFIG")
                .output()
                .expect("kvtop runs")
        }
    };
    let args = |list: &[&str]| {
        list.iter()
            .map(|a| (*a).to_owned())
            .collect::<Vec<String>>()
    };
    let record = recording.to_str().expect("utf-8 path");
    let live = args(&[
        "check",
        "--prometheus",
        &url,
        "--duration",
        "3s",
        "-o",
        "json",
        "--record",
        record,
    ]);
    let replay = args(&["check", "--replay", record, "-o", "json"]);
    let (output, replayed) = tokio::task::spawn_blocking(move || (kvtop(live), kvtop(replay)))
        .await
        .expect("check");
    let parse = |output: &std::process::Output| -> serde_json::Value {
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
        })
    };
    let doc = parse(&output);
    // What Prometheus answered was recorded: its replay finds what the live run found, with
    // the same engines and signals.
    let again = parse(&replayed);
    assert_eq!(again["results"], doc["results"], "{again:#}");
    assert_eq!(again["engines"], doc["engines"], "{again:#}");
    let listed = doc["engines"].as_array().expect("an engines array");
    assert_eq!(listed.len(), engines + 1, "{doc:#}");
    let dead_row = listed
        .iter()
        .find(|e| e["pod"] == "dead-pod")
        .expect("the dead target");
    assert_eq!(dead_row["status"]["word"], "DOWN");
    assert_eq!(dead_row["namespace"], "llm");
    assert!(
        dead_row["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("connection refused")),
        "{dead_row:#}"
    );
    assert_eq!(dead_row["signals"]["down"], 1.0);

    // KV usage as Prometheus has it now (a second or two after the check's last cycle).
    let raw = client
        .query("vllm:kv_cache_usage_perc", None)
        .await
        .expect("kv");
    let answer = decode_answer(raw.status, &raw.body).expect("kv answer");
    for engine in serving(&sim) {
        let row = listed
            .iter()
            .find(|e| e["pod"] == engine.name.as_str())
            .unwrap_or_else(|| panic!("{} listed", engine.name));
        assert_eq!(row["status"]["word"], "UP", "{row:#}");
        assert_eq!(row["model"], engine.model.as_str(), "{row:#}");
        let kv = row["signals"]["kv_usage"].as_f64().expect("kv_usage");
        let prom = answer
            .series
            .iter()
            .find(|s| s.label("pod") == Some(engine.name.as_str()))
            .and_then(|s| s.sample())
            .expect("Prometheus' KV usage");
        assert!((kv - prom).abs() <= 0.25, "{}: {kv} vs {prom}", engine.name);
        assert!(row["signals"]["running"].is_number(), "{row:#}");
        // The dashboards' signals travel with the others.
        assert!(row["signals"]["decode_p95"].is_number(), "{row:#}");
    }
    // One entry per model, its quantiles over the merged histograms of its engines.
    let models = doc["models"].as_array().expect("a models array");
    let mut served: Vec<&str> = serving(&sim).iter().map(|e| e.model.as_str()).collect();
    served.sort_unstable();
    served.dedup();
    assert_eq!(models.len(), served.len(), "{models:#?}");
    for model in models {
        assert!(
            served.contains(&model["model"].as_str().unwrap_or("")),
            "{model:#}"
        );
        assert!(model["quantiles"]["decode_p95"].is_number(), "{model:#}");
        assert!(model["quantiles"]["e2e_p50"].is_number(), "{model:#}");
    }
    drop(server);
    sim.shutdown().await;
}
