//! The simulated cluster's state machine at chosen simulated times, without HTTP.

use serde_json::json;

use super::*;
use crate::kube::engines::EngineLink;
use crate::kube::patch::PatchKind;

use super::test_support::T0;

/// Four engines (llama 0, 2; qwen 1, 3 with 3 down) and short lifecycle timings.
fn cluster() -> (Cluster, EngineLink) {
    cluster_routed(BTreeMap::new())
}

/// [`cluster`] with models routed as `routing` says.
fn cluster_routed(routing: BTreeMap<String, ModelRouting>) -> (Cluster, EngineLink) {
    super::test_support::cluster(routing)
}

fn everything() -> (LabelSelector, FieldSelector) {
    (LabelSelector::default(), FieldSelector::default())
}

fn pods(c: &Cluster) -> Vec<Value> {
    let (l, f) = everything();
    c.list(Kind::Pod, Some("llm"), &l, &f, None, None)
        .map(|list| list["items"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default()
}

fn pod_named<'a>(all: &'a [Value], name: &str) -> Option<&'a Value> {
    all.iter().find(|p| p["metadata"]["name"] == name)
}

#[test]
fn the_down_engine_starts_five_minutes_into_its_crash_loop() {
    let (mut c, engines) = cluster();
    c.tick(T0, &engines);
    let crash = c.pods_of(3).first().cloned().unwrap_or_default();
    let all = pods(&c);
    let pod = pod_named(&all, &crash).cloned().unwrap_or_default();
    let status = &pod["status"]["containerStatuses"][0];
    // Created 300 s ago, started 1 s later, runs of 20 s: failures at 21, 51, 91, 151, 251;
    // backing off 160 s since 251 → restartCount 4, waiting.
    assert_eq!(status["restartCount"], 4);
    assert_eq!(status["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(status["lastState"]["terminated"]["reason"], "Error");
    let ready = &pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["status"], "False");
    let healthy = c.pods_of(0).first().cloned().unwrap_or_default();
    let pod = pod_named(&all, &healthy).cloned().unwrap_or_default();
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(
        pod["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"], "OOMKilled",
        "engine 0 is the pressured one"
    );
}

#[test]
fn a_deleted_pod_terminates_and_its_replacement_restarts_the_engine_when_ready() {
    let (mut c, engines) = cluster();
    c.tick(T0, &engines);
    let old = c.pods_of(2).first().cloned().unwrap_or_default();
    let deleted = c.delete_pod(&old, &DeleteOptions::default(), T0 + 1.0, &engines);
    assert!(deleted.is_ok_and(|p| p["metadata"]["deletionTimestamp"].is_string()));
    assert_eq!(engines.started_at(2), None, "stopped with its pod");
    let replacement = c.pods_of(2).first().cloned().unwrap_or_default();
    assert_ne!(replacement, old);
    assert!(replacement.starts_with("vllm-llama-8b-"));

    // Terminating until T0 + 2; the replacement is scheduled once the GPU is free, creates its
    // container for 1 s and starts for 2 s: ready at T0 + 5.
    c.tick(T0 + 1.5, &engines);
    let all = pods(&c);
    assert!(pod_named(&all, &old).is_some());
    assert_eq!(
        pod_named(&all, &replacement).map(|p| p["status"]["phase"].clone()),
        Some(json!("Pending"))
    );
    c.tick(T0 + 2.0, &engines);
    assert!(pod_named(&pods(&c), &old).is_none(), "terminated");
    c.tick(T0 + 4.5, &engines);
    assert_eq!(engines.started_at(2), None, "still starting");
    c.tick(T0 + 5.0, &engines);
    assert_eq!(engines.started_at(2), Some(T0 + 5.0));
}

#[test]
fn evictions_count_ready_pods_against_min_available() {
    let (mut c, engines) = cluster();
    c.tick(T0, &engines);
    // llama: two ready, minAvailable 2 → no disruption allowed.
    let llama = c.pods_of(0).first().cloned().unwrap_or_default();
    let blocked = c.evict(&llama, &DeleteOptions::default(), T0, &engines);
    assert!(matches!(blocked, Err(ref e) if e.code == 429));
    // The crash-looping qwen pod is not ready: it may go.
    let crash = c.pods_of(3).first().cloned().unwrap_or_default();
    assert!(
        c.evict(
            &crash,
            &DeleteOptions {
                dry_run: true,
                ..DeleteOptions::default()
            },
            T0,
            &engines
        )
        .is_ok()
    );
    assert_eq!(
        c.pods_of(3),
        vec![crash.clone()],
        "a dry run deletes nothing"
    );
    assert!(
        c.evict(&crash, &DeleteOptions::default(), T0, &engines)
            .is_ok()
    );
    assert_ne!(c.pods_of(3), vec![crash]);
}

#[test]
fn removing_the_routing_label_stops_arrivals_and_a_spec_change_is_refused() {
    let (mut c, engines) = cluster();
    c.tick(T0, &engines);
    let pod = c.pods_of(2).first().cloned().unwrap_or_default();
    let before = engines.arrival_rate(2).unwrap_or_default();
    assert!(before > 0.0);
    // The Service requires the component label; the ReplicaSet does not.
    let unlabel = json!({"metadata": {"labels": {"app.kubernetes.io/component": null}}});
    let patched = c.patch(
        Kind::Pod,
        Some("llm"),
        &pod,
        PatchKind::Merge,
        &unlabel,
        false,
        T0,
        &engines,
    );
    assert!(patched.is_ok());
    assert_eq!(engines.arrival_rate(2), Some(0.0));
    let image = json!({"spec": {"nodeName": "elsewhere"}});
    let refused = c.patch(
        Kind::Pod,
        Some("llm"),
        &pod,
        PatchKind::Merge,
        &image,
        false,
        T0,
        &engines,
    );
    assert!(matches!(refused, Err(ref e) if e.code == 422));
    let relabel =
        json!({"metadata": {"labels": {"app.kubernetes.io/component": "serving-engine"}}});
    assert!(
        c.patch(
            Kind::Pod,
            Some("llm"),
            &pod,
            PatchKind::Merge,
            &relabel,
            false,
            T0,
            &engines
        )
        .is_ok()
    );
    assert_eq!(engines.arrival_rate(2), Some(before));
}

#[test]
fn a_model_routed_through_an_inference_pool_has_no_service_and_its_labels_decide_traffic() {
    let routing = BTreeMap::from([("vllm-llama-8b".to_owned(), ModelRouting::InferencePool)]);
    let (mut c, engines) = cluster_routed(routing);
    c.tick(T0, &engines);
    let (l, f) = everything();
    let pools = c
        .list(Kind::InferencePool, Some("llm"), &l, &f, None, None)
        .unwrap_or_default();
    assert_eq!(pools["kind"], "InferencePoolList");
    assert_eq!(pools["items"][0]["metadata"]["name"], "vllm-llama-8b");
    assert!(c.get(Kind::Service, Some("llm"), "vllm-llama-8b").is_err());
    let pod = c.pods_of(2).first().cloned().unwrap_or_default();
    let before = engines.arrival_rate(2).unwrap_or_default();
    assert!(before > 0.0, "the pool's endpoint picker sends it requests");
    let unlabel = json!({"metadata": {"labels": {"model": null}}});
    let patched = c.patch(
        Kind::Pod,
        Some("llm"),
        &pod,
        PatchKind::Merge,
        &unlabel,
        false,
        T0,
        &engines,
    );
    assert!(patched.is_ok());
    assert_eq!(engines.arrival_rate(2), Some(0.0));
}

#[test]
fn a_service_on_the_replica_set_labels_routes_like_any_service() {
    let routing = BTreeMap::from([(
        "vllm-llama-8b".to_owned(),
        ModelRouting::ServiceOnReplicaSetLabels,
    )]);
    let (mut c, engines) = cluster_routed(routing);
    c.tick(T0, &engines);
    let service = c
        .get(Kind::Service, Some("llm"), "vllm-llama-8b")
        .unwrap_or_default();
    assert_eq!(
        service["spec"]["selector"],
        json!({"app.kubernetes.io/name": "vllm", "model": "llama-8b"})
    );
    assert!(engines.arrival_rate(2).unwrap_or_default() > 0.0);
    // The component label is no Service's business here: removing it changes nothing.
    let pod = c.pods_of(2).first().cloned().unwrap_or_default();
    let unlabel = json!({"metadata": {"labels": {"app.kubernetes.io/component": null}}});
    let patched = c.patch(
        Kind::Pod,
        Some("llm"),
        &pod,
        PatchKind::Merge,
        &unlabel,
        false,
        T0,
        &engines,
    );
    assert!(patched.is_ok());
    assert!(engines.arrival_rate(2).unwrap_or_default() > 0.0);
}

#[test]
fn lists_page_with_continue_tokens_and_reject_unknown_field_labels() {
    let (mut c, engines) = cluster();
    c.tick(T0, &engines);
    let (l, f) = everything();
    let first = c
        .list(Kind::Pod, None, &l, &f, Some(3), None)
        .unwrap_or_default();
    assert_eq!(first["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(first["metadata"]["continue"], "3");
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let rest = c
        .list(Kind::Pod, None, &l, &f, Some(3), Some("3"))
        .unwrap_or_default();
    assert_eq!(rest["items"].as_array().map(Vec::len), Some(1));
    assert!(rest["metadata"]["continue"].is_null());
    let bad = FieldSelector::parse("spec.hostNetwork=true").unwrap_or_default();
    assert!(matches!(c.list(Kind::Pod, None, &l, &bad, None, None), Err(ref e) if e.code == 400));
}
