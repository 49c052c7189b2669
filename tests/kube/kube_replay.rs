//! `kvtop check --kube --record` then `check --replay`: the recording keeps what the pods said
//! (state, restarts, events, log lines), so the replay's rules give the pod-state findings the
//! live run gave.

use std::path::Path;
use std::process::{Command, Output};

use kvtop_sim::SimConfig;
use kvtop_sim::kube::KubeSimHandle;
use serde_json::Value;

use crate::common::kube_sim::fast_cluster_of;

fn kvtop(home: &Path, args: Vec<String>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command.args(args);
    crate::common::isolate_home(&mut command, home);
    command
        .env_remove("KVTOP_CONFIG")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap_or_else(|e| panic!("kvtop runs: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The findings of a `-o json` report, as `(rule, name)` pairs, sorted.
fn fired(out: &Output) -> Vec<(String, String)> {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    let mut fired: Vec<(String, String)> = doc["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or_default().to_owned(),
                r["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    fired.sort();
    fired
}

/// `kvtop check --kube` of `kube`, recorded to `file`.
async fn check_recorded(kube: &KubeSimHandle, home: &Path, file: &Path) -> Output {
    let kubeconfig = home.join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig_yaml("sim")).unwrap_or_else(|e| panic!("{e}"));
    let args = [
        "check",
        "--kube",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--duration",
        "4s",
        "-o",
        "json",
        "--record",
        &file.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    let home = home.to_path_buf();
    // On a blocking thread: the simulated API keeps serving on the test's runtime.
    tokio::task::spawn_blocking(move || kvtop(&home, args))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_kube_check_replays_to_the_same_pod_state_findings() {
    let (_sim, kube) = fast_cluster_of(
        SimConfig {
            engines: 3,
            seed: 5,
            ..SimConfig::default()
        },
        1e9,
    )
    .await;
    let crashing = kube.pods_of(2).first().cloned().unwrap_or_default();
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = home.path().join("kube.kvr");
    let live = check_recorded(&kube, home.path(), &file).await;
    assert_eq!(live.status.code(), Some(2), "{}", text(&live.stderr));
    let live_fired = fired(&live);
    // Read from the pod's state and events, and from its log.
    for rule in ["crash-loop", "oom-chunked-prefill"] {
        assert!(
            live_fired.contains(&(rule.to_owned(), crashing.clone())),
            "{live_fired:?}"
        );
    }

    let replay = kvtop(
        home.path(),
        [
            "check",
            "--replay",
            &file.display().to_string(),
            "-o",
            "json",
        ]
        .map(str::to_owned)
        .to_vec(),
    );
    assert_eq!(replay.status.code(), Some(2), "{}", text(&replay.stderr));
    assert_eq!(fired(&replay), live_fired, "{}", text(&replay.stderr));
}
