//! What the rules said at any instant of the retained past, for the time cursor.
//!
//! The rule engine keeps only the present. After each cycle the [`Timeline`] is shown its
//! findings and the engines' health, and keeps a change only when something a view shows
//! changed: a finding appeared, moved between pending, firing and resolved, started a new
//! episode or left the list; an engine's health or breaker changed, or the engine left. At an
//! instant `t` each finding (and engine) is what its newest change at or before `t` says, so the
//! past is exact for states and times, with a finding's evidence as of its last change.
//!
//! Memory is a few entries per finding episode, not per cycle. Changes older than the
//! retention are dropped, keeping the one in effect at its start.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::finding::{Finding, Subject};
use super::health::EngineHealth;
use crate::engine::EngineId;
use crate::fleet::{TargetId, Ts};

/// A finding's identity across cycles.
type FindingKey = (Arc<str>, Arc<Subject>);

/// Changes of one thing, oldest first: `None` from the instant it left the list.
#[derive(Debug, Clone)]
struct Track<T> {
    changes: VecDeque<(Ts, Option<T>)>,
    /// The last cycle that listed it.
    cycle: u64,
}

impl<T> Default for Track<T> {
    fn default() -> Self {
        Track {
            changes: VecDeque::new(),
            cycle: 0,
        }
    }
}

impl<T: Clone> Track<T> {
    fn last(&self) -> Option<&T> {
        self.changes.back().and_then(|(_, v)| v.as_ref())
    }

    fn record(&mut self, at: Ts, value: Option<T>) {
        self.changes.push_back((at, value));
    }

    /// What was in effect at `t`.
    fn at(&self, t: Ts) -> Option<&T> {
        let newer = self.changes.partition_point(|(at, _)| *at <= t);
        self.changes
            .get(newer.checked_sub(1)?)
            .and_then(|(_, v)| v.as_ref())
    }

    /// Drop the changes superseded before `horizon`; true when nothing is left to tell.
    fn prune(&mut self, horizon: Ts) -> bool {
        while self.changes.get(1).is_some_and(|(at, _)| *at <= horizon) {
            self.changes.pop_front();
        }
        match self.changes.front() {
            None => true,
            Some((at, None)) => *at <= horizon && self.changes.len() == 1,
            Some(_) => false,
        }
    }
}

/// The findings and health of every rules cycle over a retention span, by their changes.
#[derive(Debug, Clone)]
pub struct Timeline {
    retention: f64,
    findings: HashMap<FindingKey, Track<Finding>>,
    /// By target, then engine: an engine seen before is found by reference, so a cycle copies
    /// no engine ids (a thousand engines, every cycle).
    health: HashMap<TargetId, HashMap<EngineId, Track<EngineHealth>>>,
    /// Cycles shown so far.
    cycles: u64,
    /// The first and the last cycle's time, once one was shown.
    since: Option<Ts>,
    latest: Option<Ts>,
}

impl Timeline {
    /// A timeline keeping `retention` seconds (a non-positive or non-finite span keeps none).
    pub fn new(retention: f64) -> Self {
        Timeline {
            retention: if retention.is_finite() {
                retention.max(0.0)
            } else {
                0.0
            },
            findings: HashMap::new(),
            health: HashMap::new(),
            cycles: 0,
            since: None,
            latest: None,
        }
    }

    /// Take in one cycle's findings and health at `now`. Cycles must come in time order; an
    /// older or non-finite `now` is ignored.
    pub fn observe<'a>(
        &mut self,
        findings: &[Finding],
        health: impl IntoIterator<Item = ((TargetId, &'a EngineId), EngineHealth)>,
        now: Ts,
    ) {
        if !now.is_finite() || self.latest.is_some_and(|latest| now < latest) {
            return;
        }
        self.since.get_or_insert(now);
        self.latest = Some(now);
        self.cycles += 1;
        let cycle = self.cycles;
        for finding in findings {
            let key = (Arc::clone(&finding.rule_id), Arc::clone(&finding.subject));
            let track = self.findings.entry(key).or_default();
            if track
                .last()
                .is_none_or(|last| shows_differently(last, finding))
            {
                track.record(now, Some(finding.clone()));
            }
            track.cycle = cycle;
        }
        for ((target, id), health) in health {
            let engines = self.health.entry(target).or_default();
            let track = match engines.get_mut(id) {
                Some(track) => track,
                None => engines.entry(id.clone()).or_default(),
            };
            if track.last() != Some(&health) {
                track.record(now, Some(health));
            }
            track.cycle = cycle;
        }
        for track in self.findings.values_mut() {
            if track.cycle != cycle && track.last().is_some() {
                track.record(now, None);
            }
        }
        for track in self.health.values_mut().flat_map(HashMap::values_mut) {
            if track.cycle != cycle && track.last().is_some() {
                track.record(now, None);
            }
        }
        self.prune(now - self.retention);
    }

    /// The findings listed at `t`, each as of its newest change then, in no particular order.
    pub fn findings_at(&self, t: Ts) -> Vec<Finding> {
        self.findings
            .values()
            .filter_map(|track| track.at(t).cloned())
            .collect()
    }

    /// Every engine's health at `t`, by target and engine id.
    pub fn health_at(&self, t: Ts) -> Vec<((TargetId, EngineId), EngineHealth)> {
        let mut health: Vec<_> = self
            .health
            .iter()
            .flat_map(|(target, engines)| {
                engines.iter().map(move |(id, track)| (*target, id, track))
            })
            .filter_map(|(target, id, track)| Some(((target, id.clone()), *track.at(t)?)))
            .collect();
        health.sort_by(|a, b| a.0.cmp(&b.0));
        health
    }

    /// The earliest instant the timeline can tell about: its first cycle, or the retention's
    /// start once that is later. `None` before the first cycle.
    pub fn start(&self, now: Ts) -> Option<Ts> {
        self.since.map(|since| since.max(now - self.retention))
    }

    /// Changes held (findings and health), for memory accounting and tests.
    pub fn len(&self) -> usize {
        self.findings
            .values()
            .map(|t| t.changes.len())
            .chain(
                self.health
                    .values()
                    .flat_map(HashMap::values)
                    .map(|t| t.changes.len()),
            )
            .sum()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn prune(&mut self, horizon: Ts) {
        self.findings.retain(|_, track| !track.prune(horizon));
        self.health.retain(|_, engines| {
            engines.retain(|_, track| !track.prune(horizon));
            !engines.is_empty()
        });
    }
}

/// Whether a view would show `now` differently from `before` (the same finding's last change):
/// another state, episode, severity or frozen mark. Evidence alone does not count: it changes
/// every cycle and is kept as of the last change.
fn shows_differently(before: &Finding, now: &Finding) -> bool {
    before.state != now.state
        || before.since != now.since
        || before.fired_at != now.fired_at
        || before.severity != now.severity
        || before.frozen != now.frozen
        || before.subject.label() != now.subject.label()
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
