//! A past window read from Prometheus (`kvtop check --prometheus URL --from --to`, and the
//! console on a past window): one `query_range` per query of the live cycle plan, each answer
//! split per evaluation time into the instant answers a live cycle at that time would have
//! got, and merged by the same [`CycleMerge`] into the same [`DerivedPayload`]. What comes
//! out is a cycle per step, as the live poller would have produced then. Histogram quantiles
//! are the exception: their bucket rates are read instead and the quantiles derived here as
//! Prometheus derives them (`QueryPlan::past_window_cycle`, `super::buckets`), which costs
//! the server a fraction of evaluating `histogram_quantile` over a range.
//!
//! A series without a point at a step is absent from that step's answer, as it would have
//! been from an instant query then: nothing is filled in, so an engine missing at a step is
//! "not in Prometheus' answer" there (Stale, then Down), exactly as live.
//!
//! The window is read in chunks of at most [`CHUNK_STEPS`] steps: Prometheus refuses a range
//! query of more than 11,000 points per series, and a chunk's answers are all the memory a
//! replay holds at once, so the steps of a chunk are sized from the bytes the last one read
//! (and halved, and the chunk read again, when an answer was over the body limit).

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::buckets::PastQuantiles;
use super::client::{PromClient, RawAnswer};
use super::decode::{Answer, Item, decode_answer};
use super::merge::CycleMerge;
use super::poller::{SlowAnswers, backfill_once, backfill_step, learn_interval, read_targets};
use super::query::{QueryPlan, QuerySpec, Shape};
use crate::sources::scrape::off_runtime;
use kvtop_core::fleet::{
    BackfillReport, DerivedPayload, DerivedReport, QueryFailure, ScrapeError, Ts,
};

/// Most steps per range query: well under Prometheus' limit of 11,000 points per series.
pub const CHUNK_STEPS: usize = 1_000;

/// Range queries of a chunk in flight at once. More do not finish sooner: Prometheus runs
/// each on the same few cores, and with every query of a chunk at once (36 for a fleet) it
/// spent almost twice the time (measured: an hour of 100 engines' answers took 6.2 s
/// gzipped with all at once, 3.3 s four at a time).
const CONCURRENT_QUERIES: usize = 4;

/// Steps of the first chunk, before the size of the fleet's answers is known.
const FIRST_CHUNK_STEPS: usize = 120;

/// Bytes of answers a chunk aims at: a histogram's bucket rates are a series per bucket and
/// engine, so the steps per chunk follow the fleet's size and a chunk's answers (all the
/// memory a replay holds at once) stay bounded.
const CHUNK_BYTES: usize = 24 << 20;

/// Most steps a window may have (a week at 1 s): beyond it, a coarser `--step` is needed.
pub const MAX_STEPS: usize = 604_800;

/// A past window: evaluation times `start`, `start + step`, … up to `end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PastWindow {
    pub start: Ts,
    pub end: Ts,
    pub step: f64,
}

/// Why a window cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WindowError {
    #[error("the window ends before it starts")]
    Reversed,
    #[error("the step must be a positive number of seconds")]
    BadStep,
    #[error(
        "the window has {steps} steps of {step}s, more than {MAX_STEPS}: pass a coarser --step"
    )]
    TooManySteps { steps: usize, step: f64 },
}

impl PastWindow {
    /// A window of at most [`MAX_STEPS`] steps.
    pub fn new(start: Ts, end: Ts, step: f64) -> Result<Self, WindowError> {
        if !(step.is_finite() && step > 0.0) {
            return Err(WindowError::BadStep);
        }
        if !(start.is_finite() && end.is_finite()) || end < start {
            return Err(WindowError::Reversed);
        }
        let window = PastWindow { start, end, step };
        let steps = window.steps();
        if steps > MAX_STEPS {
            return Err(WindowError::TooManySteps { steps, step });
        }
        Ok(window)
    }

    /// How many evaluation times the window has (its start included).
    pub fn steps(&self) -> usize {
        // The small tolerance keeps `end` when it is a whole number of steps away but the
        // division lands just under.
        let span = ((self.end - self.start) / self.step + 1e-9).floor();
        if span.is_finite() && span >= 0.0 {
            span as usize + 1
        } else {
            0
        }
    }

    /// The `index`th evaluation time.
    pub fn time(&self, index: usize) -> Ts {
        self.start + index as f64 * self.step
    }
}

/// Reads a past window chunk by chunk, each chunk giving the cycles of its steps in order.
#[derive(Debug)]
pub struct WindowReader {
    client: PromClient,
    plan: QueryPlan,
    window: PastWindow,
    /// Seconds of history read before the window, as a console starting then would read.
    history: f64,
    next: usize,
    /// Steps of the next chunk.
    chunk_steps: usize,
}

