//! Histogram math: Prometheus' `histogram_quantile` interpolation over cumulative buckets.

/// One cumulative bucket: upper bound `le` (may be +Inf) and the cumulative count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub le: f64,
    pub count: f64,
}

/// Prometheus' `histogram_quantile`: `q` in 0..=1 over cumulative buckets (any order; `le`
/// compared as numbers). `None` when there are no observations or no `+Inf` bucket.
pub fn histogram_quantile(q: f64, buckets: &[Bucket]) -> Option<f64> {
    let _ = (q, buckets);
    todo!("histogram_quantile")
}
