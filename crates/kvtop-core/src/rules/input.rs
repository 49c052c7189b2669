//! What the rules read about one engine in one cycle.

use crate::engine::{EngineId, EngineSample};
use crate::fleet::{EngineState, EngineStatus, Signals, TargetId, Ts};

/// One engine's inputs to a rules cycle. Everything is borrowed: building the inputs for a
/// fleet costs one `Vec` of these, nothing per engine.
///
/// The optional parts arrive with later work and are `None`/empty until then; rules that read
/// them simply do not fire (an unknown value never makes a condition true).
#[derive(Debug, Clone, Copy)]
pub struct EngineInput<'a> {
    pub target: TargetId,
    /// Engine identity; `id.model` is the group of fleet rules with `per = "model"`.
    pub id: &'a EngineId,
    /// Display name (as in the fleet table).
    pub name: &'a str,
    pub status: EngineStatus,
    pub signals: &'a Signals,
    /// The latest sample (for `cache.*` signals from `cache_config_info`).
    pub sample: Option<&'a EngineSample>,
    /// When the fleet last saw a counter reset (process restart), while it is marked.
    pub restarted_at: Option<Ts>,
    /// GPU signals of the GPUs this engine runs on (from DCGM), when known.
    pub gpu: Option<&'a GpuSignals>,
    /// Configuration facts from the pod spec and pod state, keyed by their full signal name:
    /// `config.max_num_batched_tokens`, `env.OMP_NUM_THREADS`, `pod.restarts`. Values are text;
    /// numbers, `true`/`false` (1/0) are understood, anything else is unknown.
    pub facts: &'a [(String, String)],
    /// Pod labels, for rule scopes with label filters.
    pub labels: &'a [(String, String)],
    /// Recent log lines of the engine's pod (the supplier decides how recent). `None` = no log
    /// stream for this engine: `log ~ "…"` is unknown, not false.
    pub logs: Option<&'a [String]>,
    /// Recent Kubernetes event messages about the engine's pod.
    pub events: Option<&'a [String]>,
    /// Current pod and container state reasons (`OOMKilled`, `CrashLoopBackOff`, …).
    pub pod_status: Option<&'a [String]>,
    /// Seconds since the engine last generated a token (its generated-token counter moved),
    /// as of its newest scrape; `None` when unknown.
    pub gen_stall_s: Option<f64>,
    /// The stuck-requests rule is pending or firing for the engine (requests running, no token
    /// coming out): routers leave it out, and rules that would give batch-size advice hold
    /// back (`stalled == 0`). The rule engine sets it from its own last cycle.
    pub stalled: bool,
    /// The latency quantiles of the engine's model over all its engines' merged histograms
    /// (what `merged(ttft_p99)` reads), when the supplier computed them.
    pub model: Option<&'a Signals>,
}

impl<'a> EngineInput<'a> {
    /// The inputs the fleet state alone provides; GPU, Kubernetes and text parts empty.
    pub fn from_state(state: &'a EngineState) -> Self {
        EngineInput {
            target: state.target,
            id: &state.id,
            name: &state.name,
            status: state.status,
            signals: &state.signals,
            sample: state.latest.as_ref(),
            restarted_at: state.restarted_at,
            gpu: None,
            facts: &[],
            labels: &[],
            logs: None,
            events: None,
            pod_status: None,
            gen_stall_s: state.generation_stalled_for(),
            stalled: false,
            model: None,
        }
    }

    /// The same inputs with the model's merged quantiles.
    pub fn with_model(self, model: Option<&'a Signals>) -> Self {
        EngineInput { model, ..self }
    }

    /// The same inputs, marked stalled (or not) as the rules last judged the engine.
    pub fn with_stalled(self, stalled: bool) -> Self {
        EngineInput { stalled, ..self }
    }

    /// The same inputs with the engine's GPU signals.
    pub fn with_gpu(self, gpu: Option<&'a GpuSignals>) -> Self {
        EngineInput { gpu, ..self }
    }

    /// The same inputs with recent log lines.
    pub fn with_logs(self, logs: &'a [String]) -> Self {
        EngineInput {
            logs: Some(logs),
            ..self
        }
    }

    /// The same inputs with recent Kubernetes events.
    pub fn with_events(self, events: &'a [String]) -> Self {
        EngineInput {
            events: Some(events),
            ..self
        }
    }

    /// The same inputs with pod/container state reasons.
    pub(crate) fn with_pod_status(self, reasons: &'a [String]) -> Self {
        EngineInput {
            pod_status: Some(reasons),
            ..self
        }
    }

    /// The same inputs with configuration facts (`config.*`, `env.*`, `pod.*`).
    pub fn with_facts(self, facts: &'a [(String, String)]) -> Self {
        EngineInput { facts, ..self }
    }

    /// The same inputs with pod labels.
    pub(crate) fn with_labels(self, labels: &'a [(String, String)]) -> Self {
        EngineInput { labels, ..self }
    }

    /// The value of the fact named `key`, as a number (`true`/`false` as 1/0).
    pub(crate) fn fact(&self, key: &str) -> Option<f64> {
        let (_, text) = self.facts.iter().find(|(k, _)| k == key)?;
        parse_fact(text)
    }

    /// The `cache_config_info` label `field`, as a number (`True`/`False` as 1/0).
    pub(crate) fn cache_field(&self, field: &str) -> Option<f64> {
        let config = self.sample?.cache_config.as_ref()?;
        parse_fact(config.fields.get(field)?)
    }
}

/// A configuration value as a number: decimal numbers, `true`/`false` in any case as 1/0.
pub(crate) fn parse_fact(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") {
        return Some(1.0);
    }
    if text.eq_ignore_ascii_case("false") {
        return Some(0.0);
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// GPU signals of one engine, aggregated over the GPUs it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GpuSignals {
    /// Utilization, 0..1 (DCGM reports percent).
    pub util: Option<f64>,
    /// Frame-buffer memory in use, 0..1 of the total.
    pub mem: Option<f64>,
    /// Temperature, °C.
    pub temp_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Last XID error code (0 = none).
    pub xid: Option<f64>,
}

impl GpuSignals {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_numbers_or_booleans() {
        assert_eq!(parse_fact("8"), Some(8.0));
        assert_eq!(parse_fact(" 0.92 "), Some(0.92));
        assert_eq!(parse_fact("True"), Some(1.0));
        assert_eq!(parse_fact("false"), Some(0.0));
        assert_eq!(parse_fact("auto"), None);
        assert_eq!(parse_fact("NaN"), None);
    }
}
