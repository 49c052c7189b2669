//! Tiered per-engine history of derived signals: full resolution for the recent past,
//! downsampled (averaged) buckets beyond it, so memory per engine is bounded.
//!
//! Layout: two fixed-size rings of points, each point a timestamp plus one `f32` per [`Series`]
//! (stored column by column, `NaN` = unknown).
//! - The *full* tier keeps every pushed point for `history_full_secs` (its capacity is that span
//!   divided by the scrape interval, plus one, so faster pushes than the interval shorten the
//!   span instead of growing memory).
//! - A point leaving the full tier is folded into the *pending* coarse bucket: buckets are
//!   aligned to multiples of `history_coarse_step` seconds and stamped with their start; a
//!   bucket's value per series is the mean of the known values folded into it, unknown if none.
//!   When a point of a later bucket arrives, the pending bucket is appended to the *coarse* tier.
//! - Coarse points whose bucket starts more than `history_total_secs` before the newest push
//!   are dropped.
//!
//! Points must be pushed in time order: a push older than the newest point is ignored.

use super::{FleetSettings, Signals, Ts};

/// The series kept per engine, one value per scrape (or per downsampled bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Series {
    KvUsage,
    Running,
    Waiting,
    TtftP50,
    TtftP95,
    TtftP99,
    ItlP50,
    ItlP95,
    ItlP99,
    GenTps,
    PromptTps,
    PrefixHit,
    PreemptionsPerS,
    RequestsPerS,
}

impl Series {
    pub const ALL: [Series; 14] = [
        Series::KvUsage,
        Series::Running,
        Series::Waiting,
        Series::TtftP50,
        Series::TtftP95,
        Series::TtftP99,
        Series::ItlP50,
        Series::ItlP95,
        Series::ItlP99,
        Series::GenTps,
        Series::PromptTps,
        Series::PrefixHit,
        Series::PreemptionsPerS,
        Series::RequestsPerS,
    ];
    pub const COUNT: usize = Self::ALL.len();
    pub fn index(self) -> usize {
        self as usize
    }

    /// The field of this series in a set of derived signals.
    fn field(self, signals: &mut Signals) -> &mut Option<f64> {
        match self {
            Series::KvUsage => &mut signals.kv_usage,
            Series::Running => &mut signals.running,
            Series::Waiting => &mut signals.waiting,
            Series::TtftP50 => &mut signals.ttft_p50,
            Series::TtftP95 => &mut signals.ttft_p95,
            Series::TtftP99 => &mut signals.ttft_p99,
            Series::ItlP50 => &mut signals.itl_p50,
            Series::ItlP95 => &mut signals.itl_p95,
            Series::ItlP99 => &mut signals.itl_p99,
            Series::GenTps => &mut signals.gen_tps,
            Series::PromptTps => &mut signals.prompt_tps,
            Series::PrefixHit => &mut signals.prefix_hit,
            Series::PreemptionsPerS => &mut signals.preemptions_per_s,
            Series::RequestsPerS => &mut signals.requests_per_s,
        }
    }

    /// The value of this series in a set of derived signals.
    pub fn value(self, signals: &Signals) -> Option<f64> {
        match self {
            Series::KvUsage => signals.kv_usage,
            Series::Running => signals.running,
            Series::Waiting => signals.waiting,
            Series::TtftP50 => signals.ttft_p50,
            Series::TtftP95 => signals.ttft_p95,
            Series::TtftP99 => signals.ttft_p99,
            Series::ItlP50 => signals.itl_p50,
            Series::ItlP95 => signals.itl_p95,
            Series::ItlP99 => signals.itl_p99,
            Series::GenTps => signals.gen_tps,
            Series::PromptTps => signals.prompt_tps,
            Series::PrefixHit => signals.prefix_hit,
            Series::PreemptionsPerS => signals.preemptions_per_s,
            Series::RequestsPerS => signals.requests_per_s,
        }
    }
}

/// Upper bound on the points of one tier, whatever the settings say (guards against a
/// nonsensical interval such as 1 ns).
const MAX_TIER_POINTS: usize = 1 << 20;

/// One point's values, one per series.
type Row = [f32; Series::COUNT];

/// History of one engine (see module docs). Values are stored as `f32`; `NaN` marks unknown.
#[derive(Debug, Clone)]
pub struct History {
    full: Tier,
    pending: PendingBucket,
    coarse: Tier,
    full_secs: f64,
    total_secs: f64,
    step: f64,
}

