//! Current signals of one directly scraped engine: gauges from its latest sample, rates and
//! windowed quantiles from its snapshot window. (Rows of a Prometheus source get theirs
//! computed by Prometheus: `state::prometheus_source`.)

use super::Signals;
use super::window::{Counter, HistogramKind, SnapshotWindow};
use crate::engine::EngineSample;
use crate::metrics::{Bucket, histogram_quantiles};

/// Buffers reused from one derivation to the next: a window's bucket deltas, and the same
/// sorted and repaired for its quantiles.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeriveScratch {
    deltas: Vec<Bucket>,
    prepared: Vec<Bucket>,
}

/// Derive the signals of an engine over the last `window_secs` seconds of its snapshots.
pub(crate) fn derive(
    sample: &EngineSample,
    window: &SnapshotWindow,
    window_secs: f64,
    scratch: &mut DeriveScratch,
) -> Signals {
    // Where the window starts is looked up once for every rate, ratio and quantile.
    let start = window.start_of(window_secs);
    let rate = |counter| window.rate_from(start?, counter);
    let ratio = |numerator, denominator| window.ratio_from(start?, numerator, denominator);
    // `None` when the window holds no deltas of the histogram (not exported, or one
    // snapshot): then a quantile signal may take its stand-in's.
    let mut quantiles = |kind, qs: [f64; 3]| -> Option<[Option<f64>; 3]> {
        let DeriveScratch { deltas, prepared } = &mut *scratch;
        if !window.bucket_deltas_from(start?, kind, deltas) {
            return None;
        }
        Some(histogram_quantiles(qs, deltas, prepared))
    };
    let all = [0.5, 0.95, 0.99];
    let [ttft_p50, ttft_p95, ttft_p99] = quantiles(HistogramKind::Ttft, all).unwrap_or_default();
    let [itl_p50, itl_p95, itl_p99] = quantiles(HistogramKind::Itl, all).unwrap_or_default();
    let [e2e_p50, e2e_p95, e2e_p99] = quantiles(HistogramKind::E2e, all).unwrap_or_default();
    let [queue_p50, queue_p95, queue_p99] =
        quantiles(HistogramKind::QueueTime, all).unwrap_or_default();
    // Per engine, as the PromQL's `or on (…)`: TPOT when the engine has it, else ITL.
    let [tpot_p50, tpot_p95, tpot_p99] =
        quantiles(HistogramKind::Tpot, all).unwrap_or([itl_p50, itl_p95, itl_p99]);
    let [prefill_p50, prefill_p95, prefill_p99] =
        quantiles(HistogramKind::PrefillTime, all).unwrap_or_default();
    let [decode_p50, decode_p95, decode_p99] =
        quantiles(HistogramKind::DecodeTime, all).unwrap_or_default();
    let share = |counter| ratio(counter, Counter::RequestsFinished);
    let http_share = |counter| ratio(counter, Counter::HttpRequests);

    Signals {
        kv_usage: known(sample.kv_usage),
        running: known(sample.running),
        waiting: known(sample.waiting),
        swapped: known(sample.swapped),
        preemptions_per_s: rate(Counter::Preemptions),
        gen_tps: rate(Counter::GenerationTokens),
        prompt_tps: rate(Counter::PromptTokens),
        requests_per_s: rate(Counter::RequestsFinished),
        prefix_hit: ratio(Counter::PrefixHits, Counter::PrefixQueries)
            .or(known(sample.prefix_hit_rate_gauge)),
        ttft_p50,
        ttft_p95,
        ttft_p99,
        itl_p50,
        itl_p95,
        itl_p99,
        e2e_p95,
        e2e_p99,
        queue_p95,
        spec_acceptance: ratio(Counter::SpecAcceptedTokens, Counter::SpecDraftTokens)
            .or(known(sample.spec_acceptance_gauge)),
        cpu_cores: rate(Counter::CpuSeconds),
        error_ratio: ratio(Counter::RequestsFailed, Counter::RequestsFinished),
        kv_capacity_tokens: sample
            .cache_config
            .as_ref()
            .and_then(|c| c.kv_capacity_tokens())
            .map(|tokens| tokens as f64),
        tpot_p50,
        tpot_p95,
        tpot_p99,
        prefill_p50,
        prefill_p95,
        prefill_p99,
        decode_p50,
        decode_p95,
        decode_p99,
        finished_stop: share(Counter::FinishedStop),
        finished_length: share(Counter::FinishedLength),
        finished_abort: share(Counter::FinishedAbort),
        finished_error: share(Counter::FinishedError),
        finished_repetition: share(Counter::FinishedRepetition),
        http_per_s: rate(Counter::HttpRequests),
        http_4xx_ratio: http_share(Counter::Http4xx),
        http_5xx_ratio: http_share(Counter::Http5xx),
        spec_accept_length: ratio(Counter::SpecAcceptedTokens, Counter::SpecDrafts)
            .map(|accepted_per_draft| 1.0 + accepted_per_draft),
        e2e_p50,
        queue_p50,
        queue_p99,
        // GPU signals are joined in by the fleet from its GPU store.
        gpu_util: None,
        gpu_mem: None,
        gpu_temp: None,
        gpu_power: None,
        xid: None,
    }
}

/// A gauge reading that is a finite number. `NaN` is as unknown as a missing metric, and so is
/// ±Inf: no gauge read here (KV usage, requests, hit and acceptance rates) can be infinite, and
/// an infinite reading must not reach the rules as "above every threshold".
fn known(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::fleet::window::SnapshotWindow;

    #[test]
    fn nan_and_infinite_gauges_are_unknown() {
        let sample = EngineSample {
            id: EngineId::default(),
            kv_usage: Some(f64::NAN),
            running: Some(f64::INFINITY),
            waiting: Some(f64::NEG_INFINITY),
            swapped: Some(3.0),
            prefix_hit_rate_gauge: Some(f64::INFINITY),
            ..EngineSample::default()
        };
        let window = SnapshotWindow::new();
        let signals = derive(&sample, &window, 60.0, &mut DeriveScratch::default());
        assert_eq!(signals.kv_usage, None);
        assert_eq!(signals.running, None);
        assert_eq!(signals.waiting, None);
        assert_eq!(signals.prefix_hit, None);
        assert_eq!(signals.swapped, Some(3.0));
    }
}
