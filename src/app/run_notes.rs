//! What a recording keeps of the console's action runs: each run's start, once the user
//! confirmed it, and its end, read off the console's state after each event (the runner's
//! updates carry no plan; the state has it).

use super::actions::{ActionsView, RunOutcome};
use kvtop_core::fleet::Ts;
use kvtop_core::recording::{ActionNote, ActionPhase};

/// Which of the console's action runs a recording has told: each run's start once the user
/// confirmed it, its end once it ended.
#[derive(Debug, Default)]
pub struct RunWatch {
    /// The run last told, and whether its end was.
    told: Option<(u64, bool)>,
}

impl RunWatch {
    /// What the console's run did since the last call, each with its time.
    pub fn notes(&mut self, actions: &ActionsView, now: Ts) -> Vec<(Ts, ActionNote)> {
        let Some(run) = &actions.run else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        if self.told.is_none_or(|(id, _)| id != run.id) {
            notes.push((run.started, ActionNote::started(run.id, &run.plan)));
            self.told = Some((run.id, false));
        }
        if let (Some(outcome), Some((_, ended @ false))) = (&run.outcome, self.told.as_mut()) {
            *ended = true;
            let phase = match outcome {
                RunOutcome::Done(done) => ActionPhase::Done {
                    done: done.clone(),
                    unrecorded: actions.audit_problem.clone(),
                },
                RunOutcome::Failed(failure) => ActionPhase::Failed {
                    step: failure.step,
                    message: failure.message.clone(),
                    done: failure.done.clone(),
                },
            };
            // Seen as soon as the end was folded in: a run keeps no time of its end.
            notes.push((now, ActionNote::of(run.id, &run.plan, phase)));
        }
        notes
    }
}
