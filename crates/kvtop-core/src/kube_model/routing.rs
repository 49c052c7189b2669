//! PURE. Which routes send a pod traffic, read from what really routes: the Services of its
//! namespace (their selectors, and the EndpointSlices that list the pod) and the Gateway API
//! Inference Extension `InferencePool`s (their `spec.selector`). For each route, the one label
//! whose removal stops it, chosen so the pod stays owned by its ReplicaSet when it can.
//!
//! kvtop used to remove a label of its own (`kvtop.dev/serving`) that no real Service selects
//! on, so on a real cluster traffic kept flowing while it evicted. Deriving the label from the
//! routes is what makes the drain's "out of routing" true.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as K8sSelector;
use serde_json::Value;

/// The label the EndpointSlice controller puts on a Service's slices.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Group and version of the `InferencePool` CRD, newest first: the GA group (v1,
/// `spec.selector.matchLabels`) and the experimental one (v1alpha2, `spec.selector` a plain map).
pub const INFERENCE_POOL_VERSIONS: [(&str, &str); 2] = [
    ("inference.networking.k8s.io", "v1"),
    ("inference.networking.x-k8s.io", "v1alpha2"),
];

/// The version served for an InferencePool group (`None` for an unknown group).
pub fn inference_pool_version(group: &str) -> Option<&'static str> {
    INFERENCE_POOL_VERSIONS
        .iter()
        .find(|(g, _)| *g == group)
        .map(|(_, v)| *v)
}

/// Whether a pool's selector selects these labels (an empty selector selects nothing).
pub fn pool_selects(pool: &InferencePool, labels: &BTreeMap<String, String>) -> bool {
    matches(&pool.selector, labels)
}

/// The plural resource name of InferencePools.
pub const INFERENCE_POOL_PLURAL: &str = "inferencepools";

/// What kvtop keeps of an InferencePool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferencePool {
    pub namespace: String,
    pub name: String,
    /// API group it was read from (`inference.networking.k8s.io`).
    pub group: String,
    /// Labels a pod must carry to be in the pool.
    pub selector: BTreeMap<String, String>,
}

impl InferencePool {
    /// Read a pool from its JSON: v1 keeps the labels under `spec.selector.matchLabels`,
    /// v1alpha2 has them directly in `spec.selector`. `None` without a name.
    pub fn from_json(obj: &Value) -> Option<InferencePool> {
        let meta = &obj["metadata"];
        let name = meta["name"].as_str().filter(|n| !n.is_empty())?.to_owned();
        let group = obj["apiVersion"]
            .as_str()
            .and_then(|v| v.split_once('/'))
            .map(|(g, _)| g.to_owned())
            .unwrap_or_default();
        let selector_value = &obj["spec"]["selector"];
        let labels = match selector_value.get("matchLabels") {
            Some(m) => m,
            None => selector_value,
        };
        let selector = labels
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(InferencePool {
            namespace: meta["namespace"].as_str().unwrap_or_default().to_owned(),
            name,
            group,
            selector,
        })
    }
}

/// What sends a pod traffic.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum RouteKind {
    Service,
    InferencePool,
}

impl RouteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Service => "Service",
            RouteKind::InferencePool => "InferencePool",
        }
    }
}

/// One route to the pod.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Route {
    pub kind: RouteKind,
    pub name: String,
    /// API group of a pool (empty for a Service).
    pub group: String,
    /// Labels the route's selector requires; `None` for a Service without selector, whose
    /// EndpointSlices someone writes by hand (labels cannot take the pod out of it).
    pub selector: Option<BTreeMap<String, String>>,
    /// The pod gets traffic through it now: a ready endpoint of one of the Service's slices,
    /// or a ready pod the pool selects.
    pub active: bool,
    /// The label whose removal stops the route (`None`: labels cannot).
    pub cut: Option<String>,
}

impl Route {
    /// `Service vllm-llama-8b`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind.as_str(), self.name)
    }
}

/// One label to remove and the routes its removal stops.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LabelRemoval {
    pub label: String,
    /// Its value on the pod (to put it back).
    pub value: String,
    /// The routes it stops, as [`Route::describe`] names them.
    pub stops: Vec<String>,
    /// The owning ReplicaSet's selector needs it too: removing it orphans the pod.
    pub orphans: bool,
}

/// The routes of one pod and how to take it out of them.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PodRouting {
    pub routes: Vec<Route>,
    /// Labels to remove, each once, in route order.
    pub removals: Vec<LabelRemoval>,
}

impl PodRouting {
    /// Some route sends the pod traffic now.
    pub fn routed(&self) -> bool {
        self.routes.iter().any(|r| r.active)
    }

    /// Some removal takes a label the ReplicaSet selects on: the pod leaves its ReplicaSet.
    pub fn orphans(&self) -> bool {
        self.removals.iter().any(|r| r.orphans)
    }

    /// Routes no label removal stops.
    pub fn unremovable(&self) -> impl Iterator<Item = &Route> {
        self.routes.iter().filter(|r| r.cut.is_none())
    }

    /// Names of the Services whose EndpointSlices the drain waits on.
    pub fn services(&self) -> Vec<String> {
        self.names(RouteKind::Service)
    }

    /// The pools the drain waits on, as (group, name).
    pub fn pools(&self) -> Vec<(String, String)> {
        self.routes
            .iter()
            .filter(|r| r.kind == RouteKind::InferencePool && r.cut.is_some())
            .map(|r| (r.group.clone(), r.name.clone()))
            .collect()
    }

