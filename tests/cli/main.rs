//! The headless commands: `kvtop check`, config files, and what hostile input makes of their output.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod check_cli;
mod config_files;
mod hostile_output;
