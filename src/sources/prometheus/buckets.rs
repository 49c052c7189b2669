//! PURE. A past window's histogram quantiles, derived from the bucket rates the reader fetched
//! ([`Shape::BucketRates`]) exactly as the live queries have Prometheus derive them:
//!
//! - per engine: `histogram_quantile(q, sum by (le, <engine labels>) (rate(a) or rate(b) …))`,
//!   a histogram's stand-in (TPOT's is ITL) taken `or on (<engine labels>)`, for engines with
//!   none of the histogram's own buckets;
//! - per model: `histogram_quantile(q, sum by (le, model) (avg by (le, <engine identity>)
//!   (rate(a) or rate(b) …)))`, the stand-in `or on (model)`.
//!
//! `a or b` keeps a series of `b` only when no series of `a` has its labels (the metric name
//! aside) at that step; `sum`, `avg` and the interpolation ([`histogram_quantile`], which
//! follows Prometheus') are done step by step over the points present. A series without a
//! point at a step is not there, so a gap stays a gap. Which series feed which sums is worked
//! out once per chunk, so a step only adds numbers.

use std::collections::HashMap;

use super::decode::{Answer, Item, parse_value};
use super::merge::CycleMerge;
use super::query::{LabelMap, QuerySpec, Shape};
use kvtop_core::fleet::Ts;
use kvtop_core::metrics::{Bucket, histogram_quantile};
use kvtop_core::signals::{Derivation, MetricId, SIGNALS, Signal, quantile_stand_in};

/// The bucket-rate answers of one chunk, ready to give each step's quantiles.
#[derive(Debug)]
pub(crate) struct PastQuantiles<'d, 'a> {
    histograms: Vec<Histogram<'d, 'a>>,
    /// A series of each engine report (`sum by` group), for its labels.
    group_items: Vec<&'d Item<'a>>,
    /// The model of each engine identity (`avg by` group), as an index into `models`.
    identity_model: Vec<usize>,
    models: Vec<&'d str>,
    /// Per histogram with quantile signals of its own: the quantiles and where they go.
    engine_slots: Vec<(MetricId, Vec<(f64, Signal)>)>,
    /// Every per-model quantile signal: its histogram, quantile and slot.
    model_slots: Vec<(MetricId, f64, Signal)>,
}

/// The bucket series of one histogram, all of its names.
#[derive(Debug)]
struct Histogram<'d, 'a> {
    metric: MetricId,
    /// Every name was answered: a histogram with a failed name gives nothing, so a lower
    /// ranked name's buckets never stand for those of a name whose answer was lost.
    complete: bool,
    /// In order of precedence of their names (answer order within a name).
    series: Vec<BucketSeries<'d, 'a>>,
    /// Distinct label sets (the name aside), for `or`.
    label_sets: usize,
    /// The bound of each distinct `le` text; `None` when absent or not a number (such a
    /// series is summed, as Prometheus does, but its group never reaches the interpolation).
    bounds: Vec<Option<f64>>,
}

#[derive(Debug)]
struct BucketSeries<'d, 'a> {
    item: &'d Item<'a>,
    rank: usize,
    label_set: usize,
    le: usize,
    group: usize,
    identity: usize,
    /// The next point not yet before the step being read (steps only grow).
    cursor: usize,
}

/// Dense ids for label-value tuples, in order of first sight.
#[derive(Debug, Default)]
struct Interner<'d> {
    ids: HashMap<Vec<&'d str>, usize>,
}

