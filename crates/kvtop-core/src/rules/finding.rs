//! What the rule engine reports: findings with their evidence.

use std::sync::Arc;

use super::model::{Severity, Suggest};
use super::truth::Evidence;
use crate::engine::EngineId;
use crate::fleet::{TargetId, Ts};

/// How long a cleared finding stays listed (greyed, "resolved Nm ago"), seconds.
pub const RESOLVED_KEEP_SECS: f64 = 300.0;

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// One engine (rules with `per = "engine"`).
    Engine {
        target: TargetId,
        id: EngineId,
        /// Display name, as in the fleet table.
        name: String,
    },
    /// The engines serving one model (`per = "model"`).
    Model(String),
    /// The whole fleet (`per = "fleet"`).
    Fleet,
}

impl Subject {
    /// A short label for tables: the engine's name, the model, or "fleet".
    pub fn label(&self) -> &str {
        match self {
            Subject::Engine { name, .. } => name,
            Subject::Model(model) => model,
            Subject::Fleet => "fleet",
        }
    }

    /// Whether this is the engine `(target, id)`.
    pub fn is_engine(&self, target: TargetId, id: &EngineId) -> bool {
        matches!(self, Subject::Engine { target: t, id: i, .. } if *t == target && i == id)
    }
}

/// Where a finding stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FindingState {
    /// The condition holds but not yet for the rule's `for` duration.
    Pending,
    /// The condition held long enough; it stays firing until it clears.
    Firing,
    /// It cleared at `at`; listed for [`RESOLVED_KEEP_SECS`] after that.
    Resolved { at: Ts },
}

impl FindingState {
    /// Sort rank: firing first, then pending, then resolved.
    pub fn rank(self) -> u8 {
        match self {
            FindingState::Firing => 0,
            FindingState::Pending => 1,
            FindingState::Resolved { .. } => 2,
        }
    }
}

/// One rule's finding about one subject.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub rule_id: Arc<str>,
    pub title: Arc<str>,
    pub severity: Severity,
    /// What it is about (shared between the findings about one subject).
    pub subject: Arc<Subject>,
    /// When the condition started to hold (the start of the pending period).
    pub since: Ts,
    /// When it started firing, if it did.
    pub fired_at: Option<Ts>,
    pub state: FindingState,
    /// Each comparison of the rule's condition with current values (for a resolved finding,
    /// the values when it cleared; for a frozen one, the last values evaluated).
    pub evidence: Vec<Evidence>,
    pub cause: Arc<str>,
    pub action: Arc<str>,
    pub suggest: Option<Suggest>,
    /// The table rows the rule encodes, joined: `T2.3, T2.B, T2.M5`.
    pub source: Arc<str>,
    /// True while the engine is not up and the rule reads its metrics: the finding is neither
    /// updated nor cleared until the engine answers again.
    pub frozen: bool,
}

impl Finding {
    /// Seconds since it resolved, for "resolved Nm ago"; `None` unless resolved.
    pub fn resolved_ago(&self, now: Ts) -> Option<f64> {
        match self.state {
            FindingState::Resolved { at } => Some((now - at).max(0.0)),
            _ => None,
        }
    }

    /// Seconds the condition has held (until now, or until it resolved).
    pub fn held_for(&self, now: Ts) -> f64 {
        let end = match self.state {
            FindingState::Resolved { at } => at,
            _ => now,
        };
        (end - self.since).max(0.0)
    }
}

/// Order findings as the engine lists them: firing, then pending, then resolved; each by
/// severity (critical first), then by how long they have held.
pub(crate) fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.state
            .rank()
            .cmp(&b.state.rank())
            .then(b.severity.cmp(&a.severity))
            .then(a.since.total_cmp(&b.since))
    });
}

/// Firing findings by severity, for a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FindingCounts {
    pub critical: usize,
    pub warning: usize,
    pub info: usize,
    pub pending: usize,
    pub resolved: usize,
}
