//! PURE. The knobs of one simulated engine: its KV cache and scheduler limits, the cost of an
//! engine step, and the traffic it receives. Defaults describe an 8B-class model on one
//! 80 GB GPU under moderate chat traffic.

use super::buckets::SimVersion;

/// Cost model of one engine step (one forward pass over the running batch), and the CPU the
/// serving process burns. A step takes
/// `step_overhead_s + per_sequence_s × decoding + per_prefill_token_s × prefill_chunk +
/// per_kv_token_s × kv_tokens_held`, so latency rises with batch size and KV occupancy.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfProfile {
    /// Fixed cost of a step (kernel launches, sampling, scheduling).
    pub step_overhead_s: f64,
    /// Cost per decoding sequence in the batch.
    pub per_sequence_s: f64,
    /// Cost per prompt token computed in a step.
    pub per_prefill_token_s: f64,
    /// Attention cost per token held in the KV cache.
    pub per_kv_token_s: f64,
    /// CPU seconds per second of the serving process when idle.
    pub idle_cpu: f64,
    /// Additional CPU seconds per second while steps are running.
    pub busy_cpu: f64,
    /// GPU utilisation of a busy step with a nearly empty batch (0..1).
    pub util_floor: f64,
    /// Tokens per step at which a busy step keeps the GPU fully utilised.
    pub saturating_step_tokens: f64,
}

impl Default for PerfProfile {
    fn default() -> Self {
        Self {
            step_overhead_s: 0.008,
            per_sequence_s: 0.000_06,
            per_prefill_token_s: 0.000_025,
            per_kv_token_s: 0.000_000_02,
            idle_cpu: 0.02,
            // The API server and scheduler stay under one core while the GPU is busy (the
            // `cpu-high` rule fires above one).
            busy_cpu: 0.8,
            util_floor: 0.4,
            saturating_step_tokens: 512.0,
        }
    }
}

/// The requests an engine receives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrafficProfile {
    /// Mean arrivals per second (a Poisson process).
    pub arrival_rate: f64,
    /// Prompt length in tokens: lognormal median and shape.
    pub prompt_median: f64,
    pub prompt_sigma: f64,
    /// Natural output length in tokens (before `max_tokens` cuts it): lognormal median and shape.
    pub output_median: f64,
    pub output_sigma: f64,
    /// The `max_tokens` sampling parameter clients send; longer outputs finish with `length`.
    pub max_tokens: u32,
    /// Mean share of prompt tokens found in the prefix cache (0..1).
    pub prefix_hit_ratio: f64,
    /// Share of requests the client cancels part-way through generation (0..1).
    pub abort_share: f64,
    /// Seconds a client waits in the queue before giving up (counted as `abort`).
    pub client_timeout_s: f64,
    /// Queue length beyond which new arrivals are turned away (counted as `abort`).
    pub max_waiting: usize,
    /// Most requests the clients keep in flight (running + waiting): a fixed pool of clients
    /// (a benchmark's concurrency, agents waiting for their answer) sends nothing more until
    /// one of its requests finishes. `usize::MAX` = open arrivals.
    pub max_in_flight: usize,
}

impl Default for TrafficProfile {
    fn default() -> Self {
        Self {
            arrival_rate: 8.0,
            prompt_median: 800.0,
            prompt_sigma: 0.9,
            output_median: 250.0,
            output_sigma: 0.8,
            max_tokens: 2048,
            prefix_hit_ratio: 0.4,
            // Well under the 1 % error-ratio threshold of the dashboards, even in a minute's
            // window of a few hundred requests.
            abort_share: 0.002,
            client_timeout_s: 300.0,
            max_waiting: 5_000,
            max_in_flight: usize::MAX,
        }
    }
}

/// Resource figures of the serving process (the `process_*` metrics).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessProfile {
    /// Resident memory with no requests in flight, bytes.
    pub base_rss_bytes: f64,
    /// Resident memory per request held (queued or running), bytes.
    pub rss_per_request_bytes: f64,
    /// Virtual memory beyond resident (CUDA mappings), bytes.
    pub virtual_extra_bytes: f64,
    /// Open file descriptors with no requests in flight (each request adds its socket).
    pub base_open_fds: u64,
    /// File descriptor limit.
    pub max_fds: u64,
}

impl Default for ProcessProfile {
    fn default() -> Self {
        Self {
            base_rss_bytes: 2.1e9,
            rss_per_request_bytes: 48e3,
            virtual_extra_bytes: 36e9,
            base_open_fds: 57,
            max_fds: 1_048_576,
        }
    }
}

/// Speculative decoding: a draft proposes `num_speculative_tokens` tokens per step and the
/// target model accepts each with probability `acceptance`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecDecode {
    pub num_speculative_tokens: u32,
    /// Share of draft tokens accepted (0..1).
    pub acceptance: f64,
}

impl SpecDecode {
    /// Tokens one draft step emits on average: the accepted ones plus the target's own.
    pub(crate) fn tokens_per_draft(&self) -> f64 {
        1.0 + f64::from(self.num_speculative_tokens) * self.acceptance.clamp(0.0, 1.0)
    }
}

/// Everything that defines one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineParams {
    /// Metrics dialect; selects the histogram buckets.
    pub version: SimVersion,
    /// KV cache size in blocks.
    pub num_gpu_blocks: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// Most requests in the running batch (`--max-num-seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one step (`--max-num-batched-tokens`, chunked prefill).
    pub max_num_batched_tokens: u32,
    /// Longest prompt + output (`--max-model-len`).
    pub max_model_len: u32,
    /// `--gpu-memory-utilization`, reported in `cache_config_info`.
    pub gpu_memory_utilization: f64,
    /// KV blocks kept free when admitting (a share of `num_gpu_blocks`).
    pub admission_watermark: f64,
    /// Share of `num_gpu_blocks` the allocator can actually hand out (below 1 for a fragmented
    /// cache): admission and preemption work against this many blocks, usage is still
    /// reported against all of them.
    pub usable_kv_share: f64,
    /// True while the engine hangs (an NCCL collective that never returns): no step
    /// completes, so running requests make no progress and the queue grows.
    pub stalled: bool,
    /// Speculative decoding, when enabled.
    pub spec_decode: Option<SpecDecode>,
    pub perf: PerfProfile,
    pub traffic: TrafficProfile,
    pub process: ProcessProfile,
}

impl Default for EngineParams {
    fn default() -> Self {
        Self {
            version: SimVersion::V1,
            num_gpu_blocks: 27_000,
            block_size: 16,
            max_num_seqs: 256,
            max_num_batched_tokens: 2048,
            max_model_len: 32_768,
            gpu_memory_utilization: 0.9,
            admission_watermark: 0.0,
            usable_kv_share: 1.0,
            stalled: false,
            spec_decode: None,
            perf: PerfProfile::default(),
            traffic: TrafficProfile::default(),
            process: ProcessProfile::default(),
        }
    }
}

impl EngineParams {
    /// KV capacity in tokens.
    pub fn kv_capacity_tokens(&self) -> u64 {
        u64::from(self.num_gpu_blocks) * u64::from(self.block_size)
    }

    /// Blocks the allocator can hand out (see [`EngineParams::usable_kv_share`]).
    pub(crate) fn usable_blocks(&self) -> u64 {
        let share = if self.usable_kv_share.is_finite() {
            self.usable_kv_share.clamp(0.0, 1.0)
        } else {
            1.0
        };
        (f64::from(self.num_gpu_blocks) * share).floor() as u64
    }
}
