//! The console's Kubernetes actions end to end through the state machine and the screen: the
//! menu, access reviews, the plan screen, the typed confirmation, dry runs, progress.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::actions::Plan;
use crate::actions::Progress;
use crate::app::action_update::{RunGate, run_gate};
use crate::app::actions::{EntryAccess, PlanButton, PlanState};
use crate::app::kube::KubeView;
use crate::app::state::NoticeKind;
use crate::app::{ActionUpdate, App, Command};
use crate::app::{ActionsView, Event, update};
use crate::theme::Theme;
use kvtop_core::actions::ActionKind;
use kvtop_core::actions::plan::{AccessResult, Policy, plan_pod};
use kvtop_core::fleet::Ts;
use kvtop_core::fleet::{Fleet, FleetSettings, TargetSpec};
use kvtop_core::kube_model::PodInfo;
use kvtop_core::kube_model::{EndpointDefaults, MetricsEndpoint, Owner, ScrapeVia};

const T0: Ts = 1_000.0;

fn pod(name: &str) -> PodInfo {
    PodInfo {
        node: Some("gpu-node-00".into()),
        owner: Some(Owner {
            kind: "ReplicaSet".into(),
            name: "vllm-llama-6d4f9".into(),
            deployment: Some("vllm-llama".into()),
        }),
        labels: vec![("kvtop.dev/serving".into(), "true".into())],
        endpoint: MetricsEndpoint::choose(
            &BTreeMap::new(),
            &[],
            Some("10.0.0.1"),
            &EndpointDefaults::default(),
        ),
        ..PodInfo::for_test("prod", name)
    }
}

/// A console watching two pods of context `prod` (`vllm-a` selected), actions offered.
fn app() -> App {
    let mut fleet = Fleet::new(FleetSettings::default());
    let mut kube = KubeView::new(ScrapeVia::Auto, 1, false);
    for name in ["vllm-a", "vllm-b"] {
        let id = fleet.add_target(TargetSpec {
            name: name.into(),
            url: format!("http://{name}/metrics"),
        });
        fleet.set_pod_info(id, pod(name));
        kube.targets.insert(pod(name).key, id);
    }
    let mut app = App::new(
        fleet,
        Theme::fallback_mono(),
        "test".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    app.kube = kube;
    app.actions = ActionsView::new("kvtop.dev/serving", BTreeSet::new());
    update(&mut app, Event::Tick, T0);
    app
}

fn press(app: &mut App, code: KeyCode) -> Vec<Command> {
    update(app, Event::Key(KeyEvent::new(code, KeyModifiers::NONE)), T0)
}

fn ch(app: &mut App, c: char) -> Vec<Command> {
    press(app, KeyCode::Char(c))
}

fn ctrl(app: &mut App, c: char) -> Vec<Command> {
    update(
        app,
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)),
        T0,
    )
}

/// The plan the executor would send for `vllm-a` under `policy` (siblings: both pods).
/// The pods carry the routing label the console is configured with (see [`app`]).
fn plan_for(kind: ActionKind, policy: &Policy) -> Box<Plan> {
    let pods = [pod("vllm-a"), pod("vllm-b")];
    let policy = Policy {
        routing_label: Some("kvtop.dev/serving".into()),
        ..policy.clone()
    };
    Box::new(plan_pod(kind, &pods[0], &pods, Some(30.0), &policy))
}

fn planned(app: &mut App, plan: Box<Plan>) {
    let id = app.actions.plan.as_ref().map_or(0, |s| s.id);
    update(
        app,
        Event::Action(ActionUpdate::Planned { id, plan: Ok(plan) }),
        T0,
    );
}

fn screen_text(app: &App, width: u16, height: u16) -> String {
    let area = ratatui::layout::Rect::new(0, 0, width, height);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    super::draw_into(&mut buf, area, app, T0);
    super::buffer_text(&buf)
}

