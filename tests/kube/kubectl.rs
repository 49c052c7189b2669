//! The real kubectl against the simulated Kubernetes API: the judge of how faithful the
//! simulation is. Each test drives kubectl as an engineer would and then checks the resulting
//! state through the API itself, not only kubectl's exit code.
//!
//! kubectl runs with its own HOME (its discovery cache), a kubeconfig for the simulated API and
//! no other configuration. Without kubectl on PATH the tests are skipped, unless
//! KVTOP_TEST_REQUIRE_ALL is set (as in CI), where they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use kvtop_sim::kube::{Denial, KubeSimHandle};
use kvtop_sim::{SimConfig, SimHandle};

const NS: &str = "llm";
const NODE: &str = "gpu-node-00";
/// Bound on one kubectl run; no test asserts how fast anything happens.
const KUBECTL_PATIENCE: Duration = Duration::from_secs(90);
const PATIENCE: Duration = Duration::from_secs(30);

/// A simulated cluster and a kubectl pointed at it.
struct Fixture {
    _sim: SimHandle,
    kube: KubeSimHandle,
    client: Client,
    home: tempfile::TempDir,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
}

/// What a kubectl run printed.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit ok: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.ok, self.stdout, self.stderr
        )
    }
}

/// `engines` simulated engines (llama on even indices, qwen on odd; with 6, engine 5 is down
/// and crash-looping) on one node, or `None` when kubectl is missing and may be skipped.
async fn fixture(engines: usize) -> Option<Fixture> {
    if !common::have_program("kubectl") {
        return None;
    }
    let kubectl = common::find_program("kubectl")?;
    let sim = SimConfig {
        engines,
        seed: 11,
        ..SimConfig::default()
    };
    let (sim, kube) = common::kube_sim::fast_cluster_of(sim, 1e9).await;
    let config = kube.client_config().unwrap_or_else(|e| panic!("{e}"));
    let client = Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"));
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let kubeconfig = home.path().join("kubeconfig.yaml");
    std::fs::write(&kubeconfig, kube.kubeconfig_yaml("kvtop-sim-test"))
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    Some(Fixture {
        _sim: sim,
        kube,
        client,
        home,
        kubeconfig,
        kubectl,
    })
}

impl Fixture {
    /// Run `program` with the kubeconfig and `args` under coreutils' `timeout`, so a hung
    /// kubectl fails the test instead of hanging it.
    async fn run_with(&self, program: &Path, args: &[&str]) -> Run {
        let mut command = std::process::Command::new("timeout");
        command
            .arg(KUBECTL_PATIENCE.as_secs().to_string())
            .arg(program)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null());
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"));
        assert_ne!(
            output.status.code(),
            Some(124),
            "kubectl {args:?} did not finish"
        );
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    async fn run(&self, args: &[&str]) -> Run {
        self.run_with(&self.kubectl, args).await
    }

