//! What a recording keeps of Kubernetes: each update the console (or `kvtop check --kube`)
//! folded into its state, so that a replay has the pods, their events and logs, the
//! Deployments and the discovery notes as they were. Updates are rare and their shapes many:
//! a record holds one as JSON.

use std::collections::BTreeMap;

use crate::fleet::{Fleet, TargetId};
use crate::kube_model::{ContextSearch, DeploymentSummary, PodInfo, PodKey, ScrapeRoute};

/// One Kubernetes update as recorded.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum KubeChange {
    /// Pods that appeared or changed, each with the fleet target it became (the targets are
    /// recorded before it) and all that was known of it then (events and log lines too), and
    /// pods that went away.
    Pods {
        pods: Vec<(TargetId, PodInfo)>,
        gone: Vec<PodKey>,
    },
    /// The recent events about a pod, oldest first (replacing the previous set).
    Events { key: PodKey, messages: Vec<String> },
    /// New log lines of a pod's vLLM container, oldest first.
    Logs { key: PodKey, lines: Vec<String> },
    /// The Deployments of one context.
    Workloads {
        context: String,
        deployments: Vec<DeploymentSummary>,
    },
    /// A context's task failed (`Some`, the error as it was shown) or works again.
    Problem {
        context: String,
        task: String,
        error: Option<String>,
    },
    /// What a context's discovery searched and found.
    Searched(ContextSearch),
    /// A target's scrape route changed.
    Route {
        target: TargetId,
        route: ScrapeRoute,
    },
}

impl KubeChange {
    /// Fold what this change says about pods into `fleet`, whose pods are `pods` (each pod's
    /// target): what the rules read of a pod. Other changes leave both as they are.
    pub fn apply_to_pods(self, fleet: &mut Fleet, pods: &mut BTreeMap<PodKey, TargetId>) {
        match self {
            KubeChange::Pods {
                pods: changed,
                gone,
            } => {
                for key in gone {
                    pods.remove(&key);
                }
                for (id, pod) in changed {
                    // A pod seen again under another target: its old target is the fleet's
                    // business (the recorded targets), the key follows the pod.
                    pods.insert(pod.key.clone(), id);
                    fleet.set_pod_info(id, pod);
                }
            }
            KubeChange::Events { key, messages } => {
                if let Some(pod) = pod_mut(fleet, pods, &key) {
                    pod.events.replace(messages);
                }
            }
            KubeChange::Logs { key, lines } => {
                if let Some(pod) = pod_mut(fleet, pods, &key) {
                    pod.logs.extend(lines);
                }
            }
            KubeChange::Workloads { .. }
            | KubeChange::Problem { .. }
            | KubeChange::Searched(_)
            | KubeChange::Route { .. } => {}
        }
    }
}

fn pod_mut<'a>(
    fleet: &'a mut Fleet,
    pods: &BTreeMap<PodKey, TargetId>,
    key: &PodKey,
) -> Option<&'a mut PodInfo> {
    fleet.pod_info_mut(*pods.get(key)?)
}

/// Every pod `fleet` knows, with its target, one change each (a pod's log lines make a
/// record large enough): the state a new file (or what follows a gap) starts from.
pub fn snapshot(fleet: &Fleet) -> Vec<KubeChange> {
    fleet
        .targets()
        .iter()
        .filter_map(|t| fleet.pod_info(t.id).map(|pod| (t.id, pod.clone())))
        .map(|pod| KubeChange::Pods {
            pods: vec![pod],
            gone: Vec::new(),
        })
        .collect()
}
