use super::*;
use crate::actions::plan::StepOp;
use crate::actions::plan::tests::{failed, labelled, pod, three_ready};
use serde_json::json;

fn engines(pods: &[PodInfo]) -> Vec<EnginePod> {
    pods.iter()
        .map(|p| EnginePod {
            pod: p.clone(),
            grace_s: Some(30.0),
        })
        .collect()
}

/// `on_node` all engines, no budgets: the plan the older tests of plan.rs ask for.
pub(crate) fn plan_of(on_node: &[PodInfo], all: &[PodInfo], policy: &Policy) -> Plan {
    let engines = engines(on_node);
    let pods = NodePods {
        engines: &engines,
        others: &[],
        all,
        budgets: &[],
        unreadable_budgets: &[],
    };
    plan_drain_node("prod", "node-a", pods, policy)
}

/// A budget over the pods labelled `app=NAME`, allowing `allowed` disruptions.
fn budget(name: &str, allowed: i32) -> PodDisruptionBudget {
    let value = json!({
        "metadata": {"name": name, "namespace": "llm"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1,
                   "expectedPods": 1, "observedGeneration": 1}
    });
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn labelled_app(mut p: PodInfo, app: &str) -> PodInfo {
    p.labels.push(("app".into(), app.into()));
    p.labels.sort();
    p
}

#[test]
fn engines_go_through_the_pod_drain_and_other_pods_are_evicted() {
    let on_node = three_ready();
    let engines = engines(&on_node[..2]);
    let web = labelled_app(pod("web", "rs:web", true, false), "web");
    let exporter = pod("exporter", "ds:dcgm", true, false);
    let mut all = three_ready();
    all.push(pod("elsewhere", "rs:vllm", true, true));
    let others = [web, exporter];
    let pods = NodePods {
        engines: &engines,
        others: &others,
        all: &all,
        budgets: &[budget("web", 1)],
        unreadable_budgets: &[],
    };
    let plan = plan_drain_node("prod", "node-a", pods, &labelled());
    let shape: Vec<(Option<usize>, &str)> = plan
        .steps
        .iter()
        .map(|s| (s.unit, s.verb.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (None, "PATCH"),
            (Some(0), "PATCH"),
            (Some(0), "WAIT"),
            (Some(0), "POST"),
            (Some(1), "PATCH"),
            (Some(1), "WAIT"),
            (Some(1), "POST"),
            (Some(2), "POST"),
        ]
    );
    assert_eq!(plan.steps[0].path, "/api/v1/nodes/node-a");
    assert!(matches!(
        &plan.steps[2].op,
        StepOp::WaitIdle { pod, timeout_s, .. } if pod == "a" && *timeout_s == 30.0
    ));
    assert_eq!(
        plan.steps[7].path,
        "/api/v1/namespaces/llm/pods/web/eviction"
    );
    let hows: Vec<(&str, &UnitHow)> = plan
        .units
        .iter()
        .map(|u| (u.pod.as_str(), &u.how))
        .collect();
    assert_eq!(
        hows,
        [
            ("a", &UnitHow::Drain),
            ("b", &UnitHow::Drain),
            ("web", &UnitHow::Evict)
        ]
    );
    assert!(failed(&plan).is_empty(), "{}", plan.render());
    let text = plan.render();
    assert!(text.contains("pods (2 at a time):"), "{text}");
    assert!(text.contains("stay: exporter (DaemonSet)"), "{text}");
    assert!(
        plan.reads
            .iter()
            .any(|r| r.resource == "poddisruptionbudgets")
    );
}

#[test]
fn a_pod_its_budget_blocks_is_skipped_and_the_rest_still_drain() {
    let on_node = vec![labelled_app(pod("a", "rs:vllm", true, true), "llama")];
    let engines = engines(&on_node);
    let others = [labelled_app(pod("cache", "rs:cache", true, false), "cache")];
    let mut all = three_ready();
    all.extend(on_node.iter().cloned());
    let pods = NodePods {
        engines: &engines,
        others: &others,
        all: &all,
        budgets: &[budget("cache", 0)],
        unreadable_budgets: &[],
    };
    let plan = plan_drain_node("prod", "node-a", pods, &labelled());
    assert_eq!(plan.units.len(), 2);
    let UnitHow::Skip { reason } = &plan.units[1].how else {
        panic!("the cache pod should be skipped: {:?}", plan.units[1]);
    };
    assert!(reason.contains("allows 0 disruptions"), "{reason}");
    assert!(plan.steps.iter().all(|s| s.unit != Some(1)));
    assert!(plan.steps.iter().any(|s| s.unit == Some(0)));
    assert!(failed(&plan).is_empty(), "{}", plan.render());
    assert!(plan.render().contains("SKIPPED"), "{}", plan.render());
}

#[test]
fn budgets_that_cannot_be_read_need_an_override() {
    let on_node = three_ready();
    let engines = engines(&on_node[..1]);
    let pods = NodePods {
        engines: &engines,
        others: &[],
        all: &on_node,
        budgets: &[],
        unreadable_budgets: &[("llm".into(), "HTTP 403".into())],
    };
    let plan = plan_drain_node("prod", "node-a", pods, &labelled());
    assert_eq!(failed(&plan), ["disruption-budget"]);
    assert!(plan.blocking_guards(true).is_empty());
}

#[test]
fn every_ready_replica_on_the_node_is_refused_unless_overridden() {
    let on_node = three_ready();
    let plan = plan_of(&on_node, &on_node, &labelled());
    assert_eq!(failed(&plan), ["min-ready"]);
    let mut all = on_node.clone();
    all.push(pod("elsewhere", "rs:vllm", true, true));
    assert!(failed(&plan_of(&on_node, &all, &labelled())).is_empty());
}

#[test]
fn parallelism_is_at_least_one() {
    let on_node = three_ready();
    let policy = Policy {
        parallelism: 0,
        ..labelled()
    };
    assert_eq!(plan_of(&on_node, &on_node, &policy).parallelism, 1);
}

#[test]
fn a_budget_covering_more_pods_than_it_allows_is_said_up_front() {
    let on_node = vec![
        labelled_app(pod("a", "rs:vllm", true, true), "llama"),
        labelled_app(pod("b", "rs:vllm", true, true), "llama"),
    ];
    let engines = engines(&on_node);
    let mut all = on_node.clone();
    all.push(labelled_app(pod("c", "rs:vllm", true, true), "llama"));
    let pods = NodePods {
        engines: &engines,
        others: &[],
        all: &all,
        budgets: &[budget("llama", 1)],
        unreadable_budgets: &[],
    };
    let plan = plan_drain_node("prod", "node-a", pods, &labelled());
    assert!(failed(&plan).is_empty(), "{}", plan.render());
    let note = plan.guards.iter().find(|g| {
        g.reason
            .contains("allows 1 disruption(s) at a time and covers 2")
    });
    assert!(note.is_some_and(|g| g.passed), "{}", plan.render());
}
