//! THE table. Every metric kvtop reads from an engine and every signal it derives from them is
//! written here once; the direct-scrape routes (`engine::alias`), the Prometheus queries
//! (`signals::promql`), the rule signals (`rules::signals`) and the per-engine history are
//! built from or checked against it. A vLLM rename is one more [`VendorName`] line.
//!
//! Two tables:
//! - [`METRICS`]: vendor-neutral metrics, each with its vendor names in order of precedence
//!   (the first a vendor exports wins; vLLM names also under Ray Serve's `ray_vllm:` prefix),
//!   its kind, and the engine generation each name proves. [`EVIDENCE`] lists names read only
//!   for that proof.
//! - [`SIGNALS`]: what the console shows and rules read, each with its derivation from the
//!   metrics (raw, rate, ratio, quantile), unit, description, whether the per-engine history
//!   keeps it, and its fleet-table column.

use super::model::{
    Derivation, Generation, Kind, MetricDef, MetricId, Precedence, Selector, Signal, SignalDef,
    Vendor, VendorName,
};
use super::unit::Unit;
use super::values::Signals;

const fn vllm(name: &'static str, proves: Option<Generation>) -> VendorName {
    VendorName {
        vendor: Vendor::Vllm,
        name,
        proves,
    }
}

const fn sglang(name: &'static str) -> VendorName {
    VendorName {
        vendor: Vendor::SGLang,
        name,
        proves: None,
    }
}

const fn process(name: &'static str) -> VendorName {
    VendorName {
        vendor: Vendor::Process,
        name,
        proves: None,
    }
}

const V0: Option<Generation> = Some(Generation::V0);
const V1: Option<Generation> = Some(Generation::V1);

const fn metric(
    id: MetricId,
    kind: Kind,
    names: &'static [VendorName],
    description: &'static str,
) -> MetricDef {
    MetricDef {
        id,
        kind,
        names,
        precedence: Precedence::PerMetric,
        description,
    }
}

const fn paired(
    id: MetricId,
    with: MetricId,
    names: &'static [VendorName],
    description: &'static str,
) -> MetricDef {
    MetricDef {
        id,
        kind: Kind::Counter,
        names,
        precedence: Precedence::PairedWith(with),
        description,
    }
}

use Kind::{Counter, Gauge, Histogram, Info};
use MetricId as M;

