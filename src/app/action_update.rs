//! How keys and the executor's answers change the actions' state: opening the menu (with its
//! RBAC preflight), the plan screen (Cancel focused, the typed name, the dry-run toggle),
//! starting a run, and folding in its progress and end.

use crossterm::event::{KeyCode, KeyEvent};

use super::Command;
use super::actions::{
    ActionMenu, ActionRequest, ActionRun, ActionUpdate, EntryAccess, EntryChecks, MenuEntry,
    PlanButton, PlanScreen, PlanState, RunOutcome,
};
use super::keys::Action;
use super::mode::Mode;
use super::state::{App, Notice, NoticeKind, PROBLEM_SECS, View};
use crate::actions::{ActionKind, OnTimeout, Plan, Policy};
use kvtop_core::actions::node_drain::{EnginePod, NodePods, plan_drain_node};
use kvtop_core::actions::plan::{plan_cordon, plan_pod, plan_rollout_restart, plan_undrain};
use kvtop_core::fleet::{TargetId, Ts};
use kvtop_core::kube_model::{PodInfo, ScrapeRoute};
use kvtop_core::recording::{ActionNote, ActionPhase};
use kvtop_core::rules::Subject;

/// Why Run cannot be pressed yet, or that it can.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunGate {
    Ready,
    /// The plan is being read, or could not be made.
    NotReady(String),
    /// Guards refuse it and typing the name cannot override them.
    Refused(Vec<String>),
    /// Something outside the plan stops it (no audit log, another action running).
    Blocked(String),
    /// The target's name must be typed first.
    NeedsName,
    /// A failed guard allows an override, which is not given (Ctrl-O).
    NeedsOverride(Vec<String>),
}

/// Whether the plan screen may run its plan now.
pub(crate) fn run_gate(screen: &PlanScreen, app: &App) -> RunGate {
    let plan = match &screen.plan {
        PlanState::Loading => return RunGate::NotReady("reading the cluster…".into()),
        PlanState::Failed(why) => return RunGate::NotReady(why.clone()),
        PlanState::Ready(plan) => plan,
    };
    let hard: Vec<String> = plan
        .blocking_guards(true)
        .iter()
        .map(|g| format!("{}: {}", g.name, g.reason))
        .collect();
    if !hard.is_empty() {
        return RunGate::Refused(hard);
    }
    if let Some(problem) = &app.actions.audit_problem {
        return RunGate::Blocked(format!("{problem}; refusing to act without an audit log"));
    }
    if let Some(run) = app.actions.running() {
        return RunGate::Blocked(format!(
            "one action at a time: {} is running",
            run.status_line()
        ));
    }
    // Overriding is its own gesture; the typed name then confirms it, as on a protected
    // context, and never overrides anything by itself.
    let failed: Vec<String> = plan
        .blocking_guards(screen.overriding)
        .iter()
        .map(|g| format!("{}: {}", g.name, g.reason))
        .collect();
    if !failed.is_empty() {
        return RunGate::NeedsOverride(failed);
    }
    if plan.requires_typed_name && screen.typed != plan.target {
        return RunGate::NeedsName;
    }
    RunGate::Ready
}

impl App {
    /// The engine the actions would act on, and its pod: in the fleet view the selected
    /// engine; in the diagnostics view the selected finding's engine (else the fleet's
    /// selection). `None` when that engine is not a discovered Kubernetes pod.
    pub(crate) fn action_subject(&self) -> Option<(TargetId, &PodInfo)> {
        let fleet_target = || self.selected_engine(self.visible_rows()).map(|e| e.target);
        let target = match self.view {
            View::Fleet => fleet_target(),
            View::Diagnostics => {
                let finding_target = self.diag.selected_finding(self.diag.view()).and_then(|f| {
                    match f.subject.as_ref() {
                        Subject::Engine { target, .. } => Some(*target),
                        _ => None,
                    }
                });
                finding_target.or_else(fleet_target)
            }
            View::Routing | View::Nodes => None,
        }?;
        let pod = self.fleet.pod_info(target)?;
        Some((target, pod))
    }