impl<'d> Interner<'d> {
    fn id(&mut self, key: Vec<&'d str>) -> (usize, bool) {
        let next = self.ids.len();
        match self.ids.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => (*e.get(), false),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(next);
                (next, true)
            }
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// One step's sums of one histogram.
struct StepSums {
    /// Per engine report and bound: `sum by (le, <engine labels>)`, and whether any series
    /// added to it.
    group_sum: Vec<f64>,
    group_seen: Vec<bool>,
    /// Engine reports with any series at the step (`or on (<engine labels>)`).
    group_present: Vec<bool>,
    /// Per model and bound: the `sum by (le, model)` of the engines' `avg by`.
    model_sum: Vec<f64>,
    model_seen: Vec<bool>,
    model_present: Vec<bool>,
}

impl<'d, 'a> PastQuantiles<'d, 'a> {
    /// The answers of the chunk's [`Shape::BucketRates`] queries (others are ignored);
    /// `failed` are those of its queries that got no answer.
    pub fn new(
        labels: &LabelMap,
        answers: &[(&QuerySpec, &'d Answer<'a>)],
        failed: &[&QuerySpec],
    ) -> Self {
        let group_labels = labels.engine_labels();
        let identity_labels = labels.engine_identity_labels();
        let mut groups = Interner::default();
        let mut identities = Interner::default();
        let mut model_ids = Interner::default();
        let mut group_items: Vec<&'d Item<'a>> = Vec::new();
        let mut identity_model: Vec<usize> = Vec::new();
        let mut models: Vec<&'d str> = Vec::new();
        let mut histograms: Vec<Histogram<'d, 'a>> = Vec::new();
        let mut label_sets: Vec<Interner<'d>> = Vec::new();
        let mut les: Vec<Interner<'d>> = Vec::new();
        let shapes = answers
            .iter()
            .map(|(spec, answer)| (&spec.shape, Some(*answer)))
            .chain(failed.iter().map(|spec| (&spec.shape, None)));
        for (shape, answer) in shapes {
            let Shape::BucketRates { histogram, rank } = *shape else {
                continue;
            };
            let index = match histograms.iter().position(|h| h.metric == histogram) {
                Some(index) => index,
                None => {
                    histograms.push(Histogram {
                        metric: histogram,
                        complete: true,
                        series: Vec::new(),
                        label_sets: 0,
                        bounds: Vec::new(),
                    });
                    label_sets.push(Interner::default());
                    les.push(Interner::default());
                    histograms.len() - 1
                }
            };
            let (Some(h), Some(sets), Some(le_ids)) = (
                histograms.get_mut(index),
                label_sets.get_mut(index),
                les.get_mut(index),
            ) else {
                continue;
            };
            let Some(answer) = answer else {
                h.complete = false;
                continue;
            };
            for item in &answer.series {
                let mut set: Vec<(&'d str, &'d str)> =
                    item.labels().filter(|(n, _)| *n != "__name__").collect();
                set.sort_unstable();
                let (label_set, _) = sets.id(set.into_iter().flat_map(|(n, v)| [n, v]).collect());
                let le_text = item.label("le").unwrap_or("");
                let (le, new_le) = le_ids.id(vec![le_text]);
                if new_le {
                    h.bounds.push(item.label("le").and_then(parse_value));
                }
                let values = |names: &[&str]| -> Vec<&'d str> {
                    names.iter().map(|n| item.label(n).unwrap_or("")).collect()
                };
                let (group, new_group) = groups.id(values(&group_labels));
                if new_group {
                    group_items.push(item);
                }
                let (identity, new_identity) = identities.id(values(&identity_labels));
                if new_identity {
                    let model = item.label(&labels.model).unwrap_or("");
                    let (model_id, new_model) = model_ids.id(vec![model]);
                    if new_model {
                        models.push(model);
                    }
                    identity_model.push(model_id);
                }
                h.series.push(BucketSeries {
                    item,
                    rank,
                    label_set,
                    le,
                    group,
                    identity,
                    cursor: 0,
                });
            }
            h.label_sets = sets.len();
        }
        for h in &mut histograms {
            h.series.sort_by_key(|s| s.rank);
        }
        let mut engine_slots: Vec<(MetricId, Vec<(f64, Signal)>)> = Vec::new();
        let mut model_slots = Vec::new();
        for def in &SIGNALS {
            let Derivation::Quantile(histogram, q) = def.derivation else {
                continue;
            };
            let Ok(q) = q.parse::<f64>() else {
                continue;
            };
            model_slots.push((histogram, q, def.id));
            match engine_slots.iter_mut().find(|(h, _)| *h == histogram) {
                Some((_, slots)) => slots.push((q, def.id)),
                None => engine_slots.push((histogram, vec![(q, def.id)])),
            }
        }
        PastQuantiles {
            histograms,
            group_items,
            identity_model,
            models,
            engine_slots,
            model_slots,
        }
    }