    fn names(&self, kind: RouteKind) -> Vec<String> {
        self.routes
            .iter()
            .filter(|r| r.kind == kind && r.cut.is_some())
            .map(|r| r.name.clone())
            .collect()
    }
}

/// The pod being routed.
#[derive(Debug, Clone, Copy)]
pub struct RoutedPod<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub ip: Option<&'a str>,
    pub labels: &'a BTreeMap<String, String>,
    pub ready: bool,
}

/// The routing objects of the pod's namespace (others are ignored).
#[derive(Debug, Clone, Copy, Default)]
pub struct RoutingObjects<'a> {
    pub services: &'a [Service],
    pub slices: &'a [EndpointSlice],
    pub pools: &'a [InferencePool],
}

/// Whether the slice lists the pod, and whether as ready: by its target reference, and by
/// address only for endpoints without one (several pods may share an address in tests and
/// host-network setups, never a reference).
pub fn slice_lists(slice: &EndpointSlice, pod: &RoutedPod<'_>) -> Option<bool> {
    slice.endpoints.iter().find_map(|e| {
        let listed = match &e.target_ref {
            Some(t) => {
                t.kind.as_deref().is_none_or(|k| k == "Pod")
                    && (t
                        .uid
                        .as_deref()
                        .is_some_and(|u| !u.is_empty() && u == pod.uid)
                        || (t.uid.is_none()
                            && t.name.as_deref() == Some(pod.name)
                            && t.namespace.as_deref().is_none_or(|n| n == pod.namespace)))
            }
            None => pod.ip.is_some_and(|ip| e.addresses.iter().any(|a| a == ip)),
        };
        // A nil `ready` means ready (the API's documented reading).
        listed.then(|| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
    })
}

fn service_selector(service: &Service) -> Option<BTreeMap<String, String>> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.clone())
        .filter(|s| !s.is_empty())
}

fn matches(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Label keys a ReplicaSet selector uses (its `matchLabels` and `matchExpressions`).
fn selector_keys(selector: Option<&K8sSelector>) -> BTreeSet<String> {
    let Some(s) = selector else {
        return BTreeSet::new();
    };
    let mut keys: BTreeSet<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect();
    keys.extend(s.match_expressions.iter().flatten().map(|e| e.key.clone()));
    keys
}

/// Every route to `pod` and the labels to remove, preferring labels `owner_selector` (the
/// owning ReplicaSet's) does not use, and a label already chosen for an earlier route.
pub fn resolve(
    pod: &RoutedPod<'_>,
    objects: &RoutingObjects<'_>,
    owner_selector: Option<&K8sSelector>,
) -> PodRouting {
    let mut routes: Vec<Route> = Vec::new();
    for service in objects.services {
        let Some(name) = service.metadata.name.as_deref() else {
            continue;
        };
        if service
            .metadata
            .namespace
            .as_deref()
            .is_some_and(|n| n != pod.namespace)
        {
            continue;
        }
        let listed = objects
            .slices
            .iter()
            .filter(|s| {
                s.metadata
                    .namespace
                    .as_deref()
                    .is_none_or(|n| n == pod.namespace)
                    && s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(SERVICE_NAME_LABEL))
                        .is_some_and(|svc| svc == name)
            })
            .filter_map(|s| slice_lists(s, pod))
            .reduce(|a, b| a || b);
        let selector = service_selector(service);
        let selected = selector.as_ref().is_some_and(|s| matches(s, pod.labels));
        if !selected && listed.is_none() {
            continue;
        }
        routes.push(Route {
            kind: RouteKind::Service,
            name: name.to_owned(),
            group: String::new(),
            // Slices listing a pod the selector does not match are written by hand.
            selector: selector.filter(|_| selected),
            active: listed == Some(true),
            cut: None,
        });
    }
    for pool in objects.pools {
        if pool.namespace != pod.namespace || !matches(&pool.selector, pod.labels) {
            continue;
        }
        routes.push(Route {
            kind: RouteKind::InferencePool,
            name: pool.name.clone(),
            group: pool.group.clone(),
            selector: Some(pool.selector.clone()),
            active: pod.ready,
            cut: None,
        });
    }
    let owned = selector_keys(owner_selector);
    let mut removals: Vec<LabelRemoval> = Vec::new();
    for route in &mut routes {
        let Some(selector) = &route.selector else {
            continue;
        };
        let free = |k: &&String| !owned.contains(*k);
        let chosen = removals
            .iter()
            .map(|r| &r.label)
            .find(|l| selector.contains_key(*l) && free(l))
            .or_else(|| selector.keys().find(free))
            .or_else(|| {
                removals
                    .iter()
                    .map(|r| &r.label)
                    .find(|l| selector.contains_key(*l))
            })
            .or_else(|| selector.keys().next())
            .cloned();
        let Some(label) = chosen else {
            continue;
        };
        route.cut = Some(label.clone());
        match removals.iter_mut().find(|r| r.label == label) {
            Some(r) => r.stops.push(route.describe()),
            None => removals.push(LabelRemoval {
                value: pod.labels.get(&label).cloned().unwrap_or_default(),
                orphans: owned.contains(&label),
                stops: vec![route.describe()],
                label,
            }),
        }
    }
    PodRouting { routes, removals }
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
