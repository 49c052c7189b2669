//! The signal namespace: every name a rule expression can read, in ONE table (name → accessor,
//! unit, origin, description), plus the open namespaces for configuration facts. The metric
//! signals are the signal catalog's (`crate::signals`), taken over with their names, units and
//! descriptions; the others (configuration, status, GPU) are defined here.

use super::input::EngineInput;
use super::units::Unit;
use crate::fleet::{EngineStatus, Signals};
use crate::signals as catalog;

/// Where a signal's value comes from. It decides when a rule is evaluated: a rule that reads
/// anything from the engine's own scrape is frozen while the engine is not Up (its values are
/// old), so it neither fires nor clears on stale data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The engine's `/metrics` (derived signals of the fleet state).
    Metrics,
    /// `cache_config_info` in the engine's `/metrics`.
    CacheConfig,
    /// kvtop's own view of the engine (scrape status, restart mark): always known.
    Status,
    /// DCGM exporter of the engine's GPUs (supplied by the GPU work).
    Gpu,
    /// The pod spec and pod state (supplied by the Kubernetes work).
    Pod,
    /// Text lines: logs, events, pod status reasons.
    Text,
}

impl Origin {
    /// Whether the value comes from the engine's own scrape (and so is stale when it is down).
    pub(crate) fn is_scraped(self) -> bool {
        matches!(self, Origin::Metrics | Origin::CacheConfig)
    }

    pub fn name(self) -> &'static str {
        match self {
            Origin::Metrics => "metrics",
            Origin::CacheConfig => "cache_config_info",
            Origin::Status => "kvtop",
            Origin::Gpu => "DCGM",
            Origin::Pod => "pod spec",
            Origin::Text => "text",
        }
    }
}