impl WindowReader {
    /// A reader of `window` with the queries of `plan` (its rate window as the live cycle
    /// would choose it for the source's scrape interval), and `history` seconds before it.
    pub fn new(client: PromClient, plan: QueryPlan, window: PastWindow, history: f64) -> Self {
        WindowReader {
            client,
            plan,
            window,
            history,
            next: 0,
            chunk_steps: FIRST_CHUNK_STEPS,
        }
    }

    /// The history before the window: what a console started at the window's first step
    /// would have read at start-up (the live backfill, up to the step before). Its engines are
    /// known from the start, so one already gone when the window starts is a DOWN row, "not in
    /// the answer", rather than never listed (how soon a server stops answering for a series
    /// differs: Prometheus looks back 5 minutes, VictoriaMetrics about two scrape intervals).
    /// `None` when no history is read.
    pub async fn history(&self) -> Option<BackfillReport> {
        if !(self.history.is_finite() && self.history > 0.0) {
            return None;
        }
        let step = backfill_step(
            Duration::from_secs_f64(self.window.step),
            Duration::from_secs_f64(self.history),
        );
        let end = self.window.start - self.window.step;
        Some(
            match backfill_once(&self.client, &self.plan, end, self.history, step).await {
                Ok(report) => report,
                Err(error) => BackfillReport {
                    source: self.client.url().to_owned(),
                    series: Vec::new(),
                    failure: Some(format!("history before the window not read: {error}")),
                },
            },
        )
    }

    pub fn window(&self) -> PastWindow {
        self.window
    }

    /// The source's name in the fleet (its URL), as the live poller names it.
    pub fn source(&self) -> &str {
        self.client.url()
    }

    /// The next chunk's cycles, oldest first; `None` once the window is read.
    pub async fn next_chunk(&mut self) -> Option<Vec<DerivedReport>> {
        let total = self.window.steps();
        if self.next >= total {
            return None;
        }
        let first = self.next;
        let queries: Vec<QuerySpec> = self
            .plan
            .past_window_cycle()
            .into_iter()
            .chain(self.plan.slow())
            .collect();
        let (last, answers, took) = loop {
            let mut steps = self.chunk_steps.clamp(1, CHUNK_STEPS);
            // A short remainder joins this chunk rather than costing a round of its own.
            if total - first <= steps + steps / 4 {
                steps = total - first;
            }
            let last = (first + steps).min(total) - 1;
            let (start, end) = (self.window.time(first), self.window.time(last));
            let began = Instant::now();
            // Collected first: a stream of a borrowing closure's futures is not `Send` enough
            // for a spawned task.
            let reads: Vec<_> = queries
                .iter()
                .map(|q| {
                    self.client
                        .query_range(&q.promql, start, end, self.window.step)
                })
                .collect();
            let answers: Vec<_> = futures_util::stream::iter(reads)
                .buffered(CONCURRENT_QUERIES)
                .collect()
                .await;
            let took = began.elapsed().as_secs_f64();
            let too_large = answers
                .iter()
                .any(|a| matches!(a, Err(ScrapeError::TooLarge { .. })));
            if too_large && steps > 1 {
                self.chunk_steps = steps / 2;
                continue;
            }
            let bytes: usize = answers
                .iter()
                .filter_map(|a| a.as_ref().ok())
                .map(|a| a.body.len())
                .sum();
            let read = last + 1 - first;
            self.chunk_steps = if bytes == 0 {
                CHUNK_STEPS
            } else {
                (read as f64 * CHUNK_BYTES as f64 / bytes as f64) as usize
            }
            .clamp(1, CHUNK_STEPS);
            break (last, answers, took);
        };
        self.next = last + 1;
        let times: Vec<Ts> = (first..=last).map(|i| self.window.time(i)).collect();
        let bytes = answers
            .iter()
            .filter_map(|a| a.as_ref().ok())
            .map(|a| a.body.len())
            .sum();
        let plan = self.plan.clone();
        let split_times = times.clone();
        let outcomes = off_runtime(bytes, move || {
            split_cycles(&plan, &queries, &answers, &split_times)
        })
        .await
        .unwrap_or_else(|error| times.iter().map(|_| Err(error.clone())).collect());
        Some(
            times
                .into_iter()
                .zip(outcomes)
                .map(|(at, outcome)| DerivedReport {
                    source: self.client.url().to_owned(),
                    at,
                    // The cycle's data came with its chunk: the chunk's round trip.
                    took,
                    outcome,
                })
                .collect(),
        )
    }
}

