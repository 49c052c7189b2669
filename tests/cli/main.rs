//! The headless commands: `kvtop check`, `kvtop doctor`, config files, and what hostile input
//! makes of their output; completions, man pages, `kubectl kvtop`, the k9s and krew files; and
//! the guard that tests never write to the user's home.
//!
//! One test binary for the area (each binary links the whole app).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

#[path = "../common/mod.rs"]
mod common;

mod check_cli;
mod config_files;
mod doctor_cli;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod footprint;
mod home_isolation;
mod hostile_output;
mod replay_cli;
mod shell_integration;
