//! The console's side of Kubernetes actions, as state: the action menu of the selected pod,
//! the plan screen, and the one action that may run at a time. No I/O: the executor
//! (`commands::console_actions`) reviews access, builds plans and runs them, and answers with
//! [`ActionUpdate`] events; `action_update` folds keys and those events into this state.

use std::collections::BTreeSet;

use crate::actions::{ActionError, ActionKind, AuditProblem, Plan, Progress, StepOp};
use kvtop_core::actions::plan::Access;
use kvtop_core::fleet::{TargetId, Ts};
use kvtop_core::kube_model::PodInfo;

/// One action on one object, as asked for from the console.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    pub kind: ActionKind,
    /// The kubeconfig context of the pod the action was asked on.
    pub context: String,
    /// The namespace (of the pod, or of its Deployment); ignored for nodes.
    pub namespace: String,
    /// The pod, Deployment or node.
    pub target: String,
    /// The engine row of the pod the action was asked on (its live running/waiting).
    pub row: Option<TargetId>,
    /// The pods whose in-flight requests a drain waits on: the pod, or the node's engines.
    pub pods: Vec<PodInfo>,
    /// The pod is scraped through the API server's proxy (else straight at its address).
    pub via_proxy: bool,
}

impl ActionRequest {
    /// `drain pod vllm-0`, `cordon node gpu-node-00`.
    pub fn label(&self) -> String {
        format!(
            "{} {} {}",
            self.kind.name(),
            self.kind.target_kind(),
            self.target
        )
    }
}

/// What the RBAC preflight said about a menu entry.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryAccess {
    /// The access reviews are on their way.
    Checking,
    Allowed,
    /// At least one request is denied: why (the API's words).
    Denied(String),
    /// The reviews could not be made (the plan screen will say more).
    Unknown(String),
}

/// One line of the action menu.
#[derive(Debug, Clone, PartialEq)]
pub struct MenuEntry {
    pub request: ActionRequest,
    pub access: EntryAccess,
}

impl MenuEntry {
    /// True unless RBAC denies it.
    pub fn enabled(&self) -> bool {
        !matches!(self.access, EntryAccess::Denied(_))
    }
}

/// The action menu of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionMenu {
    /// Matches the access review answers to this menu.
    pub id: u64,
    /// `namespace/pod`, for the title.
    pub subject: String,
    pub entries: Vec<MenuEntry>,
    pub selected: usize,
    /// Why some action is missing (e.g. the pod has no Deployment or no node).
    pub notes: Vec<String>,
}

/// A plan screen's button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanButton {
    Cancel,
    Run,
}

/// The plan being shown.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanState {
    /// The cluster is being read and the access reviewed.
    Loading,
    Ready(Box<Plan>),
    /// The plan could not be made: why.
    Failed(String),
}

/// The plan screen: what an action will send, its guards, and Cancel / Run.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanScreen {
    /// Matches the executor's plan to this screen (a new id per dry-run toggle).
    pub id: u64,
    pub request: ActionRequest,
    pub dry_run: bool,
    /// The failed guards that allow it are overridden (Ctrl-O).
    pub overriding: bool,
    /// What a drain does when its wait ends with requests in flight (Ctrl-E).
    pub on_timeout: crate::actions::OnTimeout,
    pub plan: PlanState,
    /// Cancel until the operator moves the focus.
    pub focus: PlanButton,
    /// What the operator typed to confirm.
    pub typed: String,
    /// First line shown of the steps and guards.
    pub scroll: usize,
    /// The last refusal, shown under the buttons.
    pub message: Option<String>,
}

/// A failed step, as the progress panel and the footer tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFailure {
    /// 0-based.
    pub step: usize,
    /// One sentence: what failed and why, in the API's words.
    pub message: String,
    /// What had been done before it.
    pub done: Vec<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    Done(Vec<String>),
    Failed(RunFailure),
}

/// The running (or last) action.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRun {
    pub id: u64,
    pub plan: Plan,
    pub row: Option<TargetId>,
    pub started: Ts,
    /// The step under way (0-based), once the first has started.
    pub step: Option<usize>,
    pub step_started: Ts,
    /// The drain wait's first and latest readings of running + waiting (`None`: unreadable).
    pub in_flight_first: Option<f64>,
    pub in_flight_last: Option<f64>,
    /// How many readings arrived (0: the wait has not read the engine yet).
    pub readings: usize,
    /// Each waited-on pod's first and latest reading (`namespace/name`), in the order their
    /// waits began: a node drain waits on several side by side.
    pub pod_readings: Vec<(String, Option<f64>, Option<f64>)>,
    /// Every step started so far: a node drain runs its pods' steps side by side, so the last
    /// one started does not say which are done.
    pub steps_started: Vec<usize>,
    /// Retries, timeouts and other things worth telling.
    pub notes: Vec<String>,
    pub outcome: Option<RunOutcome>,
}