#[test]
fn a_opens_the_menu_of_the_selected_pod_and_reviews_each_entry_s_access() {
    let mut app = app();
    let commands = ch(&mut app, 'a');
    let menu = app
        .actions
        .menu
        .clone()
        .unwrap_or_else(|| panic!("no menu"));
    let labels: Vec<String> = menu.entries.iter().map(|e| e.request.label()).collect();
    assert_eq!(
        labels,
        [
            "drain pod vllm-a",
            "restart pod vllm-a",
            "rollout-restart deployment vllm-llama",
            "cordon node gpu-node-00",
            "uncordon node gpu-node-00",
            "drain-node node gpu-node-00",
        ]
    );
    assert!(
        menu.entries
            .iter()
            .all(|e| e.access == EntryAccess::Checking)
    );
    assert_eq!(app.context(), crate::app::Context::ActionMenu);
    let [
        Command::ReviewAccess {
            context, checks, ..
        },
    ] = commands.as_slice()
    else {
        panic!("{commands:?}");
    };
    assert_eq!(context, "prod");
    assert_eq!(checks.len(), 6);
    // Drain: the label patch and the eviction; drain-node: the node patch and both pods'
    // evictions (both are on gpu-node-00).
    let verbs = |i: usize| -> Vec<String> {
        checks[i]
            .accesses
            .iter()
            .map(|a| {
                let sub = a
                    .subresource
                    .as_deref()
                    .map_or(String::new(), |s| format!("/{s}"));
                format!(
                    "{} {}{sub} {}",
                    a.verb,
                    a.resource,
                    a.name.clone().unwrap_or_default()
                )
            })
            .collect()
    };
    assert_eq!(
        verbs(0),
        ["patch pods vllm-a", "create pods/eviction vllm-a"]
    );
    assert_eq!(verbs(1), ["delete pods vllm-a"]);
    assert_eq!(verbs(2), ["patch deployments vllm-llama"]);
    // The node drain takes each engine through the pod drain: its routing label, then its
    // eviction; and it reads the budgets of their namespace.
    assert_eq!(
        verbs(5),
        [
            "patch nodes gpu-node-00",
            "patch pods vllm-a",
            "create pods/eviction vllm-a",
            "patch pods vllm-b",
            "create pods/eviction vllm-b",
            "list poddisruptionbudgets "
        ]
    );
    press(&mut app, KeyCode::Esc);
    assert!(app.actions.menu.is_none());
}

#[test]
fn a_denied_entry_is_disabled_and_choosing_it_plans_nothing() {
    let mut app = app();
    ch(&mut app, 'a');
    let menu = app.actions.menu.as_ref().map_or(0, |m| m.id);
    let denial = "may not create pods/eviction llm/vllm-a: no eviction for you".to_owned();
    update(
        &mut app,
        Event::Action(ActionUpdate::Access {
            menu,
            entry: 0,
            result: Ok(vec![denial.clone()]),
        }),
        T0,
    );
    update(
        &mut app,
        Event::Action(ActionUpdate::Access {
            menu,
            entry: 1,
            result: Ok(Vec::new()),
        }),
        T0,
    );
    let entries = app
        .actions
        .menu
        .clone()
        .map(|m| m.entries)
        .unwrap_or_default();
    assert!(!entries[0].enabled());
    assert_eq!(entries[1].access, EntryAccess::Allowed);
    let text = screen_text(&app, 80, 24);
    assert!(text.contains("drain pod vllm-a  (denied)"), "{text}");
    assert!(text.contains("no eviction for you"), "{text}");
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert!(app.actions.plan.is_none());
    assert!(
        matches!(&app.notice, Some(n) if matches!(&n.kind, NoticeKind::ActionFailed(t) if t.contains("denied")))
    );
    // The next entry is allowed: Enter plans it.
    ch(&mut app, 'j');
    let commands = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(commands.as_slice(), [Command::PlanAction { request, dry_run: false, .. }] if request.kind == ActionKind::RestartPod),
        "{commands:?}"
    );
}

