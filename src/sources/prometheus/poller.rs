//! The Prometheus worker: at start-up one backfill (range queries over the chart range), then
//! every interval one cycle of instant queries, all sent at once; results go to the app loop as
//! [`SourceReport`]s. The window follows the console's (`w`) through a watch channel.

use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::watch;

use crate::sources::Outbox;
use crate::sources::scrape::off_runtime;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::client::{PromClient, RawAnswer};
use super::decode::decode_answer;
use super::merge::{CycleMerge, RangeMerge};
use super::query::{LabelMap, QueryPlan, QuerySpec};
use super::targets::{
    ActiveTarget, decode_targets, engine_targets, longest_interval, no_targets_api,
    targets_from_up, up_query,
};
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{
    BackfillReport, DerivedPayload, DerivedReport, QuantileWindow, QueryFailure, ScrapeError,
    SourceReport,
};
use std::collections::BTreeSet;

/// Most points one backfill series is read with: a chart is at most a few hundred cells wide.
pub(crate) const BACKFILL_POINTS: f64 = 300.0;

/// How often the worker polls and what it reads.
#[derive(Debug, Clone)]
pub struct PollSettings {
    pub interval: Duration,
    /// History read at start-up (zero: none).
    pub backfill: Duration,
    /// Slow queries (`cache_config_info`) are sent every this many cycles.
    pub slow_every: u32,
    /// Bound on each backfill query, and how many times the backfill is tried.
    pub backfill_timeout: Duration,
    pub backfill_attempts: u32,
    /// Jobs whose targets are engines from the first cycle.
    pub engine_jobs: Vec<String>,
}

impl PollSettings {
    /// Polling every `interval`, reading `backfill` of history at start-up, with the other
    /// settings at their defaults.
    pub fn new(interval: Duration, backfill: Duration, slow_every: u32) -> Self {
        PollSettings {
            interval,
            backfill,
            slow_every,
            backfill_timeout: Duration::from_secs(30),
            backfill_attempts: 3,
            engine_jobs: Vec::new(),
        }
    }
}

/// What a worker keeps between cycles: the last answer to the slow queries (reused between
/// their cycles), the jobs known to serve engines, and the longest scrape interval of their
/// targets.
#[derive(Debug, Default)]
pub struct SlowAnswers {
    answers: Vec<(QuerySpec, RawAnswer)>,
    cycles_since: Option<u32>,
    engine_jobs: BTreeSet<String>,
    scrape_interval: Option<f64>,
    /// Whether the targets were asked for yet.
    targets_asked: bool,
    /// The server has no targets API (404): targets are read from `up`.
    targets_from_up: bool,
}

impl SlowAnswers {
    /// A worker's memory that counts the targets of `jobs` as engines from the first cycle,
    /// before any of their series is seen.
    pub fn with_engine_jobs(jobs: impl IntoIterator<Item = String>) -> Self {
        SlowAnswers {
            engine_jobs: jobs.into_iter().collect(),
            ..SlowAnswers::default()
        }
    }

    /// The longest scrape interval of the engine targets, seconds, when the server said.
    pub fn scrape_interval(&self) -> Option<f64> {
        self.scrape_interval
    }
}