    /// Whether the pod's action keys (`a`, `D`, `R`) exist now: actions are enabled, the view
    /// is the fleet or diagnostics, and the engine acted on is a pod of a context that allows
    /// changes.
    pub(crate) fn pod_actions_offered(&self) -> bool {
        self.kube.enabled
            && self.actions.enabled
            && self
                .action_subject()
                .is_some_and(|(_, pod)| self.actions.allows(&pod.key.context))
    }
}

/// The pod's action keys in the fleet and diagnostics views: `Some(commands)`, or `None` when
/// `action` is not one of them.
pub(super) fn pod_key(app: &mut App, action: Action, now: Ts) -> Option<Vec<Command>> {
    let commands = match action {
        Action::OpenActionMenu => open_menu(app, now),
        Action::PlanDrainPod => plan_for_pod(app, ActionKind::DrainPod, now),
        Action::PlanRestartPod => plan_for_pod(app, ActionKind::RestartPod, now),
        _ => return None,
    };
    app.dirty = true;
    Some(commands)
}

/// A key of the action menu.
pub(super) fn menu_key(app: &mut App, action: Action, now: Ts) -> Vec<Command> {
    app.dirty = true;
    match action {
        Action::MenuDown | Action::MenuUp => {
            if let Some(menu) = app.actions.menu.as_mut() {
                let last = menu.entries.len().saturating_sub(1);
                menu.selected = if action == Action::MenuDown {
                    (menu.selected + 1).min(last)
                } else {
                    menu.selected.saturating_sub(1)
                };
            }
        }
        Action::MenuChoose => return choose(app, now),
        Action::MenuClose => {
            app.actions.menu = None;
            app.modes.close(Mode::ActionMenu);
        }
        Action::ToggleHelp => app.modes.open(Mode::Help),
        _ => {}
    }
    Vec::new()
}

/// A key of the plan screen.
pub(super) fn plan_key(app: &mut App, action: Action, key: &KeyEvent, now: Ts) -> Vec<Command> {
    app.dirty = true;
    match action {
        Action::PlanActivate => return activate(app, now),
        Action::PlanToggleDryRun => return toggle_dry_run(app),
        Action::PlanToggleOnTimeout => return toggle_on_timeout(app),
        Action::PlanToggleOverride => {
            if let Some(screen) = app.actions.plan.as_mut() {
                screen.overriding = !screen.overriding;
                screen.message = None;
            }
        }
        Action::PlanCancel => close_plan(app),
        Action::PlanCopy => {
            let text = match app.actions.plan.as_ref().map(|s| &s.plan) {
                Some(PlanState::Ready(plan)) => plan.render(),
                _ => String::new(),
            };
            app.copy("the plan", text, now);
        }
        Action::ToggleHelp => app.modes.open(Mode::Help),
        _ => {
            if let Some(screen) = app.actions.plan.as_mut() {
                edit_plan_screen(screen, action, key);
            }
        }
    }
    Vec::new()
}

/// Focus, scrolling and the typed name of the plan screen.
fn edit_plan_screen(screen: &mut PlanScreen, action: Action, key: &KeyEvent) {
    match action {
        Action::PlanFocusNext | Action::PlanFocusPrev => {
            screen.focus = match screen.focus {
                PlanButton::Cancel => PlanButton::Run,
                PlanButton::Run => PlanButton::Cancel,
            };
        }
        Action::PlanScrollDown => screen.scroll = screen.scroll.saturating_add(1),
        Action::PlanScrollUp => screen.scroll = screen.scroll.saturating_sub(1),
        Action::PlanInput => {
            let wants_name = matches!(&screen.plan, PlanState::Ready(p) if p.requires_typed_name);
            if let (true, KeyCode::Char(c)) = (wants_name, key.code) {
                screen.typed.push(c);
                screen.message = None;
            }
        }
        Action::PlanBackspace => {
            screen.typed.pop();
        }
        _ => {}
    }
}

