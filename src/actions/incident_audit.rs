//! Audit lines of the incidents the operator acknowledged or snoozed: who took an incident on,
//! and until when, in the same log as the actions.

use super::audit::{AuditError, AuditLog};
use super::identity::{Identity, UserSource};
use kvtop_core::fleet::Ts;

/// What the audit log records of an acknowledgement or a snooze.
#[derive(Debug, Clone, PartialEq)]
pub struct IncidentNote {
    /// `acknowledge`, `unacknowledge`, `snooze` or `unsnooze`.
    pub action: &'static str,
    /// The head rule's id.
    pub rule_id: String,
    pub title: String,
    /// Where it is (`vllm-a`, `model ×3`, `fleet`).
    pub place: String,
    pub severity: String,
    /// Names of the engines it touches.
    pub engines: Vec<String>,
    /// End of a snooze (Unix seconds).
    pub until: Option<Ts>,
    /// The Kubernetes context and namespace of its first engine's pod, when it is one (whose
    /// user the log names).
    pub context: Option<String>,
    pub namespace: Option<String>,
}

/// One audit line about an incident.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IncidentAuditRecord {
    /// RFC 3339.
    pub time: String,
    pub user: String,
    pub user_source: UserSource,
    pub os_user: Option<String>,
    pub context: Option<String>,
    pub namespace: Option<String>,
    /// `acknowledge`, `unacknowledge`, `snooze` or `unsnooze`.
    pub action: String,
    /// Where the incident is (`vllm-a`, `model ×3`, `fleet`).
    pub target: String,
    /// The head rule's id and title.
    pub incident: String,
    pub title: String,
    pub severity: String,
    pub engines: Vec<String>,
    /// End of a snooze, RFC 3339.
    pub until: Option<String>,
}

impl IncidentAuditRecord {
    /// The record of `who`'s `note` at `time`.
    pub fn new(note: &IncidentNote, who: &Identity, time: String) -> IncidentAuditRecord {
        IncidentAuditRecord {
            time,
            user: who.user.clone(),
            user_source: who.source,
            os_user: who.os_user.clone(),
            context: note.context.clone(),
            namespace: note.namespace.clone(),
            action: note.action.to_owned(),
            target: note.place.clone(),
            incident: note.rule_id.clone(),
            title: note.title.clone(),
            severity: note.severity.clone(),
            engines: note.engines.clone(),
            until: note.until.and_then(rfc3339),
        }
    }
}

fn rfc3339(secs: f64) -> Option<String> {
    if !secs.is_finite() {
        return None;
    }
    k8s_openapi::jiff::Timestamp::from_second(secs.floor() as i64)
        .ok()
        .map(|t| t.to_string())
}

/// Append `who`'s `note` to `log`, timed now.
pub fn write_note(
    log: &mut AuditLog,
    note: &IncidentNote,
    who: &Identity,
) -> Result<(), AuditError> {
    let record = IncidentAuditRecord::new(note, who, super::execute::now_rfc3339());
    log.write(&record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snooze_is_one_line_with_the_user_and_its_end() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("audit.jsonl");
        let mut log = AuditLog::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let note = IncidentNote {
            action: "snooze",
            rule_id: "crash-loop".into(),
            title: "Container crash-looping".into(),
            place: "vllm-a".into(),
            severity: "critical".into(),
            engines: vec!["vllm-a".into()],
            until: Some(1_800_000_900.0),
            context: Some("prod".into()),
            namespace: Some("llm".into()),
        };
        let who = crate::actions::audit::tests::someone().identity;
        write_note(&mut log, &note, &who).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_default();
        assert_eq!(text.lines().count(), 1);
        assert_eq!(line["action"], "snooze");
        assert_eq!(line["incident"], "crash-loop");
        assert_eq!(line["user"], "alice@example.com");
        assert_eq!(line["os_user"], "alice");
        assert_eq!(line["context"], "prod");
        assert_eq!(line["until"], "2027-01-15T08:15:00Z");
    }
}
