//! Routing truth: an engine gets requests only while its pod is a ready endpoint in some
//! Service's EndpointSlices, or a ready pod an InferencePool selects, so removing any label a
//! Service or pool requires stops its traffic, as on a real cluster.

use serde_json::Value;

use super::endpoints::{is_ready, selector_of};
use super::{Cluster, label_map};
use crate::kube::engines::EngineLink;
use kvtop_core::kube_model::LabelSelector;

/// The labels a pool selects on (v1 `matchLabels`, v1alpha2 a plain map).
fn pool_selector(pool: &Value) -> Option<LabelSelector> {
    let selector = &pool["spec"]["selector"];
    let labels = selector
        .get("matchLabels")
        .unwrap_or(selector)
        .as_object()?;
    let text: Vec<String> = labels
        .iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
        .collect();
    LabelSelector::parse(&text.join(","))
        .ok()
        .filter(|s| !s.is_empty())
}

impl Cluster {
    /// Some pool of the pod's namespace selects it.
    fn pooled(&self, pod: &Value) -> bool {
        let labels = label_map(pod);
        self.pools.iter().any(|pool| {
            pool["metadata"]["namespace"] == pod["metadata"]["namespace"]
                && pool_selector(pool).is_some_and(|s| s.matches(&labels))
        })
    }

    /// The pod is a ready endpoint of some EndpointSlice.
    fn listed_ready(&self, pod: &Value) -> bool {
        let uid = &pod["metadata"]["uid"];
        self.endpoint_slices.iter().any(|slice| {
            slice["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["targetRef"]["uid"] == *uid && e["conditions"]["ready"] == true)
        })
    }

    /// Whether a pod about to be ready will get traffic: some Service or pool selects it.
    pub(super) fn selected_by_a_route(&self, pod: &Value) -> bool {
        let labels = label_map(pod);
        self.pooled(pod)
            || self.services.iter().any(|service| {
                service["metadata"]["namespace"] == pod["metadata"]["namespace"]
                    && selector_of(service).is_some_and(|s| !s.is_empty() && s.matches(&labels))
            })
    }

    /// Bring the EndpointSlices in step with the pods, then each running engine's traffic in
    /// step with whether its pod is routed. A pod being deleted is left alone: its engine is
    /// its replacement's next.
    pub(super) fn refresh_routing(&mut self, now: f64, engines: &EngineLink) {
        self.refresh_endpoint_slices(now);
        for index in 0..self.pods.len() {
            let Some(pod) = self.pods.get(index) else {
                continue;
            };
            if !pod.engine_up || pod.deleting.is_some() || pod.crash {
                continue;
            }
            let routed =
                self.listed_ready(&pod.obj) || (is_ready(&pod.obj) && self.pooled(&pod.obj));
            let engine = pod.engine;
            if pod.routed == Some(routed) {
                continue;
            }
            engines.set_routed(engine, now, routed);
            if let Some(pod) = self.pods.get_mut(index) {
                pod.routed = Some(routed);
            }
        }
    }
}
