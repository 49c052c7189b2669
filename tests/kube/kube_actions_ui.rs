//! The console's actions end to end: keys through `update`, the commands to the real action
//! executor (`ActionRunner`) and its real `kube::Client` against the simulated Kubernetes API,
//! the answers back as events, the screen drawn into a `TestBackend`, the requests the API
//! recorded and the audit log.

use crate::common;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kvtop::actions::ActionKind;
use kvtop::app::actions::{
    ActionRequest, ActionRun, ActionsView, PlanButton, PlanScreen, PlanState, RunOutcome,
};
use kvtop::app::kube::KubeView;
use kvtop::app::run_notes::RunWatch;
use kvtop::app::{App, Command, Event, update};
use kvtop::commands::console_actions::ActionRunner;
use kvtop::config::{ContextPolicy, KubernetesConfig};
use kvtop::sources::kube::{ClusterClient, KubeUpdate};
use kvtop::sources::{ScrapeSettings, build_client};
use kvtop::theme::Theme;
use kvtop_core::actions::plan::{Policy, plan_pod};
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{Fleet, FleetSettings, Ts};
use kvtop_core::kube_model::{self, ConvertOptions, EndpointDefaults, PodInfo, PodKey, ScrapeVia};
use kvtop_core::recording::ActionPhase;
use kvtop_sim::SimHandle;
use kvtop_sim::kube::{Fault, FaultRule, KubeSimHandle, RecordedRequest};
use tokio::sync::mpsc;

/// Generous bound for waits on the simulation; no test asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(60);

/// The console's state and its action executor, over a simulated cluster.
struct Console {
    _sim: SimHandle,
    kube: KubeSimHandle,
    app: App,
    runner: ActionRunner,
    events: mpsc::Receiver<Event>,
    dir: tempfile::TempDir,
}

impl Console {
    /// Six simulated engines as pods of context `sim`, discovered into the console, with
    /// `settings` for the actions (API timeout 2 s unless set).
    async fn start(settings: KubernetesConfig) -> Console {
        let (sim, kube) = common::kube_sim::fast_cluster(6, 11).await;
        let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
        let cluster = ClusterClient::from_config("sim", config, settings.api_timeout)
            .unwrap_or_else(|e| panic!("{e}"));
        let pods = discovered(&cluster).await;
        let scrape = ScrapeSettings {
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(2),
            body_limit: 8 << 20,
            user_agent: "kvtop-test".into(),
            limits: Default::default(),
        };
        let http = build_client(&scrape).unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (tx, events) = mpsc::channel(1024);
        let audit = dir.path().join("state").join("audit.jsonl");
        let runner = ActionRunner::new(&[cluster], &settings, Some(&audit), http, scrape, tx);
        let mut app = App::new(
            Fleet::new(FleetSettings::default()),
            Theme::fallback_mono(),
            "kube sim/llm".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        app.kube = KubeView::new(ScrapeVia::Direct, 1, false);
        app.actions = runner.view();
        let now = unix_now();
        update(
            &mut app,
            Event::Kube(KubeUpdate::Pods {
                context: "sim".into(),
                changed: pods,
                gone: Vec::new(),
            }),
            now,
        );
        Console {
            _sim: sim,
            kube,
            app,
            runner,
            events,
            dir,
        }
    }

    fn audit_lines(&self) -> Vec<serde_json::Value> {
        common::kube_sim::audit_lines(&self.dir.path().join("state").join("audit.jsonl"))
    }

    fn mutations(&self) -> Vec<RecordedRequest> {
        common::kube_sim::mutations(&self.kube)
    }

    fn first_pod(&self, engine: usize) -> String {
        common::kube_sim::first_pod(&self.kube, engine)
    }

    /// Select the row of pod `name`.
    fn select(&mut self, name: &str) {
        let key = PodKey {
            context: "sim".into(),
            namespace: "llm".into(),
            name: name.into(),
        };
        let id = self.app.kube.targets[&key];
        let rows = self.app.rows(unix_now());
        let engines = self.app.fleet.engines();
        let pos = rows
            .iter()
            .position(|&i| engines.get(i).is_some_and(|e| e.target == id))
            .unwrap_or_else(|| panic!("no row for {name}"));
        self.app.select_position(&rows, pos);
    }

    fn apply(&mut self, event: Event) {
        for command in update(&mut self.app, event, unix_now()) {
            // Scrapes and log following are not part of these tests.
            let _ = self.runner.handle(command);
        }
    }

    fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.apply(Event::Key(KeyEvent::new(code, modifiers)));
    }

