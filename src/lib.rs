//! kvtop: a terminal operations console for vLLM inference fleets.
//!
//! PURE modules (`metrics`, `engine`, `fleet`) take data and time and return data; they import no
//! tokio, reqwest, crossterm or ratatui. I/O lives in `sources`, `sim` and `app`; drawing in `ui`.

pub mod actions;
pub mod app;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod diagnose;
pub mod engine;
pub mod fleet;
pub mod kube_model;
pub mod logging;
pub mod metrics;
pub mod rules;
pub mod sim;
pub mod sources;
pub mod terminal;
pub mod theme;
pub mod ui;
