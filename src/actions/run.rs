//! One action run, for the console and the command line alike: make the plan ([`prepare`]),
//! execute it through [`super::execute`] with progress to the caller, and write a `started`
//! audit record before anything is sent (nothing is sent when it cannot be written), then
//! exactly one record per outcome: ok, error, refused ([`record_refusal`]) or interrupted
//! ([`Run::interrupt`], from the console quitting or a signal to `kvtop drain`). The console and
//! the command line only adapt: events and keys on one side, stderr and exit codes on the other.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::audit::{Attribution, AuditError, AuditLog, AuditRecord, AuditResult, Rollback};
use super::error::PlanError;
use super::execute::{self, ExecError, ExecSettings, Progress, StepError, now_rfc3339};
use super::in_flight::InFlightProbe;
use crate::sources::kube::ClusterClient;
use kvtop_core::actions::plan::{ActionKind, Plan, Policy};
use kvtop_core::kube_model::PodInfo;

/// The audit log, shared by the runs and refusals of one session.
pub type SharedAudit = Arc<Mutex<AuditLog>>;

/// Open the audit log for sharing.
pub fn share(log: AuditLog) -> SharedAudit {
    Arc::new(Mutex::new(log))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves the data usable: a flag and a file.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read what `kind` on `target` needs, decide the plan and, unless read-only mode forbids
/// sending anything at all, review its access (RBAC preflight). `namespace` is ignored for
/// nodes. Also gives the pods a drain waits on.
pub async fn prepare(
    cluster: &ClusterClient,
    kind: ActionKind,
    namespace: &str,
    target: &str,
    policy: &Policy,
    limit: Duration,
) -> Result<(Plan, Vec<PodInfo>), PlanError> {
    let (mut plan, pod) = execute::build_plan(cluster, kind, namespace, target, policy, limit)
        .await
        .map_err(PlanError::Read)?;
    if !policy.read_only {
        execute::preflight(cluster, &mut plan, limit)
            .await
            .map_err(PlanError::Preflight)?;
    }
    Ok((plan, pod))
}

/// Write the record of `who`'s attempt that a guard, RBAC or read-only mode refused.
pub(crate) fn record_refusal(
    audit: &SharedAudit,
    plan: &Plan,
    who: &Attribution,
    reason: String,
) -> Result<(), AuditError> {
    let mut record = AuditRecord::new(plan, who, now_rfc3339(), AuditResult::Refused);
    record.error = Some(reason);
    lock(audit).write(&record)
}

/// A failed step, as the console, the command line and the audit log tell it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{action}: {}", failure_text(.failed, *.total))]
pub struct StepFailure {
    /// `drain pod vllm-0`.
    pub action: String,
    /// How many steps the plan has.
    pub total: usize,
    #[source]
    pub failed: ExecError,
}

/// `step 2 of 3 failed: …`; a node drain that left pods names them, not one step.
fn failure_text(failed: &ExecError, total: usize) -> String {
    match &failed.error {
        StepError::PodsLeft(_) => failed.error.to_string(),
        error => format!("step {} of {total} failed: {error}", failed.step + 1),
    }
}

/// What stopped a run before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// The console quit.
    ConsoleQuit,
    /// A signal to the command line (`SIGTERM`, `SIGINT`, `SIGHUP`).
    Signal(&'static str),
}

impl Interruption {
    /// The record of a run stopped during step `step` (0-based; `None`: before the first).
    fn record(self, plan: &Plan, who: &Attribution, step: Option<usize>) -> AuditRecord {
        let mut record = AuditRecord::new(plan, who, now_rfc3339(), AuditResult::Interrupted);
        let texts = plan.step_texts();
        match self {
            // The console names the step it stopped in and lists the ones before it.
            Interruption::ConsoleQuit => {
                let current = step.unwrap_or(0);
                record.detail = texts.iter().take(current).cloned().collect();
                record.error = Some(match (step, texts.get(current)) {
                    (Some(_), Some(text)) => format!(
                        "the console quit during step {} of {}: {text}",
                        current + 1,
                        texts.len()
                    ),
                    _ => "the console quit before the first step".to_owned(),
                });
            }
            // A script's log reads like its stderr: every step started, the last one cut short.
            Interruption::Signal(name) => {
                let started = step.map_or(0, |s| s + 1);
                record.detail = texts
                    .iter()
                    .take(started)
                    .enumerate()
                    .map(|(index, text)| started_line(index, text))
                    .collect();
                record.error = Some(format!("interrupted by {name}"));
            }
        }
        record
    }
}

/// `started step 2: DELETE …`, as the command line tells a step it began.
fn started_line(index: usize, text: &str) -> String {
    format!("started step {}: {text}", index + 1)
}

/// How a run ended.
#[derive(Debug)]
pub enum RunEnd {
    /// It ran to its end: every step done, or one failed. `audit` says whether its record
    /// could be written.
    Ended {
        outcome: Result<Vec<String>, StepFailure>,
        audit: Result<(), AuditError>,
    },
    /// It was interrupted meanwhile, and [`Run::interrupt`] wrote its record.
    Interrupted,
    /// Its `started` record could not be written, so nothing was sent.
    NotAudited(AuditError),
}

/// A run stopped by [`Run::interrupt`]: its record, and whether it could be written.
#[derive(Debug)]
pub(crate) struct Interrupted {
    pub record: AuditRecord,
    pub audit: Result<(), AuditError>,
}

#[derive(Debug)]
struct RunState {
    plan: Plan,
    who: Attribution,
    /// The step under way (0-based).
    step: Option<usize>,
    /// Its record is written (or was attempted): no other may be.
    finished: bool,
}

/// One run of a plan. Clones share it: one executes, another may interrupt.
#[derive(Debug, Clone)]
pub struct Run {
    state: Arc<Mutex<RunState>>,
    audit: SharedAudit,
}

/// Steps up to and including the one under way: those whose routing removal may have landed.
fn reached(step: Option<usize>) -> usize {
    step.map_or(0, |s| s + 1)
}

impl Run {
    /// A run of `plan` by `who`, audited in `audit`.
    pub fn new(plan: Plan, who: Attribution, audit: SharedAudit) -> Run {
        Run {
            state: Arc::new(Mutex::new(RunState {
                plan,
                who,
                step: None,
                finished: false,
            })),
            audit,
        }
    }

    /// Its record is written: it ended or was interrupted.
    pub fn finished(&self) -> bool {
        lock(&self.state).finished
    }

    /// Execute the plan on `cluster`, the drain wait reading through `probe`, and write the
    /// record of how it ended, unless [`Run::interrupt`] came first.
    pub async fn execute(
        &self,
        cluster: &ClusterClient,
        settings: &ExecSettings,
        probe: &InFlightProbe,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> RunEnd {
        let (plan, who) = {
            let mut state = lock(&self.state);
            if state.finished {
                return RunEnd::Interrupted;
            }
            let started =
                AuditRecord::new(&state.plan, &state.who, now_rfc3339(), AuditResult::Started);
            if let Err(error) = self.write(&started) {
                state.finished = true;
                return RunEnd::NotAudited(error);
            }
            (state.plan.clone(), state.who.clone())
        };
        let state = Arc::clone(&self.state);
        let mut report = |update: Progress| {
            // A node drain runs its pods' steps side by side: the furthest step started
            // bounds the routing an interruption may have to put back.
            if let Progress::Step { index, .. } = &update {
                let mut state = lock(&state);
                state.step = Some(state.step.map_or(*index, |s| s.max(*index)));
            }
            progress(update);
        };
        let result = execute::execute(cluster, &plan, settings, probe, &mut report).await;
        let (record, outcome) = match result {
            Ok(done) => {
                let mut record = AuditRecord::new(&plan, &who, now_rfc3339(), AuditResult::Ok);
                record.detail = done.clone();
                (record, Ok(done))
            }
            Err(failed) => {
                let failure = StepFailure {
                    action: format!(
                        "{} {} {}",
                        plan.kind.name(),
                        plan.kind.target_kind(),
                        plan.target
                    ),
                    total: plan.steps.len(),
                    failed,
                };
                let mut record = AuditRecord::new(&plan, &who, now_rfc3339(), AuditResult::Error);
                record.detail = failure.failed.done.clone();
                record.error = Some(failure.to_string());
                record.rollback = failure.failed.rollback.as_deref().cloned();
                (record, Err(failure))
            }
        };
        let mut state = lock(&self.state);
        if state.finished {
            return RunEnd::Interrupted;
        }
        state.finished = true;
        RunEnd::Ended {
            outcome,
            audit: self.write(&record),
        }
    }

    /// Stop counting on the run's own end and write its `interrupted` record, with the steps
    /// reached, without touching the cluster: routing a drain removed stays removed, and the
    /// record says so. `None` when it had already ended (its record is written). The caller
    /// stops the execution itself (drops or aborts it). For when there is no time to roll back
    /// (the console dropped); [`Run::interrupt_and_restore`] otherwise.
    pub(crate) fn interrupt(&self, cause: Interruption) -> Option<Interrupted> {
        let mut state = lock(&self.state);
        if state.finished {
            return None;
        }
        state.finished = true;
        let mut record = cause.record(&state.plan, &state.who, state.step);
        let left = state.plan.routing_to_restore(reached(state.step));
        if !left.is_empty() {
            record.rollback = Some(Rollback {
                failed: left
                    .iter()
                    .map(|removed| {
                        let (ns, pod) = (&removed.namespace, &removed.pod);
                        format!(
                            "routing NOT restored on {ns}/{pod}: kvtop stopped before it could; run kvtop undrain {pod} -n {ns}"
                        )
                    })
                    .collect(),
                ..Rollback::default()
            });
        }
        drop(state);
        let audit = self.write(&record);
        Some(Interrupted { record, audit })
    }

    /// Like [`Run::interrupt`], but first put back the routing the steps reached had removed
    /// (each rollback line also goes to `progress`). The execution must be stopped already.
    pub(crate) async fn interrupt_and_restore(
        &self,
        cause: Interruption,
        cluster: &ClusterClient,
        limit: Duration,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> Option<Interrupted> {
        let (plan, who, step) = {
            let mut state = lock(&self.state);
            if state.finished {
                return None;
            }
            state.finished = true;
            (state.plan.clone(), state.who.clone(), state.step)
        };
        let rollback =
            execute::restore_routing(cluster, &plan, reached(step), limit, progress).await;
        let mut record = cause.record(&plan, &who, step);
        record.rollback = rollback;
        let audit = self.write(&record);
        Some(Interrupted { record, audit })
    }

    fn write(&self, record: &AuditRecord) -> Result<(), AuditError> {
        lock(&self.audit).write(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::audit::AUDIT_FILE;
    use crate::actions::audit::tests::someone;
    use kvtop_core::actions::plan::plan_cordon;

    fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_default())
            .collect()
    }

    fn audited() -> (tempfile::TempDir, std::path::PathBuf, SharedAudit) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(AUDIT_FILE);
        let log = AuditLog::open(&path).unwrap_or_else(|e| panic!("{e}"));
        (dir, path, share(log))
    }

    #[test]
    fn an_interruption_writes_one_record_and_only_the_first_counts() {
        let (_dir, path, audit) = audited();
        let plan = plan_cordon("prod", "node-a", true, &Policy::default());
        let run = Run::new(plan, someone(), audit);
        let first = run.clone().interrupt(Interruption::ConsoleQuit);
        assert!(first.is_some_and(|i| i.audit.is_ok()));
        assert!(run.finished());
        assert!(run.interrupt(Interruption::Signal("SIGTERM")).is_none());
        let written = lines(&path);
        assert_eq!(written.len(), 1);
        assert_eq!(written[0]["result"], "interrupted");
        assert_eq!(
            written[0]["error"],
            "the console quit before the first step"
        );
    }

    #[test]
    fn each_cause_tells_the_steps_it_reached_its_own_way() {
        let plan = plan_cordon("prod", "node-a", true, &Policy::default());
        let text = plan.step_texts()[0].clone();
        let quit = Interruption::ConsoleQuit.record(&plan, &someone(), Some(0));
        assert!(quit.detail.is_empty());
        assert_eq!(
            quit.error,
            Some(format!("the console quit during step 1 of 1: {text}"))
        );
        let signal = Interruption::Signal("SIGINT").record(&plan, &someone(), Some(0));
        assert_eq!(signal.detail, vec![format!("started step 1: {text}")]);
        assert_eq!(signal.error.as_deref(), Some("interrupted by SIGINT"));
        assert!(
            Interruption::Signal("SIGHUP")
                .record(&plan, &someone(), None)
                .detail
                .is_empty()
        );
    }

    #[test]
    fn a_refusal_is_one_refused_record_with_its_reason() {
        let (_dir, path, audit) = audited();
        let plan = plan_cordon("prod", "node-a", true, &Policy::default());
        record_refusal(&audit, &plan, &someone(), "refused: protected".into())
            .unwrap_or_else(|e| panic!("{e}"));
        let written = lines(&path);
        assert_eq!(written.len(), 1);
        assert_eq!(written[0]["result"], "refused");
        assert_eq!(written[0]["error"], "refused: protected");
    }
}
