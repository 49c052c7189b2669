//! Incidents: the findings of one cycle folded into what an on-call engineer acts on.
//!
//! Rules declare the rules whose findings theirs explain (`explains = [...]`, followed
//! transitively: `oom-chunked-prefill` explains `cuda-oom`, which explains `crash-loop`,
//! `engine-down`, …). Folding, per cycle and without state of its own:
//! 1. Per engine, its firing findings make one incident, headed by the most specific cause: a
//!    finding no other finding of the engine explains (the most severe such one, then the one
//!    explaining most of the others, then the first listed); every other finding of the engine
//!    is listed under it as a symptom. An engine with no firing finding but resolved ones gets
//!    a resolved incident the same way (greyed by the views, with its duration).
//! 2. Engine incidents with the same head rule on engines of the same model (or, without a
//!    model, the same engine) are one incident naming the count and the engines.
//! 3. A model or fleet finding is an incident of its own; it takes in the engine incidents of
//!    its group whose head it explains (`no-engine-up` explains `engine-down`).
//! 4. Incidents are ranked: firing before resolved, then by severity (the worst of their
//!    findings), then by how many engines they touch, then by the traffic of those engines,
//!    then by age (oldest first).
//!
//! Pending findings are not incidents yet: they become part of one when they fire.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::finding::{Finding, FindingState, Subject};
use super::model::{Rule, Severity};
use crate::fleet::Ts;

/// Which rules each rule explains, followed transitively.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Explains {
    closure: HashMap<String, BTreeSet<String>>,
}

impl Explains {
    /// The explanation graph of `rules`. Ids of rules that are not there are kept (a user rule
    /// may declare what it explains before the explained rule is added); cycles are harmless.
    pub fn of<'r>(rules: impl IntoIterator<Item = &'r Rule>) -> Explains {
        let direct: HashMap<&str, &[String]> = rules
            .into_iter()
            .map(|r| (r.id.as_str(), r.explains.as_slice()))
            .collect();
        let mut closure = HashMap::new();
        for (&id, _) in direct.iter() {
            let mut seen: BTreeSet<String> = BTreeSet::new();
            let mut todo: Vec<&str> = vec![id];
            while let Some(at) = todo.pop() {
                for next in direct.get(at).copied().unwrap_or_default() {
                    if next != id && seen.insert(next.clone()) {
                        todo.push(next);
                    }
                }
            }
            if !seen.is_empty() {
                closure.insert(id.to_owned(), seen);
            }
        }
        Explains { closure }
    }

    /// Whether a finding of rule `cause` explains one of rule `symptom`.
    pub fn explains(&self, cause: &str, symptom: &str) -> bool {
        self.closure
            .get(cause)
            .is_some_and(|explained| explained.contains(symptom))
    }
}

/// Whether an incident is going on or is over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IncidentState {
    Firing,
    /// Every finding of it resolved; the last at `at`.
    Resolved {
        at: Ts,
    },
}

/// What identifies an incident from cycle to cycle: its head rule and its group (the model of
/// its engines, `fleet`, or the engine's name when it has no model).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IncidentKey {
    pub rule_id: Arc<str>,
    pub group: String,
}

/// A finding folded under an incident's head.
#[derive(Debug, Clone, PartialEq)]
pub struct Symptom {
    pub rule_id: Arc<str>,
    pub title: Arc<str>,
    pub severity: Severity,
    /// On how many of the incident's engines (1 for a model or fleet finding).
    pub count: usize,
}

/// One incident: a cause, where it is, and what else it explains.
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub key: IncidentKey,
    /// The head finding (for several engines, that of the first engine).
    pub head: Finding,
    /// The worst severity among its findings.
    pub severity: Severity,
    pub state: IncidentState,
    /// The model its engines serve (or the model finding's model), when there is one.
    pub model: Option<String>,
    /// The engines it touches (subjects of its engine findings), in fleet order.
    pub engines: Vec<Arc<Subject>>,
    /// The other findings folded under the head, most severe first.
    pub symptoms: Vec<Symptom>,
    /// Every finding folded in, as `(rule id, subject)`, head first.
    pub members: Vec<(Arc<str>, Arc<Subject>)>,
    /// When the first of its findings fired.
    pub since: Ts,
    /// Traffic of its engines (the caller's measure, e.g. requests per second), summed.
    pub traffic: f64,
}

impl Incident {
    /// Whether it touches the engine `subject` (as an engine finding or as a symptom).
    pub fn touches(&self, subject: &Subject) -> bool {
        self.engines.iter().any(|e| e.as_ref() == subject)
    }

    /// Whether it is still going on.
    pub fn is_firing(&self) -> bool {
        self.state == IncidentState::Firing
    }

