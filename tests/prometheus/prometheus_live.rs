//! A real Prometheus, and a real VictoriaMetrics, scrape the simulated fleet (engines and
//! dcgm-exporters) every second; kvtop reads the fleet back through each and agrees with its
//! own direct scrape. A second pair has them scrape the vLLM V0 and V1 fixtures and an SGLang
//! payload as they are, and every signal of the catalog must come out the same both ways.
//!
//! Prometheus' first scrape comes ~5.5 s after it starts, so each test takes ~10 s. Skipped
//! (with a printed reason) when `prometheus` or `victoria-metrics` is missing, unless
//! `KVTOP_TEST_REQUIRE_ALL` is set.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::bad_server::{BadServer, Behaviour};
use common::prometheus::PromServer;
use common::victoria::VmServer;
use kvtop::app::{App, Event, update};
use kvtop::config::PrometheusConfig;
use kvtop::sources::prometheus::{
    ClientSettings, LabelMap, PollSettings, Poller, PromClient, QueryPlan, SlowAnswers, poll_once,
};
use kvtop::sources::{ScrapeSettings, ScrapeTarget, build_client, scrape_once};
use kvtop_core::fleet::{
    DerivedPayload, DerivedReport, EngineStatus, Fleet, FleetSettings, QuantileWindow,
    ScrapePayload, ScrapeReport, SourceReport, TargetSpec,
};
use kvtop_sim::{SimConfig, SimVersion};

/// A server speaking Prometheus' HTTP API: a real Prometheus or a real VictoriaMetrics.
pub(crate) trait Backend: Send + Sync {
    fn url(&self) -> &str;
    fn log(&self) -> String;
}

impl Backend for PromServer {
    fn url(&self) -> &str {
        &self.url
    }
    fn log(&self) -> String {
        PromServer::log(self)
    }
}

impl Backend for VmServer {
    fn url(&self) -> &str {
        &self.url
    }
    fn log(&self) -> String {
        VmServer::log(self)
    }
}

/// A real Prometheus scraping per `config`.
pub(crate) fn prometheus(config: &str) -> Box<dyn Backend> {
    Box::new(PromServer::start(config, |_| {}))
}

/// A real VictoriaMetrics scraping per `config`, its queries seeing samples 1 s after they are
/// scraped (not the default 30 s).
pub(crate) fn victoria_metrics(config: &str) -> Box<dyn Backend> {
    Box::new(VmServer::start(config, Duration::from_secs(1)))
}

