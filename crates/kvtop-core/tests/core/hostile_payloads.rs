//! Payloads written to hurt: the parser and alias table must stay linear in the number of
//! series, whatever the labels.

use std::time::{Duration, Instant};

use kvtop_core::engine::{PayloadLimits, TooManyEngines, extract_engines, extract_engines_within};
use kvtop_core::metrics::parse;

/// `series` readings of the KV usage gauge and of one TTFT bucket bound, each under its own
/// `pid`, all for one engine (the shape of `benches/parse.rs`'s hostile case).
fn one_signal_many_series(series: usize) -> String {
    let mut text = String::new();
    text.push_str("# TYPE vllm:kv_cache_usage_perc gauge\n");
    for pid in 0..series {
        text.push_str(&format!(
            "vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\",pid=\"{pid}\"}} 0.5\n"
        ));
    }
    for pid in 0..series {
        text.push_str(&format!(
            "vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\",pid=\"{pid}\"}} 1\n"
        ));
    }
    text
}

/// 120,000 series of one signal: a linear pass takes well under a second even unoptimised;
/// comparing every series with every other (7.2 billion comparisons) takes minutes. The bound
/// is generous so a loaded machine does not fail it.
#[test]
fn one_signal_with_120000_series_is_read_in_linear_time() {
    let payload = one_signal_many_series(120_000);
    let started = Instant::now();
    let engines = extract_engines(&parse(&payload));
    let took = started.elapsed();
    assert_eq!(engines.len(), 1);
    let engine = &engines[0];
    assert_eq!(engine.kv_usage, Some(0.5));
    let ttft = engine.ttft.as_ref().expect("ttft");
    assert_eq!(ttft.buckets.len(), 1);
    assert_eq!(ttft.buckets[0].count, 120_000.0);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// `engines` engines (one `model_name` each), each named twice, the second time in reverse
/// order so every lookup misses the last-engine shortcut.
fn many_engines(engines: usize) -> String {
    let mut payload = String::new();
    for model in 0..engines {
        payload.push_str(&format!(
            "vllm:num_requests_running{{engine=\"0\",model_name=\"m{model}\"}} 1\n"
        ));
    }
    for model in (0..engines).rev() {
        payload.push_str(&format!(
            "vllm:num_requests_waiting{{engine=\"0\",model_name=\"m{model}\"}} 2\n"
        ));
    }
    payload
}

/// Engines are found by identity: named again out of order, each lands on its own engine.
#[test]
fn engines_named_out_of_order_are_found_by_identity() {
    let engines = extract_engines(&parse(&many_engines(5_000)));
    assert_eq!(engines.len(), 5_000);
    assert!(
        engines
            .iter()
            .all(|e| e.running == Some(1.0) && e.waiting == Some(2.0))
    );
    assert_eq!(engines[4_999].id.model, "m4999");
}

/// A payload naming 120,000 engines stops at the target's limit: refused, without reading
/// (and allocating for) the engines past it.
#[test]
fn a_payload_naming_120000_engines_stops_at_the_limit() {
    let payload = many_engines(120_000);
    let expo = parse(&payload);
    let started = Instant::now();
    let refused = extract_engines_within(&expo, PayloadLimits::default().max_engines.get());
    let took = started.elapsed();
    assert_eq!(refused.err(), Some(TooManyEngines { limit: 1_000 }));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let within = extract_engines_within(&expo, 120_000).expect("within the limit");
    assert_eq!(within.len(), 120_000);
}