#[test]
fn cancel_is_focused_so_enter_right_away_cancels_and_sends_nothing() {
    let mut app = app();
    let commands = ch(&mut app, 'D');
    assert!(
        matches!(commands.as_slice(), [Command::PlanAction { request, dry_run: false, .. }] if request.kind == ActionKind::DrainPod && request.target == "vllm-a"),
        "{commands:?}"
    );
    planned(&mut app, plan_for(ActionKind::DrainPod, &Policy::default()));
    assert_eq!(
        app.actions.plan.as_ref().map(|s| s.focus),
        Some(PlanButton::Cancel)
    );
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert!(app.actions.plan.is_none());
    assert!(app.actions.run.is_none());
    // Esc cancels too; Tab moves to Run and Enter runs.
    ch(&mut app, 'R');
    planned(
        &mut app,
        plan_for(ActionKind::RestartPod, &Policy::default()),
    );
    assert!(press(&mut app, KeyCode::Esc).is_empty());
    assert!(app.actions.plan.is_none());
    ch(&mut app, 'R');
    planned(
        &mut app,
        plan_for(ActionKind::RestartPod, &Policy::default()),
    );
    press(&mut app, KeyCode::Tab);
    let commands = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(commands.as_slice(), [Command::RunAction { plan, .. }] if plan.target == "vllm-a"),
        "{commands:?}"
    );
    assert!(app.actions.running().is_some());
}

#[test]
fn a_protected_context_runs_only_once_the_exact_name_is_typed() {
    let mut app = app();
    ch(&mut app, 'R');
    let policy = Policy {
        protected: true,
        ..Policy::default()
    };
    planned(&mut app, plan_for(ActionKind::RestartPod, &policy));
    press(&mut app, KeyCode::Right);
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    assert_eq!(
        app.actions.plan.as_ref().and_then(|s| s.message.clone()),
        Some("type vllm-a to enable Run".to_owned())
    );
    // Letters are text here, not keys: `q` does not quit, `a` does not open a menu.
    for c in "vllm-".chars() {
        assert!(ch(&mut app, c).is_empty());
    }
    ch(&mut app, 'x');
    assert!(press(&mut app, KeyCode::Enter).is_empty(), "wrong name");
    press(&mut app, KeyCode::Backspace);
    ch(&mut app, 'a');
    assert_eq!(
        app.actions.plan.as_ref().map(|s| s.typed.as_str()),
        Some("vllm-a")
    );
    let commands = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(commands.as_slice(), [Command::RunAction { .. }]),
        "{commands:?}"
    );
}

#[test]
fn the_last_replica_guard_needs_ctrl_o_then_the_name_and_an_rbac_denial_cannot_be_overridden() {
    let mut app = app();
    ch(&mut app, 'D');
    // Alone in its Deployment: draining it takes the last ready replica.
    let only = pod("vllm-a");
    let mut plan = Box::new(plan_pod(
        ActionKind::DrainPod,
        &only,
        std::slice::from_ref(&only),
        None,
        &Policy {
            routing_label: Some("kvtop.dev/serving".into()),
            ..Policy::default()
        },
    ));
    assert!(plan.requires_typed_name);
    planned(&mut app, plan.clone());
    press(&mut app, KeyCode::Tab);
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    for c in "vllm-a".chars() {
        ch(&mut app, c);
    }
    // Typing the name confirms; it does not override (issue 12): that is Ctrl-O's.
    let screen = app.actions.plan.clone().unwrap_or_else(|| panic!("closed"));
    assert!(
        matches!(run_gate(&screen, &app), RunGate::NeedsOverride(r) if r[0].starts_with("min-ready"))
    );
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    ctrl(&mut app, 'o');
    let screen = app.actions.plan.clone().unwrap_or_else(|| panic!("closed"));
    assert_eq!(run_gate(&screen, &app), RunGate::Ready);
    let commands = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(
            commands.as_slice(),
            [Command::RunAction {
                overridden: true,
                ..
            }]
        ),
        "{commands:?}"
    );
    // A fresh screen for the same plan, this time with the eviction denied.
    app.actions.run = None;
    app.modes.close(crate::app::mode::Mode::ActionProgress);
    ch(&mut app, 'D');

    // The same plan with the eviction denied: typing cannot help, and Run records a refusal.
    let accesses = plan.accesses();
    let results: Vec<AccessResult> = accesses
        .into_iter()
        .map(|access| AccessResult {
            allowed: access.subresource.is_none(),
            reason: "evictions are not for you".into(),
            access,
        })
        .collect();
    plan.add_access_results(&results);
    planned(&mut app, plan);
    let screen = app.actions.plan.clone().unwrap_or_else(|| panic!("closed"));
    assert!(
        matches!(run_gate(&screen, &app), RunGate::Refused(r) if r.len() == 1 && r[0].contains("evictions are not for you"))
    );
    press(&mut app, KeyCode::Tab);
    let commands = press(&mut app, KeyCode::Enter);
    assert!(
        matches!(commands.as_slice(), [Command::AuditRefused { reason, .. }] if reason.starts_with("refused: rbac: may not create pods/eviction llm/vllm-a")),
        "{commands:?}"
    );
    assert!(app.actions.run.is_none());
}

