//! The in-process simulated fleet that `kvtop check --sim/--demo` and `kvtop rules list
//! --explain --demo` observe. Without the `demo` feature there is none: the commands then
//! observe the configured targets only, and [`InProcessSim`] has no value.

use crate::diagnose::{Clock, ObserveTarget};

/// A simulated fleet the observation runs on: its handle (to shut it down), its endpoints as
/// targets, and its clock.
pub(crate) struct Simulated {
    pub sim: InProcessSim,
    pub targets: Vec<ObserveTarget>,
    pub clock: Clock,
}

#[cfg(feature = "demo")]
pub(crate) use with_demo::*;

#[cfg(not(feature = "demo"))]
pub(crate) use without_demo::*;

#[cfg(feature = "demo")]
mod with_demo {
    use super::Simulated;
    use crate::cli::SimulatedCheckArgs;
    use crate::diagnose::{Clock, ObserveTarget};
    use kvtop_sim::{Baseline, SimConfig, SimHandle, TimedScenario, demo_story};

    pub(crate) use kvtop_sim::SimHandle as InProcessSim;

    /// Engines of `--sim` and `--demo` unless `--engines` says otherwise.
    const SIM_ENGINES: usize = 6;
    const DEMO_ENGINES: usize = 8;

    /// The simulator `kvtop check` was asked for, started; `None` when it observes real
    /// targets.
    pub(crate) async fn for_check(args: &SimulatedCheckArgs) -> Option<Result<Simulated, String>> {
        if !args.requested() {
            return None;
        }
        let engines = args
            .engines
            .map_or(if args.demo { DEMO_ENGINES } else { SIM_ENGINES }, |n| {
                n as usize
            });
        let schedule: Vec<TimedScenario> = if args.demo && args.scenarios.is_empty() {
            demo_story(engines)
        } else {
            args.scenarios.clone()
        };
        Some(
            start(SimConfig {
                engines,
                version: args.vllm_version.into(),
                seed: args.seed,
                time_scale: args.time_scale,
                baseline: Baseline::Healthy,
                schedule,
                ..SimConfig::default()
            })
            .await,
        )
    }

    /// The demo's fleet with its story, for `kvtop rules list --explain --demo`.
    pub(crate) async fn demo_fleet() -> Result<Simulated, String> {
        start(SimConfig {
            engines: DEMO_ENGINES,
            baseline: Baseline::Healthy,
            schedule: demo_story(DEMO_ENGINES),
            ..SimConfig::default()
        })
        .await
    }

    async fn start(config: SimConfig) -> Result<Simulated, String> {
        let sim = kvtop_sim::start(config)
            .await
            .map_err(|e| format!("the simulated fleet did not start: {e}"))?;
        Ok(Simulated {
            targets: targets(&sim),
            clock: Clock::Sim(sim.control()),
            sim,
        })
    }

    /// A running simulator's endpoints as observation targets (engines, then each node's
    /// dcgm-exporter).
    fn targets(sim: &SimHandle) -> Vec<ObserveTarget> {
        let engines = sim.engines.iter().enumerate().map(|(i, e)| ObserveTarget {
            name: e.name.clone(),
            url: e.url.clone(),
            bearer_token: None,
            sim_engine: Some(i),
        });
        let exporters = sim.dcgm.iter().map(|d| ObserveTarget {
            name: d.name.clone(),
            url: d.url.clone(),
            bearer_token: None,
            sim_engine: None,
        });
        engines.chain(exporters).collect()
    }
}

#[cfg(not(feature = "demo"))]
mod without_demo {
    /// No simulator in this build: a type without values.
    pub(crate) enum InProcessSim {}

    impl InProcessSim {
        pub(crate) async fn shutdown(self) {
            match self {}
        }
    }
}
