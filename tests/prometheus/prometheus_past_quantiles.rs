//! A past window's histogram quantiles, derived by kvtop from the bucket rates it reads
//! (`QueryPlan::past_window_cycle`), are Prometheus' own `histogram_quantile` of the live
//! queries (`QueryPlan::every_cycle`) on the same data, step by step, engine by engine and
//! model by model: a real Prometheus on a promtool-backfilled TSDB answers both.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::prometheus::{PromServer, backfill_openmetrics};
use kvtop::config::PrometheusConfig;
use kvtop::sources::prometheus::replay::split_cycles;
use kvtop::sources::prometheus::{ClientSettings, LabelMap, PromClient, QueryPlan, QuerySpec};
use kvtop_core::fleet::{DerivedPayload, QuantileWindow};

const SAMPLE: i64 = 15;
/// 30 minutes of data.
const SPAN: i64 = 30 * 60;

/// Observations added in one 15 s interval at sample `k` to each bound's bucket (not yet
/// cumulative), for a histogram with `bounds` finite bounds; `seed` varies engines.
fn observations(k: i64, bounds: usize, seed: i64) -> Vec<i64> {
    let phase = (k / 8 + seed) % 5;
    (0..=bounds)
        .map(|b| match phase {
            // Nothing observed: every rate is 0 and the quantile is not a number.
            0 => 0,
            // Only beyond the highest finite bound: the quantile is that bound.
            1 => i64::from(b == bounds) * (1 + k % 3),
            _ => (k * 7 + b as i64 * 3 + seed) % 4,
        })
        .collect()
}

/// One histogram of one engine report: `name{labels,le=…}` cumulative counts at every sample
/// time from `start` (none in `gap`).
fn histogram(
    om: &mut Vec<(String, String)>,
    name: &str,
    labels: &str,
    bounds: &[&str],
    start: i64,
    seed: i64,
    gap: Option<(i64, i64)>,
) {
    let samples = SPAN / SAMPLE;
    let mut totals = vec![0_i64; bounds.len() + 1];
    let mut lines: Vec<Vec<String>> = vec![Vec::new(); bounds.len() + 1];
    for k in 0..=samples {
        let t = start + k * SAMPLE;
        for (total, added) in totals.iter_mut().zip(observations(k, bounds.len(), seed)) {
            *total += added;
        }
        if gap.is_some_and(|(from, to)| (from..to).contains(&t)) {
            continue;
        }
        let mut cumulative = 0;
        for (i, total) in totals.iter().enumerate() {
            cumulative += total;
            let le = bounds.get(i).copied().unwrap_or("+Inf");
            if let Some(line) = lines.get_mut(i) {
                line.push(format!("{name}{{{labels},le=\"{le}\"}} {cumulative} {t}"));
            }
        }
    }
    for line in lines.into_iter().flatten() {
        om.push((name.to_owned(), line));
    }
}

/// The samples; `mixed_layouts`: B's ITL under its old name has a bound more than under the
/// new one, and C's E2E has one bound written two ways (VictoriaMetrics treats such mixes
/// otherwise than Prometheus, whose semantics a past window follows).
fn openmetrics(start: i64, mixed_layouts: bool) -> String {
    let a = r#"pod="vllm-a",namespace="llm",instance="10.0.0.1:8000",job="vllm",model_name="m1",engine="0""#;
    // A second job scraping the same engine: one engine, two reports.
    let a2 = r#"pod="vllm-a",namespace="llm",instance="10.0.0.1:8000",job="vllm-2",model_name="m1",engine="0""#;
    let b = r#"pod="vllm-b",namespace="llm",instance="10.0.0.2:8000",job="vllm",model_name="m1",engine="0""#;
    let c = r#"pod="vllm-c",namespace="llm",instance="10.0.0.3:8000",job="vllm",model_name="m2",engine="0""#;
    let latency = ["0.01", "0.1", "1"];
    let gap = Some((start + 12 * 60, start + 16 * 60));
    let mut om = Vec::new();
    let ttft = "vllm:time_to_first_token_seconds_bucket";
    histogram(&mut om, ttft, a, &latency, start, 0, None);
    histogram(&mut om, ttft, a2, &latency, start, 1, None);
    histogram(&mut om, ttft, b, &latency, start, 2, gap);
    // C's has the +Inf bucket only: never a quantile.
    histogram(&mut om, ttft, c, &[], start, 3, None);
    // A's TTFT under SGLang's name too, other counts: hidden by the V1 name's.
    let sglang = "sglang:time_to_first_token_seconds_bucket";
    histogram(&mut om, sglang, a, &latency, start, 4, None);
    // ITL under both of vLLM's names for B; A's TPOT of its own, B's ITL stands in.
    let itl = "vllm:inter_token_latency_seconds_bucket";
    let itl_old = "vllm:time_per_output_token_seconds_bucket";
    histogram(&mut om, itl, a, &["0.02", "0.05"], start, 1, None);
    histogram(&mut om, itl, b, &["0.02", "0.05"], start, 3, None);
    let old_bounds: &[&str] = if mixed_layouts {
        &["0.02", "0.05", "0.1"]
    } else {
        &["0.02", "0.05"]
    };
    histogram(&mut om, itl_old, b, old_bounds, start, 0, None);
    let tpot = "vllm:request_time_per_output_token_seconds_bucket";
    histogram(&mut om, tpot, a, &["0.05"], start, 2, None);
    // C's E2E bounds written two ways, which Prometheus takes as one bound.
    let e2e = "vllm:e2e_request_latency_seconds_bucket";
    let e2e_bounds: &[&str] = if mixed_layouts {
        &["0.5", "0.50", "5"]
    } else {
        &["0.5", "5"]
    };
    histogram(&mut om, e2e, c, e2e_bounds, start, 1, None);
    // Engines exist through their `running` gauge.
    for labels in [a, a2, b, c] {
        for k in 0..=SPAN / SAMPLE {
            let t = start + k * SAMPLE;
            om.push((
                "vllm:num_requests_running".to_owned(),
                format!("vllm:num_requests_running{{{labels}}} 1 {t}"),
            ));
        }
    }
    // A family's samples together, each series' in time order.
    om.sort_by(|x, y| x.0.cmp(&y.0));
    let mut text = String::new();
    let mut family = "";
    for (name, line) in &om {
        if name != family {
            let _ = writeln!(text, "# TYPE {name} unknown");
            family = name;
        }
        let _ = writeln!(text, "{line}");
    }
    text.push_str("# EOF\n");
    text
}