/// One cycle: every query of `plan` at once (and the slow ones when due), evaluated at `time`
/// (`None`: the server's now), merged per engine.
///
/// Queries that fail while others answer are listed in the payload; when none answers, the
/// first failure is the cycle's error.
pub async fn poll_once(
    client: &PromClient,
    plan: &QueryPlan,
    time: Option<f64>,
    slow: &mut SlowAnswers,
    slow_every: u32,
) -> Result<DerivedPayload, ScrapeError> {
    // The first cycle learns the scrape intervals before choosing its window.
    let early_targets = if slow.targets_asked {
        None
    } else {
        slow.targets_asked = true;
        let targets =
            read_targets(client, plan, time, slow.targets_from_up, &slow.engine_jobs).await;
        learn_interval(plan, slow, &targets);
        Some(targets)
    };
    let plan = &plan.with_scrape_interval(slow.scrape_interval.or(plan.scrape_interval()));
    let mut queries = plan.every_cycle();
    let slow_due = slow
        .cycles_since
        .is_none_or(|n| n.saturating_add(1) >= slow_every.max(1));
    let fresh_slow = if slow_due { plan.slow() } else { Vec::new() };
    let fresh_count = fresh_slow.len();
    queries.extend(fresh_slow);
    let (answers, targets) = match early_targets {
        Some(targets) => (
            join_all(queries.iter().map(|q| client.query(&q.promql, time))).await,
            targets,
        ),
        None => {
            futures_util::join!(
                join_all(queries.iter().map(|q| client.query(&q.promql, time))),
                read_targets(client, plan, time, slow.targets_from_up, &slow.engine_jobs)
            )
        }
    };

    let results: Vec<(QuerySpec, Result<RawAnswer, ScrapeError>)> =
        queries.into_iter().zip(answers).collect();
    let sent = plan.every_cycle().len() + fresh_count;
    let bytes = results
        .iter()
        .filter_map(|(_, result)| result.as_ref().ok())
        .chain(slow.answers.iter().map(|(_, raw)| raw))
        .map(|raw| raw.body.len())
        .sum();
    let mut kept = Kept {
        answers: std::mem::take(&mut slow.answers),
        cycles_since: slow.cycles_since,
        engine_jobs: slow.engine_jobs.clone(),
    };
    // Should the merge fail outright, the next cycle asks the slow queries again.
    slow.cycles_since = None;
    let cycle_plan = plan.clone();
    let (merged, kept) = off_runtime(bytes, move || {
        let merged = merge_answers(&cycle_plan, results, slow_due, fresh_count, sent, &mut kept);
        (merged, kept)
    })
    .await?;
    slow.answers = kept.answers;
    slow.cycles_since = kept.cycles_since;
    slow.engine_jobs = kept.engine_jobs;
    let mut payload = merged?;
    let (targets, from_up) = targets;
    slow.targets_from_up |= from_up;
    payload.targets = match targets {
        Ok(all) => Some(engine_targets(plan.labels(), &all, &slow.engine_jobs)),
        Err(error) => {
            // Neither the targets API nor `up` answered: engines are known from their series
            // alone this cycle.
            tracing::debug!(%error, "no scrape targets from the source");
            None
        }
    };
    if let Some(targets) = &payload.targets {
        if let Some(longest) = longest_interval(targets) {
            slow.scrape_interval = Some(longest);
        }
    }
    Ok(payload)
}

/// The server's scrape targets: from its targets API, or, where it has none (Thanos Query,
/// Mimir, a VictoriaMetrics cluster) or it fails, from the `up` series of the engine jobs.
/// The flag is true once the server said it has no targets API: later cycles go to `up`
/// straight away.
pub(crate) async fn read_targets(
    client: &PromClient,
    plan: &QueryPlan,
    time: Option<f64>,
    from_up: bool,
    jobs: &BTreeSet<String>,
) -> (Result<Vec<ActiveTarget>, ScrapeError>, bool) {
    let mut missing = from_up;
    if !from_up {
        let listed = match client.targets().await {
            Ok(raw) => off_runtime(raw.body.len(), move || {
                decode_targets(raw.status, &raw.body)
            })
            .await
            .and_then(|decoded| decoded),
            Err(error) => Err(error),
        };
        match listed {
            Ok(targets) => return (Ok(targets), false),
            Err(error) => missing = no_targets_api(&error),
        }
    }
    let up = match client.query(&up_query(plan.labels(), jobs), time).await {
        Ok(raw) => off_runtime(raw.body.len(), move || {
            decode_answer(raw.status, &raw.body).map(|answer| targets_from_up(&answer))
        })
        .await
        .and_then(|decoded| decoded),
        Err(error) => Err(error),
    };
    (up, missing)
}

