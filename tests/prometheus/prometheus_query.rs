//! The Prometheus source against a real Prometheus (Debian's 2.42) whose TSDB is backfilled
//! with `promtool` from an OpenMetrics text written here, with values chosen so every expected
//! signal can be computed by hand. Queries are evaluated at fixed times, so the answers are
//! deterministic.
//!
//! Skipped (with a printed reason) when `prometheus`/`promtool` are missing, unless
//! `KVTOP_TEST_REQUIRE_ALL` is set.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::prometheus::{PromServer, backfill_openmetrics};
use kvtop::config::PrometheusConfig;
use kvtop::sources::prometheus::{
    ClientSettings, LabelMap, PromClient, QueryPlan, SlowAnswers, backfill_once, poll_once,
};
use kvtop_core::engine::EngineFlavor;
use kvtop_core::fleet::{
    DerivedEngine, DerivedPayload, DerivedReport, EngineStatus, Fleet, FleetSettings, InstanceKey,
    QuantileWindow, ScrapeError, Series, SourceReport,
};

/// Start of the backfilled data; samples every 15 s up to `T0 + 60`.
const T0: f64 = 1_700_000_000.0;
const STEP: f64 = 15.0;
const STEPS: usize = 4;

/// Labels of the three engines' processes.
const POD_A: &str = r#"pod="vllm-a",namespace="llm",instance="10.0.0.1:8000""#;
const POD_B: &str = r#"pod="vllm-b",namespace="llm",instance="10.0.0.2:8000""#;
const NO_POD: &str = r#"instance="10.0.0.3:8000""#;
/// A pod whose data ended ten minutes before `T0` (beyond Prometheus' 5 min lookback).
const POD_C: &str = r#"pod="vllm-c",namespace="llm",instance="10.0.0.4:8000""#;

/// OpenMetrics writer: families of series, each series linear from 0 (counters) or constant.
#[derive(Default)]
struct OpenMetrics(String);

impl OpenMetrics {
    fn family(&mut self, name: &str, kind: &str) -> &mut Self {
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
        self
    }

    /// `name{labels}` at `T0 + k·STEP` for k = 0..=STEPS, growing linearly from 0 to `end`.
    fn counter(&mut self, name: &str, labels: &str, end: f64) -> &mut Self {
        for k in 0..=STEPS {
            let value = end * k as f64 / STEPS as f64;
            let _ = writeln!(
                self.0,
                "{name}{{{labels}}} {value} {}",
                T0 + STEP * k as f64
            );
        }
        self
    }

    /// `name{labels}` constant at every sample time.
    fn gauge(&mut self, name: &str, labels: &str, value: f64) -> &mut Self {
        for k in 0..=STEPS {
            let _ = writeln!(
                self.0,
                "{name}{{{labels}}} {value} {}",
                T0 + STEP * k as f64
            );
        }
        self
    }

    /// A histogram whose bucket counts grow linearly to `ends` (cumulative, last is +Inf).
    fn histogram(&mut self, base: &str, labels: &str, bounds: &[&str], ends: &[f64]) -> &mut Self {
        self.family(base, "histogram");
        for (le, end) in bounds.iter().zip(ends) {
            let labels = format!("{labels},le=\"{le}\"");
            self.counter(&format!("{base}_bucket"), &labels, *end);
        }
        let total = ends.last().copied().unwrap_or(0.0);
        self.counter(&format!("{base}_count"), labels, total);
        self.counter(&format!("{base}_sum"), labels, total * 0.5);
        self
    }

    fn finish(mut self) -> String {
        self.0.push_str("# EOF\n");
        self.0
    }
}

