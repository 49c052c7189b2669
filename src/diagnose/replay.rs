//! `kvtop check --replay FILE`: the observation of a recording. The fleet model and the rules
//! get what the recorded console or check ingested, in order, and the rules run at the
//! recorded instants, so the findings are the ones the recorded run had at those instants.
//! `--from` and `--to` bound the cycles reported; everything before `--from` is still fed in,
//! so rates, windows and `for` durations are what they were.

use super::TargetLogs;
use super::episodes::Episodes;
use super::inputs;
use super::observe::{Observation, Progress};
use crate::record::{Recording, fleet_settings};
use kvtop_core::fleet::{Fleet, Ts};
use kvtop_core::recording::Record;
use kvtop_core::rules::{RuleEngine, RuleSet};

/// The part of a recording to report on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Window {
    pub from: Option<Ts>,
    pub to: Option<Ts>,
}

/// What a replay saw besides the observation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplayNotes {
    /// Records dropped while recording (a slow disk), as the recording says.
    pub dropped: u64,
    /// The recording's first and last record times.
    pub first: Option<Ts>,
    pub last: Option<Ts>,
}

/// Records handed from the reading thread to the replay at a time.
const BATCH: usize = 64;
/// Batches read ahead of the replay at most.
const BATCHES_AHEAD: usize = 16;

/// Replay `recording` through the fleet model and `rules`.
///
/// The file is read, inflated and decoded on a thread of its own while the fleet model and the
/// rules take the records in order, so the two halves of the work overlap on two cores. The
/// reading thread stops after the first record past `window.to`, where the replay stops too:
/// the recording is read exactly as far as it would be read in one thread.
pub fn replay(
    recording: &mut Recording,
    rules: &RuleSet,
    window: Window,
    progress: &mut dyn Progress,
) -> (Observation, ReplayNotes) {
    let settings = fleet_settings(recording.header());
    let replayed = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Record>>(BATCHES_AHEAD);
        let reading = &mut *recording;
        let reader = std::thread::Builder::new()
            .name("kvtop-read".into())
            .spawn_scoped(scope, move || read_ahead(reading, window.to, &tx));
        match reader {
            Ok(_) => Some(observe_records(
                rx.into_iter().flatten(),
                settings,
                rules,
                window,
                progress,
            )),
            Err(_) => None,
        }
    });
    // Without a second thread, the records are read as they are replayed.
    replayed
        .unwrap_or_else(|| observe_records(recording.by_ref(), settings, rules, window, progress))
}