/// The longest scrape interval of the engine targets in a targets answer, remembered.
pub(crate) fn learn_interval(
    plan: &QueryPlan,
    slow: &mut SlowAnswers,
    targets: &(Result<Vec<ActiveTarget>, ScrapeError>, bool),
) {
    let Ok(all) = &targets.0 else {
        return;
    };
    let jobs = &slow.engine_jobs;
    let known = engine_targets(plan.labels(), all, jobs);
    // Before any series names a job, every target's interval counts: the window must not
    // start too short.
    let interval = if known.is_empty() {
        all.iter()
            .filter_map(|t| t.scrape_interval)
            .fold(None, |max: Option<f64>, i| {
                Some(max.map_or(i, |m| m.max(i)))
            })
    } else {
        longest_interval(&known)
    };
    if interval.is_some() {
        slow.scrape_interval = interval;
    }
}

/// What a cycle carries over to the next, handed to the merge and back.
struct Kept {
    answers: Vec<(QuerySpec, RawAnswer)>,
    cycles_since: Option<u32>,
    engine_jobs: BTreeSet<String>,
}

/// Merge a cycle's answers, with the slow ones: this cycle's when all of them answered (they
/// are then kept), else the last good ones kept.
fn merge_answers(
    plan: &QueryPlan,
    mut results: Vec<(QuerySpec, Result<RawAnswer, ScrapeError>)>,
    slow_due: bool,
    fresh_count: usize,
    sent: usize,
    kept: &mut Kept,
) -> Result<DerivedPayload, ScrapeError> {
    if slow_due {
        let fresh: Vec<(QuerySpec, RawAnswer)> = results
            .iter()
            .skip(results.len().saturating_sub(fresh_count))
            .filter_map(|(q, r)| match r {
                Ok(raw) if decode_answer(raw.status, &raw.body).is_ok() => {
                    Some((q.clone(), raw.clone()))
                }
                _ => None,
            })
            .collect();
        if fresh.len() == fresh_count {
            kept.answers = fresh;
            kept.cycles_since = Some(0);
        } else {
            // Keep using the last good answers until a fresh one comes.
            results.extend(kept.answers.iter().map(|(q, a)| (q.clone(), Ok(a.clone()))));
        }
    } else {
        kept.cycles_since = kept.cycles_since.map(|n| n.saturating_add(1));
        results.extend(kept.answers.iter().map(|(q, a)| (q.clone(), Ok(a.clone()))));
    }
    merge_cycle(plan, results, sent, &mut kept.engine_jobs)
}

fn merge_cycle(
    plan: &QueryPlan,
    results: Vec<(QuerySpec, Result<RawAnswer, ScrapeError>)>,
    sent: usize,
    engine_jobs: &mut BTreeSet<String>,
) -> Result<DerivedPayload, ScrapeError> {
    let mut merge = CycleMerge::new(plan.labels());
    let mut failures = Vec::new();
    let mut bytes = 0;
    let mut answered = 0;
    for (spec, result) in &results {
        let decoded = result.as_ref().map_err(Clone::clone).and_then(|raw| {
            bytes += raw.body.len();
            decode_answer(raw.status, &raw.body)
        });
        match decoded {
            Ok(answer) => {
                answered += 1;
                merge.add(spec, &answer);
            }
            Err(error) => failures.push(QueryFailure {
                signal: spec.signal.to_owned(),
                error,
            }),
        }
    }
    if answered == 0 {
        return Err(failures
            .into_iter()
            .next()
            .map_or(ScrapeError::Empty, |f| f.error));
    }
    engine_jobs.extend(merge.engine_jobs().iter().cloned());
    let models = merge.models();
    let (engines, gpus) = merge.finish();
    Ok(DerivedPayload {
        engines,
        gpus,
        queries: sent,
        failures,
        bytes,
        targets: None,
        window_secs: Some(plan.window_secs()),
        models,
    })
}

