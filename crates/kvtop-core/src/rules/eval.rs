//! The rule engine: per (rule, subject) state across cycles — pending since, firing since,
//! resolved at — with `for` durations, hysteresis, frozen state for engines that are not up,
//! and resolved findings kept for five minutes.
//!
//! Per cycle the work is one expression evaluation per (rule, engine) in scope; state lives in
//! vectors indexed like the inputs, re-keyed only when the set of engines changes. Nothing is
//! allocated for a (rule, engine) pair that is idle and stays idle; evidence is built only for
//! pending, firing and newly resolved findings.

use std::collections::HashMap;
use std::sync::Arc;

use super::file::RuleSet;
use super::finding::{Finding, FindingCounts, FindingState, RESOLVED_KEEP_SECS, Subject};
use super::health::{EngineHealth, Health, STUCK_RULE};
use super::input::EngineInput;
use super::model::{Per, Rule};
use super::truth::{EngineText, Evidence, Group, TextMemo, Truth};
use crate::engine::EngineId;
use crate::fleet::{EngineStatus, TargetId, Ts};

/// State of one rule about one subject.
#[derive(Debug, Clone, Default, PartialEq)]
enum Phase {
    #[default]
    Idle,
    Pending {
        since: Ts,
        evidence: Vec<Evidence>,
    },
    Firing {
        since: Ts,
        fired_at: Ts,
        /// When the condition last stopped holding while the rule keeps firing for its
        /// `keep_firing_for`; `None` while it holds.
        clearing_since: Option<Ts>,
        evidence: Vec<Evidence>,
    },
    Resolved {
        since: Ts,
        fired_at: Ts,
        at: Ts,
        evidence: Vec<Evidence>,
    },
}

/// The text of a rule shared by all its findings.
#[derive(Debug, Clone)]
struct Shared {
    id: Arc<str>,
    title: Arc<str>,
    cause: Arc<str>,
    action: Arc<str>,
    source: Arc<str>,
}

impl Shared {
    fn of(rule: &Rule) -> Self {
        Shared {
            id: rule.id.as_str().into(),
            title: rule.title.as_str().into(),
            cause: rule.cause.as_str().into(),
            action: rule.action.as_str().into(),
            source: rule.source().into(),
        }
    }
}

#[derive(Debug, Clone)]
struct Slot {
    rule: Rule,
    shared: Shared,
    /// The rule reads the engine's own scrape: frozen while the engine is not up.
    scraped: bool,
    /// One per subject: engines (per engine), model groups (per model), one (per fleet).
    phases: Vec<Phase>,
}

impl Slot {
    fn new(rule: Rule) -> Self {
        Slot {
            shared: Shared::of(&rule),
            scraped: rule.reads_scraped(),
            rule,
            phases: Vec::new(),
        }
    }
}

/// Engines and groups of the last cycle, in input order.
#[derive(Debug, Clone)]
struct Subjects {
    engines: Vec<(TargetId, EngineId)>,
    /// Distinct non-empty model names, in order of first appearance.
    models: Vec<String>,
    /// Engine indices per model.
    members: Vec<Vec<u32>>,
    /// Every engine index.
    all: Vec<u32>,
    /// Finding subjects, shared by every finding about them.
    engine_subjects: Vec<Arc<Subject>>,
    model_subjects: Vec<Arc<Subject>>,
    fleet_subject: Arc<Subject>,
}