/// The backfilled fleet:
/// - `vllm-a` (V1 names, engine 0): KV 0.42; 5 running, 2 waiting; over the last minute 600
///   generation tokens (10/s), 1200 prompt tokens (20/s), 30 preemptions (0.5/s), 54 `stop` and
///   6 `abort` requests (1/s, error ratio 0.1), 250 prefix hits of 1000 queries (0.25), 90 CPU
///   seconds (1.5 cores); TTFT buckets 0.1/0.5/1/+Inf → 20/60/100/100, ITL buckets
///   0.01/0.05/+Inf → 50/100/100; `cache_config_info` of 1000 blocks of 16 tokens.
/// - `vllm-b` (V0 names, no engine label): KV 0.8, 3 running, V0 prefix gauge 0.3, TPOT
///   buckets 0.1/0.5/+Inf → 10/20/20.
/// - `10.0.0.3:8000` (no pod label): KV 0.1, 1 running.
/// - `vllm-c`: 7 running, ten minutes before the others only.
/// - DCGM: GPU 0 of node-1 held by `vllm-a` (util 87 %, 60,000 of 80,000 MiB used with 1,000
///   reserved, 71 °C, 455.5 W, XID 79), GPU 1 idle and unmapped.
fn openmetrics() -> String {
    let a0 = format!("{POD_A},model_name=\"m1\",engine=\"0\"");
    let b = format!("{POD_B},model_name=\"m0\"");
    let d = format!("{NO_POD},model_name=\"m1\",engine=\"0\"");
    let mut om = OpenMetrics::default();
    om.family("vllm:kv_cache_usage_perc", "gauge")
        .gauge("vllm:kv_cache_usage_perc", &a0, 0.42)
        .gauge("vllm:kv_cache_usage_perc", &d, 0.1);
    om.family("vllm:gpu_cache_usage_perc", "gauge")
        .gauge("vllm:gpu_cache_usage_perc", &b, 0.8);
    om.family("vllm:num_requests_running", "gauge")
        .gauge("vllm:num_requests_running", &a0, 5.0)
        .gauge("vllm:num_requests_running", &b, 3.0)
        .gauge("vllm:num_requests_running", &d, 1.0);
    for k in 0..2 {
        let _ = writeln!(
            om.0,
            "vllm:num_requests_running{{{POD_C},model_name=\"m1\",engine=\"0\"}} 7 {}",
            T0 - 600.0 + STEP * k as f64
        );
    }
    om.family("vllm:num_requests_waiting", "gauge")
        .gauge("vllm:num_requests_waiting", &a0, 2.0);
    om.family("vllm:gpu_prefix_cache_hit_rate", "gauge").gauge(
        "vllm:gpu_prefix_cache_hit_rate",
        &b,
        0.3,
    );
    om.family("vllm:generation_tokens", "counter").counter(
        "vllm:generation_tokens_total",
        &a0,
        600.0,
    );
    om.family("vllm:prompt_tokens", "counter")
        .counter("vllm:prompt_tokens_total", &a0, 1200.0);
    om.family("vllm:num_preemptions", "counter")
        .counter("vllm:num_preemptions_total", &a0, 30.0);
    om.family("vllm:request_success", "counter")
        .counter(
            "vllm:request_success_total",
            &format!("{a0},finished_reason=\"stop\""),
            54.0,
        )
        .counter(
            "vllm:request_success_total",
            &format!("{a0},finished_reason=\"abort\""),
            6.0,
        );
    om.family("vllm:prefix_cache_queries", "counter").counter(
        "vllm:prefix_cache_queries_total",
        &a0,
        1000.0,
    );
    om.family("vllm:prefix_cache_hits", "counter").counter(
        "vllm:prefix_cache_hits_total",
        &a0,
        250.0,
    );
    om.family("process_cpu_seconds", "counter")
        .counter("process_cpu_seconds_total", POD_A, 90.0);
    om.histogram(
        "vllm:time_to_first_token_seconds",
        &a0,
        &["0.1", "0.5", "1.0", "+Inf"],
        &[20.0, 60.0, 100.0, 100.0],
    );
    om.histogram(
        "vllm:inter_token_latency_seconds",
        &a0,
        &["0.01", "0.05", "+Inf"],
        &[50.0, 100.0, 100.0],
    );
    om.histogram(
        "vllm:time_per_output_token_seconds",
        &b,
        &["0.1", "0.5", "+Inf"],
        &[10.0, 20.0, 20.0],
    );
    om.family("vllm:cache_config_info", "gauge").gauge(
        "vllm:cache_config_info",
        &format!(
            "{POD_A},engine=\"0\",block_size=\"16\",num_gpu_blocks=\"1000\",cache_dtype=\"auto\""
        ),
        1.0,
    );
    let gpu0 = r#"gpu="0",UUID="GPU-0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",pod="vllm-a",namespace="llm""#;
    let gpu1 = r#"gpu="1",UUID="GPU-1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1""#;
    for (field, v0, v1) in [
        ("GPU_UTIL", 87.0, 0.0),
        ("FB_USED", 60_000.0, 0.0),
        ("FB_FREE", 19_000.0, 79_000.0),
        ("FB_RESERVED", 1_000.0, 1_000.0),
        ("GPU_TEMP", 71.0, 30.0),
        ("POWER_USAGE", 455.5, 70.0),
        ("SM_CLOCK", 1980.0, 345.0),
        ("XID_ERRORS", 79.0, 0.0),
    ] {
        let name = format!("DCGM_FI_DEV_{field}");
        om.family(&name, "gauge")
            .gauge(&name, gpu0, v0)
            .gauge(&name, gpu1, v1);
    }
    om.finish()
}

