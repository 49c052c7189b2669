//! kvtop: a terminal operations console for vLLM inference fleets.
//!
//! The pure logic (parsing, fleet state, rules, plans) lives in `kvtop-core`; the simulated fleet
//! and cluster in `kvtop-sim` (feature `demo`). This crate is the app: workers that do I/O
//! (`sources`), action execution, the event loop and state machine (`app`), drawing (`ui`) and
//! the commands.

pub mod actions;
pub mod app;
pub mod cli;
pub mod clipboard;
pub mod commands;
pub mod config;
pub mod diagnose;
pub mod logging;
pub mod record;
pub mod screen;
pub mod sources;
pub mod terminal;
mod terminal_input;
pub mod theme;
pub mod ui;
