//! Prometheus as a source: the fleet's signals (and GPUs) read through a Prometheus server's
//! HTTP API instead of, or beside, scraping engines directly.
//!
//! - `query` (PURE): the PromQL of a cycle, one query per signal for the whole fleet;
//! - `decode` (PURE): JSON answers, errors in Prometheus' own words;
//! - `buckets` (PURE): a past window's histogram quantiles from the bucket rates read;
//! - `merge` (PURE): answers into one [`kvtop_core::fleet::DerivedEngine`] per engine, or one
//!   [`kvtop_core::fleet::DerivedSeries`] per engine for the start-up backfill;
//! - `targets` (PURE): `/api/v1/targets`, and which targets serve engines;
//! - `client`: HTTP with timeouts, auth, a custom CA;
//! - `poller`: the worker that sends [`kvtop_core::fleet::SourceReport`]s to the app loop.

mod buckets;
pub mod client;
pub mod decode;
pub mod merge;
pub mod poller;
pub mod query;
pub mod replay;
pub mod targets;

pub use client::{ClientError, ClientSettings, PromClient, RawAnswer};
pub use poller::{PollSettings, Poller, SlowAnswers, backfill_once, backfill_step, poll_once};
pub use query::{LabelMap, QueryPlan, QuerySpec};