/// The window's cycles read with `queries`.
async fn read(
    client: &PromClient,
    plan: &QueryPlan,
    queries: &[QuerySpec],
    times: &[f64],
) -> Vec<DerivedPayload> {
    let (first, last) = (times[0], times[times.len() - 1]);
    let mut answers = Vec::new();
    for q in queries {
        answers.push(
            client
                .query_range(&q.promql, first, last, SAMPLE as f64)
                .await,
        );
    }
    split_cycles(plan, queries, &answers, times)
        .into_iter()
        .map(|c| c.expect("a cycle"))
        .collect()
}

fn client(url: &str) -> PromClient {
    PromClient::new(
        &PrometheusConfig::at(url.to_owned()),
        ClientSettings {
            timeout: Duration::from_secs(30),
            body_limit: 64 * 1024 * 1024,
            user_agent: "kvtop-test".into(),
        },
    )
    .expect("client")
}

/// The window's cycles from `url`, with the server's quantiles and with kvtop's.
fn both(url: &str, start: i64) -> (Vec<f64>, Vec<DerivedPayload>, Vec<DerivedPayload>) {
    let client = client(url);
    let plan = QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false);
    let times: Vec<f64> = (2 * 60 / SAMPLE..=SPAN / SAMPLE)
        .map(|k| (start + k * SAMPLE) as f64)
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (served, derived) = runtime.block_on(async {
        let live = read(&client, &plan, &plan.every_cycle(), &times).await;
        let past = read(&client, &plan, &plan.past_window_cycle(), &times).await;
        (live, past)
    });
    (times, served, derived)
}

fn start_time() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    (now - 140 * 60) / 60 * 60
}

#[test]
fn victoria_metrics_quantiles_from_bucket_rates() {
    if !common::have_program("victoria-metrics") {
        assert!(
            std::env::var_os("KVTOP_TEST_REQUIRE_ALL").is_none(),
            "victoria-metrics is required"
        );
        return;
    }
    let start = start_time();
    let text: String = openmetrics(start, false)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (sample, t) = l.rsplit_once(' ')?;
            Some(format!("{sample} {}\n", t.parse::<i64>().ok()? * 1000))
        })
        .collect();
    let samples = text.lines().count();
    let vm = common::victoria::VmServer::start("scrape_configs: []\n", Duration::from_secs(1));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        vm.import(text).await;
        let client = client(&vm.url);
        let count = format!(
            "sum(count_over_time({{__name__=~\"(vllm|sglang):.*\"}}[{}s]))",
            SPAN + 60
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let raw = client.query(&count, Some((start + SPAN + 30) as f64)).await;
            let found = raw.ok().and_then(|raw| {
                kvtop::sources::prometheus::decode::decode_answer(raw.status, &raw.body)
                    .ok()
                    .and_then(|a| a.series.first().and_then(|s| s.sample()))
            });
            if found == Some(samples as f64) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{found:?} of {samples}"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    // VictoriaMetrics' own interpolation differs from Prometheus' in the last bits: the
    // same quantiles where it has them, none where it has none.
    let (times, served, derived) = both(&vm.url, start);
    let mut compared = 0;
    for ((at, s), d) in times.iter().zip(&served).zip(&derived) {
        assert_eq!(s.engines.len(), d.engines.len(), "at {at}");
        for (se, de) in s.engines.iter().zip(&d.engines) {
            for def in kvtop_core::signals::SIGNALS.iter() {
                let (want, got) = ((def.get)(&se.signals), (def.get)(&de.signals));
                let same = match (want, got) {
                    (Some(w), Some(g)) => {
                        compared += 1;
                        (w - g).abs() <= 1e-9 * w.abs().max(1e-9)
                    }
                    (w, g) => w == g,
                };
                assert!(
                    same,
                    "{at} {} {}: {want:?} {got:?}",
                    se.instance.pod, def.name
                );
            }
        }
        assert_eq!(s.models.len(), d.models.len(), "at {at}");
    }
    assert!(compared > 100, "{compared}");
}