impl History {
    pub fn new(settings: &super::FleetSettings) -> Self {
        let spans = Spans::from_settings(settings);
        History {
            // +1: a span of N intervals holds N + 1 points.
            full: Tier::with_capacity(
                tier_points(spans.full_secs, spans.interval).saturating_add(1),
            ),
            pending: PendingBucket::default(),
            // +1: a partly expired bucket at the old end still counts.
            coarse: Tier::with_capacity(
                tier_points(spans.total_secs - spans.full_secs, spans.step).saturating_add(1),
            ),
            full_secs: spans.full_secs,
            total_secs: spans.total_secs,
            step: spans.step,
        }
    }

    /// A history that holds nothing and is never written: the stand-in in a copy of the fleet
    /// whose readers take points from the live history (a frozen view, see
    /// [`super::Fleet::without_history`]).
    pub fn none() -> Self {
        History {
            full: Tier::with_capacity(0),
            pending: PendingBucket::default(),
            coarse: Tier::with_capacity(0),
            full_secs: 0.0,
            total_secs: 0.0,
            step: 1.0,
        }
    }

    /// Append the signals derived at time `t`.
    pub fn push(&mut self, t: super::Ts, signals: &super::Signals) {
        if !t.is_finite() || self.newest_time().is_some_and(|newest| t < newest) {
            return;
        }
        let mut row = [f32::NAN; Series::COUNT];
        for series in Series::ALL {
            if let Some(v) = series.value(signals) {
                row[series.index()] = v as f32;
            }
        }
        while let Some(oldest) = self.full.oldest_time() {
            if oldest >= t - self.full_secs && !self.full.is_full() {
                break;
            }
            if let Some((ot, ovalues)) = self.full.pop_oldest() {
                self.fold_into_coarse(ot, &ovalues);
            }
        }
        self.full.push(t, &row);
        let horizon = t - self.total_secs;
        while self.coarse.oldest_time().is_some_and(|ot| ot < horizon) {
            self.coarse.pop_oldest();
        }
        if self.pending.points > 0 && self.pending.start < horizon {
            self.pending = PendingBucket::default();
        }
    }

    /// Points of one series at or after `since`, oldest first; unknown values are skipped.
    pub fn points(&self, series: Series, since: super::Ts) -> Vec<(f64, f64)> {
        let column = series.index();
        let mut out = Vec::with_capacity(self.len());
        let mut keep = |t: f64, v: f32| {
            if t >= since && !v.is_nan() {
                out.push((t, f64::from(v)));
            }
        };
        self.coarse.for_each(column, &mut keep);
        if let Some((t, v)) = self.pending.mean(column) {
            keep(t, v);
        }
        self.full.for_each(column, &mut keep);
        out
    }

    /// The point in effect at `t`: the newest full-resolution point at or before `t`, else the
    /// downsampled bucket covering `t` (its mean values, stamped with its start). Returns the
    /// point's time and its values; the signals history does not keep stay unknown. `None`
    /// when nothing kept is that old.
    pub fn at(&self, t: super::Ts) -> Option<(super::Ts, Signals)> {
        if !t.is_finite() {
            return None;
        }
        let row = if let Some(nth) = self.full.newest_at_or_before(t) {
            self.full.row(nth)
        } else if self.pending.points > 0 && self.pending.start <= t {
            Some((self.pending.start, self.pending.means()))
        } else {
            self.coarse
                .newest_at_or_before(t)
                .and_then(|nth| self.coarse.row(nth))
        }?;
        let (time, values) = row;
        let mut signals = Signals::default();
        for series in Series::ALL {
            let value = values.get(series.index()).copied().unwrap_or(f32::NAN);
            *series.field(&mut signals) = (!value.is_nan()).then_some(f64::from(value));
        }
        Some((time, signals))
    }

    /// Time of the oldest point kept (a downsampled bucket's start).
    pub fn oldest_time(&self) -> Option<super::Ts> {
        self.coarse
            .oldest_time()
            .or_else(|| (self.pending.points > 0).then_some(self.pending.start))
            .or_else(|| self.full.oldest_time())
    }