    /// Seconds from its first finding firing until now (firing) or until it resolved.
    pub fn duration(&self, now: Ts) -> f64 {
        let end = match self.state {
            IncidentState::Firing => now,
            IncidentState::Resolved { at } => at,
        };
        (end - self.since).max(0.0)
    }

    /// Where it is, for one line: the engine's name; `model ×3` for several engines; the model
    /// or `fleet` for a group finding.
    pub fn place(&self) -> String {
        match (self.engines.as_slice(), self.head.subject.as_ref()) {
            (_, Subject::Fleet) => "fleet".to_owned(),
            (_, Subject::Model(model)) => model.clone(),
            ([one], _) => one.label().to_owned(),
            (many, _) => format!(
                "{} ×{}",
                self.model.as_deref().unwrap_or("engines"),
                many.len()
            ),
        }
    }
}

/// Fold findings (as [`RuleEngine::evaluate`](super::RuleEngine::evaluate) returns them) into
/// ranked incidents; see the module docs. `traffic` measures an engine's traffic (unknown
/// counts as none).
pub fn fold(
    findings: &[Finding],
    explains: &Explains,
    traffic: impl Fn(&Subject) -> Option<f64>,
) -> Vec<Incident> {
    // Findings per engine subject, in order of first appearance; group findings apart.
    let mut engines: Vec<(Arc<Subject>, Vec<&Finding>)> = Vec::new();
    let mut groups: Vec<&Finding> = Vec::new();
    for finding in findings {
        if finding.state == FindingState::Pending {
            continue;
        }
        match finding.subject.as_ref() {
            Subject::Engine { .. } => {
                match engines.iter_mut().find(|(s, _)| *s == finding.subject) {
                    Some((_, list)) => list.push(finding),
                    None => engines.push((Arc::clone(&finding.subject), vec![finding])),
                }
            }
            Subject::Model(_) | Subject::Fleet => groups.push(finding),
        }
    }
    let mut per_engine: Vec<Incident> = Vec::new();
    for (subject, list) in &engines {
        let firing: Vec<&Finding> = list
            .iter()
            .copied()
            .filter(|f| f.state == FindingState::Firing)
            .collect();
        let members = if firing.is_empty() { list } else { &firing };
        if let Some(incident) = engine_incident(subject, members, explains, &traffic) {
            per_engine.push(incident);
        }
    }
    let mut merged: Vec<Incident> = Vec::new();
    for incident in per_engine {
        match merged
            .iter_mut()
            .find(|m| m.key == incident.key && m.is_firing() == incident.is_firing())
        {
            Some(into) => absorb(into, incident),
            None => merged.push(incident),
        }
    }
    let mut incidents: Vec<Incident> = Vec::new();
    for finding in groups {
        let mut incident = group_incident(finding, &traffic);
        let mut rest = Vec::with_capacity(merged.len());
        for engine in merged {
            let in_group = match finding.subject.as_ref() {
                Subject::Model(model) => engine.model.as_deref() == Some(model.as_str()),
                _ => true,
            };
            if in_group
                && engine.is_firing() == incident.is_firing()
                && explains.explains(&finding.rule_id, &engine.head.rule_id)
            {
                absorb_as_symptom(&mut incident, engine);
            } else {
                rest.push(engine);
            }
        }
        merged = rest;
        incidents.push(incident);
    }
    incidents.extend(merged);
    incidents.sort_by(|a, b| {
        b.is_firing()
            .cmp(&a.is_firing())
            .then(b.severity.cmp(&a.severity))
            .then(b.engines.len().cmp(&a.engines.len()))
            .then(b.traffic.total_cmp(&a.traffic))
            .then(a.since.total_cmp(&b.since))
    });
    incidents
}

