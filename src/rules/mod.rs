//! PURE. Troubleshooting rules.

pub mod error;
pub mod expr;
pub mod file;
pub mod input;
mod lexer;
pub mod model;
pub mod signals;
pub mod truth;
pub mod units;
