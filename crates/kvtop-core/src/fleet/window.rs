//! Per-engine ring of cumulative snapshots: the raw material of windowed rates and quantiles.
//!
//! Each good scrape of an engine records one [`Snapshot`]: its time, the reset-adjusted value of
//! every counter and the raw cumulative bucket counts of every latency histogram.
//!
//! Retention policy (relative to the newest snapshot's time `t`):
//! - every snapshot younger than [`DENSE_SECS`] (20 s) is kept;
//! - older ones are thinned so that kept snapshots are at least [`SPARSE_STEP_SECS`] (5 s)
//!   apart: walking from old to new, a snapshot closer than that to the previous kept one is
//!   dropped when it leaves the dense span;
//! - the oldest kept snapshot at or before `t −` [`RETAIN_SECS`] (5 min window + 30 s margin)
//!   is kept and everything before it is dropped.
//!
//! So at most `20 s / interval + 1 + 330 s / 5 s + 1` snapshots are held whatever the uptime.
//!
//! Counters are stored *reset-adjusted*: each snapshot holds the previous adjusted value plus
//! [`counter_delta`] of the raw readings, i.e. the sum of piecewise increases as in Prometheus'
//! `increase`. The increase between any two kept snapshots is then exact even when the snapshots
//! between them (and a reset among them) were thinned away. Histograms are kept raw; after a
//! reset or a change of bucket layout only later snapshots are used for their deltas.

use std::collections::VecDeque;

use super::Ts;
use crate::engine::{EngineSample, Histogram};
use crate::metrics::number::as_int;
use crate::metrics::{Bucket, counter_delta};
use crate::signals::{Derivation, FAILED_REASONS, MetricId, Signal, signal};

/// Span behind the newest snapshot in which every snapshot is kept, seconds.
pub(crate) const DENSE_SECS: f64 = 20.0;
/// Minimum spacing of kept snapshots beyond the dense span, seconds.
pub(crate) const SPARSE_STEP_SECS: f64 = 5.0;
/// Span covered: the largest window (5 min) plus a margin, seconds.
pub(crate) const RETAIN_SECS: f64 = 330.0;

/// The cumulative counters rates are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    Preemptions,
    PromptTokens,
    GenerationTokens,
    PrefixQueries,
    PrefixHits,
    /// Sum of `request_success_total` over every finished reason.
    RequestsFinished,
    /// Sum of `request_success_total` for the failed reasons (`signals::FAILED_REASONS`).
    RequestsFailed,
    SpecDraftTokens,
    SpecAcceptedTokens,
    CpuSeconds,
    SpecDrafts,
    /// `request_success_total` per finished reason, as the catalog's share signals select it.
    FinishedStop,
    FinishedLength,
    FinishedAbort,
    FinishedError,
    FinishedRepetition,
    /// `http_requests_total` over every status, and the classes the catalog's shares select.
    HttpRequests,
    Http4xx,
    Http5xx,
}

impl Counter {
    const ALL: [Counter; 19] = [
        Counter::Preemptions,
        Counter::PromptTokens,
        Counter::GenerationTokens,
        Counter::PrefixQueries,
        Counter::PrefixHits,
        Counter::RequestsFinished,
        Counter::RequestsFailed,
        Counter::SpecDraftTokens,
        Counter::SpecAcceptedTokens,
        Counter::CpuSeconds,
        Counter::SpecDrafts,
        Counter::FinishedStop,
        Counter::FinishedLength,
        Counter::FinishedAbort,
        Counter::FinishedError,
        Counter::FinishedRepetition,
        Counter::HttpRequests,
        Counter::Http4xx,
        Counter::Http5xx,
    ];
    const COUNT: usize = Self::ALL.len();

    /// The raw cumulative value in a sample; `None` when not exported (or not a number).
    fn read(self, sample: &EngineSample) -> Option<f64> {
        let value = match self {
            Counter::Preemptions => sample.preemptions_total,
            Counter::PromptTokens => sample.prompt_tokens_total,
            Counter::GenerationTokens => sample.generation_tokens_total,
            Counter::PrefixQueries => sample.prefix_queries_total,
            Counter::PrefixHits => sample.prefix_hits_total,
            Counter::RequestsFinished => sample.requests_finished_total(),
            Counter::RequestsFailed => failed_requests_total(sample),
            Counter::SpecDraftTokens => sample.spec_draft_tokens_total,
            Counter::SpecAcceptedTokens => sample.spec_accepted_tokens_total,
            Counter::CpuSeconds => sample.process_cpu_seconds_total,
            Counter::SpecDrafts => sample.spec_drafts_total,
            Counter::FinishedStop => share_part(Signal::FinishedStop, sample),
            Counter::FinishedLength => share_part(Signal::FinishedLength, sample),
            Counter::FinishedAbort => share_part(Signal::FinishedAbort, sample),
            Counter::FinishedError => share_part(Signal::FinishedError, sample),
            Counter::FinishedRepetition => share_part(Signal::FinishedRepetition, sample),
            Counter::HttpRequests => total(&sample.http_requests_total),
            Counter::Http4xx => share_part(Signal::Http4xxRatio, sample),
            Counter::Http5xx => share_part(Signal::Http5xxRatio, sample),
        };
        value.filter(|v| !v.is_nan())
    }
}

