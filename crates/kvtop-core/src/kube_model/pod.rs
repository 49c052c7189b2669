//! PURE. What kvtop knows about one vLLM pod: identity, state, owner, engine arguments,
//! environment, recent events and log lines. Built from the API object by [`super::convert`].

use std::fmt;

use super::endpoint::MetricsEndpoint;
use super::lines::LineRing;
use super::recognize::EngineKind;
use super::vllm_args::VllmArgs;
use crate::clock::Ts;

/// Environment variable name prefixes worth showing and feeding to rules.
const ENV_PREFIXES: &[&str] = &[
    "OMP_", "NCCL_", "VLLM_", "CUDA_", "PYTORCH_", "TORCH_", "MKL_", "RAY_", "HF_HUB_",
];
/// Name parts that mark a variable as a secret: never kept, even with a kept prefix.
const SECRET_MARKERS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL"];

/// A pod's identity across clusters.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct PodKey {
    /// Kubeconfig context the pod was discovered through (`in-cluster` inside a pod).
    pub context: String,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.context, self.namespace, self.name)
    }
}

/// The pod phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    #[default]
    Unknown,
}

impl PodPhase {
    pub fn parse(text: &str) -> PodPhase {
        match text {
            "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            _ => PodPhase::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }
}

/// How the previous run of the vLLM container ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Termination {
    /// `OOMKilled`, `Error`, `Completed`, …
    pub reason: String,
    pub exit_code: i32,
    pub finished_at: Option<Ts>,
    pub message: Option<String>,
}

/// The controller owning the pod.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    /// `ReplicaSet`, `StatefulSet`, `LeaderWorkerSet`, …
    pub kind: String,
    pub name: String,
    /// The Deployment behind a ReplicaSet (from the `pod-template-hash` naming rule).
    pub deployment: Option<String>,
}

/// One environment variable of the vLLM container. `value` is `None` when it comes from a
/// secret, config map or field reference.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: Option<String>,
}

impl EnvVar {
    /// Whether a variable is kept: a tuning prefix (`OMP_`, `NCCL_`, `VLLM_`, …) and nothing
    /// in the name that looks like a secret.
    pub(crate) fn is_relevant(name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        ENV_PREFIXES.iter().any(|p| upper.starts_with(p))
            && !SECRET_MARKERS.iter().any(|m| upper.contains(m))
    }
}

/// Everything kvtop shows and evaluates about one vLLM pod.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PodInfo {
    pub key: PodKey,
    pub uid: String,
    /// The object's `resourceVersion`: unchanged means nothing changed.
    pub resource_version: String,
    pub phase: PodPhase,
    /// The pod's Ready condition.
    pub ready: bool,
    /// A deletion is in progress (`deletionTimestamp` set).
    pub terminating: bool,
    pub node: Option<String>,
    pub created_at: Option<Ts>,
    pub started_at: Option<Ts>,
    /// Name of the container running vLLM.
    pub container: Option<String>,
    /// The engine the container runs (vLLM unless its image or command says SGLang).
    pub engine: EngineKind,
    /// Restarts of the vLLM container.
    pub restarts: u32,
    /// Why the container is waiting (`CrashLoopBackOff`, `ContainerCreating`, `ImagePullBackOff`).
    pub waiting_reason: Option<String>,
    pub waiting_message: Option<String>,
    pub last_termination: Option<Termination>,
    pub owner: Option<Owner>,
    /// Labels, sorted by key.
    pub labels: Vec<(String, String)>,
    /// Whether the routing label is present with value `true` (`None`: no routing label is
    /// configured).
    pub routed: Option<bool>,
    /// The routes that send the pod traffic, read from Services, EndpointSlices and
    /// InferencePools (`None`: not read, or a routing label is configured instead).
    pub routing: Option<super::routing::PodRouting>,
    pub endpoint: MetricsEndpoint,
    pub args: VllmArgs,
    /// Tuning variables of the vLLM container (see [`EnvVar::is_relevant`]).
    pub env: Vec<EnvVar>,
    /// Recent Kubernetes event messages about the pod, oldest first.
    pub events: LineRing,
    /// Recent log lines of the vLLM container, oldest first.
    pub logs: LineRing,
    /// Facts for the rules (see [`PodInfo::derive_facts`]); kept up to date by [`PodInfo::refresh`].
    pub facts: Vec<(String, String)>,
    /// Pod and container state reasons for the rules (see [`PodInfo::derive_status_reasons`]);
    /// kept up to date by [`PodInfo::refresh`].
    pub status_reasons: Vec<String>,
}

#[cfg(any(test, feature = "test-support"))]
impl PodInfo {
    /// A running, ready pod `llm/NAME` of `context` with no owner, labels or pod IP: unit
    /// tests start from it and set the fields they care about.
    pub fn for_test(context: &str, name: &str) -> PodInfo {
        let defaults = super::endpoint::EndpointDefaults::default();
        PodInfo {
            key: PodKey {
                context: context.into(),
                namespace: "llm".into(),
                name: name.into(),
            },
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            phase: PodPhase::Running,
            ready: true,
            terminating: false,
            node: None,
            created_at: None,
            started_at: None,
            container: Some("vllm".into()),
            engine: EngineKind::Vllm,
            restarts: 0,
            waiting_reason: None,
            waiting_message: None,
            last_termination: None,
            owner: None,
            labels: Vec::new(),
            routed: Some(true),
            routing: None,
            endpoint: MetricsEndpoint::choose(&Default::default(), &[], None, &defaults),
            args: VllmArgs::default(),
            env: Vec::new(),
            events: LineRing::new(5),
            logs: LineRing::new(5),
            facts: Vec::new(),
            status_reasons: Vec::new(),
        }
    }
}

