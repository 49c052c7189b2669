//! PURE. KEDA `ScaledObject`s (keda.sh/v1alpha1) beside the Deployments they scale: bounds,
//! triggers, whether KEDA is active or paused, and the HPA it drives. The CRD is not part of
//! the Kubernetes API types, so the fields kvtop reads are declared here; everything else of
//! the object is ignored.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::workload::DeploymentSummary;

/// The annotation that pauses a ScaledObject (`"true"`), and the one that pins its replicas.
pub const PAUSED_ANNOTATION: &str = "autoscaling.keda.sh/paused";
pub const PAUSED_REPLICAS_ANNOTATION: &str = "autoscaling.keda.sh/paused-replicas";

/// KEDA's defaults when the bounds are not set.
const DEFAULT_MIN: i32 = 0;
const DEFAULT_MAX: i32 = 100;

/// A ScaledObject, as much of it as kvtop reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ScaledObject {
    pub metadata: ObjectMeta,
    pub spec: ScaledObjectSpec,
    pub status: ScaledObjectStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScaledObjectSpec {
    pub scale_target_ref: ScaleTargetRef,
    pub min_replica_count: Option<i32>,
    pub max_replica_count: Option<i32>,
    pub triggers: Vec<Trigger>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScaleTargetRef {
    pub name: String,
    /// Default `Deployment`.
    pub kind: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Trigger {
    #[serde(rename = "type")]
    pub type_: String,
    pub name: Option<String>,
    /// Trigger settings; KEDA declares them as strings.
    pub metadata: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScaledObjectStatus {
    pub hpa_name: Option<String>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
}

/// What the Deployments view shows of a ScaledObject.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaledObjectSummary {
    pub name: String,
    pub min: u32,
    pub max: u32,
    /// One line per trigger: `prometheus: QUERY > THRESHOLD`, or its type (and name).
    pub triggers: Vec<String>,
    /// The `Ready` condition (`None` before KEDA reported).
    pub ready: Option<bool>,
    /// The `Active` condition: a trigger is above its activation threshold.
    pub active: Option<bool>,
    /// The `Fallback` condition: the triggers fail and KEDA holds the fallback replicas.
    pub fallback: bool,
    /// Paused by annotation (`Some(n)`: pinned at n replicas).
    pub paused: Option<Option<u32>>,
    /// The HPA KEDA created for it.
    pub hpa: Option<String>,
}

impl ScaledObject {
    /// Parse a ScaledObject from its JSON (a dynamic object from the API).
    pub fn from_json(value: serde_json::Value) -> Result<ScaledObject, serde_json::Error> {
        serde_json::from_value(value)
    }

    fn condition(&self, kind: &str) -> Option<bool> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == kind)
            .and_then(|c| match c.status.as_str() {
                "True" => Some(true),
                "False" => Some(false),
                _ => None,
            })
    }

    /// The Deployment it scales, if it scales one.
    fn deployment(&self) -> Option<&str> {
        let kind = self
            .spec
            .scale_target_ref
            .kind
            .as_deref()
            .unwrap_or("Deployment");
        (kind == "Deployment" && !self.spec.scale_target_ref.name.is_empty())
            .then_some(self.spec.scale_target_ref.name.as_str())
    }

    pub fn summary(&self) -> ScaledObjectSummary {
        let bound = |v: Option<i32>, default: i32| u32::try_from(v.unwrap_or(default)).unwrap_or(0);
        let annotations = self.metadata.annotations.clone().unwrap_or_default();
        let pinned = annotations
            .get(PAUSED_REPLICAS_ANNOTATION)
            .and_then(|n| n.trim().parse::<u32>().ok());
        let paused = match (
            annotations.get(PAUSED_ANNOTATION).map(String::as_str),
            pinned,
        ) {
            (_, Some(n)) => Some(Some(n)),
            (Some("true"), None) => Some(None),
            _ => None,
        };
        ScaledObjectSummary {
            name: self.metadata.name.clone().unwrap_or_default(),
            min: bound(self.spec.min_replica_count, DEFAULT_MIN),
            max: bound(self.spec.max_replica_count, DEFAULT_MAX),
            triggers: self.spec.triggers.iter().map(trigger_text).collect(),
            ready: self.condition("Ready"),
            active: self.condition("Active"),
            fallback: self.condition("Fallback") == Some(true),
            paused,
            hpa: self.status.hpa_name.clone(),
        }
    }
}

fn setting<'a>(t: &'a Trigger, key: &str) -> Option<&'a str> {
    t.metadata.get(key).and_then(serde_json::Value::as_str)
}

