//! Discovery recognises engine pods by what they run: a Deployment labelled only `app: vllm`
//! (vLLM's own Kubernetes guide) is found by its `vllm/vllm-openai` image with no flag; the
//! user's own selector narrows the search; and each round says what it searched and why it
//! found nothing (no match, forbidden), through the real `kube::Client`.

use std::time::Duration;

use kvtop::config::KubernetesConfig;
use kvtop::sources::Outbox;
use kvtop::sources::kube::{ClusterClient, Discovery, KubeUpdate};
use kvtop_core::kube_model::{ContextSearch, SearchOutcome, explain_empty};
use kvtop_sim::kube::objects::LabelStyle;
use kvtop_sim::kube::{ClusterConfig, Fault, FaultRule, KubeSimConfig, KubeSimHandle};
use kvtop_sim::{SimConfig, SimHandle};
use tokio::sync::mpsc;

use crate::common::kube_sim::fast_kube_config;

/// A fleet of `engines` whose workloads carry only `app: vllm`, and its simulated API.
async fn plain_app_cluster(engines: usize) -> (SimHandle, KubeSimHandle) {
    let sim = kvtop_sim::start(SimConfig {
        engines,
        seed: 11,
        ..SimConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("sim: {e}"));
    let base = fast_kube_config(1e9);
    let config = KubeSimConfig {
        cluster: ClusterConfig {
            labels: LabelStyle::PlainApp,
            ..base.cluster
        },
        ..base
    };
    let kube = kvtop_sim::kube::start(&sim, config)
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    (sim, kube)
}

/// Discovery of the simulated cluster with `settings` (timings shortened, text loops off).
fn discover(
    kube: &KubeSimHandle,
    settings: KubernetesConfig,
) -> (Discovery, mpsc::Receiver<KubeUpdate>) {
    let settings = KubernetesConfig {
        enabled: true,
        poll_interval: Duration::from_millis(300),
        api_timeout: Duration::from_secs(2),
        log_lines: 0,
        event_lines: 0,
        ..settings
    };
    let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let cluster = ClusterClient::from_config("sim", config, settings.api_timeout)
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = mpsc::channel(1024);
    (Discovery::start(&[cluster], &settings, Outbox::new(tx)), rx)
}

/// The first search report satisfying `wanted`, and the pods discovered until then.
async fn search_until(
    rx: &mut mpsc::Receiver<KubeUpdate>,
    wanted: impl Fn(&ContextSearch) -> bool,
) -> (ContextSearch, Vec<String>) {
    let mut pods = Vec::new();
    let wait = async {
        while let Some(update) = rx.recv().await {
            match update {
                KubeUpdate::Pods { changed, .. } => {
                    pods.extend(changed.into_iter().map(|p| p.key.name));
                }
                KubeUpdate::Searched(search) if wanted(&search) => return Some(search),
                _ => {}
            }
        }
        None
    };
    let found = tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no such search; pods so far: {pods:?}"));
    (found, pods)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_vllm_deployment_is_found_by_its_image_with_the_default_settings() {
    let (_sim, kube) = plain_app_cluster(3).await;
    let engines: Vec<String> = (0..3).flat_map(|i| kube.pods_of(i)).collect();
    assert_eq!(engines.len(), 3);
    let (_discovery, mut rx) = discover(&kube, KubernetesConfig::default());
    let (search, mut pods) = search_until(&mut rx, |s| s.engines() > 0).await;
    pods.sort();
    let mut expected = engines.clone();
    expected.sort();
    assert_eq!(pods, expected, "every engine pod, found by its image");
    assert_eq!(
        search.outcome,
        SearchOutcome::Listed {
            pods: 3,
            engines: 3
        }
    );
    assert!(search.by_workload);
    assert_eq!(search.namespace.as_deref(), Some(kube.namespace.as_str()));
    // One list of the namespace's pods per round, without a label selector.
    let lists: Vec<String> = kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/pods"))
        .map(|r| r.path)
        .collect();
    assert!(!lists.is_empty());
    assert!(
        kube.requests()
            .iter()
            .filter(|r| r.path.ends_with("/pods"))
            .all(|r| !r.query.contains("labelSelector")),
        "{lists:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_s_selector_narrows_and_the_round_says_why_nothing_matched() {
    let (_sim, kube) = plain_app_cluster(2).await;
    let settings = KubernetesConfig {
        selectors: vec!["app.kubernetes.io/name=vllm".into()],
        ..KubernetesConfig::default()
    };
    let (_discovery, mut rx) = discover(&kube, settings);
    let (search, pods) = search_until(&mut rx, |_| true).await;
    assert!(pods.is_empty(), "{pods:?}");
    assert_eq!(
        search.outcome,
        SearchOutcome::Listed {
            pods: 0,
            engines: 0
        }
    );
    let lines = explain_empty(&[search]);
    assert_eq!(
        lines[1],
        format!(
            "searched context sim: pods labelled app.kubernetes.io/name=vllm in namespace {}",
            kube.namespace
        )
    );
    assert_eq!(
        lines[2],
        format!("sim: no pods in namespace {}", kube.namespace)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_pod_list_is_reported_as_such() {
    let (_sim, kube) = plain_app_cluster(2).await;
    kube.inject(FaultRule::new("/pods", Fault::Status(403)).method("GET"));
    let (_discovery, mut rx) = discover(&kube, KubernetesConfig::default());
    let (search, _) = search_until(&mut rx, |_| true).await;
    let SearchOutcome::Forbidden(message) = &search.outcome else {
        panic!("{search:?}");
    };
    assert!(message.contains("forbidden"), "{message}");
    let lines = explain_empty(&[search]);
    assert!(lines[2].starts_with("sim: forbidden: "), "{lines:?}");
}
