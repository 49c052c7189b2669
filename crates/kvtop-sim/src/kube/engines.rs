//! The simulated cluster's hold on the engines: stop a pod's process, start it again, take it
//! in or out of routing, read its state and its log.

use std::sync::Arc;

use crate::logs::LogLine;
use crate::model::EngineCounters;
use crate::pod::PodLifecycle;
use crate::server::{EngineSite, SimClock};

/// One read of an engine for its periodic stats line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EngineReading {
    pub running: usize,
    pub waiting: usize,
    pub kv_usage: f64,
    pub counters: EngineCounters,
}

/// The engines of the fleet, by index, and the simulated clock.
#[derive(Clone)]
pub(crate) struct EngineLink {
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

    /// Stop the engine's process: it writes its shutdown lines, no longer serves and loses its
    /// requests at the next start. Returns the log cursor after its last line.
    pub fn stop(&self, engine: usize, now: f64) -> Option<u64> {
        let site = self.sites.get(engine)?;
        Some(site.with_pod(|pod| {
            pod.stop(now);
            pod.log().cursor()
        }))
    }

    /// Start the engine's process (counters from zero), with traffic when `routed`: it started
    /// at `starting_at` and serves from `ready_at`, told at `now`. Returns where its lines
    /// begin in the engine's log and its container instance number.
    pub fn start(
        &self,
        engine: usize,
        starting_at: f64,
        ready_at: f64,
        now: f64,
        routed: bool,
    ) -> Option<(u64, u32)> {
        let site = self.sites.get(engine)?;
        Some(site.with_pod(|pod| {
            let from = pod.log().cursor();
            pod.start_process(starting_at, ready_at, now);
            let rate = if routed {
                pod.spec.params.traffic.arrival_rate
            } else {
                0.0
            };
            pod.engine.set_arrival_rate(rate);
            (from, pod.lifecycle().restarts)
        }))
    }

    /// The engine's log lines from `cursor` on, as of `now`.
    pub fn log_since(&self, engine: usize, cursor: u64, now: f64) -> Vec<LogLine> {
        self.sites
            .get(engine)
            .map(|site| {
                site.with_pod(|pod| {
                    pod.advance_to(now);
                    pod.log().since(cursor).0
                })
            })
            .unwrap_or_default()
    }

    /// The engine's container state as of `now` (serving, restarts, last exit).
    pub fn lifecycle(&self, engine: usize, now: f64) -> Option<PodLifecycle> {
        let site = self.sites.get(engine)?;
        Some(site.with_pod(|pod| {
            pod.advance_to(now);
            pod.lifecycle()
        }))
    }

    /// Take the engine in (its configured arrival rate) or out (no new requests) of routing.
    pub(crate) fn set_routed(&self, engine: usize, now: f64, routed: bool) {
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
    pub(crate) fn started_at(&self, engine: usize) -> Option<f64> {
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
