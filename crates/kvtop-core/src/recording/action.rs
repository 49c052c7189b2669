//! What a recording keeps of the actions run from the console: when each started and how it
//! ended, so that a replay shows them where they happened and a postmortem lists them next to
//! the findings. The plan's requests are kept as the console showed them; the audit log stays
//! the record of who did what (a recording names no user).

use crate::actions::Plan;

/// One moment of an action run: its start, or its end.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ActionNote {
    /// The run's number in the recorded console (its start and its end share it).
    pub run: u64,
    /// `drain`, `restart`, `cordon`, …
    pub action: String,
    pub context: String,
    /// `None` for nodes.
    pub namespace: Option<String>,
    pub target: String,
    /// Sent with `dryRun=All`: nothing changed.
    pub dry_run: bool,
    /// Flattened: the phase's tag and fields sit beside the run's.
    #[serde(flatten)]
    pub phase: ActionPhase,
}

/// Where the run was.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum ActionPhase {
    /// Confirmed by the user: the requests it was to send, as the plan described them (a run
    /// refused before its first request ends at once, failed, with nothing done).
    Started { steps: Vec<String> },
    /// Every step done: what was done. `unrecorded` when its audit line could not be written.
    Done {
        done: Vec<String>,
        unrecorded: Option<String>,
    },
    /// Step `step` (0-based) failed, after `done`.
    Failed {
        step: usize,
        message: String,
        done: Vec<String>,
    },
}

impl ActionNote {
    /// A note of run `run` of `plan` at `phase`.
    pub fn of(run: u64, plan: &Plan, phase: ActionPhase) -> ActionNote {
        ActionNote {
            run,
            action: plan.kind.name().to_owned(),
            context: plan.context.clone(),
            namespace: plan.namespace.clone(),
            target: plan.target.clone(),
            dry_run: plan.dry_run,
            phase,
        }
    }

    /// The start of run `run` of `plan`.
    pub fn started(run: u64, plan: &Plan) -> ActionNote {
        let steps = plan.steps.iter().map(|s| s.describe()).collect();
        ActionNote::of(run, plan, ActionPhase::Started { steps })
    }

    /// `drain vllm-x`, as the console names a run.
    pub fn name(&self) -> String {
        format!("{} {}", self.action, self.target)
    }

    /// What happened, in the console's words: `drain vllm-x: done`.
    pub fn summary(&self) -> String {
        let name = self.name();
        match &self.phase {
            ActionPhase::Started { steps } if self.dry_run => {
                format!("{name}: dry run confirmed ({} requests)", steps.len())
            }
            ActionPhase::Started { steps } => {
                format!("{name}: confirmed ({} requests)", steps.len())
            }
            ActionPhase::Done { .. } if self.dry_run => {
                format!("{name}: dry run done, nothing changed")
            }
            ActionPhase::Done {
                unrecorded: Some(problem),
                ..
            } => format!("{name}: done, but NOT recorded: {problem}"),
            ActionPhase::Done { .. } => format!("{name}: done"),
            // The message says which step and why, as the console showed it.
            ActionPhase::Failed { message, .. } => format!("{name}: {message}"),
        }
    }

    /// An end (done or failed), rather than a start.
    pub fn ended(&self) -> bool {
        !matches!(self.phase, ActionPhase::Started { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(phase: ActionPhase, dry_run: bool) -> ActionNote {
        ActionNote {
            run: 3,
            action: "drain".into(),
            context: "prod".into(),
            namespace: Some("llm".into()),
            target: "vllm-0".into(),
            dry_run,
            phase,
        }
    }

    #[test]
    fn each_phase_reads_as_the_console_said_it() {
        let started = note(
            ActionPhase::Started {
                steps: vec!["PATCH a".into(), "WAIT b".into()],
            },
            false,
        );
        assert_eq!(started.summary(), "drain vllm-0: confirmed (2 requests)");
        assert!(!started.ended());
        let done = note(
            ActionPhase::Done {
                done: vec![],
                unrecorded: None,
            },
            false,
        );
        assert_eq!(done.summary(), "drain vllm-0: done");
        assert!(done.ended());
        let dry = note(
            ActionPhase::Done {
                done: vec![],
                unrecorded: None,
            },
            true,
        );
        assert_eq!(dry.summary(), "drain vllm-0: dry run done, nothing changed");
        let failed = note(
            ActionPhase::Failed {
                step: 1,
                message: "step 2 (WAIT) failed: 403 forbidden".into(),
                done: vec!["PATCH a".into()],
            },
            false,
        );
        assert_eq!(
            failed.summary(),
            "drain vllm-0: step 2 (WAIT) failed: 403 forbidden"
        );
    }

    #[test]
    fn a_note_survives_its_json() {
        let failed = note(
            ActionPhase::Failed {
                step: 0,
                message: "gone".into(),
                done: vec![],
            },
            true,
        );
        let json = serde_json::to_string(&failed).expect("serializes");
        assert!(json.contains(r#""phase":"failed""#), "{json}");
        assert_eq!(
            serde_json::from_str::<ActionNote>(&json).expect("parses"),
            failed
        );
    }
}
