//! PURE. Troubleshooting rules.

pub mod error;
pub mod eval;
pub mod expr;
pub mod file;
pub mod finding;
pub mod health;
pub mod input;
mod lexer;
pub mod model;
pub mod signals;
pub mod truth;
pub mod units;