    /// The newest known value of a series.
    pub fn last(&self, series: Series) -> Option<(super::Ts, f64)> {
        let column = series.index();
        let known = |(t, v): (f64, f32)| (!v.is_nan()).then_some((t, f64::from(v)));
        self.full
            .newest_first(column)
            .find_map(known)
            .or_else(|| self.pending.mean(column).and_then(known))
            .or_else(|| self.coarse.newest_first(column).find_map(known))
    }

    /// Number of points held (full-resolution points, coarse buckets and the bucket being filled).
    pub fn len(&self) -> usize {
        self.full.len + self.coarse.len + usize::from(self.pending.points > 0)
    }

    /// True when nothing was pushed yet (or everything expired).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by this history, its rings' storage included.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.full.heap_bytes() + self.coarse.heap_bytes()
    }

    /// Time of the newest point.
    pub fn newest_time(&self) -> Option<Ts> {
        self.full.newest_time()
    }

    fn fold_into_coarse(&mut self, t: Ts, values: &Row) {
        let start = (t / self.step).floor() * self.step;
        if self.pending.points > 0 && self.pending.start != start {
            let (bucket_start, means) = self.pending.finish();
            self.coarse.push(bucket_start, &means);
        }
        self.pending.add(start, values);
    }
}

/// Settings made safe to size memory from.
struct Spans {
    interval: f64,
    full_secs: f64,
    total_secs: f64,
    step: f64,
}

impl Spans {
    fn from_settings(settings: &FleetSettings) -> Self {
        let positive_or = |v: f64, fallback: f64| {
            if v.is_finite() && v > 0.0 {
                v
            } else {
                fallback
            }
        };
        let interval = positive_or(settings.interval, 1.0);
        let full_secs = positive_or(settings.history_full_secs, 0.0);
        let total_secs = positive_or(settings.history_total_secs, 0.0).max(full_secs);
        let step = positive_or(settings.history_coarse_step, interval);
        Spans {
            interval,
            full_secs,
            total_secs,
            step,
        }
    }
}

/// Points needed to cover `span` seconds at one point per `every` seconds (at least one).
fn tier_points(span: f64, every: f64) -> usize {
    let points = (span / every).ceil();
    if points.is_finite() && points >= 1.0 {
        (points as usize).min(MAX_TIER_POINTS)
    } else {
        1
    }
}

/// A bounded ring of points, stored column by column. Storage grows (doubling) as points
/// arrive, up to `max` points: an engine seen for a minute holds a minute, not the reservation
/// for an hour (a payload naming 10,000 engines must not cost 10,000 full rings).
#[derive(Debug, Clone)]
struct Tier {
    /// Points held at most; the oldest is overwritten past it.
    max: usize,
    /// Points the storage holds now (`max` once grown fully).
    capacity: usize,
    /// Slot of the oldest point.
    head: usize,
    len: usize,
    times: Vec<f64>,
    /// `values[series * capacity + slot]`.
    values: Vec<f32>,
}

/// Points a tier first makes room for.
const FIRST_GROWTH: usize = 16;