/// How a signal's value is found.
#[derive(Clone, Copy)]
enum Read {
    /// A derived signal of the catalog, in the engine's current signals.
    Derived(fn(&Signals) -> Option<f64>),
    /// Anything else the input holds.
    Input(fn(&EngineInput<'_>) -> Option<f64>),
}

/// One named signal.
#[derive(Clone, Copy)]
pub struct SignalDef {
    pub name: &'static str,
    pub unit: Unit,
    pub origin: Origin,
    pub description: &'static str,
    read: Read,
}

impl std::fmt::Debug for SignalDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalDef")
            .field("name", &self.name)
            .field("unit", &self.unit)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SignalDef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl SignalDef {
    /// The signal's current value for one engine; `None` when unknown. Values read from the
    /// engine's scrape are unknown while the engine is not Up.
    /// A derived signal's value in a set of signals other than an engine's own (a model's);
    /// `None` for signals not derived from metrics.
    pub(crate) fn read_signals(&self, signals: &Signals) -> Option<f64> {
        match self.read {
            Read::Derived(get) => get(signals).filter(|v| v.is_finite()),
            Read::Input(_) => None,
        }
    }

    pub fn read(&self, input: &EngineInput<'_>) -> Option<f64> {
        if self.origin.is_scraped() && input.status != EngineStatus::Up {
            return None;
        }
        let value = match self.read {
            Read::Derived(get) => get(input.signals),
            Read::Input(read) => read(input),
        };
        value.filter(|v| !v.is_nan())
    }
}

const fn def(
    name: &'static str,
    unit: Unit,
    origin: Origin,
    description: &'static str,
    read: fn(&EngineInput<'_>) -> Option<f64>,
) -> SignalDef {
    SignalDef {
        name,
        unit,
        origin,
        description,
        read: Read::Input(read),
    }
}

/// A metric signal of the catalog, as rules see it.
const fn from_catalog(def: &catalog::SignalDef) -> SignalDef {
    SignalDef {
        name: def.name,
        unit: def.unit,
        origin: Origin::Metrics,
        description: def.description,
        read: Read::Derived(def.get),
    }
}

fn flag(b: bool) -> Option<f64> {
    Some(if b { 1.0 } else { 0.0 })
}

/// Whether the engine's status is `is`; unknown while it is Pending: an engine not scraped
/// yet, or a pod still loading its model, is neither up nor down.
fn status_flag(status: EngineStatus, is: EngineStatus) -> Option<f64> {
    (status != EngineStatus::Pending).then(|| if status == is { 1.0 } else { 0.0 })
}

use Origin::{CacheConfig as Cc, Gpu, Status};
use Unit::*;

/// Every named signal. Names in the open namespaces (`config.*`, `env.*`, `pod.*`, other
/// `cache.*` fields) are in [`NAMESPACES`].
pub static SIGNALS: &[SignalDef] = &ALL_SIGNALS;

static ALL_SIGNALS: [SignalDef; CATALOG.len() + OTHERS.len()] = all_signals();

const CATALOG: [catalog::SignalDef; catalog::Signal::COUNT] = catalog::SIGNAL_TABLE;

/// The catalog's signals first, then the others.
const fn all_signals() -> [SignalDef; CATALOG.len() + OTHERS.len()] {
    let mut out = [OTHERS[0]; CATALOG.len() + OTHERS.len()];
    let mut i = 0;
    while i < CATALOG.len() {
        out[i] = from_catalog(&CATALOG[i]);
        i += 1;
    }
    let mut j = 0;
    while j < OTHERS.len() {
        out[CATALOG.len() + j] = OTHERS[j];
        j += 1;
    }
    out
}

/// Signals that are not derived from engine metrics.
const OTHERS: [SignalDef; 15] = [
    def(
        "cache.gpu_memory_utilization",
        Ratio,
        Cc,
        "share of VRAM vLLM may use",
        |i| i.sample?.cache_config.as_ref()?.gpu_memory_utilization,
    ),
    def(
        "cache.enable_prefix_caching",
        Flag,
        Cc,
        "prefix caching on (1) or off (0)",
        |i| flag(i.sample?.cache_config.as_ref()?.enable_prefix_caching?),
    ),
    def(
        "cache.block_size",
        Tokens,
        Cc,
        "KV block size, tokens",
        |i| Some(i.sample?.cache_config.as_ref()?.block_size? as f64),
    ),
    def(
        "cache.num_gpu_blocks",
        Count,
        Cc,
        "KV blocks on the GPU",
        |i| Some(i.sample?.cache_config.as_ref()?.num_gpu_blocks? as f64),
    ),
    def(
        "cache.num_cpu_blocks",
        Count,
        Cc,
        "KV blocks on the CPU (swap space)",
        |i| Some(i.sample?.cache_config.as_ref()?.num_cpu_blocks? as f64),
    ),
    def(
        "gen_stall_s",
        Seconds,
        Origin::Metrics,
        "seconds since the generated-token counter last moved (0 when it moved since the scrape before)",
        |i| i.gen_stall_s,
    ),
    def(
        "stalled",
        Flag,
        Status,
        "1 while the stuck-requests rule is pending or firing for the engine (requests running, no token), else 0",
        |i| Some(if i.stalled { 1.0 } else { 0.0 }),
    ),
    def(
        "up",
        Flag,
        Status,
        "1 while the last scrape is recent (status UP), else 0; unknown while PENDING (not scraped yet, or a pod still starting)",
        |i| status_flag(i.status, EngineStatus::Up),
    ),
    def(
        "down",
        Flag,
        Status,
        "1 when no good scrape for long (status DOWN), else 0; unknown while PENDING",
        |i| status_flag(i.status, EngineStatus::Down),
    ),
    def(
        "restarted",
        Flag,
        Status,
        "1 while the engine is marked RESTARTED (counter reset)",
        |i| flag(i.restarted_at.is_some()),
    ),
    def(
        "gpu_util",
        Ratio,
        Gpu,
        "GPU utilization (mean over the engine's GPUs)",
        |i| i.gpu?.util,
    ),
    def(
        "gpu_mem",
        Ratio,
        Gpu,
        "GPU memory in use (highest share over its GPUs)",
        |i| i.gpu?.mem,
    ),
    def(
        "gpu_temp",
        Celsius,
        Gpu,
        "GPU temperature (hottest GPU)",
        |i| i.gpu?.temp_c,
    ),
    def(
        "gpu_power",
        Watts,
        Gpu,
        "GPU power draw (sum over its GPUs)",
        |i| i.gpu?.power_w,
    ),
    def(
        "xid",
        Code,
        Gpu,
        "last GPU XID error code (0 = none)",
        |i| i.gpu?.xid,
    ),
];

/// An open namespace: any `prefix` + field name is a valid signal, read from a per-engine list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NamespaceDef {
    /// With the trailing dot: `config.`.
    pub prefix: &'static str,
    pub origin: Origin,
    pub description: &'static str,
    /// Names rules in the built-in file use, for listings.
    pub examples: &'static [&'static str],
}

/// Open namespaces. `cache.*` fields other than the named ones are read from the exported
/// labels of `cache_config_info`; the others from the Kubernetes facts of the engine's pod.
pub(crate) static NAMESPACES: &[NamespaceDef] = &[
    NamespaceDef {
        prefix: "cache.",
        origin: Origin::CacheConfig,
        description: "any label of vllm:cache_config_info (numbers; True/False as 1/0)",
        examples: &["cache.swap_space", "cache.cpu_offload_gb"],
    },
    NamespaceDef {
        prefix: "config.",
        origin: Origin::Pod,
        description: "a vLLM engine argument from the pod spec (--max-num-batched-tokens → config.max_num_batched_tokens)",
        examples: &[
            "config.max_num_batched_tokens",
            "config.max_num_seqs",
            "config.enable_chunked_prefill",
        ],
    },
    NamespaceDef {
        prefix: "env.",
        origin: Origin::Pod,
        description: "an environment variable of the engine container",
        examples: &["env.OMP_NUM_THREADS"],
    },
    NamespaceDef {
        prefix: "pod.",
        origin: Origin::Pod,
        description: "a fact about the pod (e.g. pod.restarts, container restarts)",
        examples: &["pod.restarts"],
    },
];

/// Text sources a `~` match can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum TextSource {
    /// `log`: recent log lines of the engine's pod.
    Log,
    /// `event`: recent Kubernetes events about the pod.
    Event,
    /// `pod_status`: pod and container state reasons.
    PodStatus,
}

