//! The real `kube::Client` against the simulated Kubernetes API: reads, label patches that
//! drain an engine, deletions that restart it, evictions the PDB refuses, logs, events, node
//! cordons, rollout restarts, access reviews, the pod proxy, and every injected fault giving
//! the right `KubeError`.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{
    Api, DeleteParams, EvictParams, ListParams, LogParams, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use kvtop::sources::kube::{ApiCall, KubeErrorKind};
use kvtop_core::kube_model::{self, ConvertOptions, EndpointDefaults, PodInfo};
use kvtop_sim::kube::{Denial, Fault, FaultRule, KubeSimHandle};
use kvtop_sim::{SimConfig, SimHandle};
use serde_json::json;

const NS: &str = "llm";
/// Generous bound for waits on the simulation; no test asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(20);

/// Six engines: llama on 0, 2, 4 (0 under KV pressure); qwen on 1, 3, 5 (5 down, crash-looping).
/// No HPA evaluations after the first, so engines only advance when a test reads them (16
/// simulated fleets share the test machine).
async fn cluster() -> (SimHandle, KubeSimHandle, Client) {
    cluster_with(1.0, 1e9).await
}

/// [`cluster`] with simulated time running `time_scale` times faster than the wall clock and
/// HPA evaluations every `hpa_period`.
async fn cluster_with(time_scale: f64, hpa_period: f64) -> (SimHandle, KubeSimHandle, Client) {
    let sim = SimConfig {
        engines: 6,
        seed: 7,
        time_scale,
        ..SimConfig::default()
    };
    let (sim, kube) = common::kube_sim::fast_cluster_of(sim, hpa_period).await;
    let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let client = Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"));
    (sim, kube, client)
}

fn pods(client: &Client) -> Api<Pod> {
    Api::namespaced(client.clone(), NS)
}

