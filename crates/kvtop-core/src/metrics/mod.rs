//! PURE. Prometheus / OpenMetrics text exposition parsing, histogram math and counter arithmetic.
//!
//! Nothing here touches I/O, clocks or the terminal: callers pass bytes and timestamps in and get data back.

pub mod counter;
pub mod gzip;
pub mod histogram;
pub(crate) mod number;
pub mod parser;
mod scan;

pub use counter::{CounterDelta, counter_delta};
pub use histogram::{Bucket, histogram_quantile, histogram_quantiles, merge_into, merged_quantile};
pub use parser::{Exposition, LabelIter, LineError, MetricType, Sample, parse};
