//! PURE. Fleet state: scrape targets, the engines they export, tiered history, derived signals
//! (counter rates with reset detection, windowed quantiles from bucket deltas) and staleness.
//! Time is always passed in (`Ts`, seconds since the Unix epoch), never read from a clock.

pub mod error;
pub mod gpus;
pub mod history;
pub mod model_summary;
mod names;
mod scraped_signals;
pub mod state;
mod status;
mod window;

pub use crate::signals::{QuantileWindow, Signals};
pub use error::ScrapeError;
pub use gpus::{GpuKey, GpuOrigin, GpuSeries, GpuSignals, GpuState, Placement};
pub use history::{History, Series};
pub use model_summary::{ModelSummary, merged_quantiles, summarize, summarize_with};
pub use state::{
    BackfillReport, DerivedEngine, DerivedPayload, DerivedReport, DerivedSeries,
    DerivedSourceState, EngineState, EngineStatus, Fleet, FleetSettings, InstanceKey, ModelSignals,
    QueryFailure, ScrapePayload, ScrapeReport, SourceReport, SourceTarget, StatusCounts,
    TargetHealth, TargetId, TargetSpec, TargetState,
};
pub use status::RowStatus;

pub use crate::clock::Ts;