#[test]
fn quantiles_derived_from_bucket_rates_are_prometheus_own() {
    if !(common::have_program("prometheus") && common::have_program("promtool")) {
        assert!(
            std::env::var_os("KVTOP_TEST_REQUIRE_ALL").is_none(),
            "prometheus and promtool are required"
        );
        return;
    }
    let start = start_time();
    let data = openmetrics(start, true);
    let prom = PromServer::start("global:\n  scrape_interval: 15s\n", |dir| {
        backfill_openmetrics(&data, dir)
    });
    let (times, served, derived) = both(&prom.url, start);
    assert_eq!(served.len(), derived.len());
    for ((at, s), d) in times.iter().zip(&served).zip(&derived) {
        assert!(
            s.failures.is_empty() && d.failures.is_empty(),
            "{at}: {s:?} {d:?}"
        );
        assert_eq!(s.engines, d.engines, "at {at}\n{}", prom.log());
        // A model's buckets are sums over its engines, which Prometheus adds in an order that
        // changes from one evaluation to the next (its range evaluation keeps series in a
        // hash map): its own answers differ between two runs in the last bits.
        let names =
            |p: &DerivedPayload| p.models.iter().map(|m| m.model.clone()).collect::<Vec<_>>();
        assert_eq!(names(s), names(d), "at {at}");
        for (sm, dm) in s.models.iter().zip(&d.models) {
            for def in kvtop_core::signals::SIGNALS.iter() {
                let (want, got) = ((def.get)(&sm.signals), (def.get)(&dm.signals));
                let same = match (want, got) {
                    (Some(w), Some(g)) => (w - g).abs() <= 1e-9 * w.abs().max(1e-9),
                    (w, g) => w == g,
                };
                assert!(same, "{} {} at {at}: {want:?} {got:?}", sm.model, def.name);
            }
        }
    }
    // The cases the data holds were met: a quantile at the highest finite bound, none where
    // nothing was observed, none in B's gap, the stand-in, the single bucket, the model.
    let engine = |p: &DerivedPayload, pod: &str| {
        p.engines
            .iter()
            .find(|e| e.instance.pod == pod)
            .map(|e| e.signals)
    };
    let a: Vec<_> = derived.iter().filter_map(|p| engine(p, "vllm-a")).collect();
    assert!(a.iter().any(|s| s.ttft_p50 == Some(1.0)));
    assert!(
        a.iter()
            .any(|s| s.ttft_p50.is_some_and(|v| v != 1.0 && v > 0.0))
    );
    // C alone reports its E2E: where it observed nothing it has none.
    let c: Vec<_> = derived.iter().filter_map(|p| engine(p, "vllm-c")).collect();
    assert!(c.iter().any(|s| s.e2e_p50.is_none()));
    assert!(c.iter().any(|s| s.e2e_p50 == Some(5.0)));
    assert!(c.iter().any(|s| s.e2e_p50.is_some_and(|v| v < 5.0)));
    let b: Vec<_> = derived.iter().filter_map(|p| engine(p, "vllm-b")).collect();
    assert!(
        b.iter()
            .any(|s| s.tpot_p95.is_some() && s.tpot_p95 == s.itl_p95)
    );
    let b_ttft = b.iter().filter(|s| s.ttft_p50.is_some()).count();
    assert!(
        b_ttft > 0 && b_ttft < b.len() - 8,
        "{b_ttft} of {}",
        b.len()
    );
    assert!(c.iter().all(|s| s.ttft_p50.is_none()));
    let m1 = derived
        .iter()
        .flat_map(|p| &p.models)
        .filter(|m| m.model == "m1")
        .filter(|m| m.signals.ttft_p95.is_some() && m.signals.tpot_p50.is_some())
        .count();
    assert!(m1 > 0);
}
