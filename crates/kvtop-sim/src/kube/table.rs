//! PURE. The `meta.k8s.io/v1` `Table` the API server answers `kubectl get` with: the same columns,
//! cell formats and placeholders as the real server's printers (k8s.io/kubernetes
//! `pkg/printers/internalversion`), so the real `kubectl` prints what it prints against a real
//! cluster. Like the real server, every column is sent (it prints "wide"); kubectl drops the
//! `priority: 1` columns itself unless asked for `-o wide`.

// The routes serve these tables once content negotiation asks for them (wired in routes.rs).
#![cfg_attr(not(test), allow(dead_code))]

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::kinds::Kind;

/// What each row carries besides its cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    None,
    /// A `PartialObjectMetadata` (the API server's default).
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    /// The value of `?includeObject=`; `Err` carries the API server's 400 message.
    pub(crate) fn from_query(value: Option<&str>) -> Result<IncludeObject, String> {
        match value.unwrap_or("") {
            "None" => Ok(IncludeObject::None),
            "Metadata" | "" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// How to render a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableOptions {
    pub include_object: IncludeObject,
    /// `false` leaves the column definitions out (watch events after the first).
    pub headers: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            include_object: IncludeObject::Metadata,
            headers: true,
        }
    }
}

/// The table of `items` (objects as the JSON API returns them) of `kind`; `list_metadata` is the
/// list's metadata (`resourceVersion`, `continue`, `remainingItemCount`), `now` simulated seconds
/// since the Unix epoch (ages are counted to it).
pub(crate) fn table(
    kind: Kind,
    items: &[Value],
    list_metadata: Value,
    now: f64,
    opts: &TableOptions,
) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let (cells, conditions) = row_cells(kind, item, now);
            let mut row = json!({
                "cells": cells,
                "object": row_object(item, opts.include_object),
            });
            if !conditions.is_empty() {
                row["conditions"] = Value::Array(conditions);
            }
            row
        })
        .collect();
    // The real server's Table has no `omitempty` on these: without headers the definitions
    // are `null`, and `metadata` is always there.
    let column_definitions = if opts.headers {
        Value::Array(columns(kind).iter().map(|c| c.definition()).collect())
    } else {
        Value::Null
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta(&list_metadata),
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

/// The `ListMeta` fields a table keeps from its list.
fn list_meta(meta: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["resourceVersion", "continue"] {
        if let Some(v) = meta[key].as_str().filter(|s| !s.is_empty()) {
            out.insert(key.to_owned(), v.into());
        }
    }
    if let Some(n) = meta["remainingItemCount"].as_i64() {
        out.insert("remainingItemCount".to_owned(), n.into());
    }
    Value::Object(out)
}

/// A row's `object`; the real server writes `null` when told to include none.
fn row_object(item: &Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": item["metadata"].clone(),
        }),
        IncludeObject::Object => item.clone(),
    }
}

/// A column definition as the printers declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Column {
    name: &'static str,
    type_: &'static str,
    format: &'static str,
    description: &'static str,
    priority: u8,
}

impl Column {
    const fn new(name: &'static str, type_: &'static str, description: &'static str) -> Column {
        Column {
            name,
            type_,
            format: "",
            description,
            priority: 0,
        }
    }

    /// A column kubectl only shows with `-o wide`.
    const fn wide(self) -> Column {
        Column {
            priority: 1,
            ..self
        }
    }

    const fn named(self) -> Column {
        Column {
            format: "name",
            ..self
        }
    }

    fn definition(self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// Descriptions: the API types' field documentation, which the printers quote.
mod doc {
    pub const NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
    pub const CREATED: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
    pub const POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
    pub const NOMINATED_NODE: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
    pub const NODE_NAME: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
    pub const READINESS_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
    pub const KUBELET_VERSION: &str = "Kubelet Version reported by the node.";
    pub const OS_IMAGE: &str =
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
    pub const KERNEL_VERSION: &str =
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
    pub const CONTAINER_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
    pub const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
    pub const SERVICE_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
    pub const CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
    pub const EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
    pub const SERVICE_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
    pub const SERVICE_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
    pub const EVENT_LAST: &str =
        "The time at which the most recent occurrence of this event was recorded.";
    pub const EVENT_TYPE: &str =
        "Type of this event (Normal, Warning), new types could be added in the future";
    pub const EVENT_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
    pub const EVENT_OBJECT: &str = "The object that this event is about.";
    pub const EVENT_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
    pub const EVENT_SOURCE: &str =
        "The component reporting this event. Should be a short machine understandable string.";
    pub const EVENT_MESSAGE: &str = "A human-readable description of the status of this operation.";
    pub const EVENT_FIRST: &str =
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
    pub const EVENT_COUNT: &str = "The number of times this event has occurred.";
    pub const SLICE_ADDRESS_TYPE: &str = "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.";
    pub const SLICE_PORTS: &str = "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.";
    pub const SLICE_ENDPOINTS: &str = "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.";
    pub const CONTAINERS: &str = "Names of each container in the template.";
    pub const IMAGES: &str = "Images referenced by each container in the template.";
    pub const DEPLOYMENT_UPDATED: &str = "Total number of non-terminating pods targeted by this deployment that have the desired template spec.";
    pub const DEPLOYMENT_AVAILABLE: &str = "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.";
    pub const DEPLOYMENT_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.";
    pub const RS_DESIRED: &str = "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
    pub const RS_CURRENT: &str = "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
    pub const RS_READY: &str =
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.";
    pub const RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
    pub const HPA_REFERENCE: &str = "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.";
    pub const HPA_TARGETS: &str = "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.";
    pub const HPA_MIN: &str = "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.";
    pub const HPA_MAX: &str = "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.";
    pub const HPA_REPLICAS: &str = "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.";
}

const NAME: Column = Column::new("Name", "string", doc::NAME).named();
const AGE: Column = Column::new("Age", "string", doc::CREATED);
const CONTAINERS: Column = Column::new("Containers", "string", doc::CONTAINERS).wide();
const IMAGES: Column = Column::new("Images", "string", doc::IMAGES).wide();

const POD_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    Column::new(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    Column::new(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    Column::new("IP", "string", doc::POD_IP).wide(),
    Column::new("Node", "string", doc::NODE_NAME).wide(),
    Column::new("Nominated Node", "string", doc::NOMINATED_NODE).wide(),
    Column::new("Readiness Gates", "string", doc::READINESS_GATES).wide(),
];

const NODE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the node"),
    Column::new("Roles", "string", "The roles of the node"),
    AGE,
    Column::new("Version", "string", doc::KUBELET_VERSION),
    Column::new("Internal-IP", "string", doc::NODE_ADDRESSES).wide(),
    Column::new("External-IP", "string", doc::NODE_ADDRESSES).wide(),
    Column::new("OS-Image", "string", doc::OS_IMAGE).wide(),
    Column::new("Kernel-Version", "string", doc::KERNEL_VERSION).wide(),
    Column::new("Container-Runtime", "string", doc::CONTAINER_RUNTIME).wide(),
];

const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the namespace"),
    AGE,
];

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", doc::SERVICE_TYPE),
    Column::new("Cluster-IP", "string", doc::CLUSTER_IP),
    Column::new("External-IP", "string", doc::EXTERNAL_IPS),
    Column::new("Port(s)", "string", doc::SERVICE_PORTS),
    AGE,
    Column::new("Selector", "string", doc::SERVICE_SELECTOR).wide(),
];