/// Requests finished for a failed reason (the catalog's definition, also the Prometheus
/// query's); `None` when no such reason is exported.
fn failed_requests_total(sample: &EngineSample) -> Option<f64> {
    sample
        .request_success_total
        .iter()
        .filter(|(reason, _)| FAILED_REASONS.contains(&reason.as_str()))
        .map(|(_, v)| *v)
        .reduce(|a, b| a + b)
}

fn total(values: &[(String, f64)]) -> Option<f64> {
    values.iter().map(|(_, v)| *v).reduce(|a, b| a + b)
}

/// The numerator of one of the catalog's share signals, read from the sample's counters by
/// label (the same selection as its PromQL); `None` when no selected series is exported.
fn share_part(share: Signal, sample: &EngineSample) -> Option<f64> {
    let Derivation::Ratio { numerator, .. } = signal(share).derivation else {
        return None;
    };
    let values = match numerator.metric {
        MetricId::HttpRequests => &sample.http_requests_total,
        _ => &sample.request_success_total,
    };
    values
        .iter()
        .filter(|(label, _)| numerator.selects(label))
        .map(|(_, v)| *v)
        .reduce(|a, b| a + b)
}

/// The latency histograms windowed quantiles are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistogramKind {
    Ttft,
    Itl,
    E2e,
    QueueTime,
    Tpot,
    PrefillTime,
    DecodeTime,
}

impl HistogramKind {
    const ALL: [HistogramKind; 7] = [
        HistogramKind::Ttft,
        HistogramKind::Itl,
        HistogramKind::E2e,
        HistogramKind::QueueTime,
        HistogramKind::Tpot,
        HistogramKind::PrefillTime,
        HistogramKind::DecodeTime,
    ];
    const COUNT: usize = Self::ALL.len();

    /// The window's histogram of a catalog metric, if it keeps one.
    pub(crate) fn of(metric: MetricId) -> Option<HistogramKind> {
        Some(match metric {
            MetricId::Ttft => HistogramKind::Ttft,
            MetricId::Itl => HistogramKind::Itl,
            MetricId::E2e => HistogramKind::E2e,
            MetricId::QueueTime => HistogramKind::QueueTime,
            MetricId::Tpot => HistogramKind::Tpot,
            MetricId::PrefillTime => HistogramKind::PrefillTime,
            MetricId::DecodeTime => HistogramKind::DecodeTime,
            _ => return None,
        })
    }

    fn read(self, sample: &EngineSample) -> Option<&Histogram> {
        match self {
            HistogramKind::Ttft => sample.ttft.as_ref(),
            HistogramKind::Itl => sample.itl.as_ref(),
            HistogramKind::E2e => sample.e2e.as_ref(),
            HistogramKind::QueueTime => sample.queue_time.as_ref(),
            HistogramKind::Tpot => sample.tpot.as_ref(),
            HistogramKind::PrefillTime => sample.prefill_time.as_ref(),
            HistogramKind::DecodeTime => sample.decode_time.as_ref(),
        }
    }
}

/// The cumulative state of one engine at one scrape.
#[derive(Debug, Clone)]
struct Snapshot {
    ts: Ts,
    /// The reset-adjusted cumulative value of every counter (`NaN` = not exported) and the raw
    /// cumulative bucket counts of every histogram, in the bucket layout current when recorded
    /// (none = not exported), packed: the ring holds up to 88 snapshots an engine.
    packed: Packed,
}

impl Snapshot {
    fn empty() -> Self {
        Snapshot {
            ts: f64::NAN,
            packed: Packed::default(),
        }
    }
}

/// Sections of a [`Packed`] snapshot: the counters, then one per histogram.
const SECTIONS: usize = 1 + HistogramKind::COUNT;

/// The numbers of a snapshot in one buffer, section by section.
///
/// - The counters: each a varint. A whole number (most counters) is the zigzag of its value
///   shifted left by one (low bit clear); `NaN` (not exported) is 1; anything else (a fraction,
///   `-0`, beyond 2^53) is 3 and its eight bytes.
/// - A histogram's bucket counts: a cumulative count rarely grows by much from one bucket to the
///   next, so the section is one byte `w` (1 to 8) and then the zigzag difference of each count
///   from the one before in `w` bytes, `w` being what the largest needs; if a count is not a
///   whole number, 0 and then every count's eight bytes. Fixed widths are cheaper to read and
///   write than varints (every scrape writes a section and every window reads one): packing
///   the counts as varints made `check --replay` of an hour of 8 engines a fifth dearer still.
///
/// Decoding gives back every number bit for bit except `NaN`'s payload. The 151 bucket counts
/// of a vLLM engine take 1,208 bytes as `f64`s in seven vectors; packed, one to three bytes
/// each (a fresh engine's counts are small; one that served a million requests, about three),
/// and the 19 counters about 40 bytes instead of 152.
#[derive(Debug, Clone, Default)]
struct Packed {
    bytes: Vec<u8>,
    /// Where each section ends in `bytes` (it starts where the one before ends).
    ends: [u32; SECTIONS],
}

/// The word of a `NaN` counter, and the word before the eight bytes of any other counter that
/// is not a whole number.
const WORD_NAN: u64 = 1;
const WORD_RAW: u64 = 3;

