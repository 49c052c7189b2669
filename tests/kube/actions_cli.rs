//! `kvtop drain | restart | rollout-restart | cordon | uncordon | drain-node` end to end: the
//! real binary and its real `kube::Client` against the simulated Kubernetes API, asserting on
//! the requests the API recorded, the cluster's state afterwards, the exit code, and the audit
//! log.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use kvtop_sim::SimHandle;
use kvtop_sim::kube::{Denial, Fault, FaultRule, KubeSimHandle, RecordedRequest};

/// Generous bound for waits on the simulation; no test asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(30);

pub(crate) struct Setup {
    _sim: SimHandle,
    pub(crate) kube: KubeSimHandle,
    pub(crate) dir: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    pub(crate) fn audit(&self) -> PathBuf {
        self.dir.path().join("state").join("audit.jsonl")
    }

    /// Run `kvtop ARGS` with the simulated cluster's kubeconfig; (exit code, stdout, stderr).
    pub(crate) async fn kvtop(&self, args: &[&str]) -> (i32, String, String) {
        let command = self.command(args, &self.audit());
        Self::output(command).await
    }

    /// The `kvtop ARGS` command [`Setup::kvtop`] runs, auditing to `audit`.
    pub(crate) fn command(&self, args: &[&str], audit: &std::path::Path) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"));
        command
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--audit-log")
            .arg(audit)
            .env("USER", "oncall");
        common::isolate_home(&mut command, &self.dir.path().join("home"));
        command
    }

    /// Run `command`; (exit code, stdout, stderr).
    pub(crate) async fn output(mut command: std::process::Command) -> (i32, String, String) {
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap_or_else(|e| panic!("join: {e}"))
            .unwrap_or_else(|e| panic!("run kvtop: {e}"));
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    pub(crate) fn audit_lines(&self) -> Vec<serde_json::Value> {
        common::kube_sim::audit_lines(&self.audit())
    }

    pub(crate) fn mutations(&self) -> Vec<RecordedRequest> {
        common::kube_sim::mutations(&self.kube)
    }

    pub(crate) fn first_pod(&self, engine: usize) -> String {
        common::kube_sim::first_pod(&self.kube, engine)
    }
}

/// Six engines: llama on 0, 2, 4; qwen on 1, 3, 5 (5 down). One node, `gpu-node-00`.
pub(crate) async fn setup() -> Setup {
    setup_with(kvtop_sim::SimConfig {
        engines: 6,
        seed: 11,
        ..kvtop_sim::SimConfig::default()
    })
    .await
}

/// The simulated fleet `sim` and its fast cluster, with a kubeconfig and a config file.
pub(crate) async fn setup_with(sim: kvtop_sim::SimConfig) -> Setup {
    let (sim, kube) = common::kube_sim::fast_cluster_of(sim, 1e9).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("kubeconfig"), kube.kubeconfig_yaml("sim"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.path().join("config.toml"),
        "[kubernetes]\napi_timeout = \"2s\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Setup {
        _sim: sim,
        kube,
        dir,
    }
}