impl Tier {
    fn with_capacity(max: usize) -> Self {
        Tier {
            max: max.max(1),
            capacity: 0,
            head: 0,
            len: 0,
            times: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Make room for one more point without overwriting, when `max` allows: the points are
    /// laid out again oldest first in storage twice as large.
    fn grow(&mut self) {
        let capacity = self
            .capacity
            .saturating_mul(2)
            .max(FIRST_GROWTH)
            .min(self.max);
        let mut times = vec![f64::NAN; capacity];
        let mut values = vec![f32::NAN; capacity * Series::COUNT];
        for nth in 0..self.len {
            let slot = self.slot(nth);
            if let (Some(to), Some(from)) = (times.get_mut(nth), self.times.get(slot)) {
                *to = *from;
            }
            for column in 0..Series::COUNT {
                let from = self.values.get(column * self.capacity + slot);
                if let (Some(to), Some(from)) = (values.get_mut(column * capacity + nth), from) {
                    *to = *from;
                }
            }
        }
        self.capacity = capacity;
        self.head = 0;
        self.times = times;
        self.values = values;
    }

    fn is_full(&self) -> bool {
        self.len == self.max
    }

    fn slot(&self, nth: usize) -> usize {
        (self.head + nth) % self.capacity.max(1)
    }

    fn oldest_time(&self) -> Option<Ts> {
        (self.len > 0)
            .then(|| self.times.get(self.head).copied())
            .flatten()
    }

    fn newest_time(&self) -> Option<Ts> {
        let last = self.len.checked_sub(1)?;
        self.times.get(self.slot(last)).copied()
    }

    /// Append a point, overwriting the oldest when full.
    fn push(&mut self, t: Ts, row: &Row) {
        if self.len == self.capacity && self.capacity < self.max {
            self.grow();
        }
        let slot = if self.len == self.capacity {
            let slot = self.head;
            self.head = self.slot(1);
            slot
        } else {
            let slot = self.slot(self.len);
            self.len += 1;
            slot
        };
        if let Some(time) = self.times.get_mut(slot) {
            *time = t;
        }
        for (column, value) in row.iter().enumerate() {
            if let Some(cell) = self.values.get_mut(column * self.capacity + slot) {
                *cell = *value;
            }
        }
    }

    fn pop_oldest(&mut self) -> Option<(Ts, Row)> {
        if self.len == 0 {
            return None;
        }
        let (t, row) = self.row(0)?;
        self.head = self.slot(1);
        self.len -= 1;
        Some((t, row))
    }

    /// Position (oldest = 0) of the newest point at or before `t`.
    fn newest_at_or_before(&self, t: Ts) -> Option<usize> {
        // Points are in time order, so the ones at or before `t` are a prefix.
        let mut low = 0;
        let mut high = self.len;
        while low < high {
            let mid = low + (high - low) / 2;
            let time = self.times.get(self.slot(mid)).copied().unwrap_or(f64::NAN);
            if time <= t {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low.checked_sub(1)
    }

    /// One point's time and values.
    fn row(&self, nth: usize) -> Option<(Ts, Row)> {
        if nth >= self.len {
            return None;
        }
        let slot = self.slot(nth);
        let t = self.times.get(slot).copied()?;
        let mut row = [f32::NAN; Series::COUNT];
        for (column, value) in row.iter_mut().enumerate() {
            if let Some(cell) = self.values.get(column * self.capacity + slot) {
                *value = *cell;
            }
        }
        Some((t, row))
    }

    fn point(&self, column: usize, nth: usize) -> Option<(Ts, f32)> {
        let slot = self.slot(nth);
        let t = self.times.get(slot).copied()?;
        let v = self.values.get(column * self.capacity + slot).copied()?;
        Some((t, v))
    }

    /// Visit one column's points, oldest first.
    fn for_each(&self, column: usize, visit: &mut impl FnMut(Ts, f32)) {
        for nth in 0..self.len {
            if let Some((t, v)) = self.point(column, nth) {
                visit(t, v);
            }
        }
    }

    fn newest_first(&self, column: usize) -> impl Iterator<Item = (Ts, f32)> + '_ {
        (0..self.len)
            .rev()
            .filter_map(move |nth| self.point(column, nth))
    }

    fn heap_bytes(&self) -> usize {
        self.times.capacity() * std::mem::size_of::<f64>()
            + self.values.capacity() * std::mem::size_of::<f32>()
    }
}

/// The coarse bucket being filled by points leaving the full tier.
#[derive(Debug, Clone, Copy)]
struct PendingBucket {
    start: Ts,
    /// Points folded in, known or not.
    points: u32,
    sums: [f64; Series::COUNT],
    known: [u32; Series::COUNT],
}

impl Default for PendingBucket {
    fn default() -> Self {
        PendingBucket {
            start: f64::NAN,
            points: 0,
            sums: [0.0; Series::COUNT],
            known: [0; Series::COUNT],
        }
    }
}

impl PendingBucket {
    fn add(&mut self, start: Ts, values: &Row) {
        self.start = start;
        self.points += 1;
        for ((sum, known), value) in self.sums.iter_mut().zip(&mut self.known).zip(values) {
            if !value.is_nan() {
                *sum += f64::from(*value);
                *known += 1;
            }
        }
    }

    fn mean(&self, column: usize) -> Option<(Ts, f32)> {
        if self.points == 0 {
            return None;
        }
        let sum = self.sums.get(column)?;
        let known = self.known.get(column)?;
        let mean = if *known == 0 {
            f32::NAN
        } else {
            (sum / f64::from(*known)) as f32
        };
        Some((self.start, mean))
    }

    /// The mean of each series so far (`NaN` where none was known).
    fn means(&self) -> Row {
        let mut means = [f32::NAN; Series::COUNT];
        for (column, mean) in means.iter_mut().enumerate() {
            if let Some((_, m)) = self.mean(column) {
                *mean = m;
            }
        }
        means
    }

    /// The bucket's start and means; the bucket is emptied.
    fn finish(&mut self) -> (Ts, Row) {
        let means = self.means();
        let start = self.start;
        *self = PendingBucket::default();
        (start, means)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 s interval, 10 s at full resolution, 5 s buckets, 30 s in total.
    fn settings() -> FleetSettings {
        FleetSettings {
            interval: 1.0,
            history_full_secs: 10.0,
            history_total_secs: 30.0,
            history_coarse_step: 5.0,
            ..FleetSettings::default()
        }
    }

    fn kv(v: f64) -> Signals {
        Signals {
            kv_usage: Some(v),
            ..Signals::default()
        }
    }

    #[test]
    fn recent_points_are_kept_at_full_resolution() {
        let mut h = History::new(&settings());
        for i in 0..5 {
            h.push(100.0 + f64::from(i), &kv(f64::from(i) / 10.0));
        }
        let points = h.points(Series::KvUsage, 0.0);
        assert_eq!(points.len(), 5);
        assert_eq!(points[0].0, 100.0);
        assert!((points[4].1 - 0.4).abs() < 1e-6);
        assert_eq!(h.last(Series::KvUsage).map(|p| p.0), Some(104.0));
        assert_eq!(h.len(), 5);
    }

    #[test]
    fn old_points_are_averaged_into_coarse_buckets() {
        let mut h = History::new(&settings());
        // t = 100..=121, kv = t - 100. Full tier keeps the last 10 s: points older than
        // 121 - 10 = 111 left it: t = 100..=110.
        for i in 0..=21 {
            h.push(100.0 + f64::from(i), &kv(f64::from(i)));
        }
        let points = h.points(Series::KvUsage, 0.0);
        // Buckets [100,105): mean(0..=4) = 2; [105,110): mean(5..=9) = 7; [110,115) pending
        // with only t=110 so far: 10. Then the full points 111..=121.
        assert_eq!(points[0], (100.0, 2.0));
        assert_eq!(points[1], (105.0, 7.0));
        assert_eq!(points[2], (110.0, 10.0));
        assert_eq!(points[3], (111.0, 11.0));
        assert_eq!(points.len(), 3 + 11);
        assert_eq!(points.last(), Some(&(121.0, 21.0)));
    }

    #[test]
    fn the_point_in_effect_at_a_past_instant_comes_from_the_tier_holding_it() {
        let mut h = History::new(&settings());
        for i in 0..=21 {
            let mut signals = kv(f64::from(i));
            signals.waiting = (i % 2 == 0).then_some(5.0);
            h.push(100.0 + f64::from(i), &signals);
        }
        // Full resolution (111..=121): the newest point at or before the instant.
        let (t, s) = h.at(115.5).expect("a point");
        assert_eq!((t, s.kv_usage), (115.0, Some(15.0)));
        assert_eq!(s.waiting, None, "unknown at t = 115 stays unknown");
        assert_eq!(s.e2e_p95, None, "a signal history does not keep is unknown");
        assert_eq!(h.at(121.0).map(|(t, _)| t), Some(121.0));
        assert_eq!(h.at(500.0).map(|(t, _)| t), Some(121.0));
        // The bucket being filled covers 110.
        assert_eq!(
            h.at(110.7).map(|(t, s)| (t, s.kv_usage)),
            Some((110.0, Some(10.0)))
        );
        // Coarse buckets: [105, 110) holds the mean of 5..=9.
        let (t, s) = h.at(108.0).expect("a bucket");
        assert_eq!((t, s.kv_usage), (105.0, Some(7.0)));
        assert_eq!(h.at(100.0).map(|(t, _)| t), Some(100.0));
        // Before anything kept, and a nonsensical instant.
        assert_eq!(h.at(99.9), None);
        assert_eq!(h.at(f64::NAN), None);
        assert_eq!(h.oldest_time(), Some(100.0));
        assert_eq!(History::new(&settings()).at(100.0), None);
    }

    #[test]
    fn coarse_mean_ignores_unknown_values_and_all_unknown_stays_unknown() {
        let mut h = History::new(&settings());
        // [100,105): kv known only at 101 (=4) and 103 (=8): mean 6.
        // [105,110): kv never known.
        for i in 0..10 {
            let t = 100.0 + f64::from(i);
            let s = match i {
                1 => kv(4.0),
                3 => kv(8.0),
                _ => Signals::default(),
            };
            h.push(t, &s);
        }
        // Push far enough to flush both buckets out of the full tier and the pending bucket.
        for i in 10..=21 {
            h.push(100.0 + f64::from(i), &Signals::default());
        }
        assert_eq!(h.points(Series::KvUsage, 0.0), vec![(100.0, 6.0)]);
        assert_eq!(h.points(Series::Running, 0.0), vec![]);
        assert_eq!(h.last(Series::KvUsage), Some((100.0, 6.0)));
        assert_eq!(h.last(Series::Running), None);
    }

    #[test]
    fn since_filters_across_the_tier_boundary() {
        let mut h = History::new(&settings());
        for i in 0..=21 {
            h.push(100.0 + f64::from(i), &kv(f64::from(i)));
        }
        // Coarse buckets start at 100, 105, pending at 110; full points 111..=121.
        let since_105 = h.points(Series::KvUsage, 105.0);
        assert_eq!(since_105.first(), Some(&(105.0, 7.0)));
        assert_eq!(since_105.len(), 2 + 11);
        let since_112 = h.points(Series::KvUsage, 112.0);
        assert_eq!(since_112.first(), Some(&(112.0, 12.0)));
        assert_eq!(since_112.len(), 10);
        assert!(h.points(Series::KvUsage, 122.0).is_empty());
    }

    #[test]
    fn memory_and_length_stay_bounded_after_many_pushes() {
        let s = settings();
        let mut h = History::new(&s);
        for i in 0..1_000 {
            h.push(f64::from(i), &kv(0.5));
        }
        let grown = h.memory_bytes();
        for i in 1_000..100_000 {
            h.push(f64::from(i), &kv(0.5));
        }
        assert_eq!(h.memory_bytes(), grown);
        // Full tier: 99,989..=99,999 (11 points). Pending bucket [99,985, 99,990) holds
        // 99,985..=99,988. Coarse buckets starting at or after 99,999 - 30 = 99,969: 99,970,
        // 99,975 and 99,980.
        let points = h.points(Series::KvUsage, 0.0);
        assert_eq!(points.len(), h.len());
        assert!(points.first().is_some_and(|p| p.0 >= 99_999.0 - 30.0));
        assert_eq!(points.first().map(|p| p.0), Some(99_970.0));
        assert_eq!(h.len(), 11 + 3 + 1);
    }

    #[test]
    fn memory_grows_with_the_points_held_up_to_the_settings() {
        let mut h = History::new(&FleetSettings::default());
        // Nothing reserved up front: an engine seen once costs little.
        assert!(h.memory_bytes() < 1024, "{}", h.memory_bytes());
        h.push(0.0, &kv(0.5));
        // One point: room for 16 (a f64 timestamp plus 14 f32 values = 64 bytes each).
        assert!(h.memory_bytes() < 1024 + 16 * 64, "{}", h.memory_bytes());
        for i in 1..10_000 {
            h.push(f64::from(i), &kv(0.5));
        }
        // Defaults: 600 / 1 + 1 = 601 full points, (3600 - 600) / 10 + 1 = 301 coarse points.
        let full = (601 + 301) * 64;
        assert!(h.memory_bytes() >= full);
        assert!(h.memory_bytes() < full + 1024, "{}", h.memory_bytes());
        assert_eq!(h.points(Series::KvUsage, 9_000.0).len(), 601 + 40);
    }

    #[test]
    fn out_of_order_and_non_finite_pushes_are_ignored() {
        let mut h = History::new(&settings());
        h.push(10.0, &kv(1.0));
        h.push(9.0, &kv(2.0));
        h.push(f64::NAN, &kv(3.0));
        h.push(f64::INFINITY, &kv(4.0));
        assert_eq!(h.points(Series::KvUsage, 0.0), vec![(10.0, 1.0)]);
    }

    #[test]
    fn nonsensical_settings_do_not_panic() {
        let s = FleetSettings {
            interval: 0.0,
            history_full_secs: f64::NAN,
            history_total_secs: -5.0,
            history_coarse_step: 0.0,
            ..FleetSettings::default()
        };
        let mut h = History::new(&s);
        for i in 0..50 {
            h.push(f64::from(i), &kv(1.0));
        }
        assert_eq!(h.last(Series::KvUsage), Some((49.0, 1.0)));
    }
}
