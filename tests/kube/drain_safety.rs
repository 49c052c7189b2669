//! A drain that is safe on a real cluster (issue 12), end to end with the real binary against
//! the simulated API: guards checked before any mutation, the in-flight policy, routing put
//! back after a failure or a signal, `kvtop undrain`, and who the audit log names.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kvtop_sim::kube::{Fault, FaultRule, RecordedRequest};

use crate::actions_cli::{Setup, eventually, setup};

/// The routing label of the simulated pods.
/// The label the simulated Services select on and the ReplicaSets do not: what a drain
/// removes, and puts back.
const ROUTING: &str = "app.kubernetes.io/component";
const ROUTED: &str = "serving-engine";

/// A pod's labels and annotations as the API has them now.
async fn pod_meta(s: &Setup, name: &str) -> Option<Pod> {
    let config = s.kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let client = kube::Client::try_from(config).unwrap_or_else(|e| panic!("{e}"));
    let pods: Api<Pod> = Api::namespaced(client, "llm");
    pods.get_opt(name).await.unwrap_or_else(|e| panic!("{e}"))
}

async fn routed(s: &Setup, name: &str) -> bool {
    let pod = pod_meta(s, name).await;
    pod.and_then(|p| p.metadata.labels)
        .is_some_and(|l| l.get(ROUTING).map(String::as_str) == Some(ROUTED))
}

/// The engine's metrics cannot be read through the API server's proxy: the drain wait sees
/// requests of unknown number, never idle, until its time runs out.
fn hide_metrics(s: &Setup, pod: &str) {
    s.kube
        .inject(FaultRule::new(&format!("pods/{pod}:"), Fault::Status(503)));
}

fn patches(mutations: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    mutations.iter().filter(|r| r.method == "PATCH").collect()
}

fn evictions(mutations: &[RecordedRequest]) -> usize {
    mutations
        .iter()
        .filter(|r| r.path.ends_with("/eviction"))
        .count()
}

/// `kvtop ARGS` started in the background with the cluster's kubeconfig.
fn spawn(s: &Setup, args: &[&str]) -> std::process::Child {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"));
    crate::common::isolate_home(&mut command, &s.dir.path().join("home"));
    command
        .args(args)
        .arg("--kubeconfig")
        .arg(s.kubeconfig())
        .arg("--config")
        .arg(s.dir.path().join("config.toml"))
        .arg("--audit-log")
        .arg(s.audit())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn kvtop: {e}"))
}