    fn press(&mut self, code: KeyCode) {
        self.key(code, KeyModifiers::NONE);
    }

    /// Feed the executor's answers to the console until `check` holds.
    async fn until(&mut self, what: &str, check: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !check(&self.app) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(!left.is_zero(), "gave up waiting: {what}");
            if let Ok(Some(event)) = tokio::time::timeout(left, self.events.recv()).await {
                self.apply(event);
            }
        }
    }

    fn screen(&self) -> String {
        common::screen::text(&self.app, 100, 30, unix_now())
    }
}

/// The simulated pods as discovery would report them.
async fn discovered(cluster: &ClusterClient) -> Vec<PodInfo> {
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), "llm");
    let list = api
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("list pods: {e}"));
    let defaults = EndpointDefaults::default();
    let mut pods: Vec<PodInfo> = list
        .items
        .iter()
        .filter_map(|p| {
            kube_model::pod_info(
                p,
                &ConvertOptions {
                    context: "sim",
                    endpoint: &defaults,
                    routing_label: None,
                    event_lines: 0,
                    log_lines: 0,
                },
            )
        })
        .collect();
    let failure = kvtop::sources::kube::routing::attach_routing(
        &cluster.client,
        "sim",
        Duration::from_secs(2),
        &mut pods,
    )
    .await;
    assert!(failure.is_none(), "{failure:?}");
    pods
}

fn settings() -> KubernetesConfig {
    KubernetesConfig {
        enabled: true,
        api_timeout: Duration::from_secs(2),
        ..KubernetesConfig::default()
    }
}

fn plan_ready(app: &App) -> bool {
    matches!(
        app.actions.plan.as_ref().map(|s| &s.plan),
        Some(PlanState::Ready(_))
    )
}

fn finished(app: &App) -> bool {
    app.actions.run.as_ref().is_some_and(|r| !r.running())
}

