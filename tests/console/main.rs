//! The console as a user sees it: rendered views (insta snapshots), and the real binary in tmux.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod closed_pty;
mod exit_paths;
mod tmux_demo;
mod tmux_prometheus_past;
mod tmux_story;
mod tmux_time;
mod ui_diagnostics;
mod ui_gpu;
mod ui_prometheus;
mod ui_render;
