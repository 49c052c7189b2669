use super::*;
use crate::kube_model::{ConvertOptions, EndpointDefaults, pod_info};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

/// A pod of `owner` (`rs:NAME` a ReplicaSet of Deployment `vllm`, `ds:NAME` a DaemonSet, `""`
/// none), ready or not, routed or not.
pub(crate) fn pod(name: &str, owner: &str, ready: bool, routed: bool) -> PodInfo {
    let mut labels = serde_json::Map::new();
    labels.insert("pod-template-hash".into(), json!("abc"));
    if routed {
        labels.insert("kvtop.dev/serving".into(), json!("true"));
    }
    let owners = match owner.split_once(':') {
        Some(("rs", _)) => {
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "vllm-abc", "uid": "u", "controller": true}])
        }
        Some(("ds", n)) => {
            json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": n, "uid": "u", "controller": true}])
        }
        _ => json!([]),
    };
    let value = json!({
        "metadata": {"name": name, "namespace": "llm", "labels": labels, "ownerReferences": owners},
        "spec": {"containers": [{"name": "vllm"}], "nodeName": "node-a"},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }}
        ]}
    });
    let pod: Pod = serde_json::from_value(value).unwrap_or_default();
    let defaults = EndpointDefaults::default();
    let opts = ConvertOptions {
        context: "prod",
        endpoint: &defaults,
        routing_label: Some("kvtop.dev/serving"),
        event_lines: 1,
        log_lines: 1,
    };
    match pod_info(&pod, &opts) {
        Some(info) => info,
        None => panic!("pod {name} did not convert"),
    }
}

/// The policy with kvtop's old routing label configured: these tests cover the configured
/// label's path (the derived routes have `plan_routing_tests.rs`).
pub(crate) fn labelled() -> Policy {
    Policy {
        routing_label: Some("kvtop.dev/serving".into()),
        ..Policy::default()
    }
}

pub(crate) fn three_ready() -> Vec<PodInfo> {
    vec![
        pod("a", "rs:vllm", true, true),
        pod("b", "rs:vllm", true, true),
        pod("c", "rs:vllm", true, true),
    ]
}

pub(crate) fn failed(plan: &Plan) -> Vec<&str> {
    plan.blocking_guards(false)
        .iter()
        .map(|g| g.name.as_str())
        .collect()
}

#[test]
fn drain_removes_the_label_waits_bounded_by_the_grace_period_then_evicts() {
    let pods = three_ready();
    let plan = plan_pod(
        ActionKind::DrainPod,
        &pods[0],
        &pods,
        Some(30.0),
        &labelled(),
    );
    let verbs: Vec<&str> = plan.steps.iter().map(|s| s.verb.as_str()).collect();
    assert_eq!(verbs, ["PATCH", "WAIT", "POST"]);
    assert_eq!(
        plan.steps[0].body,
        r#"{"metadata":{"labels":{"kvtop.dev/serving":null}}}"#
    );
    assert_eq!(
        plan.steps[1].op,
        StepOp::WaitIdle {
            namespace: "llm".into(),
            pod: "a".into(),
            timeout_s: 30.0
        }
    );
    assert_eq!(plan.steps[2].path, "/api/v1/namespaces/llm/pods/a/eviction");
    assert!(failed(&plan).is_empty());
    assert!(!plan.requires_typed_name);
    // Without a grace period, the configured timeout bounds the wait.
    let long = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &labelled());
    assert!(matches!(long.steps[1].op, StepOp::WaitIdle { timeout_s, .. } if timeout_s == 120.0));
}

#[test]
fn draining_an_unrouted_pod_skips_the_label_patch() {
    let pods = vec![
        pod("a", "rs:vllm", true, false),
        pod("b", "rs:vllm", true, true),
    ];
    let plan = plan_pod(
        ActionKind::DrainPod,
        &pods[0],
        &pods,
        Some(30.0),
        &labelled(),
    );
    let verbs: Vec<&str> = plan.steps.iter().map(|s| s.verb.as_str()).collect();
    assert_eq!(verbs, ["WAIT", "POST"]);
}