pub(crate) async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        if tokio::time::Instant::now() > deadline {
            panic!("gave up waiting: {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_unroutes_waits_for_zero_in_flight_then_evicts_and_audits() {
    let s = setup().await;
    let pod = s.first_pod(2);
    let (code, out, err) = s
        .kvtop(&["drain", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains(&format!("llm/{pod}: no request in flight")),
        "{out}"
    );
    let mutations = s.mutations();
    let kinds: Vec<(&str, bool)> = mutations
        .iter()
        .map(|r| (r.method.as_str(), r.path.ends_with("/eviction")))
        .collect();
    assert_eq!(kinds, [("PATCH", false), ("POST", true)]);
    assert!(
        mutations[0]
            .body
            .contains("\"app.kubernetes.io/component\":null")
    );
    assert!(mutations.iter().all(|r| !r.dry_run()));
    eventually("the evicted pod is replaced", || {
        !s.kube.pods_of(2).contains(&pod)
    })
    .await;
    let audit = s.audit_lines();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["action"], "drain");
    assert_eq!(audit[0]["target"], pod.as_str());
    assert_eq!(audit[0]["namespace"], "llm");
    assert_eq!(audit[0]["context"], "sim");
    // Who the API server says (a SelfSubjectReview), not `$USER` (issue 12), with the OS
    // account beside it.
    assert_eq!(audit[0]["user"], "kvtop-sim");
    assert_eq!(audit[0]["user_source"], "self-subject-review");
    assert_eq!(
        audit[0]["os_user"].as_str(),
        kvtop::actions::identity::os_user().as_deref()
    );
    assert_eq!(audit[0]["override"], false);
    assert_eq!(audit[0]["result"], "ok");
    assert_eq!(audit[0]["dry_run"], false);
    // Label patch, the wait for the EndpointSlices to let go, the idle wait, the eviction.
    assert_eq!(audit[0]["steps"].as_array().map(Vec::len), Some(4));
    assert!(
        out.contains(&format!("llm/{pod} has left Service vllm-llama-8b")),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_confirm_only_the_plan_is_printed_and_nothing_changes() {
    let s = setup().await;
    let pod = s.first_pod(0);
    let (code, out, err) = s.kvtop(&["restart", &pod, "-n", "llm"]).await;
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains(&format!("DELETE /api/v1/namespaces/llm/pods/{pod}")));
    assert!(err.contains(&format!("--confirm {pod}")));
    // A wrong name is no confirmation either.
    let (code, _, _) = s
        .kvtop(&["restart", &pod, "-n", "llm", "--confirm", "other"])
        .await;
    assert_eq!(code, 4);
    assert!(s.mutations().is_empty());
    assert!(s.audit_lines().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_refuses_and_sends_nothing_but_reads() {
    let s = setup().await;
    let pod = s.first_pod(2);
    for args in [
        vec!["drain", pod.as_str(), "-n", "llm"],
        vec!["cordon", "gpu-node-00"],
        vec!["rollout-restart", "vllm-llama-8b", "-n", "llm"],
    ] {
        let mut args = args.clone();
        args.extend(["--read-only", "--confirm", args[1]]);
        let (code, out, err) = s.kvtop(&args).await;
        assert_eq!(code, 2, "{out}\n{err}");
        assert!(err.contains("read-only"), "{err}");
    }
    let sent: Vec<RecordedRequest> = s
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert!(sent.is_empty(), "{sent:?}");
    let audit = s.audit_lines();
    assert_eq!(audit.len(), 3);
    assert!(audit.iter().all(|l| l["result"] == "refused"));
}

/// A name that is not a Kubernetes name would change the request (a query string, another
/// path): refused before any request, even a read, and before the audit log is opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_are_not_kubernetes_names_are_refused_before_anything_is_sent() {
    let s = setup().await;
    for args in [
        vec!["cordon", "gpu-node-00?dryRun=All"],
        vec!["uncordon", "gpu-node-00/status"],
        vec!["drain", "../pods/x", "-n", "llm"],
        vec!["rollout-restart", "vllm-llama-8b%2Fscale", "-n", "llm"],
    ] {
        let mut args = args.clone();
        args.extend(["--confirm", args[1]]);
        let (code, out, err) = s.kvtop(&args).await;
        assert_eq!(code, 2, "{args:?}\n{out}\n{err}");
        assert!(err.contains("name \""), "{err}");
        assert!(err.contains("may hold only lower-case letters"), "{err}");
    }
    let sent: Vec<RecordedRequest> = s
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert!(sent.is_empty(), "{sent:?}");
    assert!(s.audit_lines().is_empty());
    assert!(
        s.kube
            .requests()
            .iter()
            .all(|r| !r.path.contains("/nodes/gpu-node-00")),
        "the node was read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_sends_only_dry_run_mutations_and_changes_nothing() {
    let s = setup().await;
    let pod = s.first_pod(2);
    let (code, out, err) = s
        .kvtop(&["drain", &pod, "-n", "llm", "--dry-run", "--confirm", &pod])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, _) = s
        .kvtop(&["drain-node", "gpu-node-00", "--dry-run", "--override"])
        .await;
    assert_eq!(code, 2, "the override needs --confirm");
    let (code, out, err) = s
        .kvtop(&["restart", &pod, "-n", "llm", "--dry-run", "--confirm", &pod])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let mutations = s.mutations();
    assert_eq!(mutations.len(), 3, "{mutations:?}");
    assert!(
        mutations.iter().all(RecordedRequest::dry_run),
        "{mutations:?}"
    );
    assert!(s.kube.pods_of(2).contains(&pod));
    assert!(s.kube.arrival_rate(2).is_some_and(|r| r > 0.0));
    let audit = s.audit_lines();
    assert!(
        audit
            .iter()
            .any(|l| l["dry_run"] == true && l["result"] == "ok")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_deletes_and_the_controller_replaces_the_pod() {
    let s = setup().await;
    let pod = s.first_pod(4);
    let (code, out, err) = s
        .kvtop(&["restart", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let mutations = s.mutations();
    assert_eq!(mutations.len(), 1);
    assert_eq!(mutations[0].method, "DELETE");
    eventually("a replacement pod", || {
        let now = s.kube.pods_of(4);
        !now.contains(&pod) && !now.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_restart_cordon_and_uncordon_patch_their_objects() {
    let s = setup().await;
    let (code, out, err) = s
        .kvtop(&[
            "rollout-restart",
            "vllm-qwen-7b",
            "-n",
            "llm",
            "--confirm",
            "vllm-qwen-7b",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = s
        .kvtop(&["uncordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 0, "{err}");
    let mutations = s.mutations();
    let summary: Vec<(&str, &str)> = mutations
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "PATCH",
                "/apis/apps/v1/namespaces/llm/deployments/vllm-qwen-7b"
            ),
            ("PATCH", "/api/v1/nodes/gpu-node-00"),
            ("PATCH", "/api/v1/nodes/gpu-node-00"),
        ]
    );
    let body: serde_json::Value = serde_json::from_str(&mutations[0].body).unwrap_or_default();
    let at =
        body["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .as_str()
            .unwrap_or_default();
    assert!(at.parse::<k8s_openapi::jiff::Timestamp>().is_ok(), "{at}");
    assert!(mutations[1].body.contains("\"unschedulable\":true"));
    assert!(mutations[2].body.contains("\"unschedulable\":false"));
    assert_eq!(s.audit_lines().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guards_refuse_below_min_ready_and_on_rbac_denials() {
    let s = setup().await;
    let pod = s.first_pod(2);
    // Three llama replicas are ready: draining one leaves 2 < 3.
    let (code, _, err) = s
        .kvtop(&[
            "drain",
            &pod,
            "-n",
            "llm",
            "--min-ready",
            "3",
            "--confirm",
            &pod,
        ])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("fewer than min_ready 3"), "{err}");
    s.kube.deny(Denial::new("create", "pods/eviction"));
    let (code, _, err) = s
        .kvtop(&["drain", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("may not create pods/eviction"), "{err}");
    assert!(s.mutations().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_node_needs_an_override_then_retries_the_pdb_refusal_within_its_bound() {
    let s = setup().await;
    let (code, _, err) = s
        .kvtop(&["drain-node", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 2, "every replica is on the one node: {err}");
    assert!(err.contains("last ready replica"), "{err}");
    let (code, out, err) = s
        .kvtop(&[
            "drain-node",
            "gpu-node-00",
            "--override",
            "--confirm",
            "gpu-node-00",
            "--evict-timeout",
            "1s",
        ])
        .await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("a PodDisruptionBudget blocks it"), "{err}");
    let evictions = s
        .mutations()
        .iter()
        .filter(|r| r.path.ends_with("/eviction"))
        .count();
    assert!(
        evictions >= 3,
        "the refused eviction is retried: {evictions}"
    );
    let audit = s.audit_lines();
    let last = audit.last().cloned().unwrap_or_default();
    assert_eq!(last["result"], "error");
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.contains("HTTP 429"))
    );
    assert_eq!(last["detail"][0], "cordoned gpu-node-00");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_faults_give_clear_messages_and_audit_lines() {
    let s = setup().await;
    let cases: [(u16, &str); 5] = [
        (401, "credentials were rejected"),
        (403, "RBAC does not allow it"),
        (404, "HTTP 404"),
        (409, "HTTP 409"),
        (500, "API server error"),
    ];
    for (code_in, words) in cases {
        s.kube.inject(
            FaultRule::new("/api/v1/nodes/", Fault::Status(code_in))
                .method("PATCH")
                .times(1),
        );
        let (code, _, err) = s
            .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
            .await;
        assert_eq!(code, 1, "{code_in}: {err}");
        assert!(
            err.contains("cannot patch nodes gpu-node-00 (context sim)") && err.contains(words),
            "{code_in}: {err}"
        );
    }
    s.kube.inject(
        FaultRule::new("/api/v1/nodes/", Fault::Delay(Duration::from_secs(4)))
            .method("PATCH")
            .times(1),
    );
    let (code, _, err) = s
        .kvtop(&["uncordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no answer within 2.0s"), "{err}");
    let audit = s.audit_lines();
    assert_eq!(audit.len(), 6);
    assert!(audit.iter().all(|l| l["result"] == "error"));
    assert!(
        audit[4]["error"]
            .as_str()
            .is_some_and(|e| e.contains("HTTP 500"))
    );
    // A missing target is an API error before any plan.
    let (code, _, err) = s
        .kvtop(&[
            "restart",
            "no-such-pod",
            "-n",
            "llm",
            "--confirm",
            "no-such-pod",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot get pods llm/no-such-pod"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_sets_min_ready_and_a_read_only_context() {
    let s = setup().await;
    let pod = s.first_pod(2);
    let config = s.dir.path().join("config.toml");
    std::fs::write(&config, "[kubernetes]\nmin_ready = 3\n").unwrap_or_else(|e| panic!("{e}"));
    let (code, _, err) = s
        .kvtop(&["drain", &pod, "-n", "llm", "--confirm", &pod])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("fewer than min_ready 3"), "{err}");
    std::fs::write(
        &config,
        "[kubernetes.context.sim]\nread_only = true\nprotected = true\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (code, out, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("context sim is read-only"), "{err}");
    assert!(out.contains("context sim is protected"), "{out}");
    assert!(s.mutations().is_empty());
}