impl Subjects {
    fn matches(&self, inputs: &[EngineInput<'_>]) -> bool {
        self.engines.len() == inputs.len()
            && self
                .engines
                .iter()
                .zip(inputs)
                .all(|((target, id), input)| *target == input.target && id == input.id)
    }

    fn empty() -> Self {
        Subjects {
            engines: Vec::new(),
            models: Vec::new(),
            members: Vec::new(),
            all: Vec::new(),
            engine_subjects: Vec::new(),
            model_subjects: Vec::new(),
            fleet_subject: Arc::new(Subject::Fleet),
        }
    }

    fn of(inputs: &[EngineInput<'_>]) -> Self {
        let mut subjects = Subjects {
            engines: inputs.iter().map(|i| (i.target, i.id.clone())).collect(),
            engine_subjects: inputs.iter().map(engine_subject).collect(),
            ..Subjects::empty()
        };
        for (index, input) in inputs.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            subjects.all.push(index);
            let model = &input.id.model;
            if model.is_empty() {
                continue;
            }
            match subjects.models.iter().position(|m| m == model) {
                Some(g) => {
                    if let Some(members) = subjects.members.get_mut(g) {
                        members.push(index);
                    }
                }
                None => {
                    subjects.models.push(model.clone());
                    subjects.members.push(vec![index]);
                    subjects
                        .model_subjects
                        .push(Arc::new(Subject::Model(model.clone())));
                }
            }
        }
        subjects
    }

    /// Follow display-name changes of engines whose identity did not change.
    fn rename(&mut self, inputs: &[EngineInput<'_>]) {
        for (subject, input) in self.engine_subjects.iter_mut().zip(inputs) {
            if subject.label() != input.name {
                *subject = engine_subject(input);
            }
        }
    }

    fn count(&self, per: Per) -> usize {
        match per {
            Per::Engine => self.engines.len(),
            Per::Model => self.models.len(),
            Per::Fleet => 1,
        }
    }
}

fn engine_subject(input: &EngineInput<'_>) -> Arc<Subject> {
    Arc::new(Subject::Engine {
        target: input.target,
        id: input.id.clone(),
        name: input.name.to_owned(),
    })
}

/// Evaluates a rule set cycle after cycle. See the module docs.
#[derive(Debug, Clone)]
pub struct RuleEngine {
    slots: Vec<Slot>,
    subjects: Subjects,
    health: Vec<EngineHealth>,
    findings: Vec<Finding>,
    /// Reused buffer for group members filtered by a rule's label scope.
    scratch: Vec<u32>,
    /// False until the first cycle has sized the per-subject state.
    synced: bool,
    /// Text-match memory per engine (input order).
    texts: Vec<EngineText>,
}

impl RuleEngine {
    /// An engine for these rules, with no state yet (every rule idle for every subject).
    pub fn new(rules: &RuleSet) -> Self {
        RuleEngine {
            slots: rules.rules().iter().cloned().map(Slot::new).collect(),
            subjects: Subjects::empty(),
            health: Vec::new(),
            findings: Vec::new(),
            scratch: Vec::new(),
            synced: false,
            texts: Vec::new(),
        }
    }

    /// An engine that reports `findings` and `health` as its last cycle: the rules state at a
    /// past instant, rebuilt by a [`super::Timeline`]. It has `live`'s rules (to say what was
    /// evaluated) without their state: evaluating it starts them idle.
    pub fn replayed(
        live: &RuleEngine,
        mut findings: Vec<Finding>,
        health: Vec<((TargetId, EngineId), EngineHealth)>,
    ) -> Self {
        super::finding::sort(&mut findings);
        let (engines, health) = health.into_iter().unzip();
        RuleEngine {
            slots: live
                .slots
                .iter()
                .map(|s| Slot::new(s.rule.clone()))
                .collect(),
            subjects: Subjects {
                engines,
                ..Subjects::empty()
            },
            health,
            findings,
            scratch: Vec::new(),
            synced: false,
            texts: Vec::new(),
        }
    }

    /// Replace the rules (after a reload). Rules whose definition is unchanged keep their
    /// state; changed and new ones start idle.
    pub fn set_rules(&mut self, rules: &RuleSet) {
        let mut old = std::mem::take(&mut self.slots);
        self.slots = rules
            .rules()
            .iter()
            .map(|rule| {
                match old
                    .iter()
                    .position(|slot| slot.rule == *rule)
                    .map(|at| old.swap_remove(at))
                {
                    Some(slot) => slot,
                    None => {
                        let mut slot = Slot::new(rule.clone());
                        slot.phases = vec![Phase::Idle; self.subjects.count(rule.per)];
                        slot
                    }
                }
            })
            .collect();
        self.findings.clear();
    }

    /// The rules being evaluated.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.slots.iter().map(|slot| &slot.rule)
    }

    /// Run one cycle over the fleet at `now` and return the findings: firing first, then
    /// pending, then resolved; by severity (critical first), then by how long they have held.
    /// A non-finite `now` changes nothing.
    pub fn evaluate(&mut self, inputs: &[EngineInput<'_>], now: Ts) -> &[Finding] {
        if !now.is_finite() {
            return &self.findings;
        }
        self.sync(inputs);
        self.subjects.rename(inputs);
        for (health, input) in self.health.iter_mut().zip(inputs) {
            *health = health.step(input.status, input.signals.kv_usage, now);
        }
        let RuleEngine {
            slots,
            subjects,
            scratch,
            texts,
            ..
        } = self;
        let stuck_slot = slots.iter().position(|s| s.rule.id == STUCK_RULE);
        // Engine-major, so each engine's text is compared and searched once per cycle.
        for ((index, input), engine_text) in inputs.iter().enumerate().zip(texts.iter()) {
            engine_text.begin_cycle();
            // As of the last cycle: whether the engine hangs, for the rules that read `stalled`.
            let stalled = stuck_slot
                .and_then(|at| slots.get(at))
                .and_then(|slot| slot.phases.get(index))
                .is_some_and(|phase| matches!(phase, Phase::Pending { .. } | Phase::Firing { .. }));
            let input = &input.with_stalled(stalled || input.stalled);
            let memo = TextMemo {
                engine: engine_text,
            };
            for slot in slots.iter_mut().filter(|s| s.rule.per == Per::Engine) {
                if let Some(phase) = slot.phases.get_mut(index) {
                    evaluate_engine(&slot.rule, slot.scraped, phase, input, memo, now);
                }
            }
        }
        for slot in slots.iter_mut() {
            match slot.rule.per {
                Per::Engine => {}
                Per::Model => {
                    for (phase, members) in slot.phases.iter_mut().zip(&subjects.members) {
                        evaluate_group(&slot.rule, phase, inputs, members, scratch, now);
                    }
                }
                Per::Fleet => {
                    if let Some(phase) = slot.phases.first_mut() {
                        evaluate_group(&slot.rule, phase, inputs, &subjects.all, scratch, now);
                    }
                }
            }
        }
        self.collect(inputs);
        self.mark_stuck();
        &self.findings
    }

    /// An up engine whose stuck-requests finding fires is `stuck`, whatever its KV usage says.
    fn mark_stuck(&mut self) {
        for finding in &self.findings {
            if finding.state != FindingState::Firing || &*finding.rule_id != STUCK_RULE {
                continue;
            }
            let Subject::Engine { target, id, .. } = finding.subject.as_ref() else {
                continue;
            };
            let at = self
                .subjects
                .engines
                .iter()
                .position(|(t, i)| t == target && i == id);
            if let Some(health) = at.and_then(|at| self.health.get_mut(at)) {
                if !matches!(health.health, Health::Down | Health::Pending) {
                    health.health = Health::Stuck;
                }
            }
        }
    }

    /// The findings of the last cycle (same order as [`evaluate`](Self::evaluate) returned).
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Findings of the last cycle about one engine.
    pub fn findings_for<'s>(
        &'s self,
        target: TargetId,
        id: &'s EngineId,
    ) -> impl Iterator<Item = &'s Finding> + 's {
        self.findings
            .iter()
            .filter(move |f| f.subject.is_engine(target, id))
    }

    /// Firing findings by severity, and how many are pending and resolved.
    pub fn counts(&self) -> FindingCounts {
        let mut counts = FindingCounts::default();
        for finding in &self.findings {
            match finding.state {
                FindingState::Firing => match finding.severity {
                    super::model::Severity::Critical => counts.critical += 1,
                    super::model::Severity::Warning => counts.warning += 1,
                    super::model::Severity::Info => counts.info += 1,
                },
                FindingState::Pending => counts.pending += 1,
                FindingState::Resolved { .. } => counts.resolved += 1,
            }
        }
        counts
    }

    /// Health and circuit breaker of every engine of the last cycle, in input order.
    pub fn health(&self) -> &[EngineHealth] {
        &self.health
    }

    /// Health and circuit breaker of one engine, if it was in the last cycle.
    pub fn health_of(&self, target: TargetId, id: &EngineId) -> Option<EngineHealth> {
        let at = self
            .subjects
            .engines
            .iter()
            .position(|(t, i)| *t == target && i == id)?;
        self.health.get(at).copied()
    }

    /// Re-key the per-subject state when the engines differ from the last cycle.
    fn sync(&mut self, inputs: &[EngineInput<'_>]) {
        if self.synced && self.subjects.matches(inputs) {
            return;
        }
        self.synced = true;
        let new = Subjects::of(inputs);
        let old_engines: HashMap<&(TargetId, EngineId), usize> = self
            .subjects
            .engines
            .iter()
            .enumerate()
            .map(|(i, key)| (key, i))
            .collect();
        let old_models: HashMap<&str, usize> = self
            .subjects
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.as_str(), i))
            .collect();
        for slot in &mut self.slots {
            let mut old = std::mem::take(&mut slot.phases);
            let mut carry = |from: Option<&usize>| {
                from.and_then(|&i| old.get_mut(i))
                    .map(std::mem::take)
                    .unwrap_or_default()
            };
            slot.phases = match slot.rule.per {
                Per::Engine => new
                    .engines
                    .iter()
                    .map(|key| carry(old_engines.get(key)))
                    .collect(),
                Per::Model => new
                    .models
                    .iter()
                    .map(|model| carry(old_models.get(model.as_str())))
                    .collect(),
                Per::Fleet => vec![carry(Some(&0))],
            };
        }
        let mut old_texts = std::mem::take(&mut self.texts);
        self.texts = new
            .engines
            .iter()
            .map(|key| {
                old_engines
                    .get(key)
                    .and_then(|&i| old_texts.get_mut(i))
                    .map(std::mem::take)
                    .unwrap_or_default()
            })
            .collect();
        self.health = new
            .engines
            .iter()
            .map(|key| {
                old_engines
                    .get(key)
                    .and_then(|&i| self.health.get(i))
                    .copied()
                    .unwrap_or_default()
            })
            .collect();
        self.subjects = new;
    }

