//! The drain's wait for the routes to let go of a pod after its labels were removed: until no
//! EndpointSlice of its Services lists it, or its InferencePools no longer select it. Until
//! then a proxy or gateway may still send it new requests, so the in-flight wait would be
//! waiting on a moving target.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DynamicObject, ListParams};

use super::execute::{ExecSettings, Progress};
use crate::sources::kube::routing::pool_resource;
use crate::sources::kube::{ApiCall, KubeError, KubeErrorKind};
use kvtop_core::kube_model::routing::{
    INFERENCE_POOL_PLURAL, InferencePool, RouteKind, RoutedPod, SERVICE_NAME_LABEL,
    inference_pool_version, pool_selects, slice_lists,
};

/// The pod and the routes (of one kind) to wait on.
#[derive(Debug, Clone, Copy)]
pub(super) struct UnroutedTarget<'a> {
    pub namespace: &'a str,
    pub pod: &'a str,
    pub uid: &'a str,
    pub via: RouteKind,
    /// API group of the pools (empty for Services).
    pub group: &'a str,
    pub names: &'a [String],
}

impl UnroutedTarget<'_> {
    fn call(&self, verb: &str, resource: &str, context: &str) -> ApiCall {
        ApiCall::new(verb, resource)
            .namespace(Some(self.namespace))
            .context(context)
    }

    /// The routes that still send the pod traffic; `None` when the pod is gone.
    async fn still_routing(
        &self,
        client: &kube::Client,
        context: &str,
        limit: Duration,
    ) -> Result<Option<Vec<String>>, KubeError> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), self.namespace);
        let Some(pod) = self
            .call("get", "pods", context)
            .name(self.pod)
            .run(limit, pods.get_opt(self.pod))
            .await?
        else {
            return Ok(None);
        };
        let labels: BTreeMap<String, String> = pod.metadata.labels.unwrap_or_default();
        let routed = RoutedPod {
            namespace: self.namespace,
            name: self.pod,
            uid: self.uid,
            // Hand-written endpoints without a reference are not waited on: no label
            // removal takes the pod out of them.
            ip: None,
            labels: &labels,
            ready: true,
        };
        let mut still = Vec::new();
        for name in self.names {
            let listing = match self.via {
                RouteKind::Service => {
                    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), self.namespace);
                    let params =
                        ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={name}"));
                    let slices = self
                        .call("list", "endpointslices", context)
                        .run(limit, api.list(&params))
                        .await?;
                    slices
                        .items
                        .iter()
                        .any(|s| slice_lists(s, &routed).is_some())
                }
                RouteKind::InferencePool => {
                    let version = inference_pool_version(self.group).unwrap_or("v1");
                    let resource = pool_resource(self.group, version);
                    let api: Api<DynamicObject> =
                        Api::namespaced_with(client.clone(), self.namespace, &resource);
                    let pool = self
                        .call(
                            "get",
                            &format!("{INFERENCE_POOL_PLURAL}.{}", self.group),
                            context,
                        )
                        .name(name)
                        .run(limit, api.get_opt(name))
                        .await?;
                    pool.and_then(|p| {
                        let mut value = serde_json::to_value(&p).ok()?;
                        value["apiVersion"] = format!("{}/{version}", self.group).into();
                        InferencePool::from_json(&value)
                    })
                    .is_some_and(|p| pool_selects(&p, &labels))
                }
            };
            if listing {
                still.push(format!("{} {name}", self.via.as_str()));
            }
        }
        Ok(Some(still))
    }
}

/// Poll until the routes have let go of the pod (or it is gone); past `timeout_s` the drain
/// stops with an error, since traffic may still arrive.
pub(super) async fn wait_unrouted(
    client: &kube::Client,
    context: &str,
    target: &UnroutedTarget<'_>,
    timeout_s: f64,
    settings: &ExecSettings,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<String, KubeError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(timeout_s.max(0.0));
    let (ns, pod) = (target.namespace, target.pod);
    let mut told = false;
    loop {
        let Some(still) = target
            .still_routing(client, context, settings.api_timeout)
            .await?
        else {
            return Ok(format!("{ns}/{pod} is already gone"));
        };
        if still.is_empty() {
            return Ok(format!(
                "{ns}/{pod} has left {} {}",
                target.via.as_str(),
                target.names.join(", ")
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            let what = match target.via {
                RouteKind::Service => "endpointslices",
                RouteKind::InferencePool => INFERENCE_POOL_PLURAL,
            };
            return Err(target.call("wait on", what, context).error(KubeErrorKind::Other(
                format!(
                    "after {timeout_s:.0}s {} still route(s) to {ns}/{pod}: new requests may still arrive",
                    still.join(", ")
                ),
            )));
        }
        if !told {
            progress(Progress::Note(format!(
                "waiting for {} to let go of {ns}/{pod}",
                still.join(", ")
            )));
            told = true;
        }
        tokio::time::sleep(settings.poll).await;
    }
}
