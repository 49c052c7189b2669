//! PURE. The PromQL of a cycle is generated from the signal catalog in core
//! (`kvtop_core::signals::promql`); this module only re-exports it where the Prometheus source
//! has always found it.

pub use kvtop_core::signals::promql::{
    LabelMap, QUANTILE_LABEL, QueryPlan, QuerySpec, Shape, range_selector,
};
