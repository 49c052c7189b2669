//! The simulated cluster's hold on the engines: stop a pod's process, start it again, take it
//! in or out of routing, read what its stats line reports.

use std::sync::Arc;

use crate::sim::model::EngineCounters;
use crate::sim::server::{EngineSite, SimClock};

/// One read of an engine for its periodic stats line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineReading {
    pub running: usize,
    pub waiting: usize,
    pub kv_usage: f64,
    pub counters: EngineCounters,
}

/// The engines of the fleet, by index, and the simulated clock.
#[derive(Clone)]
pub struct EngineLink {
    sites: Vec<Arc<EngineSite>>,
    clock: Arc<SimClock>,
}

impl EngineLink {
    pub(crate) fn new(sites: Vec<Arc<EngineSite>>, clock: Arc<SimClock>) -> EngineLink {
        EngineLink { sites, clock }
    }

    /// Current simulated time.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Simulated seconds per wall-clock second.
    pub fn time_scale(&self) -> f64 {
        self.clock.time_scale()
    }

    /// Stop the engine's process: it no longer serves and loses its requests at the next start.
    pub fn stop(&self, engine: usize, now: f64) {
        if let Some(site) = self.sites.get(engine) {
            site.with_pod(|pod| {
                pod.advance_to(now);
                pod.serving = false;
            });
        }
    }

    /// Start the engine's process at `now` (counters from zero), with traffic when `routed`.
    pub fn start(&self, engine: usize, now: f64, routed: bool) {
        if let Some(site) = self.sites.get(engine) {
            site.with_pod(|pod| {
                pod.restart(now);
                let rate = if routed {
                    pod.spec.params.traffic.arrival_rate
                } else {
                    0.0
                };
                pod.engine.set_arrival_rate(rate);
            });
        }
    }

    /// Take the engine in (its configured arrival rate) or out (no new requests) of routing.
    pub fn set_routed(&self, engine: usize, now: f64, routed: bool) {
        if let Some(site) = self.sites.get(engine) {
            site.with_pod(|pod| {
                pod.advance_to(now);
                let rate = if routed {
                    pod.spec.params.traffic.arrival_rate
                } else {
                    0.0
                };
                pod.engine.set_arrival_rate(rate);
            });
        }
    }

    /// The arrival rate the engine gets now.
    pub fn arrival_rate(&self, engine: usize) -> Option<f64> {
        let site = self.sites.get(engine)?;
        Some(site.with_pod(|pod| pod.engine.params().traffic.arrival_rate))
    }

    /// When the engine's current process started; `None` while it is stopped.
    pub fn started_at(&self, engine: usize) -> Option<f64> {
        let site = self.sites.get(engine)?;
        site.with_pod(|pod| pod.serving.then(|| pod.engine.started_at()))
    }

    /// Advance the engine to `now` and read it; `None` while it is not serving.
    pub fn read(&self, engine: usize, now: f64) -> Option<EngineReading> {
        let site = self.sites.get(engine)?;
        site.with_pod(|pod| {
            if !pod.serving {
                return None;
            }
            pod.advance_to(now);
            Some(EngineReading {
                running: pod.engine.running(),
                waiting: pod.engine.waiting(),
                kv_usage: pod.engine.kv_usage(),
                counters: *pod.engine.counters(),
            })
        })
    }
}
