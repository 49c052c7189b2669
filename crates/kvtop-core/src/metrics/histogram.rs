//! Histogram math: Prometheus' `histogram_quantile` interpolation over cumulative buckets.

/// One cumulative bucket: upper bound `le` (may be +Inf) and the cumulative count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub le: f64,
    pub count: f64,
}

/// Relative difference between neighbouring bucket counts that is treated as a floating point
/// artefact and flattened (Prometheus uses the same tolerance).
const PRECISION_TOLERANCE: f64 = 1e-12;

/// Prometheus' `histogram_quantile`: `q` in 0..=1 over cumulative buckets (any order; `le`
/// compared as numbers). `None` when there are no observations or no `+Inf` bucket.
///
/// Follows Prometheus' classic-histogram `bucketQuantile`:
/// - `q < 0` gives `-Inf`, `q > 1` gives `+Inf`, a `NaN` `q` gives `None`;
/// - buckets are sorted by `le` and the highest must be `+Inf`, else `None`;
/// - buckets with the same `le` are merged (counts summed);
/// - counts that differ from their lower neighbour by a relative 1e-12 or less are flattened,
///   then any count lower than a lower bucket's is raised to it (monotonic repair);
/// - fewer than two buckets, or zero observations in the `+Inf` bucket, give `None`;
/// - the quantile is interpolated linearly inside the bucket holding rank `q × total`, with a
///   lower bound of 0 for the first bucket (whose `le` is returned as is when it is ≤ 0);
///   a rank in the `+Inf` bucket returns the highest finite bound;
/// - `q = 0` looks for rank 0 in the first bucket holding observations, so it gives that
///   bucket's lower bound (Prometheus gives `NaN` when the lowest bucket is empty).
///
/// Where Prometheus has no defined behaviour (a `NaN` bound or count, an empty slice) this
/// returns `None` rather than an arbitrary number.
///
/// ```
/// use kvtop_core::metrics::{Bucket, histogram_quantile};
/// // 10 observations ≤ 0.1 s, 10 more ≤ 0.5 s: the median is the top of the first bucket and
/// // the 75th percentile lies halfway into the second (0.1 + 0.4 × 5/10).
/// let buckets = [
///     Bucket { le: 0.1, count: 10.0 },
///     Bucket { le: 0.5, count: 20.0 },
///     Bucket { le: f64::INFINITY, count: 20.0 },
/// ];
/// assert_eq!(histogram_quantile(0.5, &buckets), Some(0.1));
/// assert!((histogram_quantile(0.75, &buckets).unwrap() - 0.3).abs() < 1e-12);
/// ```
pub fn histogram_quantile(q: f64, buckets: &[Bucket]) -> Option<f64> {
    let mut prepared = Vec::new();
    let [quantile] = histogram_quantiles([q], buckets, &mut prepared);
    quantile
}

/// [`histogram_quantile`] for several quantiles of the same buckets: the buckets are sorted,
/// merged and repaired once (in `scratch`, a buffer reused from call to call), not once per
/// quantile. Each result is exactly what [`histogram_quantile`] gives for that `q`.
pub fn histogram_quantiles<const N: usize>(
    qs: [f64; N],
    buckets: &[Bucket],
    scratch: &mut Vec<Bucket>,
) -> [Option<f64>; N] {
    let prepared = prepare(buckets, scratch);
    qs.map(|q| {
        if q.is_nan() {
            None
        } else if q < 0.0 {
            Some(f64::NEG_INFINITY)
        } else if q > 1.0 {
            Some(f64::INFINITY)
        } else {
            quantile_of_prepared(q, prepared?)
        }
    })
}

/// The buckets in `scratch` sorted by `le`, merged and repaired, with their total count;
/// `None` when no quantile can be taken from them (a `NaN` bound or count, no `+Inf` bucket,
/// fewer than two bounds, nothing observed).
fn prepare<'a>(buckets: &[Bucket], scratch: &'a mut Vec<Bucket>) -> Option<(&'a [Bucket], f64)> {
    if buckets.iter().any(|b| b.le.is_nan() || b.count.is_nan()) {
        return None;
    }
    scratch.clear();
    scratch.extend_from_slice(buckets);
    // Exposition order is already ascending: the (stable) sort is then one pass.
    if !scratch.is_sorted_by(|a, b| a.le.total_cmp(&b.le).is_le()) {
        scratch.sort_by(|a, b| a.le.total_cmp(&b.le));
    }
    if scratch.last()?.le != f64::INFINITY {
        return None;
    }
    coalesce(scratch);
    correct_precision_errors(scratch);
    ensure_monotonic(scratch);
    if scratch.len() < 2 {
        return None;
    }
    let total = scratch.last()?.count;
    if total == 0.0 {
        return None;
    }
    Some((scratch.as_slice(), total))
}