/// A key of the progress panel.
pub(super) fn progress_key(app: &mut App, action: Action) -> Vec<Command> {
    app.dirty = true;
    match action {
        Action::HideProgress => {
            app.modes.close(Mode::ActionProgress);
            if app.actions.run.as_ref().is_some_and(|r| !r.running()) {
                app.actions.run = None;
            }
        }
        Action::ToggleHelp => app.modes.open(Mode::Help),
        _ => {}
    }
    Vec::new()
}

fn close_plan(app: &mut App) {
    app.actions.plan = None;
    app.modes.close(Mode::ActionPlan);
}

/// Fold an answer of the executor in.
pub(super) fn apply(app: &mut App, update: ActionUpdate, now: Ts) -> Vec<Command> {
    let actions = &mut app.actions;
    match update {
        ActionUpdate::Access {
            menu,
            entry,
            result,
        } => {
            let entry = actions
                .menu
                .as_mut()
                .filter(|m| m.id == menu)
                .and_then(|m| m.entries.get_mut(entry));
            if let Some(entry) = entry {
                entry.access = match result {
                    Ok(denials) if denials.is_empty() => EntryAccess::Allowed,
                    Ok(denials) => EntryAccess::Denied(denials.join("; ")),
                    Err(why) => EntryAccess::Unknown(why.to_string()),
                };
            }
        }
        ActionUpdate::Planned { id, plan } => {
            if let Some(screen) = actions.plan.as_mut().filter(|s| s.id == id) {
                screen.plan = match plan {
                    Ok(plan) => PlanState::Ready(plan),
                    Err(why) => PlanState::Failed(why.to_string()),
                };
            }
        }
        ActionUpdate::Progress { id, progress } => {
            if let Some(run) = actions.run.as_mut().filter(|r| r.id == id) {
                run.record(progress, now);
            }
        }
        ActionUpdate::Finished { id, outcome } => {
            if let Some(run) = actions.run.as_mut().filter(|r| r.id == id) {
                let name = format!("{} {}", run.plan.kind.name(), run.plan.target);
                let kind = match &outcome {
                    Ok(_) if run.plan.dry_run => {
                        NoticeKind::Action(format!("{name}: dry run done, nothing changed"))
                    }
                    Ok(_) => match &actions.audit_problem {
                        // Its outcome went unrecorded: that stays the news, not "done".
                        Some(problem) => NoticeKind::ActionFailed(format!(
                            "{name}: done, but NOT recorded: {problem}"
                        )),
                        None => NoticeKind::Action(format!("{name}: done")),
                    },
                    Err(failure) => NoticeKind::ActionFailed(failure.message.clone()),
                };
                let unrecorded = actions.audit_problem.is_some();
                run.outcome = Some(match outcome {
                    Ok(done) => RunOutcome::Done(done),
                    Err(failure) => RunOutcome::Failed(failure),
                });
                if unrecorded {
                    lasting_notice(app, kind);
                } else {
                    long_notice(app, kind, now);
                }
            }
        }
        ActionUpdate::AuditFailed(problem) => {
            // Every later run is refused with this reason (see `run_gate`), and the notice
            // stays until another replaces it.
            actions.audit_problem = Some(problem.to_string());
            lasting_notice(app, NoticeKind::ActionFailed(problem.to_string()));
        }
    }
    app.dirty = true;
    Vec::new()
}

/// A recorded action's start or end, in a replay: the footer tells it as the recorded console
/// did (the replay runs nothing).
pub(super) fn replayed(app: &mut App, note: &ActionNote, now: Ts) {
    let failed = matches!(
        note.phase,
        ActionPhase::Failed { .. }
            | ActionPhase::Done {
                unrecorded: Some(_),
                ..
            }
    );
    let text = note.summary();
    let kind = if failed {
        NoticeKind::ActionFailed(text)
    } else {
        NoticeKind::Action(text)
    };
    long_notice(app, kind, now);
    app.dirty = true;
}