    /// The quantiles at `at`, per engine report and per model, set in `merge`.
    pub fn step(&mut self, at: Ts, merge: &mut CycleMerge<'_>) {
        let wanted = super::replay::millis(at);
        let groups = self.group_items.len();
        let identities = self.identity_model.len();
        let models = self.models.len();
        let sums: Vec<Option<StepSums>> = self
            .histograms
            .iter_mut()
            .map(|h| {
                h.complete
                    .then(|| h.step_sums(wanted, groups, identities, models, &self.identity_model))
            })
            .collect();
        let of = |metric: MetricId| {
            self.histograms
                .iter()
                .position(|h| h.metric == metric)
                .and_then(|i| Some((self.histograms.get(i)?, sums.get(i)?.as_ref()?)))
        };
        let mut buckets: Vec<Bucket> = Vec::new();
        for (metric, slots) in &self.engine_slots {
            let Some(own) = of(*metric) else {
                continue;
            };
            let stand_in = quantile_stand_in(*metric).and_then(of);
            for (group, item) in self.group_items.iter().enumerate() {
                let source = if own.1.group_present.get(group) == Some(&true) {
                    own
                } else {
                    match stand_in {
                        Some(s) if s.1.group_present.get(group) == Some(&true) => s,
                        _ => continue,
                    }
                };
                source.0.buckets(
                    &source.1.group_sum,
                    &source.1.group_seen,
                    group,
                    &mut buckets,
                );
                for (q, slot) in slots {
                    if let Some(value) = histogram_quantile(*q, &buckets) {
                        merge.set_engine_value(item, *slot, value);
                    }
                }
            }
        }
        for (metric, q, slot) in &self.model_slots {
            let Some(own) = of(*metric) else {
                continue;
            };
            let stand_in = quantile_stand_in(*metric).and_then(of);
            for (model, name) in self.models.iter().enumerate() {
                let source = if own.1.model_present.get(model) == Some(&true) {
                    own
                } else {
                    match stand_in {
                        Some(s) if s.1.model_present.get(model) == Some(&true) => s,
                        _ => continue,
                    }
                };
                source.0.buckets(
                    &source.1.model_sum,
                    &source.1.model_seen,
                    model,
                    &mut buckets,
                );
                if let Some(value) = histogram_quantile(*q, &buckets) {
                    merge.set_model_value(name, *slot, value);
                }
            }
        }
    }
}

impl Histogram<'_, '_> {
    /// The sums of the series with a point at `wanted` (milliseconds), after `or`.
    fn step_sums(
        &mut self,
        wanted: i64,
        groups: usize,
        identities: usize,
        models: usize,
        identity_model: &[usize],
    ) -> StepSums {
        let bounds = self.bounds.len();
        let mut taken = vec![false; self.label_sets];
        let mut sums = StepSums {
            group_sum: vec![0.0; groups * bounds],
            group_seen: vec![false; groups * bounds],
            group_present: vec![false; groups],
            model_sum: vec![0.0; models * bounds],
            model_seen: vec![false; models * bounds],
            model_present: vec![false; models],
        };
        // Prometheus' running mean of `avg`, and how many series it has seen.
        let mut mean = vec![0.0_f64; identities * bounds];
        let mut count = vec![0_u32; identities * bounds];
        for series in &mut self.series {
            let item = series.item;
            while item
                .point_time(series.cursor)
                .is_some_and(|t| super::replay::millis(t) < wanted)
            {
                series.cursor += 1;
            }
            if item
                .point_time(series.cursor)
                .is_none_or(|t| super::replay::millis(t) != wanted)
            {
                continue;
            }
            let value = item.point_value(series.cursor).unwrap_or(f64::NAN);
            series.cursor += 1;
            // `a or b`: a set of labels a higher ranked name has at this step hides b's.
            match taken.get_mut(series.label_set) {
                Some(taken) if !*taken => *taken = true,
                _ => continue,
            }
            let at = series.group * bounds + series.le;
            if let (Some(sum), Some(seen)) =
                (sums.group_sum.get_mut(at), sums.group_seen.get_mut(at))
            {
                *sum += value;
                *seen = true;
            }
            if let Some(present) = sums.group_present.get_mut(series.group) {
                *present = true;
            }
            let at = series.identity * bounds + series.le;
            if let (Some(m), Some(n)) = (mean.get_mut(at), count.get_mut(at)) {
                *n += 1;
                let n = f64::from(*n);
                *m += value / n - *m / n;
            }
        }
        // `sum by (le, model)` of the engines' means, engine by engine.
        for (identity, model) in identity_model.iter().enumerate() {
            for le in 0..bounds {
                let at = identity * bounds + le;
                if count.get(at).is_none_or(|n| *n == 0) {
                    continue;
                }
                let value = mean.get(at).copied().unwrap_or(f64::NAN);
                let to = model * bounds + le;
                if let (Some(sum), Some(seen)) =
                    (sums.model_sum.get_mut(to), sums.model_seen.get_mut(to))
                {
                    *sum += value;
                    *seen = true;
                }
                if let Some(present) = sums.model_present.get_mut(*model) {
                    *present = true;
                }
            }
        }
        sums
    }

    /// The buckets of row `row` of `sum` (rows of one bound per `le`), those with a bound.
    fn buckets(&self, sum: &[f64], seen: &[bool], row: usize, out: &mut Vec<Bucket>) {
        out.clear();
        let bounds = self.bounds.len();
        for (le, bound) in self.bounds.iter().enumerate() {
            let at = row * bounds + le;
            if let (Some(le), Some(true), Some(count)) = (bound, seen.get(at), sum.get(at)) {
                out.push(Bucket {
                    le: *le,
                    count: *count,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests;
