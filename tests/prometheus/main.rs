//! Reading the fleet through a Prometheus server: the real Prometheus scraping the simulator, the query layer, TLS and auth.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod prometheus_dashboard;
mod prometheus_live;
mod prometheus_past_quantiles;
mod prometheus_query;
mod prometheus_replay;
mod prometheus_targets;
mod prometheus_tls_auth;