/// A notice that does not time out: an action whose record was lost.
fn lasting_notice(app: &mut App, kind: NoticeKind) {
    app.notice = Some(Notice {
        kind,
        until: f64::INFINITY,
    });
}

fn long_notice(app: &mut App, kind: NoticeKind, now: Ts) {
    app.notice = Some(Notice {
        kind,
        until: now + PROBLEM_SECS,
    });
}

/// While an action runs no other starts: say so and show its progress. True when one runs.
fn busy(app: &mut App, now: Ts) -> bool {
    let Some(status) = app.actions.running().map(|r| r.status_line()) else {
        return false;
    };
    app.modes.open(Mode::ActionProgress);
    long_notice(
        app,
        NoticeKind::Action(format!("one action at a time: {status}")),
        now,
    );
    true
}

/// The subject pod with everything a request needs, or a notice when there is none.
fn subject(app: &mut App, now: Ts) -> Option<(TargetId, PodInfo, bool)> {
    let found = app.action_subject().map(|(t, p)| (t, p.clone()));
    let Some((target, pod)) = found else {
        app.set_notice(
            NoticeKind::Action("the selected engine is not a discovered Kubernetes pod".into()),
            now,
        );
        return None;
    };
    let via_proxy = app.kube.routes.get(&target) == Some(&ScrapeRoute::Proxy);
    Some((target, pod, via_proxy))
}

fn request(
    kind: ActionKind,
    target_name: &str,
    row: TargetId,
    pod: &PodInfo,
    via_proxy: bool,
) -> ActionRequest {
    ActionRequest {
        kind,
        context: pod.key.context.clone(),
        namespace: pod.key.namespace.clone(),
        target: target_name.to_owned(),
        row: Some(row),
        pods: vec![pod.clone()],
        via_proxy,
    }
}

/// Every watched pod of `context`.
fn pods_of_context(app: &App, context: &str) -> Vec<PodInfo> {
    app.kube
        .targets
        .iter()
        .filter(|(key, _)| key.context == context)
        .filter_map(|(_, id)| app.fleet.pod_info(*id).cloned())
        .collect()
}

/// The watched pods bound to `node`.
fn on_node(pods: &[PodInfo], node: &str) -> Vec<PodInfo> {
    pods.iter()
        .filter(|p| p.node.as_deref() == Some(node))
        .cloned()
        .collect()
}

/// The plan an entry's access checks come from, built from what the console knows (the
/// executor reads the cluster again for the plan screen).
fn sketch(app: &App, request: &ActionRequest, pod: &PodInfo) -> Plan {
    let mut policy = Policy::default();
    if !app.actions.routing_label.is_empty() {
        policy.routing_label = Some(app.actions.routing_label.clone());
    }
    let all = pods_of_context(app, &request.context);
    match request.kind {
        ActionKind::DrainPod | ActionKind::RestartPod => {
            plan_pod(request.kind, pod, &all, None, &policy)
        }
        ActionKind::Undrain => plan_undrain(pod, &[], &policy),
        ActionKind::RolloutRestart => plan_rollout_restart(
            &request.context,
            &request.namespace,
            &request.target,
            "",
            &policy,
        ),
        ActionKind::Cordon | ActionKind::Uncordon => plan_cordon(
            &request.context,
            &request.target,
            request.kind == ActionKind::Cordon,
            &policy,
        ),
        ActionKind::DrainNode => {
            // Every watched pod is an engine; the executor reads the node's other pods and
            // the budgets when it plans for real.
            let engines: Vec<EnginePod> = on_node(&all, &request.target)
                .into_iter()
                .map(|pod| EnginePod { pod, grace_s: None })
                .collect();
            let pods = NodePods {
                engines: &engines,
                others: &[],
                all: &all,
                budgets: &[],
                unreadable_budgets: &[],
            };
            plan_drain_node(&request.context, &request.target, pods, &policy)
        }
    }
}