/// Read records and hand them over in batches, up to and including the first past `to`.
fn read_ahead(
    recording: &mut Recording,
    to: Option<Ts>,
    tx: &std::sync::mpsc::SyncSender<Vec<Record>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    for record in recording.by_ref() {
        let past = to.is_some_and(|to| record.at() > to);
        batch.push(record);
        if past || batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            // The replay stopped taking records: nothing more to read for it.
            if tx.send(full).is_err() || past {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}

/// The observation of `records`, in order (see [`replay`]).
fn observe_records(
    records: impl Iterator<Item = Record>,
    settings: kvtop_core::fleet::FleetSettings,
    rules: &RuleSet,
    window: Window,
    progress: &mut dyn Progress,
) -> (Observation, ReplayNotes) {
    let interval = settings.interval;
    let mut fleet = Fleet::new(settings);
    let mut engine = RuleEngine::new(rules);
    let mut parts = inputs::FleetParts::for_rules(rules.rules());
    let mut logs = TargetLogs::default();
    // The target of each recorded pod, for the updates that name the pod.
    let mut pods = std::collections::BTreeMap::new();
    let mut notes = ReplayNotes::default();
    let (mut started, mut ended, mut cycles) = (None::<Ts>, None::<Ts>, 0u32);
    let mut planned = false;
    let mut episodes = Episodes::default();
    let mut actions = Vec::new();
    for record in records {
        let at = record.at();
        notes.first.get_or_insert(at);
        notes.last = Some(at);
        if window.to.is_some_and(|to| at > to) {
            break;
        }
        match record {
            Record::Targets { targets, .. } => fleet.set_targets(&targets),
            Record::Scrape(report) => fleet.ingest(report),
            Record::Source { report, .. } => fleet.ingest_source(report),
            Record::Logs { lines, .. } => {
                for (target, lines) in lines {
                    logs.extend(target, lines);
                }
            }
            Record::Kube { change, .. } => change.apply_to_pods(&mut fleet, &mut pods),
            Record::Gap { dropped, .. } => notes.dropped += dropped,
            Record::Action { at, note } => {
                if window.from.is_none_or(|from| at >= from) {
                    actions.push((at, note));
                }
            }
            Record::Cycle { at } => {
                fleet.tick(at);
                logs.prune(at);
                parts.refresh(&fleet);
                let cycle_inputs = inputs::engine_inputs(&fleet, &parts, &logs);
                let found = engine.evaluate(&cycle_inputs, at);
                if window.from.is_some_and(|from| at < from) {
                    continue;
                }
                if !planned {
                    planned = true;
                    progress.planned(window.to.map_or(0.0, |to| to - at).max(0.0), None, 1.0);
                }
                progress.evaluated(at, found);
                episodes.observe(found, at, window.from.unwrap_or(f64::NEG_INFINITY));
                started.get_or_insert(at);
                ended = Some(at);
                cycles += 1;
            }
        }
    }
    // The findings of the last cycle reported: the last one evaluated, when any was reported
    // (those before --from come first). Copied once, not at every cycle.
    let findings = if cycles > 0 {
        engine.findings().to_vec()
    } else {
        Vec::new()
    };
    let any_scraped = fleet.targets().iter().any(|t| t.last_ok.is_some());
    let observation = Observation {
        fleet,
        findings,
        logs,
        started: started.unwrap_or(0.0),
        ended: ended.unwrap_or(0.0),
        interval,
        time_scale: 1.0,
        plan: None,
        cycles,
        any_scraped,
        episodes: Some(episodes.finish()),
        actions,
    };
    (observation, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::observe::Quiet;
    use kvtop_core::rules::Rule;

    /// A rule that reads the models' merged quantiles and never holds: with it, every cycle
    /// merges them; without it (the built-in rules alone), none does.
    const MERGING_RULE: &str = r#"[[rule]]
id = "never-merged"
title = "Never"
severity = "info"
per = "model"
when = "merged(ttft_p99) < 0"
cause = "test"
action = "test"
source = "test"
"#;

    fn replayed(rules: &RuleSet, to: Option<f64>) -> Observation {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recording-v1-kv-thrash.kvr");
        let mut recording = crate::record::open(&path).expect("the fixture opens");
        let to = to.map(|secs| recording.header().started + secs);
        let window = Window { from: None, to };
        replay(&mut recording, rules, window, &mut Quiet).0
    }

    #[test]
    fn leaving_the_models_unmerged_changes_no_finding_nor_episode() {
        let builtin = RuleSet::builtin().expect("built-in rules");
        assert!(!builtin.rules().iter().any(Rule::reads_merged));
        let merging = RuleSet::with_user_text("rules.toml", MERGING_RULE).expect("rules");
        assert!(merging.rules().iter().any(Rule::reads_merged));
        for to in [None, Some(120.0)] {
            let (lean, full) = (replayed(&builtin, to), replayed(&merging, to));
            if to.is_none() {
                assert!(
                    lean.findings.iter().any(|f| &*f.rule_id == "kv-breaker"),
                    "{:?}",
                    lean.findings
                );
            }
            assert_eq!(lean.findings, full.findings);
            assert_eq!(lean.episodes, full.episodes);
            assert_eq!((lean.cycles, lean.ended), (full.cycles, full.ended));
        }
    }

    #[test]
    fn a_replay_to_an_instant_reads_no_further_than_the_first_record_past_it() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recording-v1-kv-thrash.kvr");
        let mut bytes = std::fs::read(&fixture).expect("the fixture reads");
        // Cut the last record short: reading to the end finds it.
        bytes.truncate(bytes.len() - 3);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("cut.kvr");
        std::fs::write(&path, &bytes).expect("the copy writes");
        let rules = RuleSet::builtin().expect("built-in rules");

        let mut whole = crate::record::open(&path).expect("the copy opens");
        let (_, notes) = replay(&mut whole, &rules, Window::default(), &mut Quiet);
        assert!(whole.problem().is_some(), "the cut is found");
        let (Some(first), Some(last)) = (notes.first, notes.last) else {
            panic!("records were replayed: {notes:?}");
        };

        // The reading thread stops where the replay does: the cut past `to` is never read.
        let mut early = crate::record::open(&path).expect("the copy opens");
        let to = first + (last - first) / 2.0;
        let window = Window {
            from: None,
            to: Some(to),
        };
        let (observation, notes) = replay(&mut early, &rules, window, &mut Quiet);
        assert_eq!(early.problem(), None);
        assert!(observation.cycles > 0 && observation.ended <= to);
        assert!(notes.last.is_some_and(|at| at > to), "{notes:?}");
        assert!(early.next().is_some(), "the rest is left to read");
    }
}
