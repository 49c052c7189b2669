//! Current derived signals of one engine and the quantile window they are computed over.

/// The window windowed quantiles and rates are computed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuantileWindow {
    S15,
    #[default]
    M1,
    M5,
}

impl QuantileWindow {
    pub fn secs(self) -> f64 {
        match self {
            QuantileWindow::S15 => 15.0,
            QuantileWindow::M1 => 60.0,
            QuantileWindow::M5 => 300.0,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            QuantileWindow::S15 => "15s",
            QuantileWindow::M1 => "1m",
            QuantileWindow::M5 => "5m",
        }
    }
    pub fn next(self) -> Self {
        match self {
            QuantileWindow::S15 => QuantileWindow::M1,
            QuantileWindow::M1 => QuantileWindow::M5,
            QuantileWindow::M5 => QuantileWindow::S15,
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "15s" => Some(QuantileWindow::S15),
            "1m" | "60s" => Some(QuantileWindow::M1),
            "5m" | "300s" => Some(QuantileWindow::M5),
            _ => None,
        }
    }
}

/// Derived, current values of one engine. `None` = unknown (not exported, or not enough
/// samples yet to compute a rate or a windowed quantile). Never filled with 0 for "unknown".
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Signals {
    /// KV-cache usage, 0..1.
    pub kv_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub swapped: Option<f64>,
    /// Preemptions per second over the window.
    pub preemptions_per_s: Option<f64>,
    /// Generation tokens per second over the window.
    pub gen_tps: Option<f64>,
    /// Prompt (prefill) tokens per second over the window.
    pub prompt_tps: Option<f64>,
    /// Finished requests per second over the window.
    pub requests_per_s: Option<f64>,
    /// Prefix-cache hit ratio over the window (0..1), from counters or the V0 gauge.
    pub prefix_hit: Option<f64>,
    /// Windowed quantiles, seconds.
    pub ttft_p50: Option<f64>,
    pub ttft_p95: Option<f64>,
    pub ttft_p99: Option<f64>,
    pub itl_p50: Option<f64>,
    pub itl_p95: Option<f64>,
    pub itl_p99: Option<f64>,
    pub e2e_p95: Option<f64>,
    pub e2e_p99: Option<f64>,
    pub queue_p95: Option<f64>,
    /// Speculative decoding acceptance (0..1) over the window.
    pub spec_acceptance: Option<f64>,
    /// CPU cores used by the serving process (rate of process_cpu_seconds_total).
    pub cpu_cores: Option<f64>,
    /// Aborted / errored share of finished requests over the window (0..1).
    pub error_ratio: Option<f64>,
    /// KV capacity in tokens from cache_config_info.
    pub kv_capacity_tokens: Option<f64>,
    /// Mean time per output token of requests (inter-token latency where not exported),
    /// windowed quantiles, seconds.
    pub tpot_p50: Option<f64>,
    pub tpot_p95: Option<f64>,
    pub tpot_p99: Option<f64>,
    /// Time requests spent in prefill, windowed quantiles, seconds.
    pub prefill_p50: Option<f64>,
    pub prefill_p95: Option<f64>,
    pub prefill_p99: Option<f64>,
    /// Time requests spent decoding, windowed quantiles, seconds.
    pub decode_p50: Option<f64>,
    pub decode_p95: Option<f64>,
    pub decode_p99: Option<f64>,
    /// Shares of finished requests per `finished_reason` over the window (0..1).
    pub finished_stop: Option<f64>,
    pub finished_length: Option<f64>,
    pub finished_abort: Option<f64>,
    pub finished_error: Option<f64>,
    pub finished_repetition: Option<f64>,
    /// HTTP requests answered per second by the engine's API server.
    pub http_per_s: Option<f64>,
    /// Shares of those answered 4xx (429 among them) and 5xx (0..1).
    pub http_4xx_ratio: Option<f64>,
    pub http_5xx_ratio: Option<f64>,
    /// Speculative decoding: mean tokens per step (1 + accepted per draft).
    pub spec_accept_length: Option<f64>,
    /// The median request end to end, and the median and p99 time queued, seconds (the
    /// dashboards' other quantiles of those histograms).
    pub e2e_p50: Option<f64>,
    pub queue_p50: Option<f64>,
    pub queue_p99: Option<f64>,
    // GPU signals from DCGM (a dcgm-exporter target or a Prometheus source), over the GPUs
    // joined to the engine's pod: each is the highest value among them (see `fleet::gpus`).
    /// GPU utilization, 0..1.
    pub gpu_util: Option<f64>,
    /// GPU framebuffer in use, 0..1 of the total (used + free + reserved).
    pub gpu_mem: Option<f64>,
    /// GPU temperature, °C.
    pub gpu_temp: Option<f64>,
    /// GPU power draw, W.
    pub gpu_power: Option<f64>,
    /// Last XID error code (0 = none).
    pub xid: Option<f64>,
}
