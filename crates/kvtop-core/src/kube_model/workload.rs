//! PURE. Deployments beside the fleet: ready/desired replicas, their HorizontalPodAutoscaler
//! (autoscaling/v2) and PodDisruptionBudget (policy/v1), summarised from the API objects.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, MetricStatus, MetricTarget};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::selector::LabelSelector;

/// One Deployment and what guards its replica count.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeploymentSummary {
    pub context: String,
    pub namespace: String,
    pub name: String,
    /// `spec.replicas`.
    pub desired: u32,
    pub ready: u32,
    pub updated: u32,
    pub available: u32,
    /// Replicas of the current pod template, different from `desired` during a rollout.
    pub rolling_out: bool,
    pub hpa: Option<HpaSummary>,
    pub pdb: Option<PdbSummary>,
    /// The KEDA ScaledObject that scales it (see [`super::keda::attach_scaled_objects`]).
    pub scaled_object: Option<super::keda::ScaledObjectSummary>,
}

/// A HorizontalPodAutoscaler targeting the Deployment.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HpaSummary {
    pub name: String,
    pub current: Option<u32>,
    pub desired: u32,
    pub min: u32,
    pub max: u32,
    /// Each metric: `name current/target` (e.g. `vllm:num_requests_waiting 12/50`).
    pub metrics: Vec<String>,
    /// The `ScalingLimited` condition's reason when it is true (`TooManyReplicas`).
    pub limited: Option<String>,
}

/// A PodDisruptionBudget selecting the Deployment's pods.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PdbSummary {
    pub name: String,
    /// `minAvailable: 2` or `maxUnavailable: 25%`.
    pub rule: String,
    pub disruptions_allowed: i32,
    pub current_healthy: i32,
    pub desired_healthy: i32,
    pub expected_pods: i32,
}