#[test]
fn restart_is_one_delete() {
    let pods = three_ready();
    let plan = plan_pod(ActionKind::RestartPod, &pods[1], &pods, None, &labelled());
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].verb, "DELETE");
    assert_eq!(plan.steps[0].path, "/api/v1/namespaces/llm/pods/b");
    assert_eq!(
        plan.steps[0].access.as_ref().map(|a| a.verb.as_str()),
        Some("delete")
    );
}

#[test]
fn the_last_ready_replica_is_refused_unless_overridden() {
    let pods = vec![
        pod("a", "rs:vllm", true, true),
        pod("b", "rs:vllm", false, true),
    ];
    let plan = plan_pod(ActionKind::RestartPod, &pods[0], &pods, None, &labelled());
    assert_eq!(failed(&plan), ["min-ready"]);
    assert!(
        plan.guards
            .iter()
            .any(|g| g.reason.contains("last ready replica"))
    );
    assert!(plan.requires_typed_name);
    assert!(plan.blocking_guards(true).is_empty());
}

#[test]
fn fewer_than_min_ready_is_refused_and_a_not_ready_pod_is_not_counted() {
    let pods = three_ready();
    let policy = Policy {
        min_ready: 3,
        ..labelled()
    };
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &policy);
    assert_eq!(failed(&plan), ["min-ready"]);
    assert!(
        plan.guards
            .iter()
            .any(|g| g.reason.contains("leaves 2 ready, fewer than min_ready 3"))
    );
    // Restarting a pod that is not ready takes no ready replica.
    let mut mixed = three_ready();
    mixed.push(pod("d", "rs:vllm", false, true));
    let ok = plan_pod(ActionKind::RestartPod, &mixed[3], &mixed, None, &policy);
    assert!(failed(&ok).is_empty());
}

#[test]
fn a_pod_without_a_controller_needs_an_override() {
    let pods = vec![pod("bare", "", true, true)];
    let plan = plan_pod(ActionKind::RestartPod, &pods[0], &pods, None, &labelled());
    assert_eq!(failed(&plan), ["controller"]);
    assert!(plan.blocking_guards(true).is_empty());
}

#[test]
fn read_only_refuses_everything_even_with_an_override() {
    let pods = three_ready();
    let policy = Policy {
        read_only: true,
        ..labelled()
    };
    for plan in [
        plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &policy),
        plan_rollout_restart("prod", "llm", "vllm", "2025-01-01T00:00:00Z", &policy),
        plan_cordon("prod", "node-a", true, &policy),
        crate::actions::node_drain::tests::plan_of(&pods, &pods, &policy),
    ] {
        assert!(failed(&plan).contains(&"read-only"), "{}", plan.render());
        assert!(!plan.blocking_guards(true).is_empty());
    }
}

#[test]
fn protected_contexts_require_the_typed_name() {
    let policy = Policy {
        protected: true,
        ..labelled()
    };
    let plan = plan_cordon("prod", "node-a", true, &policy);
    assert!(plan.requires_typed_name);
    assert!(failed(&plan).is_empty());
}

#[test]
fn dry_run_marks_every_mutating_step_but_not_the_wait() {
    let pods = three_ready();
    let policy = Policy {
        dry_run: true,
        ..labelled()
    };
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, Some(30.0), &policy);
    let flags: Vec<bool> = plan.steps.iter().map(|s| s.dry_run).collect();
    assert_eq!(flags, [true, false, true]);
    assert!(plan.steps[0].describe().ends_with("(dry run)"));
}

#[test]
fn rollout_restart_patches_the_template_annotation() {
    let plan = plan_rollout_restart(
        "prod",
        "llm",
        "vllm-llama-8b",
        "2025-06-01T12:00:00Z",
        &labelled(),
    );
    assert_eq!(plan.steps.len(), 1);
    let step = &plan.steps[0];
    assert_eq!(
        step.path,
        "/apis/apps/v1/namespaces/llm/deployments/vllm-llama-8b"
    );
    assert_eq!(
        step.body,
        r#"{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-06-01T12:00:00Z"}}}}}"#
    );
    assert_eq!(step.access.as_ref().map(|a| a.group.as_str()), Some("apps"));
}