/// The width byte of a histogram section whose counts are written as their eight bytes.
const WIDTH_RAW: u8 = 0;

/// Zero bytes after a ring snapshot's numbers, so that its last count too can be read as eight
/// bytes.
const PADDING: usize = 7;

/// `v` as a whole number written as a difference: one exact in an `f64`, and not `-0` (whose
/// sign would be lost).
fn whole(v: f64) -> Option<i64> {
    as_int(v).filter(|_| !(v == 0.0 && v.is_sign_negative()))
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Append `v` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Packed {
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends = [0; SECTIONS];
    }

    /// Append the counters (section 0; before any histogram).
    fn push_counters(&mut self, counters: &[f64]) {
        for &value in counters {
            match whole(value) {
                Some(n) => put_varint(&mut self.bytes, zigzag(n) << 1),
                None if value.is_nan() => put_varint(&mut self.bytes, WORD_NAN),
                None => {
                    put_varint(&mut self.bytes, WORD_RAW);
                    self.bytes.extend_from_slice(&value.to_le_bytes());
                }
            }
        }
        self.end_section(0);
    }

    /// Append the counts of histogram `kind` (the histograms are packed in order).
    fn push_counts(&mut self, kind: HistogramKind, counts: &[f64]) {
        if !counts.is_empty() {
            // The widest difference, or `None` when a count is not a whole number.
            let mut widest = Some(0u64);
            let mut before = 0i64;
            for &count in counts {
                widest = widest.zip(whole(count)).map(|(widest, n)| {
                    let z = zigzag(n - before);
                    before = n;
                    widest.max(z)
                });
            }
            match widest {
                Some(widest) => {
                    let width = (8 - widest.leading_zeros() as usize / 8).max(1);
                    self.bytes.push(width as u8);
                    let mut before = 0i64;
                    for &count in counts {
                        let n = count as i64;
                        // Eight bytes written and the unused high ones cut: no copy of a
                        // variable length.
                        self.bytes
                            .extend_from_slice(&zigzag(n - before).to_le_bytes());
                        self.bytes.truncate(self.bytes.len() - (8 - width));
                        before = n;
                    }
                }
                None => {
                    self.bytes.push(WIDTH_RAW);
                    for &count in counts {
                        self.bytes.extend_from_slice(&count.to_le_bytes());
                    }
                }
            }
        }
        self.end_section(1 + kind as usize);
    }

    fn end_section(&mut self, section: usize) {
        let end = u32::try_from(self.bytes.len()).unwrap_or(u32::MAX);
        for slot in &mut self.ends[section..] {
            *slot = end;
        }
    }

    /// Copy `other`'s numbers, taking no more room than they need and the padding that lets
    /// every count be read as eight bytes.
    fn copy_from(&mut self, other: &Packed) {
        self.bytes.clear();
        self.bytes.reserve_exact(other.bytes.len() + PADDING);
        self.bytes.extend_from_slice(&other.bytes);
        self.bytes.extend_from_slice(&[0; PADDING]);
        self.ends = other.ends;
    }

    fn section(&self, section: usize) -> &[u8] {
        let start = section.checked_sub(1).map_or(0, |k| self.ends[k]) as usize;
        let end = self.ends[section] as usize;
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The counters, in [`Counter::ALL`]'s order.
    fn counters(&self) -> Counters<'_> {
        Counters {
            bytes: self.section(0),
        }
    }

    /// One counter's value.
    fn counter(&self, counter: Counter) -> f64 {
        self.counters().nth(counter as usize).unwrap_or(f64::NAN)
    }

    /// The counts of histogram `kind`, in bucket order.
    fn counts(&self, kind: HistogramKind) -> Counts<'_> {
        let i = 1 + kind as usize;
        let start = self.ends[i - 1] as usize;
        let len = (self.ends[i] as usize).saturating_sub(start);
        // What follows the section is read too (and masked off), up to the padding.
        let bytes = self.bytes.get(start..).unwrap_or_default();
        let Some((&width, bytes)) = bytes.split_first().filter(|_| len > 0) else {
            return Counts::EMPTY;
        };
        let raw = width == WIDTH_RAW;
        let width = if raw {
            8
        } else {
            usize::from(width).clamp(1, 8)
        };
        Counts {
            bytes,
            left: (len - 1) / width,
            width,
            mask: if width == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * width)) - 1
            },
            raw,
            before: 0,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// The counters of a [`Packed`] snapshot, decoded as they are read.
struct Counters<'a> {
    bytes: &'a [u8],
}

impl Counters<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for (i, byte) in self.bytes.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.bytes = self.bytes.get(i + 1..).unwrap_or_default();
                return Some(value);
            }
        }
        None
    }
}

impl Iterator for Counters<'_> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        match self.varint()? {
            WORD_NAN => Some(f64::NAN),
            WORD_RAW => {
                let (raw, rest) = self.bytes.split_first_chunk::<8>()?;
                self.bytes = rest;
                Some(f64::from_le_bytes(*raw))
            }
            word if word & 1 == 0 => Some(unzigzag(word >> 1) as f64),
            _ => None,
        }
    }
}

/// The bucket counts of one histogram of a [`Packed`] snapshot, decoded as they are read.
struct Counts<'a> {
    /// From the next count to the end of the snapshot.
    bytes: &'a [u8],
    left: usize,
    width: usize,
    mask: u64,
    raw: bool,
    before: i64,
}

