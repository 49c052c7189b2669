//! The fleet: targets, the engines they export, and their status.

use super::{History, ScrapeError, Signals, Ts};
use crate::engine::{EngineId, EngineSample, GpuSample};
use crate::metrics::LineError;

/// Index of a scrape target in the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetId(pub u32);

/// A configured scrape target.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// Short display name (pod name, host:port, or configured name).
    pub name: String,
    pub url: String,
}

/// What a good scrape yielded, already parsed and mapped (parsing happens in the worker).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScrapePayload {
    pub engines: Vec<EngineSample>,
    pub gpus: Vec<GpuSample>,
    /// Sample lines read.
    pub samples: usize,
    /// Malformed lines skipped, and the first of them.
    pub malformed: usize,
    pub first_error: Option<LineError>,
    /// Body size after decompression.
    pub bytes: usize,
}

/// One scrape's result, sent from a worker to the app loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeReport {
    pub target: TargetId,
    /// When the scrape completed.
    pub at: Ts,
    /// How long it took, seconds.
    pub took: f64,
    pub outcome: Result<ScrapePayload, ScrapeError>,
}

/// Settings the fleet needs (from the resolved config).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetSettings {
    /// Scrape interval, seconds.
    pub interval: f64,
    pub window: super::QuantileWindow,
    /// How long an engine stays marked RESTARTED after a counter reset, seconds.
    pub restart_mark_secs: f64,
    /// Full-resolution history span, seconds.
    pub history_full_secs: f64,
    /// Total history span (downsampled beyond the full-resolution part), seconds.
    pub history_total_secs: f64,
    /// Width of one downsampled bucket, seconds.
    pub history_coarse_step: f64,
}

impl Default for FleetSettings {
    fn default() -> Self {
        FleetSettings {
            interval: 1.0,
            window: super::QuantileWindow::M1,
            restart_mark_secs: 120.0,
            history_full_secs: 600.0,
            history_total_secs: 3600.0,
            history_coarse_step: 10.0,
        }
    }
}

/// An engine's (or an engine-less target's) status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EngineStatus {
    /// Last scrape good.
    Up,
    /// No good scrape for 2 intervals: last values shown with their age.
    Stale,
    /// Never scraped successfully, or gone for long.
    Down,
}

/// Counts of engines per status, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusCounts {
    pub up: usize,
    pub stale: usize,
    pub down: usize,
}

/// One scrape target and the outcome of its scrapes.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub id: TargetId,
    pub spec: TargetSpec,
    /// Completion time of the last scrape attempt, good or bad.
    pub last_attempt: Option<Ts>,
    /// Completion time of the last good scrape.
    pub last_ok: Option<Ts>,
    /// The last failure (kept after a later success, for the detail view).
    pub last_error: Option<(Ts, ScrapeError)>,
    /// True when the most recent attempt failed.
    pub failing: bool,
    /// Duration of the last scrape, seconds.
    pub last_took: Option<f64>,
    /// Body size of the last good scrape.
    pub last_bytes: Option<usize>,
    /// Malformed lines in the last good scrape, and the first of them.
    pub malformed: usize,
    pub first_malformed: Option<LineError>,
    /// GPUs from the last good scrape (a dcgm-exporter target).
    pub gpus: Vec<GpuSample>,
}

/// One engine row: the latest sample, derived signals, history and status.
#[derive(Debug, Clone)]
pub struct EngineState {
    pub target: TargetId,
    /// Empty `EngineId` for the placeholder row of a target that never yielded an engine.
    pub id: EngineId,
    /// Display name: the target's name, plus `/engine` or `[model]` when a target exports several.
    pub name: String,
    pub status: EngineStatus,
    /// Set when a counter went backwards (process restart); shown for `restart_mark_secs`.
    pub restarted_at: Option<Ts>,
    /// Scrape time of `latest`.
    pub last_ok: Option<Ts>,
    pub latest: Option<EngineSample>,
    pub signals: Signals,
    pub history: History,
}

/// The whole fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    // Implementation detail of the fleet module.
}

impl Fleet {
    pub fn new(settings: FleetSettings) -> Self {
        let _ = settings;
        todo!("Fleet::new")
    }
    pub fn settings(&self) -> &FleetSettings {
        todo!()
    }
    pub fn add_target(&mut self, spec: TargetSpec) -> TargetId {
        let _ = spec;
        todo!()
    }
    pub fn remove_target(&mut self, id: TargetId) {
        let _ = id;
        todo!()
    }
    pub fn targets(&self) -> &[TargetState] {
        todo!()
    }
    pub fn target(&self, id: TargetId) -> Option<&TargetState> {
        let _ = id;
        todo!()
    }
    /// Every engine row, in a stable order (by target, then engine id).
    pub fn engines(&self) -> &[EngineState] {
        todo!()
    }
    /// Fold one scrape result into the fleet.
    pub fn ingest(&mut self, report: ScrapeReport) {
        let _ = report;
        todo!()
    }
    /// Advance time-driven status (STALE/DOWN, RESTARTED expiry). Returns true if anything changed.
    pub fn tick(&mut self, now: Ts) -> bool {
        let _ = now;
        todo!()
    }
    pub fn window(&self) -> super::QuantileWindow {
        todo!()
    }
    /// Change the quantile window and recompute current signals.
    pub fn set_window(&mut self, window: super::QuantileWindow) {
        let _ = window;
        todo!()
    }
    pub fn counts(&self) -> StatusCounts {
        todo!()
    }
}
