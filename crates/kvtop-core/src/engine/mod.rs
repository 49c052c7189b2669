//! PURE. Vendor metric names (vLLM V0 and V1 through 0.33, SGLang, DCGM) mapped onto one typed
//! sample per engine. A signal an engine does not export stays `None` ("unknown"), never 0.

pub mod alias;
mod cache_info;
pub mod dcgm;
mod limits;
pub mod sample;
mod series;

pub use alias::{TooManyEngines, extract_engines, extract_engines_within};
pub use cache_info::keep_agreed as keep_agreed_cache_fields;
pub use cache_info::typed as cache_config_from_fields;
pub use dcgm::{GpuSample, extract_gpus};
pub use limits::PayloadLimits;
pub use sample::{CacheConfig, CacheFields, EngineFlavor, EngineId, EngineSample, Histogram};