fn open_menu(app: &mut App, now: Ts) -> Vec<Command> {
    if busy(app, now) {
        return Vec::new();
    }
    let Some((row, pod, via_proxy)) = subject(app, now) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    let mut requests = vec![
        request(ActionKind::DrainPod, &pod.key.name, row, &pod, via_proxy),
        request(ActionKind::RestartPod, &pod.key.name, row, &pod, via_proxy),
    ];
    match pod.owner.as_ref().and_then(|o| o.deployment.as_deref()) {
        Some(deployment) => requests.push(request(
            ActionKind::RolloutRestart,
            deployment,
            row,
            &pod,
            via_proxy,
        )),
        None => notes.push("no Deployment owns the pod: no rollout restart".to_owned()),
    }
    match pod.node.as_deref() {
        Some(node) => {
            for kind in [
                ActionKind::Cordon,
                ActionKind::Uncordon,
                ActionKind::DrainNode,
            ] {
                let mut asked = request(kind, node, row, &pod, via_proxy);
                if kind == ActionKind::DrainNode {
                    asked.pods = on_node(&pods_of_context(app, &pod.key.context), node);
                }
                requests.push(asked);
            }
        }
        None => notes.push("the pod is on no node yet: no node action".to_owned()),
    }
    // A pod out of routing may be one a drain stopped short of evicting: it can be put back.
    if pod.routed == Some(false) {
        requests.push(request(
            ActionKind::Undrain,
            &pod.key.name,
            row,
            &pod,
            via_proxy,
        ));
    }
    let checks: Vec<EntryChecks> = requests
        .iter()
        .enumerate()
        .map(|(entry, r)| EntryChecks {
            entry,
            accesses: sketch(app, r, &pod).accesses(),
        })
        .collect();
    let id = app.actions.next_id();
    app.modes.open(Mode::ActionMenu);
    app.actions.menu = Some(ActionMenu {
        id,
        subject: format!("{}/{}", pod.key.namespace, pod.key.name),
        entries: requests
            .into_iter()
            .map(|request| MenuEntry {
                request,
                access: EntryAccess::Checking,
            })
            .collect(),
        selected: 0,
        notes,
    });
    vec![Command::ReviewAccess {
        menu: id,
        context: pod.key.context.clone(),
        checks,
    }]
}

fn plan_for_pod(app: &mut App, kind: ActionKind, now: Ts) -> Vec<Command> {
    if busy(app, now) {
        return Vec::new();
    }
    let Some((row, pod, via_proxy)) = subject(app, now) else {
        return Vec::new();
    };
    open_plan(app, request(kind, &pod.key.name, row, &pod, via_proxy))
}

/// Show the plan screen of `request` (Cancel focused) and ask the executor for its plan.
fn open_plan(app: &mut App, request: ActionRequest) -> Vec<Command> {
    let id = app.actions.next_id();
    app.actions.menu = None;
    app.modes.replace(Mode::ActionMenu, Mode::ActionPlan);
    app.actions.plan = Some(PlanScreen {
        id,
        request: request.clone(),
        dry_run: false,
        overriding: false,
        on_timeout: OnTimeout::Stop,
        plan: PlanState::Loading,
        focus: PlanButton::Cancel,
        typed: String::new(),
        scroll: 0,
        message: None,
    });
    vec![Command::PlanAction {
        id,
        request: Box::new(request),
        dry_run: false,
        on_timeout: OnTimeout::Stop,
    }]
}