#[test]
fn ctrl_d_replans_as_a_dry_run_and_ignores_the_old_plan() {
    let mut app = app();
    ch(&mut app, 'D');
    let first = app.actions.plan.as_ref().map_or(0, |s| s.id);
    let commands = ctrl(&mut app, 'd');
    let [
        Command::PlanAction {
            id, dry_run: true, ..
        },
    ] = commands.as_slice()
    else {
        panic!("{commands:?}");
    };
    assert_ne!(*id, first);
    update(
        &mut app,
        Event::Action(ActionUpdate::Planned {
            id: first,
            plan: Ok(plan_for(ActionKind::DrainPod, &Policy::default())),
        }),
        T0,
    );
    assert!(matches!(
        app.actions.plan.as_ref().map(|s| &s.plan),
        Some(PlanState::Loading)
    ));
    let dry = Policy {
        dry_run: true,
        ..Policy::default()
    };
    planned(&mut app, plan_for(ActionKind::DrainPod, &dry));
    let text = screen_text(&app, 80, 24);
    assert!(text.contains("DRY RUN"), "{text}");
    assert!(text.contains("[ Dry run ]"), "{text}");
}

#[test]
fn read_only_removes_the_keys_from_effect_help_and_footer() {
    let offered = app();
    let text = screen_text(&offered, 80, 24);
    assert!(
        text.lines().last().is_some_and(|l| l.contains("a actions")),
        "{text}"
    );
    let help = |app: &App| -> Vec<String> {
        super::help::sections(&app.theme, &app.help_contexts())
            .concat()
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    assert!(
        help(&offered)
            .iter()
            .any(|l| l.contains("drain pod (plan first)"))
    );

    let global = |app: &mut App| app.actions.enabled = false;
    let context = |app: &mut App| {
        app.actions.read_only_contexts.insert("prod".into());
    };
    for make_read_only in [global as fn(&mut App), context] {
        let mut app = app();
        make_read_only(&mut app);
        for c in ['a', 'D', 'R'] {
            assert!(ch(&mut app, c).is_empty());
        }
        assert!(app.actions.menu.is_none() && app.actions.plan.is_none());
        assert!(
            help(&app)
                .iter()
                .all(|l| !l.contains("drain pod (plan first)")
                    && !l.contains("restart pod (plan first)")
                    && !l.contains("actions (drain"))
        );
        ch(&mut app, '?');
        let text = screen_text(&app, 80, 24);
        assert!(!text.contains("drain pod (plan first)"), "{text}");
        ch(&mut app, '?');
        let text = screen_text(&app, 80, 24);
        assert!(!text.contains("a actions"), "{text}");
    }
}

#[test]
fn a_run_reports_progress_hides_on_esc_and_refuses_a_second_action() {
    let mut app = app();
    ch(&mut app, 'D');
    planned(&mut app, plan_for(ActionKind::DrainPod, &Policy::default()));
    press(&mut app, KeyCode::Tab);
    let commands = press(&mut app, KeyCode::Enter);
    let [Command::RunAction { id, .. }] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    let id = *id;
    let progress = |app: &mut App, progress: Progress, at: Ts| {
        update(
            app,
            Event::Action(ActionUpdate::Progress { id, progress }),
            at,
        );
    };
    progress(
        &mut app,
        Progress::Step {
            index: 0,
            text: String::new(),
        },
        T0,
    );
    progress(
        &mut app,
        Progress::Step {
            index: 1,
            text: String::new(),
        },
        T0 + 1.0,
    );
    progress(
        &mut app,
        Progress::InFlight {
            pod: "llm/vllm-0".into(),
            in_flight: Some(3.0),
        },
        T0 + 1.0,
    );
    progress(
        &mut app,
        Progress::InFlight {
            pod: "llm/vllm-0".into(),
            in_flight: Some(1.0),
        },
        T0 + 2.0,
    );
    let text = screen_text(&app, 80, 24);
    assert!(text.contains("running + waiting: 3 → 1"), "{text}");
    assert!(text.contains("▶  2. WAIT llm/vllm-a"), "{text}");
    assert!(text.contains("✓  1. PATCH"), "{text}");
    press(&mut app, KeyCode::Esc);
    assert!(!app.progress_visible());
    let text = screen_text(&app, 80, 24);
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l.contains("drain vllm-a: step 2/3")),
        "{text}"
    );
    // One action at a time: the keys say so and show the panel again.
    assert!(ch(&mut app, 'R').is_empty());
    assert!(app.actions.plan.is_none() && app.progress_visible());
    assert!(
        matches!(&app.notice, Some(n) if n.kind == NoticeKind::Action("one action at a time: drain vllm-a: step 2/3".into()))
    );
    update(
        &mut app,
        Event::Action(ActionUpdate::Finished {
            id,
            outcome: Err(crate::app::actions::RunFailure {
                step: 2,
                message: "drain pod vllm-a: step 3 of 3 failed: HTTP 403".into(),
                done: Vec::new(),
            }),
        }),
        T0 + 3.0,
    );
    let text = screen_text(&app, 80, 24);
    assert!(text.contains("✗  3. POST"), "{text}");
    assert!(text.contains("step 3 of 3 failed: HTTP 403"), "{text}");
    press(&mut app, KeyCode::Enter);
    assert!(app.actions.run.is_none());
}