impl ActionRun {
    /// Still under way.
    pub fn running(&self) -> bool {
        self.outcome.is_none()
    }

    /// The drain wait's limit, seconds, when the current step is the wait.
    pub(crate) fn wait_timeout(&self) -> Option<f64> {
        let step = self.plan.steps.get(self.step?)?;
        match step.op {
            StepOp::WaitIdle { timeout_s, .. } => Some(timeout_s),
            _ => None,
        }
    }

    /// `drain vllm-x: step 2/3`, for the footer.
    pub(crate) fn status_line(&self) -> String {
        let total = self.plan.steps.len();
        let name = format!("{} {}", self.plan.kind.name(), self.plan.target);
        match (&self.outcome, self.step) {
            (None, Some(step)) => format!("{name}: step {}/{total}", step + 1),
            (None, None) => format!("{name}: starting"),
            (Some(RunOutcome::Done(_)), _) => format!("{name}: done"),
            (Some(RunOutcome::Failed(f)), _) => {
                format!("{name}: step {}/{total} failed", f.step + 1)
            }
        }
    }

    /// Fold one progress report in.
    pub(crate) fn record(&mut self, progress: Progress, now: Ts) {
        match progress {
            Progress::Step { index, .. } => {
                self.step = Some(index);
                self.step_started = now;
                self.steps_started.push(index);
            }
            Progress::InFlight { pod, in_flight } => {
                if self.readings == 0 {
                    self.in_flight_first = in_flight;
                }
                self.readings += 1;
                self.in_flight_last = in_flight;
                match self.pod_readings.iter_mut().find(|(p, _, _)| *p == pod) {
                    Some((_, _, last)) => *last = in_flight,
                    None => self.pod_readings.push((pod, in_flight, in_flight)),
                }
            }
            Progress::Note(text) => self.notes.push(text),
        }
    }
}

/// Everything the console knows about actions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionsView {
    /// Actions are offered at all: Kubernetes discovery is on, `--read-only` is not given, and
    /// some watched context is not read-only. Set by the console at start.
    pub enabled: bool,
    /// Contexts with `read_only = true`: their pods are offered no action.
    pub read_only_contexts: BTreeSet<String>,
    /// The configured label whose removal takes a pod out of routing (for the menu's access
    /// checks); empty: routing is derived from the pod's routes.
    pub routing_label: String,
    /// The audit log could not be opened: nothing may run, and the plan screen says why.
    pub audit_problem: Option<String>,
    pub menu: Option<ActionMenu>,
    pub plan: Option<PlanScreen>,
    /// The running action, or the last one until its panel is closed (whether the panel is
    /// shown is `Mode::ActionProgress` on `App::modes`).
    pub run: Option<ActionRun>,
    next_id: u64,
}

impl ActionsView {
    /// Actions offered through contexts not in `read_only_contexts`.
    pub fn new(routing_label: &str, read_only_contexts: BTreeSet<String>) -> ActionsView {
        ActionsView {
            enabled: true,
            read_only_contexts,
            routing_label: routing_label.to_owned(),
            ..ActionsView::default()
        }
    }

    /// A fresh id for a menu, plan or run.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The action under way, if any.
    pub fn running(&self) -> Option<&ActionRun> {
        self.run.as_ref().filter(|r| r.running())
    }

    /// Whether actions may be offered through `context`.
    pub fn allows(&self, context: &str) -> bool {
        self.enabled && !self.read_only_contexts.contains(context)
    }
}

/// What the executor tells the console about actions.
#[derive(Debug, Clone, PartialEq)]
pub enum ActionUpdate {
    /// The access reviews of one menu entry: the denials (empty: allowed), or why they could
    /// not be made.
    Access {
        menu: u64,
        entry: usize,
        result: Result<Vec<String>, ActionError>,
    },
    /// The plan of a plan screen, read from the cluster and reviewed, or why it could not be.
    Planned {
        id: u64,
        plan: Result<Box<Plan>, ActionError>,
    },
    /// A run's progress.
    Progress { id: u64, progress: Progress },
    /// A run ended (its audit line is written).
    Finished {
        id: u64,
        outcome: Result<Vec<String>, RunFailure>,
    },
    /// An audit line could not be written (no log, or the write failed).
    AuditFailed(AuditProblem),
}

/// The access checks of one menu entry: one per request its plan will send.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryChecks {
    pub entry: usize,
    pub accesses: Vec<Access>,
}
