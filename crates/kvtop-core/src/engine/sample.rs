//! The typed, vendor-neutral reading of one engine at one scrape.

use crate::metrics::Bucket;

pub use crate::signals::EngineFlavor;

/// Identity of one engine inside one scrape target: a target may export several models, and a
/// V1 data-parallel deployment exports several `engine` indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EngineId {
    /// `model_name` label (empty when the exporter has none).
    pub model: String,
    /// V1 `engine` label (empty when absent).
    pub engine: String,
}

/// A cumulative histogram: buckets sorted by `le`, the last one `+Inf` when the exporter sent it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
    pub sum: Option<f64>,
    pub count: Option<f64>,
}

/// `vllm:cache_config_info` labels that matter to an operator.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheConfig {
    pub block_size: Option<u64>,
    pub num_gpu_blocks: Option<u64>,
    pub num_cpu_blocks: Option<u64>,
    pub gpu_memory_utilization: Option<f64>,
    pub enable_prefix_caching: Option<bool>,
    pub cache_dtype: Option<String>,
    /// Every label as exported, for the detail view and config rules.
    pub fields: Vec<(String, String)>,
}

impl CacheConfig {
    /// KV capacity in tokens = num_gpu_blocks × block_size, when both are known.
    pub fn kv_capacity_tokens(&self) -> Option<u64> {
        self.num_gpu_blocks?.checked_mul(self.block_size?)
    }
}

/// Everything one scrape says about one engine. Counters are raw cumulative values; rates and
/// windowed quantiles are derived later by the fleet state from successive samples.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EngineSample {
    pub id: EngineId,
    pub flavor: EngineFlavor,
    // Gauges.
    pub kv_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// V0 only.
    pub swapped: Option<f64>,
    /// V0 gauge `gpu_prefix_cache_hit_rate` (0..1).
    pub prefix_hit_rate_gauge: Option<f64>,
    /// V0 gauge `spec_decode_draft_acceptance_rate` (0..1).
    pub spec_acceptance_gauge: Option<f64>,
    // Counters (cumulative).
    pub preemptions_total: Option<f64>,
    pub prompt_tokens_total: Option<f64>,
    pub generation_tokens_total: Option<f64>,
    pub prefix_queries_total: Option<f64>,
    pub prefix_hits_total: Option<f64>,
    /// `request_success_total` by `finished_reason` (stop, length, abort, error, repetition).
    pub request_success_total: Vec<(String, f64)>,
    pub spec_drafts_total: Option<f64>,
    pub spec_draft_tokens_total: Option<f64>,
    pub spec_accepted_tokens_total: Option<f64>,
    /// `process_cpu_seconds_total` of the serving process (shared by all engines of a target).
    pub process_cpu_seconds_total: Option<f64>,
    /// `http_requests_total` of the API server by `status` (`2xx`, or a code), summed over
    /// handlers and methods; shared by all engines of a target.
    pub http_requests_total: Vec<(String, f64)>,
    // Histograms (cumulative).
    pub ttft: Option<Histogram>,
    pub itl: Option<Histogram>,
    pub e2e: Option<Histogram>,
    pub queue_time: Option<Histogram>,
    pub tpot: Option<Histogram>,
    pub prefill_time: Option<Histogram>,
    pub decode_time: Option<Histogram>,
    pub cache_config: Option<CacheConfig>,
}

impl EngineSample {
    /// Total finished requests over every `finished_reason`, if the counter is exported.
    pub fn requests_finished_total(&self) -> Option<f64> {
        if self.request_success_total.is_empty() {
            None
        } else {
            Some(self.request_success_total.iter().map(|(_, v)| v).sum())
        }
    }
}