const EVENT_COLUMNS: &[Column] = &[
    Column::new("Last Seen", "string", doc::EVENT_LAST),
    Column::new("Type", "string", doc::EVENT_TYPE),
    Column::new("Reason", "string", doc::EVENT_REASON),
    Column::new("Object", "string", doc::EVENT_OBJECT),
    Column::new("Subobject", "string", doc::EVENT_FIELD_PATH).wide(),
    Column::new("Source", "string", doc::EVENT_SOURCE).wide(),
    Column::new("Message", "string", doc::EVENT_MESSAGE),
    Column::new("First Seen", "string", doc::EVENT_FIRST).wide(),
    Column::new("Count", "string", doc::EVENT_COUNT).wide(),
    NAME.wide(),
];

const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AddressType", "string", doc::SLICE_ADDRESS_TYPE),
    Column::new("Ports", "string", doc::SLICE_PORTS),
    Column::new("Endpoints", "string", doc::SLICE_ENDPOINTS),
    AGE,
];

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state"),
    Column::new("Up-to-date", "string", doc::DEPLOYMENT_UPDATED),
    Column::new("Available", "string", doc::DEPLOYMENT_AVAILABLE),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", doc::DEPLOYMENT_SELECTOR).wide(),
];

const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", doc::RS_DESIRED),
    Column::new("Current", "integer", doc::RS_CURRENT),
    Column::new("Ready", "integer", doc::RS_READY),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", doc::RS_SELECTOR).wide(),
];

const HPA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Reference", "string", doc::HPA_REFERENCE),
    Column::new("Targets", "string", doc::HPA_TARGETS),
    Column::new("MinPods", "string", doc::HPA_MIN),
    Column::new("MaxPods", "string", doc::HPA_MAX),
    Column::new("Replicas", "string", doc::HPA_REPLICAS),
    AGE,
];

const PDB_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    Column::new(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

fn columns(kind: Kind) -> &'static [Column] {
    match kind {
        Kind::Pod => POD_COLUMNS,
        Kind::Node => NODE_COLUMNS,
        Kind::Namespace => NAMESPACE_COLUMNS,
        Kind::Service => SERVICE_COLUMNS,
        Kind::Event => EVENT_COLUMNS,
        Kind::EndpointSlice => ENDPOINT_SLICE_COLUMNS,
        Kind::Deployment => DEPLOYMENT_COLUMNS,
        Kind::ReplicaSet => REPLICA_SET_COLUMNS,
        Kind::Hpa => HPA_COLUMNS,
        Kind::Pdb => PDB_COLUMNS,
    }
}

/// A row's cells and its conditions (only finished pods have any).
fn row_cells(kind: Kind, obj: &Value, now: f64) -> (Vec<Value>, Vec<Value>) {
    let cells = match kind {
        Kind::Pod => return pod_row(obj, now),
        Kind::Node => node_row(obj, now),
        Kind::Namespace => vec![
            name(obj).into(),
            text(&obj["status"]["phase"]).into(),
            age(obj, now).into(),
        ],
        Kind::Service => service_row(obj, now),
        Kind::Event => event_row(obj, now),
        Kind::EndpointSlice => endpoint_slice_row(obj, now),
        Kind::Deployment => deployment_row(obj, now),
        Kind::ReplicaSet => replica_set_row(obj, now),
        Kind::Hpa => hpa_row(obj, now),
        Kind::Pdb => pdb_row(obj, now),
    };
    (cells, Vec::new())
}

// ---- values -------------------------------------------------------------------------------

/// A string field, `""` when absent (Go's zero value, which the printers start from).
fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// An integer field, 0 when absent.
fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn name(obj: &Value) -> &str {
    text(&obj["metadata"]["name"])
}

fn or_placeholder(s: &str, placeholder: &str) -> String {
    if s.is_empty() {
        placeholder.to_owned()
    } else {
        s.to_owned()
    }
}

/// A `metav1.Time` in seconds since the epoch; `None` for the zero time (absent or unreadable).
fn timestamp(v: &Value) -> Option<f64> {
    let t = v.as_str()?.parse::<k8s_openapi::jiff::Timestamp>().ok()?;
    Some(t.as_second() as f64 + f64::from(t.subsec_nanosecond()) / 1e9)
}

/// How long ago `v` was, as the printers write it (`<unknown>` for the zero time).
fn since(v: &Value, now: f64) -> String {
    match timestamp(v) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_owned(),
    }
}

fn age(obj: &Value, now: f64) -> String {
    since(&obj["metadata"]["creationTimestamp"], now)
}

/// A duration in seconds the way `kubectl` and the API server write ages (apimachinery's
/// `HumanDuration`): two significant units at most, coarser as it grows; up to a second in the
/// future is clock skew and reads `0s`, beyond that `<invalid>`.
pub(crate) fn human_duration(seconds: f64) -> String {
    // Whole seconds, truncated towards zero as Go's int(d.Seconds()).
    let secs = seconds.trunc() as i64;
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    if secs < 0 {
        return "0s".to_owned();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", secs % 60, "s");
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return with_remainder(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return with_remainder(years, "y", days % 365, "d");
    }
    format!("{years}y")
}

fn with_remainder(major: i64, major_unit: &str, minor: i64, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{major_unit}")
    } else {
        format!("{major}{major_unit}{minor}{minor_unit}")
    }
}

/// A `resource.Quantity` as written; a missing one prints as Go prints a nil quantity.
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "<nil>".to_owned(),
    }
}