impl Counts<'_> {
    const EMPTY: Counts<'static> = Counts {
        bytes: &[],
        left: 0,
        width: 1,
        mask: 0xff,
        raw: false,
        before: 0,
    };
}

impl Iterator for Counts<'_> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        self.left = self.left.checked_sub(1)?;
        // Eight bytes at once where they are there (the ring's snapshots are padded), else the
        // bytes left.
        let word = match self.bytes.first_chunk::<8>() {
            Some(eight) => u64::from_le_bytes(*eight) & self.mask,
            None => {
                let mut word = [0u8; 8];
                for (to, from) in word.iter_mut().zip(self.bytes.iter().take(self.width)) {
                    *to = *from;
                }
                u64::from_le_bytes(word)
            }
        };
        self.bytes = self.bytes.get(self.width..).unwrap_or_default();
        if self.raw {
            return Some(f64::from_bits(word));
        }
        self.before = self.before.wrapping_add(unzigzag(word));
        Some(self.before as f64)
    }
}

/// The start of a window over a [`SnapshotWindow`] as it is now: the newest snapshot at or
/// before the window's start, else the oldest (see [`SnapshotWindow::start_of`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowStart {
    anchor: usize,
    /// The anchor's counters, unpacked once for every rate and ratio over the window.
    counters: [f64; Counter::COUNT],
}

/// The snapshot ring of one engine (see module docs).
#[derive(Debug, Clone)]
pub(crate) struct SnapshotWindow {
    snaps: VecDeque<Snapshot>,
    /// The leading snapshots already vetted by thinning.
    thinned: usize,
    /// Raw counter readings of the newest snapshot, for reset detection.
    last_raw: [f64; Counter::COUNT],
    /// Start of each counter's current unbroken run (it was absent before): increases never
    /// reach back past it.
    counter_since: [Ts; Counter::COUNT],
    /// Bucket bounds of each histogram's current layout.
    bounds: [Vec<f64>; HistogramKind::COUNT],
    /// The newest snapshot's counters and bucket counts, unpacked: every window's increases
    /// and deltas end there, and the next scrape's reset checks compare with them.
    newest_counters: [f64; Counter::COUNT],
    newest: [Vec<f64>; HistogramKind::COUNT],
    /// Earliest time each histogram's deltas may start from (after a reset, a layout change,
    /// or a gap in which it was not exported).
    histogram_since: [Ts; HistogramKind::COUNT],
    /// Storage of dropped snapshots, reused to avoid reallocating their buffers.
    spare: Vec<Snapshot>,
}

thread_local! {
    /// Where a snapshot is packed before it is copied into the ring at its exact size: one
    /// buffer a thread, not one an engine.
    static SCRATCH: std::cell::RefCell<Packed> = std::cell::RefCell::new(Packed::default());
}

/// Dropped snapshots kept for reuse.
const SPARE_SNAPSHOTS: usize = 2;

impl SnapshotWindow {
    /// An empty window. Nothing is reserved: the ring grows with the snapshots held (bounded
    /// by thinning), so an engine seen once costs one snapshot.
    pub(crate) fn new() -> Self {
        SnapshotWindow {
            snaps: VecDeque::new(),
            thinned: 0,
            last_raw: [f64::NAN; Counter::COUNT],
            counter_since: [f64::NEG_INFINITY; Counter::COUNT],
            bounds: Default::default(),
            newest_counters: [f64::NAN; Counter::COUNT],
            newest: Default::default(),
            histogram_since: [f64::NEG_INFINITY; HistogramKind::COUNT],
            spare: Vec::new(),
        }
    }