    fn collect(&mut self, inputs: &[EngineInput<'_>]) {
        self.findings.clear();
        for slot in &self.slots {
            for (index, phase) in slot.phases.iter().enumerate() {
                let (since, fired_at, state, evidence) = match phase {
                    Phase::Idle => continue,
                    Phase::Pending { since, evidence } => {
                        (*since, None, FindingState::Pending, evidence)
                    }
                    Phase::Firing {
                        since,
                        fired_at,
                        evidence,
                        ..
                    } => (*since, Some(*fired_at), FindingState::Firing, evidence),
                    Phase::Resolved {
                        since,
                        fired_at,
                        at,
                        evidence,
                    } => (
                        *since,
                        Some(*fired_at),
                        FindingState::Resolved { at: *at },
                        evidence,
                    ),
                };
                let (subject, frozen) = match slot.rule.per {
                    Per::Engine => {
                        let (Some(input), Some(subject)) =
                            (inputs.get(index), self.subjects.engine_subjects.get(index))
                        else {
                            continue;
                        };
                        let frozen = slot.scraped && input.status != EngineStatus::Up;
                        (subject.clone(), frozen)
                    }
                    Per::Model => match self.subjects.model_subjects.get(index) {
                        Some(subject) => (subject.clone(), false),
                        None => continue,
                    },
                    Per::Fleet => (self.subjects.fleet_subject.clone(), false),
                };
                self.findings.push(Finding {
                    rule_id: slot.shared.id.clone(),
                    title: slot.shared.title.clone(),
                    severity: slot.rule.severity,
                    subject,
                    since,
                    fired_at,
                    state,
                    evidence: evidence.clone(),
                    cause: slot.shared.cause.clone(),
                    action: slot.shared.action.clone(),
                    suggest: slot.rule.suggest,
                    source: slot.shared.source.clone(),
                    frozen: frozen && !matches!(state, FindingState::Resolved { .. }),
                });
            }
        }
        super::finding::sort(&mut self.findings);
    }
}

fn evaluate_engine(
    rule: &Rule,
    scraped: bool,
    phase: &mut Phase,
    input: &EngineInput<'_>,
    text: TextMemo<'_>,
    now: Ts,
) {
    if !rule.scope.is_everything() && !rule.scope.matches(input) {
        *phase = Phase::Idle;
        return;
    }
    if scraped && input.status != EngineStatus::Up {
        expire(phase, now);
        return;
    }
    advance(
        phase,
        rule,
        now,
        || rule.when.eval_engine_with(input, text),
        |expr| expr.eval_engine_with(input, text),
        |expr, out| out.extend(expr.evidence_engine(input)),
    );
}

fn evaluate_group(
    rule: &Rule,
    phase: &mut Phase,
    inputs: &[EngineInput<'_>],
    members: &[u32],
    scratch: &mut Vec<u32>,
    now: Ts,
) {
    let members = if rule.scope.is_everything() {
        members
    } else {
        scratch.clear();
        scratch.extend(members.iter().copied().filter(|&i| {
            inputs
                .get(i as usize)
                .is_some_and(|input| rule.scope.matches(input))
        }));
        scratch.as_slice()
    };
    if members.is_empty() {
        *phase = Phase::Idle;
        return;
    }
    let group = Group { inputs, members };
    advance(
        phase,
        rule,
        now,
        || rule.when.eval_group(group),
        |expr| expr.eval_group(group),
        |expr, out| out.extend(expr.evidence_group(group)),
    );
}

/// Drop a resolved finding once it is old enough (the only change while frozen).
fn expire(phase: &mut Phase, now: Ts) {
    if let Phase::Resolved { at, .. } = phase {
        if now - *at >= RESOLVED_KEEP_SECS {
            *phase = Phase::Idle;
        }
    }
}

/// One step of the state machine of one (rule, subject).
///
/// - idle or resolved → pending when `when` is true (firing at once when `for` is 0);
/// - pending → firing once `when` has held for `for`; back to idle as soon as it does not
///   hold (false or unknown);
/// - firing → resolved when `clear_when` is true (hysteresis: an unknown value is no proof of
///   recovery, so it keeps firing), or, without `clear_when`, as soon as `when` is not true
///   (false or unknown, as a Prometheus alert resolves when its series vanishes);
/// - a firing rule with `keep_firing_for` resolves only once it has been clear that long; if
///   its condition holds again before, it simply keeps firing (one finding, not a new one);
/// - resolved → idle five minutes after it resolved.
fn advance<'r>(
    phase: &mut Phase,
    rule: &'r Rule,
    now: Ts,
    when: impl Fn() -> Truth,
    eval: impl Fn(&'r super::expr::Expr) -> Truth,
    evidence_of: impl Fn(&'r super::expr::Expr, &mut Vec<Evidence>),
) {
    // Refill the evidence in the buffer the phase already holds (no allocation once sized).
    let refill = |mut buffer: Vec<Evidence>, firing: bool| {
        buffer.clear();
        evidence_of(&rule.when, &mut buffer);
        if firing {
            if let Some(clear) = &rule.clear_when {
                evidence_of(clear, &mut buffer);
            }
        }
        buffer
    };
    let start = |since: Ts, buffer: Vec<Evidence>| {
        if now - since >= rule.for_secs {
            Phase::Firing {
                since,
                fired_at: now,
                clearing_since: None,
                evidence: refill(buffer, true),
            }
        } else {
            Phase::Pending {
                since,
                evidence: refill(buffer, false),
            }
        }
    };
    let next = match std::mem::take(phase) {
        Phase::Idle => {
            if when() != Truth::True {
                return;
            }
            start(now, Vec::new())
        }
        Phase::Pending { since, evidence } => {
            if when() == Truth::True {
                start(since, evidence)
            } else {
                Phase::Idle
            }
        }
        Phase::Firing {
            since,
            fired_at,
            clearing_since,
            evidence,
        } => {
            let cleared = match &rule.clear_when {
                Some(clear) => eval(clear) == Truth::True,
                None => when() != Truth::True,
            };
            let clearing_since = cleared.then(|| clearing_since.unwrap_or(now));
            let held_down = clearing_since.is_some_and(|from| now - from < rule.keep_firing_for);
            if cleared && !held_down {
                Phase::Resolved {
                    since,
                    fired_at,
                    at: now,
                    evidence: refill(evidence, true),
                }
            } else {
                // While held down the evidence stays that of the last cycle the condition held.
                let evidence = if cleared {
                    evidence
                } else {
                    refill(evidence, true)
                };
                Phase::Firing {
                    since,
                    fired_at,
                    clearing_since,
                    evidence,
                }
            }
        }
        resolved @ Phase::Resolved { at, .. } => {
            if when() == Truth::True {
                let Phase::Resolved { evidence, .. } = resolved else {
                    return;
                };
                start(now, evidence)
            } else if now - at >= RESOLVED_KEEP_SECS {
                Phase::Idle
            } else {
                resolved
            }
        }
    };
    *phase = next;
}