/// kvtop's own cycle of queries, every 500 ms until its answer is `ready`; fails after 40 s,
/// naming `what` it waited for, with the server's log.
pub(crate) async fn poll_until(
    client: &PromClient,
    plan: &QueryPlan,
    prom: &dyn Backend,
    what: &str,
    ready: impl Fn(&DerivedPayload) -> bool,
) -> DerivedPayload {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let mut slow = SlowAnswers::default();
    loop {
        let payload = poll_once(client, plan, None, &mut slow, 1).await;
        if let Ok(p) = &payload
            && ready(p)
        {
            return p.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Prometheus never had {what}: {payload:?}\n{}",
            prom.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(crate) fn host_port(url: &str) -> &str {
    url.trim_start_matches("http://")
        .trim_end_matches("/metrics")
}

/// Scrape config: each engine a target labelled with its pod, the exporters as they are (their
/// series carry the workload's pod themselves).
fn config(sim: &kvtop_sim::SimHandle) -> String {
    let mut yaml = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n",
    );
    for engine in &sim.engines {
        let _ = writeln!(
            yaml,
            "      - targets: [\"{}\"]\n        labels: {{pod: \"{}\", namespace: \"llm\"}}",
            host_port(&engine.url),
            engine.name
        );
    }
    yaml.push_str("  - job_name: dcgm\n    static_configs:\n      - targets: [");
    let exporters: Vec<String> = sim
        .dcgm
        .iter()
        .map(|d| format!("\"{}\"", host_port(&d.url)))
        .collect();
    yaml.push_str(&exporters.join(", "));
    yaml.push_str("]\n");
    yaml
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kvtop_reads_the_simulated_fleet_back_through_prometheus() {
    if !common::have_program("prometheus") {
        return;
    }
    reads_the_simulated_fleet_back(prometheus).await;
}

/// The same through VictoriaMetrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kvtop_reads_the_simulated_fleet_back_through_victoria_metrics() {
    if !common::have_program("victoria-metrics") {
        return;
    }
    reads_the_simulated_fleet_back(victoria_metrics).await;
}

/// kvtop reads the simulated fleet back through the server `start` runs with a scrape config,
/// and agrees with its own direct scrape.
async fn reads_the_simulated_fleet_back(start: impl FnOnce(&str) -> Box<dyn Backend>) {
    let sim = kvtop_sim::start(SimConfig {
        engines: 4,
        version: SimVersion::V1,
        seed: 7,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let server = start(&config(&sim));
    let prom = server.as_ref();
    let client = PromClient::new(
        &PrometheusConfig::at(prom.url().to_owned()),
        ClientSettings {
            timeout: Duration::from_secs(2),
            body_limit: 16 * 1024 * 1024,
            user_agent: "kvtop-test".into(),
        },
    )
    .expect("client");
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, true);
    let serving: Vec<&kvtop_sim::SimEndpoint> = sim.engines.iter().filter(|e| !e.down).collect();
    assert_eq!(serving.len(), 3, "engine 3 of 4 is down by design");

    // Wait for Prometheus' first scrapes (~5.5 s after start) of every serving engine and GPU.
    let payload = poll_until(&client, &plan, prom, "the whole fleet", |p| {
        let gpus = p.gpus.as_ref().map_or(0, Vec::len);
        p.engines.len() == serving.len() && gpus == 8
    })
    .await;
    assert!(payload.failures.is_empty(), "{:?}", payload.failures);

    // The same engines as the simulator serves (the down one is not in Prometheus' answer).
    let mut through_prom: Vec<&str> = payload.engines.iter().map(|e| e.instance.name()).collect();
    through_prom.sort_unstable();
    let mut direct_names: Vec<&str> = serving.iter().map(|e| e.name.as_str()).collect();
    direct_names.sort_unstable();
    assert_eq!(through_prom, direct_names);

    // KV usage agrees with a direct scrape taken right after (Prometheus' sample is at most one
    // scrape interval older; the pressured engine 0 fills fastest).
    let settings = ScrapeSettings {
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        body_limit: 8 * 1024 * 1024,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    };
    let http = build_client(&settings).expect("http client");
    for (index, endpoint) in sim.engines.iter().enumerate() {
        if endpoint.down {
            continue;
        }
        let target = ScrapeTarget {
            id: kvtop_core::fleet::TargetId(index as u32),
            url: endpoint.url.clone(),
            bearer_token: None,
        };
        let direct = scrape_once(&http, &target, &settings)
            .await
            .expect("direct scrape");
        let direct = direct.engines.first().expect("one engine").clone();
        let derived = payload
            .engines
            .iter()
            .find(|e| e.instance.name() == endpoint.name)
            .expect("engine through Prometheus");
        assert_eq!(derived.sample.id, direct.id, "{}", endpoint.name);
        let (a, b) = (
            derived.signals.kv_usage.expect("kv through Prometheus"),
            direct.kv_usage.expect("kv direct"),
        );
        let tolerance = if index == 0 { 0.25 } else { 0.05 };
        assert!(
            (a - b).abs() <= tolerance,
            "{}: KV {a} through Prometheus, {b} direct",
            endpoint.name
        );
        assert!(derived.signals.running.is_some(), "{}", endpoint.name);
    }

    // Into the fleet: each serving engine is Up and joined to its GPU through the exporter's
    // pod mapping; vLLM preallocates 90 % of the framebuffer. The engine that is down has a
    // Down row of its own (Prometheus lists its target).
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.ingest_source(SourceReport::Cycle(DerivedReport {
        source: prom.url().to_owned(),
        at: kvtop_core::clock::unix_now(),
        took: 0.1,
        outcome: Ok(payload),
    }));
    assert_eq!(fleet.gpu_count(), 8);
    let down: Vec<&str> = sim
        .engines
        .iter()
        .filter(|e| e.down)
        .map(|e| e.name.as_str())
        .collect();
    for row in fleet.engines() {
        if down.contains(&row.name.as_str()) {
            assert_eq!(row.status, EngineStatus::Down, "{}", row.name);
            continue;
        }
        assert_eq!(row.status, EngineStatus::Up, "{}", row.name);
        assert_eq!(fleet.gpus_of(row.target).count(), 1, "{}", row.name);
        let mem = row.signals.gpu_mem.expect("GPU memory");
        assert!((0.85..0.95).contains(&mem), "{}: {mem}", row.name);
        assert!(row.signals.gpu_util.is_some(), "{}", row.name);
        assert_eq!(row.signals.xid, Some(0.0), "{}", row.name);
    }

    // The worker itself: the backfill first, then cycles, into the console's state.
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let (window_tx, window_rx) = tokio::sync::watch::channel(QuantileWindow::S15);
    let _poller = Poller::start(
        client.clone(),
        plan.clone(),
        PollSettings::new(Duration::from_millis(500), Duration::from_secs(10), 30),
        kvtop::sources::Outbox::new(tx),
        window_rx,
    );
    let mut app = App::new(
        Fleet::new(FleetSettings {
            interval: 0.5,
            ..FleetSettings::default()
        }),
        kvtop::theme::Theme::fallback(),
        "prometheus".into(),
        Duration::from_millis(500),
        Duration::from_secs(60),
    );
    let mut backfilled = false;
    let mut cycles = 0;
    while cycles < 3 {
        let event = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("an event from the worker")
            .expect("the worker runs");
        match &event {
            Event::Source(SourceReport::Backfill(report)) => {
                assert_eq!(cycles, 0, "the backfill comes first");
                assert!(!report.series.is_empty());
                backfilled = true;
            }
            Event::Source(SourceReport::Cycle(report)) => {
                assert!(report.outcome.is_ok(), "{:?}", report.outcome);
                cycles += 1;
                // A new window reaches the worker before its next cycle.
                let _ = window_tx.send(QuantileWindow::M1);
            }
            other => panic!("unexpected event {other:?}"),
        }
        update(&mut app, event, kvtop_core::clock::unix_now());
    }
    assert!(backfilled);
    let fleet = &app.fleet;
    assert_eq!(fleet.counts().up, serving.len());
    assert_eq!(fleet.counts().down, down.len());
    assert!(
        fleet
            .engines()
            .iter()
            .filter(|r| !down.contains(&r.name.as_str()))
            .all(|r| r.history.len() > 1 && r.signals.gpu_util.is_some()),
        "{:#?}",
        fleet.engines()
    );
    drop(server);
    sim.shutdown().await;
}

/// An SGLang exposition in the shape SGLang serves (`model_name` label, `sglang:` names),
/// written for this test with a value for every SGLang name the catalog reads.
const SGLANG_PAYLOAD: &str = "\
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name=\"qwen\"} 8128902.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name=\"qwen\"} 7557572.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name=\"qwen\"} 0.28
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name=\"qwen\"} 0.0075
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name=\"qwen\"} 91234.0
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name=\"qwen\"} 12.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name=\"qwen\"} 3.0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"qwen\"} 4.0
sglang:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"qwen\"} 9.0
sglang:time_to_first_token_seconds_sum{model_name=\"qwen\"} 2.5
sglang:time_to_first_token_seconds_count{model_name=\"qwen\"} 9.0
# TYPE sglang:inter_token_latency_seconds histogram
sglang:inter_token_latency_seconds_bucket{le=\"0.01\",model_name=\"qwen\"} 40.0
sglang:inter_token_latency_seconds_bucket{le=\"+Inf\",model_name=\"qwen\"} 90.0
sglang:inter_token_latency_seconds_sum{model_name=\"qwen\"} 1.5
sglang:inter_token_latency_seconds_count{model_name=\"qwen\"} 90.0
# TYPE sglang:e2e_request_latency_seconds histogram
sglang:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"qwen\"} 5.0
sglang:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"qwen\"} 9.0
sglang:e2e_request_latency_seconds_sum{model_name=\"qwen\"} 12.0
sglang:e2e_request_latency_seconds_count{model_name=\"qwen\"} 9.0
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 812.5
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalog_signal_agrees_direct_and_through_prometheus_on_v0_v1_and_sglang() {
    if !common::have_program("prometheus") {
        return;
    }
    every_catalog_signal_agrees(prometheus).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_catalog_signal_agrees_direct_and_through_victoria_metrics() {
    if !common::have_program("victoria-metrics") {
        return;
    }
    every_catalog_signal_agrees(victoria_metrics).await;
}

/// The V0 and V1 fixtures and an SGLang payload served as they are, scraped by the server
/// `start` runs; every signal of the catalog comes out the same through it as directly.
async fn every_catalog_signal_agrees(start: impl FnOnce(&str) -> Box<dyn Backend>) {
    let payloads: [(&str, String); 3] = [
        (
            "v0",
            std::fs::read_to_string("tests/fixtures/v0.4-v0.5-era-metrics.txt").expect("V0"),
        ),
        (
            "v1",
            std::fs::read_to_string("tests/fixtures/synthetic-v1-3models-prometheus_client.txt")
                .expect("V1"),
        ),
        ("sglang", SGLANG_PAYLOAD.to_owned()),
    ];
    let mut servers = Vec::new();
    let mut yaml = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: engines\n    static_configs:\n",
    );
    for (pod, payload) in &payloads {
        let server = BadServer::start(Behaviour::Ok(payload.clone().into_bytes())).await;
        let _ = writeln!(
            yaml,
            "      - targets: [\"{}\"]\n        labels: {{pod: \"{pod}\", namespace: \"llm\"}}",
            host_port(&server.url)
        );
        servers.push(server);
    }
    let server = start(&yaml);
    let prom = server.as_ref();
    let client = PromClient::new(
        &PrometheusConfig::at(prom.url().to_owned()),
        ClientSettings {
            timeout: Duration::from_secs(2),
            body_limit: 16 * 1024 * 1024,
            user_agent: "kvtop-test".into(),
        },
    )
    .expect("client");
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::S15, false);

    // Direct: each payload decoded as a scrape, twice (rates need two snapshots), into a fleet.
    let mut fleet = Fleet::new(FleetSettings::default());
    let now = kvtop_core::clock::unix_now();
    let mut direct_engines = 0;
    for (pod, payload) in &payloads {
        let target = fleet.add_target(TargetSpec {
            name: (*pod).into(),
            url: format!("http://{pod}:8000/metrics"),
        });
        let engines = kvtop_core::engine::extract_engines(&kvtop_core::metrics::parse(payload));
        direct_engines += engines.len();
        for at in [now - 5.0, now] {
            fleet.ingest(ScrapeReport {
                target,
                at,
                took: 0.01,
                outcome: Ok(ScrapePayload {
                    engines: engines.clone(),
                    ..ScrapePayload::default()
                }),
            });
        }
    }
    assert_eq!(direct_engines, 5, "one V0, three V1 and one SGLang engine");

    // Through Prometheus, once it has scraped every target at least twice (rates need two
    // points).
    let payload = poll_until(&client, &plan, prom, "every engine with rates", |p| {
        let rates = p.engines.iter().filter(|e| e.signals.gen_tps.is_some());
        p.engines.len() == direct_engines && rates.count() == direct_engines
    })
    .await;
    assert!(payload.failures.is_empty(), "{:?}", payload.failures);

    let mut flavors = Vec::new();
    for row in fleet.engines() {
        // Not vacuous: every engine has a KV usage and a rate both ways.
        assert!(row.signals.kv_usage.is_some(), "{}", row.name);
        assert!(row.signals.gen_tps.is_some(), "{}", row.name);
        let through = payload
            .engines
            .iter()
            .find(|e| e.instance.name() == fleet_target_name(&fleet, row) && e.sample.id == row.id)
            .unwrap_or_else(|| panic!("{} not found through Prometheus", row.name));
        let direct = row.latest.as_ref().expect("a direct sample");
        assert_eq!(through.sample.flavor, direct.flavor, "{}: flavor", row.name);
        flavors.push(direct.flavor);
        for def in kvtop_core::signals::SIGNALS.iter() {
            let (a, b) = ((def.get)(&through.signals), (def.get)(&row.signals));
            // VictoriaMetrics keeps about 12 significant digits of a float; Prometheus all.
            let same = match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                (a, b) => a == b,
            };
            assert!(
                same,
                "{}: {} through the server {a:?} vs direct {b:?}",
                row.name, def.name
            );
        }
    }
    use kvtop_core::engine::EngineFlavor;
    for flavor in [
        EngineFlavor::VllmV0,
        EngineFlavor::VllmV1,
        EngineFlavor::SGLang,
    ] {
        assert!(flavors.contains(&flavor), "{flavor:?} in {flavors:?}");
    }
    drop(server);
    drop(servers);
}

/// The name of the target an engine row belongs to (the pod label given to Prometheus).
fn fleet_target_name<'f>(fleet: &'f Fleet, row: &kvtop_core::fleet::EngineState) -> &'f str {
    fleet
        .targets()
        .iter()
        .find(|t| t.id == row.target)
        .map_or("", |t| t.spec.name.as_str())
}
