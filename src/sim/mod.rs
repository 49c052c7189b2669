//! The simulated fleet: vLLM engines and DCGM exporters served over real HTTP on 127.0.0.1.

pub mod buckets;
pub mod dcgm;
pub mod exposition;
pub mod fleet;
pub mod format;
pub mod gpu;
pub mod histogram;
pub mod model;
pub mod params;
pub mod pod;
pub mod sampling;

pub use buckets::SimVersion;