/// Every metric read, in [`MetricId`] order. Names are given without the vendor prefix;
/// histograms by their base name (`_bucket`, `_sum`, `_count` follow).
pub static METRICS: [MetricDef; MetricId::COUNT] = [
    metric(
        M::KvUsage,
        Gauge,
        &[
            vllm("kv_cache_usage_perc", V1),
            // V0's name, still exported next to the new one by V1 releases up to 0.11.
            vllm("gpu_cache_usage_perc", V0),
            sglang("token_usage"),
        ],
        "share of the KV cache in use, 0..1",
    ),
    metric(
        M::Running,
        Gauge,
        &[
            vllm("num_requests_running", None),
            sglang("num_running_reqs"),
        ],
        "requests in the running batch",
    ),
    metric(
        M::Waiting,
        Gauge,
        &[vllm("num_requests_waiting", None), sglang("num_queue_reqs")],
        "requests waiting in the queue",
    ),
    metric(
        M::Swapped,
        Gauge,
        &[vllm("num_requests_swapped", V0)],
        "requests swapped to CPU memory",
    ),
    metric(
        M::PrefixHitRate,
        Gauge,
        &[
            vllm("gpu_prefix_cache_hit_rate", V0),
            sglang("cache_hit_rate"),
        ],
        "prefix-cache hit rate as computed by the engine, 0..1",
    ),
    metric(
        M::SpecAcceptanceRate,
        Gauge,
        &[vllm("spec_decode_draft_acceptance_rate", V0)],
        "speculative decoding acceptance rate as computed by the engine, 0..1",
    ),
    metric(
        M::Preemptions,
        Counter,
        &[vllm("num_preemptions_total", None)],
        "requests preempted",
    ),
    metric(
        M::PromptTokens,
        Counter,
        &[
            vllm("prompt_tokens_total", None),
            sglang("prompt_tokens_total"),
        ],
        "prompt (prefill) tokens processed",
    ),
    metric(
        M::GenerationTokens,
        Counter,
        &[
            vllm("generation_tokens_total", None),
            sglang("generation_tokens_total"),
        ],
        "tokens generated",
    ),
    // The prefix-cache pair is taken from one generation of names, never mixed: V1 counts
    // tokens, the older `gpu_` pair counted blocks.
    paired(
        M::PrefixQueries,
        M::PrefixHits,
        &[
            vllm("prefix_cache_queries_total", V1),
            vllm("gpu_prefix_cache_queries_total", V1),
        ],
        "prefix-cache lookups",
    ),
    paired(
        M::PrefixHits,
        M::PrefixQueries,
        &[
            vllm("prefix_cache_hits_total", V1),
            vllm("gpu_prefix_cache_hits_total", V1),
        ],
        "prefix-cache hits",
    ),
    // No signal derives from it (so Prometheus is not asked for it): it is kept in the sample
    // and proves V1.
    metric(
        M::SpecDrafts,
        Counter,
        &[vllm("spec_decode_num_drafts_total", V1)],
        "speculative drafts proposed",
    ),
    metric(
        M::SpecDraftTokens,
        Counter,
        &[vllm("spec_decode_num_draft_tokens_total", None)],
        "speculative draft tokens proposed",
    ),
    metric(
        M::SpecAcceptedTokens,
        Counter,
        &[vllm("spec_decode_num_accepted_tokens_total", None)],
        "speculative draft tokens accepted",
    ),
    metric(
        M::RequestSuccess,
        Counter,
        &[vllm("request_success_total", None)],
        "finished requests, by `finished_reason`",
    ),
    metric(
        M::ProcessCpu,
        Counter,
        &[process("process_cpu_seconds_total")],
        "CPU seconds of the serving process (one per target, shared by its engines)",
    ),
    metric(
        M::Ttft,
        Histogram,
        &[
            vllm("time_to_first_token_seconds", None),
            sglang("time_to_first_token_seconds"),
        ],
        "time to first token, seconds",
    ),
    metric(
        M::Itl,
        Histogram,
        &[
            vllm("inter_token_latency_seconds", V1),
            // Renamed in V1; the old name stays exported beside it for a while.
            vllm("time_per_output_token_seconds", V0),
            sglang("inter_token_latency_seconds"),
        ],
        "time between output tokens, seconds",
    ),
    metric(
        M::E2e,
        Histogram,
        &[
            vllm("e2e_request_latency_seconds", None),
            sglang("e2e_request_latency_seconds"),
        ],
        "request duration end to end, seconds",
    ),
    metric(
        M::QueueTime,
        Histogram,
        &[vllm("request_queue_time_seconds", None)],
        "time spent queued, seconds",
    ),
    metric(
        M::CacheConfig,
        Info,
        &[vllm("cache_config_info", None)],
        "KV-cache configuration, in the labels",
    ),
];

/// Names read only because they prove an engine generation (see `signals::flavor`).
pub const EVIDENCE: &[VendorName] = &[
    // A breakdown of `num_requests_waiting` (0.33), never added to it.
    vllm("num_requests_waiting_by_reason", V1),
    vllm("cpu_cache_usage_perc", V0),
    vllm("cpu_prefix_cache_hit_rate", V0),
    vllm("avg_prompt_throughput_toks_per_s", V0),
    vllm("avg_generation_throughput_toks_per_s", V0),
    vllm("spec_decode_efficiency", V0),
];

/// `finished_reason` values of `request_success_total` that count as failed requests.
pub const FAILED_REASONS: &[&str] = &["abort", "error"];

/// Label of `request_success_total` carrying the reason.
pub const FINISHED_REASON_LABEL: &str = "finished_reason";

/// A signal until its field in [`Signals`] is named.
struct Draft {
    id: Signal,
    name: &'static str,
    query: &'static str,
    derivation: Derivation,
    unit: Unit,
    description: &'static str,
    history: bool,
    column: Option<&'static str>,
}

const fn signal(
    id: Signal,
    name: &'static str,
    query: &'static str,
    derivation: Derivation,
    unit: Unit,
    description: &'static str,
) -> Draft {
    Draft {
        id,
        name,
        query,
        derivation,
        unit,
        description,
        history: false,
        column: None,
    }
}