impl TextSource {
    pub(crate) fn parse(name: &str) -> Option<TextSource> {
        Some(match name {
            "log" => TextSource::Log,
            "event" => TextSource::Event,
            "pod_status" => TextSource::PodStatus,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TextSource::Log => "log",
            TextSource::Event => "event",
            TextSource::PodStatus => "pod_status",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            TextSource::Log => "recent log lines of the engine's pod",
            TextSource::Event => "recent Kubernetes events about the engine's pod",
            TextSource::PodStatus => {
                "pod and container state reasons (OOMKilled, CrashLoopBackOff)"
            }
        }
    }

    /// The lines of this source for one engine; `None` when the engine has no such stream.
    pub(crate) fn lines<'a>(self, input: &EngineInput<'a>) -> Option<&'a [String]> {
        match self {
            TextSource::Log => input.logs,
            TextSource::Event => input.events,
            TextSource::PodStatus => input.pod_status,
        }
    }

    pub const ALL: [TextSource; 3] = [TextSource::Log, TextSource::Event, TextSource::PodStatus];
}

/// A signal name resolved against the namespace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Named(&'static SignalDef),
    /// `cache.<field>` not in the table: a `cache_config_info` label (the full name is kept).
    CacheField(Box<str>),
    /// `config.*`, `env.*`, `pod.*`: looked up by the full name in the engine's facts.
    Fact(Box<str>),
}

/// Resolve a signal name, or `None` when it is unknown.
pub(crate) fn resolve(name: &str) -> Option<Resolved> {
    if let Some(def) = lookup(name) {
        return Some(Resolved::Named(def));
    }
    let namespace = NAMESPACES.iter().find(|ns| name.starts_with(ns.prefix))?;
    let field = name
        .get(namespace.prefix.len()..)
        .filter(|f| !f.is_empty())?;
    if field.contains('.') {
        return None;
    }
    Some(if namespace.prefix == "cache." {
        Resolved::CacheField(name.into())
    } else {
        Resolved::Fact(name.into())
    })
}

/// The named signal `name`, if there is one.
pub fn lookup(name: &str) -> Option<&'static SignalDef> {
    SIGNALS.iter().find(|def| def.name == name)
}

/// The closest named signal to a misspelt `name` (at most two edits away), for error hints.
pub(crate) fn closest(name: &str) -> Option<&'static str> {
    SIGNALS
        .iter()
        .map(|def| (edit_distance(name, def.name), def.name))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        for (j, cb) in b.iter().enumerate() {
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let left = row.get(j).copied().unwrap_or(usize::MAX);
            let cost = prev + usize::from(ca != *cb);
            prev = above;
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = cost
                    .min(above.saturating_add(1))
                    .min(left.saturating_add(1));
            }
        }
    }
    row.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase_words() {
        for (i, def) in SIGNALS.iter().enumerate() {
            assert!(
                def.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'),
                "{}",
                def.name
            );
            assert!(
                SIGNALS
                    .iter()
                    .skip(i + 1)
                    .all(|other| other.name != def.name),
                "{} twice",
                def.name
            );
        }
    }

    #[test]
    fn namespaces_resolve() {
        assert!(matches!(resolve("kv_usage"), Some(Resolved::Named(d)) if d.name == "kv_usage"));
        assert!(matches!(
            resolve("cache.enable_prefix_caching"),
            Some(Resolved::Named(_))
        ));
        assert_eq!(
            resolve("cache.swap_space"),
            Some(Resolved::CacheField("cache.swap_space".into()))
        );
        assert_eq!(
            resolve("env.OMP_NUM_THREADS"),
            Some(Resolved::Fact("env.OMP_NUM_THREADS".into()))
        );
        assert_eq!(resolve("config."), None);
        assert_eq!(resolve("config.a.b"), None);
        assert_eq!(resolve("kv_usge"), None);
        assert_eq!(resolve("gpu.util"), None);
    }

    #[test]
    fn misspellings_get_a_hint() {
        assert_eq!(closest("kv_usge"), Some("kv_usage"));
        assert_eq!(closest("ttft_p59"), Some("ttft_p50"));
        assert_eq!(closest("completely_else"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