/// The `q` quantile (0 ≤ q ≤ 1) of buckets [`prepare`]d, with their total.
fn quantile_of_prepared(q: f64, (sorted, total): (&[Bucket], f64)) -> Option<f64> {
    let rank = q * total;
    let inf_index = sorted.len().checked_sub(1)?;
    // `count > 0` matters only for rank 0 (q = 0): the lowest observation is in the first
    // bucket that holds any, not in an empty one (Prometheus divides 0 by 0 there: NaN).
    let found = sorted
        .get(..inf_index)?
        .iter()
        .position(|b| b.count >= rank && b.count > 0.0)
        .unwrap_or(inf_index);

    if found == inf_index {
        return Some(sorted.get(inf_index.checked_sub(1)?)?.le);
    }
    let bucket = *sorted.get(found)?;
    if found == 0 {
        if bucket.le <= 0.0 {
            return Some(bucket.le);
        }
        return Some(bucket.le * (rank / bucket.count));
    }
    let below = *sorted.get(found - 1)?;
    let in_bucket = bucket.count - below.count;
    Some(below.le + (bucket.le - below.le) * ((rank - below.count) / in_bucket))
}

/// The `q` quantile of several histograms merged, as Prometheus'
/// `histogram_quantile(q, sum by (le) (rate(…)))`: the bucket counts of every part (each
/// part the count increases of one engine over the window) are summed bound by bound, then
/// the quantile is taken. Parts with other bounds add to the bounds they have, as `sum by
/// (le)` does. `None` when no part has a bucket or nothing was observed.
pub fn merged_quantile(q: f64, parts: &[&[Bucket]]) -> Option<f64> {
    let mut merged: Vec<Bucket> = Vec::new();
    for part in parts {
        merge_into(&mut merged, part);
    }
    histogram_quantile(q, &merged)
}

/// Add one part's buckets to `merged` bound by bound, as [`merged_quantile`] sums its parts
/// (in the order the parts are added): a bound `merged` lacks is appended.
pub fn merge_into(merged: &mut Vec<Bucket>, part: &[Bucket]) {
    for bucket in part {
        match merged.iter_mut().find(|b| b.le == bucket.le) {
            Some(into) => into.count += bucket.count,
            None => merged.push(*bucket),
        }
    }
}

/// Merge neighbours with the same bound (input sorted by `le`).
fn coalesce(buckets: &mut Vec<Bucket>) {
    buckets.dedup_by(|next, kept| {
        if next.le == kept.le {
            kept.count += next.count;
            true
        } else {
            false
        }
    });
}

/// Flatten tiny relative differences between neighbouring counts (float noise from summing rates).
fn correct_precision_errors(buckets: &mut [Bucket]) {
    let Some(first) = buckets.first() else {
        return;
    };
    let mut prev = first.count;
    for bucket in buckets.iter_mut().skip(1) {
        let delta = (bucket.count - prev).abs();
        if delta == 0.0 {
            continue;
        }
        if delta / bucket.count <= PRECISION_TOLERANCE {
            bucket.count = prev;
        } else {
            prev = bucket.count;
        }
    }
}

