//! `kvtop check --prometheus URL --from --to`: the rules over a past window of a Prometheus
//! server. Each step of the window is one live cycle as it would have run then (see
//! `sources::prometheus::replay`): its payload goes into the fleet model as the live poller's
//! would, the fleet ticks and the rules evaluate at the step's time. The steps of a lead-in
//! before the window are evaluated but not reported, so a rule's `for` can have started before
//! the window, as it would have on a console running then.

use std::collections::BTreeMap;

use super::TargetLogs;
use super::episodes::Episodes;
use super::inputs;
use super::observe::{Observation, Progress};
use crate::sources::prometheus::replay::WindowReader;
use kvtop_core::fleet::{Fleet, FleetSettings, SourceReport, Ts};
use kvtop_core::rules::{RuleEngine, RuleSet};

/// The lead-in before a window: the longest `for` among the enabled rules, at most this.
pub const MAX_LEAD_IN_SECS: f64 = 300.0;

/// How long before the window to start evaluating so `rules`' `for` durations can be met at
/// its start.
pub fn lead_in(rules: &RuleSet) -> f64 {
    rules
        .rules()
        .iter()
        .map(|r| r.for_secs)
        .fold(0.0, f64::max)
        .min(MAX_LEAD_IN_SECS)
}

/// Queries that failed somewhere in the window: their signal, how many steps, and the first
/// error (a range query that timed out leaves its signals unknown for its whole chunk).
pub type FailedQueries = BTreeMap<String, (usize, String)>;

/// Read the reader's window and evaluate `rules` at each step; the steps before `from` only
/// feed the fleet and the rules' state. The observation's interval is the step.
pub async fn replay(
    mut reader: WindowReader,
    from: Ts,
    rules: &RuleSet,
    settings: FleetSettings,
    progress: &mut dyn Progress,
) -> (Observation, FailedQueries) {
    let mut failed = FailedQueries::new();
    let window = reader.window();
    let mut fleet = Fleet::new(FleetSettings {
        interval: window.step,
        ..settings
    });
    fleet.add_source(reader.source(), reader.source());
    let mut engine = RuleEngine::new(rules);
    let mut parts = inputs::FleetParts::for_rules(rules.rules());
    let logs = TargetLogs::default();
    let mut episodes = Episodes::default();
    let mut findings = Vec::new();
    let (mut started, mut ended, mut cycles) = (None::<Ts>, None::<Ts>, 0u32);
    // Prometheus answers for a window without data too: the window had data when some
    // cycle named an engine or a GPU.
    let mut any_data = false;
    if let Some(history) = reader.history().await {
        fleet.ingest_source(SourceReport::Backfill(history));
    }
    progress.planned((window.end - from).max(0.0), None, 1.0);
    while let Some(chunk) = reader.next_chunk().await {
        for report in chunk {
            let at = report.at;
            match &report.outcome {
                Ok(payload) => {
                    for f in &payload.failures {
                        let entry = failed
                            .entry(f.signal.clone())
                            .or_insert_with(|| (0, f.error.to_string()));
                        entry.0 += 1;
                    }
                }
                Err(error) => {
                    let entry = failed
                        .entry("every query".to_owned())
                        .or_insert_with(|| (0, error.to_string()));
                    entry.0 += 1;
                }
            }
            any_data |= report.outcome.as_ref().is_ok_and(|p| {
                !p.engines.is_empty() || p.gpus.as_ref().is_some_and(|g| !g.is_empty())
            });
            fleet.ingest_source(SourceReport::Cycle(report));
            fleet.tick(at);
            parts.refresh(&fleet);
            let cycle_inputs = inputs::engine_inputs(&fleet, &parts, &logs);
            let found = engine.evaluate(&cycle_inputs, at);
            if at < from {
                continue;
            }
            progress.evaluated(at, found);
            episodes.observe(found, at, from);
            findings = found.to_vec();
            started.get_or_insert(at);
            ended = Some(at);
            cycles += 1;
        }
    }
    let any_scraped = any_data && fleet.targets().iter().any(|t| t.last_ok.is_some());
    let observation = Observation {
        fleet,
        findings,
        logs,
        started: started.unwrap_or(from),
        ended: ended.unwrap_or(from),
        interval: window.step,
        time_scale: 1.0,
        plan: None,
        cycles,
        any_scraped,
        episodes: Some(episodes.finish()),
        actions: Vec::new(),
    };
    (observation, failed)
}