    /// Run kubectl and require success; its stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args).await;
        assert!(run.ok, "kubectl {args:?} failed:\n{run:?}");
        run.stdout
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn pod_list(&self) -> Vec<Pod> {
        self.pods()
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("list pods: {e}"))
            .items
    }

    async fn node(&self) -> Node {
        Api::<Node>::all(self.client.clone())
            .get(NODE)
            .await
            .unwrap_or_else(|e| panic!("get node: {e}"))
    }

    /// Wait until `pred` holds for the pods, or fail naming `what`.
    async fn wait_pods(&self, what: &str, pred: impl Fn(&[Pod]) -> bool) -> Vec<Pod> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let pods = self.pod_list().await;
            if pred(&pods) {
                return pods;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// The header line of kubectl's table output, split into column names.
fn header(out: &str) -> Vec<String> {
    out.lines()
        .next()
        .unwrap_or("")
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The row of `name` in kubectl's table output, split on runs of spaces.
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .find(|l| {
            l.split_whitespace()
                .any(|w| w == name || w.ends_with(&format!("/{name}")))
        })
        .unwrap_or_else(|| panic!("no row for {name} in:\n{out}"))
        .split_whitespace()
        .collect()
}

#[tokio::test]
async fn get_lists_every_kind_with_the_server_side_columns() {
    let Some(f) = fixture(6).await else { return };
    let pods = f.pod_list().await;
    let out = f.ok(&["get", "pods", "-A", "-o", "wide"]).await;
    assert_eq!(
        header(&out),
        [
            "NAMESPACE",
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ],
        "{out}"
    );
    for pod in &pods {
        let cells = row(&out, &pod.name_any());
        assert_eq!(cells.first(), Some(&NS), "{out}");
        assert!(cells.contains(&NODE), "{out}");
    }
    // Engine 5 is down: its pod crash-loops.
    let crashing = f.kube.pods_of(5);
    let crash_row = row(&out, crashing.first().map_or("", String::as_str));
    assert!(crash_row.contains(&"0/1"), "{out}");
    assert!(
        crash_row
            .iter()
            .any(|c| *c == "CrashLoopBackOff" || *c == "Error"),
        "{out}"
    );
    let serving = row(&out, &f.kube.pods_of(2)[0]);
    assert!(
        serving.contains(&"1/1") && serving.contains(&"Running"),
        "{out}"
    );

    let all = f
        .ok(&[
            "get",
            "deploy,rs,svc,hpa,pdb,nodes,endpointslices",
            "-n",
            NS,
        ])
        .await;
    for name in [
        "deployment.apps/vllm-llama-8b",
        "deployment.apps/vllm-qwen-7b",
        "service/vllm-llama-8b",
        "horizontalpodautoscaler.autoscaling/vllm-qwen-7b",
        "poddisruptionbudget.policy/vllm-llama-8b",
        "node/gpu-node-00",
        "endpointslice.discovery.k8s.io/vllm-qwen-7b-",
    ] {
        assert!(all.contains(name), "{name} missing from:\n{all}");
    }
    for column in [
        "UP-TO-DATE",
        "DESIRED",
        "CLUSTER-IP",
        "REFERENCE",
        "ALLOWED DISRUPTIONS",
        "ROLES",
        "ADDRESSTYPE",
    ] {
        assert!(all.contains(column), "{column} missing from:\n{all}");
    }
    let deployment = row(&all, "vllm-llama-8b");
    assert_eq!(deployment.get(1), Some(&"3/3"), "{all}");
}

#[tokio::test]
async fn describe_and_logs_of_a_crash_looping_pod() {
    let Some(f) = fixture(6).await else { return };
    let crashing = f.kube.pods_of(5)[0].clone();
    let described = f.ok(&["describe", "pod", "-n", NS, &crashing]).await;
    let name_line = described.lines().find(|l| l.starts_with("Name:"));
    assert_eq!(
        name_line.and_then(|l| l.split_whitespace().nth(1)),
        Some(crashing.as_str()),
        "{described}"
    );
    assert!(described.contains("gpu-node-00"), "{described}");
    assert!(described.contains("BackOff"), "events in:\n{described}");
    let previous = f.ok(&["logs", "-n", NS, &crashing, "--previous"]).await;
    assert!(previous.contains("CUDA out of memory"), "{previous}");
    let serving = f.kube.pods_of(2)[0].clone();
    let tail = f
        .ok(&["logs", "-n", NS, &serving, "--tail=2", "--timestamps"])
        .await;
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(lines.len(), 2, "{tail}");
    for line in lines {
        let stamp = line.split_whitespace().next().unwrap_or("");
        assert!(
            stamp.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
            "{line:?} does not start with an RFC 3339 time"
        );
    }
}

// Multi-threaded: the test blocks on kubectl's output while the simulated API serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_prints_lines_as_they_are_written() {
    let Some(f) = fixture(6).await else { return };
    let pod = f.kube.pods_of(2)[0].clone();
    let mut child = std::process::Command::new(&f.kubectl)
        .arg("--kubeconfig")
        .arg(&f.kubeconfig)
        .args(["logs", "-f", "-n", NS, &pod, "--tail=1"])
        .env("HOME", f.home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("kubectl logs -f: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let planted = "kvtop-test: a line written while kubectl follows";
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(f.kube.append_log(&pod, planted));
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains(planted)) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("the planted line never came: {seen:#?}"),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn get_watch_sees_a_deleted_pod_replaced() {
    let Some(f) = fixture(6).await else { return };
    let victim = f.kube.pods_of(2)[0].clone();
    let mut child = std::process::Command::new(&f.kubectl)
        .arg("--kubeconfig")
        .arg(&f.kubeconfig)
        .args(["get", "pods", "-n", NS, "-w", "--request-timeout=0"])
        .env("HOME", f.home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("kubectl -w: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    // The watch has listed once the victim's row is printed; give it a moment to start.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deleted = f.ok(&["delete", "pod", "-n", NS, &victim]).await;
    assert!(
        deleted.contains(&format!("pod \"{victim}\" deleted")),
        "{deleted}"
    );
    let successor = f
        .wait_pods("a successor", |pods| {
            pods.iter().all(|p| p.name_any() != victim)
                && f.kube
                    .pods_of(2)
                    .iter()
                    .any(|n| pods.iter().any(|p| &p.name_any() == n && ready(p)))
        })
        .await;
    let new_name = f.kube.pods_of(2)[0].clone();
    assert!(successor.iter().any(|p| p.name_any() == new_name));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = child.kill();
    let _ = child.wait();
    let seen = lines.join().unwrap_or_default();
    let victim_rows = seen.iter().filter(|l| l.starts_with(&victim)).count();
    assert!(
        victim_rows >= 2,
        "the listing and the deletion of {victim}: {seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with(&victim) && l.contains("Terminating")),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with(&new_name) && l.contains("Running")),
        "{new_name} running in {seen:#?}"
    );
}

#[tokio::test]
async fn label_cordon_and_uncordon_change_the_objects() {
    let Some(f) = fixture(4).await else { return };
    let pod = f.kube.pods_of(1)[0].clone();
    let out = f
        .ok(&[
            "label",
            "pod",
            "-n",
            NS,
            &pod,
            "app.kubernetes.io/component-",
        ])
        .await;
    assert!(out.contains("unlabeled"), "{out}");
    let labels = f.pods().get(&pod).await.unwrap().labels().clone();
    assert!(
        !labels.contains_key("app.kubernetes.io/component"),
        "{labels:?}"
    );
    assert_eq!(
        labels.get("app.kubernetes.io/name").map(String::as_str),
        Some("vllm")
    );

    f.ok(&["cordon", NODE]).await;
    let node = f.node().await;
    assert_eq!(node.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
    let nodes = f.ok(&["get", "nodes"]).await;
    assert!(nodes.contains("Ready,SchedulingDisabled"), "{nodes}");
    f.ok(&["uncordon", NODE]).await;
    let node = f.node().await;
    assert_ne!(node.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
}

#[tokio::test]
async fn drain_with_server_dry_run_leaves_every_pod_as_it_was() {
    // Eight engines: every PDB allows one disruption, so each dry-run eviction is accepted.
    let Some(f) = fixture(8).await else { return };
    let before: Vec<(String, Option<String>, Option<String>)> = f
        .pod_list()
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid(), p.resource_version()))
        .collect();
    let requests_before = f.kube.requests().len();
    let out = f
        .run(&[
            "drain",
            NODE,
            "--ignore-daemonsets",
            "--dry-run=server",
            "--timeout=60s",
        ])
        .await;
    assert!(out.ok, "{out:?}");
    assert!(out.stdout.contains("(server dry run)"), "{out:?}");
    let evictions: Vec<_> = f.kube.requests()[requests_before..]
        .iter()
        .filter(|r| r.path.ends_with("/eviction"))
        .cloned()
        .collect();
    assert_eq!(
        evictions.len(),
        before.len(),
        "one eviction per pod: {evictions:#?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after: Vec<(String, Option<String>, Option<String>)> = f
        .pod_list()
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid(), p.resource_version()))
        .collect();
    let names = |v: &[(String, Option<String>, Option<String>)]| {
        let mut n: Vec<(String, Option<String>)> =
            v.iter().map(|(a, b, _)| (a.clone(), b.clone())).collect();
        n.sort();
        n
    };
    assert_eq!(
        names(&after),
        names(&before),
        "the same pods, the same uids"
    );
    assert!(f.pod_list().await.iter().all(|p| !terminating(p)));
    let node = f.node().await;
    assert_ne!(
        node.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true),
        "a server dry run does not cordon"
    );
}

#[tokio::test]
async fn drain_evicts_until_a_disruption_budget_holds_it_back() {
    // Six engines: llama has 3 ready pods (PDB minAvailable 2 allows one eviction, and its
    // replacement cannot schedule on the cordoned node); qwen has 2 ready (none allowed).
    let Some(f) = fixture(6).await else { return };
    let llama_before: Vec<String> = [0, 2, 4].iter().flat_map(|e| f.kube.pods_of(*e)).collect();
    let out = f
        .run(&["drain", NODE, "--ignore-daemonsets", "--timeout=8s"])
        .await;
    assert!(!out.ok, "the PDBs must hold the drain back: {out:?}");
    assert!(
        out.stderr.contains("disruption budget"),
        "kubectl names the budget: {out:?}"
    );
    let node = f.node().await;
    assert_eq!(node.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
    let pods = f.pod_list().await;
    let llama_left = llama_before
        .iter()
        .filter(|name| pods.iter().any(|p| &&p.name_any() == name))
        .count();
    assert_eq!(llama_left, 2, "exactly one llama pod was evicted");
    let pending = pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending"))
        .count();
    assert!(
        pending >= 1,
        "the evicted pod's replacement waits on the cordoned node"
    );
    let qwen_ready = [1, 3]
        .iter()
        .flat_map(|e| f.kube.pods_of(*e))
        .filter(|n| pods.iter().any(|p| &p.name_any() == n && ready(p)))
        .count();
    assert_eq!(qwen_ready, 2, "qwen's budget allows no disruption");
}

#[tokio::test]
async fn rollout_restart_then_status_waits_for_every_new_pod() {
    let Some(f) = fixture(4).await else { return };
    let before: Vec<String> = f.pod_list().await.iter().map(|p| p.name_any()).collect();
    let out = f
        .ok(&["rollout", "restart", "deployment/vllm-llama-8b", "-n", NS])
        .await;
    assert!(out.contains("restarted"), "{out}");
    let status = f
        .ok(&[
            "rollout",
            "status",
            "deployment/vllm-llama-8b",
            "-n",
            NS,
            "--timeout=60s",
        ])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let deployment = Api::<Deployment>::namespaced(f.client.clone(), NS)
        .get("vllm-llama-8b")
        .await
        .unwrap();
    let annotations = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    assert!(annotations.contains_key("kubectl.kubernetes.io/restartedAt"));
    let pods = f.pod_list().await;
    let llama: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.name_any().starts_with("vllm-llama-8b-") && !terminating(p))
        .collect();
    assert_eq!(llama.len(), 2);
    assert!(
        llama
            .iter()
            .all(|p| !before.contains(&p.name_any()) && ready(p))
    );
}

#[tokio::test]
async fn scale_changes_the_replicas_and_the_pods() {
    let Some(f) = fixture(6).await else { return };
    let out = f
        .ok(&[
            "scale",
            "deployment/vllm-llama-8b",
            "-n",
            NS,
            "--replicas=2",
        ])
        .await;
    assert!(out.contains("scaled"), "{out}");
    let deployments = Api::<Deployment>::namespaced(f.client.clone(), NS);
    let replicas = |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas);
    assert_eq!(
        replicas(&deployments.get("vllm-llama-8b").await.unwrap()),
        Some(2)
    );
    let live = |pods: &[Pod]| {
        pods.iter()
            .filter(|p| p.name_any().starts_with("vllm-llama-8b-") && !terminating(p))
            .count()
    };
    f.wait_pods("two llama pods", |pods| live(pods) == 2).await;
    f.ok(&[
        "scale",
        "deployment/vllm-llama-8b",
        "-n",
        NS,
        "--replicas=3",
    ])
    .await;
    f.wait_pods("three ready llama pods", |pods| {
        live(pods) == 3
            && pods
                .iter()
                .filter(|p| p.name_any().starts_with("vllm-llama-8b-") && ready(p))
                .count()
                == 3
    })
    .await;
}

#[tokio::test]
async fn auth_can_i_list_and_whoami_answer_for_the_simulated_user() {
    let Some(f) = fixture(2).await else { return };
    // `pods/eviction` is kubectl's TYPE/NAME (pods named "eviction"); the eviction
    // subresource is asked for with --subresource.
    let eviction = [
        "auth",
        "can-i",
        "create",
        "pods",
        "--subresource=eviction",
        "-n",
        NS,
    ];
    assert_eq!(f.ok(&eviction).await.trim(), "yes");
    let named = f
        .ok(&["auth", "can-i", "create", "pods/eviction", "-n", NS])
        .await;
    assert_eq!(named.trim(), "yes");
    f.kube.deny(Denial::new("create", "pods/eviction"));
    let no = f.run(&eviction).await;
    assert!(!no.ok && no.stdout.starts_with("no"), "{no:?}");
    let still = f.ok(&["auth", "can-i", "create", "pods", "-n", NS]).await;
    assert_eq!(still.trim(), "yes", "only the subresource is denied");
    let list = f.ok(&["auth", "can-i", "--list", "-n", NS]).await;
    let pods_row = row(&list, "pods");
    assert!(pods_row.iter().any(|c| c.contains("delete")), "{list}");
    assert!(
        !list.lines().any(|l| l.starts_with("pods/eviction")),
        "the denied subresource is not listed:\n{list}"
    );
    let whoami = f.ok(&["auth", "whoami"]).await;
    assert!(whoami.contains("kvtop-sim"), "{whoami}");
    assert!(whoami.contains("system:authenticated"), "{whoami}");
}

/// The kubectl binaries of other minor versions beside the dispatcher (`kubectl.1.27` …), the
/// oldest first; none when this kubectl comes without them.
fn versioned_kubectls(kubectl: &Path) -> Vec<PathBuf> {
    let real = std::fs::canonicalize(kubectl).unwrap_or_else(|_| kubectl.to_path_buf());
    let Some(dir) = real.parent() else {
        return Vec::new();
    };
    (20..=40)
        .map(|minor| dir.join(format!("kubectl.1.{minor}")))
        .filter(|p| p.is_file())
        .collect()
}

#[tokio::test]
async fn every_kubectl_version_beside_the_dispatcher_lists_and_dry_runs_a_drain() {
    let Some(f) = fixture(8).await else { return };
    let versions = versioned_kubectls(&f.kubectl);
    eprintln!("kubectl versions beside the dispatcher: {versions:?}");
    let before: Vec<(String, Option<String>)> = f
        .pod_list()
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid()))
        .collect();
    for kubectl in &versions {
        // Each version keeps its own discovery cache.
        let _ = std::fs::remove_dir_all(f.home.path().join(".kube"));
        let pods = f.run_with(kubectl, &["get", "pods", "-n", NS]).await;
        assert!(pods.ok, "{}: {pods:?}", kubectl.display());
        assert_eq!(
            header(&pods.stdout)[..3],
            ["NAME", "READY", "STATUS"],
            "{pods:?}"
        );
        let drain = f
            .run_with(
                kubectl,
                &[
                    "drain",
                    NODE,
                    "--ignore-daemonsets",
                    "--dry-run=server",
                    "--timeout=60s",
                ],
            )
            .await;
        assert!(drain.ok, "{}: {drain:?}", kubectl.display());
    }
    let after: Vec<(String, Option<String>)> = f
        .pod_list()
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid()))
        .collect();
    assert_eq!(after, before, "no version's dry run changed a pod");
    assert!(f.pod_list().await.iter().all(|p| !terminating(p)));
}