impl PodInfo {
    /// Recompute `facts` and `status_reasons` from the other fields (after changing them).
    pub fn refresh(&mut self) {
        self.facts = self.derive_facts();
        self.status_reasons = self.derive_status_reasons();
    }

    /// Facts for the rules, keyed by their full signal name: `config.<flag>` for every vLLM flag
    /// (and `config.model`), `env.<NAME>` for every kept variable with a literal value, and
    /// `pod.restarts`, `pod.ready`, `pod.phase`, `pod.routed` (when known), `pod.node`,
    /// `pod.last_exit_code`.
    pub(crate) fn derive_facts(&self) -> Vec<(String, String)> {
        let mut facts = Vec::with_capacity(self.args.flags.len() + self.env.len() + 6);
        if let Some(model) = &self.args.model {
            facts.push(("config.model".to_owned(), model.clone()));
        }
        for (name, value) in &self.args.flags {
            if name != "model" {
                facts.push((format!("config.{name}"), value.clone()));
            }
        }
        for var in &self.env {
            if let Some(value) = &var.value {
                facts.push((format!("env.{}", var.name), value.clone()));
            }
        }
        facts.push(("pod.restarts".to_owned(), self.restarts.to_string()));
        facts.push(("pod.ready".to_owned(), self.ready.to_string()));
        facts.push(("pod.phase".to_owned(), self.phase.as_str().to_owned()));
        if let Some(routed) = self.routed {
            facts.push(("pod.routed".to_owned(), routed.to_string()));
        }
        if let Some(node) = &self.node {
            facts.push(("pod.node".to_owned(), node.clone()));
        }
        if let Some(t) = &self.last_termination {
            facts.push(("pod.last_exit_code".to_owned(), t.exit_code.to_string()));
        }
        facts
    }

    /// Pod and container state reasons, for `pod_status ~ "…"` rules: the phase, the waiting
    /// reason (`CrashLoopBackOff`), the last termination reason (`OOMKilled`), `NotReady` and
    /// `Terminating` when they apply.
    pub(crate) fn derive_status_reasons(&self) -> Vec<String> {
        let mut reasons = vec![self.phase.as_str().to_owned()];
        if let Some(w) = &self.waiting_reason {
            reasons.push(w.clone());
        }
        if let Some(t) = &self.last_termination {
            reasons.push(t.reason.clone());
        }
        if !self.ready {
            reasons.push("NotReady".to_owned());
        }
        if self.terminating {
            reasons.push("Terminating".to_owned());
        }
        reasons
    }

    /// A first start under way: the pod is being created or its container runs without being
    /// ready yet (vLLM loading its model, often for minutes), and nothing has failed: no
    /// restart, no earlier termination, no waiting reason but creation, not being deleted.
    /// Its metrics endpoint refusing is then expected, not an outage.
    pub fn starting(&self) -> bool {
        let creating = matches!(
            self.waiting_reason.as_deref(),
            None | Some("ContainerCreating" | "PodInitializing")
        );
        !self.ready
            && !self.terminating
            && matches!(self.phase, PodPhase::Pending | PodPhase::Running)
            && self.restarts == 0
            && self.last_termination.is_none()
            && creating
    }

    /// The most pressing state in one word for the fleet table: `CrashLoop`, a waiting reason,
    /// `Terminating`, `OOMKilled` (last run), `NotReady`; `None` when Running and Ready.
    pub fn marker(&self) -> Option<&str> {
        if self.waiting_reason.as_deref() == Some("CrashLoopBackOff") {
            return Some("CrashLoop");
        }
        if let Some(w) = &self.waiting_reason {
            return Some(w);
        }
        if self.terminating {
            return Some("Terminating");
        }
        if self.phase != PodPhase::Running {
            return Some(self.phase.as_str());
        }
        if let Some(t) = &self.last_termination {
            if t.reason == "OOMKilled" {
                return Some("OOMKilled");
            }
        }
        if !self.ready {
            return Some("NotReady");
        }
        if self.routed == Some(false) {
            return Some("Unrouted");
        }
        None
    }

    /// Record the pod's routes: it is routed when some route sends it traffic.
    pub fn set_routing(&mut self, routing: super::routing::PodRouting) {
        self.routed = Some(routing.routed());
        self.routing = Some(routing);
        self.refresh();
    }

    /// Carry the event and log buffers of an earlier version of the same pod over to this one.
    pub fn keep_text_from(&mut self, earlier: &mut PodInfo) {
        if self.uid == earlier.uid {
            std::mem::swap(&mut self.events, &mut earlier.events);
            std::mem::swap(&mut self.logs, &mut earlier.logs);
        }
    }

    /// The label value for `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_never_kept_even_with_a_tuning_prefix() {
        assert!(EnvVar::is_relevant("OMP_NUM_THREADS"));
        assert!(EnvVar::is_relevant("NCCL_DEBUG"));
        assert!(EnvVar::is_relevant("VLLM_ATTENTION_BACKEND"));
        assert!(!EnvVar::is_relevant("VLLM_API_KEY"));
        assert!(!EnvVar::is_relevant("HF_TOKEN"));
        assert!(!EnvVar::is_relevant("HF_HUB_TOKEN"));
        assert!(!EnvVar::is_relevant("PATH"));
    }

    #[test]
    fn phases_round_trip_and_unknown_text_is_unknown() {
        for p in ["Pending", "Running", "Succeeded", "Failed"] {
            assert_eq!(PodPhase::parse(p).as_str(), p);
        }
        assert_eq!(PodPhase::parse("Exploded"), PodPhase::Unknown);
    }
}
