//! The drain's routing steps derived from the pod's routes.

use std::collections::BTreeMap;

use super::*;
use crate::kube_model::routing::{LabelRemoval, Route};
use crate::kube_model::{Owner, PodInfo};

fn owned_pod(name: &str) -> PodInfo {
    PodInfo {
        owner: Some(Owner {
            kind: "ReplicaSet".into(),
            name: "vllm-abc".into(),
            deployment: Some("vllm".into()),
        }),
        ..PodInfo::for_test("prod", name)
    }
}

fn route(kind: RouteKind, name: &str, cut: Option<&str>) -> Route {
    Route {
        kind,
        name: name.into(),
        group: if kind == RouteKind::InferencePool {
            "inference.networking.k8s.io".into()
        } else {
            String::new()
        },
        selector: cut.map(|c| BTreeMap::from([(c.to_owned(), "x".to_owned())])),
        active: true,
        cut: cut.map(str::to_owned),
    }
}

fn removal(label: &str, stops: &[&str], orphans: bool) -> LabelRemoval {
    LabelRemoval {
        label: label.into(),
        value: "x".into(),
        stops: stops.iter().map(|s| (*s).to_owned()).collect(),
        orphans,
    }
}

fn drain(routing: PodRouting) -> Plan {
    let mut pod = owned_pod("a");
    pod.set_routing(routing);
    let others = vec![pod.clone(), owned_pod("b"), owned_pod("c")];
    plan_pod(
        ActionKind::DrainPod,
        &pod,
        &others,
        Some(30.0),
        &Policy::default(),
    )
}

fn verbs(plan: &Plan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.verb.as_str()).collect()
}

fn routing_reason(plan: &Plan) -> &str {
    plan.guards
        .iter()
        .find(|g| g.name == "routing")
        .map_or("", |g| g.reason.as_str())
}

#[test]
fn a_service_route_removes_its_label_waits_for_the_slices_then_idles_and_evicts() {
    let plan = drain(PodRouting {
        routes: vec![route(
            RouteKind::Service,
            "vllm-llama-8b",
            Some("app.kubernetes.io/component"),
        )],
        removals: vec![removal(
            "app.kubernetes.io/component",
            &["Service vllm-llama-8b"],
            false,
        )],
    });
    assert_eq!(verbs(&plan), ["PATCH", "WAIT", "WAIT", "POST"]);
    assert_eq!(
        plan.steps[0].body,
        r#"{"metadata":{"labels":{"app.kubernetes.io/component":null}}}"#
    );
    assert!(matches!(
        &plan.steps[1].op,
        StepOp::WaitUnrouted { via: RouteKind::Service, names, .. } if names == &["vllm-llama-8b".to_owned()]
    ));
    assert_eq!(
        plan.steps[1].access.as_ref().map(access_text).as_deref(),
        Some("list endpointslices.discovery.k8s.io in llm")
    );
    assert!(matches!(plan.steps[2].op, StepOp::WaitIdle { .. }));
    assert!(matches!(plan.steps[3].op, StepOp::Evict { .. }));
    assert!(
        routing_reason(&plan)
            .starts_with("removing app.kubernetes.io/component stops Service vllm-llama-8b"),
        "{}",
        routing_reason(&plan)
    );
    assert!(plan.blocking_guards(false).is_empty());
}

#[test]
fn a_pool_route_waits_on_the_pool_of_its_group() {
    let plan = drain(PodRouting {
        routes: vec![route(RouteKind::InferencePool, "llama", Some("model"))],
        removals: vec![removal("model", &["InferencePool llama"], false)],
    });
    assert_eq!(verbs(&plan), ["PATCH", "WAIT", "WAIT", "POST"]);
    assert_eq!(
        plan.steps[1].path,
        "/apis/inference.networking.k8s.io/v1/namespaces/llm/inferencepools"
    );
    assert_eq!(
        plan.steps[1].access.as_ref().map(access_text).as_deref(),
        Some("list inferencepools.inference.networking.k8s.io in llm")
    );
}

#[test]
fn an_orphaning_removal_says_so_and_deletes_the_orphan_instead_of_evicting() {
    let plan = drain(PodRouting {
        routes: vec![route(RouteKind::Service, "svc", Some("model"))],
        removals: vec![removal("model", &["Service svc"], true)],
    });
    assert_eq!(verbs(&plan), ["PATCH", "WAIT", "WAIT", "DELETE"]);
    let reason = routing_reason(&plan);
    assert!(reason.contains("orphans the pod"), "{reason}");
    assert!(reason.contains("starts a replacement at once"), "{reason}");
    assert!(reason.contains("deletes the orphan"), "{reason}");
}

#[test]
fn routes_no_label_stops_offer_a_graceful_eviction_only() {
    let plan = drain(PodRouting {
        routes: vec![route(RouteKind::Service, "manual", None)],
        removals: vec![],
    });
    assert_eq!(verbs(&plan), ["POST"]);
    let reason = routing_reason(&plan);
    assert!(
        reason.contains("nothing routes to the pod by labels"),
        "{reason}"
    );
    assert!(
        reason.contains("Service manual has no selector"),
        "{reason}"
    );
}

#[test]
fn no_route_at_all_waits_for_the_engine_then_evicts() {
    let plan = drain(PodRouting::default());
    assert_eq!(verbs(&plan), ["WAIT", "POST"]);
    assert!(routing_reason(&plan).contains("already out of routing"));
}

#[test]
fn unread_routes_are_an_overridable_refusal() {
    let pods = vec![owned_pod("a"), owned_pod("b"), owned_pod("c")];
    let plan = plan_pod(
        ActionKind::DrainPod,
        &pods[0],
        &pods,
        None,
        &Policy::default(),
    );
    let blocking: Vec<&str> = plan
        .blocking_guards(false)
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(blocking, ["routing"]);
    assert!(plan.blocking_guards(true).is_empty());
}
