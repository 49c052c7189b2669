//! What each command line does. `main` parses the command line and calls one of these.

pub mod action_cmd;
pub mod check;
pub mod config_cmd;
pub mod console;
pub mod console_actions;
pub mod console_cmd;
#[cfg(feature = "demo")]
pub mod demo;
pub mod file_limit;
pub mod rules_cmd;
pub mod setup;
#[cfg(feature = "demo")]
pub mod sim;
mod simulated;