/// An `IntOrString`.
fn int_or_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Labels as `k=v,k=v` sorted by key (`labels.FormatLabels`), `<none>` when there are none.
fn format_labels(map: &Value) -> String {
    let Some(map) = map.as_object().filter(|m| !m.is_empty()) else {
        return "<none>".to_owned();
    };
    // serde_json's map is ordered by key.
    map.iter()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A `metav1.LabelSelector` as selector text (`LabelSelectorAsSelector(..).String()`):
/// requirements sorted by key, `""` for an absent or empty selector, `Err` when an operator or
/// its values are invalid.
fn selector_string(selector: &Value) -> Result<String, ()> {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", text(v))));
        }
    }
    for expr in array(&selector["matchExpressions"]) {
        let key = text(&expr["key"]);
        let values: BTreeSet<&str> = array(&expr["values"]).iter().map(text).collect();
        let joined = values.iter().copied().collect::<Vec<_>>().join(",");
        let rendered = match text(&expr["operator"]) {
            "In" if !values.is_empty() => format!("{key} in ({joined})"),
            "NotIn" if !values.is_empty() => format!("{key} notin ({joined})"),
            "Exists" if values.is_empty() => key.to_owned(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return Err(()),
        };
        requirements.push((key.to_owned(), rendered));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(requirements
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Vec<_>>()
        .join(","))
}

/// Container names and images of a pod template, comma-separated.
fn container_cells(template: &Value) -> (String, String) {
    let containers = array(&template["spec"]["containers"]);
    let names: Vec<&str> = containers.iter().map(|c| text(&c["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(&c["image"])).collect();
    (names.join(","), images.join(","))
}

/// Up to three items, then `+ N more...`; `<unset>` for none.
fn list_with_more(items: Vec<String>) -> String {
    const SHOWN: usize = 3;
    let total = items.len();
    let shown = items.into_iter().take(SHOWN).collect::<Vec<_>>().join(",");
    if total > SHOWN {
        format!("{shown} + {} more...", total - SHOWN)
    } else if shown.is_empty() {
        "<unset>".to_owned()
    } else {
        shown
    }
}

// ---- printers -----------------------------------------------------------------------------

fn condition_true(status: &Value, type_: &str) -> bool {
    array(&status["conditions"])
        .iter()
        .any(|c| c["type"] == type_ && c["status"] == "True")
}

/// The later of two `finishedAt` times.
fn later(current: Option<f64>, candidate: Option<f64>) -> Option<f64> {
    match (current, candidate) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn pod_row(pod: &Value, now: f64) -> (Vec<Value>, Vec<Value>) {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let phase = text(&status["phase"]);
    let mut reason = or_placeholder(text(&status["reason"]), phase);
    if array(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".to_owned();
    }
    let conditions = match phase {
        "Succeeded" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}),
        ],
        "Failed" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}),
        ],
        _ => Vec::new(),
    };

    let init_specs = array(&spec["initContainers"]);
    // Sidecars (init containers restarted always) count as containers of the pod.
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = array(&spec["containers"]).len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut last_restart: Option<f64> = None;
    let mut sidecar_restarts = 0i64;
    let mut last_sidecar_restart: Option<f64> = None;

    let mut initializing = false;
    for (i, c) in array(&status["initContainerStatuses"]).iter().enumerate() {
        let finished = timestamp(&c["lastState"]["terminated"]["finishedAt"]);
        restarts += int(&c["restartCount"]);
        last_restart = later(last_restart, finished);
        let sidecar = restartable(text(&c["name"]));
        if sidecar {
            sidecar_restarts += int(&c["restartCount"]);
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = c["state"]["terminated"].is_object();
        let waiting = text(&c["state"]["waiting"]["reason"]);
        if terminated && int(&c["state"]["terminated"]["exitCode"]) == 0 {
            continue;
        }
        if sidecar && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = if terminated {
            let t = &c["state"]["terminated"];
            match text(&t["reason"]) {
                "" if int(&t["signal"]) != 0 => format!("Init:Signal:{}", int(&t["signal"])),
                "" => format!("Init:ExitCode:{}", int(&t["exitCode"])),
                r => format!("Init:{r}"),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || condition_true(status, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in array(&status["containerStatuses"]).iter().rev() {
            restarts += int(&c["restartCount"]);
            last_restart = later(
                last_restart,
                timestamp(&c["lastState"]["terminated"]["finishedAt"]),
            );
            let state = &c["state"];
            let waiting = text(&state["waiting"]["reason"]);
            let terminated = &state["terminated"];
            if !waiting.is_empty() {
                reason = waiting.to_owned();
            } else if !text(&terminated["reason"]).is_empty() {
                reason = text(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                reason = if int(&terminated["signal"]) != 0 {
                    format!("Signal:{}", int(&terminated["signal"]))
                } else {
                    format!("ExitCode:{}", int(&terminated["exitCode"]))
                };
            } else if c["ready"] == true && state["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose finished container reads Completed still runs if another one does.
        if reason == "Completed" && has_running {
            reason = if condition_true(status, "Ready") {
                "Running".to_owned()
            } else {
                "NotReady".to_owned()
            };
        }
    }

    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && text(&status["reason"]) == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_owned();
    }

    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(now - at))
        }
        _ => restarts.to_string(),
    };

    let pod_ip = array(&status["podIPs"])
        .first()
        .map_or("", |ip| text(&ip["ip"]));
    let gates = array(&spec["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let passing = gates
            .iter()
            .filter(|g| {
                array(&status["conditions"])
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{passing}/{}", gates.len())
    };
    let cells = vec![
        name(pod).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_cell.into(),
        age(pod, now).into(),
        or_placeholder(pod_ip, "<none>").into(),
        or_placeholder(text(&spec["nodeName"]), "<none>").into(),
        or_placeholder(text(&status["nominatedNodeName"]), "<none>").into(),
        readiness_gates.into(),
    ];
    (cells, conditions)
}

fn node_row(node: &Value, now: f64) -> Vec<Value> {
    let status = &node["status"];
    // The last condition of a type wins, as in the printer's map.
    let ready = array(&status["conditions"])
        .iter()
        .rev()
        .find(|c| c["type"] == "Ready");
    let mut states = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"] == true {
        states.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = node["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_owned());
                }
            } else if key == "kubernetes.io/role" && !text(value).is_empty() {
                roles.insert(text(value).to_owned());
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |type_: &str| {
        array(&status["addresses"])
            .iter()
            .find(|a| a["type"] == type_)
            .map_or("<none>".to_owned(), |a| text(&a["address"]).to_owned())
    };
    let info = &status["nodeInfo"];
    vec![
        name(node).into(),
        states.join(",").into(),
        or_placeholder(&roles, "<none>").into(),
        age(node, now).into(),
        text(&info["kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        or_placeholder(text(&info["osImage"]), "<unknown>").into(),
        or_placeholder(text(&info["kernelVersion"]), "<unknown>").into(),
        or_placeholder(text(&info["containerRuntimeVersion"]), "<unknown>").into(),
    ]
}

fn service_row(svc: &Value, now: f64) -> Vec<Value> {
    let spec = &svc["spec"];
    let type_ = text(&spec["type"]);
    let cluster_ip = array(&spec["clusterIPs"])
        .first()
        .map_or("<none>".to_owned(), |ip| text(ip).to_owned());
    let external_ips: Vec<String> = array(&spec["externalIPs"])
        .iter()
        .map(|ip| text(ip).to_owned())
        .collect();
    let external = match type_ {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            // Each ingress point once (the printer collects them in a set), in ingress order.
            let mut all: Vec<String> = Vec::new();
            for ingress in array(&svc["status"]["loadBalancer"]["ingress"]) {
                let shown = first_non_empty(text(&ingress["ip"]), text(&ingress["hostname"]));
                if !shown.is_empty() && !all.iter().any(|s| s == shown) {
                    all.push(shown.to_owned());
                }
            }
            all.extend(external_ips);
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(&spec["externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = array(&spec["ports"])
        .iter()
        .map(|p| {
            // The API server defaults an unset protocol to TCP before it stores the Service.
            let protocol = or_placeholder(text(&p["protocol"]), "TCP");
            match int(&p["nodePort"]) {
                0 => format!("{}/{protocol}", int(&p["port"])),
                node_port => format!("{}:{node_port}/{protocol}", int(&p["port"])),
            }
        })
        .collect();
    vec![
        name(svc).into(),
        type_.into(),
        cluster_ip.into(),
        external.into(),
        or_placeholder(&ports.join(","), "<none>").into(),
        age(svc, now).into(),
        format_labels(&spec["selector"]).into(),
    ]
}

fn event_row(event: &Value, now: f64) -> Vec<Value> {
    let first = if timestamp(&event["firstTimestamp"]).is_some() {
        since(&event["firstTimestamp"], now)
    } else {
        since(&event["eventTime"], now)
    };
    let mut last = if timestamp(&event["lastTimestamp"]).is_some() {
        since(&event["lastTimestamp"], now)
    } else {
        first.clone()
    };
    let series = &event["series"];
    let count = if series.is_object() {
        last = since(&series["lastObservedTime"], now);
        int(&series["count"])
    } else {
        // Events of the events.k8s.io API that happened once carry no count.
        match int(&event["count"]) {
            0 => 1,
            n => n,
        }
    };
    let involved = &event["involvedObject"];
    let kind = text(&involved["kind"]).to_lowercase();
    let target = match text(&involved["name"]) {
        "" => kind,
        object => format!("{kind}/{object}"),
    };
    let component = first_non_empty(
        text(&event["source"]["component"]),
        text(&event["reportingComponent"]),
    );
    let instance = first_non_empty(
        text(&event["source"]["host"]),
        text(&event["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        last.into(),
        text(&event["type"]).into(),
        text(&event["reason"]).into(),
        target.into(),
        text(&involved["fieldPath"]).into(),
        source.into(),
        text(&event["message"]).trim().into(),
        first.into(),
        count.into(),
        name(event).into(),
    ]
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

fn endpoint_slice_row(slice: &Value, now: f64) -> Vec<Value> {
    let ports = array(&slice["ports"])
        .iter()
        .map(|p| match (&p["port"], text(&p["name"])) {
            (Value::Number(n), _) => n.to_string(),
            (_, port_name) if p["name"].is_string() => port_name.to_owned(),
            _ => "*".to_owned(),
        })
        .collect();
    let addresses = array(&slice["endpoints"])
        .iter()
        .flat_map(|e| array(&e["addresses"]).iter().map(|a| text(a).to_owned()))
        .collect();
    vec![
        name(slice).into(),
        text(&slice["addressType"]).into(),
        list_with_more(ports).into(),
        list_with_more(addresses).into(),
        age(slice, now).into(),
    ]
}

fn deployment_row(d: &Value, now: f64) -> Vec<Value> {
    let status = &d["status"];
    let (containers, images) = container_cells(&d["spec"]["template"]);
    let selector = selector_string(&d["spec"]["selector"]).unwrap_or_else(|()| "<invalid>".into());
    vec![
        name(d).into(),
        format!(
            "{}/{}",
            int(&status["readyReplicas"]),
            int(&d["spec"]["replicas"])
        )
        .into(),
        int(&status["updatedReplicas"]).into(),
        int(&status["availableReplicas"]).into(),
        age(d, now).into(),
        containers.into(),
        images.into(),
        selector.into(),
    ]
}

fn replica_set_row(rs: &Value, now: f64) -> Vec<Value> {
    let status = &rs["status"];
    let (containers, images) = container_cells(&rs["spec"]["template"]);
    let selector = match selector_string(&rs["spec"]["selector"]) {
        Ok(s) if s.is_empty() => "<none>".to_owned(),
        Ok(s) => s,
        Err(()) => "<error>".to_owned(),
    };
    vec![
        name(rs).into(),
        int(&rs["spec"]["replicas"]).into(),
        int(&status["replicas"]).into(),
        int(&status["readyReplicas"]).into(),
        age(rs, now).into(),
        containers.into(),
        images.into(),
        selector.into(),
    ]
}

fn hpa_row(hpa: &Value, now: f64) -> Vec<Value> {
    let spec = &hpa["spec"];
    let target = &spec["scaleTargetRef"];
    let min = match &spec["minReplicas"] {
        Value::Number(n) => n.to_string(),
        _ => "<unset>".to_owned(),
    };
    vec![
        name(hpa).into(),
        format!("{}/{}", text(&target["kind"]), text(&target["name"])).into(),
        hpa_targets(
            array(&spec["metrics"]),
            array(&hpa["status"]["currentMetrics"]),
        )
        .into(),
        min.into(),
        int(&spec["maxReplicas"]).into(),
        int(&hpa["status"]["currentReplicas"]).into(),
        age(hpa, now).into(),
    ]
}

/// The TARGETS cell: `current/target` per metric (the status at the same position is the
/// metric's current value), at most two, then `+ N more...`.
fn hpa_targets(specs: &[Value], statuses: &[Value]) -> String {
    const SHOWN: usize = 2;
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| hpa_metric(spec, statuses.get(i).unwrap_or(&Value::Null)))
        .collect();
    let count = list.len();
    let shown = list.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
    if count > SHOWN {
        format!("{shown} + {} more...", count - SHOWN)
    } else {
        shown
    }
}

/// `quantity(v)` when the status part it sits in was reported, else `<unknown>`.
fn reported(present: bool, v: &Value) -> String {
    if present {
        quantity(v)
    } else {
        "<unknown>".to_owned()
    }
}

/// One metric of the TARGETS cell.
fn hpa_metric(spec: &Value, status: &Value) -> String {
    let source = text(&spec["type"]);
    let field = match source {
        "Pods" => "pods",
        "External" => "external",
        "Object" => "object",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        _ => return "<unknown type>".to_owned(),
    };
    let target = &spec[field]["target"];
    let reported_part = &status[field];
    let current = &reported_part["current"];
    match source {
        "Pods" => format!(
            "{}/{}",
            reported(reported_part.is_object(), &current["averageValue"]),
            quantity(&target["averageValue"])
        ),
        "External" | "Object" if target["averageValue"].is_null() => format!(
            "{}/{}",
            reported(reported_part.is_object(), &current["value"]),
            quantity(&target["value"])
        ),
        "External" | "Object" => format!(
            "{}/{} (avg)",
            reported(!current["averageValue"].is_null(), &current["averageValue"]),
            quantity(&target["averageValue"])
        ),
        // Resource and ContainerResource name the resource.
        _ => {
            let resource = text(&spec[field]["name"]);
            if target["averageValue"].is_null() {
                let now = current["averageUtilization"]
                    .as_i64()
                    .map_or_else(|| "<unknown>".to_owned(), |u| format!("{u}%"));
                let goal = target["averageUtilization"]
                    .as_i64()
                    .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                format!("{resource}: {now}/{goal}")
            } else {
                format!(
                    "{resource}: {}/{}",
                    reported(reported_part.is_object(), &current["averageValue"]),
                    quantity(&target["averageValue"])
                )
            }
        }
    }
}

fn pdb_row(pdb: &Value, now: f64) -> Vec<Value> {
    let spec = &pdb["spec"];
    let bound = |v: &Value| int_or_string(v).unwrap_or_else(|| "N/A".to_owned());
    vec![
        name(pdb).into(),
        bound(&spec["minAvailable"]).into(),
        bound(&spec["maxUnavailable"]).into(),
        int(&pdb["status"]["disruptionsAllowed"]).into(),
        age(pdb, now).into(),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::SimVersion;
    use crate::fleet::plan;
    use crate::gpu::H100_SXM;
    use crate::kube::cluster::{Cluster, ClusterConfig, DeleteOptions};
    use crate::kube::engines::EngineLink;
    use crate::kube::lifecycle::Timings;
    use crate::kube::objects::time;
    use crate::kube::patch::PatchKind;
    use crate::pod::SimPod;
    use crate::server::{EngineSite, SimClock};
    use kvtop_core::kube_model::{FieldSelector, LabelSelector};

    const T0: f64 = 1_750_000_000.0;
    const IMAGE: &str = "vllm/vllm-openai:v0.10.1.1";

    /// Four engines (llama 0, 2; qwen 1, 3 with 3 down; 0 was OOMKilled before), ticked at T0.
    fn cluster() -> (Cluster, EngineLink) {
        let fleet = plan(4, 8, SimVersion::V1, 9);
        let clock = Arc::new(SimClock::start(1.0));
        let sites: Vec<Arc<EngineSite>> = fleet
            .engines
            .iter()
            .map(|spec| {
                Arc::new(EngineSite::new(
                    SimPod::new(spec.clone(), H100_SXM, T0),
                    Arc::clone(&clock),
                ))
            })
            .collect();
        let ports: Vec<u16> = (0..4).map(|i| 40_000 + i).collect();
        let cfg = ClusterConfig {
            timings: Timings {
                creating: 1.0,
                starting: 2.0,
                crash_after: 20.0,
                terminating: 1.0,
            },
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::new(&fleet, &ports, SimVersion::V1, cfg, 1, T0);
        let engines = EngineLink::new(sites, clock);
        cluster.tick(T0, &engines);
        (cluster, engines)
    }

    fn list(c: &Cluster, kind: Kind) -> (Vec<Value>, Value) {
        let (labels, fields) = (LabelSelector::default(), FieldSelector::default());
        let list = c
            .list(kind, None, &labels, &fields, None, None)
            .unwrap_or_default();
        (array(&list["items"]).to_vec(), list["metadata"].clone())
    }

    fn render(kind: Kind, items: &[Value], now: f64) -> Value {
        table(kind, items, json!({}), now, &TableOptions::default())
    }

    fn rows(t: &Value) -> Vec<Vec<Value>> {
        array(&t["rows"])
            .iter()
            .map(|r| array(&r["cells"]).to_vec())
            .collect()
    }

    /// The cells of the one row of a table of `obj`.
    fn cells(kind: Kind, obj: Value, now: f64) -> Vec<Value> {
        rows(&render(kind, &[obj], now))
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    fn row_of(t: &Value, name_column: usize, name: &str) -> Vec<Value> {
        rows(t)
            .into_iter()
            .find(|r| r.get(name_column) == Some(&json!(name)))
            .unwrap_or_default()
    }

    fn first_pod(c: &Cluster, engine: usize) -> String {
        c.pods_of(engine).first().cloned().unwrap_or_default()
    }

    #[test]
    fn human_durations_follow_apimachinery() {
        let cases: &[(f64, &str)] = &[
            (-2.0, "<invalid>"),
            (-1.9, "0s"),
            (-0.5, "0s"),
            (0.0, "0s"),
            (45.9, "45s"),
            (119.0, "119s"),
            (120.0, "2m"),
            (303.0, "5m3s"),
            (599.0, "9m59s"),
            (600.0, "10m"),
            (179.0 * 60.0 + 59.0, "179m"),
            (3.0 * 3600.0, "3h"),
            (3.0 * 3600.0 + 2.0 * 60.0 + 59.0, "3h2m"),
            (8.0 * 3600.0, "8h"),
            (47.0 * 3600.0 + 59.0 * 60.0, "47h"),
            (2.0 * 86_400.0 + 3.0 * 3600.0, "2d3h"),
            (7.0 * 86_400.0, "7d"),
            (8.0 * 86_400.0, "8d"),
            (729.0 * 86_400.0, "729d"),
            (730.0 * 86_400.0, "2y"),
            (731.0 * 86_400.0, "2y1d"),
            (8.0 * 365.0 * 86_400.0 + 86_400.0, "8y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(*seconds), *expected, "{seconds}");
        }
        assert_eq!(since(&Value::Null, T0), "<unknown>");
        assert_eq!(since(&json!("not a time"), T0), "<unknown>");
        assert_eq!(since(&json!(time(T0 - 61.0)), T0), "61s");
    }

    #[test]
    fn simulated_pods_read_as_kubectl_shows_them() {
        let (c, _) = cluster();
        let (items, _) = list(&c, Kind::Pod);
        let t = render(Kind::Pod, &items, T0);
        let node = |name: &str, ready: &str, status: &str, restarts: &str, age: &str| {
            vec![
                json!(name),
                json!(ready),
                json!(status),
                json!(restarts),
                json!(age),
                json!("127.0.0.1"),
                json!("gpu-node-00"),
                json!("<none>"),
                json!("<none>"),
            ]
        };
        // Engine 0's previous container was OOMKilled as its current one started, 3 s ago.
        let pressured = first_pod(&c, 0);
        assert_eq!(
            row_of(&t, 0, &pressured),
            node(&pressured, "1/1", "Running", "1 (3s ago)", "3s")
        );
        let healthy = first_pod(&c, 2);
        assert_eq!(
            row_of(&t, 0, &healthy),
            node(&healthy, "1/1", "Running", "0", "3s")
        );
        // Created 300 s ago; its fourth failure was 251 s after it started, 49 s ago.
        let crashing = first_pod(&c, 3);
        assert_eq!(
            row_of(&t, 0, &crashing),
            node(&crashing, "0/1", "CrashLoopBackOff", "4 (49s ago)", "5m")
        );
        assert_eq!(rows(&t).len(), 4);
    }

    #[test]
    fn a_deleted_pod_is_terminating_and_its_unscheduled_replacement_pending() {
        let (mut c, engines) = cluster();
        let old = first_pod(&c, 2);
        let deleted = c.delete_pod(&old, &DeleteOptions::default(), T0 + 1.0, &engines);
        assert!(deleted.is_ok());
        c.tick(T0 + 1.5, &engines);
        let replacement = first_pod(&c, 2);
        let (items, _) = list(&c, Kind::Pod);
        let t = render(Kind::Pod, &items, T0 + 1.5);
        let terminating = row_of(&t, 0, &old);
        assert_eq!(terminating.get(2), Some(&json!("Terminating")));
        assert_eq!(
            row_of(&t, 0, &replacement),
            vec![
                json!(replacement),
                json!("0/1"),
                json!("Pending"),
                json!("0"),
                json!("0s"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
            ]
        );
    }

    fn pod(status: Value) -> Value {
        json!({
            "metadata": {"name": "p", "creationTimestamp": time(T0 - 90.0)},
            "spec": {"containers": [{"name": "a", "image": "i"}], "nodeName": "n1"},
            "status": status,
        })
    }

    fn status_of(row: &[Value]) -> (&Value, &Value, &Value) {
        (&row[1], &row[2], &row[3])
    }

    #[test]
    fn pod_status_is_derived_from_the_container_states() {
        let cases: Vec<(Value, [&str; 3])> = vec![
            (
                json!({"phase": "Pending", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                ["0/1", "ContainerCreating", "0"],
            ),
            (
                json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 2,
                    "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": time(T0 - 123.0)}}}]}),
                ["0/1", "OOMKilled", "2 (2m3s ago)"],
            ),
            (
                json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 3}}}]}),
                ["0/1", "ExitCode:3", "0"],
            ),
            (
                json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "signal": 9}}}]}),
                ["0/1", "Signal:9", "0"],
            ),
            (
                json!({"phase": "Failed", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 1,
                    "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
                ["0/1", "Error", "1"],
            ),
            (
                json!({"phase": "Pending", "reason": "Evicted"}),
                ["0/1", "Evicted", "0"],
            ),
            (
                json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ["0/1", "SchedulingGated", "0"],
            ),
            (json!({}), ["0/1", "", "0"]),
        ];
        for (status, [ready, reason, restarts]) in cases {
            let row = cells(Kind::Pod, pod(status.clone()), T0);
            assert_eq!(
                status_of(&row),
                (&json!(ready), &json!(reason), &json!(restarts)),
                "{status}"
            );
        }
    }

    #[test]
    fn init_containers_sidecars_and_completion() {
        let mut init = pod(json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "fetch", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
        ]}));
        init["spec"]["initContainers"] = json!([{"name": "fetch"}, {"name": "warm"}]);
        assert_eq!(cells(Kind::Pod, init.clone(), T0)[2], "Init:0/2");
        init["status"]["initContainerStatuses"][0]["state"] =
            json!({"waiting": {"reason": "CrashLoopBackOff"}});
        assert_eq!(
            cells(Kind::Pod, init.clone(), T0)[2],
            "Init:CrashLoopBackOff"
        );
        init["status"]["initContainerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 2}});
        assert_eq!(cells(Kind::Pod, init, T0)[2], "Init:ExitCode:2");

        // A started sidecar counts as a ready container of the running pod.
        let mut sidecar = pod(json!({
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": time(T0 - 10.0)}}}],
            "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}],
        }));
        sidecar["spec"]["initContainers"] = json!([{"name": "proxy", "restartPolicy": "Always"}]);
        let row = cells(Kind::Pod, sidecar, T0);
        assert_eq!(
            status_of(&row),
            (&json!("2/2"), &json!("Running"), &json!("1 (10s ago)"))
        );

        let done = json!({
            "metadata": {"name": "job", "creationTimestamp": time(T0 - 7_200.0)},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
            ]}
        });
        let t = render(Kind::Pod, &[done], T0);
        assert_eq!(
            rows(&t)[0][..5],
            [
                json!("job"),
                json!("0/2"),
                json!("Completed"),
                json!("0"),
                json!("120m")
            ]
        );
        assert_eq!(
            t["rows"][0]["conditions"],
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}])
        );

        // One container finished, the other still runs: not Completed.
        let mut half = pod(
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
            ]}),
        );
        half["spec"]["containers"] = json!([{"name": "a"}, {"name": "b"}]);
        assert_eq!(
            cells(Kind::Pod, half, T0)[1..3],
            [json!("1/2"), json!("NotReady")]
        );
    }

    #[test]
    fn pod_wide_columns_and_deletion_states() {
        let mut p = pod(json!({
            "phase": "Running",
            "podIPs": [{"ip": "10.1.2.3"}, {"ip": "fd00::3"}],
            "nominatedNodeName": "n2",
            "conditions": [{"type": "example.com/lb", "status": "True"}, {"type": "example.com/dns", "status": "False"}],
            "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}],
        }));
        p["spec"]["readinessGates"] = json!([
            {"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}, {"conditionType": "example.com/none"}
        ]);
        assert_eq!(
            cells(Kind::Pod, p.clone(), T0),
            [
                json!("p"),
                json!("1/1"),
                json!("Running"),
                json!("0"),
                json!("90s"),
                json!("10.1.2.3"),
                json!("n1"),
                json!("n2"),
                json!("1/3")
            ]
        );
        p["metadata"]["deletionTimestamp"] = json!(time(T0 + 30.0));
        assert_eq!(cells(Kind::Pod, p.clone(), T0)[2], "Terminating");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(cells(Kind::Pod, p.clone(), T0)[2], "Unknown");
        p["status"]["reason"] = Value::Null;
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"reason": "Completed", "exitCode": 0}});
        assert_eq!(
            cells(Kind::Pod, p, T0)[2],
            "Completed",
            "a finished pod is not terminating"
        );
    }

    #[test]
    fn nodes_show_readiness_cordons_and_roles() {
        let (mut c, engines) = cluster();
        let (items, _) = list(&c, Kind::Node);
        let expected = [
            json!("gpu-node-00"),
            json!("Ready"),
            json!("<none>"),
            json!("24h"),
            json!("v1.33.1"),
            json!("127.0.0.1"),
            json!("<none>"),
            json!("Ubuntu 24.04.2 LTS"),
            json!("6.8.0-60-generic"),
            json!("containerd://1.7.27"),
        ];
        assert_eq!(rows(&render(Kind::Node, &items, T0)), [expected.to_vec()]);
        let cordon = json!({"spec": {"unschedulable": true}});
        let patched = c.patch(
            Kind::Node,
            None,
            "gpu-node-00",
            PatchKind::Merge,
            &cordon,
            false,
            T0,
            &engines,
        );
        assert!(patched.is_ok());
        let (items, _) = list(&c, Kind::Node);
        assert_eq!(
            rows(&render(Kind::Node, &items, T0))[0][1],
            "Ready,SchedulingDisabled"
        );

        let bare = json!({
            "metadata": {"name": "cp", "creationTimestamp": time(T0 - 3.0 * 86_400.0),
                "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x", "kubernetes.io/role": "master"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}],
                "addresses": [{"type": "ExternalIP", "address": "203.0.113.9"}]}
        });
        assert_eq!(
            cells(Kind::Node, bare, T0),
            [
                json!("cp"),
                json!("NotReady,SchedulingDisabled"),
                json!("control-plane,master"),
                json!("3d"),
                json!(""),
                json!("<none>"),
                json!("203.0.113.9"),
                json!("<unknown>"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        let unknown = json!({"metadata": {"name": "x"}, "status": {}});
        assert_eq!(
            cells(Kind::Node, unknown, T0)[1..4],
            [json!("Unknown"), json!("<none>"), json!("<unknown>")]
        );
    }

    #[test]
    fn namespaces_services_and_endpoint_slices() {
        let (c, _) = cluster();
        let namespaces = c.namespaces();
        assert_eq!(
            rows(&render(Kind::Namespace, array(&namespaces["items"]), T0))[0],
            [json!("llm"), json!("Active"), json!("24h")]
        );

        let (items, _) = list(&c, Kind::Service);
        let t = render(Kind::Service, &items, T0);
        assert_eq!(
            row_of(&t, 0, "vllm-llama-8b"),
            [
                json!("vllm-llama-8b"),
                json!("ClusterIP"),
                json!("10.96.10.10"),
                json!("<none>"),
                json!("8000/TCP"),
                json!("24h"),
                json!("app.kubernetes.io/name=vllm,kvtop.dev/serving=true,model=llama-8b")
            ]
        );
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"],
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            cells(Kind::Service, lb.clone(), T0)[..5],
            [
                json!("lb"),
                json!("LoadBalancer"),
                json!("10.0.0.1"),
                json!("<pending>"),
                json!("80:30080/TCP,53/UDP")
            ]
        );
        let mut ready = lb;
        ready["status"] = json!({"loadBalancer": {"ingress": [{"ip": "198.51.100.7"}, {"hostname": "lb.example.com"}, {"ip": "198.51.100.7"}]}});
        ready["spec"]["externalIPs"] = json!(["192.0.2.1"]);
        assert_eq!(
            cells(Kind::Service, ready, T0)[3],
            "198.51.100.7,lb.example.com,192.0.2.1"
        );
        let headless = json!({"metadata": {"name": "h"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        assert_eq!(
            cells(Kind::Service, headless, T0)[2..5],
            [json!("<none>"), json!("db.example.com"), json!("<none>")]
        );

        let slice = |endpoints: Value, ports: Value| {
            json!({"metadata": {"name": "vllm-llama-8b-abcde", "creationTimestamp": time(T0 - 303.0)},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports})
        };
        let endpoint = |ip: &str, ready: bool| {
            json!({"addresses": [ip], "conditions": {"ready": ready}, "nodeName": "gpu-node-00",
                "targetRef": {"kind": "Pod", "name": "p", "namespace": "llm"}})
        };
        let four = json!([
            endpoint("10.0.0.1", true),
            endpoint("10.0.0.2", false),
            endpoint("10.0.0.3", true),
            endpoint("10.0.0.4", true)
        ]);
        assert_eq!(
            cells(
                Kind::EndpointSlice,
                slice(
                    four,
                    json!([{"name": "http", "port": 8000, "protocol": "TCP"}])
                ),
                T0
            ),
            [
                json!("vllm-llama-8b-abcde"),
                json!("IPv4"),
                json!("8000"),
                json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."),
                json!("5m3s")
            ]
        );
        assert_eq!(
            cells(
                Kind::EndpointSlice,
                slice(json!([]), json!([{"name": "http"}, {}])),
                T0
            )[2..4],
            [json!("http,*"), json!("<unset>")]
        );
    }

    #[test]
    fn events_read_with_object_source_and_counts() {
        let (c, _) = cluster();
        let (items, _) = list(&c, Kind::Event);
        let crashing = first_pod(&c, 3);
        let backoff = items
            .iter()
            .find(|e| e["reason"] == "BackOff")
            .cloned()
            .unwrap_or_default();
        let row = cells(Kind::Event, backoff.clone(), T0 + 65.0);
        assert_eq!(
            row[..9],
            [
                json!("65s"),
                json!("Warning"),
                json!("BackOff"),
                json!(format!("pod/{crashing}")),
                json!("spec.containers{vllm}"),
                json!("kubelet, gpu-node-00"),
                json!(text(&backoff["message"])),
                json!("65s"),
                json!(int(&backoff["count"]))
            ]
        );
        assert_eq!(row[9], backoff["metadata"]["name"]);
        assert!(int(&backoff["count"]) > 1, "aggregated: {backoff}");

        // An events.k8s.io-style event: no timestamps but eventTime and a series, no source.
        let series = json!({
            "metadata": {"name": "e"},
            "type": "Normal", "reason": "Scaled", "message": "  scaled up\n",
            "involvedObject": {"kind": "Deployment"},
            "reportingComponent": "deployment-controller",
            "eventTime": "2025-06-15T16:26:40.000000Z",
            "series": {"count": 7, "lastObservedTime": time(T0 - 600.0)}
        });
        let first_seen = timestamp(&series["eventTime"]).map(|t| human_duration(T0 - t));
        assert_eq!(
            cells(Kind::Event, series, T0),
            [
                json!("10m"),
                json!("Normal"),
                json!("Scaled"),
                json!("deployment"),
                json!(""),
                json!("deployment-controller"),
                json!("scaled up"),
                json!(first_seen),
                json!(7),
                json!("e")
            ]
        );
        let once = json!({"metadata": {"name": "o"}, "involvedObject": {"kind": "Node", "name": "n"}, "firstTimestamp": time(T0 - 5.0)});
        let row = cells(Kind::Event, once, T0);
        assert_eq!(row[0], "5s", "no lastTimestamp: the first one");
        assert_eq!(row[8], 1, "no count: once");
        assert_eq!(cells(Kind::Event, json!({}), T0)[0], "<unknown>");
    }

    #[test]
    fn deployments_and_replica_sets() {
        let (c, _) = cluster();
        let (items, _) = list(&c, Kind::Deployment);
        let t = render(Kind::Deployment, &items, T0);
        assert_eq!(
            row_of(&t, 0, "vllm-qwen-7b"),
            [
                json!("vllm-qwen-7b"),
                json!("1/2"),
                json!(2),
                json!(1),
                json!("24h"),
                json!("vllm"),
                json!(IMAGE),
                json!("app.kubernetes.io/name=vllm,model=qwen-7b")
            ]
        );
        let (items, _) = list(&c, Kind::ReplicaSet);
        let t = render(Kind::ReplicaSet, &items, T0);
        let rs = items
            .iter()
            .find(|r| text(&r["metadata"]["name"]).starts_with("vllm-llama-8b-"))
            .map(|r| name(r).to_owned())
            .unwrap_or_default();
        let hash = rs.trim_start_matches("vllm-llama-8b-");
        assert_eq!(
            row_of(&t, 0, &rs),
            [
                json!(rs),
                json!(2),
                json!(2),
                json!(2),
                json!("24h"),
                json!("vllm"),
                json!(IMAGE),
                json!(format!(
                    "app.kubernetes.io/name=vllm,model=llama-8b,pod-template-hash={hash}"
                ))
            ]
        );

        let bare = json!({"metadata": {"name": "d"}, "spec": {
            "selector": {"matchLabels": {"b": "2"}, "matchExpressions": [
                {"key": "a", "operator": "In", "values": ["y", "x"]},
                {"key": "c", "operator": "DoesNotExist"},
                {"key": "b2", "operator": "Exists"},
                {"key": "d", "operator": "NotIn", "values": ["z"]}
            ]},
            "template": {"spec": {"containers": [{"name": "one", "image": "i1"}, {"name": "two", "image": "i2"}]}}
        }});
        assert_eq!(
            cells(Kind::Deployment, bare.clone(), T0),
            [
                json!("d"),
                json!("0/0"),
                json!(0),
                json!(0),
                json!("<unknown>"),
                json!("one,two"),
                json!("i1,i2"),
                json!("a in (x,y),b=2,b2,!c,d notin (z)")
            ]
        );
        let invalid = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}});
        assert_eq!(cells(Kind::Deployment, invalid.clone(), T0)[7], "<invalid>");
        assert_eq!(cells(Kind::ReplicaSet, invalid, T0)[7], "<error>");
        let empty = json!({"metadata": {"name": "r"}, "spec": {"selector": {}}});
        assert_eq!(cells(Kind::ReplicaSet, empty.clone(), T0)[7], "<none>");
        assert_eq!(cells(Kind::Deployment, empty, T0)[7], "");
    }

    #[test]
    fn hpas_and_pdbs() {
        let (c, _) = cluster();
        let (items, _) = list(&c, Kind::Hpa);
        let t = render(Kind::Hpa, &items, T0);
        let llama = row_of(&t, 0, "vllm-llama-8b");
        let current = items
            .iter()
            .find(|h| name(h) == "vllm-llama-8b")
            .map(|h| quantity(&h["status"]["currentMetrics"][0]["pods"]["current"]["averageValue"]))
            .unwrap_or_default();
        assert_eq!(
            llama,
            [
                json!("vllm-llama-8b"),
                json!("Deployment/vllm-llama-8b"),
                json!(format!("{current}/50")),
                json!("2"),
                json!(2),
                json!(2),
                json!("24h")
            ]
        );

        let pods_metric = json!({"type": "Pods", "pods": {"metric": {"name": "m"}, "target": {"type": "AverageValue", "averageValue": "50"}}});
        let fresh = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 4,
            "metrics": [pods_metric]}, "status": {}});
        assert_eq!(
            cells(Kind::Hpa, fresh, T0)[..6],
            [
                json!("h"),
                json!("Deployment/d"),
                json!("<unknown>/50"),
                json!("<unset>"),
                json!(4),
                json!(0)
            ]
        );
        let cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}});
        let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}});
        let many = json!({"metadata": {"name": "h"}, "spec": {"metrics": [cpu, memory, pods_metric]},
            "status": {"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}]}});
        assert_eq!(
            cells(Kind::Hpa, many, T0)[2],
            "cpu: 12%/80%, memory: <unknown>/1Gi + 1 more..."
        );
        let external = json!({"type": "External", "external": {"metric": {"name": "queue"},
            "target": {"type": "AverageValue", "averageValue": "30"}}});
        let object = json!({"type": "Object", "object": {"metric": {"name": "rps"},
            "target": {"type": "Value", "value": "10k"}}});
        let mixed = json!({"metadata": {"name": "h"}, "spec": {"metrics": [external, object]},
        "status": {"currentMetrics": [
            {"type": "External", "external": {"current": {"averageValue": "12"}}},
            {"type": "Object", "object": {"current": {"value": "8k"}}}
        ]}});
        assert_eq!(cells(Kind::Hpa, mixed, T0)[2], "12/30 (avg), 8k/10k");
        let none = json!({"metadata": {"name": "h"}, "spec": {}});
        assert_eq!(
            cells(Kind::Hpa, none, T0)[1..3],
            [json!("/"), json!("<none>")]
        );

        let (items, _) = list(&c, Kind::Pdb);
        assert_eq!(
            row_of(&render(Kind::Pdb, &items, T0), 0, "vllm-llama-8b"),
            [
                json!("vllm-llama-8b"),
                json!("2"),
                json!("N/A"),
                json!(0),
                json!("24h")
            ]
        );
        let percent = json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            cells(Kind::Pdb, percent, T0)[1..4],
            [json!("N/A"), json!("25%"), json!(1)]
        );
    }

    #[test]
    fn the_table_carries_columns_list_metadata_and_the_requested_object() {
        let (c, _) = cluster();
        let (items, metadata) = list(&c, Kind::Pod);
        let mut paged = metadata.clone();
        paged["continue"] = json!("3");
        paged["remainingItemCount"] = json!(1);
        let t = table(Kind::Pod, &items, paged, T0, &TableOptions::default());
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": metadata["resourceVersion"], "continue": "3", "remainingItemCount": 1})
        );
        let names: Vec<(&str, i64)> = array(&t["columnDefinitions"])
            .iter()
            .map(|c| (text(&c["name"]), int(&c["priority"])))
            .collect();
        assert_eq!(
            names,
            [
                ("Name", 0),
                ("Ready", 0),
                ("Status", 0),
                ("Restarts", 0),
                ("Age", 0),
                ("IP", 1),
                ("Node", 1),
                ("Nominated Node", 1),
                ("Readiness Gates", 1)
            ]
        );
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["columnDefinitions"][1]["format"], "");
        assert!(
            text(&t["columnDefinitions"][4]["description"]).starts_with("CreationTimestamp is")
        );
        let first = &t["rows"][0];
        assert_eq!(
            first["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": items[0]["metadata"]})
        );
        assert!(first.get("conditions").is_none());

        let whole = TableOptions {
            include_object: IncludeObject::Object,
            headers: false,
        };
        let t = table(Kind::Pod, &items, json!({}), T0, &whole);
        assert_eq!(t["rows"][0]["object"], items[0]);
        assert_eq!(t.get("columnDefinitions"), Some(&Value::Null));
        assert_eq!(t["metadata"], json!({}));
        let bare = TableOptions {
            include_object: IncludeObject::None,
            headers: true,
        };
        let t = table(Kind::Pod, &items, json!({}), T0, &bare);
        assert_eq!(t["rows"][0].get("object"), Some(&Value::Null));
        assert_eq!(rows(&t).len(), items.len());

        // Every kind's rows are as wide as its columns.
        for kind in Kind::ALL {
            let (items, _) = list(&c, kind);
            let t = render(kind, &items, T0);
            let width = array(&t["columnDefinitions"]).len();
            for row in rows(&t) {
                assert_eq!(row.len(), width, "{kind:?}");
            }
            assert!(
                array(&t["columnDefinitions"])
                    .iter()
                    .all(|c| !text(&c["description"]).is_empty())
            );
        }
        assert!(rows(&render(Kind::Event, &[], T0)).is_empty());
    }

    #[test]
    fn include_object_reads_as_the_api_server_does() {
        assert_eq!(IncludeObject::from_query(None), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::from_query(Some("")),
            Ok(IncludeObject::Metadata)
        );
        assert_eq!(
            IncludeObject::from_query(Some("None")),
            Ok(IncludeObject::None)
        );
        assert_eq!(
            IncludeObject::from_query(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(
            IncludeObject::from_query(Some("object")),
            Err("unrecognized includeObject value: \"object\"".to_owned())
        );
    }
}