const CONFIG: &str = "global:\n  scrape_interval: 1m\n";

fn client(url: &str, timeout: Duration) -> PromClient {
    PromClient::new(
        &PrometheusConfig::at(url.to_owned()),
        ClientSettings {
            timeout,
            body_limit: 16 * 1024 * 1024,
            user_agent: "kvtop-test".into(),
        },
    )
    .expect("client")
}

fn plan() -> QueryPlan {
    QueryPlan::new(LabelMap::default(), QuantileWindow::M1, true)
}

fn server() -> Option<PromServer> {
    if !(common::have_program("prometheus") && common::have_program("promtool")) {
        return None;
    }
    Some(PromServer::start(CONFIG, |data| {
        backfill_openmetrics(&openmetrics(), data)
    }))
}

fn close(actual: Option<f64>, expected: f64, what: &str) {
    let a = actual.unwrap_or_else(|| panic!("{what}: expected {expected}, got None"));
    assert!(
        (a - expected).abs() < 1e-9,
        "{what}: expected {expected}, got {a}"
    );
}

fn find<'a>(engines: &'a [DerivedEngine], name: &str) -> &'a DerivedEngine {
    engines
        .iter()
        .find(|e| e.instance.name() == name)
        .unwrap_or_else(|| panic!("no engine {name} in {engines:#?}"))
}

