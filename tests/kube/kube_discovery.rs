//! Discovery against the simulated Kubernetes API, driven through the console's own state
//! machine (`app::update`) and workers (pod scrapers, discovery), without a terminal: pods
//! become targets, appear and go away, carry their pod state, events and logs; pods whose IP is
//! unreachable are scraped through the API server's proxy; Deployments come with their HPA
//! and PDB; API failures are reported and survived.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kvtop::app::kube::KubeView;
use kvtop::app::state::App;
use kvtop::app::{Command, Event, update};
use kvtop::config::KubernetesConfig;
use kvtop::sources::Outbox;
use kvtop::sources::kube::{ClusterClient, Discovery, PodScrapers};
use kvtop::sources::{ScrapeSettings, build_client};
use kvtop::theme::Theme;
use kvtop_core::fleet::{EngineStatus, Fleet, FleetSettings, TargetId};
use kvtop_core::kube_model::{PodKey, ScrapeRoute, ScrapeVia};
use kvtop_sim::kube::{Fault, FaultRule, KubeSimConfig, KubeSimHandle};
use kvtop_sim::{SimConfig, SimHandle};
use tokio::sync::mpsc;

/// Generous bound on waits; nothing here asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(30);

/// The console without a terminal: state, workers, and the event queue between them.
struct Console {
    app: App,
    rx: mpsc::Receiver<Event>,
    pods: PodScrapers,
    discovery: Discovery,
    client: kube::Client,
    kube: KubeSimHandle,
    _sim: SimHandle,
}

struct Setup {
    engines: usize,
    via: ScrapeVia,
    /// Engines whose pod IP is advertised as 127.0.0.2 (nothing listens there).
    unreachable: Vec<usize>,
}

async fn console(setup: Setup) -> Console {
    console_polled(setup, Duration::from_millis(500)).await
}

/// [`console`] with pods listed every `poll_interval`.
async fn console_polled(setup: Setup, poll_interval: Duration) -> Console {
    let (sim, kube) = common::kube_sim::fast_cluster(setup.engines, 3).await;
    for engine in &setup.unreachable {
        kube.set_pod_ip(*engine, "127.0.0.2");
    }
    let settings = KubernetesConfig {
        enabled: true,
        scrape_via: setup.via,
        poll_interval,
        api_timeout: Duration::from_secs(2),
        log_lines: 50,
        event_lines: 10,
        ..KubernetesConfig::default()
    };
    let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let cluster = ClusterClient::from_config("sim", config, settings.api_timeout)
        .unwrap_or_else(|e| panic!("{e}"));
    let scrape = ScrapeSettings {
        interval: Duration::from_millis(500),
        timeout: Duration::from_millis(400),
        body_limit: 8 << 20,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    };
    let http = build_client(&scrape).unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = mpsc::channel(4096);
    let clients: HashMap<String, kube::Client> =
        [("sim".to_owned(), cluster.client.clone())].into();
    let outboxes = kvtop::sources::kube::WorkerOutboxes {
        scrapes: Outbox::new(tx.clone()),
        updates: Outbox::new(tx.clone()),
    };
    let pods = PodScrapers::new(http, scrape, clients, outboxes);
    let discovery = Discovery::start(std::slice::from_ref(&cluster), &settings, Outbox::new(tx));
    let mut app = App::new(
        Fleet::new(FleetSettings {
            interval: 0.5,
            ..FleetSettings::default()
        }),
        Theme::fallback(),
        "test".into(),
        Duration::from_millis(500),
        Duration::from_secs(300),
    );
    app.kube = KubeView::new(setup.via, 1, false);
    Console {
        app,
        rx,
        pods,
        discovery,
        client: cluster.client,
        kube,
        _sim: sim,
    }
}

impl Console {
    fn kube(&self) -> &KubeSimHandle {
        &self.kube
    }