#[test]
fn cordon_and_uncordon_patch_unschedulable() {
    let on = plan_cordon("prod", "node-a", true, &labelled());
    let off = plan_cordon("prod", "node-a", false, &labelled());
    assert_eq!(on.kind, ActionKind::Cordon);
    assert_eq!(off.kind, ActionKind::Uncordon);
    assert_eq!(on.steps[0].body, r#"{"spec":{"unschedulable":true}}"#);
    assert_eq!(off.steps[0].body, r#"{"spec":{"unschedulable":false}}"#);
    assert_eq!(on.steps[0].path, "/api/v1/nodes/node-a");
    assert_eq!(on.namespace, None);
}

#[test]
fn rbac_denials_block_and_allowed_checks_pass() {
    let pods = three_ready();
    let mut plan = plan_pod(
        ActionKind::DrainPod,
        &pods[0],
        &pods,
        Some(30.0),
        &labelled(),
    );
    let accesses = plan.accesses();
    assert_eq!(accesses.len(), 2);
    let results = vec![
        AccessResult {
            access: accesses[0].clone(),
            allowed: true,
            reason: String::new(),
        },
        AccessResult {
            access: accesses[1].clone(),
            allowed: false,
            reason: String::new(),
        },
    ];
    plan.add_access_results(&results);
    assert_eq!(failed(&plan), ["rbac"]);
    assert!(
        plan.guards
            .iter()
            .any(|g| g.reason == "may not create pods/eviction llm/a: denied by RBAC")
    );
    assert!(!plan.blocking_guards(true).is_empty());
}

#[test]
fn a_replica_out_of_routing_does_not_count_toward_min_ready() {
    // b was drained (still ready, out of routing): c is the last routed replica.
    let pods = vec![
        pod("a", "rs:vllm", true, true),
        pod("b", "rs:vllm", true, false),
        pod("c", "rs:vllm", true, true),
    ];
    let first = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &labelled());
    assert!(failed(&first).is_empty(), "{}", first.render());
    let after_a = vec![
        pod("a", "rs:vllm", true, false),
        pod("b", "rs:vllm", true, false),
        pod("c", "rs:vllm", true, true),
    ];
    let last = plan_pod(
        ActionKind::DrainPod,
        &after_a[2],
        &after_a,
        None,
        &labelled(),
    );
    assert_eq!(failed(&last), ["min-ready"]);
    assert!(
        last.guards
            .iter()
            .any(|g| g.reason.contains("last ready replica"))
    );
}

#[test]
fn typing_the_name_is_required_on_a_protected_context_but_overrides_nothing() {
    let pods = vec![pod("a", "rs:vllm", true, true)];
    let policy = Policy {
        protected: true,
        ..labelled()
    };
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &policy);
    assert!(plan.requires_typed_name && plan.protected);
    // The min-ready failure stands until it is overridden, whatever was typed.
    assert_eq!(failed(&plan), ["min-ready"]);
    assert!(plan.blocking_guards(true).is_empty());
}

#[test]
fn only_the_removals_reached_are_rolled_back_and_a_dry_run_has_none() {
    let pods = three_ready();
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &labelled());
    assert!(plan.routing_to_restore(0).is_empty());
    let expected = vec![RemovedRouting {
        namespace: "llm".to_owned(),
        pod: "a".to_owned(),
        labels: vec![("kvtop.dev/serving".to_owned(), "true".to_owned())],
    }];
    assert_eq!(plan.routing_to_restore(1), expected);
    assert_eq!(plan.routing_to_restore(plan.steps.len()), expected);
    let dry = Policy {
        dry_run: true,
        ..labelled()
    };
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, None, &dry);
    assert!(plan.routing_to_restore(plan.steps.len()).is_empty());
}