/// Summaries of `deployments`, each with the HPA whose scale target names it and the first PDB
/// whose selector matches its pod template's labels. Sorted by namespace, then name.
pub fn summarize(
    context: &str,
    deployments: &[Deployment],
    hpas: &[HorizontalPodAutoscaler],
    pdbs: &[PodDisruptionBudget],
) -> Vec<DeploymentSummary> {
    let mut out: Vec<DeploymentSummary> = deployments
        .iter()
        .filter_map(|d| {
            let name = d.metadata.name.clone()?;
            let namespace = d.metadata.namespace.clone().unwrap_or_default();
            let status = d.status.clone().unwrap_or_default();
            let count = |v: Option<i32>| v.and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
            let desired = d.spec.as_ref().map_or(1, |s| count(s.replicas.or(Some(1))));
            let updated = count(status.updated_replicas);
            let template_labels = d
                .spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref())
                .and_then(|m| m.labels.clone())
                .unwrap_or_default();
            let hpa = hpas
                .iter()
                .filter(|h| h.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .find(|h| {
                    h.spec.as_ref().is_some_and(|s| {
                        s.scale_target_ref.kind == "Deployment" && s.scale_target_ref.name == name
                    })
                })
                .map(hpa_summary);
            let pdb = pdbs
                .iter()
                .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .find(|p| {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.selector.as_ref())
                        .and_then(|s| LabelSelector::from_k8s(s).ok())
                        // An empty selector in policy/v1 selects every pod of the namespace.
                        .is_some_and(|s| s.matches(&template_labels))
                })
                .map(pdb_summary);
            Some(DeploymentSummary {
                context: context.to_owned(),
                namespace,
                name,
                desired,
                ready: count(status.ready_replicas),
                updated,
                available: count(status.available_replicas),
                rolling_out: updated < desired || count(status.replicas) > desired,
                hpa,
                pdb,
                scaled_object: None,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out
}

fn hpa_summary(h: &HorizontalPodAutoscaler) -> HpaSummary {
    let spec = h.spec.clone().unwrap_or_default();
    let status = h.status.clone().unwrap_or_default();
    let unsigned = |n: i32| u32::try_from(n).unwrap_or(0);
    let targets: Vec<(String, String)> = spec
        .metrics
        .iter()
        .flatten()
        .filter_map(|m| {
            let (name, target) = match m.type_.as_str() {
                "Pods" => m.pods.as_ref().map(|p| (p.metric.name.clone(), &p.target)),
                "Resource" => m.resource.as_ref().map(|r| (r.name.clone(), &r.target)),
                "External" => m
                    .external
                    .as_ref()
                    .map(|e| (e.metric.name.clone(), &e.target)),
                "Object" => m
                    .object
                    .as_ref()
                    .map(|o| (o.metric.name.clone(), &o.target)),
                "ContainerResource" => m
                    .container_resource
                    .as_ref()
                    .map(|c| (c.name.clone(), &c.target)),
                _ => None,
            }?;
            Some((name, target_text(target)))
        })
        .collect();
    let currents: Vec<(String, String)> = status
        .current_metrics
        .iter()
        .flatten()
        .filter_map(current_text)
        .collect();
    let metrics = targets
        .iter()
        .map(|(name, target)| {
            let current = currents
                .iter()
                .find(|(n, _)| n == name)
                .map_or("–", |(_, v)| v.as_str());
            format!("{name} {current}/{target}")
        })
        .collect();
    let limited = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "ScalingLimited" && c.status == "True")
        .map(|c| {
            c.reason
                .clone()
                .unwrap_or_else(|| "ScalingLimited".to_owned())
        });
    HpaSummary {
        name: h.metadata.name.clone().unwrap_or_default(),
        current: status.current_replicas.map(unsigned),
        desired: unsigned(status.desired_replicas),
        min: unsigned(spec.min_replicas.unwrap_or(1)),
        max: unsigned(spec.max_replicas),
        metrics,
        limited,
    }
}

fn target_text(t: &MetricTarget) -> String {
    if let Some(u) = t.average_utilization {
        format!("{u}%")
    } else if let Some(v) = &t.average_value {
        readable_quantity(&v.0)
    } else if let Some(v) = &t.value {
        readable_quantity(&v.0)
    } else {
        t.type_.clone()
    }
}

/// A quantity in milli-units as a decimal (`24250m` → `24.25`); anything else as written.
pub(crate) fn readable_quantity(q: &str) -> String {
    match q.strip_suffix('m').and_then(|n| n.parse::<i64>().ok()) {
        Some(milli) => {
            let text = format!("{:.3}", milli as f64 / 1000.0);
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
        None => q.to_owned(),
    }
}

fn current_text(m: &MetricStatus) -> Option<(String, String)> {
    let (name, current) = match m.type_.as_str() {
        "Pods" => m.pods.as_ref().map(|p| (p.metric.name.clone(), &p.current)),
        "Resource" => m.resource.as_ref().map(|r| (r.name.clone(), &r.current)),
        "External" => m
            .external
            .as_ref()
            .map(|e| (e.metric.name.clone(), &e.current)),
        "Object" => m
            .object
            .as_ref()
            .map(|o| (o.metric.name.clone(), &o.current)),
        "ContainerResource" => m
            .container_resource
            .as_ref()
            .map(|c| (c.name.clone(), &c.current)),
        _ => None,
    }?;
    let text = if let Some(u) = current.average_utilization {
        format!("{u}%")
    } else if let Some(v) = &current.average_value {
        readable_quantity(&v.0)
    } else {
        readable_quantity(&current.value.as_ref()?.0)
    };
    Some((name, text))
}

fn pdb_summary(p: &PodDisruptionBudget) -> PdbSummary {
    let spec = p.spec.clone().unwrap_or_default();
    let status = p.status.clone().unwrap_or_default();
    let int_or = |v: &IntOrString| match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    let rule = match (&spec.min_available, &spec.max_unavailable) {
        (Some(min), _) => format!("minAvailable {}", int_or(min)),
        (None, Some(max)) => format!("maxUnavailable {}", int_or(max)),
        (None, None) => "no limit".to_owned(),
    };
    PdbSummary {
        name: p.metadata.name.clone().unwrap_or_default(),
        rule,
        disruptions_allowed: status.disruptions_allowed,
        current_healthy: status.current_healthy,
        desired_healthy: status.desired_healthy,
        expected_pods: status.expected_pods,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from<T: serde::de::DeserializeOwned + Default>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn deployment_with_its_hpa_and_pdb() {
        let deployment: Deployment = from(serde_json::json!({
            "metadata": {"name": "vllm-llama-8b", "namespace": "llm"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"model": "llama-8b"}},
                "template": {"metadata": {"labels": {"model": "llama-8b", "app": "vllm"}}}
            },
            "status": {"replicas": 4, "readyReplicas": 3, "updatedReplicas": 4, "availableReplicas": 3}
        }));
        let hpa: HorizontalPodAutoscaler = from(serde_json::json!({
            "metadata": {"name": "vllm-llama-8b", "namespace": "llm"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm-llama-8b"},
                "minReplicas": 2, "maxReplicas": 4,
                "metrics": [{"type": "Pods", "pods": {
                    "metric": {"name": "vllm:num_requests_waiting"},
                    "target": {"type": "AverageValue", "averageValue": "50"}}}]
            },
            "status": {
                "currentReplicas": 4, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Pods", "pods": {
                    "metric": {"name": "vllm:num_requests_waiting"},
                    "current": {"averageValue": "180"}}}],
                "conditions": [{"type": "ScalingLimited", "status": "True", "reason": "TooManyReplicas"}]
            }
        }));
        let other_ns_pdb: PodDisruptionBudget = from(serde_json::json!({
            "metadata": {"name": "elsewhere", "namespace": "other"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"model": "llama-8b"}}}
        }));
        let pdb: PodDisruptionBudget = from(serde_json::json!({
            "metadata": {"name": "vllm-llama-8b", "namespace": "llm"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"model": "llama-8b"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 4}
        }));
        let s = summarize("prod", &[deployment], &[hpa], &[other_ns_pdb, pdb]);
        assert_eq!(s.len(), 1);
        let d = &s[0];
        assert_eq!((d.desired, d.ready, d.available), (4, 3, 3));
        assert!(!d.rolling_out);
        let hpa = d.hpa.clone().unwrap_or_else(|| panic!("no hpa"));
        assert_eq!(
            (hpa.min, hpa.max, hpa.desired, hpa.current),
            (2, 4, 4, Some(4))
        );
        assert_eq!(hpa.metrics, ["vllm:num_requests_waiting 180/50"]);
        assert_eq!(hpa.limited.as_deref(), Some("TooManyReplicas"));
        let pdb = d.pdb.clone().unwrap_or_else(|| panic!("no pdb"));
        assert_eq!(pdb.name, "vllm-llama-8b");
        assert_eq!(pdb.rule, "minAvailable 2");
        assert_eq!(pdb.disruptions_allowed, 1);
    }

    #[test]
    fn milli_quantities_read_as_decimals() {
        assert_eq!(readable_quantity("24250m"), "24.25");
        assert_eq!(readable_quantity("500m"), "0.5");
        assert_eq!(readable_quantity("1000m"), "1");
        assert_eq!(readable_quantity("50"), "50");
        assert_eq!(readable_quantity("2Gi"), "2Gi");
    }

    #[test]
    fn a_rollout_in_progress_and_no_guards() {
        let deployment: Deployment = from(serde_json::json!({
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"replicas": 3, "selector": {}, "template": {}},
            "status": {"replicas": 3, "updatedReplicas": 1, "readyReplicas": 2}
        }));
        let s = summarize("c", &[deployment], &[], &[]);
        assert!(s[0].rolling_out);
        assert_eq!(s[0].hpa, None);
        assert_eq!(s[0].pdb, None);
    }
}
