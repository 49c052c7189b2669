//! A simulated fleet with its simulated Kubernetes API, with pod lifecycles short enough for
//! tests (no HPA evaluations after the first unless asked).

use std::time::Duration;

use kvtop_sim::kube::{ClusterConfig, KubeSimConfig, KubeSimHandle, Timings};
use kvtop_sim::{SimConfig, SimHandle};

/// The simulated API's settings for tests: pods are created, started, crash and terminate in
/// fractions of a second, controllers tick every 50 ms, HPAs are evaluated every `hpa_period`
/// simulated seconds.
pub fn fast_kube_config(hpa_period: f64) -> KubeSimConfig {
    KubeSimConfig {
        cluster: ClusterConfig {
            timings: Timings {
                creating: 0.2,
                starting: 0.3,
                crash_after: 0.5,
                terminating: 0.2,
            },
            hpa_period,
            ..ClusterConfig::default()
        },
        tick: Duration::from_millis(50),
        ..KubeSimConfig::default()
    }
}

/// A simulated fleet from `sim` and its fast cluster (see [`fast_kube_config`]).
pub async fn fast_cluster_of(sim: SimConfig, hpa_period: f64) -> (SimHandle, KubeSimHandle) {
    let sim = kvtop_sim::start(sim)
        .await
        .unwrap_or_else(|e| panic!("sim: {e}"));
    let kube = kvtop_sim::kube::start(&sim, fast_kube_config(hpa_period))
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    (sim, kube)
}

/// `engines` simulated engines (llama on even indices, qwen on odd; with six, engine 5 is
/// down) and their cluster in namespace `llm`, one node `gpu-node-00`.
pub async fn fast_cluster(engines: usize, seed: u64) -> (SimHandle, KubeSimHandle) {
    let sim = SimConfig {
        engines,
        seed,
        ..SimConfig::default()
    };
    fast_cluster_of(sim, 1e9).await
}

/// The audit log's outcome lines (ok, error, refused, interrupted), parsed, without the
/// `started` line each run writes before it sends anything (see [`audit_all_lines`]).
pub fn audit_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    audit_all_lines(path)
        .into_iter()
        .filter(|l| l["result"] != "started")
        .collect()
}

/// Every line of the audit log, parsed (none when the file does not exist).
pub fn audit_all_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Every request the simulated API received that is not a read, an access review or an
/// identity review (`kubectl auth whoami`'s SelfSubjectReview, which the audit log asks).
pub fn mutations(kube: &KubeSimHandle) -> Vec<kvtop_sim::kube::RecordedRequest> {
    kube.requests()
        .into_iter()
        .filter(|r| {
            r.method != "GET"
                && !r.path.contains("selfsubjectaccessreviews")
                && !r.path.contains("selfsubjectreviews")
        })
        .collect()
}

/// The name of `engine`'s first current pod.
pub fn first_pod(kube: &KubeSimHandle, engine: usize) -> String {
    kube.pods_of(engine)
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("engine {engine} has no pod"))
}
