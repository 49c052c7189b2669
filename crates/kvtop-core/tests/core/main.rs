//! The pure core on real payloads and the troubleshooting rules end to end: parser and alias
//! table on every fixture, the rule file, expressions, evaluation, explanation and coverage.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

mod hostile_payloads;
mod layering;
mod parse_fixtures;
mod rules_coverage;
mod rules_eval;
mod rules_explain;
mod rules_expr;
mod rules_expr_model;
mod rules_file;
mod rules_health_routing;
mod signal_catalog;
