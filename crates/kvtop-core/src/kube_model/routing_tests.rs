use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as K8sSelector;
use serde_json::{Value, json};

use super::*;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn pod_labels() -> BTreeMap<String, String> {
    labels(&[
        ("app.kubernetes.io/name", "vllm"),
        ("app.kubernetes.io/component", "serving-engine"),
        ("model", "llama-8b"),
        ("pod-template-hash", "6d4f9"),
    ])
}

fn pod(labels: &BTreeMap<String, String>) -> RoutedPod<'_> {
    RoutedPod {
        namespace: "llm",
        name: "vllm-llama-8b-6d4f9-x7k2p",
        uid: "uid-1",
        ip: Some("10.0.0.7"),
        labels,
        ready: true,
    }
}

fn service(name: &str, selector: Option<Value>) -> Service {
    let mut spec = json!({"ports": [{"port": 8000}]});
    if let Some(s) = selector {
        spec["selector"] = s;
    }
    from(json!({"metadata": {"name": name, "namespace": "llm"}, "spec": spec}))
}

fn slice(service: &str, endpoints: Value) -> EndpointSlice {
    from(json!({
        "metadata": {"name": format!("{service}-abcde"), "namespace": "llm",
                     "labels": {SERVICE_NAME_LABEL: service}},
        "addressType": "IPv4",
        "endpoints": endpoints,
    }))
}

fn listing_pod(ready: bool) -> Value {
    json!([{"addresses": ["10.0.0.7"], "conditions": {"ready": ready},
            "targetRef": {"kind": "Pod", "namespace": "llm", "name": "vllm-llama-8b-6d4f9-x7k2p", "uid": "uid-1"}}])
}

fn replica_set_selector() -> K8sSelector {
    from(
        json!({"matchLabels": {"app.kubernetes.io/name": "vllm", "model": "llama-8b", "pod-template-hash": "6d4f9"}}),
    )
}

#[test]
fn a_service_and_its_replica_set_pair_removes_the_label_only_the_service_needs() {
    let labels = pod_labels();
    let services = [service(
        "vllm-llama-8b",
        Some(
            json!({"app.kubernetes.io/name": "vllm", "model": "llama-8b", "app.kubernetes.io/component": "serving-engine"}),
        ),
    )];
    let slices = [slice("vllm-llama-8b", listing_pod(true))];
    let objects = RoutingObjects {
        services: &services,
        slices: &slices,
        pools: &[],
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(routing.routed());
    assert!(!routing.orphans());
    assert_eq!(routing.removals.len(), 1);
    let removal = &routing.removals[0];
    assert_eq!(removal.label, "app.kubernetes.io/component");
    assert_eq!(removal.value, "serving-engine");
    assert_eq!(removal.stops, vec!["Service vllm-llama-8b".to_owned()]);
    assert_eq!(routing.services(), vec!["vllm-llama-8b".to_owned()]);
}

#[test]
fn a_pod_listed_not_ready_is_in_a_route_but_gets_no_traffic() {
    let labels = pod_labels();
    let services = [service(
        "svc",
        Some(json!({"model": "llama-8b", "app.kubernetes.io/component": "serving-engine"})),
    )];
    let slices = [slice("svc", listing_pod(false))];
    let objects = RoutingObjects {
        services: &services,
        slices: &slices,
        pools: &[],
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(!routing.routed());
    assert_eq!(routing.removals[0].label, "app.kubernetes.io/component");
}

#[test]
fn an_inference_pool_of_either_version_is_a_route_and_one_label_stops_both_routes() {
    let labels = pod_labels();
    let v1 = InferencePool::from_json(&json!({
        "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
        "metadata": {"name": "llama-pool", "namespace": "llm"},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/component": "serving-engine", "model": "llama-8b"}},
                 "targetPorts": [{"number": 8000}]}
    }));
    let alpha = InferencePool::from_json(&json!({
        "apiVersion": "inference.networking.x-k8s.io/v1alpha2", "kind": "InferencePool",
        "metadata": {"name": "llama-pool-old", "namespace": "llm"},
        "spec": {"selector": {"app.kubernetes.io/component": "serving-engine"}, "targetPortNumber": 8000}
    }));
    let pools: Vec<InferencePool> = [v1, alpha].into_iter().flatten().collect();
    assert_eq!(pools.len(), 2);
    assert_eq!(pools[0].group, "inference.networking.k8s.io");
    assert_eq!(
        pools[1].selector,
        labels_of(&[("app.kubernetes.io/component", "serving-engine")])
    );
    let objects = RoutingObjects {
        services: &[],
        slices: &[],
        pools: &pools,
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(routing.routed());
    assert_eq!(routing.removals.len(), 1, "{routing:?}");
    assert_eq!(routing.removals[0].label, "app.kubernetes.io/component");
    assert_eq!(
        routing.removals[0].stops,
        vec![
            "InferencePool llama-pool".to_owned(),
            "InferencePool llama-pool-old".to_owned()
        ]
    );
    assert_eq!(routing.pools().len(), 2);
}

fn labels_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    labels(pairs)
}

#[test]
fn when_every_label_is_the_replica_sets_the_removal_orphans_the_pod() {
    let labels = pod_labels();
    let services = [service(
        "svc",
        Some(json!({"app.kubernetes.io/name": "vllm", "model": "llama-8b"})),
    )];
    let slices = [slice("svc", listing_pod(true))];
    let objects = RoutingObjects {
        services: &services,
        slices: &slices,
        pools: &[],
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(routing.orphans());
    assert_eq!(routing.removals.len(), 1);
    assert!(["app.kubernetes.io/name", "model"].contains(&routing.removals[0].label.as_str()));
    // Without an owner nothing is orphaned.
    let bare = resolve(&pod(&labels), &objects, None);
    assert!(!bare.orphans());
}

#[test]
fn no_route_at_all_is_not_routed_and_removes_nothing() {
    let labels = pod_labels();
    let services = [service("other", Some(json!({"model": "qwen"})))];
    let slices = [slice("other", json!([]))];
    let objects = RoutingObjects {
        services: &services,
        slices: &slices,
        pools: &[],
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(routing.routes.is_empty());
    assert!(!routing.routed());
    assert!(routing.removals.is_empty());
}

#[test]
fn a_selector_less_service_whose_slices_list_the_pod_routes_but_no_label_stops_it() {
    let labels = pod_labels();
    let services = [service("manual", None)];
    // Written by hand: no target reference, the pod's address only.
    let slices = [slice("manual", json!([{"addresses": ["10.0.0.7"]}]))];
    let objects = RoutingObjects {
        services: &services,
        slices: &slices,
        pools: &[],
    };
    let routing = resolve(&pod(&labels), &objects, Some(&replica_set_selector()));
    assert!(routing.routed());
    assert!(routing.removals.is_empty());
    assert_eq!(routing.unremovable().count(), 1);
    assert!(routing.services().is_empty());
}

#[test]
fn routes_of_other_namespaces_and_empty_selectors_do_not_count() {
    let labels = pod_labels();
    let mut elsewhere = service("svc", Some(json!({"model": "llama-8b"})));
    elsewhere.metadata.namespace = Some("other".into());
    let services = [elsewhere, service("empty", Some(json!({})))];
    let pools = [InferencePool {
        namespace: "llm".into(),
        name: "all".into(),
        group: "inference.networking.k8s.io".into(),
        selector: BTreeMap::new(),
    }];
    let objects = RoutingObjects {
        services: &services,
        slices: &[],
        pools: &pools,
    };
    assert!(resolve(&pod(&labels), &objects, None).routes.is_empty());
}
