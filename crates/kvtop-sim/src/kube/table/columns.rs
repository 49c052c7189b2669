//! The column definitions of each kind's table, as the printers declare them.

use serde_json::{Value, json};

use crate::kube::kinds::Kind;

/// A column definition as the printers declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Column {
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

    pub(super) fn definition(self) -> Value {
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

pub(super) const NAME: Column = Column::new("Name", "string", doc::NAME).named();
pub(super) const AGE: Column = Column::new("Age", "string", doc::CREATED);
pub(super) const CONTAINERS: Column = Column::new("Containers", "string", doc::CONTAINERS).wide();
pub(super) const IMAGES: Column = Column::new("Images", "string", doc::IMAGES).wide();

pub(super) const POD_COLUMNS: &[Column] = &[
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

pub(super) const NODE_COLUMNS: &[Column] = &[
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

pub(super) const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the namespace"),
    AGE,
];

pub(super) const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", doc::SERVICE_TYPE),
    Column::new("Cluster-IP", "string", doc::CLUSTER_IP),
    Column::new("External-IP", "string", doc::EXTERNAL_IPS),
    Column::new("Port(s)", "string", doc::SERVICE_PORTS),
    AGE,
    Column::new("Selector", "string", doc::SERVICE_SELECTOR).wide(),
];

pub(super) const EVENT_COLUMNS: &[Column] = &[
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

pub(super) const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AddressType", "string", doc::SLICE_ADDRESS_TYPE),
    Column::new("Ports", "string", doc::SLICE_PORTS),
    Column::new("Endpoints", "string", doc::SLICE_ENDPOINTS),
    AGE,
];

pub(super) const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state"),
    Column::new("Up-to-date", "string", doc::DEPLOYMENT_UPDATED),
    Column::new("Available", "string", doc::DEPLOYMENT_AVAILABLE),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", doc::DEPLOYMENT_SELECTOR).wide(),
];

pub(super) const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", doc::RS_DESIRED),
    Column::new("Current", "integer", doc::RS_CURRENT),
    Column::new("Ready", "integer", doc::RS_READY),
    AGE,
    CONTAINERS,
    IMAGES,
    Column::new("Selector", "string", doc::RS_SELECTOR).wide(),
];

pub(super) const HPA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Reference", "string", doc::HPA_REFERENCE),
    Column::new("Targets", "string", doc::HPA_TARGETS),
    Column::new("MinPods", "string", doc::HPA_MIN),
    Column::new("MaxPods", "string", doc::HPA_MAX),
    Column::new("Replicas", "string", doc::HPA_REPLICAS),
    AGE,
];

pub(super) const PDB_COLUMNS: &[Column] = &[
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

/// A custom resource without printer columns: what the API server prints for any CRD.
const CUSTOM_RESOURCE_COLUMNS: &[Column] = &[NAME, AGE];

pub(super) fn columns(kind: Kind) -> &'static [Column] {
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
        Kind::InferencePool | Kind::ScaledObject => CUSTOM_RESOURCE_COLUMNS,
    }
}