/// The history of the last `range` seconds up to `end`, one point per `step` seconds.
pub async fn backfill_once(
    client: &PromClient,
    plan: &QueryPlan,
    end: f64,
    range: f64,
    step: f64,
) -> Result<BackfillReport, ScrapeError> {
    let queries = plan.backfill();
    let start = end - range;
    let answers = join_all(
        queries
            .iter()
            .map(|q| client.query_range(&q.promql, start, end, step)),
    )
    .await;
    let bytes = answers
        .iter()
        .filter_map(|answer| answer.as_ref().ok())
        .map(|raw| raw.body.len())
        .sum();
    let labels = plan.labels().clone();
    let source = client.url().to_owned();
    off_runtime(bytes, move || {
        merge_range(&labels, &queries, &answers, source)
    })
    .await?
}

/// Merge the answers of the backfill's range queries into the history it reports.
fn merge_range(
    labels: &LabelMap,
    queries: &[QuerySpec],
    answers: &[Result<RawAnswer, ScrapeError>],
    source: String,
) -> Result<BackfillReport, ScrapeError> {
    let mut merge = RangeMerge::new(labels);
    let mut first_error = None;
    let mut failed = Vec::new();
    let mut answered = 0;
    for (spec, result) in queries.iter().zip(answers) {
        let decoded = result
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|raw| decode_answer(raw.status, &raw.body));
        match decoded {
            Ok(answer) => {
                answered += 1;
                merge.add(spec, &answer);
            }
            Err(error) => {
                tracing::warn!(signal = spec.signal, %error, "Prometheus backfill query failed");
                failed.push(spec.signal);
                first_error.get_or_insert(error);
            }
        }
    }
    if answered == 0 {
        return Err(first_error.unwrap_or(ScrapeError::Empty));
    }
    let failure =
        first_error.map(|error| format!("history of {} not read: {error}", failed.join(", ")));
    Ok(BackfillReport {
        source,
        series: merge.finish(),
        failure,
    })
}

/// The backfill of the worker: each query bounded by its own timeout, the whole tried again a
/// few times; a failure is reported so it shows with the source.
async fn backfill(
    client: &PromClient,
    plan: &QueryPlan,
    settings: &PollSettings,
) -> BackfillReport {
    let client = client.with_timeout(settings.backfill_timeout);
    let step = backfill_step(settings.interval, settings.backfill);
    let attempts = settings.backfill_attempts.max(1);
    let mut last_error = ScrapeError::Empty;
    for attempt in 1..=attempts {
        let end = unix_now();
        match backfill_once(&client, plan, end, settings.backfill.as_secs_f64(), step).await {
            Ok(report) => return report,
            Err(error) => {
                tracing::warn!(%error, attempt, "Prometheus backfill failed");
                last_error = error;
            }
        }
        if attempt < attempts {
            tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
        }
    }
    BackfillReport {
        source: client.url().to_owned(),
        series: Vec::new(),
        failure: Some(format!(
            "history not read ({attempts} attempts): {last_error}"
        )),
    }
}

/// The step of a backfill: the interval, or coarser so a series has at most
/// [`BACKFILL_POINTS`] points.
pub fn backfill_step(interval: Duration, range: Duration) -> f64 {
    interval
        .as_secs_f64()
        .max(range.as_secs_f64() / BACKFILL_POINTS)
        .max(0.001)
}

/// The running worker. Dropping it stops it.
pub struct Poller {
    handle: JoinHandle<()>,
}

