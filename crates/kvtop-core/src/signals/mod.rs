//! PURE. The signal catalog: every engine metric kvtop reads and every signal it derives,
//! defined once in [`catalog`]. Built from it: the direct-scrape routes ([`routes`], used by
//! `engine::alias`), the Prometheus queries ([`promql`]), the engine-flavor decision
//! ([`flavor`]), and the metric signals of the rules (`rules::signals`).

mod catalog;
pub mod flavor;
mod model;
pub mod promql;
pub mod routes;
pub mod unit;
mod values;

pub(crate) use catalog::SIGNAL_TABLE;
pub use catalog::{
    EVIDENCE, FAILED_REASONS, FINISHED_REASON_LABEL, HTTP_STATUS_LABEL, METRICS, SIGNALS,
    quantile_stand_in, selector_label,
};
pub use flavor::{EngineFlavor, FlavorEvidence};
pub use model::{
    Derivation, Generation, Kind, MetricDef, MetricId, Precedence, Selector, Signal, SignalDef,
    Vendor, VendorName,
};
pub use unit::Unit;
pub use values::{QuantileWindow, Signals};

/// The catalog entry of a metric.
pub fn metric(id: MetricId) -> &'static MetricDef {
    // `METRICS` has one entry per `MetricId`, in its order (checked by a test).
    &METRICS[id as usize]
}

/// The catalog entry of a signal.
pub fn signal(id: Signal) -> &'static SignalDef {
    // `SIGNALS` has one entry per `Signal`, in its order (checked by a test).
    &SIGNALS[id as usize]
}

/// The signal rules call `name`.
pub fn signal_named(name: &str) -> Option<&'static SignalDef> {
    SIGNALS.iter().find(|def| def.name == name)
}