/// The incident of one engine's findings (all firing, or all not).
fn engine_incident(
    subject: &Arc<Subject>,
    members: &[&Finding],
    explains: &Explains,
    traffic: &impl Fn(&Subject) -> Option<f64>,
) -> Option<Incident> {
    let explained_by_other = |f: &Finding| {
        members
            .iter()
            .any(|o| o.rule_id != f.rule_id && explains.explains(&o.rule_id, &f.rule_id))
    };
    let explained_count = |f: &Finding| {
        members
            .iter()
            .filter(|o| explains.explains(&f.rule_id, &o.rule_id))
            .count()
    };
    let mut roots: Vec<&Finding> = members
        .iter()
        .copied()
        .filter(|f| !explained_by_other(f))
        .collect();
    if roots.is_empty() {
        // Rules that explain each other: any of them may head.
        roots = members.to_vec();
    }
    // The most severe root, then the one explaining most, then the first listed.
    let head = roots.iter().copied().reduce(|best, f| {
        let better = (f.severity, explained_count(f)) > (best.severity, explained_count(best));
        if better { f } else { best }
    })?;
    let model = match subject.as_ref() {
        Subject::Engine { id, .. } if !id.model.is_empty() => Some(id.model.clone()),
        _ => None,
    };
    let mut symptoms: Vec<Symptom> = members
        .iter()
        .filter(|f| f.rule_id != head.rule_id)
        .map(|f| Symptom {
            rule_id: Arc::clone(&f.rule_id),
            title: Arc::clone(&f.title),
            severity: f.severity,
            count: 1,
        })
        .collect();
    symptoms.sort_by_key(|s| std::cmp::Reverse(s.severity));
    let state = if head.state == FindingState::Firing {
        IncidentState::Firing
    } else {
        let at = members
            .iter()
            .filter_map(|f| match f.state {
                FindingState::Resolved { at } => Some(at),
                _ => None,
            })
            .fold(f64::NEG_INFINITY, f64::max);
        IncidentState::Resolved { at }
    };
    let mut all: Vec<(Arc<str>, Arc<Subject>)> =
        vec![(Arc::clone(&head.rule_id), Arc::clone(subject))];
    all.extend(
        members
            .iter()
            .filter(|f| f.rule_id != head.rule_id)
            .map(|f| (Arc::clone(&f.rule_id), Arc::clone(subject))),
    );
    Some(Incident {
        key: IncidentKey {
            rule_id: Arc::clone(&head.rule_id),
            group: model.clone().unwrap_or_else(|| subject.label().to_owned()),
        },
        head: head.clone(),
        severity: members
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(head.severity),
        state,
        model,
        engines: vec![Arc::clone(subject)],
        symptoms,
        members: all,
        since: first_fired(members),
        traffic: traffic(subject).unwrap_or(0.0),
    })
}

/// The incident of one model or fleet finding.
fn group_incident(finding: &Finding, traffic: &impl Fn(&Subject) -> Option<f64>) -> Incident {
    let (group, model) = match finding.subject.as_ref() {
        Subject::Model(model) => (model.clone(), Some(model.clone())),
        other => (other.label().to_owned(), None),
    };
    Incident {
        key: IncidentKey {
            rule_id: Arc::clone(&finding.rule_id),
            group,
        },
        head: finding.clone(),
        severity: finding.severity,
        state: match finding.state {
            FindingState::Resolved { at } => IncidentState::Resolved { at },
            _ => IncidentState::Firing,
        },
        model,
        engines: Vec::new(),
        symptoms: Vec::new(),
        members: vec![(Arc::clone(&finding.rule_id), Arc::clone(&finding.subject))],
        since: first_fired(&[finding]),
        traffic: traffic(&finding.subject).unwrap_or(0.0),
    }
}

fn first_fired(members: &[&Finding]) -> Ts {
    members
        .iter()
        .map(|f| f.fired_at.unwrap_or(f.since))
        .fold(f64::INFINITY, f64::min)
}

/// Merge `other` (same head rule, same group) into `into`.
fn absorb(into: &mut Incident, other: Incident) {
    into.severity = into.severity.max(other.severity);
    into.since = into.since.min(other.since);
    into.traffic += other.traffic;
    if let (IncidentState::Resolved { at: a }, IncidentState::Resolved { at: b }) =
        (into.state, other.state)
    {
        into.state = IncidentState::Resolved { at: a.max(b) };
    }
    into.engines.extend(other.engines);
    into.members.extend(other.members);
    for symptom in other.symptoms {
        add_symptom(&mut into.symptoms, symptom);
    }
}

/// Take `engine`'s incident in as symptoms of a group incident.
fn absorb_as_symptom(into: &mut Incident, engine: Incident) {
    into.severity = into.severity.max(engine.severity);
    into.traffic += engine.traffic;
    let count = engine.engines.len();
    add_symptom(
        &mut into.symptoms,
        Symptom {
            rule_id: Arc::clone(&engine.head.rule_id),
            title: Arc::clone(&engine.head.title),
            severity: engine.head.severity,
            count,
        },
    );
    for symptom in engine.symptoms {
        add_symptom(&mut into.symptoms, symptom);
    }
    into.engines.extend(engine.engines);
    into.members.extend(engine.members);
}

fn add_symptom(list: &mut Vec<Symptom>, symptom: Symptom) {
    match list.iter_mut().find(|s| s.rule_id == symptom.rule_id) {
        Some(found) => found.count += symptom.count,
        None => {
            let at = list
                .iter()
                .position(|s| s.severity < symptom.severity)
                .unwrap_or(list.len());
            list.insert(at, symptom);
        }
    }
}

#[cfg(test)]
#[path = "incident_tests.rs"]
mod tests;
