//! Reading what routes to pods: a namespace's Services, EndpointSlices (discovery.k8s.io/v1)
//! and Gateway API Inference Extension InferencePools, for discovery's `routed` and the drain's
//! plan. The decision itself is pure ([`kvtop_core::kube_model::routing`]).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as K8sSelector;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use super::error::{ApiCall, KubeError};
use kvtop_core::kube_model::PodInfo;
use kvtop_core::kube_model::routing::{
    INFERENCE_POOL_PLURAL, INFERENCE_POOL_VERSIONS, InferencePool, PodRouting, RoutedPod,
    RoutingObjects, resolve,
};

/// The routing objects of one namespace.
#[derive(Debug, Clone, Default)]
pub struct NamespaceRoutes {
    pub services: Vec<Service>,
    pub slices: Vec<EndpointSlice>,
    pub pools: Vec<InferencePool>,
}

/// The InferencePool resource of one group version.
pub fn pool_resource(group: &str, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, "InferencePool"),
        INFERENCE_POOL_PLURAL,
    )
}

fn call(verb: &str, resource: &str, namespace: &str, context: &str) -> ApiCall {
    ApiCall::new(verb, resource)
        .namespace(Some(namespace))
        .context(context)
}

/// A namespace's pools of every InferencePool version the cluster serves. A group the
/// cluster does not serve (404: the CRD is not installed) has none; that is no error.
pub async fn list_pools(
    client: &kube::Client,
    context: &str,
    namespace: &str,
    limit: Duration,
) -> Result<Vec<InferencePool>, KubeError> {
    let mut pools = Vec::new();
    for (group, version) in INFERENCE_POOL_VERSIONS {
        let resource = pool_resource(group, version);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let listed = call(
            "list",
            &format!("{INFERENCE_POOL_PLURAL}.{group}"),
            namespace,
            context,
        )
        .run(limit, api.list(&ListParams::default()))
        .await;
        match listed {
            Ok(list) => pools.extend(list.items.iter().filter_map(|obj| {
                let mut value = serde_json::to_value(obj).ok()?;
                value["apiVersion"] = format!("{group}/{version}").into();
                InferencePool::from_json(&value)
            })),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err),
        }
    }
    Ok(pools)
}

/// Services, EndpointSlices and InferencePools of `namespace`.
pub async fn read_namespace(
    client: &kube::Client,
    context: &str,
    namespace: &str,
    limit: Duration,
) -> Result<NamespaceRoutes, KubeError> {
    let params = ListParams::default().match_any();
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let services = call("list", "services", namespace, context)
        .run(limit, services.list(&params))
        .await?
        .items;
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let slices = call("list", "endpointslices", namespace, context)
        .run(limit, slices.list(&params))
        .await?
        .items;
    let pools = list_pools(client, context, namespace, limit).await?;
    Ok(NamespaceRoutes {
        services,
        slices,
        pools,
    })
}

/// The selector of the ReplicaSet owning `pod`, read from the API (`None` for other owners).
pub async fn owner_selector(
    client: &kube::Client,
    context: &str,
    pod: &PodInfo,
    limit: Duration,
) -> Result<Option<K8sSelector>, KubeError> {
    let Some(owner) = pod.owner.as_ref().filter(|o| o.kind == "ReplicaSet") else {
        return Ok(None);
    };
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), &pod.key.namespace);
    let rs = call("get", "replicasets", &pod.key.namespace, context)
        .name(&owner.name)
        .run(limit, api.get_opt(&owner.name))
        .await?;
    Ok(rs.and_then(|rs| rs.spec).map(|s| s.selector))
}

/// The pod's routes among `routes`, labels chosen against `owner` (its ReplicaSet's selector).
pub fn routing_of(
    pod: &PodInfo,
    routes: &NamespaceRoutes,
    owner: Option<&K8sSelector>,
) -> PodRouting {
    let labels: BTreeMap<String, String> = pod.labels.iter().cloned().collect();
    let routed = RoutedPod {
        namespace: &pod.key.namespace,
        name: &pod.key.name,
        uid: &pod.uid,
        ip: pod.endpoint.pod_ip.as_deref(),
        labels: &labels,
        ready: pod.ready && !pod.terminating,
    };
    let objects = RoutingObjects {
        services: &routes.services,
        slices: &routes.slices,
        pools: &routes.pools,
    };
    resolve(&routed, &objects, owner)
}

/// Read the routes of every namespace of `pods` and record each pod's. Pods of a namespace
/// whose routes cannot be read keep `routing` unset (routed unknown); the error is returned.
pub async fn attach_routing(
    client: &kube::Client,
    context: &str,
    limit: Duration,
    pods: &mut [PodInfo],
) -> Option<KubeError> {
    let namespaces: std::collections::BTreeSet<String> =
        pods.iter().map(|p| p.key.namespace.clone()).collect();
    let mut failure = None;
    for ns in namespaces {
        match read_namespace(client, context, &ns, limit).await {
            Ok(routes) => {
                for pod in pods.iter_mut().filter(|p| p.key.namespace == ns) {
                    let routing = routing_of(pod, &routes, None);
                    pod.set_routing(routing);
                }
            }
            Err(err) => failure = Some(err),
        }
    }
    failure
}
