//! The vocabulary of the catalog: vendors, metric kinds, derivations.

use super::unit::Unit;
use super::values::Signals;

/// Who exports a name, which decides its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// vLLM, under `vllm:` or, behind Ray Serve, `ray_vllm:`.
    Vllm,
    /// SGLang, under `sglang:`.
    SGLang,
    /// The Prometheus client's process collector: no prefix.
    Process,
}

impl Vendor {
    /// Every prefix the vendor's names are exported under, the canonical one first.
    pub const fn prefixes(self) -> &'static [&'static str] {
        match self {
            Vendor::Vllm => &["vllm:", "ray_vllm:"],
            Vendor::SGLang => &["sglang:"],
            Vendor::Process => &[""],
        }
    }

    /// The prefix Prometheus queries use.
    pub const fn canonical_prefix(self) -> &'static str {
        match self {
            Vendor::Vllm => "vllm:",
            Vendor::SGLang => "sglang:",
            Vendor::Process => "",
        }
    }
}

/// The engine generation a vLLM name proves (see `signals::flavor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    V0,
    V1,
}

/// One name of a metric as a vendor exports it, without the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VendorName {
    pub vendor: Vendor,
    pub name: &'static str,
    /// The generation an engine exporting this name is, unless stronger evidence says
    /// otherwise.
    pub proves: Option<Generation>,
}

impl VendorName {
    /// `vllm:kv_cache_usage_perc`: the name under the vendor's canonical prefix.
    pub fn canonical(&self) -> String {
        format!("{}{}", self.vendor.canonical_prefix(), self.name)
    }
}

/// Prometheus metric types, as kvtop reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Latest value; several series of one engine combine by their maximum.
    Gauge,
    /// Cumulative; several series of one engine add up.
    Counter,
    /// Cumulative buckets (`_bucket` with `le`, `_sum`, `_count`).
    Histogram,
    /// Value 1, information in the labels.
    Info,
}

/// How a metric's alternative names of one vendor are chosen between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precedence {
    /// The first name the engine exports wins.
    PerMetric,
    /// Chosen together with another metric: the first rank at which either is exported
    /// wins for both, so a ratio never mixes generations.
    PairedWith(MetricId),
}

/// A vendor-neutral metric read from an exposition. The order is [`super::METRICS`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricId {
    KvUsage,
    Running,
    Waiting,
    Swapped,
    PrefixHitRate,
    SpecAcceptanceRate,
    Preemptions,
    PromptTokens,
    GenerationTokens,
    PrefixQueries,
    PrefixHits,
    SpecDrafts,
    SpecDraftTokens,
    SpecAcceptedTokens,
    RequestSuccess,
    ProcessCpu,
    Ttft,
    Itl,
    E2e,
    QueueTime,
    /// Mean time per output token of each request (vLLM 0.11+), the dashboards' TPOT.
    Tpot,
    PrefillTime,
    DecodeTime,
    /// The API server's HTTP requests, by `status` (one per process, shared by its engines).
    HttpRequests,
    CacheConfig,
}

impl MetricId {
    pub const COUNT: usize = MetricId::CacheConfig as usize + 1;
}

/// One metric of the catalog.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub id: MetricId,
    pub kind: Kind,
    /// Names in order of precedence within each vendor.
    pub names: &'static [VendorName],
    pub precedence: Precedence,
    pub description: &'static str,
}

impl MetricDef {
    /// The names one vendor exports, in order of precedence (their rank is the position).
    pub fn names_of(&self, vendor: Vendor) -> impl Iterator<Item = &'static VendorName> {
        self.names.iter().filter(move |n| n.vendor == vendor)
    }

    /// How many alternative names the vendor with the most has.
    pub fn ranks(&self) -> usize {
        [Vendor::Vllm, Vendor::SGLang, Vendor::Process]
            .into_iter()
            .map(|v| self.names_of(v).count())
            .max()
            .unwrap_or(0)
    }
}

/// A counter, optionally restricted to some values of its selecting label
/// (`finished_reason`, or `status` for HTTP requests: see [`super::selector_label`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selector {
    pub metric: MetricId,
    /// `Some`: only series whose label matches one of these patterns (see
    /// [`super::FAILED_REASONS`]). A pattern is a word, or a status class where `.` stands for
    /// any one character (`5..` matches `503` and vLLM's grouped `5xx`): the same text is a
    /// PromQL regex, so the direct scrape and Prometheus select the same series.
    pub reasons: Option<&'static [&'static str]>,
}

