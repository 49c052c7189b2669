//! The resources the simulated API serves, described once: discovery, routing, list kinds,
//! RBAC names and field selectors all read this table.

/// The resource kinds the simulated API stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Pod,
    Node,
    Namespace,
    Service,
    Event,
    EndpointSlice,
    Deployment,
    ReplicaSet,
    Hpa,
    Pdb,
    /// The Gateway API Inference Extension's pool of model servers (a CRD on a real cluster).
    InferencePool,
    ScaledObject,
}

/// What discovery says about one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: &'static str,
    pub version: &'static str,
    /// Plural resource name (`pods`).
    pub plural: &'static str,
    pub singular: &'static str,
    /// The object kind (`Pod`).
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Verbs on the collection and its objects, as the real API server lists them.
    pub verbs: &'static [&'static str],
}

/// A subresource the simulated API serves (`pods/eviction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubresourceInfo {
    pub parent: Kind,
    pub name: &'static str,
    /// Kind of the subresource's body, with its group and version (`policy`, `v1`,
    /// `Eviction`).
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

/// Verbs of a resource clients may only read and watch.
const READ: &[&str] = &["get", "list", "watch"];
/// Verbs of pods: read, patch (labels) and delete; creation belongs to the ReplicaSets.
const POD: &[&str] = &["delete", "get", "list", "patch", "watch"];
/// Verbs of nodes and Deployments: read and patch (cordon, rollout restart).
const PATCH: &[&str] = &["get", "list", "patch", "watch"];
const ALL: &[&str] = &["all"];

impl Kind {
    /// Every stored kind, in discovery order.
    pub const ALL: [Kind; 12] = [
        Kind::Pod,
        Kind::Node,
        Kind::Namespace,
        Kind::Service,
        Kind::Event,
        Kind::EndpointSlice,
        Kind::Deployment,
        Kind::ReplicaSet,
        Kind::Hpa,
        Kind::Pdb,
        Kind::InferencePool,
        Kind::ScaledObject,
    ];

    pub fn info(self) -> &'static ResourceInfo {
        match self {
            Kind::Pod => &ResourceInfo {
                group: "",
                version: "v1",
                plural: "pods",
                singular: "pod",
                kind: "Pod",
                namespaced: true,
                short_names: &["po"],
                categories: ALL,
                verbs: POD,
            },
            Kind::Node => &ResourceInfo {
                group: "",
                version: "v1",
                plural: "nodes",
                singular: "node",
                kind: "Node",
                namespaced: false,
                short_names: &["no"],
                categories: &[],
                verbs: PATCH,
            },
            Kind::Namespace => &ResourceInfo {
                group: "",
                version: "v1",
                plural: "namespaces",
                singular: "namespace",
                kind: "Namespace",
                namespaced: false,
                short_names: &["ns"],
                categories: &[],
                verbs: READ,
            },
            Kind::Service => &ResourceInfo {
                group: "",
                version: "v1",
                plural: "services",
                singular: "service",
                kind: "Service",
                namespaced: true,
                short_names: &["svc"],
                categories: ALL,
                verbs: READ,
            },
            Kind::Event => &ResourceInfo {
                group: "",
                version: "v1",
                plural: "events",
                singular: "event",
                kind: "Event",
                namespaced: true,
                short_names: &["ev"],
                categories: &[],
                verbs: READ,
            },
            Kind::EndpointSlice => &ResourceInfo {
                group: "discovery.k8s.io",
                version: "v1",
                plural: "endpointslices",
                singular: "endpointslice",
                kind: "EndpointSlice",
                namespaced: true,
                short_names: &[],
                categories: &[],
                verbs: READ,
            },
            Kind::Deployment => &ResourceInfo {
                group: "apps",
                version: "v1",
                plural: "deployments",
                singular: "deployment",
                kind: "Deployment",
                namespaced: true,
                short_names: &["deploy"],
                categories: ALL,
                verbs: PATCH,
            },
            Kind::ReplicaSet => &ResourceInfo {
                group: "apps",
                version: "v1",
                plural: "replicasets",
                singular: "replicaset",
                kind: "ReplicaSet",
                namespaced: true,
                short_names: &["rs"],
                categories: ALL,
                verbs: READ,
            },
            Kind::Hpa => &ResourceInfo {
                group: "autoscaling",
                version: "v2",
                plural: "horizontalpodautoscalers",
                singular: "horizontalpodautoscaler",
                kind: "HorizontalPodAutoscaler",
                namespaced: true,
                short_names: &["hpa"],
                categories: ALL,
                verbs: READ,
            },
            Kind::Pdb => &ResourceInfo {
                group: "policy",
                version: "v1",
                plural: "poddisruptionbudgets",
                singular: "poddisruptionbudget",
                kind: "PodDisruptionBudget",
                namespaced: true,
                short_names: &["pdb"],
                categories: &[],
                verbs: READ,
            },
            Kind::InferencePool => &ResourceInfo {
                group: "inference.networking.k8s.io",
                version: "v1",
                plural: "inferencepools",
                singular: "inferencepool",
                kind: "InferencePool",
                namespaced: true,
                short_names: &[],
                categories: &[],
                verbs: READ,
            },
            Kind::ScaledObject => &ResourceInfo {
                group: "keda.sh",
                version: "v1alpha1",
                plural: "scaledobjects",
                singular: "scaledobject",
                kind: "ScaledObject",
                namespaced: true,
                short_names: &["so"],
                categories: &["keda"],
                verbs: READ,
            },
        }
    }

    /// Plural resource name (`pods`).
    pub fn plural(self) -> &'static str {
        self.info().plural
    }

    /// The object kind (`Pod`).
    pub fn kind_name(self) -> &'static str {
        self.info().kind
    }

    /// The list kind (`PodList`).
    pub fn list_kind(self) -> String {
        format!("{}List", self.info().kind)
    }

    /// API group (`""` for core).
    pub fn group(self) -> &'static str {
        self.info().group
    }

    /// `apiVersion` of the kind (`v1`, `apps/v1`).
    pub fn api_version(self) -> String {
        let info = self.info();
        if info.group.is_empty() {
            info.version.to_owned()
        } else {
            format!("{}/{}", info.group, info.version)
        }
    }

    /// The path prefix of the kind's group version (`/api/v1`, `/apis/apps/v1`).
    pub fn prefix(self) -> String {
        let info = self.info();
        if info.group.is_empty() {
            format!("/api/{}", info.version)
        } else {
            format!("/apis/{}/{}", info.group, info.version)
        }
    }

    /// Fields a field selector may name, besides `metadata.name` and `metadata.namespace`.
    pub fn selectable_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Pod => &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            Kind::Event => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
            Kind::Node => &["spec.unschedulable"],
            Kind::ReplicaSet => &["status.replicas"],
            Kind::Namespace => &["status.phase"],
            _ => &[],
        }
    }
}

