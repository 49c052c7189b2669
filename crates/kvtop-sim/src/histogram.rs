//! PURE. A fixed-bucket histogram that records observations the way a Prometheus client does,
//! with weighted observations so the model can record many equal events in one call.

use std::borrow::Cow;

/// Observations bucketed by upper bounds (`le`), plus their sum. Bucket counts are stored per
/// bucket and made cumulative when read.
#[derive(Debug, Clone, PartialEq)]
pub struct SimHistogram {
    bounds: Cow<'static, [f64]>,
    /// One count per bound, plus the `+Inf` overflow bucket last.
    counts: Vec<u64>,
    sum: f64,
}

impl SimHistogram {
    /// An empty histogram with the given strictly increasing finite upper bounds.
    pub fn new(bounds: impl Into<Cow<'static, [f64]>>) -> Self {
        let bounds = bounds.into();
        let counts = vec![0; bounds.len() + 1];
        Self {
            bounds,
            counts,
            sum: 0.0,
        }
    }

    /// Record one observation.
    pub fn observe(&mut self, value: f64) {
        self.observe_n(value, 1);
    }

    /// Record `n` observations of the same value. Non-finite values are ignored.
    pub(crate) fn observe_n(&mut self, value: f64, n: u64) {
        if n == 0 || !value.is_finite() {
            return;
        }
        // First bucket whose bound is >= value (Prometheus buckets are `le`, inclusive).
        let idx = self.bounds.partition_point(|b| *b < value);
        if let Some(c) = self.counts.get_mut(idx) {
            *c += n;
        }
        self.sum += value * n as f64;
    }

    /// The finite upper bounds.
    pub fn bounds(&self) -> &[f64] {
        &self.bounds
    }

    /// Total number of observations (the `_count`, equal to the `+Inf` bucket).
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Sum of the observed values (the `_sum`).
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Cumulative counts, one per finite bound followed by the `+Inf` bucket.
    pub fn cumulative(&self) -> impl Iterator<Item = u64> + '_ {
        self.counts.iter().scan(0u64, |acc, c| {
            *acc += c;
            Some(*acc)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: &[f64] = &[0.1, 1.0, 10.0];

    #[test]
    fn observations_land_in_le_buckets_and_accumulate() {
        let mut h = SimHistogram::new(BOUNDS);
        h.observe(0.1); // exactly on a bound: le="0.1"
        h.observe(0.5);
        h.observe_n(5.0, 3);
        h.observe(100.0); // overflow
        assert_eq!(h.cumulative().collect::<Vec<_>>(), vec![1, 2, 5, 6]);
        assert_eq!(h.count(), 6);
        assert!((h.sum() - (0.1 + 0.5 + 15.0 + 100.0)).abs() < 1e-9);
    }

    #[test]
    fn non_finite_and_zero_weight_observations_are_ignored() {
        let mut h = SimHistogram::new(BOUNDS);
        h.observe(f64::NAN);
        h.observe(f64::INFINITY);
        h.observe_n(1.0, 0);
        assert_eq!(h.count(), 0);
        assert_eq!(h.sum(), 0.0);
    }
}