/// Raise every count that is lower than a lower bucket's count to that count.
fn ensure_monotonic(buckets: &mut [Bucket]) {
    let mut max = f64::NEG_INFINITY;
    for bucket in buckets.iter_mut() {
        if bucket.count > max {
            max = bucket.count;
        } else {
            bucket.count = max;
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn merged_quantile_sums_the_engines_buckets_before_the_quantile() {
        let b = |le: f64, count: f64| Bucket { le, count };
        // Engine A: 8 requests ≤ 0.1 s, 2 more ≤ 1 s. Engine B: 10 requests ≤ 1 s, none faster.
        let a = [b(0.1, 8.0), b(1.0, 10.0), b(f64::INFINITY, 10.0)];
        let c = [b(0.1, 0.0), b(1.0, 10.0), b(f64::INFINITY, 10.0)];
        // Merged: 8 ≤ 0.1 s, 20 ≤ 1 s. Rank 0.95 × 20 = 19 is in the (0.1, 1] bucket, 11 of
        // its 12 observations in: 0.1 + 0.9 × 11/12 = 0.925 s. (The mean of the engines' own
        // p95s, 0.775 s and 0.955 s, would be 0.865 s.)
        let p95 = merged_quantile(0.95, &[&a, &c]).unwrap_or(f64::NAN);
        assert!((p95 - 0.925).abs() < 1e-12, "{p95}");
        assert_eq!(merged_quantile(0.95, &[]), None);
        let empty = [b(0.1, 0.0), b(f64::INFINITY, 0.0)];
        assert_eq!(merged_quantile(0.95, &[&empty, &empty]), None);
        // One engine alone is its own quantile.
        assert_eq!(merged_quantile(0.5, &[&a]), histogram_quantile(0.5, &a));
    }

    use super::*;

    fn b(le: f64, count: f64) -> Bucket {
        Bucket { le, count }
    }

    const INF: f64 = f64::INFINITY;

    fn close(actual: Option<f64>, expected: f64) {
        let a = actual.unwrap_or_else(|| panic!("expected {expected}, got None"));
        assert!((a - expected).abs() < 1e-9, "expected {expected}, got {a}");
    }

    /// 100 observations: 10 ≤ 0.1, 40 in (0.1, 0.5], 30 in (0.5, 1], 20 in (1, 5], none above.
    fn sample() -> Vec<Bucket> {
        vec![
            b(0.1, 10.0),
            b(0.5, 50.0),
            b(1.0, 80.0),
            b(5.0, 100.0),
            b(INF, 100.0),
        ]
    }

    #[test]
    fn interpolates_inside_the_bucket() {
        // rank 50 -> bucket (0.1, 0.5], 40 below its top, (50-10)/40 = 1 -> 0.5
        close(histogram_quantile(0.5, &sample()), 0.5);
        // rank 90 -> (1, 5], 10 of 20 -> 1 + 4 * 0.5 = 3
        close(histogram_quantile(0.9, &sample()), 3.0);
        // rank 95 -> 1 + 4 * 15/20 = 4
        close(histogram_quantile(0.95, &sample()), 4.0);
        // rank 30 -> 0.1 + 0.4 * 20/40 = 0.3
        close(histogram_quantile(0.3, &sample()), 0.3);
    }

    #[test]
    fn first_bucket_interpolates_from_zero() {
        // rank 5 of 100 -> 0 + 0.1 * 5/10 = 0.05
        close(histogram_quantile(0.05, &sample()), 0.05);
    }

    #[test]
    fn first_bucket_with_nonpositive_bound_returns_the_bound() {
        let buckets = [b(-1.0, 10.0), b(0.0, 20.0), b(INF, 20.0)];
        close(histogram_quantile(0.2, &buckets), -1.0);
        // rank 15 -> (-1, 0]: -1 + 1 * 5/10 = -0.5
        close(histogram_quantile(0.75, &buckets), -0.5);
    }

    #[test]
    fn rank_in_the_inf_bucket_returns_the_highest_finite_bound() {
        let buckets = [b(1.0, 5.0), b(2.0, 8.0), b(INF, 10.0)];
        // rank 9.9 > 8 -> +Inf bucket -> 2
        close(histogram_quantile(0.99, &buckets), 2.0);
    }

    #[test]
    fn q_zero_and_one() {
        // rank 0: first bucket with count >= 0 is the first -> 0.1 * 0/10 = 0
        close(histogram_quantile(0.0, &sample()), 0.0);
        // rank 100: first bucket with count >= 100 is le=5 -> 1 + 4 * 20/20 = 5
        close(histogram_quantile(1.0, &sample()), 5.0);
    }

    #[test]
    fn q_zero_with_empty_lowest_buckets_is_the_first_observed_bound() {
        // Found by fuzzing: rank 0 landed in the empty first bucket, 0.001 * 0/0 = NaN.
        // 12 observations in (0.001, 0.5]: the lowest lies above 0.001.
        let buckets = [b(0.001, 0.0), b(0.5, 12.0), b(INF, 20.0)];
        close(histogram_quantile(0.0, &buckets), 0.001);
        // Two empty buckets first: (0.1, 0.2] holds the lowest observation.
        let buckets = [b(0.05, 0.0), b(0.1, 0.0), b(0.2, 4.0), b(INF, 4.0)];
        close(histogram_quantile(0.0, &buckets), 0.1);
        // Every observation above the highest finite bound: that bound, as for any q.
        let buckets = [b(1.0, 0.0), b(2.0, 0.0), b(INF, 5.0)];
        close(histogram_quantile(0.0, &buckets), 2.0);
        // Unchanged for q > 0: rank 6 of 12 in (0.001, 0.5] -> 0.001 + 0.499 * 6/12.
        let buckets = [b(0.001, 0.0), b(0.5, 12.0), b(INF, 12.0)];
        close(histogram_quantile(0.5, &buckets), 0.2505);
    }

    #[test]
    fn out_of_range_and_nan_q() {
        assert_eq!(histogram_quantile(-0.5, &sample()), Some(f64::NEG_INFINITY));
        assert_eq!(histogram_quantile(1.5, &sample()), Some(f64::INFINITY));
        assert_eq!(histogram_quantile(f64::NAN, &sample()), None);
    }

    #[test]
    fn order_of_buckets_does_not_matter() {
        let mut shuffled = sample();
        shuffled.reverse();
        shuffled.swap(1, 3);
        close(histogram_quantile(0.9, &shuffled), 3.0);
    }

    #[test]
    fn bounds_written_differently_are_the_same_number() {
        // "120.0" and "120" parse to the same f64; "+Inf" and "Inf" to infinity.
        let from_python: Vec<Bucket> = [("60.0", 4.0), ("120.0", 8.0), ("+Inf", 8.0)]
            .iter()
            .map(|(le, c)| b(le.parse().unwrap_or(f64::NAN), *c))
            .collect();
        let from_go: Vec<Bucket> = [("60", 4.0), ("120", 8.0), ("Inf", 8.0)]
            .iter()
            .map(|(le, c)| b(le.parse().unwrap_or(f64::NAN), *c))
            .collect();
        // rank 6 -> (60, 120]: 60 + 60 * 2/4 = 90
        close(histogram_quantile(0.75, &from_python), 90.0);
        close(histogram_quantile(0.75, &from_go), 90.0);
        let mut merged = from_python.clone();
        merged.extend_from_slice(&from_go);
        // Same bounds twice merge into one histogram with doubled counts: same quantile.
        close(histogram_quantile(0.75, &merged), 90.0);
    }

    #[test]
    fn duplicate_bounds_are_merged_by_summing() {
        // le=1 appears twice (3 + 2 = 5), le=2 holds 10, +Inf 10.
        let buckets = [b(1.0, 3.0), b(2.0, 10.0), b(1.0, 2.0), b(INF, 10.0)];
        // rank 5 -> first bucket (merged count 5): 1 * 5/5 = 1
        close(histogram_quantile(0.5, &buckets), 1.0);
        // rank 7.5 -> (1, 2]: 1 + 1 * 2.5/5 = 1.5
        close(histogram_quantile(0.75, &buckets), 1.5);
    }

    #[test]
    fn missing_inf_bucket_is_none() {
        let buckets = [b(1.0, 5.0), b(2.0, 10.0)];
        assert_eq!(histogram_quantile(0.5, &buckets), None);
    }

    #[test]
    fn fewer_than_two_buckets_is_none() {
        assert_eq!(histogram_quantile(0.5, &[b(INF, 10.0)]), None);
        // Two +Inf buckets merge into one.
        assert_eq!(histogram_quantile(0.5, &[b(INF, 4.0), b(INF, 6.0)]), None);
    }

    #[test]
    fn empty_histogram_is_none() {
        assert_eq!(histogram_quantile(0.5, &[]), None);
        let no_observations = [b(0.1, 0.0), b(1.0, 0.0), b(INF, 0.0)];
        assert_eq!(histogram_quantile(0.5, &no_observations), None);
    }

    #[test]
    fn nan_bound_or_count_is_none() {
        assert_eq!(
            histogram_quantile(0.5, &[b(f64::NAN, 1.0), b(INF, 2.0)]),
            None
        );
        assert_eq!(
            histogram_quantile(0.5, &[b(1.0, f64::NAN), b(INF, 2.0)]),
            None
        );
    }

    #[test]
    fn non_monotonic_counts_are_repaired() {
        // le=2 reports 3 though le=1 holds 6: raised to 6. Cumulative: 6, 6, 10, 10.
        let buckets = [b(1.0, 6.0), b(2.0, 3.0), b(4.0, 10.0), b(INF, 10.0)];
        // rank 8 -> (2, 4]: 2 + 2 * 2/4 = 3 (without repair the search would land elsewhere)
        close(histogram_quantile(0.8, &buckets), 3.0);
        // rank 6 -> first bucket with count >= 6 is le=1: 1 * 6/6 = 1
        close(histogram_quantile(0.6, &buckets), 1.0);
    }

    #[test]
    fn inf_bucket_lower_than_finite_buckets_is_repaired() {
        // +Inf says 4 though le=2 says 8: total becomes 8. rank 4 -> (1, 2] holding 6 with 2
        // below: 1 + 1 * 2/6 = 4/3. (With total 4, rank 2 would stop at le=1 and give 1.)
        let buckets = [b(1.0, 2.0), b(2.0, 8.0), b(INF, 4.0)];
        close(histogram_quantile(0.5, &buckets), 4.0 / 3.0);
    }

    #[test]
    fn tiny_relative_differences_are_flattened() {
        // 10 and 10 * (1 + 1e-14) are the same count: the le=2 bucket then holds nothing and
        // rank 10 lands in the first bucket: 1 * 10/10 = 1. Taken literally, rank 10.0000000000001
        // would land in (1, 2] and give 2.
        let above = 10.0 * (1.0 + 1e-14);
        let buckets = [b(1.0, 10.0), b(2.0, above), b(INF, above)];
        close(histogram_quantile(1.0, &buckets), 1.0);
    }

    #[test]
    fn several_quantiles_at_once_are_each_the_single_quantile() {
        let nan = f64::NAN;
        let cases: Vec<Vec<Bucket>> = vec![
            sample(),
            // Unsorted, a repeated bound, a dip to repair, float noise.
            vec![
                b(1.0, 80.0),
                b(INF, 100.0),
                b(0.1, 10.0),
                b(0.5, 50.0),
                b(0.5, 3.0),
                b(5.0, 99.0),
            ],
            vec![b(0.0, 5.0), b(1.0, 5.0 * (1.0 + 1e-14)), b(INF, 9.0)],
            vec![b(-1.0, 2.0), b(INF, 4.0)],
            // Nothing a quantile can be taken from.
            vec![],
            vec![b(INF, 3.0)],
            vec![b(1.0, 3.0), b(2.0, 4.0)],
            vec![b(1.0, 0.0), b(INF, 0.0)],
            vec![b(1.0, nan), b(INF, 4.0)],
            vec![b(nan, 1.0), b(INF, 4.0)],
        ];
        let qs = [0.0, 0.25, 0.5, 0.95, 0.99, 1.0, -0.5, 1.5, nan];
        let mut scratch = vec![b(7.0, 7.0)];
        for buckets in &cases {
            let together = histogram_quantiles(qs, buckets, &mut scratch);
            for (q, got) in qs.iter().zip(together) {
                let alone = histogram_quantile(*q, buckets);
                assert_eq!(
                    got.map(f64::to_bits),
                    alone.map(f64::to_bits),
                    "q {q} of {buckets:?}"
                );
            }
        }
    }

    #[test]
    fn merging_part_by_part_is_merging_them_all() {
        let a = [b(0.1, 8.0), b(1.0, 10.0), b(INF, 10.0)];
        let c = [b(0.1, 0.5), b(0.5, 2.0), b(1.0, 10.0), b(INF, 11.0)];
        let mut merged = Vec::new();
        merge_into(&mut merged, &a);
        merge_into(&mut merged, &c);
        for q in [0.5, 0.95, 0.99] {
            assert_eq!(
                histogram_quantile(q, &merged).map(f64::to_bits),
                merged_quantile(q, &[&a, &c]).map(f64::to_bits)
            );
        }
    }
}