impl Poller {
    /// Start polling: backfill first (when asked), then a cycle every interval, the first at
    /// once. The window is read from `window` before each cycle.
    pub fn start(
        client: PromClient,
        plan: QueryPlan,
        settings: PollSettings,
        events: Outbox<SourceReport>,
        mut window: watch::Receiver<QuantileWindow>,
    ) -> Self {
        let handle = tokio::spawn(async move {
            let source = client.url().to_owned();
            let mut plan = plan;
            let mut slow = SlowAnswers::with_engine_jobs(settings.engine_jobs.clone());
            if !settings.backfill.is_zero() && !plan.backfill().is_empty() {
                // The history's rates over the window the first cycle will use.
                let targets = read_targets(&client, &plan, None, false, &slow.engine_jobs).await;
                learn_interval(&plan, &mut slow, &targets);
                slow.targets_from_up |= targets.1;
                let windowed = plan.with_scrape_interval(slow.scrape_interval);
                let report = backfill(&client, &windowed, &settings).await;
                if !events.send(SourceReport::Backfill(report)).await {
                    return;
                }
            }
            let mut ticker = tokio::time::interval(settings.interval);
            ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let current = *window.borrow_and_update();
                if current != plan.window() {
                    plan = plan.with_window(current);
                }
                let started = Instant::now();
                let outcome = poll_once(&client, &plan, None, &mut slow, settings.slow_every).await;
                let report = DerivedReport {
                    source: source.clone(),
                    at: unix_now(),
                    took: started.elapsed().as_secs_f64(),
                    outcome,
                };
                if !events.send(SourceReport::Cycle(report)).await {
                    break; // the console is gone
                }
            }
        });
        Poller { handle }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backfill_steps_keep_series_short() {
        // 5 min at 1 s: 300 points at the interval.
        assert_eq!(
            backfill_step(Duration::from_secs(1), Duration::from_secs(300)),
            1.0
        );
        // 1 h at 1 s would be 3600 points: 12 s steps give 300.
        assert_eq!(
            backfill_step(Duration::from_secs(1), Duration::from_secs(3600)),
            12.0
        );
        assert_eq!(
            backfill_step(Duration::from_secs(5), Duration::from_secs(60)),
            5.0
        );
    }

    #[test]
    fn a_cycle_without_any_answer_is_the_first_failure() {
        let plan = QueryPlan::new(
            super::super::query::LabelMap::default(),
            QuantileWindow::M1,
            false,
        );
        let results = plan
            .every_cycle()
            .into_iter()
            .map(|q| (q, Err(ScrapeError::Refused)))
            .collect();
        assert_eq!(
            merge_cycle(&plan, results, 16, &mut BTreeSet::new()),
            Err(ScrapeError::Refused)
        );
    }

    #[test]
    fn failed_queries_are_listed_beside_the_answers() {
        let plan = QueryPlan::new(
            super::super::query::LabelMap::default(),
            QuantileWindow::M1,
            false,
        );
        let ok = RawAnswer {
            status: 200,
            body: br#"{"status":"success","data":{"resultType":"vector","result":[
                {"metric":{"pod":"a","model_name":"m"},"value":[1,"2"]}]}}"#
                .to_vec(),
        };
        let bad = RawAnswer {
            status: 422,
            body: br#"{"status":"error","errorType":"execution","error":"query timed out"}"#
                .to_vec(),
        };
        let results: Vec<(QuerySpec, Result<RawAnswer, ScrapeError>)> = plan
            .every_cycle()
            .into_iter()
            .map(|q| {
                let answer = if q.signal == "ttft" {
                    bad.clone()
                } else {
                    ok.clone()
                };
                (q, Ok(answer))
            })
            .collect();
        let payload =
            merge_cycle(&plan, results, 16, &mut BTreeSet::new()).expect("partial answer");
        assert_eq!(payload.engines.len(), 1);
        assert_eq!(payload.engines[0].signals.running, Some(2.0));
        assert_eq!(
            payload.failures,
            [QueryFailure {
                signal: "ttft".into(),
                error: ScrapeError::Http {
                    status: 422,
                    reason: Some("execution: query timed out".into())
                }
            }]
        );
        assert_eq!(payload.queries, 16);
    }
}
