//! Kubernetes: discovery, the console's pod view and actions, the CLI actions, and the simulated API as a real client sees it.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod actions_cli;
mod audit_first;
mod check_kube_cli;
mod discovery_by_workload;
mod drain_safety;
mod exec_plugin;
mod kube_actions_ui;
mod kube_discovery;
mod kube_replay;
mod kube_sim_api;
mod kube_ui;
mod kubectl;
mod node_drain;
mod routing_drain;
mod sim_kube_cli;
mod sim_kube_logs;
