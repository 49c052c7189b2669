//! The simulated fleet over HTTP, and the console's scrape pipeline against it and against misbehaving endpoints.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod gauntlet;
mod gpu_direct;
mod pipeline;
mod scenarios;
mod scrape_endpoints;
mod sim_http;
mod sim_lifecycle;
mod time_to_finding;