    /// Number of snapshots held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.snaps.len()
    }

    /// Time of the newest snapshot.
    pub(crate) fn newest_ts(&self) -> Option<Ts> {
        self.snaps.back().map(|s| s.ts)
    }

    /// Record a scrape of this engine at `at`. Returns true when a counter or a histogram went
    /// backwards since the previous snapshot (the engine restarted).
    ///
    /// A non-finite `at`, or the time of the newest snapshot again, is ignored. An earlier `at`
    /// means the clock stepped back: the window restarts empty so windows stay time-ordered.
    pub(crate) fn record(&mut self, at: Ts, sample: &EngineSample) -> bool {
        if !at.is_finite() {
            return false;
        }
        match self.newest_ts() {
            Some(newest) if at == newest => return false,
            Some(newest) if at < newest => self.clear(),
            _ => {}
        }
        let mut snap = self.spare.pop().unwrap_or_else(Snapshot::empty);
        snap.ts = at;
        let reset = SCRATCH.with_borrow_mut(|packed| {
            packed.clear();
            let prev = self.snaps.back();
            let mut reset = false;

            for counter in Counter::ALL {
                let i = counter as usize;
                let raw = counter.read(sample).unwrap_or(f64::NAN);
                // `newest_counters` holds the previous snapshot's until replaced here.
                let prev_adjusted = if prev.is_some() {
                    self.newest_counters[i]
                } else {
                    f64::NAN
                };
                self.newest_counters[i] = if raw.is_nan() {
                    f64::NAN
                } else if prev_adjusted.is_nan() {
                    self.counter_since[i] = at;
                    raw
                } else {
                    let delta = counter_delta(self.last_raw[i], raw);
                    reset |= delta.reset;
                    prev_adjusted + delta.increase
                };
                self.last_raw[i] = raw;
            }
            packed.push_counters(&self.newest_counters);

            for kind in HistogramKind::ALL {
                let i = kind as usize;
                let newest = &mut self.newest[i];
                let Some(histogram) = kind.read(sample).filter(|h| !h.buckets.is_empty()) else {
                    newest.clear();
                    continue;
                };
                let bounds = &mut self.bounds[i];
                let same_layout = bounds.len() == histogram.buckets.len()
                    && bounds
                        .iter()
                        .zip(&histogram.buckets)
                        .all(|(le, b)| same_bound(*le, b.le));
                if !same_layout {
                    bounds.clear();
                    bounds.extend(histogram.buckets.iter().map(|b| b.le));
                }
                // `newest` holds the previous snapshot's counts until replaced here.
                if prev.is_some() && same_layout && newest.len() == histogram.buckets.len() {
                    if histogram
                        .buckets
                        .iter()
                        .zip(newest.iter())
                        .any(|(b, old)| b.count < *old)
                    {
                        reset = true;
                        self.histogram_since[i] = at;
                    }
                } else {
                    self.histogram_since[i] = at;
                }
                newest.clear();
                newest.extend(histogram.buckets.iter().map(|b| b.count));
                packed.push_counts(kind, newest);
            }
            snap.packed.copy_from(packed);
            reset
        });
        self.snaps.push_back(snap);
        self.prune(at);
        reset
    }

    /// Seconds the counter has not moved: from the oldest snapshot of the unbroken run of
    /// snapshots ending at the newest that all hold its newest value, to the newest. 0 when it
    /// moved since the snapshot before; `None` without two snapshots that export it. A run as
    /// old as the window is a lower bound (older snapshots were dropped).
    pub(crate) fn unchanged_for(&self, counter: Counter) -> Option<f64> {
        let i = counter as usize;
        let newest = self.snaps.back()?;
        let value = self.newest_counters[i];
        if value.is_nan() {
            return None;
        }
        let mut oldest_same = newest.ts;
        let mut compared = false;
        for snap in self.snaps.iter().rev().skip(1) {
            if snap.ts < self.counter_since[i] {
                break;
            }
            let then = snap.packed.counter(counter);
            if then.is_nan() {
                break;
            }
            compared = true;
            if then != value {
                break;
            }
            oldest_same = snap.ts;
        }
        compared.then_some(newest.ts - oldest_same)
    }

    /// Increase of a counter over the last `window` seconds and the seconds it spans.
    #[cfg(test)]
    pub(crate) fn increase(&self, counter: Counter, window: f64) -> Option<(f64, f64)> {
        self.increase_from(self.start_of(window)?, counter)
    }

    /// Where a window of `window` seconds ending at the newest snapshot starts, looked up once
    /// for every rate, ratio and quantile derived over it.
    pub(crate) fn start_of(&self, window: f64) -> Option<WindowStart> {
        let start = self.snaps.back()?.ts - window;
        let anchor = self
            .snaps
            .partition_point(|s| s.ts <= start)
            .saturating_sub(1);
        let mut counters = [f64::NAN; Counter::COUNT];
        if let Some(snap) = self.snaps.get(anchor) {
            for (slot, value) in counters.iter_mut().zip(snap.packed.counters()) {
                *slot = value;
            }
        }
        Some(WindowStart { anchor, counters })
    }

    /// Increase of a counter over the window starting at `start`, and the seconds it spans.
    pub(crate) fn increase_from(&self, start: WindowStart, counter: Counter) -> Option<(f64, f64)> {
        let i = counter as usize;
        self.increases(&[counter], start, self.counter_since[i])
            .map(|(inc, secs)| (inc[0], secs))
    }

    /// Per-second rate of a counter over the window starting at `start`.
    pub(crate) fn rate_from(&self, start: WindowStart, counter: Counter) -> Option<f64> {
        let (increase, secs) = self.increase_from(start, counter)?;
        Some(increase / secs)
    }

    /// Increase of `numerator` over increase of `denominator`, both over the same span of the
    /// window starting at `start`. `None` when either is unknown or the denominator did not
    /// grow.
    pub(crate) fn ratio_from(
        &self,
        start: WindowStart,
        numerator: Counter,
        denominator: Counter,
    ) -> Option<f64> {
        let since =
            self.counter_since[numerator as usize].max(self.counter_since[denominator as usize]);
        let ([num, den], _) = self.increases(&[numerator, denominator], start, since)?;
        (den > 0.0).then(|| num / den)
    }

    /// Per-second rate of a counter over the last `window` seconds.
    #[cfg(test)]
    pub(crate) fn rate(&self, counter: Counter, window: f64) -> Option<f64> {
        let (increase, secs) = self.increase(counter, window)?;
        Some(increase / secs)
    }

    /// Per-bucket count increases of a histogram over the last `window` seconds, written to `out`
    /// (cleared first). False, with `out` empty, when there are not two comparable snapshots.
    pub(crate) fn bucket_deltas(
        &self,
        kind: HistogramKind,
        window: f64,
        out: &mut Vec<Bucket>,
    ) -> bool {
        out.clear();
        match self.start_of(window) {
            Some(start) => self.bucket_deltas_from(start, kind, out),
            None => false,
        }
    }

    /// [`bucket_deltas`](Self::bucket_deltas) over the window starting at `start`.
    pub(crate) fn bucket_deltas_from(
        &self,
        start: WindowStart,
        kind: HistogramKind,
        out: &mut Vec<Bucket>,
    ) -> bool {
        out.clear();
        let i = kind as usize;
        let Some(base) = self.base_index(start, self.histogram_since[i]) else {
            return false;
        };
        let Some(base) = self.snaps.get(base) else {
            return false;
        };
        let (new, bounds) = (&self.newest[i], &self.bounds[i]);
        if new.is_empty() || bounds.len() != new.len() {
            return false;
        }
        let mut old = base.packed.counts(kind);
        out.reserve(new.len());
        for (le, n) in bounds.iter().zip(new) {
            let Some(o) = old.next() else {
                break;
            };
            out.push(Bucket {
                le: *le,
                count: n - o,
            });
        }
        // The base had another number of buckets.
        if out.len() != new.len() || old.next().is_some() {
            out.clear();
            return false;
        }
        true
    }

    /// Bytes held, including unused capacity.
    pub(crate) fn memory_bytes(&self) -> usize {
        let snapshot_heap: usize = self
            .snaps
            .iter()
            .chain(&self.spare)
            .map(|s| s.packed.heap_bytes())
            .sum::<usize>();
        let bounds_heap: usize = self
            .bounds
            .iter()
            .chain(&self.newest)
            .map(|b| b.capacity() * size_of::<f64>())
            .sum();
        size_of::<Self>()
            + (self.snaps.capacity() + self.spare.capacity()) * size_of::<Snapshot>()
            + snapshot_heap
            + bounds_heap
    }

    /// Increases of several counters from a common base snapshot to the newest one.
    fn increases<const N: usize>(
        &self,
        counters: &[Counter; N],
        start: WindowStart,
        since: Ts,
    ) -> Option<([f64; N], f64)> {
        let index = self.base_index(start, since)?;
        let base = self.snaps.get(index)?;
        let newest = self.snaps.back()?;
        let secs = newest.ts - base.ts;
        if secs.is_nan() || secs <= 0.0 {
            return None;
        }
        let mut then = start.counters;
        if index != start.anchor {
            // A counter that appeared after the window's start: from its first snapshot.
            for (slot, value) in then.iter_mut().zip(base.packed.counters()) {
                *slot = value;
            }
        }
        let mut out = [0.0; N];
        for (slot, counter) in out.iter_mut().zip(counters) {
            let i = *counter as usize;
            let increase = self.newest_counters[i] - then[i];
            if !increase.is_finite() {
                return None;
            }
            *slot = increase;
        }
        Some((out, secs))
    }

    /// The snapshot a window of `window` seconds ending at the newest snapshot starts from: the
    /// newest one at or before its start, else the oldest; never one before `since`. `None`
    /// when that leaves fewer than two snapshots.
    fn base_index(&self, start: WindowStart, since: Ts) -> Option<usize> {
        let newest = self.snaps.len().checked_sub(1)?;
        let mut base = start.anchor;
        if self.snaps.get(base)?.ts < since {
            base = self.snaps.partition_point(|s| s.ts < since);
        }
        (base < newest).then_some(base)
    }

    /// Apply the retention policy after recording a snapshot at `now`.
    fn prune(&mut self, now: Ts) {
        while self.snaps.get(1).is_some_and(|s| s.ts <= now - RETAIN_SECS) {
            if let Some(old) = self.snaps.pop_front() {
                self.keep_spare(old);
            }
            self.thinned = self.thinned.saturating_sub(1);
        }
        let dense_from = now - DENSE_SECS;
        while self.thinned + 1 < self.snaps.len() {
            let Some(candidate) = self.snaps.get(self.thinned) else {
                break;
            };
            if candidate.ts >= dense_from {
                break;
            }
            let too_close = self
                .thinned
                .checked_sub(1)
                .and_then(|k| self.snaps.get(k))
                .is_some_and(|kept| candidate.ts - kept.ts < SPARSE_STEP_SECS);
            if too_close {
                if let Some(dropped) = self.snaps.remove(self.thinned) {
                    self.keep_spare(dropped);
                }
            } else {
                self.thinned += 1;
            }
        }
    }

    fn keep_spare(&mut self, snap: Snapshot) {
        if self.spare.len() < SPARE_SNAPSHOTS {
            self.spare.push(snap);
        }
    }

    fn clear(&mut self) {
        while let Some(old) = self.snaps.pop_front() {
            self.keep_spare(old);
        }
        self.thinned = 0;
        self.last_raw = [f64::NAN; Counter::COUNT];
        self.newest_counters = [f64::NAN; Counter::COUNT];
        for counts in &mut self.newest {
            counts.clear();
        }
        self.counter_since = [f64::NEG_INFINITY; Counter::COUNT];
        self.histogram_since = [f64::NEG_INFINITY; HistogramKind::COUNT];
    }
}

