//! How several series of one signal combine into one reading.
//!
//! One engine normally exports each signal as exactly one series. Two exceptions are handled:
//! - an exact duplicate (the same label text repeated in one payload) is one series read twice:
//!   the last reading wins, so it is never counted twice;
//! - series that differ in extra labels beyond `model_name`/`engine` (for example `pid` when
//!   vLLM runs several API server processes) are parts of the same engine: gauges take the
//!   maximum (the worst part is what an operator must see; for KV usage every part reports the
//!   same pool, so the max is also the correct value), counters and histogram buckets are summed
//!   (each process counts its own events).
//!
//! A series is identified by its raw label text, which is canonical for one exporter (labels
//! written in a fixed order, escaping unambiguous). NaN readings mean "no observation" and are
//! dropped, so a signal with only NaN readings stays unknown.

use std::collections::HashMap;

use crate::engine::Histogram;
use crate::metrics::Bucket;

/// Identity of one series: its raw label text, split around a label that is not part of the
/// identity (`le` for buckets) so no allocation is needed. For other samples the second half is
/// empty.
pub(super) type SeriesKey<'a> = (&'a str, &'a str);

/// The readings of one signal of one engine, one per distinct series.
#[derive(Debug, Default)]
pub(super) struct SeriesSet<'a> {
    first: Option<(SeriesKey<'a>, f64)>,
    more: Vec<(SeriesKey<'a>, f64)>,
    /// Position in `more` per series, built once `more` outgrows a short scan: one engine with
    /// many processes is a handful of series, a hostile payload can be 100,000.
    /// Boxed: an engine holds dozens of sets, nearly all of them with no index, and a boxed
    /// map is one pointer where an empty map is six words.
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<SeriesKey<'a>, usize>>>,
}

/// Up to this many extra series a linear scan beats hashing.
pub(super) const SCAN_LIMIT: usize = 8;

impl<'a> SeriesSet<'a> {
    /// Record a reading; a repeated series replaces its earlier reading.
    pub(super) fn record(&mut self, key: SeriesKey<'a>, value: f64) {
        if value.is_nan() {
            return;
        }
        match &mut self.first {
            None => self.first = Some((key, value)),
            Some((first_key, first_value)) if *first_key == key => *first_value = value,
            Some(_) => self.record_more(key, value),
        }
    }

    fn record_more(&mut self, key: SeriesKey<'a>, value: f64) {
        let found = match &self.index {
            None => self.more.iter().position(|(k, _)| *k == key),
            Some(index) => index.get(&key).copied(),
        };
        if let Some(slot) = found.and_then(|i| self.more.get_mut(i)) {
            slot.1 = value;
            return;
        }
        self.more.push((key, value));
        match &mut self.index {
            Some(index) => {
                index.insert(key, self.more.len() - 1);
            }
            None if self.more.len() > SCAN_LIMIT => {
                let index = self.more.iter().enumerate().map(|(i, (k, _))| (*k, i));
                self.index = Some(Box::new(index.collect()));
            }
            None => {}
        }
    }

    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.first
            .iter()
            .chain(self.more.iter())
            .map(|(_, value)| *value)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Gauge semantics: the largest reading.
    pub(super) fn max(&self) -> Option<f64> {
        self.values().reduce(f64::max)
    }

    /// Counter semantics: the sum over distinct series.
    pub(super) fn sum(&self) -> Option<f64> {
        self.values().reduce(|a, b| a + b)
    }
}

/// Room made for a histogram's buckets at its first one: vLLM's latency histograms have up to 23,
/// which then fit in one allocation where growing by doubling took four.
const BUCKETS_HINT: usize = 24;

/// The `_bucket`, `_sum` and `_count` series of one histogram of one engine.
#[derive(Debug, Default)]
pub(super) struct HistogramParts<'a> {
    buckets: Vec<(SeriesKey<'a>, f64, f64)>,
    sum: SeriesSet<'a>,
    count: SeriesSet<'a>,
}

impl<'a> HistogramParts<'a> {
    /// One `_bucket` sample: `le` already parsed as a number.
    pub(super) fn record_bucket(&mut self, key: SeriesKey<'a>, le: f64, count: f64) {
        if !le.is_nan() && !count.is_nan() {
            if self.buckets.capacity() == 0 {
                self.buckets.reserve(BUCKETS_HINT);
            }
            // `+ 0.0` folds -0 into 0 so both spellings land in one bucket.
            self.buckets.push((key, le + 0.0, count));
        }
    }

    pub(super) fn record_sum(&mut self, key: SeriesKey<'a>, value: f64) {
        self.sum.record(key, value);
    }

    pub(super) fn record_count(&mut self, key: SeriesKey<'a>, value: f64) {
        self.count.record(key, value);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.buckets.is_empty() && self.sum.is_empty() && self.count.is_empty()
    }

    /// Buckets sorted by `le` (compared as numbers, so "120.0" and "120" are one bucket);
    /// within one bound a repeated series counts once (its last reading) and distinct series
    /// are summed. `None` when the histogram was not exported at all.
    pub(super) fn finish(mut self) -> Option<Histogram> {
        if self.is_empty() {
            return None;
        }
        // Stable: readings of one bound keep their payload order, so "last" is well defined.
        self.buckets.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut buckets: Vec<Bucket> = Vec::with_capacity(self.buckets.len());
        // Per bound, the position of each series' last reading (reused across bounds).
        let mut last: HashMap<SeriesKey<'a>, usize> = HashMap::new();
        let mut rest = self.buckets.as_slice();
        while let Some(&(_, le, _)) = rest.first() {
            let group_len = rest.iter().take_while(|(_, l, _)| *l == le).count();
            let (group, tail) = rest.split_at(group_len);
            let count = if let [(_, _, only)] = group {
                *only
            } else {
                last.clear();
                for (i, (key, _, _)) in group.iter().enumerate() {
                    last.insert(*key, i);
                }
                // Summed in payload order, as the readings came.
                group
                    .iter()
                    .enumerate()
                    .filter(|(i, (key, _, _))| last.get(key) == Some(i))
                    .map(|(_, (_, _, count))| *count)
                    .sum()
            };
            buckets.push(Bucket { le, count });
            rest = tail;
        }
        Some(Histogram {
            buckets,
            sum: self.sum.sum(),
            count: self.count.sum(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: SeriesKey<'static> = ("pid=\"1\"", "");
    const B: SeriesKey<'static> = ("pid=\"2\"", "");

    #[test]
    fn gauges_take_the_max_and_counters_the_sum_over_distinct_series() {
        let mut set = SeriesSet::default();
        assert_eq!(set.max(), None);
        assert_eq!(set.sum(), None);
        set.record(A, 0.25);
        set.record(B, 0.75);
        assert_eq!(set.max(), Some(0.75));
        assert_eq!(set.sum(), Some(1.0));
    }

    #[test]
    fn an_exact_duplicate_counts_once_and_the_last_reading_wins() {
        let mut set = SeriesSet::default();
        set.record(A, 10.0);
        set.record(B, 5.0);
        set.record(A, 12.0);
        set.record(B, 6.0);
        assert_eq!(set.sum(), Some(18.0));
        assert_eq!(set.max(), Some(12.0));
    }

    #[test]
    fn nan_readings_are_not_observations() {
        let mut set = SeriesSet::default();
        set.record(A, f64::NAN);
        assert!(set.is_empty());
        assert_eq!(set.max(), None);
        set.record(B, 3.0);
        set.record(A, f64::NAN);
        assert_eq!(set.sum(), Some(3.0));
    }

    #[test]
    fn buckets_are_sorted_merged_by_numeric_bound_and_deduplicated() {
        let mut parts = HistogramParts::default();
        assert!(parts.is_empty());
        parts.record_bucket(A, f64::INFINITY, 9.0);
        parts.record_bucket(A, 120.0, 7.0);
        parts.record_bucket(A, 0.5, 2.0);
        // Same series, same bound written again: replaces the earlier reading.
        parts.record_bucket(A, 120.0, 8.0);
        // Another process: added.
        parts.record_bucket(B, 120.0, 1.0);
        parts.record_bucket(B, f64::INFINITY, 1.0);
        parts.record_bucket(A, -0.0, 0.0);
        parts.record_bucket(B, 0.0, 0.0);
        parts.record_count(A, 9.0);
        parts.record_count(B, 1.0);
        let hist = parts.finish().expect("histogram");
        assert_eq!(
            hist.buckets,
            vec![
                Bucket {
                    le: 0.0,
                    count: 0.0
                },
                Bucket {
                    le: 0.5,
                    count: 2.0
                },
                Bucket {
                    le: 120.0,
                    count: 9.0
                },
                Bucket {
                    le: f64::INFINITY,
                    count: 10.0
                },
            ]
        );
        assert_eq!(hist.count, Some(10.0));
        assert_eq!(hist.sum, None);
    }

    #[test]
    fn many_series_keep_their_last_reading_past_the_short_scan() {
        let keys: Vec<String> = (0..100).map(|pid| format!("pid=\"{pid}\"")).collect();
        let mut set = SeriesSet::default();
        for (i, key) in keys.iter().enumerate() {
            set.record((key, ""), i as f64);
        }
        // Every series again: replaced, not added.
        for key in &keys {
            set.record((key, ""), 1.0);
        }
        assert_eq!(set.sum(), Some(100.0));
        let mut parts = HistogramParts::default();
        for key in keys.iter().chain(&keys) {
            parts.record_bucket((key, ""), 1.0, 2.0);
        }
        let hist = parts.finish().expect("histogram");
        assert_eq!(
            hist.buckets,
            vec![Bucket {
                le: 1.0,
                count: 200.0
            }]
        );
    }

    #[test]
    fn a_histogram_with_only_a_sum_is_still_exported() {
        let mut parts = HistogramParts::default();
        parts.record_sum(A, 1.5);
        let hist = parts.finish().expect("histogram");
        assert!(hist.buckets.is_empty());
        assert_eq!(hist.sum, Some(1.5));
        assert_eq!(HistogramParts::default().finish(), None);
    }
}
