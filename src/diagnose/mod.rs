//! Diagnostics outside the console: the recent logs the rules read ([`logs`]), the one
//! builder of the rules' inputs from a fleet ([`inputs`]), the in-process log feed from the
//! simulator ([`feed`]), the observation behind `kvtop check` ([`observe`], with its
//! automatic length in [`plan`]) and its reports ([`report`]); the same over a recording
//! ([`replay`]).
//!
//! `logs`, `inputs`, `plan` and `report` are pure; `feed` and `observe` run on tokio.

pub mod episodes;
#[cfg(feature = "demo")]
pub mod feed;
pub mod inputs;
pub mod kube_feed;
pub mod logs;
pub mod observe;
pub mod plan;
pub mod prometheus_replay;
pub mod replay;
pub mod report;

#[cfg(feature = "demo")]
pub use feed::{FreshLogLines, SimLogFeed, SimLogPoller};
pub use logs::{LogRing, TargetLogs};
pub use observe::{
    Clock, Observation, ObserveSettings, ObserveTarget, observe, observe_pods, observe_prometheus,
};
