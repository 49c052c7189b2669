//! Control of a running simulator: scenarios changed while it runs, pod lifecycles and the
//! engines' logs. [`SimControl`] is a cheap clone shared by the [`super::SimHandle`], the
//! scenario schedule and whoever reads logs (the in-process log feed, a simulated Kubernetes
//! API serving `pods/log`).

use std::sync::Arc;

use super::SimError;
use super::fleet::{EngineRef, Scenario};
use super::logs::LogLine;
use super::pod::PodLifecycle;
use super::server::{EngineSite, SimClock};

/// Handle on the running engines. Every read advances the pod to the current simulated time
/// first, so logs and states are as of now.
#[derive(Clone)]
pub struct SimControl {
    sites: Arc<Vec<Arc<EngineSite>>>,
    names: Arc<Vec<String>>,
    clock: Arc<SimClock>,
}

impl std::fmt::Debug for SimControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimControl")
            .field("engines", &self.names.len())
            .finish_non_exhaustive()
    }
}

impl SimControl {
    pub(crate) fn new(
        sites: Vec<Arc<EngineSite>>,
        names: Vec<String>,
        clock: Arc<SimClock>,
    ) -> Self {
        SimControl {
            sites: Arc::new(sites),
            names: Arc::new(names),
            clock,
        }
    }

    /// Number of engines.
    /// The engines' shared state, for the simulated Kubernetes API.
    pub(crate) fn sites(&self) -> &Arc<Vec<Arc<EngineSite>>> {
        &self.sites
    }

    pub fn engines(&self) -> usize {
        self.sites.len()
    }

    /// Current simulated time, seconds since the Unix epoch.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Simulated seconds per wall-clock second.
    pub fn time_scale(&self) -> f64 {
        self.clock.time_scale()
    }

    /// The simulated time at wall-clock Unix time `wall`: what a report stamped with the wall
    /// clock corresponds to in the simulation.
    pub fn sim_time_at(&self, wall: f64) -> f64 {
        self.clock.sim_time_at(wall)
    }

    /// The engine's index, by index or pod name.
    pub(crate) fn index_of(&self, engine: &EngineRef) -> Option<usize> {
        match engine {
            EngineRef::Index(i) => Some(*i).filter(|i| *i < self.sites.len()),
            EngineRef::Name(name) => self.names.iter().position(|n| n == name),
        }
    }

    /// Pod name of engine `index`.
    pub fn name(&self, index: usize) -> Option<&str> {
        self.names.get(index).map(String::as_str)
    }

    /// Switch a running engine to `scenario` now: traffic, engine knobs, GPU fault and
    /// lifecycle all change (see `SimPod::set_scenario`). `empty-worker-trap` also makes the
    /// healthy engines of the same model idle, as the router starves them.
    pub fn set_scenario(&self, engine: &EngineRef, scenario: Scenario) -> Result<(), SimError> {
        let index = self.index_of(engine).ok_or_else(|| no_engine(engine))?;
        let site = self.sites.get(index).ok_or_else(|| no_engine(engine))?;
        let now = self.clock.now();
        let model = site.with_pod(|pod| {
            pod.set_scenario(scenario, now);
            pod.spec.model.id
        });
        if scenario == Scenario::EmptyWorkerTrap {
            for (i, peer) in self.sites.iter().enumerate() {
                if i == index {
                    continue;
                }
                peer.with_pod(|pod| {
                    if pod.spec.model.id == model && pod.spec.scenario == Scenario::Healthy {
                        pod.set_scenario(Scenario::Idle, now);
                    }
                });
            }
        }
        Ok(())
    }

    /// The GPU side only of `scenario` (fault and XID; `healthy` clears them).
    pub fn apply_gpu_scenario(
        &self,
        engine: &EngineRef,
        scenario: Scenario,
    ) -> Result<(), SimError> {
        let site = self
            .index_of(engine)
            .and_then(|i| self.sites.get(i))
            .ok_or_else(|| no_engine(engine))?;
        site.with_pod(|pod| pod.apply_gpu_scenario(scenario));
        Ok(())
    }

    /// Change engine `index`'s arrival rate (requests per simulated second) from now on; false
    /// when there is no engine `index`.
    pub fn set_arrival_rate(&self, index: usize, rate: f64) -> bool {
        let Some(site) = self.sites.get(index) else {
            return false;
        };
        let now = self.now();
        site.with_pod(|pod| {
            pod.advance_to(now);
            pod.engine.set_arrival_rate(rate);
        });
        true
    }

    /// The scenario engine `index` is in now.
    pub fn scenario_of(&self, index: usize) -> Option<Scenario> {
        self.sites
            .get(index)
            .map(|site| site.with_pod(|pod| pod.spec.scenario))
    }

    /// Engine `index`'s container state now (serving, restarts, last exit).
    pub fn lifecycle(&self, index: usize) -> Option<PodLifecycle> {
        self.sites
            .get(index)
            .map(|site| site.with_pod_now(|pod| pod.lifecycle()))
    }

    /// The last `n` log lines of engine `index`, oldest first (empty for no such engine).
    pub fn log_tail(&self, index: usize, n: usize) -> Vec<LogLine> {
        self.sites
            .get(index)
            .map(|site| site.with_pod_now(|pod| pod.log().tail(n)))
            .unwrap_or_default()
    }

    /// Engine `index`'s log lines from `cursor` on, and the cursor for the next call (start
    /// with 0; only the last `logs::LOG_CAPACITY` lines are kept).
    pub fn log_since(&self, index: usize, cursor: u64) -> (Vec<LogLine>, u64) {
        self.sites
            .get(index)
            .map(|site| site.with_pod_now(|pod| pod.log().since(cursor)))
            .unwrap_or((Vec::new(), cursor))
    }
}

fn no_engine(engine: &EngineRef) -> SimError {
    SimError::Scenario(match engine {
        EngineRef::Index(i) => format!("there is no engine {i}"),
        EngineRef::Name(name) => format!("no engine is named {name:?}"),
    })
}