fn signal(child: &std::process::Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

async fn finish(child: std::process::Child) -> (i32, String) {
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap_or_else(|e| panic!("join: {e}"))
        .unwrap_or_else(|e| panic!("wait: {e}"));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Wait until `pod`'s routing label has been removed by a drain.
async fn until_unrouted(s: &Setup, pod: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while routed(s, pod).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{pod} never left routing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_allowing_no_disruption_refuses_before_any_mutation() {
    let s = setup().await;
    // qwen: two ready replicas (engine 5 is down) against minAvailable 2.
    let pod = s.first_pod(1);
    let budget = "PodDisruptionBudget llm/vllm-qwen-7b allows 0 disruptions";
    let mut refused = String::new();
    eventually("the budget's status is computed", || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"));
        crate::common::isolate_home(&mut command, &s.dir.path().join("home"));
        let output = command
            .args(["drain", &pod, "-n", "llm", "--override", "--confirm", &pod])
            .arg("--kubeconfig")
            .arg(s.kubeconfig())
            .arg("--config")
            .arg(s.dir.path().join("config.toml"))
            .arg("--audit-log")
            .arg(s.audit())
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        refused = String::from_utf8_lossy(&output.stderr).into_owned();
        output.status.code() == Some(2) && refused.contains(budget)
    })
    .await;
    assert!(
        refused.contains("the eviction would be refused"),
        "{refused}"
    );
    assert!(s.mutations().is_empty(), "{:?}", s.mutations());
    assert!(routed(&s, &pod).await);
    // The budget's list was reviewed with the rest.
    let reviewed = s.kube.requests().iter().any(|r| {
        r.path.contains("selfsubjectaccessreviews") && r.body.contains("poddisruptionbudgets")
    });
    assert!(reviewed);
    let audit = s.audit_lines();
    assert_eq!(
        audit.last().map(|l| l["result"].clone()),
        Some("refused".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_puts_routing_back_and_evicts_nothing() {
    let s = setup().await;
    let pod = s.first_pod(2);
    hide_metrics(&s, &pod);
    let (code, out, err) = s
        .kvtop(&[
            "drain",
            &pod,
            "-n",
            "llm",
            "--drain-timeout",
            "1s",
            "--confirm",
            &pod,
        ])
        .await;
    assert_eq!(code, 5, "{out}\n{err}");
    assert!(err.contains("--on-timeout evict"), "{err}");
    assert!(err.contains("routing restored"), "{err}");
    let mutations = s.mutations();
    assert_eq!(evictions(&mutations), 0);
    let patched = patches(&mutations);
    assert_eq!(patched.len(), 2, "{mutations:?}");
    assert!(patched[0].body.contains(&format!("\"{ROUTING}\":null")));
    assert!(
        patched[1]
            .body
            .contains(&format!("\"{ROUTING}\":\"{ROUTED}\""))
    );
    let now = pod_meta(&s, &pod).await.unwrap_or_else(|| panic!("gone"));
    let annotations = now.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key("kvtop.dev/drained-labels"));
    assert!(routed(&s, &pod).await);
    let audit = s.audit_lines();
    assert_eq!(audit[0]["result"], "error");
    assert!(
        audit[0]["rollback"]["restored"][0]
            .as_str()
            .is_some_and(|l| l.contains(&format!("re-added {ROUTING}={ROUTED}")))
    );
    // With --on-timeout evict the same drain evicts.
    let (code, _, err) = s
        .kvtop(&[
            "drain",
            &pod,
            "-n",
            "llm",
            "--drain-timeout",
            "1s",
            "--on-timeout",
            "evict",
            "--confirm",
            &pod,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("evicting anyway"), "{err}");
    assert_eq!(evictions(&s.mutations()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_eviction_puts_routing_back() {
    let s = setup().await;
    let pod = s.first_pod(2);
    s.kube
        .inject(FaultRule::new("/eviction", Fault::Status(429)).method("POST"));
    let (code, out, err) = s
        .kvtop(&[
            "drain",
            &pod,
            "-n",
            "llm",
            "--evict-timeout",
            "1s",
            "--confirm",
            &pod,
        ])
        .await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("HTTP 429"), "{err}");
    assert!(err.contains("routing restored"), "{err}");
    assert!(routed(&s, &pod).await);
    assert!(s.kube.pods_of(2).contains(&pod));
    let audit = s.audit_lines();
    assert_eq!(audit[0]["result"], "error");
    assert_eq!(
        audit[0]["rollback"]["restored"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_the_wait_puts_routing_back_and_says_so() {
    let s = setup().await;
    let pod = s.first_pod(2);
    hide_metrics(&s, &pod);
    let child = spawn(&s, &["drain", &pod, "-n", "llm", "--confirm", &pod]);
    until_unrouted(&s, &pod).await;
    signal(&child, libc::SIGTERM);
    let (code, err) = finish(child).await;
    assert_eq!(code, 143, "{err}");
    assert!(err.contains("routing restored"), "{err}");
    assert!(routed(&s, &pod).await);
    assert_eq!(evictions(&s.mutations()), 0);
    let audit = s.audit_lines();
    assert_eq!(audit[0]["result"], "interrupted");
    assert_eq!(audit[0]["error"], "interrupted by SIGTERM");
    assert_eq!(
        audit[0]["rollback"]["restored"].as_array().map(Vec::len),
        Some(1)
    );
}

/// The SSH session drops mid-drain, after the first mutation (issue 17): the terminal is gone
/// (stdout and stderr lead nowhere) and SIGHUP arrives. kvtop puts routing back, writes the
/// outcome after its `started` record, and exits 129 instead of panicking on the dead stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_with_the_terminal_gone_mid_drain_audits_and_exits_129() {
    let s = setup().await;
    let pod = s.first_pod(2);
    hide_metrics(&s, &pod);
    let mut child = spawn(&s, &["drain", &pod, "-n", "llm", "--confirm", &pod]);
    until_unrouted(&s, &pod).await;
    let started = crate::common::kube_sim::audit_all_lines(&s.audit());
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(started[0]["result"], "started");
    drop(child.stdout.take());
    drop(child.stderr.take());
    signal(&child, libc::SIGHUP);
    let (code, _) = finish(child).await;
    assert_eq!(code, 129);
    let lines = crate::common::kube_sim::audit_all_lines(&s.audit());
    let results: Vec<&str> = lines.iter().filter_map(|l| l["result"].as_str()).collect();
    assert_eq!(results, ["started", "interrupted"], "{lines:?}");
    assert_eq!(lines[1]["error"], "interrupted by SIGHUP");
    assert_eq!(lines[0]["target"], lines[1]["target"]);
    assert!(routed(&s, &pod).await);
    assert_eq!(evictions(&s.mutations()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undrain_re_adds_what_a_killed_drain_removed() {
    let s = setup().await;
    let pod = s.first_pod(2);
    // Nothing to put back on a pod no drain touched.
    let (code, _, err) = s
        .kvtop(&["undrain", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no kvtop drain removed its routing"), "{err}");
    hide_metrics(&s, &pod);
    let child = spawn(&s, &["drain", &pod, "-n", "llm", "--confirm", &pod]);
    until_unrouted(&s, &pod).await;
    // SIGKILL leaves no chance to roll back: the pod stays out of routing.
    signal(&child, libc::SIGKILL);
    finish(child).await;
    assert!(!routed(&s, &pod).await);
    let (code, out, err) = s.kvtop(&["undrain", &pod, "-n", "llm", "--dry-run"]).await;
    assert_eq!(code, 0, "a dry run needs no --confirm: {out}\n{err}");
    assert!(!routed(&s, &pod).await);
    let (code, out, err) = s
        .kvtop(&["undrain", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("re-added {ROUTING}={ROUTED}")),
        "{out}"
    );
    assert!(routed(&s, &pod).await);
    let annotations = pod_meta(&s, &pod)
        .await
        .and_then(|p| p.metadata.annotations)
        .unwrap_or_default();
    assert!(!annotations.contains_key("kvtop.dev/drained-labels"));
    eventually("the engine gets traffic again", || {
        s.kube.arrival_rate(2).is_some_and(|r| r > 0.0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drains_in_a_row_never_leave_a_model_without_a_routed_replica() {
    let s = setup().await;
    let [a, b, c] = [0, 2, 4].map(|e| s.first_pod(e));
    hide_metrics(&s, &a);
    hide_metrics(&s, &b);
    let first = spawn(&s, &["drain", &a, "-n", "llm", "--confirm", &a]);
    until_unrouted(&s, &a).await;
    let second = spawn(&s, &["drain", &b, "-n", "llm", "--confirm", &b]);
    until_unrouted(&s, &b).await;
    // a and b are still ready but out of routing: c is llama's last routed replica.
    let (code, out, err) = s.kvtop(&["drain", &c, "-n", "llm", "--confirm", &c]).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("last ready replica"), "{err}");
    assert!(routed(&s, &c).await);
    for child in [first, second] {
        signal(&child, libc::SIGTERM);
        assert_eq!(finish(child).await.0, 143);
    }
    assert!(routed(&s, &a).await && routed(&s, &b).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_names_the_api_s_user_else_the_kubeconfig_s_and_marks_overrides() {
    let s = setup().await;
    let pod = s.first_pod(4);
    // Below --min-ready the restart runs only overridden, and says so.
    let (code, _, err) = s
        .kvtop(&[
            "restart",
            &pod,
            "-n",
            "llm",
            "--min-ready",
            "3",
            "--override",
            "--confirm",
            &pod,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    s.kube
        .inject(FaultRule::new("selfsubjectreviews", Fault::Status(403)));
    let (code, _, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 0, "{err}");
    let audit = s.audit_lines();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0]["user"], "kvtop-sim");
    assert_eq!(audit[0]["user_source"], "self-subject-review");
    assert_eq!(audit[0]["override"], true);
    assert_eq!(audit[1]["user"], "sim");
    assert_eq!(audit[1]["user_source"], "kubeconfig");
    assert_eq!(audit[1]["override"], false);
    assert!(audit.iter().all(|l| l["os_user"].is_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_runs_without_confirm_and_sends_only_dry_runs() {
    let s = setup().await;
    let pod = s.first_pod(2);
    let (code, out, err) = s.kvtop(&["drain", &pod, "-n", "llm", "--dry-run"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("dry run: the drain wait is skipped"), "{out}");
    let mutations = s.mutations();
    assert_eq!(mutations.len(), 2, "{mutations:?}");
    assert!(
        mutations.iter().all(RecordedRequest::dry_run),
        "{mutations:?}"
    );
    assert!(routed(&s, &pod).await);
    assert!(s.kube.pods_of(2).contains(&pod));
}
