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
    // Also proves V1.
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
        // SGLang's count has no reason: its rate is the request throughput, its shares
        // unknown.
        &[
            vllm("request_success_total", None),
            sglang("num_requests_total"),
        ],
        "finished requests, by `finished_reason` (SGLang: requests processed)",
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
        M::Tpot,
        Histogram,
        &[vllm("request_time_per_output_token_seconds", None)],
        "mean time per output token of each request, seconds",
    ),
    metric(
        M::PrefillTime,
        Histogram,
        &[vllm("request_prefill_time_seconds", None)],
        "time a request spent in prefill, seconds",
    ),
    metric(
        M::DecodeTime,
        Histogram,
        &[vllm("request_decode_time_seconds", None)],
        "time a request spent decoding, seconds",
    ),
    metric(
        M::HttpRequests,
        Counter,
        &[process("http_requests_total")],
        "HTTP requests of the API server, by `status` (one per target, shared by its engines)",
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

/// Label of `http_requests_total` carrying the status: a class (`2xx`) as vLLM's
/// instrumentator groups it by default, or the code itself.
pub const HTTP_STATUS_LABEL: &str = "status";

/// The label a [`Selector`] of `metric` selects on.
pub const fn selector_label(metric: MetricId) -> &'static str {
    match metric {
        MetricId::HttpRequests => HTTP_STATUS_LABEL,
        _ => FINISHED_REASON_LABEL,
    }
}

/// The histogram a quantile signal is read from when the engine does not export its own:
/// TPOT from inter-token latency (vLLM before 0.11 has no per-request TPOT).
pub const fn quantile_stand_in(histogram: MetricId) -> Option<MetricId> {
    match histogram {
        MetricId::Tpot => Some(MetricId::Itl),
        _ => None,
    }
}

