//! PURE. Troubleshooting rules.

pub mod expr;
pub mod input;
mod lexer;
pub mod signals;
pub mod truth;
pub mod units;
