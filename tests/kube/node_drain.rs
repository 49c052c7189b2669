//! `kvtop drain-node` end to end against the simulated API: the node is cordoned, each engine
//! on it goes through the pod drain (out of routing, its requests finish, evicted), a pod its
//! PodDisruptionBudget protects is skipped while the others carry on, and the result lists
//! every pod's outcome, on stderr and in the audit log.

use crate::actions_cli::{Setup, setup_with};
use kvtop_sim::kube::RecordedRequest;

/// Six engines on three nodes of two GPUs: llama (engines 0, 2, 4) and qwen (1, 3, 5, the
/// last crash-looping). `gpu-node-01` holds engines 2 and 3, `gpu-node-02` engines 4 and 5.
async fn three_nodes() -> Setup {
    setup_with(kvtop_sim::SimConfig {
        engines: 6,
        seed: 11,
        gpus_per_node: 2,
        ..kvtop_sim::SimConfig::default()
    })
    .await
}

/// `kvtop drain-node gpu-node-02 --parallel N`, confirmed: (exit code, stdout, stderr).
async fn drain_node_02(s: &Setup, parallel: &str) -> (i32, String, String) {
    s.kvtop(&[
        "drain-node",
        "gpu-node-02",
        "--confirm",
        "gpu-node-02",
        "--parallel",
        parallel,
    ])
    .await
}

fn touches(request: &RecordedRequest, pod: &str) -> bool {
    request.path.contains(&format!("/pods/{pod}"))
}

fn position(mutations: &[RecordedRequest], pod: &str, eviction: bool) -> Option<usize> {
    mutations
        .iter()
        .position(|r| touches(r, pod) && r.path.ends_with("/eviction") == eviction)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_drain_through_routing_and_a_pod_its_budget_protects_is_skipped() {
    let s = three_nodes().await;
    let llama = s.first_pod(2);
    let qwen = s.first_pod(3);
    let (code, out, err) = s
        .kvtop(&[
            "drain-node",
            "gpu-node-01",
            "--confirm",
            "gpu-node-01",
            "--drain-timeout",
            "20s",
        ])
        .await;
    // qwen has two ready replicas and its budget wants two: that pod stays, the rest go.
    assert_eq!(code, 1, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("pods (2 at a time):"), "{out}");
    assert!(
        out.contains(&format!("llm/{llama}: drain: out of routing")),
        "{out}"
    );
    assert!(out.contains(&format!("llm/{qwen}: SKIPPED")), "{out}");
    assert!(err.contains("1 pod(s) left on the node"), "{err}");
    assert!(
        err.contains(&format!("llm/{qwen}: skipped: PodDisruptionBudget")),
        "{err}"
    );
    let mutations = s.mutations();
    let shape: Vec<(&str, bool)> = mutations
        .iter()
        .map(|r| (r.method.as_str(), r.path.ends_with("/eviction")))
        .collect();
    assert_eq!(
        shape,
        [("PATCH", false), ("PATCH", false), ("POST", true)],
        "{mutations:?}"
    );
    assert!(mutations[0].path.ends_with("/nodes/gpu-node-01"));
    assert!(touches(&mutations[1], &llama) && touches(&mutations[2], &llama));
    assert!(
        mutations[1]
            .body
            .contains("\"app.kubernetes.io/component\":null"),
        "the routing label the Service selects on: {}",
        mutations[1].body
    );
    assert!(!mutations.iter().any(|r| touches(r, &qwen)));
    assert!(
        out.contains(&format!("llm/{llama}: no request in flight"))
            || err.contains(&format!("llm/{llama}: no request in flight")),
        "the drain waited for the engine to go idle:\n{out}\n{err}"
    );
    let audit = s.audit_lines();
    let last = audit.last().cloned().unwrap_or_default();
    assert_eq!(last["result"], "error", "{last}");
    let detail: Vec<&str> = last["detail"]
        .as_array()
        .map(|d| d.iter().filter_map(|l| l.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(detail.first().copied(), Some("cordoned gpu-node-01"));
    assert!(
        detail.contains(&format!("llm/{llama}: drained").as_str()),
        "{detail:?}"
    );
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.contains(&format!("llm/{qwen}: skipped"))),
        "{last}"
    );
    assert_eq!(last["pods"].as_array().map(Vec::len), Some(2), "{last}");
    assert_eq!(last["pods"][1]["how"], "skip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_drain_side_by_side_and_a_crash_looping_engine_needs_no_wait() {
    let s = three_nodes().await;
    let llama = s.first_pod(4);
    let down = s.first_pod(5);
    let (code, out, err) = drain_node_02(&s, "2").await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(&format!("llm/{llama}: drained")), "{out}");
    assert!(out.contains(&format!("llm/{down}: drained")), "{out}");
    assert!(
        out.contains(&format!(
            "llm/{down}: no container is running, so nothing is in flight"
        )),
        "{out}"
    );
    let mutations = s.mutations();
    let down_evicted = position(&mutations, &down, true);
    let llama_evicted = position(&mutations, &llama, true);
    let llama_unrouted = position(&mutations, &llama, false);
    assert!(
        down_evicted.is_some() && llama_evicted.is_some(),
        "{mutations:?}"
    );
    // Side by side: the down engine, with nothing to wait for, is gone before the serving one
    // has finished its requests, though it comes second in the plan.
    assert!(down_evicted < llama_evicted, "{mutations:?}");
    assert!(llama_unrouted < down_evicted, "{mutations:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_at_a_time_keeps_the_plan_order() {
    let s = three_nodes().await;
    let llama = s.first_pod(4);
    let down = s.first_pod(5);
    let (code, out, err) = drain_node_02(&s, "1").await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let mutations = s.mutations();
    assert!(
        position(&mutations, &llama, true) < position(&mutations, &down, false),
        "{mutations:?}"
    );
}