    /// Feed events to the state machine and carry out its commands until `done` holds.
    async fn until<T>(&mut self, what: &str, mut done: impl FnMut(&App) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(value) = done(&self.app) {
                return value;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("gave up waiting: {what}");
            }
            self.step().await;
        }
    }

    /// Run the console for `period`; every problem text it showed meanwhile.
    async fn run_for(&mut self, period: Duration) -> Vec<String> {
        let end = tokio::time::Instant::now() + period;
        let mut shown = Vec::new();
        while tokio::time::Instant::now() < end {
            self.step().await;
            for text in self.app.kube.problems.values() {
                if !shown.contains(text) {
                    shown.push(text.clone());
                }
            }
        }
        shown
    }

    /// Handle the next event, if one comes within 100 ms.
    async fn step(&mut self) {
        let next = tokio::time::timeout(Duration::from_millis(100), self.rx.recv()).await;
        let Ok(Some(event)) = next else {
            return;
        };
        let now = kvtop_core::clock::unix_now();
        for command in update(&mut self.app, event, now) {
            match command {
                Command::ScrapePod(scrape) => self.pods.start(scrape),
                Command::StopScrape(id) => self.pods.stop(id),
                Command::FollowLogs(key) => self.discovery.follow(key),
                // No key is pressed here, so no action is asked for.
                Command::Quit
                | Command::ReviewAccess { .. }
                | Command::PlanAction { .. }
                | Command::RunAction { .. }
                | Command::AuditRefused { .. }
                | Command::AuditIncident(_)
                | Command::WriteSnapshot(_) => {}
            }
        }
    }

    fn pod_names(&self) -> Vec<String> {
        self.app
            .kube
            .targets
            .keys()
            .map(|k| k.name.clone())
            .collect()
    }

    fn target_of(&self, engine_pod: &str) -> Option<TargetId> {
        self.app
            .kube
            .targets
            .iter()
            .find(|(k, _)| k.name == engine_pod)
            .map(|(_, id)| *id)
    }

    fn status(&self, id: TargetId) -> Option<EngineStatus> {
        self.app
            .fleet
            .engines()
            .iter()
            .find(|e| e.target == id)
            .map(|e| e.status)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_become_scraped_targets_with_their_state_events_and_logs() {
    let mut c = console(Setup {
        engines: 4,
        via: ScrapeVia::Auto,
        unreachable: vec![],
    })
    .await;
    c.until("four pods discovered", |app| {
        (app.kube.targets.len() == 4).then_some(())
    })
    .await;
    let healthy_pod = c.kube().pods_of(2).first().cloned().unwrap_or_default();
    let crashing_pod = c.kube().pods_of(3).first().cloned().unwrap_or_default();
    let healthy = c
        .target_of(&healthy_pod)
        .unwrap_or_else(|| panic!("no target"));
    let crashing = c
        .target_of(&crashing_pod)
        .unwrap_or_else(|| panic!("no target"));
    c.until("the healthy pod is scraped", |app| {
        app.fleet
            .engines()
            .iter()
            .any(|e| e.target == healthy && e.status == EngineStatus::Up && e.latest.is_some())
            .then_some(())
    })
    .await;

    let name = |app: &App, id: TargetId| {
        app.fleet
            .target(id)
            .map(|t| t.spec.name.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        name(&c.app, healthy),
        healthy_pod,
        "one context: the pod name alone"
    );
    let info = c
        .app
        .fleet
        .pod_info(healthy)
        .cloned()
        .unwrap_or_else(|| panic!("no pod info"));
    assert_eq!(info.node.as_deref(), Some("gpu-node-00"));
    assert!(info.ready);
    assert_eq!(info.routed, Some(true));
    assert_eq!(
        info.owner.as_ref().and_then(|o| o.deployment.as_deref()),
        Some("vllm-llama-8b")
    );
    assert_eq!(info.args.max_model_len, Some(32_768));
    assert_eq!(c.app.kube.routes.get(&healthy), None, "scraped directly");

    let crash = c
        .app
        .fleet
        .pod_info(crashing)
        .cloned()
        .unwrap_or_else(|| panic!("no pod info"));
    assert_eq!(crash.marker(), Some("CrashLoop"));
    assert_eq!(crash.args.max_num_batched_tokens, Some(16_384));
    assert!(
        crash
            .status_reasons
            .contains(&"CrashLoopBackOff".to_owned())
    );
    assert_eq!(c.status(crashing), Some(EngineStatus::Down));

    c.until("events of the healthy pod", |app| {
        app.fleet
            .pod_info(healthy)
            .filter(|p| {
                p.events
                    .lines()
                    .iter()
                    .any(|l| l.starts_with("Normal Scheduled: Successfully assigned llm/"))
            })
            .map(|_| ())
    })
    .await;
    c.until("the crash-looping pod's back-off event", |app| {
        app.fleet
            .pod_info(crashing)
            .filter(|p| {
                p.events.lines().iter().any(|l| {
                    l.starts_with("Warning BackOff: Back-off restarting failed container vllm")
                })
            })
            .map(|_| ())
    })
    .await;
    c.until("the healthy pod's start-up log", |app| {
        app.fleet
            .pod_info(healthy)
            .filter(|p| {
                p.logs
                    .lines()
                    .iter()
                    .any(|l| l.contains("Starting vLLM API server 0 on http://0.0.0.0:"))
            })
            .map(|_| ())
    })
    .await;
    c.until("the crash's OOM in the log", |app| {
        app.fleet
            .pod_info(crashing)
            .filter(|p| {
                p.logs
                    .lines()
                    .iter()
                    .any(|l| l.contains("CUDA out of memory"))
            })
            .map(|_| ())
    })
    .await;

    // A line written now reaches the followed pod's buffer.
    c.app.selected = Some(kvtop::app::RowKey {
        target: healthy,
        id: Default::default(),
    });
    assert!(c.kube().append_log(
        &healthy_pod,
        "RuntimeError: NCCL error: unhandled system error"
    ));
    c.until("the planted log line", |app| {
        app.fleet
            .pod_info(healthy)
            .filter(|p| p.logs.last().is_some_and(|l| l.contains("NCCL error")))
            .map(|_| ())
    })
    .await;
    assert_eq!(
        c.app.kube.followed.as_ref().map(|k| k.name.as_str()),
        Some(healthy_pod.as_str())
    );

    let deployments = c
        .until("both Deployments with their guards", |app| {
            (app.kube.deployments.len() == 2
                && app
                    .kube
                    .deployments
                    .iter()
                    .all(|d| d.hpa.is_some() && d.pdb.is_some() && d.scaled_object.is_some()))
            .then(|| app.kube.deployments.clone())
        })
        .await;
    let llama = &deployments[0];
    assert_eq!(
        (llama.name.as_str(), llama.desired, llama.ready),
        ("vllm-llama-8b", 2, 2)
    );
    assert_eq!(llama.pdb.as_ref().map(|p| p.disruptions_allowed), Some(0));
    // The KEDA ScaledObject that adopted the HPA, read through the CRD's API.
    let keda = llama
        .scaled_object
        .as_ref()
        .unwrap_or_else(|| panic!("KEDA"));
    assert_eq!((keda.min, keda.max), (2, 2));
    assert_eq!(keda.hpa.as_deref(), Some("vllm-llama-8b"));
    assert_eq!(keda.ready, Some(true));
    assert!(
        keda.triggers[0].starts_with("prometheus: sum(vllm:num_requests_waiting{model_name="),
        "{:?}",
        keda.triggers
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_goes_away_and_its_replacement_appears() {
    let mut c = console(Setup {
        engines: 3,
        via: ScrapeVia::Auto,
        unreachable: vec![],
    })
    .await;
    c.until("three pods", |app| {
        (app.kube.targets.len() == 3).then_some(())
    })
    .await;
    let old = c.kube().pods_of(1).first().cloned().unwrap_or_default();
    let old_target = c.target_of(&old).unwrap_or_else(|| panic!("no target"));
    let api: Api<Pod> = Api::namespaced(c.client.clone(), "llm");
    api.delete(&old, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let replacement = c
        .kube()
        .pods_of(1)
        .into_iter()
        .find(|p| *p != old)
        .unwrap_or_else(|| panic!("no replacement"));
    let new_target = c
        .until(
            "the replacement is a target and the old pod is gone",
            |app| {
                let names: Vec<&str> = app.kube.targets.keys().map(|k| k.name.as_str()).collect();
                (names.contains(&replacement.as_str()) && !names.contains(&old.as_str()))
                    .then(|| {
                        app.kube
                            .targets
                            .iter()
                            .find(|(k, _)| k.name == replacement)
                            .map(|(_, id)| *id)
                    })
                    .flatten()
            },
        )
        .await;
    assert!(
        c.app.fleet.target(old_target).is_none(),
        "the old target is removed"
    );
    assert_eq!(c.pod_names().len(), 3);
    c.until("the replacement is scraped", |app| {
        app.fleet
            .engines()
            .iter()
            .any(|e| e.target == new_target && e.status == EngineStatus::Up)
            .then_some(())
    })
    .await;
}

/// A pod deleted between two listings (issue 17): its log follower stops at the first `404`
/// instead of reading it, and reporting `404 pods … not found`, every second until the next
/// listing notices (here not before ten minutes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_s_log_follower_stops_at_its_first_404() {
    let mut c = console_polled(
        Setup {
            engines: 2,
            via: ScrapeVia::Auto,
            unreachable: vec![],
        },
        Duration::from_secs(600),
    )
    .await;
    c.until("two pods", |app| {
        (app.kube.targets.len() == 2).then_some(())
    })
    .await;
    let gone = c.kube().pods_of(1).first().cloned().unwrap_or_default();
    let key = c
        .app
        .kube
        .targets
        .keys()
        .find(|k| k.name == gone)
        .cloned()
        .unwrap_or_else(|| panic!("no key for {gone}"));
    // Followed, as the selected pod is: its log is read every second.
    c.discovery.follow(Some(key));
    let log_path = format!("/pods/{gone}/log");
    let log_reads = |kube: &KubeSimHandle| {
        kube.requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with(&log_path))
            .count()
    };
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while log_reads(c.kube()) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "its log is never read"
        );
        c.step().await;
    }
    let api: Api<Pod> = Api::namespaced(c.client.clone(), "llm");
    api.delete(&gone, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let before = log_reads(c.kube());
    // Long enough for several follows (1 s) and a sweep of every pod (5 s).
    let shown = c.run_for(Duration::from_secs(8)).await;
    let after = log_reads(c.kube()) - before;
    assert!(after <= 1, "the deleted pod's log was read {after} times");
    assert!(
        shown.iter().all(|text| !text.contains("not found")),
        "{shown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_pod_ip_falls_back_to_the_api_server_proxy_in_auto_mode() {
    let mut c = console(Setup {
        engines: 3,
        via: ScrapeVia::Auto,
        unreachable: vec![1],
    })
    .await;
    c.until("three pods", |app| {
        (app.kube.targets.len() == 3).then_some(())
    })
    .await;
    let hidden = c.kube().pods_of(1).first().cloned().unwrap_or_default();
    let visible = c.kube().pods_of(0).first().cloned().unwrap_or_default();
    let hidden_id = c.target_of(&hidden).unwrap_or_else(|| panic!("no target"));
    let visible_id = c.target_of(&visible).unwrap_or_else(|| panic!("no target"));
    let url = c
        .app
        .fleet
        .target(hidden_id)
        .map(|t| t.spec.url.clone())
        .unwrap_or_default();
    assert!(url.starts_with("http://127.0.0.2:"), "{url}");
    c.until("the hidden pod is scraped through the proxy", |app| {
        let proxied = app.kube.routes.get(&hidden_id) == Some(&ScrapeRoute::Proxy);
        let up =
            app.fleet.engines().iter().any(|e| {
                e.target == hidden_id && e.status == EngineStatus::Up && e.latest.is_some()
            });
        (proxied && up).then_some(())
    })
    .await;
    assert_eq!(
        c.app.kube.routes.get(&visible_id),
        None,
        "the reachable pod stays direct"
    );
    let proxy_calls = c
        .kube()
        .requests()
        .iter()
        .filter(|r| {
            r.path.contains(&format!("/pods/{hidden}:")) && r.path.ends_with("/proxy/metrics")
        })
        .count();
    assert!(proxy_calls >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_mode_never_uses_the_proxy_and_api_failures_are_reported_then_survived() {
    let mut c = console(Setup {
        engines: 3,
        via: ScrapeVia::Direct,
        unreachable: vec![1],
    })
    .await;
    c.until("three pods", |app| {
        (app.kube.targets.len() == 3).then_some(())
    })
    .await;
    let hidden = c.kube().pods_of(1).first().cloned().unwrap_or_default();
    let hidden_id = c.target_of(&hidden).unwrap_or_else(|| panic!("no target"));
    c.until("the unreachable pod fails to scrape", |app| {
        app.fleet
            .target(hidden_id)
            .and_then(|t| t.last_error.clone())
            .map(|_| ())
    })
    .await;
    assert!(c.app.kube.routes.is_empty());
    assert!(
        !c.kube()
            .requests()
            .iter()
            .any(|r| r.path.contains("/proxy/"))
    );

    // The pod list fails for a while: a problem is reported, the pods stay.
    c.kube()
        .inject(FaultRule::new("/pods", Fault::Status(500)).method("GET"));
    let text = c
        .until("a reported problem", |app| {
            app.kube
                .problems
                .get(&("sim".to_owned(), "pods".to_owned()))
                .cloned()
        })
        .await;
    assert!(
        text.starts_with("cannot list pods in namespace llm (context sim): HTTP 500 InternalError"),
        "{text}"
    );
    assert_eq!(c.app.kube.targets.len(), 3, "a failed list removes nothing");
    c.kube().clear_faults();
    c.until("the problem clears", |app| {
        app.kube.problems.is_empty().then_some(())
    })
    .await;
    assert_eq!(c.app.kube.targets.len(), 3);
    let keys: Vec<PodKey> = c.app.kube.targets.keys().cloned().collect();
    assert!(
        keys.iter()
            .all(|k| k.context == "sim" && k.namespace == "llm")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_kubeconfig_contexts_are_watched_together_and_labelled() {
    let sim = kvtop_sim::start(SimConfig {
        engines: 2,
        seed: 5,
        ..SimConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("sim: {e}"));
    let kube = kvtop_sim::kube::start(&sim, KubeSimConfig::default())
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    // Two contexts on the same simulated cluster stand for two clusters.
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "sim", "cluster": {"server": kube.url}}],
        "users": [{"name": "sim", "user": {}}],
        "contexts": [
            {"name": "east", "context": {"cluster": "sim", "user": "sim", "namespace": "llm"}},
            {"name": "west", "context": {"cluster": "sim", "user": "sim", "namespace": "llm"}}
        ],
        "current-context": "east"
    });
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("config");
    std::fs::write(&path, kubeconfig.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut settings = KubernetesConfig {
        enabled: true,
        kubeconfig: Some(path.clone()),
        poll_interval: Duration::from_millis(500),
        log_lines: 0,
        event_lines: 0,
        ..KubernetesConfig::default()
    };
    let current = kvtop::sources::kube::connect(&settings)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(current.len(), 1);
    assert_eq!(
        (
            current[0].context.as_str(),
            current[0].default_namespace.as_str()
        ),
        ("east", "llm")
    );

    settings.contexts = vec!["east".into(), "nowhere".into()];
    let err = kvtop::sources::kube::connect(&settings)
        .await
        .err()
        .unwrap_or_else(|| panic!("an unknown context was accepted"));
    assert!(
        err.to_string()
            .contains("no context \"nowhere\" in the kubeconfig (it has: east, west)"),
        "{err}"
    );

    settings.contexts = vec!["east".into(), "west".into()];
    let clusters = kvtop::sources::kube::connect(&settings)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, mut rx) = mpsc::channel(1024);
    let _discovery = Discovery::start(&clusters, &settings, Outbox::new(tx));
    let mut app = App::new(
        Fleet::new(FleetSettings::default()),
        Theme::fallback(),
        "test".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    app.kube = KubeView::new(ScrapeVia::Auto, clusters.len(), false);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while app.kube.targets.len() < 4 {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} pods", app.kube.targets.len()))
            .unwrap_or_else(|| panic!("discovery stopped"));
        update(&mut app, event, kvtop_core::clock::unix_now());
    }
    let mut names: Vec<String> = app
        .fleet
        .targets()
        .iter()
        .map(|t| t.spec.name.clone())
        .collect();
    names.sort();
    let pods = [kube.pods_of(0), kube.pods_of(1)].concat();
    let mut expected: Vec<String> = ["east", "west"]
        .iter()
        .flat_map(|ctx| pods.iter().map(move |p| format!("{ctx}/{p}")))
        .collect();
    expected.sort();
    assert_eq!(names, expected);
}

/// The simulated cluster gives the Kubernetes rules their material: the crash-looping pod's
/// chunked-prefill budget and its CUDA OOM (T1.P3), the 32 OpenMP threads (T1.5), the crash
/// loop itself (T2.4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_rules_fire_on_what_discovery_attaches_to_the_pods() {
    use kvtop_core::rules::{EngineInput, FindingState, RuleEngine, RuleSet};
    let mut c = console(Setup {
        engines: 4,
        via: ScrapeVia::Auto,
        unreachable: vec![],
    })
    .await;
    let crashing = c.kube().pods_of(3).first().cloned().unwrap_or_default();
    let threaded = c.kube().pods_of(1).first().cloned().unwrap_or_default();
    c.until("the crash's OOM and the pods' facts", |app| {
        let id = app
            .kube
            .targets
            .iter()
            .find(|(k, _)| k.name == crashing)
            .map(|(_, id)| *id)?;
        app.fleet
            .pod_info(id)
            .filter(|p| {
                p.logs
                    .lines()
                    .iter()
                    .any(|l| l.contains("CUDA out of memory"))
            })
            .map(|_| ())
    })
    .await;
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    let mut engine = RuleEngine::new(&rules);
    let fleet = &c.app.fleet;
    let inputs: Vec<EngineInput<'_>> = fleet
        .engines()
        .iter()
        .map(|e| kvtop_core::rules::with_pod(EngineInput::from_state(e), fleet.pod_info(e.target)))
        .collect();
    let findings = engine
        .evaluate(&inputs, kvtop_core::clock::unix_now())
        .to_vec();
    let firing = |rule: &str, pod: &str| {
        findings.iter().any(|f| {
            &*f.rule_id == rule && f.subject.label() == pod && f.state == FindingState::Firing
        })
    };
    assert!(firing("oom-chunked-prefill", &crashing), "{findings:#?}");
    assert!(firing("crash-loop", &crashing));
    assert!(firing("omp-threads-high", &threaded));
    assert!(!firing("omp-threads-high", &crashing));
}
