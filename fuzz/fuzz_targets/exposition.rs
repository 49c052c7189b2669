//! The scrape path on arbitrary bytes: `decode_payload` (lossy UTF-8, exposition parser, vLLM /
//! SGLang alias extraction, DCGM extraction), then `histogram_quantile` over every histogram the
//! extraction produced, and the parser's own surface (label iteration and lookup, `# TYPE`).
//!
//! Besides "never panics", it checks what callers rely on: the error list is capped, a
//! quantile of a well-formed histogram is a number inside the bucket bounds.

#![no_main]

use kvtop_core::engine::Histogram;
use kvtop_core::metrics::parser::MAX_RECORDED_ERRORS;
use kvtop_core::metrics::{Bucket, histogram_quantile, parse};
use kvtop::sources::decode_payload;
use libfuzzer_sys::fuzz_target;

/// The quantiles the console asks for, plus the edges of the valid range.
const QUANTILES: [f64; 7] = [0.0, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0];

/// Largest bucket bound or count magnitude for which interpolation cannot overflow.
const SANE_MAGNITUDE: f64 = 1e300;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = decode_payload(data) {
        assert!(payload.bytes == data.len());
        for engine in &payload.engines {
            let histograms = [&engine.ttft, &engine.itl, &engine.e2e, &engine.queue_time];
            for histogram in histograms.into_iter().flatten() {
                check_quantiles(histogram);
            }
        }
    }

    let text = String::from_utf8_lossy(data);
    let expo = parse(&text);
    assert!(expo.errors.len() <= MAX_RECORDED_ERRORS);
    assert!(expo.errors.len() <= expo.malformed);
    for sample in &expo.samples {
        assert!(!sample.name.is_empty());
        for (name, value) in sample.labels() {
            let found = sample.label(name);
            assert!(found.is_some(), "label {name:?} iterated but not found");
            // The first label of that name is the one `label` returns.
            let first = sample.labels().find(|(n, _)| *n == name).map(|(_, v)| v);
            assert_eq!(found, first);
            let _ = value;
        }
        let _ = expo.metric_type(sample.name);
    }
});

/// Every quantile is defined (`histogram_quantile` never panics) and, for a histogram whose
/// bounds and counts are finite, non-negative counts and moderate magnitudes, lies between the
/// lowest bound (or 0) and the highest finite bound.
fn check_quantiles(histogram: &Histogram) {
    for q in QUANTILES {
        let value = histogram_quantile(q, &histogram.buckets);
        let Some(value) = value else { continue };
        if !is_sane(&histogram.buckets) {
            continue;
        }
        assert!(
            !value.is_nan(),
            "NaN quantile {q} of {:?}",
            histogram.buckets
        );
        let finite = histogram
            .buckets
            .iter()
            .map(|b| b.le)
            .filter(|le| le.is_finite());
        let lowest = finite.clone().fold(0.0_f64, f64::min);
        let highest = finite.fold(f64::NEG_INFINITY, f64::max);
        // Interpolation may round one ulp past a bound.
        let slack = 1e-12 * lowest.abs().max(highest.abs());
        assert!(
            value >= lowest - slack && value <= highest.max(0.0) + slack,
            "quantile {q} = {value} outside [{lowest}, {highest}] for {:?}",
            histogram.buckets
        );
    }
}

fn is_sane(buckets: &[Bucket]) -> bool {
    buckets.iter().all(|b| {
        (b.le == f64::INFINITY || b.le.abs() <= SANE_MAGNITUDE)
            && b.count >= 0.0
            && b.count <= SANE_MAGNITUDE
    })
}
