//! Acknowledged and snoozed incidents. An incident the operator has taken on leaves the
//! findings strip (it stays in the diagnostics list, marked) until it gets worse: its severity
//! rises above what was acknowledged, or an engine it did not touch joins it. Then the silence
//! is dropped for good, as a snooze is when its time is up, or when the incident is gone.

use std::collections::HashMap;
use std::sync::Arc;

use super::finding::Subject;
use super::incident::{Incident, IncidentKey};
use super::model::Severity;
use crate::fleet::Ts;

/// How an incident was silenced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hush {
    /// Acknowledged: someone is on it, for as long as it does not get worse.
    Acked,
    /// Snoozed until `until`, or until it gets worse.
    Snoozed { until: Ts },
}

/// What was silenced, and as it was then.
#[derive(Debug, Clone, PartialEq)]
pub struct Silence {
    pub hush: Hush,
    pub at: Ts,
    /// The incident's severity when it was silenced.
    pub severity: Severity,
    /// The engines it touched then.
    pub engines: Vec<Arc<Subject>>,
}

impl Silence {
    /// Seconds of snooze left at `now` (`None` for an acknowledgement).
    pub fn remaining(&self, now: Ts) -> Option<f64> {
        match self.hush {
            Hush::Acked => None,
            Hush::Snoozed { until } => Some((until - now).max(0.0)),
        }
    }

    /// Whether `incident` is worse than when it was silenced.
    fn worse(&self, incident: &Incident) -> bool {
        incident.severity > self.severity
            || incident.engines.iter().any(|e| !self.engines.contains(e))
    }
}

/// The silences in force, by incident.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Silences {
    by_incident: HashMap<IncidentKey, Silence>,
}

impl Silences {
    /// Silence `incident` as `hush` at `now` (replacing any silence of it).
    pub fn silence(&mut self, incident: &Incident, hush: Hush, now: Ts) {
        self.by_incident.insert(
            incident.key.clone(),
            Silence {
                hush,
                at: now,
                severity: incident.severity,
                engines: incident.engines.clone(),
            },
        );
    }

    /// Lift the silence of `key`; whether there was one.
    pub fn lift(&mut self, key: &IncidentKey) -> bool {
        self.by_incident.remove(key).is_some()
    }

    /// The silence of `incident`, if one is in force (see [`Silences::prune`]).
    pub fn of(&self, incident: &Incident) -> Option<&Silence> {
        self.by_incident
            .get(&incident.key)
            .filter(|s| !s.worse(incident))
    }

    /// Drop the silences that ended by `now`: snoozes whose time is up, incidents that got
    /// worse (they stay back even if they get better again) and incidents no longer listed.
    pub fn prune(&mut self, incidents: &[Incident], now: Ts) {
        self.by_incident.retain(|key, silence| {
            let Some(incident) = incidents.iter().find(|i| i.key == *key) else {
                return false;
            };
            let expired = matches!(silence.hush, Hush::Snoozed { until } if now >= until);
            !expired && !silence.worse(incident)
        });
    }

    pub fn is_empty(&self) -> bool {
        self.by_incident.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::fleet::TargetId;
    use crate::rules::incident::IncidentState;
    use crate::rules::{Finding, FindingState};

    fn engine(n: u32) -> Arc<Subject> {
        Arc::new(Subject::Engine {
            target: TargetId(n),
            id: EngineId {
                model: "m".into(),
                engine: "0".into(),
            },
            name: format!("e{n}"),
        })
    }

    fn incident(severity: Severity, engines: &[u32]) -> Incident {
        let engines: Vec<Arc<Subject>> = engines.iter().map(|&n| engine(n)).collect();
        let head = Finding {
            rule_id: "r".into(),
            title: "R".into(),
            severity,
            subject: Arc::clone(&engines[0]),
            since: 0.0,
            fired_at: Some(0.0),
            state: FindingState::Firing,
            evidence: Vec::new(),
            cause: "".into(),
            action: "".into(),
            suggest: None,
            source: "".into(),
            frozen: false,
        };
        Incident {
            key: IncidentKey {
                rule_id: "r".into(),
                group: "m".into(),
            },
            head,
            severity,
            state: IncidentState::Firing,
            model: Some("m".into()),
            members: Vec::new(),
            engines,
            symptoms: Vec::new(),
            since: 0.0,
            traffic: 0.0,
        }
    }

    #[test]
    fn an_acknowledged_incident_stays_silent_until_it_gets_worse() {
        let mut silences = Silences::default();
        let warn = incident(Severity::Warning, &[1, 2]);
        silences.silence(&warn, Hush::Acked, 10.0);
        assert!(silences.of(&warn).is_some());
        // Fewer engines is not worse.
        let fewer = incident(Severity::Warning, &[2]);
        silences.prune(std::slice::from_ref(&fewer), 20.0);
        assert!(silences.of(&fewer).is_some());
        // A new engine joins: back, and it stays back when the engine leaves again.
        let more = incident(Severity::Warning, &[1, 2, 3]);
        assert!(silences.of(&more).is_none());
        silences.prune(std::slice::from_ref(&more), 30.0);
        silences.prune(std::slice::from_ref(&warn), 40.0);
        assert!(silences.of(&warn).is_none());
    }

    #[test]
    fn a_rise_in_severity_lifts_it() {
        let mut silences = Silences::default();
        silences.silence(&incident(Severity::Warning, &[1]), Hush::Acked, 0.0);
        let crit = incident(Severity::Critical, &[1]);
        assert!(silences.of(&crit).is_none());
        silences.prune(std::slice::from_ref(&crit), 1.0);
        assert!(silences.is_empty());
    }

    #[test]
    fn a_snooze_ends_when_its_time_is_up() {
        let mut silences = Silences::default();
        let i = incident(Severity::Critical, &[1]);
        silences.silence(&i, Hush::Snoozed { until: 900.0 }, 0.0);
        assert_eq!(
            silences.of(&i).and_then(|s| s.remaining(300.0)),
            Some(600.0)
        );
        silences.prune(std::slice::from_ref(&i), 899.0);
        assert!(silences.of(&i).is_some());
        silences.prune(std::slice::from_ref(&i), 900.0);
        assert!(silences.of(&i).is_none());
    }

    #[test]
    fn a_gone_incident_takes_its_silence_along() {
        let mut silences = Silences::default();
        let i = incident(Severity::Info, &[1]);
        silences.silence(&i, Hush::Acked, 0.0);
        silences.prune(&[], 1.0);
        assert!(silences.of(&i).is_none());
        silences.silence(&i, Hush::Acked, 2.0);
        assert!(silences.lift(&i.key));
        assert!(!silences.lift(&i.key));
    }
}
