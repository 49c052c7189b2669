//! One line per model for the grouped fleet table and the reports: engines up, KV usage,
//! requests running and waiting, tokens per second, and the latency quantiles of the model's
//! engines taken together: from their histograms merged (bucket increases summed, then
//! interpolated, as the dashboards' `histogram_quantile(q, sum by (le) (rate(…)))`), never
//! from their own quantiles, which do not average.

use std::sync::OnceLock;

use super::Signals;
use super::state::{EngineState, EngineStatus, Fleet, ModelSignals};
use super::window::HistogramKind;
use crate::metrics::{Bucket, histogram_quantiles, merge_into};
use crate::signals::{Derivation, MetricId, SIGNALS, SignalDef, quantile_stand_in};

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
    /// Every latency quantile of the catalog over the merged histograms (other signals unset).
    pub quantiles: Signals,
}

impl EngineState {
    /// The TTFT histogram's count increases over the last `window_secs` seconds; `None`
    /// without two comparable snapshots (and for rows a Prometheus source derives).
    pub fn ttft_deltas(&self, window_secs: f64) -> Option<Vec<Bucket>> {
        self.deltas(HistogramKind::Ttft, window_secs)
    }

    fn deltas(&self, kind: HistogramKind, window_secs: f64) -> Option<Vec<Bucket>> {
        let mut out = Vec::new();
        self.window
            .bucket_deltas(kind, window_secs, &mut out)
            .then_some(out)
    }
}

/// Sum of the known values; `None` when none is known.
fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// The catalog's latency quantiles over the merged histograms of `engines` (those scraped
/// directly: rows a source derives have no buckets here), over the last `window_secs`.
///
/// A quantile whose histogram no engine has takes its stand-in's (TPOT: the inter-token
/// latency), over the stand-in's buckets only, so bucket layouts are never mixed.
pub fn merged_quantiles(engines: &[&EngineState], window_secs: f64) -> Signals {
    // Where each engine's window starts is looked up once for all of its histograms.
    let starts: Vec<_> = engines
        .iter()
        .map(|engine| engine.window.start_of(window_secs))
        .collect();
    // Each histogram is merged once (the engines' bucket increases summed in the engines'
    // order, as `merged_quantile` sums its parts) and prepared once for all of its quantiles.
    let mut merged: Vec<(MetricId, Option<Vec<Bucket>>)> = Vec::new();
    let mut deltas = Vec::new();
    let mut merge = |metric: MetricId, merged: &mut Vec<(MetricId, Option<Vec<Bucket>>)>| {
        if merged.iter().any(|(m, _)| *m == metric) {
            return;
        }
        let mut sum: Option<Vec<Bucket>> = None;
        if let Some(kind) = HistogramKind::of(metric) {
            for (engine, start) in engines.iter().zip(&starts) {
                let Some(start) = *start else {
                    continue;
                };
                if engine.window.bucket_deltas_from(start, kind, &mut deltas) {
                    merge_into(sum.get_or_insert_with(Vec::new), &deltas);
                }
            }
        }
        merged.push((metric, sum));
    };
    let mut prepared = Vec::new();
    let mut out = Signals::default();
    for (histogram, members) in quantile_groups() {
        merge(*histogram, &mut merged);
        let stand_in = quantile_stand_in(*histogram);
        if let Some(stand_in) = stand_in {
            merge(stand_in, &mut merged);
        }
        let of = |metric: MetricId| {
            merged
                .iter()
                .find(|(m, _)| *m == metric)
                .and_then(|(_, buckets)| buckets.as_deref())
        };
        // No engine with the histogram: its stand-in's, if it has one.
        let buckets = of(*histogram)
            .or_else(|| stand_in.and_then(of))
            .unwrap_or_default();
        for chunk in members.chunks(GROUP) {
            let mut qs = [f64::NAN; GROUP];
            for (slot, (q, _)) in qs.iter_mut().zip(chunk) {
                *slot = *q;
            }
            let values = histogram_quantiles(qs, buckets, &mut prepared);
            for ((_, def), value) in chunk.iter().zip(values) {
                if let Some(value) = value {
                    def.set(&mut out, value);
                }
            }
        }
    }
    out
}

/// Quantiles taken from one preparation of a histogram's buckets.
const GROUP: usize = 4;

