//! A small simulated cluster for the simulator's own unit tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Cluster, ClusterConfig, ModelRouting};
use crate::SimVersion;
use crate::fleet::plan;
use crate::gpu::H100_SXM;
use crate::kube::engines::EngineLink;
use crate::kube::lifecycle::Timings;
use crate::pod::SimPod;
use crate::server::{EngineSite, SimClock};

/// The simulated time the test clusters start at.
pub(crate) const T0: f64 = 1_750_000_000.0;

/// Four engines (llama 0, 2; qwen 1, 3 with 3 down; 0 was OOMKilled before), short lifecycle
/// timings, models routed as `routing` says, as of [`T0`].
pub(crate) fn cluster(routing: BTreeMap<String, ModelRouting>) -> (Cluster, EngineLink) {
    let fleet = plan(4, 8, SimVersion::V1, 9);
    let clock = Arc::new(SimClock::start(1.0));
    let sites: Vec<Arc<EngineSite>> = fleet
        .engines
        .iter()
        .map(|spec| {
            Arc::new(EngineSite::new(
                SimPod::new(spec.clone(), H100_SXM, T0),
                Arc::clone(&clock),
            ))
        })
        .collect();
    let ports: Vec<u16> = (0..4).map(|i| 40_000 + i).collect();
    let cfg = ClusterConfig {
        timings: Timings {
            creating: 1.0,
            starting: 2.0,
            crash_after: 20.0,
            terminating: 1.0,
        },
        routing,
        ..ClusterConfig::default()
    };
    let cluster = Cluster::new(&fleet, &ports, SimVersion::V1, cfg, 1, T0);
    (cluster, EngineLink::new(sites, clock))
}