/// `prometheus: QUERY > THRESHOLD`; other trigger types by type and name.
fn trigger_text(t: &Trigger) -> String {
    match (setting(t, "query"), setting(t, "threshold")) {
        (Some(query), Some(threshold)) => format!("{}: {query} > {threshold}", t.type_),
        _ => match &t.name {
            Some(name) => format!("{} ({name})", t.type_),
            None => t.type_.clone(),
        },
    }
}

/// Give each Deployment summary the ScaledObject of its namespace that scales it.
pub fn attach_scaled_objects(summaries: &mut [DeploymentSummary], scaled: &[ScaledObject]) {
    for summary in summaries {
        summary.scaled_object = scaled
            .iter()
            .filter(|s| s.metadata.namespace.as_deref() == Some(summary.namespace.as_str()))
            .find(|s| s.deployment() == Some(summary.name.as_str()))
            .map(ScaledObject::summary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scaled(value: serde_json::Value) -> ScaledObject {
        ScaledObject::from_json(value).unwrap_or_default()
    }

    fn summary(namespace: &str, name: &str) -> DeploymentSummary {
        DeploymentSummary {
            context: "c".into(),
            namespace: namespace.into(),
            name: name.into(),
            desired: 2,
            ready: 2,
            updated: 2,
            available: 2,
            rolling_out: false,
            hpa: None,
            pdb: None,
            scaled_object: None,
        }
    }

    #[test]
    fn a_prometheus_scaled_object_reads_its_bounds_trigger_and_conditions() {
        let so = scaled(json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "llama", "namespace": "llm"},
            "spec": {
                "scaleTargetRef": {"name": "vllm-llama-8b"},
                "minReplicaCount": 1, "maxReplicaCount": 8,
                "triggers": [{"type": "prometheus", "metadata": {
                    "serverAddress": "http://prometheus:9090",
                    "query": "sum(vllm:num_requests_waiting{model_name=\"llama\"})",
                    "threshold": "50"}}]
            },
            "status": {"hpaName": "keda-hpa-llama", "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Active", "status": "False"},
                {"type": "Fallback", "status": "False"}]}
        }));
        let s = so.summary();
        assert_eq!((s.min, s.max), (1, 8));
        assert_eq!(
            s.triggers,
            ["prometheus: sum(vllm:num_requests_waiting{model_name=\"llama\"}) > 50"]
        );
        assert_eq!(
            (s.ready, s.active, s.fallback),
            (Some(true), Some(false), false)
        );
        assert_eq!(s.paused, None);
        assert_eq!(s.hpa.as_deref(), Some("keda-hpa-llama"));
    }

    #[test]
    fn defaults_pauses_and_unknown_conditions() {
        let so = scaled(json!({
            "metadata": {"name": "q", "namespace": "llm",
                         "annotations": {"autoscaling.keda.sh/paused-replicas": "2"}},
            "spec": {"scaleTargetRef": {"name": "vllm-qwen"},
                     "triggers": [{"type": "cron", "name": "office-hours", "metadata": {"start": "0 8 * * *"}}]}
        }));
        let s = so.summary();
        assert_eq!((s.min, s.max), (0, 100), "KEDA's defaults");
        assert_eq!(s.triggers, ["cron (office-hours)"]);
        assert_eq!((s.ready, s.active), (None, None));
        assert_eq!(s.paused, Some(Some(2)));
        let plain = scaled(json!({"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}));
        assert_eq!(plain.summary().paused, Some(None));
    }

    #[test]
    fn attaches_by_namespace_and_deployment_target_only() {
        let mut summaries = vec![summary("llm", "vllm-llama-8b"), summary("llm", "other")];
        let objects = [
            scaled(
                json!({"metadata": {"name": "elsewhere", "namespace": "prod"},
                          "spec": {"scaleTargetRef": {"name": "vllm-llama-8b"}}}),
            ),
            scaled(json!({"metadata": {"name": "sts", "namespace": "llm"},
                          "spec": {"scaleTargetRef": {"name": "other", "kind": "StatefulSet"}}})),
            scaled(json!({"metadata": {"name": "llama", "namespace": "llm"},
                          "spec": {"scaleTargetRef": {"name": "vllm-llama-8b", "kind": "Deployment"}}})),
        ];
        attach_scaled_objects(&mut summaries, &objects);
        assert_eq!(
            summaries[0].scaled_object.as_ref().map(|s| s.name.as_str()),
            Some("llama")
        );
        assert!(summaries[1].scaled_object.is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(ScaledObject::from_json(json!({"spec": {"triggers": "nope"}})).is_err());
        assert!(ScaledObject::from_json(json!("text")).is_err());
    }
}