impl Selector {
    /// Whether a label value is selected.
    pub fn selects(&self, value: &str) -> bool {
        self.reasons
            .is_none_or(|patterns| patterns.iter().any(|p| pattern_matches(p, value)))
    }
}

/// A selector pattern against a label value, as the PromQL regex `=~"pattern"` matches it:
/// the whole value, `.` any one character.
fn pattern_matches(pattern: &str, value: &str) -> bool {
    pattern.chars().count() == value.chars().count()
        && pattern
            .chars()
            .zip(value.chars())
            .all(|(p, v)| p == '.' || p == v)
}

/// How a signal is computed from metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derivation {
    /// The gauge's current value.
    Raw(MetricId),
    /// The gauge's current value, its series read one by one so their names tell the
    /// engine's flavor.
    RawByName(MetricId),
    /// Increase per second over the window.
    Rate(MetricId),
    /// Increase of one counter over another's in the window; without increase, the engine's
    /// own gauge when it has one.
    Ratio {
        numerator: Selector,
        denominator: Selector,
        fallback: Option<MetricId>,
    },
    /// A quantile (as written in PromQL) of the histogram's increase over the window; an
    /// engine without that histogram takes it from its stand-in (see
    /// [`super::quantile_stand_in`]).
    Quantile(MetricId, &'static str),
    /// Mean tokens per speculative step: 1 (the bonus token) plus accepted tokens per draft,
    /// over the window.
    AcceptanceLength {
        accepted: MetricId,
        drafts: MetricId,
    },
    /// Blocks × block size of the configuration info.
    Capacity(MetricId),
}

/// A derived signal: one field of [`Signals`]. The order is [`super::SIGNALS`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    KvUsage,
    Running,
    Waiting,
    Swapped,
    PreemptionsPerS,
    GenTps,
    PromptTps,
    RequestsPerS,
    PrefixHit,
    TtftP50,
    TtftP95,
    TtftP99,
    ItlP50,
    ItlP95,
    ItlP99,
    E2eP95,
    E2eP99,
    QueueP95,
    SpecAcceptance,
    CpuCores,
    ErrorRatio,
    KvCapacityTokens,
    TpotP50,
    TpotP95,
    TpotP99,
    PrefillP50,
    PrefillP95,
    PrefillP99,
    DecodeP50,
    DecodeP95,
    DecodeP99,
    FinishedStop,
    FinishedLength,
    FinishedAbort,
    FinishedError,
    FinishedRepetition,
    HttpPerS,
    Http4xxRatio,
    Http5xxRatio,
    SpecAcceptLength,
    E2eP50,
    QueueP50,
    QueueP99,
}

impl Signal {
    pub const COUNT: usize = Signal::QueueP99 as usize + 1;
}

/// One signal of the catalog.
#[derive(Clone, Copy)]
pub struct SignalDef {
    pub id: Signal,
    /// The name rules use (`kv_usage`, `ttft_p95`).
    pub name: &'static str,
    /// The short name of the Prometheus query that fills it, in messages (`ttft`).
    pub query: &'static str,
    pub derivation: Derivation,
    pub unit: Unit,
    pub description: &'static str,
    /// Whether the per-engine history keeps it (and the Prometheus backfill reads it).
    pub history: bool,
    /// Header of its fleet-table column, when it has one.
    pub column: Option<&'static str>,
    /// Its value in a set of derived signals.
    pub get: fn(&Signals) -> Option<f64>,
    /// Its field in a set of derived signals.
    pub field: fn(&mut Signals) -> &mut Option<f64>,
}

impl std::fmt::Debug for SignalDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalDef")
            .field("name", &self.name)
            .field("derivation", &self.derivation)
            .field("unit", &self.unit)
            .finish_non_exhaustive()
    }
}

impl SignalDef {
    /// Store `value` in its field.
    pub fn set(&self, signals: &mut Signals, value: f64) {
        *(self.field)(signals) = Some(value);
    }
}