/// A histogram and its quantile signals, each with its `q`.
type QuantileGroup = (MetricId, Vec<(f64, &'static SignalDef)>);

/// The catalog's quantile signals grouped by histogram, in the catalog's order: each
/// histogram's quantiles are taken together.
fn quantile_groups() -> &'static [QuantileGroup] {
    static GROUPS: OnceLock<Vec<QuantileGroup>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        let mut groups: Vec<QuantileGroup> = Vec::new();
        for def in &SIGNALS {
            let Derivation::Quantile(histogram, q) = def.derivation else {
                continue;
            };
            let Ok(q) = q.parse::<f64>() else {
                continue;
            };
            match groups.iter_mut().find(|(h, _)| *h == histogram) {
                Some((_, members)) => members.push((q, def)),
                None => groups.push((histogram, vec![(q, def)])),
            }
        }
        groups
    })
}

/// Summarise `engines` (those of one model) over a quantile window of `window_secs`.
/// `derived`: the model's quantiles as a Prometheus source computed them, for what the
/// engines' own buckets do not give (rows read through Prometheus have none).
pub fn summarize<'e>(
    engines: impl IntoIterator<Item = &'e EngineState>,
    window_secs: f64,
    derived: Option<&Signals>,
) -> ModelSummary {
    let engines: Vec<&EngineState> = engines.into_iter().collect();
    let up = up_engines(&engines);
    let mut quantiles = merged_quantiles(&up, window_secs);
    if let Some(derived) = derived {
        fill_quantiles(&mut quantiles, derived);
    }
    summary_of(&engines, &up, quantiles)
}

/// Summarise `engines` with their latency quantiles already merged (`quantiles`: what
/// [`Fleet::model_quantiles`] gave for their model when they are all of its engines), so a
/// caller that holds them does not merge the histograms again.
pub fn summarize_with<'e>(
    engines: impl IntoIterator<Item = &'e EngineState>,
    quantiles: Signals,
) -> ModelSummary {
    let engines: Vec<&EngineState> = engines.into_iter().collect();
    summary_of(&engines, &up_engines(&engines), quantiles)
}

fn up_engines<'e>(engines: &[&'e EngineState]) -> Vec<&'e EngineState> {
    engines
        .iter()
        .copied()
        .filter(|e| e.status == EngineStatus::Up)
        .collect()
}

fn summary_of(engines: &[&EngineState], up: &[&EngineState], quantiles: Signals) -> ModelSummary {
    let kv: Vec<f64> = up.iter().filter_map(|e| e.signals.kv_usage).collect();
    ModelSummary {
        engines: engines.len(),
        up: up.len(),
        kv_usage: (!kv.is_empty()).then(|| kv.iter().sum::<f64>() / kv.len() as f64),
        running: sum(up.iter().map(|e| e.signals.running)),
        waiting: sum(up.iter().map(|e| e.signals.waiting)),
        gen_tps: sum(up.iter().map(|e| e.signals.gen_tps)),
        ttft_p95: quantiles.ttft_p95,
        quantiles,
    }
}

/// The catalog's latency quantiles of `merged`, with those of `derived` where `merged` has
/// none.
fn fill_quantiles(merged: &mut Signals, derived: &Signals) {
    for def in SIGNALS
        .iter()
        .filter(|d| matches!(d.derivation, Derivation::Quantile(..)))
    {
        if (def.get)(merged).is_none() {
            if let Some(value) = (def.get)(derived) {
                def.set(merged, value);
            }
        }
    }
}

impl Fleet {
    /// Every model's latency quantiles over its up engines' merged histograms (a Prometheus
    /// source's own where the engines' buckets give none), in order of first appearance.
    pub fn model_quantiles(&self) -> Vec<ModelSignals> {
        let mut models: Vec<(&str, Vec<&EngineState>)> = Vec::new();
        for engine in self.engines() {
            let model = engine.id.model.as_str();
            if model.is_empty() {
                continue;
            }
            let up = engine.status == EngineStatus::Up;
            match models.iter_mut().find(|(m, _)| *m == model) {
                Some((_, members)) if up => members.push(engine),
                Some(_) => {}
                None => models.push((model, if up { vec![engine] } else { Vec::new() })),
            }
        }
        let window = self.window_secs();
        models
            .into_iter()
            .map(|(model, members)| {
                let mut signals = merged_quantiles(&members, window);
                if let Some(derived) = self.source_model_signals(model) {
                    fill_quantiles(&mut signals, derived);
                }
                ModelSignals {
                    model: model.to_owned(),
                    signals,
                }
            })
            .collect()
    }
}