fn choose(app: &mut App, now: Ts) -> Vec<Command> {
    let Some(menu) = app.actions.menu.as_ref() else {
        return Vec::new();
    };
    let Some(entry) = menu.entries.get(menu.selected) else {
        return Vec::new();
    };
    match &entry.access {
        EntryAccess::Denied(why) => {
            let text = format!("{}: denied: {why}", entry.request.label());
            app.set_notice(NoticeKind::ActionFailed(text), now);
            Vec::new()
        }
        _ => {
            let request = entry.request.clone();
            open_plan(app, request)
        }
    }
}

fn toggle_dry_run(app: &mut App) -> Vec<Command> {
    let id = app.actions.next_id();
    let Some(screen) = app.actions.plan.as_mut() else {
        return Vec::new();
    };
    screen.id = id;
    screen.dry_run = !screen.dry_run;
    screen.plan = PlanState::Loading;
    screen.focus = PlanButton::Cancel;
    screen.scroll = 0;
    screen.message = None;
    vec![Command::PlanAction {
        id,
        request: Box::new(screen.request.clone()),
        dry_run: screen.dry_run,
        on_timeout: screen.on_timeout,
    }]
}

/// Switch what the drain does when its wait ends busy, and read the plan again.
fn toggle_on_timeout(app: &mut App) -> Vec<Command> {
    let id = app.actions.next_id();
    let Some(screen) = app.actions.plan.as_mut() else {
        return Vec::new();
    };
    if screen.request.kind != ActionKind::DrainPod {
        return Vec::new();
    }
    screen.id = id;
    screen.on_timeout = match screen.on_timeout {
        OnTimeout::Stop => OnTimeout::Evict,
        OnTimeout::Evict => OnTimeout::Stop,
    };
    screen.plan = PlanState::Loading;
    screen.focus = PlanButton::Cancel;
    screen.message = None;
    vec![Command::PlanAction {
        id,
        request: Box::new(screen.request.clone()),
        dry_run: screen.dry_run,
        on_timeout: screen.on_timeout,
    }]
}

fn activate(app: &mut App, now: Ts) -> Vec<Command> {
    let Some(screen) = app.actions.plan.as_ref() else {
        return Vec::new();
    };
    if screen.focus == PlanButton::Cancel {
        close_plan(app);
        return Vec::new();
    }
    let gate = run_gate(screen, app);
    let (id, request, overriding) = (screen.id, screen.request.clone(), screen.overriding);
    let plan = match &screen.plan {
        PlanState::Ready(plan) => Some(plan.clone()),
        _ => None,
    };
    let target = request.target.clone();
    let mut commands = Vec::new();
    let message = match (gate, plan) {
        (RunGate::Ready, Some(plan)) => {
            app.actions.plan = None;
            app.modes.replace(Mode::ActionPlan, Mode::ActionProgress);
            app.actions.run = Some(ActionRun {
                id,
                plan: (*plan).clone(),
                row: request.row,
                started: now,
                step: None,
                step_started: now,
                in_flight_first: None,
                in_flight_last: None,
                readings: 0,
                pod_readings: Vec::new(),
                steps_started: Vec::new(),
                notes: Vec::new(),
                outcome: None,
            });
            let overridden = overriding && plan.has_overridable_failure();
            return vec![Command::RunAction {
                id,
                plan,
                request: Box::new(request),
                overridden,
            }];
        }
        (RunGate::Refused(reasons), Some(plan)) => {
            let message = format!("refused: {}", reasons.join("; "));
            commands.push(Command::AuditRefused {
                plan,
                reason: message.clone(),
            });
            app.set_notice(NoticeKind::ActionFailed(message.clone()), now);
            message
        }
        (RunGate::NeedsName, _) => format!("type {target} to enable Run"),
        (RunGate::NeedsOverride(reasons), _) => format!(
            "refused: {}; Ctrl-O overrides, then type {target}",
            reasons.join("; ")
        ),
        (RunGate::NotReady(why) | RunGate::Blocked(why), _) => why,
        (_, None) => "the plan is not ready".to_owned(),
    };
    if let Some(screen) = app.actions.plan.as_mut() {
        screen.message = Some(message);
    }
    commands
}
