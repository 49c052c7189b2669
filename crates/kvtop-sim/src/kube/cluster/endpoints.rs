//! The EndpointSlice controller: each Service's slices list the pods its selector matches that
//! have an IP, with `ready`/`serving`/`terminating` conditions, grouped by resolved port the
//! way the real controller groups them (each engine listens on a port of its own, so each pod
//! gets a slice). A Service without endpoints keeps one empty slice.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Cluster, label_map};
use crate::kube::objects;
use kvtop_core::kube_model::LabelSelector;

/// Labels the real controller puts on the slices it manages.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// A Service port resolved against one pod: (name, port, protocol).
type ResolvedPort = (String, i64, String);

fn resolve_ports(service: &Value, pod: &Value) -> Vec<ResolvedPort> {
    let container_ports: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .collect();
    service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let target = &p["targetPort"];
            let port = match target {
                Value::String(name) => container_ports
                    .iter()
                    .find(|c| c["name"] == name.as_str())
                    .and_then(|c| c["containerPort"].as_i64())?,
                Value::Number(n) => n.as_i64()?,
                _ => p["port"].as_i64()?,
            };
            Some((
                p["name"].as_str().unwrap_or("").to_owned(),
                port,
                p["protocol"].as_str().unwrap_or("TCP").to_owned(),
            ))
        })
        .collect()
}

pub(super) fn selector_of(service: &Value) -> Option<LabelSelector> {
    let selector = service["spec"]["selector"].as_object()?;
    let text: Vec<String> = selector
        .iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
        .collect();
    LabelSelector::parse(&text.join(",")).ok()
}

pub(super) fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn endpoint(pod: &Value) -> Option<Value> {
    let ip = pod["status"]["podIP"]
        .as_str()
        .filter(|ip| !ip.is_empty())?;
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    if phase == "Succeeded" || phase == "Failed" {
        return None;
    }
    let terminating = pod["metadata"].get("deletionTimestamp").is_some();
    let ready = is_ready(pod);
    let meta = &pod["metadata"];
    let mut endpoint = json!({
        "addresses": [ip],
        "conditions": {"ready": ready && !terminating, "serving": ready, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
    });
    if let Some(node) = pod["spec"]["nodeName"].as_str() {
        endpoint["nodeName"] = node.into();
    }
    Some(endpoint)
}

fn ports_json(ports: &[ResolvedPort]) -> Value {
    ports
        .iter()
        .map(|(name, port, protocol)| json!({"name": name, "port": port, "protocol": protocol}))
        .collect()
}

impl Cluster {
    /// Bring every Service's EndpointSlices in step with its pods.
    pub(super) fn refresh_endpoint_slices(&mut self, now: f64) {
        for s in 0..self.services.len() {
            let Some(service) = self.services.get(s).cloned() else {
                continue;
            };
            let name = service["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            let namespace = service["metadata"]["namespace"].clone();
            let mut groups: BTreeMap<Vec<ResolvedPort>, Vec<Value>> = BTreeMap::new();
            if let Some(selector) = selector_of(&service) {
                for pod in self.pods.iter().map(|p| &p.obj) {
                    if pod["metadata"]["namespace"] != namespace
                        || !selector.matches(&label_map(pod))
                    {
                        continue;
                    }
                    if let Some(endpoint) = endpoint(pod) {
                        groups
                            .entry(resolve_ports(&service, pod))
                            .or_default()
                            .push(endpoint);
                    }
                }
            }
            if groups.is_empty() {
                groups.insert(Vec::new(), Vec::new());
            }
            let ours = |slice: &Value| {
                slice["metadata"]["labels"][SERVICE_NAME_LABEL] == name.as_str()
                    && slice["metadata"]["namespace"] == namespace
            };
            // Keep the slices whose ports still have endpoints (same name and uid), drop the
            // others, add one per new port set.
            let mut kept: Vec<Value> = Vec::new();
            let mut others: Vec<Value> = Vec::new();
            for slice in self.endpoint_slices.drain(..) {
                if ours(&slice) {
                    kept.push(slice);
                } else {
                    others.push(slice);
                }
            }
            self.endpoint_slices = others;
            for (ports, endpoints) in groups {
                let ports_value = ports_json(&ports);
                let slice = match kept.iter().position(|k| k["ports"] == ports_value) {
                    Some(i) => {
                        let mut slice = kept.swap_remove(i);
                        if slice["endpoints"] != Value::from(endpoints.clone()) {
                            let rv = self.bump();
                            slice["endpoints"] = endpoints.into();
                            slice["metadata"]["resourceVersion"] = rv.to_string().into();
                        }
                        slice
                    }
                    None => self.new_endpoint_slice(&service, ports_value, endpoints, now),
                };
                self.endpoint_slices.push(slice);
            }
        }
    }

    fn new_endpoint_slice(
        &mut self,
        service: &Value,
        ports: Value,
        endpoints: Vec<Value>,
        now: f64,
    ) -> Value {
        let service_name = service["metadata"]["name"].as_str().unwrap_or("");
        let namespace = service["metadata"]["namespace"].as_str().unwrap_or("");
        let name = loop {
            let candidate = format!(
                "{service_name}-{}",
                crate::fleet::k8s_suffix(&mut self.names)
            );
            if !self
                .endpoint_slices
                .iter()
                .any(|s| s["metadata"]["name"] == candidate.as_str())
            {
                break candidate;
            }
        };
        let uid = self.next_uid();
        let rv = self.bump();
        let mut meta = objects::meta(&name, namespace, &uid, now, rv);
        meta["generateName"] = format!("{service_name}-").into();
        let mut labels = service["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels[SERVICE_NAME_LABEL] = service_name.into();
        labels[MANAGED_BY_LABEL] = MANAGED_BY.into();
        meta["labels"] = labels;
        meta["ownerReferences"] = objects::owner(
            "v1",
            "Service",
            service_name,
            service["metadata"]["uid"].as_str().unwrap_or(""),
        );
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": meta,
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        })
    }
}