#[test]
fn a_missing_audit_log_keeps_run_off_with_the_reason() {
    let mut app = app();
    app.actions.audit_problem = Some("cannot write the audit log /x: denied".into());
    ch(&mut app, 'R');
    planned(
        &mut app,
        plan_for(ActionKind::RestartPod, &Policy::default()),
    );
    press(&mut app, KeyCode::Tab);
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    let text = screen_text(&app, 80, 24);
    assert!(
        text.contains("cannot write the audit log /x: denied"),
        "{text}"
    );
    assert!(text.contains("refusing to act without an audit"), "{text}");
}

#[test]
fn an_unrecorded_outcome_stays_on_screen_instead_of_done_and_refuses_the_next_run() {
    let mut app = app();
    ch(&mut app, 'R');
    planned(
        &mut app,
        plan_for(ActionKind::RestartPod, &Policy::default()),
    );
    press(&mut app, KeyCode::Tab);
    let commands = press(&mut app, KeyCode::Enter);
    let [Command::RunAction { id, .. }] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    let id = *id;
    let problem = crate::actions::AuditProblem::Unwritable(std::sync::Arc::new(
        crate::actions::audit::AuditError {
            path: "/x/audit.jsonl".into(),
            source: std::io::Error::from_raw_os_error(28),
        },
    ));
    update(
        &mut app,
        Event::Action(ActionUpdate::AuditFailed(problem)),
        T0 + 1.0,
    );
    update(
        &mut app,
        Event::Action(ActionUpdate::Finished {
            id,
            outcome: Ok(vec!["deleted llm/vllm-a".into()]),
        }),
        T0 + 1.0,
    );
    // Long after any timed notice would be gone, it still says so.
    press(&mut app, KeyCode::Esc);
    update(&mut app, Event::Tick, T0 + 3_600.0);
    let text = screen_text(&app, 160, 24);
    let footer = text.lines().last().unwrap_or_default();
    assert!(
        footer.contains("restart vllm-a: done, but NOT recorded"),
        "{text}"
    );
    assert!(footer.contains("/x/audit.jsonl"), "{text}");
    // The next run is refused with the reason.
    ch(&mut app, 'R');
    planned(
        &mut app,
        plan_for(ActionKind::RestartPod, &Policy::default()),
    );
    press(&mut app, KeyCode::Tab);
    assert!(press(&mut app, KeyCode::Enter).is_empty());
    let text = screen_text(&app, 160, 24);
    assert!(
        text.contains("No space left on device (os error 28); refusing to"),
        "{text}"
    );
}