/// The subresources served, beside their parents.
pub const SUBRESOURCES: &[SubresourceInfo] = &[
    SubresourceInfo {
        parent: Kind::Pod,
        name: "status",
        group: "",
        version: "v1",
        kind: "Pod",
        verbs: &["get"],
    },
    SubresourceInfo {
        parent: Kind::Pod,
        name: "log",
        group: "",
        version: "v1",
        kind: "Pod",
        verbs: &["get"],
    },
    SubresourceInfo {
        parent: Kind::Pod,
        name: "eviction",
        group: "policy",
        version: "v1",
        kind: "Eviction",
        verbs: &["create"],
    },
    SubresourceInfo {
        parent: Kind::Pod,
        name: "proxy",
        group: "",
        version: "v1",
        kind: "PodProxyOptions",
        verbs: &["get"],
    },
    SubresourceInfo {
        parent: Kind::Deployment,
        name: "scale",
        group: "autoscaling",
        version: "v1",
        kind: "Scale",
        verbs: &["get", "patch", "update"],
    },
    SubresourceInfo {
        parent: Kind::Deployment,
        name: "status",
        group: "apps",
        version: "v1",
        kind: "Deployment",
        verbs: &["get"],
    },
];

/// Create-only review resources (`selfsubjectaccessreviews`): no storage, one answer per POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewInfo {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
}

pub const REVIEWS: &[ReviewInfo] = &[
    ReviewInfo {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview",
    },
    ReviewInfo {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "selfsubjectrulesreviews",
        singular: "selfsubjectrulesreview",
        kind: "SelfSubjectRulesReview",
    },
    ReviewInfo {
        group: "authentication.k8s.io",
        version: "v1",
        plural: "selfsubjectreviews",
        singular: "selfsubjectreview",
        kind: "SelfSubjectReview",
    },
];

/// The group versions that serve resources, core first (one version per group).
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    let all = Kind::ALL
        .iter()
        .map(|k| (k.info().group, k.info().version))
        .chain(REVIEWS.iter().map(|r| (r.group, r.version)));
    for gv in all {
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_unique_and_lists_are_named_after_kinds() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in Kind::ALL {
            for short in kind.info().short_names {
                assert!(seen.insert(*short), "{short} twice");
            }
            assert_eq!(kind.list_kind(), format!("{}List", kind.kind_name()));
        }
        assert_eq!(Kind::Deployment.api_version(), "apps/v1");
        assert_eq!(Kind::Pod.prefix(), "/api/v1");
        assert_eq!(Kind::Hpa.prefix(), "/apis/autoscaling/v2");
    }

    #[test]
    fn every_group_version_is_listed_once_with_core_first() {
        let gvs = group_versions();
        assert_eq!(gvs.first(), Some(&("", "v1")));
        for gv in [
            ("policy", "v1"),
            ("autoscaling", "v2"),
            ("discovery.k8s.io", "v1"),
            ("authentication.k8s.io", "v1"),
        ] {
            assert_eq!(gvs.iter().filter(|g| **g == gv).count(), 1, "{gv:?}");
        }
    }
}
