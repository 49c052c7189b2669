//! Range answers split per time give the cycles instant answers at those times give.

use super::*;
use crate::sources::prometheus::query::LabelMap;
use kvtop_core::fleet::QuantileWindow;

fn plan() -> QueryPlan {
    QueryPlan::new(LabelMap::default(), QuantileWindow::M1, false)
}

fn queries() -> Vec<QuerySpec> {
    plan()
        .every_cycle()
        .into_iter()
        .chain(plan().slow())
        .collect()
}

fn ok(body: String) -> Result<RawAnswer, ScrapeError> {
    Ok(RawAnswer {
        status: 200,
        body: body.into_bytes(),
    })
}

const A: &str = r#""pod":"vllm-a","namespace":"llm","model_name":"m","engine":"0""#;
const B: &str = r#""pod":"vllm-b","namespace":"llm","model_name":"m","engine":"0""#;

/// The answer of every query of the plan: KV usage and `running` as given (JSON series
/// bodies), every other query empty; `shape` is "matrix" or "vector".
fn answers(shape: &str, kv: &str, running: &str) -> Vec<Result<RawAnswer, ScrapeError>> {
    queries()
        .iter()
        .map(|q| {
            let result = match q.signal {
                "kv_usage" => kv,
                "running" => running,
                _ => "",
            };
            ok(format!(
                r#"{{"status":"success","data":{{"resultType":"{shape}","result":[{result}]}}}}"#
            ))
        })
        .collect()
}

fn payloads(outcomes: Vec<Result<DerivedPayload, ScrapeError>>) -> Vec<DerivedPayload> {
    outcomes.into_iter().map(|o| o.expect("a cycle")).collect()
}

#[test]
fn each_step_is_the_cycle_an_instant_query_then_gives() {
    // B has no point at 115: an instant query then would not have named it.
    let range = answers(
        "matrix",
        &format!(
            r#"{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A}}},"values":[[100,"0.5"],[115,"0.97"],[130,"0.99"]]}},
               {{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{B}}},"values":[[100,"0.25"],[130,"0.3"]]}}"#
        ),
        &format!(
            r#"{{"metric":{{{A}}},"values":[[100,"2"],[115,"3"],[130,"4"]]}},
               {{"metric":{{{B}}},"values":[[100,"1"],[130,"1"]]}}"#
        ),
    );
    let times = [100.0, 115.0, 130.0];
    let split = payloads(split_cycles(&plan(), &queries(), &range, &times));
    assert_eq!(split.len(), 3);
    let instant = |t: &str, kv_a: &str, kv_b: Option<&str>, run_a: &str, run_b: Option<&str>| {
        let kv_b = kv_b.map_or(String::new(), |v| {
            format!(
                r#",{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{B}}},"value":[{t},"{v}"]}}"#
            )
        });
        let run_b = run_b.map_or(String::new(), |v| {
            format!(r#",{{"metric":{{{B}}},"value":[{t},"{v}"]}}"#)
        });
        let live = answers(
            "vector",
            &format!(
                r#"{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A}}},"value":[{t},"{kv_a}"]}}{kv_b}"#
            ),
            &format!(r#"{{"metric":{{{A}}},"value":[{t},"{run_a}"]}}{run_b}"#),
        );
        live_cycle(&live)
    };
    let expected = [
        instant("100", "0.5", Some("0.25"), "2", Some("1")),
        instant("115", "0.97", None, "3", None),
        instant("130", "0.99", Some("0.3"), "4", Some("1")),
    ];
    for (got, want) in split.iter().zip(&expected) {
        assert_eq!(got.engines, want.engines);
    }
    let names = |p: &DerivedPayload| -> Vec<String> {
        p.engines.iter().map(|e| e.instance.pod.clone()).collect()
    };
    assert_eq!(names(&split[0]), ["vllm-a", "vllm-b"]);
    assert_eq!(names(&split[1]), ["vllm-a"]);
    assert_eq!(split[1].engines[0].sample.kv_usage, Some(0.97));
    assert!(split.iter().all(|p| p.queries == queries().len()));
}

/// What the live cycle's merge makes of instant answers.
fn live_cycle(answers: &[Result<RawAnswer, ScrapeError>]) -> DerivedPayload {
    let queries = queries();
    let plan = plan();
    let mut merge = CycleMerge::new(plan.labels());
    for (spec, raw) in queries.iter().zip(answers) {
        let raw = raw.as_ref().expect("answer");
        let answer = decode_answer(raw.status, &raw.body).expect("decodes");
        merge.add(spec, &answer);
    }
    let models = merge.models();
    let (engines, gpus) = merge.finish();
    DerivedPayload {
        engines,
        gpus,
        queries: queries.len(),
        failures: Vec::new(),
        bytes: 0,
        targets: None,
        window_secs: Some(plan.window_secs()),
        models,
    }
}

#[test]
fn a_step_without_any_series_has_no_engine_and_nothing_invented() {
    let range = answers(
        "matrix",
        &format!(
            r#"{{"metric":{{"__name__":"vllm:kv_cache_usage_perc",{A}}},"values":[[100,"0.5"]]}}"#
        ),
        &format!(r#"{{"metric":{{{A}}},"values":[[100,"2"]]}}"#),
    );
    let split = payloads(split_cycles(&plan(), &queries(), &range, &[100.0, 200.0]));
    assert_eq!(split[0].engines.len(), 1);
    assert!(split[1].engines.is_empty());
}

#[test]
fn failed_queries_are_each_cycles_failures_and_all_failing_is_the_error() {
    let mut range = answers("matrix", "", "");
    if let Some(first) = range.first_mut() {
        *first = Err(ScrapeError::Refused);
    }
    let split = payloads(split_cycles(&plan(), &queries(), &range, &[1.0, 2.0]));
    assert!(split.iter().all(|p| p.failures.len() == 1));
    let all_failed: Vec<_> = queries()
        .iter()
        .map(|_| Err(ScrapeError::Refused))
        .collect();
    let split = split_cycles(&plan(), &queries(), &all_failed, &[1.0, 2.0]);
    assert_eq!(
        split,
        vec![Err(ScrapeError::Refused), Err(ScrapeError::Refused)]
    );
}

#[test]
fn windows_count_their_steps_and_refuse_what_cannot_be_read() {
    let w = PastWindow::new(100.0, 160.0, 15.0).expect("window");
    assert_eq!(w.steps(), 5);
    assert_eq!(w.time(4), 160.0);
    assert_eq!(PastWindow::new(0.0, 0.3, 0.1).map(|w| w.steps()), Ok(4));
    assert_eq!(PastWindow::new(10.0, 5.0, 1.0), Err(WindowError::Reversed));
    assert_eq!(PastWindow::new(0.0, 5.0, 0.0), Err(WindowError::BadStep));
    assert!(matches!(
        PastWindow::new(0.0, 1e9, 1.0),
        Err(WindowError::TooManySteps { .. })
    ));
}
