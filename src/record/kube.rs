//! A live Kubernetes update as a recording keeps it ([`KubeChange`]): once folded in, so a
//! pod carries the target it became and everything known of it.

use std::collections::BTreeMap;

use crate::sources::kube::KubeUpdate;
use kvtop_core::fleet::{Fleet, TargetId};
use kvtop_core::kube_model::PodKey;
use kvtop_core::recording::KubeChange;

/// What `update` changed, read after it was folded into `fleet`, whose pods are `pods`.
pub fn change_of(
    update: KubeUpdate,
    fleet: &Fleet,
    pods: &BTreeMap<PodKey, TargetId>,
) -> KubeChange {
    match update {
        KubeUpdate::Pods { changed, gone, .. } => KubeChange::Pods {
            pods: changed
                .iter()
                .filter_map(|pod| {
                    let id = *pods.get(&pod.key)?;
                    Some((id, fleet.pod_info(id)?.clone()))
                })
                .collect(),
            gone,
        },
        KubeUpdate::Events { key, messages } => KubeChange::Events { key, messages },
        KubeUpdate::Logs { key, lines } => KubeChange::Logs { key, lines },
        KubeUpdate::Workloads {
            context,
            deployments,
        } => KubeChange::Workloads {
            context,
            deployments,
        },
        KubeUpdate::Problem {
            context,
            task,
            error,
        } => KubeChange::Problem {
            context,
            task: task.to_owned(),
            error: error.map(|e| e.to_string()),
        },
        KubeUpdate::Searched(search) => KubeChange::Searched(search),
        KubeUpdate::Route { target, route } => KubeChange::Route { target, route },
    }
}
