//! One line per model for the grouped fleet table: engines up, KV usage, requests running and
//! waiting, tokens per second, and the p95 TTFT of the model's engines taken together (from
//! their histograms merged, not from their own p95s, which do not average).

use super::state::{EngineState, EngineStatus};
use crate::metrics::{Bucket, merged_quantile};

/// A model's engines summed up. `None` where no engine of it knows the value.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSummary {
    pub engines: usize,
    pub up: usize,
    /// Mean KV usage of the engines that report it.
    pub kv_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub gen_tps: Option<f64>,
    /// p95 time to first token over the quantile window, from the merged histogram.
    pub ttft_p95: Option<f64>,
}

impl EngineState {
    /// The TTFT histogram's count increases over the last `window_secs` seconds; `None`
    /// without two comparable snapshots (and for rows a Prometheus source derives).
    pub fn ttft_deltas(&self, window_secs: f64) -> Option<Vec<Bucket>> {
        let mut out = Vec::new();
        self.window
            .bucket_deltas(super::window::HistogramKind::Ttft, window_secs, &mut out)
            .then_some(out)
    }
}

/// Sum of the known values; `None` when none is known.
fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// Summarise `engines` (those of one model) over a quantile window of `window_secs`.
pub fn summarize<'e>(
    engines: impl IntoIterator<Item = &'e EngineState>,
    window_secs: f64,
) -> ModelSummary {
    let engines: Vec<&EngineState> = engines.into_iter().collect();
    let up: Vec<&EngineState> = engines
        .iter()
        .copied()
        .filter(|e| e.status == EngineStatus::Up)
        .collect();
    let kv: Vec<f64> = up.iter().filter_map(|e| e.signals.kv_usage).collect();
    let deltas: Vec<Vec<Bucket>> = up
        .iter()
        .filter_map(|e| e.ttft_deltas(window_secs))
        .collect();
    let parts: Vec<&[Bucket]> = deltas.iter().map(Vec::as_slice).collect();
    ModelSummary {
        engines: engines.len(),
        up: up.len(),
        kv_usage: (!kv.is_empty()).then(|| kv.iter().sum::<f64>() / kv.len() as f64),
        running: sum(up.iter().map(|e| e.signals.running)),
        waiting: sum(up.iter().map(|e| e.signals.waiting)),
        gen_tps: sum(up.iter().map(|e| e.signals.gen_tps)),
        ttft_p95: merged_quantile(0.95, &parts),
    }
}