const fn reason(metric: MetricId, patterns: &'static [&'static str]) -> Selector {
    Selector {
        metric,
        reasons: Some(patterns),
    }
}

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
    .column("IN/S")
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
    .column("REQ/S")
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
    .column("E2E95")
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
    .column("QUE95")
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
    .column("SPEC%")
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
    signal(
        Signal::TpotP50,
        "tpot_p50",
        "tpot",
        Quantile(M::Tpot, "0.5"),
        Seconds,
        "time per output token of requests, p50 (inter-token latency where not exported)",
    )
    .at(|s| s.tpot_p50, |s| &mut s.tpot_p50),
    signal(
        Signal::TpotP95,
        "tpot_p95",
        "tpot",
        Quantile(M::Tpot, "0.95"),
        Seconds,
        "time per output token of requests, p95 (inter-token latency where not exported)",
    )
    .column("TPOT95")
    .at(|s| s.tpot_p95, |s| &mut s.tpot_p95),
    signal(
        Signal::TpotP99,
        "tpot_p99",
        "tpot",
        Quantile(M::Tpot, "0.99"),
        Seconds,
        "time per output token of requests, p99 (inter-token latency where not exported)",
    )
    .at(|s| s.tpot_p99, |s| &mut s.tpot_p99),
    signal(
        Signal::PrefillP50,
        "prefill_p50",
        "prefill",
        Quantile(M::PrefillTime, "0.5"),
        Seconds,
        "time requests spent in prefill, p50",
    )
    .at(|s| s.prefill_p50, |s| &mut s.prefill_p50),
    signal(
        Signal::PrefillP95,
        "prefill_p95",
        "prefill",
        Quantile(M::PrefillTime, "0.95"),
        Seconds,
        "time requests spent in prefill, p95",
    )
    .column("PREF95")
    .at(|s| s.prefill_p95, |s| &mut s.prefill_p95),
    signal(
        Signal::PrefillP99,
        "prefill_p99",
        "prefill",
        Quantile(M::PrefillTime, "0.99"),
        Seconds,
        "time requests spent in prefill, p99",
    )
    .at(|s| s.prefill_p99, |s| &mut s.prefill_p99),
    signal(
        Signal::DecodeP50,
        "decode_p50",
        "decode",
        Quantile(M::DecodeTime, "0.5"),
        Seconds,
        "time requests spent decoding, p50",
    )
    .at(|s| s.decode_p50, |s| &mut s.decode_p50),
    signal(
        Signal::DecodeP95,
        "decode_p95",
        "decode",
        Quantile(M::DecodeTime, "0.95"),
        Seconds,
        "time requests spent decoding, p95",
    )
    .column("DEC95")
    .at(|s| s.decode_p95, |s| &mut s.decode_p95),
    signal(
        Signal::DecodeP99,
        "decode_p99",
        "decode",
        Quantile(M::DecodeTime, "0.99"),
        Seconds,
        "time requests spent decoding, p99",
    )
    .at(|s| s.decode_p99, |s| &mut s.decode_p99),
    signal(
        Signal::FinishedStop,
        "finished_stop",
        "finished_stop",
        share_of_finished(&["stop"]),
        Unit::Ratio,
        "share of finished requests that stopped (EOS or stop string)",
    )
    .column("STOP%")
    .at(|s| s.finished_stop, |s| &mut s.finished_stop),
    signal(
        Signal::FinishedLength,
        "finished_length",
        "finished_length",
        share_of_finished(&["length"]),
        Unit::Ratio,
        "share of finished requests cut at max tokens",
    )
    .column("LEN%")
    .at(|s| s.finished_length, |s| &mut s.finished_length),
    signal(
        Signal::FinishedAbort,
        "finished_abort",
        "finished_abort",
        share_of_finished(&["abort"]),
        Unit::Ratio,
        "share of finished requests aborted",
    )
    .column("ABRT%")
    .at(|s| s.finished_abort, |s| &mut s.finished_abort),
    signal(
        Signal::FinishedError,
        "finished_error",
        "finished_error",
        share_of_finished(&["error"]),
        Unit::Ratio,
        "share of finished requests failed with an error (vLLM 0.13+)",
    )
    .column("ERR%")
    .at(|s| s.finished_error, |s| &mut s.finished_error),
    signal(
        Signal::FinishedRepetition,
        "finished_repetition",
        "finished_repetition",
        share_of_finished(&["repetition"]),
        Unit::Ratio,
        "share of finished requests stopped for repetition (vLLM 0.33+)",
    )
    .column("REP%")
    .at(|s| s.finished_repetition, |s| &mut s.finished_repetition),
    signal(
        Signal::HttpPerS,
        "http_per_s",
        "http",
        Rate(M::HttpRequests),
        PerSecond,
        "HTTP requests answered per second by the API server",
    )
    .column("HTTP/S")
    .at(|s| s.http_per_s, |s| &mut s.http_per_s),
    signal(
        Signal::Http4xxRatio,
        "http_4xx_ratio",
        "http_4xx",
        share_of_http(&["4.."]),
        Unit::Ratio,
        "share of HTTP requests answered 4xx (429 among them)",
    )
    .column("4XX%")
    .at(|s| s.http_4xx_ratio, |s| &mut s.http_4xx_ratio),
    signal(
        Signal::Http5xxRatio,
        "http_5xx_ratio",
        "http_5xx",
        share_of_http(&["5.."]),
        Unit::Ratio,
        "share of HTTP requests answered 5xx",
    )
    .column("5XX%")
    .at(|s| s.http_5xx_ratio, |s| &mut s.http_5xx_ratio),
    signal(
        Signal::SpecAcceptLength,
        "spec_accept_length",
        "spec_accept_length",
        Derivation::AcceptanceLength {
            accepted: M::SpecAcceptedTokens,
            drafts: M::SpecDrafts,
        },
        Tokens,
        "speculative decoding: mean tokens per step (1 + accepted per draft)",
    )
    .column("SPECLN")
    .at(|s| s.spec_accept_length, |s| &mut s.spec_accept_length),
    signal(
        Signal::E2eP50,
        "e2e_p50",
        "e2e",
        Quantile(M::E2e, "0.5"),
        Seconds,
        "request duration end to end, p50",
    )
    .at(|s| s.e2e_p50, |s| &mut s.e2e_p50),
    signal(
        Signal::QueueP50,
        "queue_p50",
        "queue",
        Quantile(M::QueueTime, "0.5"),
        Seconds,
        "time spent queued, p50",
    )
    .at(|s| s.queue_p50, |s| &mut s.queue_p50),
    signal(
        Signal::QueueP99,
        "queue_p99",
        "queue",
        Quantile(M::QueueTime, "0.99"),
        Seconds,
        "time spent queued, p99",
    )
    .at(|s| s.queue_p99, |s| &mut s.queue_p99),
];

/// The share of finished requests whose `finished_reason` is one of `reasons`.
const fn share_of_finished(reasons: &'static [&'static str]) -> Derivation {
    Ratio {
        numerator: reason(M::RequestSuccess, reasons),
        denominator: all(M::RequestSuccess),
        fallback: None,
    }
}

/// The share of HTTP requests whose status matches one of `classes`.
const fn share_of_http(classes: &'static [&'static str]) -> Derivation {
    Ratio {
        numerator: reason(M::HttpRequests, classes),
        denominator: all(M::HttpRequests),
        fallback: None,
    }
}
