//! A simulated fleet with its simulated Kubernetes API, with pod lifecycles short enough for
//! tests (no stats log lines, no HPA evaluations after the first).

use std::time::Duration;

use kvtop::sim::kube::{ClusterConfig, KubeSimConfig, KubeSimHandle, Timings};
use kvtop::sim::{SimConfig, SimHandle};

/// `engines` simulated engines (llama on even indices, qwen on odd; with six, engine 5 is
/// down) and their cluster in namespace `llm`, one node `gpu-node-00`.
pub async fn fast_cluster(engines: usize, seed: u64) -> (SimHandle, KubeSimHandle) {
    let sim = kvtop::sim::start(SimConfig {
        engines,
        seed,
        ..SimConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("sim: {e}"));
    let cfg = KubeSimConfig {
        cluster: ClusterConfig {
            timings: Timings {
                creating: 0.2,
                starting: 0.3,
                crash_after: 0.5,
                terminating: 0.2,
            },
            hpa_period: 1e9,
            ..ClusterConfig::default()
        },
        tick: Duration::from_millis(50),
        ..KubeSimConfig::default()
    };
    let kube = kvtop::sim::kube::start(&sim, cfg)
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    (sim, kube)
}