async fn cycle_at(client: &PromClient, time: f64) -> DerivedPayload {
    poll_once(client, &plan(), Some(time), &mut SlowAnswers::default(), 30)
        .await
        .expect("cycle")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instant_queries_give_every_signal_of_every_engine() {
    let Some(prom) = server() else { return };
    let client = client(&prom.url, Duration::from_secs(5));
    let payload = cycle_at(&client, T0 + 60.0).await;
    // 29 signal queries (the dashboards' signals among them), counter resets, the models'
    // merged quantiles, DCGM and cache_config_info.
    assert_eq!(payload.queries, 33);
    assert!(payload.failures.is_empty(), "{:?}", payload.failures);
    let names: Vec<&str> = payload.engines.iter().map(|e| e.instance.name()).collect();
    assert_eq!(
        names,
        ["10.0.0.3:8000", "vllm-a", "vllm-b"],
        "{}",
        prom.log()
    );

    let a = find(&payload.engines, "vllm-a");
    let s = &a.signals;
    assert_eq!(a.sample.flavor, EngineFlavor::VllmV1);
    assert_eq!(
        (a.sample.id.model.as_str(), a.sample.id.engine.as_str()),
        ("m1", "0")
    );
    close(s.kv_usage, 0.42, "kv");
    close(s.running, 5.0, "running");
    close(s.waiting, 2.0, "waiting");
    close(s.gen_tps, 600.0 / 60.0, "gen_tps");
    close(s.prompt_tps, 1200.0 / 60.0, "prompt_tps");
    close(s.preemptions_per_s, 30.0 / 60.0, "preemptions");
    close(s.requests_per_s, 60.0 / 60.0, "requests");
    close(s.error_ratio, 6.0 / 60.0, "error ratio");
    close(s.prefix_hit, 250.0 / 1000.0, "prefix hit");
    close(s.cpu_cores, 90.0 / 60.0, "cpu");
    // TTFT: rank 50 of 100 in (0.1, 0.5] holding 20..60 → 0.1 + 0.4 × 30/40.
    close(s.ttft_p50, 0.4, "ttft p50");
    // Rank 95 in (0.5, 1] holding 60..100 → 0.5 + 0.5 × 35/40; rank 99 → 0.5 + 0.5 × 39/40.
    close(s.ttft_p95, 0.9375, "ttft p95");
    close(s.ttft_p99, 0.9875, "ttft p99");
    // ITL: rank 50 fills (0, 0.01]; rank 95 in (0.01, 0.05] holding 50..100 → 0.01 + 0.04 × 45/50.
    close(s.itl_p50, 0.01, "itl p50");
    close(s.itl_p95, 0.046, "itl p95");
    assert_eq!(s.e2e_p95, None);
    assert_eq!(s.spec_acceptance, None);
    close(s.kv_capacity_tokens, 16_000.0, "kv capacity");
    assert_eq!(
        a.sample
            .cache_config
            .as_ref()
            .and_then(|c| c.cache_dtype.clone()),
        Some("auto".to_owned())
    );

    let b = find(&payload.engines, "vllm-b");
    assert_eq!(b.sample.flavor, EngineFlavor::VllmV0);
    close(b.signals.kv_usage, 0.8, "b kv (V0 name)");
    close(b.signals.running, 3.0, "b running");
    close(b.signals.prefix_hit, 0.3, "b prefix hit (V0 gauge)");
    // TPOT stands in for ITL: rank 10 fills (0, 0.1]; rank 19 → 0.1 + 0.4 × 9/10.
    close(b.signals.itl_p50, 0.1, "b itl p50");
    close(b.signals.itl_p95, 0.46, "b itl p95");
    assert_eq!(b.signals.gen_tps, None);
    assert_eq!(b.signals.waiting, None);

    let d = find(&payload.engines, "10.0.0.3:8000");
    assert_eq!(d.instance, InstanceKey::new("", "", "10.0.0.3:8000"));
    close(d.signals.kv_usage, 0.1, "instance kv");

    let gpus = payload.gpus.clone().unwrap_or_default();
    assert_eq!(gpus.len(), 2);
    let held = gpus
        .iter()
        .find(|g| g.gpu == "0")
        .cloned()
        .unwrap_or_default();
    assert_eq!(held.pod.as_deref(), Some("vllm-a"));
    assert_eq!(held.util_pct, Some(87.0));
    assert_eq!(held.xid, Some(79.0));

    // Into the fleet: the GPU joins vllm-a; 60,000 of 80,000 MiB is 0.75.
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.ingest_source(SourceReport::Cycle(DerivedReport {
        source: prom.url.clone(),
        at: T0 + 60.0,
        took: 0.1,
        outcome: Ok(payload),
    }));
    let row = fleet
        .engines()
        .iter()
        .find(|r| r.name == "vllm-a")
        .cloned()
        .expect("vllm-a row");
    close(row.signals.gpu_util, 0.87, "gpu util");
    close(row.signals.gpu_mem, 0.75, "gpu mem");
    close(row.signals.gpu_temp, 71.0, "gpu temp");
    close(row.signals.gpu_power, 455.5, "gpu power");
    close(row.signals.xid, 79.0, "xid");
    assert_eq!(fleet.gpus_of(row.target).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_gone_from_prometheus_goes_stale_while_the_others_stay_up() {
    let Some(prom) = server() else { return };
    let client = client(&prom.url, Duration::from_secs(5));
    let mut fleet = Fleet::new(FleetSettings::default());
    let before = cycle_at(&client, T0 - 590.0).await;
    let names: Vec<&str> = before.engines.iter().map(|e| e.instance.name()).collect();
    assert_eq!(names, ["vllm-c"]);
    // The console's clock is injected: one interval per cycle.
    let cycle = |at: f64, outcome| {
        SourceReport::Cycle(DerivedReport {
            source: prom.url.clone(),
            at,
            took: 0.05,
            outcome,
        })
    };
    fleet.ingest_source(cycle(1000.0, Ok(before)));
    let after = cycle_at(&client, T0 + 60.0).await;
    fleet.ingest_source(cycle(1001.0, Ok(after.clone())));
    fleet.ingest_source(cycle(1002.0, Ok(after)));
    let status = |name: &str| {
        fleet
            .engines()
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.status)
    };
    assert_eq!(status("vllm-c"), Some(EngineStatus::Stale));
    assert_eq!(status("vllm-a"), Some(EngineStatus::Up));
    let c = fleet
        .engines()
        .iter()
        .find(|r| r.name == "vllm-c")
        .and_then(|r| fleet.target(r.target))
        .and_then(|t| t.last_error.clone())
        .map(|(_, e)| e.to_string())
        .unwrap_or_default();
    assert!(c.starts_with("not in Prometheus' answer"), "{c}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_errors_carry_prometheus_text_and_a_dead_server_is_refused() {
    let Some(prom) = server() else { return };
    let client = client(&prom.url, Duration::from_secs(5));
    let raw = client
        .query("sum(rate(x[1m]", Some(T0))
        .await
        .expect("answer");
    let err = kvtop::sources::prometheus::decode::decode_answer(raw.status, &raw.body)
        .map(|_| ())
        .expect_err("parse error");
    let text = err.to_string();
    assert!(text.starts_with("HTTP 400 bad_data: "), "{text}");
    assert!(text.contains("parse error"), "{text}");

    // A label name Prometheus rejects: every grouped query fails with its words, while the
    // raw KV and DCGM queries still answer (partial data).
    let labels = LabelMap {
        pod: "bad-label".into(),
        ..LabelMap::default()
    };
    let bad_plan = QueryPlan::new(labels, QuantileWindow::M1, true);
    let payload = poll_once(
        &client,
        &bad_plan,
        Some(T0 + 60.0),
        &mut SlowAnswers::default(),
        30,
    )
    .await
    .expect("partial answer");
    assert!(!payload.failures.is_empty());
    assert!(
        payload
            .failures
            .iter()
            .all(|f| f.error.to_string().starts_with("HTTP 400 bad_data: ")),
        "{:?}",
        payload.failures
    );
    assert!(payload.gpus.is_some());

    // The server gone: the whole cycle is refused.
    let url = prom.url.clone();
    drop(prom);
    let dead = client_for_dead(&url);
    let outcome = poll_once(&dead, &plan(), Some(T0), &mut SlowAnswers::default(), 30).await;
    assert_eq!(outcome.map(|_| ()), Err(ScrapeError::Refused));
}

fn client_for_dead(url: &str) -> PromClient {
    client(url, Duration::from_millis(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_reads_past_points_aligned_across_queries() {
    let Some(prom) = server() else { return };
    let client = client(&prom.url, Duration::from_secs(5));
    let report = backfill_once(&client, &plan(), T0 + 60.0, 60.0, STEP)
        .await
        .expect("backfill");
    let a = report
        .series
        .iter()
        .find(|s| s.instance.name() == "vllm-a")
        .expect("vllm-a series");
    let times: Vec<f64> = a.points.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, [T0, T0 + 15.0, T0 + 30.0, T0 + 45.0, T0 + 60.0]);
    assert!(a.points.iter().all(|(_, s)| s.kv_usage == Some(0.42)));
    close(
        a.points.last().and_then(|(_, s)| s.gen_tps),
        10.0,
        "last gen_tps",
    );
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.ingest_source(SourceReport::Backfill(report));
    let row = fleet
        .engines()
        .iter()
        .find(|r| r.name == "vllm-a")
        .cloned()
        .expect("vllm-a row");
    assert_eq!(row.history.points(Series::KvUsage, 0.0).len(), 5);
    assert_eq!(row.status, EngineStatus::Down, "no live answer yet");
}