impl Draft {
    /// The per-engine history keeps it (see `fleet::Series`).
    const fn kept(self) -> Self {
        Draft {
            history: true,
            ..self
        }
    }

    /// The fleet table shows it under `header`.
    const fn column(self, header: &'static str) -> Self {
        Draft {
            column: Some(header),
            ..self
        }
    }

    const fn at(
        self,
        get: fn(&Signals) -> Option<f64>,
        field: fn(&mut Signals) -> &mut Option<f64>,
    ) -> SignalDef {
        SignalDef {
            id: self.id,
            name: self.name,
            query: self.query,
            derivation: self.derivation,
            unit: self.unit,
            description: self.description,
            history: self.history,
            column: self.column,
            get,
            field,
        }
    }
}

const fn all(metric: MetricId) -> Selector {
    Selector {
        metric,
        reasons: None,
    }
}

use Derivation::{Quantile, Rate, Ratio, Raw, RawByName};
use Unit::{Cores, Count, PerSecond, Seconds, Tokens, TokensPerSecond};

/// Every derived signal, in [`Signal`] order (also the order `kvtop rules signals` lists them).
pub static SIGNALS: [SignalDef; Signal::COUNT] = SIGNAL_TABLE;

/// [`SIGNALS`] for constant contexts (the rule signals are built from it).
pub(crate) const SIGNAL_TABLE: [SignalDef; Signal::COUNT] = [
    // Raw series, not summed: their names tell the engine's flavor; several series of one
    // engine (one per API-server `pid`) combine by their maximum.
    signal(
        Signal::KvUsage,
        "kv_usage",
        "kv_usage",
        RawByName(M::KvUsage),
        Unit::Ratio,
        "KV-cache usage",
    )
    .kept()
    .column("KV")
    .at(|s| s.kv_usage, |s| &mut s.kv_usage),
    signal(
        Signal::Running,
        "running",
        "running",
        Raw(M::Running),
        Count,
        "requests running (batch size)",
    )
    .kept()
    .column("RUN")
    .at(|s| s.running, |s| &mut s.running),
    signal(
        Signal::Waiting,
        "waiting",
        "waiting",
        Raw(M::Waiting),
        Count,
        "requests waiting in the queue",
    )
    .kept()
    .column("WAIT")
    .at(|s| s.waiting, |s| &mut s.waiting),
    signal(
        Signal::Swapped,
        "swapped",
        "swapped",
        Raw(M::Swapped),
        Count,
        "requests swapped to CPU (vLLM V0)",
    )
    .at(|s| s.swapped, |s| &mut s.swapped),
    signal(
        Signal::PreemptionsPerS,
        "preemptions_per_s",
        "preemptions",
        Rate(M::Preemptions),
        PerSecond,
        "preemptions per second over the window",
    )
    .kept()
    .column("PRE/M")
    .at(|s| s.preemptions_per_s, |s| &mut s.preemptions_per_s),
    signal(
        Signal::GenTps,
        "gen_tps",
        "gen_tps",
        Rate(M::GenerationTokens),
        TokensPerSecond,
        "generation tokens per second",
    )
    .kept()
    .column("TOK/S")
    .at(|s| s.gen_tps, |s| &mut s.gen_tps),
    signal(
        Signal::PromptTps,
        "prompt_tps",
        "prompt_tps",
        Rate(M::PromptTokens),
        TokensPerSecond,
        "prompt (prefill) tokens per second",
    )
    .kept()
    .at(|s| s.prompt_tps, |s| &mut s.prompt_tps),
    signal(
        Signal::RequestsPerS,
        "requests_per_s",
        "requests",
        Rate(M::RequestSuccess),
        PerSecond,
        "finished requests per second",
    )
    .kept()
    .at(|s| s.requests_per_s, |s| &mut s.requests_per_s),
    signal(
        Signal::PrefixHit,
        "prefix_hit",
        "prefix_hit",
        Ratio {
            numerator: all(M::PrefixHits),
            denominator: all(M::PrefixQueries),
            fallback: Some(M::PrefixHitRate),
        },
        Unit::Ratio,
        "prefix-cache hit ratio over the window",
    )
    .kept()
    .column("HIT%")
    .at(|s| s.prefix_hit, |s| &mut s.prefix_hit),
    signal(
        Signal::TtftP50,
        "ttft_p50",
        "ttft",
        Quantile(M::Ttft, "0.5"),
        Seconds,
        "time to first token, p50 over the window",
    )
    .kept()
    .at(|s| s.ttft_p50, |s| &mut s.ttft_p50),
    signal(
        Signal::TtftP95,
        "ttft_p95",
        "ttft",
        Quantile(M::Ttft, "0.95"),
        Seconds,
        "time to first token, p95 over the window",
    )
    .kept()
    .column("TTFT95")
    .at(|s| s.ttft_p95, |s| &mut s.ttft_p95),
    signal(
        Signal::TtftP99,
        "ttft_p99",
        "ttft",
        Quantile(M::Ttft, "0.99"),
        Seconds,
        "time to first token, p99 over the window",
    )
    .kept()
    .at(|s| s.ttft_p99, |s| &mut s.ttft_p99),
    signal(
        Signal::ItlP50,
        "itl_p50",
        "itl",
        Quantile(M::Itl, "0.5"),
        Seconds,
        "inter-token latency, p50 over the window",
    )
    .kept()
    .at(|s| s.itl_p50, |s| &mut s.itl_p50),
    signal(
        Signal::ItlP95,
        "itl_p95",
        "itl",
        Quantile(M::Itl, "0.95"),
        Seconds,
        "inter-token latency, p95 over the window",
    )
    .kept()
    .column("ITL95")
    .at(|s| s.itl_p95, |s| &mut s.itl_p95),
    signal(
        Signal::ItlP99,
        "itl_p99",
        "itl",
        Quantile(M::Itl, "0.99"),
        Seconds,
        "inter-token latency, p99 over the window",
    )
    .kept()
    .at(|s| s.itl_p99, |s| &mut s.itl_p99),
    signal(
        Signal::E2eP95,
        "e2e_p95",
        "e2e",
        Quantile(M::E2e, "0.95"),
        Seconds,
        "request duration end to end, p95",
    )
    .at(|s| s.e2e_p95, |s| &mut s.e2e_p95),
    signal(
        Signal::E2eP99,
        "e2e_p99",
        "e2e",
        Quantile(M::E2e, "0.99"),
        Seconds,
        "request duration end to end, p99",
    )
    .at(|s| s.e2e_p99, |s| &mut s.e2e_p99),
    signal(
        Signal::QueueP95,
        "queue_p95",
        "queue",
        Quantile(M::QueueTime, "0.95"),
        Seconds,
        "time spent queued, p95",
    )
    .at(|s| s.queue_p95, |s| &mut s.queue_p95),
    signal(
        Signal::SpecAcceptance,
        "spec_acceptance",
        "spec_acceptance",
        Ratio {
            numerator: all(M::SpecAcceptedTokens),
            denominator: all(M::SpecDraftTokens),
            fallback: Some(M::SpecAcceptanceRate),
        },
        Unit::Ratio,
        "speculative decoding acceptance rate",
    )
    .at(|s| s.spec_acceptance, |s| &mut s.spec_acceptance),
    signal(
        Signal::CpuCores,
        "cpu_cores",
        "cpu",
        Rate(M::ProcessCpu),
        Cores,
        "CPU cores used by the serving process",
    )
    .at(|s| s.cpu_cores, |s| &mut s.cpu_cores),
    signal(
        Signal::ErrorRatio,
        "error_ratio",
        "error_ratio",
        Ratio {
            numerator: Selector {
                metric: M::RequestSuccess,
                reasons: Some(FAILED_REASONS),
            },
            denominator: all(M::RequestSuccess),
            fallback: None,
        },
        Unit::Ratio,
        "aborted or failed share of finished requests",
    )
    .at(|s| s.error_ratio, |s| &mut s.error_ratio),
    signal(
        Signal::KvCapacityTokens,
        "kv_capacity_tokens",
        "cache_config",
        Derivation::Capacity(M::CacheConfig),
        Tokens,
        "KV capacity, tokens (blocks × block size)",
    )
    .at(|s| s.kv_capacity_tokens, |s| &mut s.kv_capacity_tokens),
];
