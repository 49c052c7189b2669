//! Quantiles derived from bucket rates as Prometheus derives them from the same rates.

use crate::sources::prometheus::client::RawAnswer;
use crate::sources::prometheus::query::{LabelMap, QueryPlan, QuerySpec};
use crate::sources::prometheus::replay::split_cycles;
use kvtop_core::fleet::{DerivedPayload, QuantileWindow, ScrapeError};

fn plan() -> QueryPlan {
    QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false)
}

const A: &str =
    r#""pod":"a","namespace":"llm","instance":"10.0.0.1:8000","model_name":"m","engine":"0""#;
const B: &str =
    r#""pod":"b","namespace":"llm","instance":"10.0.0.2:8000","model_name":"m","engine":"0""#;

/// A range series: labels, and `(time, value)` points.
fn series(labels: &str, le: &str, points: &[(u32, &str)]) -> String {
    let values: Vec<String> = points
        .iter()
        .map(|(t, v)| format!(r#"[{t},"{v}"]"#))
        .collect();
    format!(
        r#"{{"metric":{{{labels},"le":"{le}"}},"values":[{}]}}"#,
        values.join(",")
    )
}

/// Every query of the past-window plan answered: `rate(NAME[…])` by `by_name`'s series, the
/// KV-usage and `running` queries naming A and B at every time of `times`, the rest empty.
fn answers(
    queries: &[QuerySpec],
    by_name: &[(&str, Vec<String>)],
    times: &[u32],
) -> Vec<Result<RawAnswer, ScrapeError>> {
    let present = |labels: &str| {
        let points: Vec<String> = times.iter().map(|t| format!(r#"[{t},"1"]"#)).collect();
        format!(
            r#"{{"metric":{{{labels}}},"values":[{}]}}"#,
            points.join(",")
        )
    };
    queries
        .iter()
        .map(|q| {
            let result = if q.signal == "running" {
                format!("{},{}", present(A), present(B))
            } else {
                by_name
                    .iter()
                    .find(|(name, _)| q.promql == format!("rate({name}[1m])"))
                    .map(|(_, s)| s.join(","))
                    .unwrap_or_default()
            };
            Ok(RawAnswer {
                status: 200,
                body: format!(
                    r#"{{"status":"success","data":{{"resultType":"matrix","result":[{result}]}}}}"#
                )
                .into_bytes(),
            })
        })
        .collect()
}

fn cycles(by_name: &[(&str, Vec<String>)], times: &[u32]) -> Vec<DerivedPayload> {
    let plan = plan();
    let queries = plan.past_window_cycle();
    let answers = answers(&queries, by_name, times);
    let at: Vec<f64> = times.iter().map(|t| f64::from(*t)).collect();
    split_cycles(&plan, &queries, &answers, &at)
        .into_iter()
        .map(|c| c.expect("a cycle"))
        .collect()
}

fn close(got: Option<f64>, want: f64) {
    let got = got.unwrap_or(f64::NAN);
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
}

fn engine<'p>(cycle: &'p DerivedPayload, pod: &str) -> &'p kvtop_core::fleet::DerivedEngine {
    cycle
        .engines
        .iter()
        .find(|e| e.instance.pod == pod)
        .expect("engine")
}

#[test]
fn a_higher_ranked_name_hides_the_same_series_of_a_lower_one_and_quantiles_interpolate() {
    let ttft = "vllm:time_to_first_token_seconds_bucket";
    let sglang = "sglang:time_to_first_token_seconds_bucket";
    let cycles = cycles(
        &[
            (
                ttft,
                vec![
                    series(A, "0.1", &[(100, "1"), (115, "0")]),
                    series(A, "0.5", &[(100, "3"), (115, "0")]),
                    series(A, "+Inf", &[(100, "4"), (115, "0")]),
                ],
            ),
            (
                sglang,
                vec![
                    // A's own under the other name: hidden by the V1 name's.
                    series(A, "0.1", &[(100, "0"), (115, "1")]),
                    series(A, "+Inf", &[(100, "5"), (115, "1")]),
                    // B's only: taken.
                    series(B, "1", &[(100, "2")]),
                    series(B, "+Inf", &[(100, "2")]),
                ],
            ),
        ],
        &[100, 115],
    );
    let a = &engine(&cycles[0], "a").signals;
    // Rank 2 of 4 halfway into (0.1, 0.5]; rank 3.8 in +Inf: the highest finite bound.
    close(a.ttft_p50, 0.3);
    close(a.ttft_p95, 0.5);
    let b = &engine(&cycles[0], "b").signals;
    close(b.ttft_p50, 0.5);
    // Nothing observed at 115 (every rate 0): no quantile, not 0.
    assert_eq!(engine(&cycles[1], "a").signals.ttft_p50, None);
    // B has no point at 115: a gap.
    assert_eq!(engine(&cycles[1], "b").signals.ttft_p50, None);
    // The model: A's and B's buckets summed by bound (0.1: 1, 0.5: 3, 1: 2, +Inf: 6; the
    // 1 raised to 3 as Prometheus repairs a non-monotonic sum).
    let m = cycles[0]
        .models
        .iter()
        .find(|m| m.model == "m")
        .expect("model");
    close(m.signals.ttft_p50, 0.5);
    close(m.signals.ttft_p95, 1.0);
    assert!(
        cycles[1]
            .models
            .iter()
            .all(|m| m.signals.ttft_p50.is_none())
    );
}

#[test]
fn two_reports_of_one_engine_weigh_once_in_the_model_and_the_stand_in_fills_per_engine() {
    let itl = "vllm:inter_token_latency_seconds_bucket";
    let tpot = "vllm:request_time_per_output_token_seconds_bucket";
    let a2 = A.replace(r#""engine":"0""#, r#""engine":"0","job":"second""#);
    let cycles = cycles(
        &[
            (
                itl,
                vec![
                    series(A, "0.1", &[(100, "2")]),
                    series(A, "+Inf", &[(100, "4")]),
                    series(&a2, "0.1", &[(100, "4")]),
                    series(&a2, "+Inf", &[(100, "4")]),
                    series(B, "0.1", &[(100, "1")]),
                    series(B, "+Inf", &[(100, "1")]),
                ],
            ),
            (
                tpot,
                vec![
                    series(A, "0.2", &[(100, "1")]),
                    series(A, "+Inf", &[(100, "1")]),
                ],
            ),
        ],
        &[100],
    );
    let b = &engine(&cycles[0], "b").signals;
    // B has no TPOT buckets: its ITL's stand in.
    close(b.tpot_p50, 0.05);
    close(b.itl_p50, 0.05);
    close(engine(&cycles[0], "a").signals.tpot_p50, 0.1);
    let m = &cycles[0].models[0].signals;
    // A's two reports averaged (0.1: 3, +Inf: 4), plus B's (1, 1): 4 of 5 under 0.1.
    close(m.itl_p50, 0.1 * 2.5 / 4.0);
    // The model has TPOT buckets (A's): B's ITL does not stand in for the model.
    close(m.tpot_p50, 0.1);
}

#[test]
fn a_failed_name_gives_no_quantile_of_its_histogram() {
    let plan = plan();
    let queries = plan.past_window_cycle();
    let ttft = "vllm:time_to_first_token_seconds_bucket";
    let mut answers = answers(
        &queries,
        &[(
            "sglang:time_to_first_token_seconds_bucket",
            vec![
                series(A, "0.1", &[(100, "1")]),
                series(A, "+Inf", &[(100, "1")]),
            ],
        )],
        &[100],
    );
    for (q, answer) in queries.iter().zip(answers.iter_mut()) {
        if q.promql == format!("rate({ttft}[1m])") {
            *answer = Err(ScrapeError::Refused);
        }
    }
    let cycles: Vec<DerivedPayload> = split_cycles(&plan, &queries, &answers, &[100.0])
        .into_iter()
        .map(|c| c.expect("a cycle"))
        .collect();
    assert_eq!(cycles[0].failures.len(), 1);
    assert_eq!(cycles[0].failures[0].signal, "ttft");
    assert_eq!(engine(&cycles[0], "a").signals.ttft_p50, None);
    assert!(
        cycles[0]
            .models
            .iter()
            .all(|m| m.signals.ttft_p50.is_none())
    );
}
