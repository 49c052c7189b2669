//! `kvtop check --kube` as a user runs it: the binary with `--kubeconfig` of a simulated
//! cluster discovers the engine pods, scrapes them, feeds their state, events and logs to the
//! rules and exits with the verdict; with nothing to find it says what it searched.

use std::process::{Command, Output};

use kvtop_sim::kube::KubeSimHandle;
use kvtop_sim::{Baseline, SimConfig};
use serde_json::Value;

use crate::common::kube_sim::fast_cluster_of;

/// Run `kvtop check --kube --kubeconfig FILE ARGS` against `kube` (on a blocking thread: the
/// simulated API keeps serving on the test's runtime).
async fn check(kube: &KubeSimHandle, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig_yaml("sim")).unwrap_or_else(|e| panic!("{e}"));
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let run = tokio::task::spawn_blocking(move || {
        let output = Command::new(env!("CARGO_BIN_EXE_kvtop"))
            .arg("check")
            .arg("--kube")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_STATE_HOME", home.path().join("state"))
            .env_remove("KVTOP_CONFIG")
            .env_remove("KUBECONFIG")
            .output()
            .unwrap_or_else(|e| panic!("kvtop runs: {e}"));
        drop(home);
        output
    });
    run.await.unwrap_or_else(|e| panic!("{e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The rules that fired, as `rule name` pairs.
fn fired(out: &Output) -> Vec<(String, String)> {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    doc["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or_default().to_owned(),
                r["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_engine_pod_is_critical_from_its_pod_state_events_and_logs() {
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
    let out = check(&kube, &["--duration", "4s", "-o", "json"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let fired = fired(&out);
    assert!(
        fired.contains(&("crash-loop".to_owned(), crashing.clone())),
        "{fired:?}"
    );
    // Its CUDA OOM is read from the pod's log, its budget from its arguments.
    assert!(
        fired.contains(&("oom-chunked-prefill".to_owned(), crashing)),
        "{fired:?}"
    );
    assert!(
        text(&out.stderr).contains("the engine pods of context sim"),
        "{}",
        text(&out.stderr)
    );
}

/// A healthy cluster: its only finding is the warning about the 32 OpenMP threads the
/// simulator gives the first engine's pod (read from its environment), so the check exits 1;
/// with that rule disabled it exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_cluster_exits_0_and_a_pod_s_warning_exits_1() {
    let (_sim, kube) = fast_cluster_of(
        SimConfig {
            engines: 2,
            seed: 5,
            baseline: Baseline::Healthy,
            ..SimConfig::default()
        },
        1e9,
    )
    .await;
    let threaded = kube.pods_of(0).first().cloned().unwrap_or_default();
    let out = check(&kube, &["--duration", "3s", "-o", "json"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(fired(&out), [("omp-threads-high".to_owned(), threaded)]);

    let rules = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        rules.path(),
        "[[rule]]\nid = \"omp-threads-high\"\nenabled = false\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rules_path = rules.path().to_string_lossy().into_owned();
    let out = check(&kube, &["--duration", "3s", "--rules", &rules_path]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_found_says_what_was_searched_and_exits_3() {
    let (_sim, kube) = fast_cluster_of(
        SimConfig {
            engines: 2,
            seed: 5,
            ..SimConfig::default()
        },
        1e9,
    )
    .await;
    let out = check(&kube, &["-l", "team=nobody", "--duration", "2s"]).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no vLLM or SGLang pods found"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "searched context sim: pods labelled team=nobody in namespace {}",
            kube.namespace
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("sim: no pods in namespace {}", kube.namespace)),
        "{stderr}"
    );
}