#[test]
fn the_wait_step_says_what_happens_when_it_runs_out() {
    let pods = three_ready();
    let stop = plan_pod(
        ActionKind::DrainPod,
        &pods[0],
        &pods,
        Some(30.0),
        &labelled(),
    );
    assert!(
        stop.steps[1]
            .body
            .ends_with("still busy then: restore routing and stop")
    );
    assert_eq!(stop.on_timeout, OnTimeout::Stop);
    let evict = Policy {
        on_timeout: OnTimeout::Evict,
        ..labelled()
    };
    let plan = plan_pod(ActionKind::DrainPod, &pods[0], &pods, Some(30.0), &evict);
    assert!(
        plan.steps[1]
            .body
            .ends_with("still busy then: evict anyway")
    );
}

#[test]
fn undrain_re_adds_the_recorded_labels_or_refuses_without_a_record() {
    let drained = pod("a", "rs:vllm", true, false);
    let labels = vec![("kvtop.dev/serving".to_owned(), "true".to_owned())];
    let plan = plan_undrain(&drained, &labels, &labelled());
    assert_eq!(plan.kind, ActionKind::Undrain);
    assert!(failed(&plan).is_empty(), "{}", plan.render());
    assert_eq!(
        plan.steps[0].body,
        r#"{"metadata":{"labels":{"kvtop.dev/serving":"true"},"annotations":{"kvtop.dev/drained-labels":null}}}"#
    );
    assert!(
        plan.guards[0]
            .reason
            .contains("re-adds kvtop.dev/serving=true")
    );
    let untouched = plan_undrain(&drained, &[], &Policy::default());
    assert_eq!(failed(&untouched), ["drained"]);
    assert!(untouched.blocking_guards(true).len() == 1);
}

mod budgets {
    use super::*;
    use crate::actions::guards::disruption_budget_guard;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;

    fn budget(name: &str, allowed: i32, selector: serde_json::Value) -> PodDisruptionBudget {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "llm"},
            "spec": {"minAvailable": 2, "selector": selector},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 2,
                       "expectedPods": 2}
        }))
        .unwrap_or_default()
    }

    fn matching(allowed: i32) -> PodDisruptionBudget {
        budget(
            "vllm",
            allowed,
            json!({"matchLabels": {"pod-template-hash": "abc"}}),
        )
    }

    #[test]
    fn no_disruption_allowed_refuses_a_drain_for_good_and_a_restart_overridably() {
        let a = pod("a", "rs:vllm", true, true);
        let drain = disruption_budget_guard(ActionKind::DrainPod, &a, &[matching(0)]);
        assert!(!drain.passed && !drain.overridable);
        assert_eq!(
            drain.reason,
            "PodDisruptionBudget llm/vllm allows 0 disruptions (2 healthy, 2 desired): the eviction would be refused"
        );
        let restart = disruption_budget_guard(ActionKind::RestartPod, &a, &[matching(0)]);
        assert!(!restart.passed && restart.overridable);
        assert!(disruption_budget_guard(ActionKind::DrainPod, &a, &[matching(1)]).passed);
    }

    #[test]
    fn other_budgets_and_unready_pods_do_not_refuse_but_two_budgets_do() {
        let a = pod("a", "rs:vllm", true, true);
        let other = budget("other", 0, json!({"matchLabels": {"app": "db"}}));
        assert!(disruption_budget_guard(ActionKind::DrainPod, &a, &[other]).passed);
        let unready = pod("a", "rs:vllm", false, true);
        assert!(disruption_budget_guard(ActionKind::DrainPod, &unready, &[matching(0)]).passed);
        let twice = [matching(1), budget("all", 1, json!({}))];
        let guard = disruption_budget_guard(ActionKind::DrainPod, &a, &twice);
        assert!(
            !guard.passed && guard.reason.contains("vllm, all"),
            "{guard:?}"
        );
    }
}
