//! The dashboards' signals (TPOT with its ITL stand-in, prefill and decode time, finish-reason
//! shares, HTTP rate and 4xx/5xx shares, spec-decode mean acceptance length) come out the same
//! from a direct scrape and through a real Prometheus and a real VictoriaMetrics, on data
//! written here so each value is also known by hand.
//!
//! One set of series at `T0 + k·15 s` (k = 0..=4) is scraped directly by the fleet, backfilled
//! into Prometheus with `promtool`, and imported into VictoriaMetrics; both servers are asked
//! at `T0 + 60` over a one-minute window, which spans the same five samples. Skipped (with a
//! printed reason) when a server is missing, unless `KVTOP_TEST_REQUIRE_ALL` is set.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::prometheus::{PromServer, backfill_openmetrics};
use common::victoria::VmServer;
use kvtop::config::PrometheusConfig;
use kvtop::sources::prometheus::{
    ClientSettings, LabelMap, PromClient, QueryPlan, SlowAnswers, poll_once,
};
use kvtop_core::fleet::{
    DerivedEngine, DerivedPayload, Fleet, FleetSettings, QuantileWindow, ScrapePayload,
    ScrapeReport, TargetSpec,
};

const T0: f64 = 1_700_000_000.0;
const STEP: f64 = 15.0;
const STEPS: usize = 4;

/// One series: its full sample name, its own labels, its family and kind (for OpenMetrics),
/// and its value at the last step (counters grow linearly from 0; gauges are constant).
struct S {
    family: &'static str,
    kind: &'static str,
    name: String,
    labels: String,
    end: f64,
    /// A counter that starts again from 0 at this step (its process restarted).
    restart: Option<usize>,
}

impl S {
    fn value(&self, k: usize) -> f64 {
        match (self.kind, self.restart) {
            ("gauge", _) => self.end,
            (_, Some(r)) if k >= r => self.end * (k - r) as f64 / STEPS as f64,
            _ => self.end * k as f64 / STEPS as f64,
        }
    }
}

fn gauge(family: &'static str, labels: &str, value: f64) -> S {
    S {
        family,
        kind: "gauge",
        name: family.to_owned(),
        labels: labels.to_owned(),
        end: value,
        restart: None,
    }
}

fn counter(family: &'static str, labels: &str, end: f64) -> S {
    S {
        family,
        kind: "counter",
        name: format!("{family}_total"),
        labels: labels.to_owned(),
        end,
        restart: None,
    }
}

fn histogram(family: &'static str, labels: &str, bounds: &[&str], ends: &[f64]) -> Vec<S> {
    let mut series: Vec<S> = bounds
        .iter()
        .zip(ends)
        .map(|(le, end)| S {
            family,
            kind: "histogram",
            name: format!("{family}_bucket"),
            labels: join(labels, &format!("le=\"{le}\"")),
            end: *end,
            restart: None,
        })
        .collect();
    let total = ends.last().copied().unwrap_or(0.0);
    for (suffix, end) in [("_count", total), ("_sum", total * 0.1)] {
        series.push(S {
            family,
            kind: "histogram",
            name: format!("{family}{suffix}"),
            labels: labels.to_owned(),
            end,
            restart: None,
        });
    }
    series
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a},{b}"),
    }
}

