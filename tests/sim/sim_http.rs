//! The simulator over real HTTP on 127.0.0.1: what a scraper sees.

use std::io::Read as _;
use std::time::Duration;

use kvtop_sim::{Scenario, SimConfig, SimEndpoint, SimError, SimHandle, SimVersion};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .no_gzip()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client")
}

async fn start(engines: usize, time_scale: f64) -> SimHandle {
    kvtop_sim::start(SimConfig {
        engines,
        time_scale,
        seed: 3,
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts")
}

async fn get_text(url: &str) -> String {
    let resp = client().get(url).send().await.expect("GET");
    assert_eq!(resp.status(), 200, "{url}");
    resp.text().await.expect("body")
}

/// The value of the first sample whose series (name and labels) starts with `series`.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/metrics")
        .parse()
        .expect("port in URL")
}

fn by_scenario(handle: &SimHandle, scenario: Scenario) -> &SimEndpoint {
    handle
        .engines
        .iter()
        .find(|e| e.scenario == scenario)
        .expect("scenario present")
}

#[tokio::test(flavor = "current_thread")]
async fn engines_serve_vllm_metrics_and_the_down_one_refuses() {
    let handle = start(4, 10.0).await;
    assert_eq!(handle.engines.len(), 4);
    assert_eq!(handle.engines.iter().filter(|e| e.down).count(), 1);
    for e in &handle.engines {
        assert!(e.url.starts_with("http://127.0.0.1:") && e.url.ends_with("/metrics"));
        if e.down {
            let err = client()
                .get(&e.url)
                .send()
                .await
                .expect_err("down endpoint");
            assert!(err.is_connect(), "{err}");
            continue;
        }
        let resp = client().get(&e.url).send().await.expect("GET /metrics");
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/plain; version=0.0.4; charset=utf-8")
        );
        assert!(resp.headers().get("content-encoding").is_none());
        let body = resp.text().await.expect("body");
        for family in [
            "# TYPE vllm:kv_cache_usage_perc gauge",
            "# TYPE vllm:num_requests_running gauge",
            "# TYPE vllm:num_requests_waiting gauge",
            "# TYPE vllm:num_preemptions_total counter",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            "# TYPE vllm:inter_token_latency_seconds histogram",
            "# TYPE vllm:e2e_request_latency_seconds histogram",
            "# TYPE process_cpu_seconds_total counter",
        ] {
            assert!(body.contains(family), "{} lacks {family}", e.name);
        }
        let running = format!(
            "vllm:num_requests_running{{engine=\"0\",model_name=\"{}\"}}",
            e.model
        );
        assert!(value(&body, &running).is_some(), "{running}");

        let base = e.url.trim_end_matches("/metrics");
        let health = client()
            .get(format!("{base}/health"))
            .send()
            .await
            .expect("health");
        assert_eq!(health.status(), 200);
        let models = get_text(&format!("{base}/v1/models")).await;
        let models: serde_json::Value = serde_json::from_str(&models).expect("JSON");
        assert_eq!(models["object"], "list");
        assert_eq!(models["data"][0]["id"], e.model.as_str());
    }
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn gzip_is_used_when_asked_and_only_then() {
    let handle = start(3, 10.0).await;
    let url = &by_scenario(&handle, Scenario::Healthy).url;
    let resp = client()
        .get(url)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("GET gzip");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()
            .get("content-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("gzip")
    );
    let packed = resp.bytes().await.expect("body");
    let mut body = String::new();
    flate2::read::GzDecoder::new(packed.as_ref())
        .read_to_string(&mut body)
        .expect("valid gzip");
    assert!(
        packed.len() * 4 < body.len(),
        "{} -> {}",
        body.len(),
        packed.len()
    );
    assert!(body.contains("# TYPE vllm:kv_cache_usage_perc gauge"));

    let plain = client()
        .get(url)
        .header("accept-encoding", "identity")
        .send()
        .await
        .expect("GET identity");
    assert!(plain.headers().get("content-encoding").is_none());
    assert!(plain.text().await.expect("body").starts_with("# HELP "));
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn counters_grow_between_two_scrapes() {
    // 30 simulated seconds per wall second: 0.3 s apart is 9 s of traffic.
    let handle = start(3, 30.0).await;
    let e = by_scenario(&handle, Scenario::Healthy);
    let labels = format!("{{engine=\"0\",model_name=\"{}\"}}", e.model);
    let series = [
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:e2e_request_latency_seconds_count",
        "process_cpu_seconds_total",
    ];
    let read = |body: &str, name: &str| {
        let key = if name.starts_with("vllm:") {
            format!("{name}{labels}")
        } else {
            format!("{name} ")
        };
        value(body, &key)
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = get_text(&e.url).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = get_text(&e.url).await;
    for name in series {
        let (a, b) = (read(&first, name), read(&second, name));
        assert!(a.is_some() && b.is_some(), "{name} missing");
        assert!(b > a, "{name}: {a:?} -> {b:?}");
    }
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_pressured_engine_shows_kv_pressure_and_preemptions() {
    // 60 simulated seconds per wall second: 0.6 s is 36 s of overload.
    let handle = start(3, 60.0).await;
    let e = by_scenario(&handle, Scenario::KvPressure);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let body = get_text(&e.url).await;
    let labels = format!("{{engine=\"0\",model_name=\"{}\"}}", e.model);
    let kv = value(&body, &format!("vllm:kv_cache_usage_perc{labels}")).expect("kv usage");
    let preempted =
        value(&body, &format!("vllm:num_preemptions_total{labels}")).expect("preemptions");
    let waiting = value(&body, &format!("vllm:num_requests_waiting{labels}")).expect("waiting");
    assert!(kv > 0.9, "kv {kv}");
    assert!(preempted > 0.0);
    assert!(waiting > 0.0);
    let line = handle
        .describe()
        .into_iter()
        .find(|l| l.starts_with(&e.name))
        .expect("described");
    assert!(
        line.contains("KV pressure") && line.contains(&e.url),
        "{line}"
    );
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn dcgm_exports_one_series_per_gpu_with_the_pod_on_it() {
    // Ten engines: node 0 holds engines 0..7, node 1 holds 8 and 9 (9 is down) on GPUs 0 and 1.
    let handle = start(10, 10.0).await;
    assert_eq!(handle.dcgm.len(), 2);
    let node1 = &handle.dcgm[1];
    assert_eq!(node1.node, handle.engines[8].node);
    let body = get_text(&node1.url).await;
    let util: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("DCGM_FI_DEV_GPU_UTIL{"))
        .collect();
    assert_eq!(util.len(), 8);
    for (gpu, line) in util.iter().enumerate() {
        assert!(
            line.contains(&format!("gpu=\"{gpu}\",UUID=\"GPU-")),
            "{line}"
        );
        assert!(
            line.contains(&format!("Hostname=\"{}\"", node1.node)),
            "{line}"
        );
        assert!(
            line.contains("modelName=\"NVIDIA H100 80GB HBM3\""),
            "{line}"
        );
    }
    for (gpu, engine) in [(0, &handle.engines[8]), (1, &handle.engines[9])] {
        let expected = format!("namespace=\"llm\",pod=\"{}\"", engine.name);
        assert!(util[gpu].contains(&expected), "{}", util[gpu]);
    }
    assert!(util[2..].iter().all(|l| !l.contains("pod=")));

    let fb_used = |gpu: usize| {
        body.lines()
            .filter(|l| l.starts_with("DCGM_FI_DEV_FB_USED{"))
            .nth(gpu)
            .and_then(|l| l.rsplit_once(' '))
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    // 0.9 × 81559 MiB plus the CUDA context for the serving pod; nothing for the down one.
    assert!(fb_used(0) > Some(70_000), "{:?}", fb_used(0));
    assert_eq!(fb_used(1), Some(0));
    assert_eq!(fb_used(5), Some(0));
    for field in [
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_XID_ERRORS",
    ] {
        assert!(body.contains(&format!("# TYPE {field} gauge")), "{field}");
        let n = body
            .lines()
            .filter(|l| l.starts_with(&format!("{field}{{")))
            .count();
        assert_eq!(n, 8, "{field}");
    }
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn v0_engines_speak_the_v0_dialect() {
    let handle = kvtop_sim::start(SimConfig {
        engines: 3,
        version: SimVersion::V0,
        time_scale: 10.0,
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts");
    let e = by_scenario(&handle, Scenario::Healthy);
    let body = get_text(&e.url).await;
    let labels = format!("{{model_name=\"{}\"}}", e.model);
    for name in [
        "vllm:gpu_cache_usage_perc",
        "vllm:cpu_cache_usage_perc",
        "vllm:num_requests_swapped",
        "vllm:gpu_prefix_cache_hit_rate",
        "vllm:avg_generation_throughput_toks_per_s",
    ] {
        assert!(value(&body, &format!("{name}{labels}")).is_some(), "{name}");
    }
    assert!(!body.contains("engine=\"0\""));
    assert!(!body.contains("vllm:kv_cache_usage_perc"));
    handle.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn shutdown_frees_the_ports() {
    let handle = start(4, 1.0).await;
    let ports: Vec<u16> = handle
        .engines
        .iter()
        .filter(|e| !e.down)
        .chain(&handle.dcgm)
        .map(|e| port_of(&e.url))
        .collect();
    assert_eq!(ports.len(), 4);
    // Leave a kept-alive connection open, as a scraper would.
    let c = client();
    let url = handle.engines[1].url.clone();
    assert_eq!(c.get(&url).send().await.expect("GET").status(), 200);
    handle.shutdown().await;
    for port in ports {
        let rebind = std::net::TcpListener::bind(("127.0.0.1", port));
        assert!(rebind.is_ok(), "port {port} still held");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_port_base_lays_out_ports_in_order() {
    // A range below Linux's ephemeral ports (32768 and up), so that no connection or
    // port-0 listener of another process lands on the down engine's unbound port meanwhile;
    // the next range when one of ours is taken.
    let start = 20_000 + u16::try_from(std::process::id() % 2_000).unwrap_or(0) * 5;
    for attempt in 0..5u16 {
        let base = start + attempt * 5;
        let cfg = SimConfig {
            engines: 3,
            port_base: Some(base),
            ..SimConfig::default()
        };
        let handle = match kvtop_sim::start(cfg).await {
            Ok(h) => h,
            Err(SimError::Bind { .. }) => continue,
            Err(e) => panic!("unexpected error: {e}"),
        };
        let ports: Vec<u16> = handle.engines.iter().map(|e| port_of(&e.url)).collect();
        assert_eq!(ports, vec![base, base + 1, base + 2]);
        assert_eq!(port_of(&handle.dcgm[0].url), base + 3);
        assert!(handle.engines[2].down);
        let err = client()
            .get(&handle.engines[2].url)
            .send()
            .await
            .expect_err("down");
        assert!(err.is_connect());
        handle.shutdown().await;
        return;
    }
    panic!("no free port range found in five attempts");
}

#[tokio::test(flavor = "current_thread")]
async fn bad_configurations_are_refused() {
    let err = |cfg| async { kvtop_sim::start(cfg).await.expect_err("refused") };
    assert!(matches!(
        err(SimConfig {
            engines: 0,
            ..SimConfig::default()
        })
        .await,
        SimError::NoEngines
    ));
    assert!(matches!(
        err(SimConfig {
            time_scale: 0.0,
            ..SimConfig::default()
        })
        .await,
        SimError::InvalidTimeScale(_)
    ));
    assert!(matches!(
        err(SimConfig {
            time_scale: f64::NAN,
            ..SimConfig::default()
        })
        .await,
        SimError::InvalidTimeScale(_)
    ));
    assert!(matches!(
        err(SimConfig {
            engines: 10,
            port_base: Some(65_530),
            ..SimConfig::default()
        })
        .await,
        SimError::PortRange { .. }
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn describe_lists_every_endpoint_with_notes() {
    let handle = start(3, 1.0).await;
    let lines = handle.describe();
    assert_eq!(lines.len(), handle.engines.len() + handle.dcgm.len());
    let down = handle
        .engines
        .iter()
        .find(|e| e.down)
        .expect("a down engine");
    let down_line = lines
        .iter()
        .find(|l| l.starts_with(&down.name))
        .expect("listed");
    assert!(down_line.contains("connection refused") && down_line.contains(&down.url));
    assert!(down_line.contains(&down.model));
    let place = format!("{}/gpu{}", down.node, down.gpu.expect("engine GPU"));
    assert!(down_line.contains(&place), "{down_line}");
    let healthy = by_scenario(&handle, Scenario::Healthy);
    let healthy_line = lines
        .iter()
        .find(|l| l.starts_with(&healthy.name))
        .expect("listed");
    assert!(!healthy_line.contains('('));
    assert!(lines.iter().any(|l| l.starts_with(&handle.dcgm[0].name)));
    handle.shutdown().await;
}
