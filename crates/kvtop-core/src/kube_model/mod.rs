//! PURE. The Kubernetes side of the fleet as data: label and field selectors, vLLM arguments
//! read from a container spec, what kvtop keeps about each vLLM pod ([`PodInfo`]), where its
//! metrics are served ([`MetricsEndpoint`]) and Deployment summaries with their HPA and PDB.
//!
//! Nothing here talks to a cluster: the API objects (k8s-openapi types, plain data) come in,
//! kvtop's own types go out. The I/O lives in `sources::kube`; the simulated API in `sim::kube`
//! reuses the selectors.

pub mod convert;
pub mod endpoint;
pub mod keda;
pub mod lines;
pub mod naming;
pub mod pod;
pub mod recognize;
pub mod routing;
pub mod search;
pub mod selector;
pub mod vllm_args;
pub mod workload;

pub use convert::{ConvertOptions, pod_info};
pub use endpoint::{
    EndpointDefaults, MetricsEndpoint, NamedPort, PortSource, ScrapeRoute, ScrapeVia,
};
pub use keda::{ScaledObject, ScaledObjectSummary, attach_scaled_objects};
pub use lines::LineRing;
pub use pod::{EnvVar, Owner, PodInfo, PodKey, PodPhase, Termination};
pub use recognize::{EngineKind, MatchedBy, Recognized, Recognizer};
pub use routing::{
    InferencePool, LabelRemoval, PodRouting, Route, RouteKind, RoutedPod, RoutingObjects,
};
pub use search::{ContextSearch, SearchOutcome, explain_empty};
pub use selector::{FieldSelector, LabelSelector, SelectorError};
pub use vllm_args::VllmArgs;
pub use workload::{DeploymentSummary, HpaSummary, PdbSummary, summarize};

/// Selectors tried when none is configured; a pod matching any of them is watched:
/// the vLLM production-stack Helm chart's engine pods, llm-d's inference pods, and the
/// recommended `app.kubernetes.io/name=vllm`.
pub const DEFAULT_SELECTORS: [&str; 3] = [
    "app.kubernetes.io/component=serving-engine",
    "llm-d.ai/inferenceServing=true",
    "app.kubernetes.io/name=vllm",
];
