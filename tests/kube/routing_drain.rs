//! The drain's routing from what really routes, through the real `kube::Client` against the
//! simulated API: the label each route needs removed (a Service beside its ReplicaSet, an
//! InferencePool, a Service on the ReplicaSet's own labels), and the wait for the
//! EndpointSlices to let go of the pod before the in-flight wait.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kvtop::actions::execute::ExecSettings;
use kvtop::actions::plan::{ActionKind, Plan, Policy, StepOp};
use kvtop::actions::run::prepare;
use kvtop::actions::{InFlightProbe, Progress, execute};
use kvtop::sources::ScrapeSettings;
use kvtop::sources::kube::ClusterClient;
use kvtop_core::kube_model::PodInfo;
use kvtop_core::kube_model::routing::RouteKind;
use kvtop_sim::SimHandle;
use kvtop_sim::kube::{KubeSimHandle, ModelRouting};

const LIMIT: Duration = Duration::from_secs(2);
/// A llama engine (even indices serve llama-8b).
const ENGINE: usize = 2;

struct Setup {
    _sim: SimHandle,
    kube: KubeSimHandle,
    cluster: ClusterClient,
}

/// Six engines; llama-8b routed as `routing` says.
async fn setup(routing: Option<ModelRouting>) -> Setup {
    let sim = kvtop_sim::start(kvtop_sim::SimConfig {
        engines: 6,
        seed: 11,
        ..kvtop_sim::SimConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("sim: {e}"));
    let mut cfg = common::kube_sim::fast_kube_config(1e9);
    if let Some(r) = routing {
        cfg.cluster.routing = BTreeMap::from([("vllm-llama-8b".to_owned(), r)]);
    }
    let kube = kvtop_sim::kube::start(&sim, cfg)
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let cluster =
        ClusterClient::from_config("sim", config, LIMIT).unwrap_or_else(|e| panic!("{e}"));
    Setup {
        _sim: sim,
        kube,
        cluster,
    }
}

impl Setup {
    async fn drain_plan(&self, pod: &str) -> (Plan, Vec<PodInfo>) {
        prepare(
            &self.cluster,
            ActionKind::DrainPod,
            "llm",
            pod,
            &Policy::default(),
            LIMIT,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The engine's pods when the in-flight wait starts, and whether the drained one is still owned.
type AtWait = (Vec<String>, bool);

fn scrape() -> ScrapeSettings {
    ScrapeSettings {
        interval: Duration::from_secs(1),
        timeout: LIMIT,
        body_limit: 8 << 20,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    }
}

fn settings() -> ExecSettings {
    ExecSettings {
        api_timeout: LIMIT,
        poll: Duration::from_millis(100),
        evict_retry_for: Duration::from_secs(5),
    }
}

fn removed_labels(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .filter_map(|s| match &s.op {
            StepOp::RemoveLabel { label, .. } => Some(label.clone()),
            _ => None,
        })
        .collect()
}

fn routing_reason(plan: &Plan) -> String {
    plan.guards
        .iter()
        .find(|g| g.name == "routing")
        .map(|g| g.reason.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_beside_its_replica_set_loses_the_label_only_it_needs_and_the_drain_waits_for_its_slices()
 {
    let s = setup(None).await;
    let pod = common::kube_sim::first_pod(&s.kube, ENGINE);
    let (plan, info) = s.drain_plan(&pod).await;
    assert_eq!(removed_labels(&plan), ["app.kubernetes.io/component"]);
    assert!(
        routing_reason(&plan)
            .starts_with("removing app.kubernetes.io/component stops Service vllm-llama-8b"),
        "{}",
        plan.render()
    );
    assert!(matches!(
        &plan.steps[1].op,
        StepOp::WaitUnrouted { via: RouteKind::Service, names, .. } if names == &["vllm-llama-8b".to_owned()]
    ));
    assert!(matches!(plan.steps[3].op, StepOp::Evict { .. }));
    assert!(
        plan.guards
            .iter()
            .any(|g| g.passed && g.reason == "may list endpointslices.discovery.k8s.io in llm"),
        "{}",
        plan.render()
    );
    assert!(plan.blocking_guards(false).is_empty(), "{}", plan.render());
    assert!(s.kube.arrival_rate(ENGINE).is_some_and(|r| r > 0.0));

    // At the in-flight wait, no slice lists the pod and its engine gets no new request.
    let probe = InFlightProbe::via_proxy(&s.cluster, info, &scrape(), LIMIT);
    let settings = settings();
    let at_idle_wait: Arc<Mutex<Option<Option<f64>>>> = Arc::default();
    let seen = Arc::clone(&at_idle_wait);
    let kube = &s.kube;
    let mut progress = move |p: Progress| {
        if let Progress::Step { index: 2, .. } = p {
            *seen.lock().unwrap() = Some(kube.arrival_rate(ENGINE));
        }
    };
    let slices: Api<EndpointSlice> = Api::namespaced(s.cluster.client.clone(), "llm");
    let done = execute(&s.cluster, &plan, &settings, &probe, &mut progress)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        done[1].contains("has left Service vllm-llama-8b"),
        "{done:?}"
    );
    assert_eq!(*at_idle_wait.lock().unwrap(), Some(Some(0.0)));
    let listed = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=vllm-llama-8b"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = listed
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter_map(|e| e.target_ref.as_ref()?.name.clone())
        .collect();
    assert!(!names.contains(&pod), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inference_pool_is_found_and_its_label_removed() {
    let s = setup(Some(ModelRouting::InferencePool)).await;
    let pod = common::kube_sim::first_pod(&s.kube, ENGINE);
    let (plan, _) = s.drain_plan(&pod).await;
    assert_eq!(removed_labels(&plan), ["app.kubernetes.io/component"]);
    assert!(
        routing_reason(&plan).contains("stops InferencePool vllm-llama-8b"),
        "{}",
        plan.render()
    );
    assert!(matches!(
        &plan.steps[1].op,
        StepOp::WaitUnrouted { via: RouteKind::InferencePool, group, .. } if group == "inference.networking.k8s.io"
    ));
    assert!(plan.blocking_guards(false).is_empty(), "{}", plan.render());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_on_the_replica_set_labels_orphans_the_pod_and_deletes_it_last() {
    let s = setup(Some(ModelRouting::ServiceOnReplicaSetLabels)).await;
    let pod = common::kube_sim::first_pod(&s.kube, ENGINE);
    let (plan, _) = s.drain_plan(&pod).await;
    let labels = removed_labels(&plan);
    assert_eq!(labels.len(), 1, "{}", plan.render());
    assert!(
        ["app.kubernetes.io/name", "model"].contains(&labels[0].as_str()),
        "{labels:?}"
    );
    let reason = routing_reason(&plan);
    assert!(reason.contains("orphans the pod"), "{reason}");
    assert!(matches!(
        plan.steps.last().map(|s| &s.op),
        Some(StepOp::Delete { .. })
    ));

    // Run it: once the label is gone the ReplicaSet lets go of the pod and creates its
    // replacement at once; the orphan finishes its requests and is deleted last.
    let (plan, info) = s.drain_plan(&pod).await;
    let probe = InFlightProbe::via_proxy(&s.cluster, info, &scrape(), LIMIT);
    let pods: Api<Pod> = Api::namespaced(s.cluster.client.clone(), "llm");
    let at_wait: Arc<Mutex<Option<AtWait>>> = Arc::default();
    let seen = Arc::clone(&at_wait);
    let kube = &s.kube;
    let orphan = pod.clone();
    let mut progress = move |p: Progress| {
        if let Progress::Step { index: 2, .. } = p {
            let owned = kube
                .pod_object(&orphan)
                .is_some_and(|o| o["metadata"]["ownerReferences"].is_array());
            *seen.lock().unwrap() = Some((kube.pods_of(ENGINE), owned));
        }
    };
    let done = execute(&s.cluster, &plan, &settings(), &probe, &mut progress)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (during, still_owned) = at_wait.lock().unwrap().clone().unwrap_or_default();
    assert!(!still_owned, "the ReplicaSet released the pod");
    assert_eq!(
        during.len(),
        2,
        "the orphan and its replacement: {during:?}"
    );
    assert!(
        done.last()
            .is_some_and(|l| l.starts_with(&format!("deleted llm/{pod}"))),
        "{done:?}"
    );
    let replacement = during
        .iter()
        .find(|p| **p != pod)
        .cloned()
        .unwrap_or_default();
    crate::actions_cli::eventually("the replacement runs once the orphan is gone", || {
        kube.pods_of(ENGINE) == [replacement.clone()]
    })
    .await;
    let current = pods
        .get(&replacement)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let owners = current.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.first().map(|o| o.kind.as_str()), Some("ReplicaSet"));
}
