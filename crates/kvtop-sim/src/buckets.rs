//! PURE. Which vLLM metrics dialect the simulator speaks, and the histogram bucket bounds each
//! dialect uses. Bounds are vLLM's own (V1: `vllm/v1/metrics/loggers.py`; V0:
//! `vllm/engine/metrics.py`), as seen in `tests/fixtures/`.

/// The vLLM metrics dialect an engine exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimVersion {
    /// vLLM V1 engine (0.10 line): `model_name` + `engine` labels, `kv_cache_usage_perc`,
    /// token-based prefix cache counters, request phase histograms.
    #[default]
    V1,
    /// vLLM V0 engine: `model_name` only, `gpu_cache_usage_perc`, swapped requests, the prefix
    /// cache hit-rate gauge, average throughput gauges and the short V0 buckets.
    V0,
}

/// V1 time to first token, seconds.
pub(crate) const V1_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/// V1 inter-token latency (and time per output token), seconds.
pub(crate) const V1_ITL: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// V1 request latencies (e2e, queue, prefill, decode, inference), seconds.
pub(crate) const V1_REQUEST_LATENCY: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// V1 prefill time per prompt token, seconds.
pub(crate) const V1_PREFILL_PER_TOKEN: &[f64] =
    &[0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0];

/// V1 tokens per engine step (CUDA graph capture sizes up to the batched-token limit).
pub(crate) const V1_ITERATION_TOKENS: &[f64] = &[
    1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0,
];

/// Histogram of the `n` sampling parameter (both dialects).
pub(crate) const PARAMS_N: &[f64] = &[1.0, 2.0, 5.0, 10.0, 20.0];

/// V0 time to first token, seconds.
pub(crate) const V0_TTFT: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// V0 time per output token, seconds.
pub(crate) const V0_TPOT: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];

/// V0 end-to-end request latency, seconds.
pub(crate) const V0_E2E: &[f64] = &[1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0];

/// vLLM's `build_1_2_5_buckets(max_value)`: 1, 2, 5, 10, 20, 50, ... up to and including
/// `max_value` (token-count histograms are bounded by `max_model_len`).
pub(crate) fn one_two_five(max_value: f64) -> Vec<f64> {
    let mut bounds = Vec::new();
    let mut exponent = 1.0;
    // 1e300 is far beyond any token count; the loop ends long before.
    while exponent < 1e300 {
        for mantissa in [1.0, 2.0, 5.0] {
            let value = mantissa * exponent;
            if value > max_value {
                return bounds;
            }
            bounds.push(value);
        }
        exponent *= 10.0;
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_counts_match_the_reference() {
        // metrics.md: TTFT 22 bounds, ITL 19, request latencies 21, iteration tokens 1..16384.
        assert_eq!(V1_TTFT.len(), 22);
        assert_eq!(V1_ITL.len(), 19);
        assert_eq!(V1_REQUEST_LATENCY.len(), 21);
        assert_eq!(V1_ITERATION_TOKENS.first(), Some(&1.0));
        assert_eq!(V1_ITERATION_TOKENS.last(), Some(&16384.0));
    }

    #[test]
    fn every_table_is_strictly_increasing() {
        for table in [
            V1_TTFT,
            V1_ITL,
            V1_REQUEST_LATENCY,
            V1_PREFILL_PER_TOKEN,
            V1_ITERATION_TOKENS,
            PARAMS_N,
            V0_TTFT,
            V0_TPOT,
            V0_E2E,
        ] {
            assert!(table.windows(2).all(|w| w[0] < w[1]), "{table:?}");
        }
    }

    #[test]
    fn one_two_five_stops_at_the_maximum() {
        assert_eq!(
            one_two_five(2048.0),
            vec![
                1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0
            ]
        );
        assert_eq!(one_two_five(20000.0).last(), Some(&20000.0));
        assert_eq!(one_two_five(32768.0).last(), Some(&20000.0));
        assert!(one_two_five(0.5).is_empty());
    }
}