/// Engine `a` (vLLM 0.11+): every dashboard metric, TPOT and ITL in different bucket layouts.
fn engine_a() -> Vec<S> {
    let e = r#"engine="0",model_name="m1""#;
    let mut s = vec![
        gauge("vllm:num_requests_running", e, 5.0),
        gauge("vllm:kv_cache_usage_perc", e, 0.5),
        counter("vllm:generation_tokens", e, 600.0),
    ];
    for (reason, end) in [
        ("stop", 40.0),
        ("length", 12.0),
        ("abort", 6.0),
        ("error", 2.0),
    ] {
        s.push(counter(
            "vllm:request_success",
            &join(e, &format!("finished_reason=\"{reason}\"")),
            end,
        ));
    }
    s.extend(histogram(
        "vllm:request_time_per_output_token_seconds",
        e,
        &["0.01", "0.05", "0.1", "+Inf"],
        &[10.0, 30.0, 38.0, 40.0],
    ));
    s.extend(histogram(
        "vllm:inter_token_latency_seconds",
        e,
        &["0.025", "0.075", "+Inf"],
        &[100.0, 180.0, 200.0],
    ));
    s.extend(histogram(
        "vllm:request_prefill_time_seconds",
        e,
        &["0.3", "1.0", "2.5", "+Inf"],
        &[20.0, 50.0, 58.0, 60.0],
    ));
    s.extend(histogram(
        "vllm:request_decode_time_seconds",
        e,
        &["1.0", "5.0", "10.0", "+Inf"],
        &[10.0, 40.0, 55.0, 60.0],
    ));
    s.push(counter("vllm:spec_decode_num_drafts", e, 300.0));
    s.push(counter("vllm:spec_decode_num_draft_tokens", e, 900.0));
    s.push(counter("vllm:spec_decode_num_accepted_tokens", e, 450.0));
    for (handler, method, status, end) in [
        ("/v1/completions", "POST", "2xx", 54.0),
        ("/v1/completions", "POST", "4xx", 4.0),
        ("/v1/completions", "POST", "5xx", 2.0),
        ("/health", "GET", "2xx", 60.0),
    ] {
        s.push(counter(
            "http_requests",
            &format!(r#"handler="{handler}",method="{method}",status="{status}""#),
            end,
        ));
    }
    s
}

/// Engine `b` (vLLM 0.10): no TPOT histogram, so TPOT is its ITL; HTTP statuses as codes.
fn engine_b() -> Vec<S> {
    let e = r#"engine="0",model_name="m2""#;
    let mut s = serving(
        e,
        [1.0, 0.2, 60.0],
        ["0.01", "0.05", "+Inf"],
        [50.0, 90.0, 100.0],
    );
    for (status, end) in [("200", 27.0), ("429", 3.0)] {
        s.push(counter(
            "http_requests",
            &format!(r#"handler="/v1/completions",method="POST",status="{status}""#),
            end,
        ));
    }
    s
}

/// Engine `c` serves `m1` beside `a`, with its inter-token latency in `a`'s bucket layout
/// but slower: the model's quantiles are those of the two histograms merged.
fn engine_c() -> Vec<S> {
    let e = r#"engine="0",model_name="m1""#;
    serving(
        e,
        [3.0, 0.4, 300.0],
        ["0.025", "0.075", "+Inf"],
        [20.0, 150.0, 200.0],
    )
}

/// An engine's running requests, KV usage and generated tokens (`[running, kv, tokens]`), and
/// its inter-token latency histogram.
fn serving(e: &str, [running, kv, tokens]: [f64; 3], bounds: [&str; 3], ends: [f64; 3]) -> Vec<S> {
    let mut s = vec![
        gauge("vllm:num_requests_running", e, running),
        gauge("vllm:kv_cache_usage_perc", e, kv),
        counter("vllm:generation_tokens", e, tokens),
    ];
    s.extend(histogram(
        "vllm:inter_token_latency_seconds",
        e,
        &bounds,
        &ends,
    ));
    s
}

/// Engine `r` restarted at step 3: its counters started again from 0. Only the servers have
/// it (a direct scrape would see the same reset, but its rate around it is another matter).
fn engine_r() -> Vec<S> {
    let e = r#"engine="0",model_name="m3""#;
    let mut tokens = counter("vllm:generation_tokens", e, 400.0);
    tokens.restart = Some(3);
    vec![
        gauge("vllm:num_requests_running", e, 2.0),
        gauge("vllm:kv_cache_usage_perc", e, 0.1),
        tokens,
    ]
}

/// The pods and their series, with the labels Prometheus' target adds.
fn engines() -> [(&'static str, &'static str, Vec<S>); 3] {
    [
        ("vllm-a", "10.0.0.1:8000", engine_a()),
        ("vllm-b", "10.0.0.2:8000", engine_b()),
        ("vllm-c", "10.0.0.3:8000", engine_c()),
    ]
}

/// What the servers store: every engine, `a` reported twice (a second job scrapes it, with
/// the same samples), and the restarted `r`.
fn stored() -> Vec<(String, Vec<S>)> {
    let mut reports: Vec<(String, Vec<S>)> = engines()
        .into_iter()
        .map(|(pod, instance, series)| (target_labels(pod, instance), series))
        .collect();
    reports.push((
        join(&target_labels("vllm-a", "10.0.0.1:8000"), r#"job="dup""#),
        engine_a(),
    ));
    reports.push((target_labels("vllm-r", "10.0.0.9:8000"), engine_r()));
    reports
}

fn target_labels(pod: &str, instance: &str) -> String {
    format!(r#"pod="{pod}",namespace="llm",instance="{instance}""#)
}

/// The exposition a direct scrape of one engine reads at step `k`.
fn exposition(series: &[S], k: usize) -> String {
    let mut text = String::new();
    for s in series {
        let _ = writeln!(text, "{}{{{}}} {}", s.name, s.labels, s.value(k));
    }
    text
}

/// Every series at every step, as promtool backfills it (families together, each series'
/// samples in time order).
fn openmetrics() -> String {
    let mut text = String::new();
    let engines = stored();
    let mut families: Vec<&'static str> = Vec::new();
    for (_, series) in &engines {
        for s in series {
            if !families.contains(&s.family) {
                families.push(s.family);
            }
        }
    }
    for family in families {
        let mut kind = "";
        let mut body = String::new();
        for (target, series) in &engines {
            for s in series.iter().filter(|s| s.family == family) {
                kind = s.kind;
                let labels = join(target, &s.labels);
                for k in 0..=STEPS {
                    let _ = writeln!(
                        body,
                        "{}{{{labels}}} {} {}",
                        s.name,
                        s.value(k),
                        T0 + STEP * k as f64
                    );
                }
            }
        }
        let _ = writeln!(text, "# TYPE {family} {kind}");
        text.push_str(&body);
    }
    text.push_str("# EOF\n");
    text
}

/// The same samples in Prometheus' text format with millisecond timestamps, for
/// VictoriaMetrics' `/api/v1/import/prometheus`.
fn import_text() -> String {
    let mut text = String::new();
    for (target, series) in &stored() {
        for s in series {
            let labels = join(target, &s.labels);
            for k in 0..=STEPS {
                let ms = ((T0 + STEP * k as f64) * 1000.0) as i64;
                let _ = writeln!(text, "{}{{{labels}}} {} {ms}", s.name, s.value(k));
            }
        }
    }
    text
}

/// The fleet's own reading: each engine scraped directly at every step.
fn direct() -> Fleet {
    let mut fleet = Fleet::new(FleetSettings::default());
    for (pod, _, series) in &engines() {
        let target = fleet.add_target(TargetSpec {
            name: (*pod).into(),
            url: format!("http://{pod}:8000/metrics"),
        });
        for k in 0..=STEPS {
            let text = exposition(series, k);
            let engines = kvtop_core::engine::extract_engines(&kvtop_core::metrics::parse(&text));
            fleet.ingest(ScrapeReport {
                target,
                at: T0 + STEP * k as f64,
                took: 0.01,
                outcome: Ok(ScrapePayload {
                    engines,
                    ..ScrapePayload::default()
                }),
            });
        }
    }
    fleet
}

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

/// A cycle at `T0 + 60`, repeated until every engine is in the answer (VictoriaMetrics makes
/// imported samples searchable within a second or two).
async fn cycle(client: &PromClient, log: impl Fn() -> String) -> DerivedPayload {
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let payload = poll_once(
            client,
            &plan,
            Some(T0 + 60.0),
            &mut SlowAnswers::default(),
            1,
        )
        .await;
        if let Ok(p) = &payload
            && p.engines.len() == 4
            && p.engines
                .iter()
                .filter(|e| e.signals.http_per_s.is_some())
                .count()
                == 2
            && p.engines.iter().all(|e| e.counter_resets.is_some())
            && !p.models.is_empty()
        {
            return p.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no full answer: {payload:?}\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn close(actual: Option<f64>, expected: f64, what: &str) {
    let a = actual.unwrap_or_else(|| panic!("{what}: expected {expected}, got None"));
    assert!(
        (a - expected).abs() < 1e-9,
        "{what}: expected {expected}, got {a}"
    );
}

fn find<'a>(engines: &'a [DerivedEngine], pod: &str) -> &'a DerivedEngine {
    engines
        .iter()
        .find(|e| e.instance.name() == pod)
        .unwrap_or_else(|| panic!("no {pod} in {engines:#?}"))
}

/// Every catalog signal of every engine the same through the server as directly, and the
/// dashboard signals as computed by hand.
fn agrees(payload: &DerivedPayload, server: &str) {
    assert!(payload.failures.is_empty(), "{:?}", payload.failures);
    let fleet = direct();
    for row in fleet.engines() {
        let through = find(&payload.engines, &row.name);
        for def in kvtop_core::signals::SIGNALS.iter() {
            let (a, b) = ((def.get)(&through.signals), (def.get)(&row.signals));
            // VictoriaMetrics keeps about 12 significant digits of a float; Prometheus all.
            let same = match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                (a, b) => a == b,
            };
            assert!(
                same,
                "{}: {} through {server} {a:?} vs direct {b:?}",
                row.name, def.name
            );
        }
    }

    let a = &find(&payload.engines, "vllm-a").signals;
    // TPOT from its own buckets: rank 20 of 40 in (0.01, 0.05] holding 10..30.
    close(a.tpot_p50, 0.03, "a tpot p50");
    // Rank 38 of 40 ends (0.05, 0.1]; rank 39.6 in (0.1, +Inf) is its lower bound.
    close(a.tpot_p95, 0.1, "a tpot p95");
    // Prefill: rank 30 of 60 in (0.3, 1] holding 20..50 → 0.3 + 0.7 × 10/30.
    close(a.prefill_p50, 0.3 + 0.7 * 10.0 / 30.0, "a prefill p50");
    // Decode: rank 57 of 60 in (10, +Inf): 10.
    close(a.decode_p95, 10.0, "a decode p95");
    close(a.finished_stop, 40.0 / 60.0, "a stop share");
    close(a.finished_length, 12.0 / 60.0, "a length share");
    close(a.finished_abort, 6.0 / 60.0, "a abort share");
    close(a.finished_error, 2.0 / 60.0, "a error share");
    assert_eq!(a.finished_repetition, None, "no repetition series");
    close(a.http_per_s, 120.0 / 60.0, "a HTTP rate");
    close(a.http_4xx_ratio, 4.0 / 120.0, "a 4xx share");
    close(a.http_5xx_ratio, 2.0 / 120.0, "a 5xx share");
    close(
        a.spec_accept_length,
        1.0 + 450.0 / 300.0,
        "a mean acceptance length",
    );
    close(a.spec_acceptance, 450.0 / 900.0, "a acceptance");

    let b = &find(&payload.engines, "vllm-b").signals;
    // No TPOT histogram: its ITL's quantiles (rank 50 of 100 fills (0, 0.01]).
    close(b.tpot_p50, 0.01, "b tpot p50 (ITL)");
    assert_eq!(
        [b.tpot_p50, b.tpot_p95, b.tpot_p99],
        [b.itl_p50, b.itl_p95, b.itl_p99]
    );
    assert_eq!(b.prefill_p50, None);
    assert_eq!(b.finished_stop, None);
    assert_eq!(b.spec_accept_length, None);
    close(b.http_per_s, 30.0 / 60.0, "b HTTP rate");
    // `429` is a 4xx; no 5xx series at all: the share is unknown, not 0.
    close(b.http_4xx_ratio, 3.0 / 30.0, "b 4xx share");
    assert_eq!(b.http_5xx_ratio, None);
}

/// A model's quantiles are those of its engines' histograms merged, as the server itself
/// computes `histogram_quantile(q, sum by (le) (rate(…)))` over one report of each engine
/// (the duplicate report of `a` is not counted twice), and as the direct scrape merges them;
/// never the mean of the engines' own quantiles. `r`'s counter reset is a restart.
async fn models_and_restarts(payload: &DerivedPayload, client: &PromClient, server: &str) {
    let m1 = payload
        .models
        .iter()
        .find(|m| m.model == "m1")
        .unwrap_or_else(|| panic!("no m1 in {:?}", payload.models));
    let fleet = direct();
    let members: Vec<_> = fleet
        .engines()
        .iter()
        .filter(|e| e.id.model == "m1")
        .collect();
    assert_eq!(members.len(), 2);
    let merged = kvtop_core::fleet::summarize(members.iter().copied(), 60.0, None).quantiles;
    for def in kvtop_core::signals::SIGNALS.iter() {
        if !matches!(
            def.derivation,
            kvtop_core::signals::Derivation::Quantile(..)
        ) {
            continue;
        }
        let (through, direct) = ((def.get)(&m1.signals), (def.get)(&merged));
        let same = match (through, direct) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            (a, b) => a == b,
        };
        assert!(
            same,
            "m1 {}: through {server} {through:?}, direct {direct:?}",
            def.name
        );
    }
    let promql = "histogram_quantile(0.5, sum by (le) (rate(\
        vllm:inter_token_latency_seconds_bucket{model_name=\"m1\",job=\"\"}[1m])))";
    let raw = client.query(promql, Some(T0 + 60.0)).await.expect("query");
    let answer =
        kvtop::sources::prometheus::decode::decode_answer(raw.status, &raw.body).expect("answer");
    let own = answer.series.first().and_then(|s| s.sample());
    // 120, 330, 400 merged: rank 200 in (0.025, 0.075] holding 120..330.
    let by_hand = 0.025 + 0.05 * 80.0 / 210.0;
    close(own, by_hand, "the server's own p50 of m1");
    close(m1.signals.itl_p50, by_hand, "m1 ITL p50");
    let mean = (find(&payload.engines, "vllm-a")
        .signals
        .itl_p50
        .unwrap_or(0.0)
        + find(&payload.engines, "vllm-c")
            .signals
            .itl_p50
            .unwrap_or(0.0))
        / 2.0;
    assert!(
        (mean - by_hand).abs() > 1e-3,
        "mean {mean} vs merged {by_hand}"
    );
    // Only `a` has a TPOT histogram: the model's TPOT is `a`'s, never mixed with `c`'s ITL.
    assert_eq!(
        m1.signals.tpot_p95,
        find(&payload.engines, "vllm-a").signals.tpot_p95
    );

    assert_eq!(find(&payload.engines, "vllm-r").counter_resets, Some(1.0));
    assert_eq!(find(&payload.engines, "vllm-a").counter_resets, Some(0.0));
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.ingest_source(kvtop_core::fleet::SourceReport::Cycle(
        kvtop_core::fleet::DerivedReport {
            source: server.into(),
            at: T0 + 60.0,
            took: 0.1,
            outcome: Ok(payload.clone()),
        },
    ));
    for row in fleet.engines() {
        let status = kvtop_core::fleet::RowStatus::of(row, T0 + 61.0, 60.0);
        let restarted = status == kvtop_core::fleet::RowStatus::Restarted;
        assert_eq!(restarted, row.name == "vllm-r", "{}: {status:?}", row.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_signals_agree_direct_and_through_prometheus() {
    if !(common::have_program("prometheus") && common::have_program("promtool")) {
        return;
    }
    let prom = PromServer::start("global:\n  scrape_interval: 15s\n", |data| {
        backfill_openmetrics(&openmetrics(), data)
    });
    let client = client(&prom.url);
    let payload = cycle(&client, || prom.log()).await;
    agrees(&payload, "Prometheus");
    models_and_restarts(&payload, &client, "Prometheus").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_signals_agree_direct_and_through_victoria_metrics() {
    if !common::have_program("victoria-metrics") {
        return;
    }
    let vm = VmServer::start("scrape_configs: []\n", Duration::from_secs(1));
    vm.import(import_text()).await;
    let client = client(&vm.url);
    let payload = cycle(&client, || vm.log()).await;
    agrees(&payload, "VictoriaMetrics");
    models_and_restarts(&payload, &client, "VictoriaMetrics").await;
}
