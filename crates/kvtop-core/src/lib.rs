//! kvtop's pure core: data and time in, data out.
//!
//! Nothing here does I/O: the crate's dependency tree holds no tokio, reqwest, kube client,
//! crossterm or ratatui, so the compiler keeps it pure. The app (`kvtop`) feeds it scrapes,
//! Prometheus answers and Kubernetes objects; the simulator (`kvtop-sim`) renders its metrics
//! with the same names.
//!
//! - [`metrics`]: the exposition-format parser, histogram quantiles, counter rates.
//! - [`engine`]: one engine's sample, decoded from vendor metric names.
//! - [`fleet`]: every engine's state, rate windows and history; staleness; model aggregates.
//! - [`signals`]: the signal catalog: every engine metric and derived signal, defined once; the
//!   direct-scrape routes and the PromQL are built from it.
//! - [`rules`]: the troubleshooting rules as data, their expressions and evaluation.
//! - [`kube_model`]: pods and workloads as kvtop sees them, from k8s-openapi types.
//! - [`recording`]: the bytes of a recording of what the console ingested (`--record`).
//! - [`actions`]: plans and guards for the Kubernetes actions.
//! - [`clock`], [`units`], [`format`]: time stamps, durations and sizes, and how numbers read.
//! - [`toml_location`]: line, column and key path of a place in a TOML document.

pub mod actions;
pub mod clock;
pub mod engine;
pub mod fleet;
pub mod format;
pub mod kube_model;
pub mod metrics;
pub mod recording;
pub mod rules;
pub mod safe_text;
pub mod signals;
pub mod story;
pub mod toml_location;
pub mod units;
