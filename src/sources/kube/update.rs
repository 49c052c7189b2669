//! What the Kubernetes workers tell the console ([`KubeUpdate`]) and what the console asks of
//! them ([`PodScrape`]).

use super::error::KubeError;
use kvtop_core::fleet::TargetId;
use kvtop_core::kube_model::{
    ContextSearch, DeploymentSummary, MetricsEndpoint, PodInfo, PodKey, ScrapeRoute, ScrapeVia,
};

/// News from the Kubernetes source.
#[derive(Debug, Clone, PartialEq)]
pub enum KubeUpdate {
    /// Pods of one context that appeared or changed, and pods that went away. The first update
    /// of a context lists every matching pod.
    Pods {
        context: String,
        changed: Vec<PodInfo>,
        gone: Vec<PodKey>,
    },
    /// The recent events about a pod, oldest first (replaces the previous set).
    Events { key: PodKey, messages: Vec<String> },
    /// New log lines of a pod's vLLM container, oldest first.
    Logs { key: PodKey, lines: Vec<String> },
    /// The Deployments owning discovered pods in one context, with their HPA and PDB.
    Workloads {
        context: String,
        deployments: Vec<DeploymentSummary>,
    },
    /// A context's source failed (`Some`) or works again (`None`), per task (`pods`,
    /// `events`, `logs`, `workloads`, `connect`).
    Problem {
        context: String,
        task: &'static str,
        error: Option<KubeError>,
    },
    /// What a context's pod discovery searched and found (sent when it changes): the empty
    /// fleet explains itself with it.
    Searched(ContextSearch),
    /// A scrape worker changed route (auto mode fell back to the API server's proxy).
    Route {
        target: TargetId,
        route: ScrapeRoute,
    },
}

/// How to scrape one discovered pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodScrape {
    pub target: TargetId,
    pub key: PodKey,
    pub endpoint: MetricsEndpoint,
    pub via: ScrapeVia,
}