#[test]
fn engines_without_a_pod_have_no_actions() {
    let mut app = app();
    app.kube.targets.clear();
    let id = app.fleet.add_target(TargetSpec {
        name: "0-static".into(),
        url: "http://static/metrics".into(),
    });
    app.selected = Some(crate::app::RowKey {
        target: id,
        id: Default::default(),
    });
    // The target was added behind `update`'s back: settle its rows as `update` would.
    app.settle_rows(T0);
    assert!(!app.pod_actions_offered());
    // Only the log follower hears about the new selection.
    let commands = ch(&mut app, 'a');
    assert_eq!(commands, vec![Command::FollowLogs(None)]);
    assert!(app.actions.menu.is_none());
}

#[test]
fn a_node_drain_shows_each_waiting_pod_on_its_own_line() {
    use kvtop_core::actions::node_drain::{EnginePod, NodePods, plan_drain_node};
    let mut app = app();
    ch(&mut app, 'D');
    let engines: Vec<EnginePod> = [pod("vllm-a"), pod("vllm-b")]
        .into_iter()
        .map(|pod| EnginePod {
            pod,
            grace_s: Some(30.0),
        })
        .collect();
    let all = [pod("vllm-a"), pod("vllm-b"), pod("vllm-c")];
    let policy = Policy {
        routing_label: Some("kvtop.dev/serving".into()),
        ..Policy::default()
    };
    let pods = NodePods {
        engines: &engines,
        others: &[],
        all: &all,
        budgets: &[],
        unreadable_budgets: &[],
    };
    planned(
        &mut app,
        Box::new(plan_drain_node("prod", "gpu-node-00", pods, &policy)),
    );
    press(&mut app, KeyCode::Tab);
    let commands = press(&mut app, KeyCode::Enter);
    let [Command::RunAction { id, .. }] = commands.as_slice() else {
        panic!("{commands:?}");
    };
    let id = *id;
    for (pod, n, at) in [
        ("llm/vllm-a", 12.0, 1.0),
        ("llm/vllm-b", 40.0, 1.0),
        ("llm/vllm-a", 0.0, 2.0),
        ("llm/vllm-b", 31.0, 2.0),
    ] {
        let progress = Progress::InFlight {
            pod: pod.into(),
            in_flight: Some(n),
        };
        update(
            &mut app,
            Event::Action(ActionUpdate::Progress { id, progress }),
            T0 + at,
        );
    }
    // Side by side: vllm-a is at its wait (step 3) while vllm-b has just started (step 5).
    for index in [0, 1, 4, 2] {
        let progress = Progress::Step {
            index,
            text: String::new(),
        };
        update(
            &mut app,
            Event::Action(ActionUpdate::Progress { id, progress }),
            T0 + 2.0,
        );
    }
    let text = screen_text(&app, 120, 40);
    for (mark, step) in [("✓", 1), ("✓", 2), ("▶", 3), ("·", 4), ("▶", 5), ("·", 6)] {
        assert!(
            text.contains(&format!("{mark} {step:>2}. ")),
            "step {step} should be {mark}:\n{text}"
        );
    }
    assert!(
        text.contains("running + waiting: 12 → 0 · llm/vllm-a"),
        "{text}"
    );
    assert!(
        text.contains("running + waiting: 40 → 31 · llm/vllm-b"),
        "{text}"
    );
    assert!(!text.contains("fleet row:"), "{text}");
}