/// The scrape interval the source's targets declare, as the live poller learns it before its
/// first cycle (`None` when the server does not say).
pub async fn scrape_interval(
    client: &PromClient,
    plan: &QueryPlan,
    engine_jobs: &[String],
) -> Option<f64> {
    let mut slow = SlowAnswers::with_engine_jobs(engine_jobs.iter().cloned());
    let jobs = engine_jobs.iter().cloned().collect();
    let targets = read_targets(client, plan, None, false, &jobs).await;
    learn_interval(plan, &mut slow, &targets);
    slow.scrape_interval()
}

/// One chunk's range answers split into one cycle per time of `times`.
///
/// A query that failed, or whose answer does not decode, is a failed query of every cycle of
/// the chunk; when all failed, each cycle is the first failure, as a live cycle would be.
pub fn split_cycles(
    plan: &QueryPlan,
    queries: &[QuerySpec],
    answers: &[Result<RawAnswer, ScrapeError>],
    times: &[Ts],
) -> Vec<Result<DerivedPayload, ScrapeError>> {
    let mut bytes = 0;
    let mut decoded: Vec<(&QuerySpec, Answer<'_>)> = Vec::new();
    let mut failures: Vec<QueryFailure> = Vec::new();
    let mut failed: Vec<&QuerySpec> = Vec::new();
    for (spec, result) in queries.iter().zip(answers) {
        let answer = result.as_ref().map_err(Clone::clone).and_then(|raw| {
            bytes += raw.body.len();
            decode_answer(raw.status, &raw.body)
        });
        match answer {
            Ok(answer) => decoded.push((spec, answer)),
            Err(error) => {
                failed.push(spec);
                failures.push(QueryFailure {
                    signal: spec.signal.to_owned(),
                    error,
                })
            }
        }
    }
    if decoded.is_empty() {
        let error = failures
            .into_iter()
            .next()
            .map_or(ScrapeError::Empty, |f| f.error);
        return times.iter().map(|_| Err(error.clone())).collect();
    }
    // The bytes read are the chunk's; each cycle is given its share.
    let share = bytes / times.len().max(1);
    // Histograms' bucket rates give their quantiles step by step; the rest are split per step.
    let (buckets, decoded): (Vec<_>, Vec<_>) = decoded
        .iter()
        .partition(|(spec, _)| matches!(spec.shape, Shape::BucketRates { .. }));
    let buckets: Vec<(&QuerySpec, &Answer<'_>)> = buckets
        .iter()
        .map(|(spec, answer)| (*spec, answer))
        .collect();
    let mut quantiles = PastQuantiles::new(plan.labels(), &buckets, &failed);
    let mut cursors: Vec<Vec<usize>> = decoded
        .iter()
        .map(|(_, answer)| vec![0; answer.series.len()])
        .collect();
    times
        .iter()
        .map(|&at| {
            let mut merge = CycleMerge::new(plan.labels());
            for ((spec, answer), cursors) in decoded.iter().zip(cursors.iter_mut()) {
                let series = points_at(&answer.series, cursors, at);
                merge.add(
                    spec,
                    &Answer {
                        series,
                        warnings: Vec::new(),
                    },
                );
            }
            quantiles.step(at, &mut merge);
            let models = merge.models();
            let (engines, gpus) = merge.finish();
            Ok(DerivedPayload {
                engines,
                gpus,
                queries: queries.len(),
                failures: failures.clone(),
                bytes: share,
                targets: None,
                window_secs: Some(plan.window_secs()),
                models,
            })
        })
        .collect()
}

/// The series of a range answer that have a point at `at`, as instant-answer items; each
/// series' cursor moves past the points before `at` (times only grow between calls).
fn points_at<'a>(series: &[Item<'a>], cursors: &mut [usize], at: Ts) -> Vec<Item<'a>> {
    let wanted = millis(at);
    let mut found = Vec::new();
    for (item, cursor) in series.iter().zip(cursors.iter_mut()) {
        while item.point_time(*cursor).is_some_and(|t| millis(t) < wanted) {
            *cursor += 1;
        }
        if item
            .point_time(*cursor)
            .is_some_and(|t| millis(t) == wanted)
        {
            if let Some(instant) = item.instant_at(*cursor) {
                found.push(instant);
            }
            *cursor += 1;
        }
    }
    found
}

/// Evaluation times to whole milliseconds, so answers' times and the window's line up.
pub(crate) fn millis(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

#[cfg(test)]
mod tests;