fn info(pod: &Pod) -> PodInfo {
    let defaults = EndpointDefaults::default();
    kube_model::pod_info(
        pod,
        &ConvertOptions {
            context: "sim",
            endpoint: &defaults,
            routing_label: None,
            event_lines: 10,
            log_lines: 10,
        },
    )
    .unwrap_or_else(|| panic!("pod without a name"))
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

async fn pod_of(kube: &KubeSimHandle, client: &Client, engine: usize) -> Pod {
    let names = kube.pods_of(engine);
    let first = names
        .first()
        .unwrap_or_else(|| panic!("engine {engine} has no pod"));
    pods(client)
        .get(first)
        .await
        .unwrap_or_else(|e| panic!("get {first}: {e}"))
}

/// Poll `check` until it returns `Some`, or fail after [`PATIENCE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("gave up waiting: {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_list_by_label_and_field_selectors_with_their_vllm_spec() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let all = api
        .list(&ListParams::default().labels("app.kubernetes.io/name=vllm"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.items.len(), 6);
    assert!(
        all.metadata
            .resource_version
            .is_some_and(|rv| !rv.is_empty())
    );
    let llama = api
        .list(
            &ListParams::default()
                .labels("model=llama-8b,app.kubernetes.io/component=serving-engine"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(llama.items.len(), 3);
    let set = api
        .list(&ListParams::default().labels("model in (qwen-7b),app.kubernetes.io/component"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.items.len(), 3);
    let by_name = api
        .list(&ListParams::default().fields(&format!("metadata.name={}", kube.pods_of(2)[0])))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(by_name.items.len(), 1);
    let paged = api
        .list(&ListParams::default().limit(4))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paged.items.len(), 4);
    let rest = api
        .list(
            &ListParams::default()
                .limit(4)
                .continue_token(paged.metadata.continue_.as_deref().unwrap_or("")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rest.items.len(), 2);
    let bad = api
        .list(&ListParams::default().fields("spec.hostname=x"))
        .await;
    assert!(bad.is_err(), "an unsupported field label is a 400");

    // The engine's container: its port named http, the vLLM arguments, the environment.
    let healthy = info(&pod_of(&kube, &client, 2).await);
    assert_eq!(healthy.phase, kube_model::PodPhase::Running);
    assert!(healthy.ready);
    assert_eq!(
        healthy.endpoint.port_source,
        kube_model::PortSource::NamedHttp
    );
    let url = healthy.endpoint.direct_url().unwrap_or_default();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(
        healthy.args.model.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct")
    );
    assert_eq!(healthy.args.enable_prefix_caching, Some(true));
    let owner = healthy.owner.clone().unwrap_or_else(|| panic!("no owner"));
    assert_eq!(owner.kind, "ReplicaSet");
    assert_eq!(owner.deployment.as_deref(), Some("vllm-llama-8b"));
    assert_eq!(healthy.node.as_deref(), Some("gpu-node-00"));

    let omp = info(&pod_of(&kube, &client, 1).await);
    assert!(
        omp.env
            .iter()
            .any(|e| e.name == "OMP_NUM_THREADS" && e.value.as_deref() == Some("32"))
    );

    let crashing = info(&pod_of(&kube, &client, 5).await);
    assert_eq!(crashing.args.enable_chunked_prefill, Some(true));
    assert_eq!(crashing.args.max_num_batched_tokens, Some(16_384));
    assert_eq!(crashing.waiting_reason.as_deref(), Some("CrashLoopBackOff"));
    assert!(crashing.restarts >= 1);
    assert!(!crashing.ready);
    let last = crashing
        .last_termination
        .clone()
        .unwrap_or_else(|| panic!("no last state"));
    assert_eq!((last.reason.as_str(), last.exit_code), ("Error", 1));

    let pressured = info(&pod_of(&kube, &client, 0).await);
    let oom = pressured
        .last_termination
        .clone()
        .unwrap_or_else(|| panic!("no last state"));
    assert_eq!((oom.reason.as_str(), oom.exit_code), ("OOMKilled", 137));
    assert_eq!(pressured.restarts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_routing_label_drains_the_engine_and_adding_it_back_restores_traffic() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let rate = kube.arrival_rate(2).unwrap_or_default();
    assert!(rate > 0.0);

    let remove = json!({"metadata": {"labels": {"app.kubernetes.io/component": null}}});
    let patched = api
        .patch(&pod, &PatchParams::default(), &Patch::Merge(&remove))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        patched
            .labels()
            .get("app.kubernetes.io/component")
            .is_none()
    );
    assert_eq!(kube.arrival_rate(2), Some(0.0));
    let routed = api
        .list(
            &ListParams::default()
                .labels("model=llama-8b,app.kubernetes.io/component=serving-engine"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(routed.items.len(), 2, "the Service no longer selects it");

    let add = json!([{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1component", "value": "serving-engine"}]);
    let request = http::Request::patch(format!("/api/v1/namespaces/{NS}/pods/{pod}"))
        .header("Content-Type", "application/json-patch+json")
        .body(add.to_string().into_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let back: Pod = client
        .request(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        back.labels()
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("serving-engine")
    );
    assert_eq!(kube.arrival_rate(2), Some(rate));

    let sent: Vec<_> = kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(
        sent[1].content_type.as_deref(),
        Some("application/json-patch+json")
    );
    assert!(
        sent[0]
            .path
            .ends_with(&format!("/namespaces/llm/pods/{pod}"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_changes_nothing_and_is_recorded_as_such() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let remove = json!({"metadata": {"labels": {"app.kubernetes.io/component": null}}});
    let preview = api
        .patch(
            &pod,
            &PatchParams::default().dry_run(),
            &Patch::Merge(&remove),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        preview
            .labels()
            .get("app.kubernetes.io/component")
            .is_none()
    );
    let stored = api.get(&pod).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        stored
            .labels()
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("serving-engine")
    );
    assert!(kube.arrival_rate(2).is_some_and(|r| r > 0.0));
    let deleted = api
        .delete(&pod, &DeleteParams::default().dry_run())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(deleted.is_left());
    assert_eq!(kube.pods_of(2), vec![pod.clone()]);
    let recorded = kube.requests();
    assert!(
        recorded
            .iter()
            .filter(|r| r.method != "GET")
            .all(|r| r.dry_run())
    );
    assert_eq!(recorded.iter().filter(|r| r.dry_run()).count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_resource_version_is_a_conflict_and_so_is_a_wrong_uid_precondition() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let stale = json!({"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}});
    let call = ApiCall::new("patch", "pods").namespace(Some(NS)).name(&pod);
    let err = call
        .run(
            PATIENCE,
            api.patch(&pod, &PatchParams::default(), &Patch::Merge(&stale)),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("the stale patch went through"));
    assert!(err.is_conflict(), "{err}");
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = ApiCall::new("delete", "pods")
        .run(PATIENCE, api.delete(&pod, &dp))
        .await
        .err()
        .unwrap_or_else(|| panic!("deleted despite the precondition"));
    assert!(err.is_conflict(), "{err}");
    assert!(err.to_string().contains("Precondition failed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_pod_restarts_its_engine_under_a_new_pod() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let old = name(&pod_of(&kube, &client, 4).await);
    let started_before = kube.engine_started_at(4).unwrap_or_default();
    let deleted = api
        .delete(&old, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let terminating = deleted
        .left()
        .unwrap_or_else(|| panic!("expected the pod back"));
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        kube.engine_started_at(4),
        None,
        "the engine stopped with its pod"
    );

    let replacement = kube
        .pods_of(4)
        .into_iter()
        .find(|p| *p != old)
        .unwrap_or_else(|| panic!("no replacement pod"));
    assert!(replacement.starts_with("vllm-llama-8b-"));
    let ready = eventually("the replacement becomes ready", || {
        let api = api.clone();
        let replacement = replacement.clone();
        async move {
            let pod = api.get(&replacement).await.ok()?;
            let info = info(&pod);
            info.ready.then_some(info)
        }
    })
    .await;
    assert_eq!(ready.restarts, 0);
    let started_after = kube.engine_started_at(4).unwrap_or_default();
    assert!(started_after > started_before, "counters start again");
    eventually("the old pod is gone", || {
        let api = api.clone();
        let old = old.clone();
        async move { api.get_opt(&old).await.ok()?.is_none().then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_honour_the_pod_disruption_budget() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    // qwen: engines 1 and 3 ready, 5 crash-looping; minAvailable 2 leaves no disruption.
    let qwen = name(&pod_of(&kube, &client, 1).await);
    let call = ApiCall::new("evict", "pods/eviction")
        .namespace(Some(NS))
        .name(&qwen);
    let err = call
        .run(PATIENCE, api.evict(&qwen, &EvictParams::default()))
        .await
        .err()
        .unwrap_or_else(|| panic!("the eviction went through"));
    assert!(err.is_too_many_requests(), "{err}");
    let text = err.to_string();
    assert!(text.contains("cannot evict pods/eviction llm/"), "{text}");
    assert!(text.contains("HTTP 429 TooManyRequests: Cannot evict pod as it would violate the pod's disruption budget."), "{text}");
    // A pod that is not ready may go.
    let crashing = name(&pod_of(&kube, &client, 5).await);
    api.evict(&crashing, &EvictParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // llama: three ready, one disruption allowed; a dry run leaves the pod in place.
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let pdb = pdbs
        .get("vllm-llama-8b")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pdb.status.map(|s| s.disruptions_allowed), Some(1));
    let first = name(&pod_of(&kube, &client, 0).await);
    let dry = EvictParams {
        post_options: PostParams {
            dry_run: true,
            field_manager: None,
        },
        ..EvictParams::default()
    };
    api.evict(&first, &dry)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kube.pods_of(0), vec![first.clone()]);
    api.evict(&first, &EvictParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let second = name(&pod_of(&kube, &client, 2).await);
    let blocked = api.evict(&second, &EvictParams::default()).await;
    assert!(
        blocked.is_err(),
        "the budget is used up while the replacement starts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_have_vllm_startup_and_stats_lines_and_the_crash_has_its_oom() {
    let (_sim, kube, client) = cluster_with(10.0, 1e9).await;
    let api = pods(&client);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let log = api
        .logs(&pod, &LogParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        log.contains("Starting vLLM API server 0 on http://0.0.0.0:"),
        "{log}"
    );
    assert!(log.contains("GPU KV cache size:"));
    let stats = eventually("a stats line", || {
        let api = api.clone();
        let pod = pod.clone();
        async move {
            let log = api.logs(&pod, &LogParams::default()).await.ok()?;
            log.lines()
                .find(|l| l.contains("Avg prompt throughput:"))
                .map(str::to_owned)
        }
    })
    .await;
    for part in [
        "tokens/s, Avg generation throughput:",
        "Running: ",
        " reqs, Waiting: ",
        "GPU KV cache usage: ",
        "Prefix cache hit rate: ",
    ] {
        assert!(stats.contains(part), "{stats}");
    }
    let tail = api
        .logs(
            &pod,
            &LogParams {
                tail_lines: Some(1),
                timestamps: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tail.lines().count(), 1);
    let stamp = tail.split(' ').next().unwrap_or("");
    assert!(
        stamp.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{tail}"
    );

    let crashing = name(&pod_of(&kube, &client, 5).await);
    let previous = api
        .logs(
            &crashing,
            &LogParams {
                previous: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        previous.contains("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate"),
        "{previous}"
    );
    let no_previous = api
        .logs(
            &pod,
            &LogParams {
                previous: true,
                ..LogParams::default()
            },
        )
        .await;
    assert!(
        no_previous.is_err(),
        "a container that never restarted has no previous log"
    );
    assert!(kube.append_log(&pod, "RuntimeError: NCCL error: unhandled cuda error"));
    let with_planted = api
        .logs(&pod, &LogParams::default())
        .await
        .unwrap_or_default();
    assert!(with_planted.contains("NCCL error"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_list_by_involved_object() {
    let (_sim, kube, client) = cluster().await;
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let about = events
        .list(&ListParams::default().fields(&format!(
            "involvedObject.name={pod},involvedObject.kind=Pod"
        )))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let reasons: Vec<String> = about
        .items
        .iter()
        .filter_map(|e| e.reason.clone())
        .collect();
    for reason in ["Scheduled", "Pulled", "Created", "Started"] {
        assert!(reasons.iter().any(|r| r == reason), "{reasons:?}");
    }
    assert!(
        about
            .items
            .iter()
            .all(|e| e.involved_object.name.as_deref() == Some(pod.as_str()))
    );
    let crashing = name(&pod_of(&kube, &client, 5).await);
    let backoff = events
        .list(
            &ListParams::default()
                .fields(&format!("involvedObject.name={crashing},reason=BackOff")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let event = backoff
        .items
        .first()
        .unwrap_or_else(|| panic!("no BackOff event"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(event.count.unwrap_or(0) >= 1);
    assert!(
        event
            .message
            .as_deref()
            .unwrap_or("")
            .starts_with("Back-off restarting failed container vllm in pod")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cordoned_node_keeps_replacements_pending_until_uncordoned() {
    let (_sim, kube, client) = cluster().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(list.items.len(), 1);
    let node = list.items[0].clone();
    let capacity = node
        .status
        .as_ref()
        .and_then(|s| s.capacity.clone())
        .unwrap_or_default();
    assert_eq!(
        capacity.get("nvidia.com/gpu").map(|q| q.0.as_str()),
        Some("8")
    );
    let node_name = name_of_node(&node);
    let cordon = json!({"spec": {"unschedulable": true}});
    let cordoned = nodes
        .patch(
            &node_name,
            &PatchParams::default(),
            &Patch::Strategic(&cordon),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let taints = cordoned
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "node.kubernetes.io/unschedulable")
    );
    let unschedulable = nodes
        .list(&ListParams::default().fields("spec.unschedulable=true"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unschedulable.items.len(), 1);

    let api = pods(&client);
    let old = name(&pod_of(&kube, &client, 2).await);
    api.delete(&old, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let replacement = kube
        .pods_of(2)
        .into_iter()
        .find(|p| *p != old)
        .unwrap_or_default();
    eventually("the old pod is gone", || {
        let api = api.clone();
        let old = old.clone();
        async move { api.get_opt(&old).await.ok()?.is_none().then_some(()) }
    })
    .await;
    let pending = api
        .get(&replacement)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = pending.status.clone().unwrap_or_default();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let scheduled = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap_or_else(|| panic!("no PodScheduled condition"));
    assert_eq!(
        (scheduled.status.as_str(), scheduled.reason.as_deref()),
        ("False", Some("Unschedulable"))
    );

    let uncordon = json!({"spec": {"unschedulable": false}});
    nodes
        .patch(
            &node_name,
            &PatchParams::default(),
            &Patch::Merge(&uncordon),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("the replacement runs", || {
        let api = api.clone();
        let replacement = replacement.clone();
        async move { info(&api.get(&replacement).await.ok()?).ready.then_some(()) }
    })
    .await;
}

fn name_of_node(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_restart_replaces_the_deployments_pods_one_at_a_time() {
    let (_sim, kube, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let before = pods(&client)
        .list(&ListParams::default().labels("model=llama-8b"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let old_names: Vec<String> = before.items.iter().map(name).collect();
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "2025-06-01T12:00:00Z"}}}}});
    let patched = deployments
        .patch(
            "vllm-llama-8b",
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.metadata.generation, Some(2));

    let most_terminating = std::sync::atomic::AtomicUsize::new(0);
    let done = eventually("every llama pod replaced", || {
        let client = client.clone();
        let old_names = old_names.clone();
        let deployments = deployments.clone();
        let most = &most_terminating;
        async move {
            let now = pods(&client)
                .list(&ListParams::default().labels("model=llama-8b"))
                .await
                .ok()?;
            let terminating = now
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_some())
                .count();
            most.fetch_max(terminating, std::sync::atomic::Ordering::Relaxed);
            let fresh = now
                .items
                .iter()
                .filter(|p| !old_names.contains(&name(p)) && info(p).ready)
                .count();
            let d = deployments.get("vllm-llama-8b").await.ok()?;
            let s = d.status.unwrap_or_default();
            (fresh == 3 && s.updated_replicas == Some(3) && s.ready_replicas == Some(3))
                .then_some(now.items.len())
        }
    })
    .await;
    assert_eq!(done, 3);
    assert_eq!(most_terminating.into_inner(), 1, "one pod at a time");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let llama_sets = sets
        .list(&ListParams::default().labels("model=llama-8b"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(llama_sets.items.len(), 2);
    let replicas: Vec<i32> = llama_sets
        .items
        .iter()
        .map(|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(-1))
        .collect();
    assert!(
        replicas.contains(&0) && replicas.contains(&3),
        "{replicas:?}"
    );
    let refused = json!({"spec": {"replicas": 9}});
    assert!(
        deployments
            .patch(
                "vllm-llama-8b",
                &PatchParams::default(),
                &Patch::Merge(&refused)
            )
            .await
            .is_err()
    );
    drop(kube);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_reviews_and_requests_follow_the_configured_denials() {
    let (_sim, kube, client) = cluster().await;
    kube.deny(Denial::new("delete", "pods"));
    kube.deny(Denial::new("create", "pods/eviction"));
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let ask = |verb: &str, resource: &str, sub: Option<&str>| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(NS.into()),
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                subresource: sub.map(str::to_owned),
                ..ResourceAttributes::default()
            }),
            non_resource_attributes: None,
        },
        ..SelfSubjectAccessReview::default()
    };
    let allowed = |r: SelfSubjectAccessReview| r.status.map(|s| s.allowed);
    let delete = reviews
        .create(&PostParams::default(), &ask("delete", "pods", None))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(allowed(delete), Some(false));
    let evict = reviews
        .create(
            &PostParams::default(),
            &ask("create", "pods", Some("eviction")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(allowed(evict), Some(false));
    let patch = reviews
        .create(&PostParams::default(), &ask("patch", "pods", None))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(allowed(patch), Some(true));

    let api = pods(&client);
    let pod = name(&pod_of(&kube, &client, 2).await);
    let err = ApiCall::new("delete", "pods")
        .namespace(Some(NS))
        .name(&pod)
        .run(PATIENCE, api.delete(&pod, &DeleteParams::default()))
        .await
        .err()
        .unwrap_or_else(|| panic!("the denied delete went through"));
    assert!(err.is_forbidden());
    assert!(
        err.to_string().contains("User \"kvtop-sim\" cannot delete resource \"pods\" in API group \"\" in the namespace \"llm\""),
        "{err}"
    );
    assert_eq!(kube.pods_of(2), vec![pod]);
    kube.clear_denials();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_services_hpas_and_pdbs_describe_each_model() {
    let (_sim, _kube, client) = cluster_with(1.0, 0.3).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), NS);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    let d = deployments
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let h = eventually("HPAs with metrics", || {
        let hpas = hpas.clone();
        async move {
            let list = hpas.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .all(|h| {
                    h.status
                        .as_ref()
                        .is_some_and(|s| s.current_metrics.is_some())
                })
                .then_some(list)
        }
    })
    .await;
    let p = pdbs
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let summaries = kube_model::summarize("sim", &d.items, &h.items, &p.items);
    assert_eq!(summaries.len(), 2);
    let llama = &summaries[0];
    assert_eq!(llama.name, "vllm-llama-8b");
    assert_eq!((llama.desired, llama.ready), (3, 3));
    let hpa = llama.hpa.clone().unwrap_or_else(|| panic!("no HPA"));
    assert_eq!((hpa.min, hpa.max, hpa.current), (3, 3, Some(3)));
    assert!(
        hpa.metrics[0].starts_with("vllm:num_requests_waiting "),
        "{:?}",
        hpa.metrics
    );
    assert!(hpa.metrics[0].ends_with("/50"), "{:?}", hpa.metrics);
    let pdb = llama.pdb.clone().unwrap_or_else(|| panic!("no PDB"));
    assert_eq!(
        (pdb.rule.as_str(), pdb.disruptions_allowed),
        ("minAvailable 2", 1)
    );
    let qwen = &summaries[1];
    assert_eq!(
        (qwen.desired, qwen.ready),
        (3, 2),
        "the crash-looping pod is not ready"
    );
    assert_eq!(qwen.pdb.clone().map(|p| p.disruptions_allowed), Some(0));

    let svc = services
        .get("vllm-llama-8b")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let selector = svc.spec.and_then(|s| s.selector).unwrap_or_default();
    assert_eq!(
        selector
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("serving-engine")
    );
    assert_eq!(selector.get("model").map(String::as_str), Some("llama-8b"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_proxy_reaches_the_engines_metrics_even_when_the_pod_ip_does_not() {
    let (_sim, kube, client) = cluster().await;
    kube.set_pod_ip(2, "127.0.0.2");
    let pod = pod_of(&kube, &client, 2).await;
    let info = info(&pod);
    assert_eq!(info.endpoint.pod_ip.as_deref(), Some("127.0.0.2"));
    let path = info.endpoint.proxy_path(NS, &name(&pod));
    let request = http_get(&path);
    let body = client
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        body.contains("vllm:num_requests_running"),
        "{}",
        &body[..body.len().min(300)]
    );
    let crashing = kube_model::pod_info(
        &pod_of(&kube, &client, 5).await,
        &ConvertOptions {
            context: "sim",
            endpoint: &EndpointDefaults::default(),
            routing_label: None,
            event_lines: 1,
            log_lines: 1,
        },
    )
    .unwrap_or_else(|| panic!("no pod"));
    let refused = client
        .request_text(http_get(
            &crashing.endpoint.proxy_path(NS, &crashing.key.name),
        ))
        .await;
    match refused {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 503),
        other => panic!("expected a 503, got {other:?}"),
    }
}

fn http_get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path)
        .body(Vec::new())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_injected_fault_becomes_a_clear_kube_error_and_the_next_call_works() {
    let (_sim, kube, client) = cluster().await;
    let api = pods(&client);
    let call = ApiCall::new("list", "pods")
        .namespace(Some(NS))
        .context("sim");
    let params = ListParams::default();
    let list = || api.list(&params);
    let limit = Duration::from_millis(500);
    for (code, reason) in [
        (401, "Unauthorized"),
        (403, "Forbidden"),
        (404, "NotFound"),
        (409, "Conflict"),
        (429, "TooManyRequests"),
        (500, "InternalError"),
    ] {
        kube.inject(
            FaultRule::new("/pods", Fault::Status(code))
                .method("GET")
                .times(1),
        );
        let err = call
            .run(limit, list())
            .await
            .err()
            .unwrap_or_else(|| panic!("{code} passed"));
        match &err.kind {
            KubeErrorKind::Api {
                code: c,
                reason: r,
                message,
            } => {
                assert_eq!((*c, r.as_str()), (code, reason));
                assert!(!message.is_empty());
            }
            other => panic!("{code}: {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "cannot list pods in namespace llm (context sim): HTTP {code} {reason}"
            )),
            "{text}"
        );
        assert!(
            call.run(limit, list()).await.is_ok(),
            "the fault was one-off"
        );
    }

    kube.inject(FaultRule::new("/pods", Fault::Delay(Duration::from_secs(3))).times(1));
    let err = call
        .run(Duration::from_millis(300), list())
        .await
        .err()
        .unwrap_or_else(|| panic!("no timeout"));
    assert_eq!(
        err.kind,
        KubeErrorKind::Timeout {
            after: Duration::from_millis(300)
        }
    );
    assert_eq!(
        err.to_string(),
        "cannot list pods in namespace llm (context sim): no answer within 0.3s"
    );

    kube.inject(FaultRule::new("/pods", Fault::Drop).times(1));
    let err = call
        .run(limit, list())
        .await
        .err()
        .unwrap_or_else(|| panic!("no drop"));
    assert!(
        matches!(err.kind, KubeErrorKind::ConnectionLost(_)),
        "{:?}",
        err.kind
    );
    assert!(err.to_string().contains("connection lost"), "{err}");
    assert!(call.run(limit, list()).await.is_ok());

    // Six codes × (failed call + next call), the timeout, the drop and the call after it:
    // every call reached the server exactly once (kvtop's client does not retry on its own).
    let calls = kube
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pods"))
        .count();
    assert_eq!(calls, 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_server_is_named_as_such() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = probe.local_addr().map(|a| a.port()).unwrap_or(0);
    drop(probe);
    let uri: http::Uri = format!("http://127.0.0.1:{port}")
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = Client::try_from(kube::Config::new(uri)).unwrap_or_else(|e| panic!("{e}"));
    let nodes: Api<Node> = Api::all(client);
    let err = ApiCall::new("list", "nodes")
        .run(PATIENCE, nodes.list(&ListParams::default()))
        .await
        .err()
        .unwrap_or_else(|| panic!("nothing listens there"));
    assert!(
        matches!(err.kind, KubeErrorKind::Unreachable(_)),
        "{:?}",
        err.kind
    );
    assert!(
        err.to_string()
            .starts_with("cannot list nodes: API server unreachable"),
        "{err}"
    );
}

/// kube's rustls and reqwest's rustls share one crypto provider (aws-lc-rs): building TLS
/// clients and running a handshake neither panics nor fails for want of a provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_clients_build_and_handshake_with_one_crypto_provider() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    // Not a TLS server: every handshake fails, which needs a working provider to find out.
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    let uri: http::Uri = format!("https://127.0.0.1:{port}")
        .parse()
        .unwrap_or_else(|e| panic!("{e}"));
    let client =
        Client::try_from(kube::Config::new(uri)).unwrap_or_else(|e| panic!("kube TLS client: {e}"));
    let nodes: Api<Node> = Api::all(client);
    let err = ApiCall::new("list", "nodes")
        .run(PATIENCE, nodes.list(&ListParams::default()))
        .await
        .err()
        .unwrap_or_else(|| panic!("a plain-text server cannot complete a TLS handshake"));
    assert!(!matches!(err.kind, KubeErrorKind::Config(_)), "{err}");

    let settings = kvtop::sources::ScrapeSettings {
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(5),
        body_limit: 1 << 20,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    };
    let http = kvtop::sources::build_client(&settings)
        .unwrap_or_else(|e| panic!("reqwest TLS client: {e}"));
    let result = http
        .get(format!("https://127.0.0.1:{port}/metrics"))
        .send()
        .await;
    assert!(result.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_log_streams_new_lines_as_they_are_written() {
    use futures_util::StreamExt;
    let (_sim, kube, client) = cluster().await;
    let pod = name(&pod_of(&kube, &client, 2).await);
    let request = http_get(&format!(
        "/api/v1/namespaces/{NS}/pods/{pod}/log?follow=true&tailLines=1"
    ));
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status().as_u16(), 200);
    let mut body = http_body_util::BodyExt::into_data_stream(response.into_body());
    fn next_text<B: AsRef<[u8]>, E>(chunk: Option<Result<B, E>>) -> String {
        match chunk {
            Some(Ok(bytes)) => String::from_utf8_lossy(bytes.as_ref()).into_owned(),
            _ => String::new(),
        }
    }
    let first = tokio::time::timeout(PATIENCE, body.next())
        .await
        .ok()
        .flatten();
    assert_eq!(next_text(first).lines().count(), 1, "the tail");
    assert!(kube.append_log(&pod, "WARNING planted while following"));
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !seen.contains("planted while following") {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("no new line in the stream: {seen:?}"));
        seen.push_str(&next_text(chunk));
    }
}

/// A body the API cannot decode is refused (400 for a damaged protobuf or JSON body, 415 for
/// an unknown media type) and the pod stays: it is never read as "no options".
#[tokio::test]
async fn an_undecodable_delete_or_eviction_body_is_refused_and_changes_nothing() {
    let (_sim, kube, client) = cluster().await;
    let pod = common::kube_sim::first_pod(&kube, 2);
    let http = reqwest::Client::new();
    let url = format!("{}/api/v1/namespaces/{NS}/pods/{pod}", kube.url);
    let cases: [(&str, &str, &[u8], u16); 4] = [
        (
            "DELETE",
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\x0a\xff\xff",
            400,
        ),
        ("DELETE", "application/json", b"{\"dryRun\": [\"All\"", 400),
        ("DELETE", "application/x-yaml", b"dryRun: [All]", 415),
        (
            "POST",
            "application/vnd.kubernetes.protobuf",
            b"not a protobuf body",
            400,
        ),
    ];
    for (method, content_type, body, code) in cases {
        let target = if method == "POST" {
            format!("{url}/eviction")
        } else {
            url.clone()
        };
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = http
            .request(method.clone(), &target)
            .header("content-type", content_type)
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), code, "{method} {content_type}");
        let status: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], code);
    }
    let still = pods(&client).get(&pod).await.unwrap();
    assert!(
        still.metadata.deletion_timestamp.is_none(),
        "{pod} was not touched"
    );
    assert_eq!(kube.pods_of(2), vec![pod]);
}