fn last_run(app: &App) -> ActionRun {
    app.actions.run.clone().unwrap_or_else(|| panic!("no run"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d_drains_a_pod_live_until_nothing_is_in_flight_then_evicts_and_audits() {
    let mut c = Console::start(settings()).await;
    let pod = c.first_pod(2);
    c.select(&pod);
    c.press(KeyCode::Char('D'));
    c.until("the plan", plan_ready).await;
    let text = c.screen();
    assert!(
        text.contains(&format!("drain pod {pod} · context sim")),
        "{text}"
    );
    assert!(
        text.contains(&format!("1. PATCH /api/v1/namespaces/llm/pods/{pod}")),
        "{text}"
    );
    assert!(text.contains("ok      rbac: may patch pods"), "{text}");
    assert!(text.contains("[>Cancel<]"), "{text}");
    c.press(KeyCode::Tab);
    c.press(KeyCode::Enter);
    assert!(c.app.actions.running().is_some());
    // A recording tells the run's confirmation once, with the requests it is to send.
    let mut recorded = RunWatch::default();
    let told = recorded.notes(&c.app.actions, unix_now());
    match told.as_slice() {
        [(_, note)] => match &note.phase {
            ActionPhase::Started { steps } => {
                assert_eq!(note.name(), format!("drain {pod}"));
                assert_eq!(steps.len(), 4, "{steps:?}");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(recorded.notes(&c.app.actions, unix_now()).is_empty());
    // While it runs, the panel follows the drain wait.
    c.until("the drain wait's first reading", |app| {
        app.actions.run.as_ref().is_some_and(|r| r.readings > 0)
    })
    .await;
    c.until("the drain to end", finished).await;
    let run = last_run(&c.app);
    assert!(
        matches!(&run.outcome, Some(RunOutcome::Done(_))),
        "{:?}",
        run.outcome
    );
    assert_eq!(run.in_flight_last, Some(0.0), "the wait ended at 0");
    // … and its end once, in the footer's words.
    let told = recorded.notes(&c.app.actions, unix_now());
    let summaries: Vec<String> = told.iter().map(|(_, n)| n.summary()).collect();
    assert_eq!(summaries, [format!("drain {pod}: done")]);
    assert!(recorded.notes(&c.app.actions, unix_now()).is_empty());
    let text = c.screen();
    assert!(text.contains("running + waiting:"), "{text}");
    assert!(text.contains("→ 0"), "{text}");
    assert!(
        text.contains("✓  2. WAIT"),
        "the EndpointSlice wait\n{text}"
    );
    assert!(text.contains("✓  4. POST"), "{text}");
    assert!(
        text.contains(&format!("drain {pod}: done")),
        "the footer\n{text}"
    );

    let kinds: Vec<(String, bool, bool)> = c
        .mutations()
        .iter()
        .map(|r| (r.method.clone(), r.path.ends_with("/eviction"), r.dry_run()))
        .collect();
    assert_eq!(
        kinds,
        [("PATCH".into(), false, false), ("POST".into(), true, false)]
    );
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while c.kube.pods_of(2).contains(&pod) {
        assert!(tokio::time::Instant::now() < deadline, "never evicted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let audit = c.audit_lines();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["action"], "drain");
    assert_eq!(audit[0]["target"], pod.as_str());
    assert_eq!(audit[0]["context"], "sim");
    assert_eq!(audit[0]["result"], "ok");
    assert_eq!(audit[0]["dry_run"], false);
    assert_eq!(audit[0]["steps"].as_array().map(Vec::len), Some(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_offers_nothing_and_sends_no_change() {
    let global = KubernetesConfig {
        read_only: true,
        ..settings()
    };
    let mut per_context = settings();
    per_context.context_policies.insert(
        "sim".into(),
        ContextPolicy {
            read_only: true,
            protected: false,
        },
    );
    for settings in [global, per_context] {
        let mut c = Console::start(settings).await;
        let pod = c.first_pod(2);
        c.select(&pod);
        assert!(!c.app.actions.enabled);
        for key in ['a', 'D', 'R'] {
            c.press(KeyCode::Char(key));
        }
        assert!(c.app.actions.menu.is_none() && c.app.actions.plan.is_none());
        let text = c.screen();
        assert!(!text.contains("a actions"), "{text}");
        // Even a plan asked for directly comes back refused, and reading it sends nothing
        // but reads (not even an access review).
        let request = ActionRequest {
            kind: ActionKind::DrainPod,
            context: "sim".into(),
            namespace: "llm".into(),
            target: pod.clone(),
            row: None,
            pods: Vec::new(),
            via_proxy: false,
        };
        let asked = c.runner.handle(Command::PlanAction {
            id: 7,
            request: Box::new(request),
            dry_run: false,
            on_timeout: kvtop::actions::OnTimeout::Stop,
        });
        assert!(asked.is_none());
        let event = tokio::time::timeout(PATIENCE, c.events.recv())
            .await
            .ok()
            .flatten();
        let Some(Event::Action(kvtop::app::ActionUpdate::Planned { plan: Ok(plan), .. })) = event
        else {
            panic!("{event:?}");
        };
        assert!(
            plan.blocking_guards(true)
                .iter()
                .any(|g| g.name == "read-only")
        );
        let sent: Vec<RecordedRequest> = c
            .kube
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect();
        assert!(sent.is_empty(), "{sent:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_sends_only_dry_run_requests_and_changes_nothing() {
    let mut c = Console::start(settings()).await;
    let pod = c.first_pod(4);
    c.select(&pod);
    c.press(KeyCode::Char('D'));
    c.key(KeyCode::Char('d'), KeyModifiers::CONTROL);
    c.until("the dry-run plan", |app| {
        plan_ready(app) && app.actions.plan.as_ref().is_some_and(|s| s.dry_run)
    })
    .await;
    let text = c.screen();
    assert!(text.contains("DRY RUN"), "{text}");
    assert!(text.contains("(dry run)"), "{text}");
    c.press(KeyCode::Tab);
    c.press(KeyCode::Enter);
    c.until("the dry run to end", finished).await;
    assert!(matches!(
        last_run(&c.app).outcome,
        Some(RunOutcome::Done(_))
    ));
    let mutations = c.mutations();
    assert_eq!(mutations.len(), 2, "{mutations:?}");
    assert!(
        mutations.iter().all(RecordedRequest::dry_run),
        "{mutations:?}"
    );
    assert!(c.kube.pods_of(4).contains(&pod));
    let audit = c.audit_lines();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["dry_run"], true);
    assert_eq!(audit[0]["result"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_shows_the_api_s_error_on_screen_and_in_the_audit_log() {
    let mut c = Console::start(settings()).await;
    let pod = c.first_pod(2);
    c.select(&pod);
    c.kube
        .inject(FaultRule::new(&format!("/pods/{pod}"), Fault::Status(403)).method("DELETE"));
    c.press(KeyCode::Char('R'));
    c.until("the plan", plan_ready).await;
    c.press(KeyCode::Tab);
    c.press(KeyCode::Enter);
    let mut recorded = RunWatch::default();
    assert_eq!(recorded.notes(&c.app.actions, unix_now()).len(), 1);
    c.until("the restart to fail", finished).await;
    // A recording tells the failure with the API's words.
    match recorded.notes(&c.app.actions, unix_now()).as_slice() {
        [(_, note)] => {
            assert!(
                matches!(&note.phase, ActionPhase::Failed { step: 0, message, .. } if message.contains("HTTP 403")),
                "{note:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let text = c.screen();
    assert!(
        text.contains("restart pod") && text.contains("step 1 of 1 failed"),
        "{text}"
    );
    assert!(text.contains("HTTP 403 Forbidden"), "{text}");
    assert!(text.contains("(RBAC does not allow it)"), "{text}");
    assert!(text.contains("✗  1. DELETE"), "{text}");
    // The console goes on: the panel closes and the keys work again.
    c.press(KeyCode::Esc);
    assert!(c.app.actions.run.is_none());
    assert!(c.kube.pods_of(2).contains(&pod));
    let audit = c.audit_lines();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["result"], "error");
    let error = audit[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cannot delete pods llm/") && error.contains("HTTP 403"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_mid_run_leaves_an_interrupted_line_with_the_steps_done() {
    let mut c = Console::start(settings()).await;
    let pod = c.first_pod(2);
    c.select(&pod);
    // The label patch hangs (within the 2 s API timeout) so the run is caught in step 1.
    c.kube.inject(
        FaultRule::new(
            &format!("/pods/{pod}"),
            Fault::Delay(Duration::from_millis(1500)),
        )
        .method("PATCH"),
    );
    c.press(KeyCode::Char('D'));
    c.until("the plan", plan_ready).await;
    c.press(KeyCode::Tab);
    c.press(KeyCode::Enter);
    c.until("the first step", |app| {
        app.actions.run.as_ref().is_some_and(|r| r.step == Some(0))
    })
    .await;
    c.runner.shutdown().await;
    let audit = c.audit_lines();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["result"], "interrupted");
    assert_eq!(audit[0]["detail"].as_array().map(Vec::len), Some(0));
    let error = audit[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the console quit during step 1 of 4: PATCH"),
        "{error}"
    );
    // Nothing else is written once the task would have finished.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(c.audit_lines().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_after_routing_was_removed_puts_it_back() {
    let mut c = Console::start(settings()).await;
    let pod = c.first_pod(2);
    c.select(&pod);
    // Every eviction is refused: the run stays in step 4, retrying, until the console quits.
    c.kube
        .inject(FaultRule::new("/eviction", Fault::Status(429)).method("POST"));
    c.press(KeyCode::Char('D'));
    c.until("the plan", plan_ready).await;
    c.press(KeyCode::Tab);
    c.press(KeyCode::Enter);
    c.until("the eviction step", |app| {
        app.actions.run.as_ref().is_some_and(|r| r.step == Some(3))
    })
    .await;
    c.runner.shutdown().await;
    let audit = c.audit_lines();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["result"], "interrupted");
    let restored = audit[0]["rollback"]["restored"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        restored.contains(&format!(
            "re-added app.kubernetes.io/component=serving-engine to llm/{pod}"
        )),
        "{audit:?}"
    );
    let patches: Vec<RecordedRequest> = c
        .mutations()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    assert_eq!(patches.len(), 2, "{patches:?}");
    assert!(
        patches[1]
            .body
            .contains("\"app.kubernetes.io/component\":\"serving-engine\"")
    );
    assert!(c.kube.pods_of(2).contains(&pod));
}

/// The plan screen of a drain that would take a Deployment's last ready replica, at 80×24 in
/// `mono`: numbered calls, guards marked in words, the name to type, Cancel focused.
#[test]
fn the_plan_screen_at_80x24() {
    const NOW: Ts = 1_704_110_584.0;
    let value = serde_json::json!({
        "metadata": {
            "name": "vllm-llama-8b-6d4f9-aaaaa", "namespace": "llm", "uid": "u1",
            "labels": {"kvtop.dev/serving": "true", "pod-template-hash": "6d4f9"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "vllm-llama-8b-6d4f9", "uid": "rs", "controller": true}]
        },
        "spec": {"nodeName": "gpu-node-00", "containers": [{"name": "vllm"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.6",
                   "conditions": [{"type": "Ready", "status": "True"}]}
    });
    let pod: Pod = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
    let defaults = EndpointDefaults::default();
    let info = kube_model::pod_info(
        &pod,
        &ConvertOptions {
            context: "prod",
            endpoint: &defaults,
            routing_label: Some("kvtop.dev/serving"),
            event_lines: 0,
            log_lines: 0,
        },
    )
    .unwrap_or_else(|| panic!("no pod"));
    let plan = plan_pod(
        ActionKind::DrainPod,
        &info,
        std::slice::from_ref(&info),
        Some(30.0),
        &Policy {
            routing_label: Some("kvtop.dev/serving".into()),
            ..Policy::default()
        },
    );
    let mut fleet = Fleet::new(FleetSettings::default());
    let id = fleet.add_target(kvtop_core::fleet::TargetSpec {
        name: info.key.name.clone(),
        url: "http://10.0.0.6:8000/metrics".into(),
    });
    fleet.set_pod_info(id, info.clone());
    let mut app = App::new(
        fleet,
        Theme::fallback_mono(),
        "kube prod/llm".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    app.kube = KubeView::new(ScrapeVia::Auto, 1, false);
    app.actions = ActionsView::new("kvtop.dev/serving", Default::default());
    update(&mut app, Event::Tick, NOW);
    app.actions.plan = Some(PlanScreen {
        id: 1,
        request: ActionRequest {
            kind: ActionKind::DrainPod,
            context: "prod".into(),
            namespace: "llm".into(),
            target: info.key.name.clone(),
            row: Some(id),
            pods: vec![info],
            via_proxy: false,
        },
        dry_run: false,
        overriding: false,
        on_timeout: kvtop::actions::OnTimeout::Stop,
        plan: PlanState::Ready(Box::new(plan)),
        focus: PlanButton::Cancel,
        typed: "vllm-llama".into(),
        scroll: 0,
        message: None,
    });
    insta::assert_snapshot!(common::screen::text(&app, 80, 24, NOW));
}