/// Bucket bounds compare as numbers ("120.0" = "120"); two `NaN` bounds count as the same.
fn same_bound(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Snapshots held at steady state for a scrape every `interval` seconds.
#[cfg(test)]
fn expected_len(interval: f64) -> usize {
    let interval = if interval.is_finite() && interval > 0.0 {
        interval
    } else {
        1.0
    };
    let dense = (DENSE_SECS / interval).ceil().min(4096.0) as usize + 1;
    let sparse = (RETAIN_SECS / SPARSE_STEP_SECS).ceil() as usize + 1;
    dense + sparse
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(total: f64) -> EngineSample {
        EngineSample {
            generation_tokens_total: Some(total),
            ..EngineSample::default()
        }
    }

    #[test]
    fn snapshot_count_stays_bounded_and_sparse_ones_are_spaced() {
        let mut w = SnapshotWindow::new();
        for t in 0..2000 {
            w.record(f64::from(t), &tokens(f64::from(t)));
        }
        assert!(w.len() <= expected_len(1.0));
        let times: Vec<f64> = w.snaps.iter().map(|s| s.ts).collect();
        // Newest 1999: dense span keeps 1979..=1999 (21 snapshots); the oldest kept one is at
        // or before 1999 - 330 = 1669.
        assert!(times.first().is_some_and(|t| *t <= 1669.0));
        assert!(times.get(1).is_some_and(|t| *t > 1669.0));
        let dense: Vec<f64> = times.iter().copied().filter(|t| *t >= 1979.0).collect();
        assert_eq!(dense.len(), 21);
        for pair in times.windows(2).filter(|p| p[1] < 1979.0) {
            assert!(pair[1] - pair[0] >= SPARSE_STEP_SECS, "{pair:?}");
        }
    }

    #[test]
    fn a_short_window_uses_the_exact_dense_base() {
        let mut w = SnapshotWindow::new();
        // 7 tokens per second, scraped every second for 100 s.
        for t in 0..=100 {
            w.record(f64::from(t), &tokens(7.0 * f64::from(t)));
        }
        assert_eq!(
            w.increase(Counter::GenerationTokens, 15.0),
            Some((105.0, 15.0))
        );
        assert_eq!(w.rate(Counter::GenerationTokens, 60.0), Some(7.0));
    }

    #[test]
    fn a_window_longer_than_the_history_uses_the_oldest_snapshot() {
        let mut w = SnapshotWindow::new();
        w.record(10.0, &tokens(0.0));
        assert_eq!(w.rate(Counter::GenerationTokens, 60.0), None);
        w.record(20.0, &tokens(50.0));
        assert_eq!(
            w.increase(Counter::GenerationTokens, 300.0),
            Some((50.0, 10.0))
        );
    }

    #[test]
    fn a_counter_that_appears_later_is_measured_from_its_first_reading() {
        let mut w = SnapshotWindow::new();
        w.record(0.0, &EngineSample::default());
        w.record(10.0, &tokens(100.0));
        assert_eq!(w.rate(Counter::GenerationTokens, 60.0), None);
        w.record(20.0, &tokens(160.0));
        assert_eq!(
            w.increase(Counter::GenerationTokens, 60.0),
            Some((60.0, 10.0))
        );
        // Never exported at all: unknown, not zero.
        assert_eq!(w.rate(Counter::Preemptions, 60.0), None);
    }

    #[test]
    fn failed_requests_need_an_abort_or_error_reason() {
        let mut s = EngineSample {
            request_success_total: vec![("stop".into(), 5.0), ("length".into(), 1.0)],
            ..EngineSample::default()
        };
        assert_eq!(Counter::RequestsFailed.read(&s), None);
        assert_eq!(Counter::RequestsFinished.read(&s), Some(6.0));
        s.request_success_total.push(("abort".into(), 2.0));
        s.request_success_total.push(("error".into(), 3.0));
        assert_eq!(Counter::RequestsFailed.read(&s), Some(5.0));
    }

    #[test]
    fn clock_stepping_back_restarts_the_window() {
        let mut w = SnapshotWindow::new();
        w.record(100.0, &tokens(0.0));
        w.record(101.0, &tokens(10.0));
        assert!(!w.record(50.0, &tokens(20.0)));
        assert_eq!(w.len(), 1);
        assert_eq!(w.rate(Counter::GenerationTokens, 60.0), None);
        // The same time again is ignored.
        w.record(50.0, &tokens(30.0));
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn unchanged_for_counts_back_to_the_last_move() {
        let mut w = SnapshotWindow::new();
        w.record(0.0, &tokens(10.0));
        assert_eq!(
            w.unchanged_for(Counter::GenerationTokens),
            None,
            "one snapshot"
        );
        w.record(1.0, &tokens(20.0));
        assert_eq!(w.unchanged_for(Counter::GenerationTokens), Some(0.0));
        for t in 2..=17 {
            w.record(f64::from(t), &tokens(20.0));
        }
        // Last moved between 0 s and 1 s: still since the snapshot at 1 s.
        assert_eq!(w.unchanged_for(Counter::GenerationTokens), Some(16.0));
        w.record(18.0, &tokens(21.0));
        assert_eq!(w.unchanged_for(Counter::GenerationTokens), Some(0.0));
        w.record(19.0, &EngineSample::default());
        assert_eq!(
            w.unchanged_for(Counter::GenerationTokens),
            None,
            "not exported"
        );
    }

    /// A histogram of `n` buckets whose cumulative counts grow with `total`, as a vLLM
    /// engine's do.
    fn latency(n: usize, total: f64) -> Histogram {
        Histogram {
            buckets: (0..n)
                .map(|k| Bucket {
                    le: if k + 1 == n {
                        f64::INFINITY
                    } else {
                        0.001 * 2f64.powi(k as i32)
                    },
                    count: (total * (k + 1) as f64 / n as f64).floor(),
                })
                .collect(),
            sum: Some(total * 0.1),
            count: Some(total),
        }
    }

    fn with_latencies(total: f64) -> EngineSample {
        EngineSample {
            generation_tokens_total: Some(total * 40.0),
            ttft: Some(latency(23, total)),
            itl: Some(latency(20, total * 40.0)),
            e2e: Some(latency(22, total)),
            queue_time: Some(latency(22, total)),
            tpot: Some(latency(20, total)),
            prefill_time: Some(latency(22, total)),
            decode_time: Some(latency(22, total)),
            ..EngineSample::default()
        }
    }

    #[test]
    fn window_deltas_read_the_packed_counts_back_exactly() {
        let mut w = SnapshotWindow::new();
        for t in 0..400 {
            w.record(f64::from(t), &with_latencies(1e6 + 37.0 * f64::from(t)));
        }
        let mut out = Vec::new();
        let cases = [
            (HistogramKind::Ttft, 23, 1.0, 10.0),
            (HistogramKind::Itl, 20, 40.0, 60.0),
            (HistogramKind::DecodeTime, 22, 1.0, 300.0),
        ];
        for (kind, n, scale, window) in cases {
            assert!(w.bucket_deltas(kind, window, &mut out));
            // The window starts at the newest snapshot kept at or before its start.
            let start = w.start_of(window).expect("a window");
            let base = w.snaps[start.anchor].ts;
            assert!(base <= 399.0 - window && base > 399.0 - window - SPARSE_STEP_SECS);
            let now = latency(n, (1e6 + 37.0 * 399.0) * scale);
            let then = latency(n, (1e6 + 37.0 * base) * scale);
            let expected: Vec<Bucket> = now
                .buckets
                .iter()
                .zip(&then.buckets)
                .map(|(a, b)| Bucket {
                    le: a.le,
                    count: a.count - b.count,
                })
                .collect();
            assert_eq!(out, expected, "{kind:?}");
        }
        // A full ring (84 snapshots here) of 19 counters and 151 bucket counts each, of an
        // engine that served a million requests: 55 KB packed, 148 KB as arrays and vectors of
        // `f64`.
        assert!(w.len() > 80 && w.len() <= expected_len(1.0), "{}", w.len());
        assert!(w.memory_bytes() < 60 << 10, "{}", w.memory_bytes());
    }

    #[test]
    fn a_histogram_whose_bucket_count_changed_has_no_window_until_two_snapshots_agree() {
        let mut w = SnapshotWindow::new();
        let mut out = Vec::new();
        w.record(0.0, &with_latencies(100.0));
        let mut fewer = with_latencies(200.0);
        fewer.ttft = Some(latency(10, 200.0));
        w.record(1.0, &fewer);
        assert!(!w.bucket_deltas(HistogramKind::Ttft, 60.0, &mut out));
        assert!(out.is_empty());
        assert!(w.bucket_deltas(HistogramKind::E2e, 60.0, &mut out));
        fewer.ttft = Some(latency(10, 300.0));
        w.record(2.0, &fewer);
        assert!(w.bucket_deltas(HistogramKind::Ttft, 60.0, &mut out));
        assert_eq!(out.len(), 10);
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn packed_snapshots_give_back_every_value_bit_for_bit(
            lists in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        (0u64..1 << 40).prop_map(|n| n as f64),
                        prop::num::f64::ANY,
                        Just(-0.0),
                        Just(9_007_199_254_740_993.0),
                        (-(1i64 << 53) + 1..1i64 << 53).prop_map(|n| n as f64),
                    ],
                    0..30,
                ),
                SECTIONS,
            )
        ) {
            let mut packed = Packed::default();
            packed.push_counts(HistogramKind::Ttft, &[1.0, 2.0]);
            packed.clear();
            let (counters, histograms) = lists.split_first().expect("a list for the counters");
            packed.push_counters(counters);
            for (kind, list) in HistogramKind::ALL.into_iter().zip(histograms) {
                packed.push_counts(kind, list);
            }
            // NaN comes back as the NaN Rust makes (its payload is not kept).
            let bits = |v: f64| if v.is_nan() { f64::NAN.to_bits() } else { v.to_bits() };
            let sent = |list: &[f64]| list.iter().map(|v| bits(*v)).collect::<Vec<u64>>();
            // As packed, and as the ring holds it (padded: counts read eight bytes at a time).
            let mut held = Packed::default();
            held.copy_from(&packed);
            for packed in [&packed, &held] {
                prop_assert_eq!(packed.counters().map(bits).collect::<Vec<_>>(), sent(counters));
                for (kind, list) in HistogramKind::ALL.into_iter().zip(histograms) {
                    let back = packed.counts(kind).map(bits).collect::<Vec<_>>();
                    prop_assert_eq!(back, sent(list));
                }
            }
        }
    }
}
