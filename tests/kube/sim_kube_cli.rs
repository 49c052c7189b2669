//! `kvtop sim --kube` serves the simulated Kubernetes API next to the fleet and writes a
//! kubeconfig for it, which another kvtop uses: `kvtop drain POD --kubeconfig FILE` plans the
//! drain against the simulated cluster (no `--confirm`: plan only, exit code 4).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Kills the simulator when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `kvtop sim --kube` with `extra` arguments, writing its kubeconfig to `kubeconfig`;
/// the running simulator and what it printed up to "Ctrl-C to stop".
fn start_sim(
    home: &std::path::Path,
    kubeconfig: &std::path::Path,
    extra: &[&str],
) -> (Running, Vec<String>) {
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let mut child = Command::new(bin)
        .args(["sim", "--kube", "--engines", "4", "--kubeconfig-out"])
        .arg(kubeconfig)
        .args(extra)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start kvtop sim: {e}"));
    let stdout = child.stdout.take();
    let sim = Running(child);
    // Read the simulator's lines on a thread, so a silent simulator fails the test instead of
    // hanging it.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        }
    });
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|l: &String| l.starts_with("Ctrl-C to stop"))
    {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("kvtop sim said only: {lines:#?}"));
        lines.push(line);
    }
    (sim, lines)
}

#[test]
fn sim_kube_writes_a_kubeconfig_that_drain_can_use() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let kubeconfig = home.path().join("out").join("sim.kubeconfig");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let (_sim, lines) = start_sim(home.path(), &kubeconfig, &[]);
    let announced = format!("kubeconfig: {}", kubeconfig.display());
    assert!(lines.contains(&announced), "{lines:#?}");
    let text = std::fs::read_to_string(&kubeconfig)
        .unwrap_or_else(|e| panic!("{}: {e}", kubeconfig.display()));
    assert!(
        text.contains("\"current-context\": \"kvtop-sim\""),
        "{text}"
    );
    // The first engine line names its pod: `vllm-llama-8b-HASH-SUFFIX  model  node  url`.
    let pod = lines
        .iter()
        .find(|l| l.starts_with("vllm-"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no engine line: {lines:#?}"))
        .to_owned();

    let drain = Command::new(bin)
        .args(["drain", &pod, "--kubeconfig"])
        .arg(&kubeconfig)
        .env("HOME", home.path())
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .output()
        .unwrap_or_else(|e| panic!("run kvtop drain: {e}"));
    let out = String::from_utf8_lossy(&drain.stdout);
    let err = String::from_utf8_lossy(&drain.stderr);
    // The default simulation runs two replicas per model against a PodDisruptionBudget of
    // minAvailable 2: the plan is printed and refused up front, naming the budget (issue 12;
    // it used to print the plan only, exit 4, and a confirmed drain would have been 429'd).
    assert_eq!(drain.status.code(), Some(2), "refused\n{out}\n{err}");
    assert!(
        err.contains("PodDisruptionBudget llm/vllm-llama-8b allows 0 disruptions"),
        "{err}"
    );
    // The plan names the simulated cluster's context, the pod in its namespace, and the
    // routing label it takes away first; the guards read the simulated cluster's RBAC.
    assert!(
        out.contains(&format!("drain pod llm/{pod} (context kvtop-sim)")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "PATCH /api/v1/namespaces/llm/pods/{pod} {{\"metadata\":{{\"labels\":{{\"app.kubernetes.io/component\":null}}}}}}"
        )),
        "{out}"
    );
    assert!(out.contains("ok      rbac: may patch pods"), "{out}");
}

/// Two simulated clusters named apart merge the kubectl way (`KUBECONFIG=a:b`) into two
/// contexts, each reaching its own API; each simulator prints a kubectl line that works.
#[test]
fn context_names_keep_two_simulated_clusters_apart() {
    if !crate::common::have_program("kubectl") {
        return;
    }
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let a = home.path().join("a.yaml");
    let b = home.path().join("b.yaml");
    let (_sim_a, _) = start_sim(home.path(), &a, &["--context-name", "sim-a"]);
    let (_sim_b, lines_b) = start_sim(home.path(), &b, &["--context-name", "sim-b", "--seed", "9"]);
    let hint = lines_b
        .iter()
        .find(|l| l.trim_start().starts_with("kubectl --kubeconfig"))
        .unwrap_or_else(|| panic!("no kubectl line in {lines_b:#?}"));
    assert_eq!(
        hint.trim(),
        format!("kubectl --kubeconfig {} get pods -n llm", b.display())
    );
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .args(args)
            .env("HOME", home.path())
            .env("KUBECONFIG", format!("{}:{}", a.display(), b.display()))
            .output()
            .unwrap_or_else(|e| panic!("kubectl: {e}"));
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let contexts = kubectl(&["config", "get-contexts", "-o", "name"]);
    assert_eq!(contexts.lines().collect::<Vec<_>>(), ["sim-a", "sim-b"]);
    let servers = kubectl(&[
        "config",
        "view",
        "-o",
        "jsonpath={.clusters[*].cluster.server}",
    ]);
    let servers: Vec<&str> = servers.split_whitespace().collect();
    assert_eq!(servers.len(), 2);
    assert_ne!(servers[0], servers[1], "two API servers");
    for context in ["sim-a", "sim-b"] {
        let pods = kubectl(&[
            "--context",
            context,
            "get",
            "pods",
            "-n",
            "llm",
            "-o",
            "name",
        ]);
        assert_eq!(pods.lines().count(), 4, "{context}: {pods}");
    }
}
