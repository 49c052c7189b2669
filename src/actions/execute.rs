//! Running actions with the real `kube::Client`: reading the state a plan is built from
//! ([`build_plan`]), the RBAC preflight ([`preflight`]), and the steps themselves ([`execute`]),
//! with server-side dry runs, the drain wait, and evictions retried on 429 within a bound
//! (kube-rs's own retries are off, so a PodDisruptionBudget's refusal is seen here).

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::audit::Rollback;
use super::error::Explained;
use super::plan::{
    Access, AccessResult, ActionKind, DRAINED_LABELS_ANNOTATION, OnTimeout, Plan, Policy,
    RESTARTED_AT_ANNOTATION, RemovedRouting, StepOp, plan_cordon, plan_pod, plan_rollout_restart,
    plan_undrain,
};
use super::unrouted::{UnroutedTarget, wait_unrouted};
use crate::sources::kube::routing;
use crate::sources::kube::{ApiCall, ClusterClient, KubeError, KubeErrorKind};
use kvtop_core::actions::guards::{
    budget_read_access, disruption_budget_guard, unreadable_budget_guard,
};
use kvtop_core::kube_model::{ConvertOptions, EndpointDefaults, PodInfo, pod_info};

/// Time limits of an execution.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSettings {
    /// Bound on one API call.
    pub api_timeout: Duration,
    /// Period of the drain wait's polls and of eviction retries.
    pub poll: Duration,
    /// How long an eviction the PodDisruptionBudget refuses (429) is retried.
    pub evict_retry_for: Duration,
}

impl Default for ExecSettings {
    fn default() -> Self {
        ExecSettings {
            api_timeout: Duration::from_secs(5),
            poll: Duration::from_secs(1),
            evict_retry_for: Duration::from_secs(60),
        }
    }
}

pub(super) fn convert(pod: &Pod, context: &str, routing_label: Option<&str>) -> Option<PodInfo> {
    let defaults = EndpointDefaults::default();
    pod_info(
        pod,
        &ConvertOptions {
            context,
            endpoint: &defaults,
            routing_label,
            event_lines: 0,
            log_lines: 0,
        },
    )
}

/// The current time in RFC 3339, as `kubectl rollout restart` writes it.
pub(crate) fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now().to_string())
}

/// Read what `kind` on `target` needs and decide the plan. `namespace` is ignored for nodes.
/// Also gives the pods whose in-flight requests a drain waits on.
pub async fn build_plan(
    cluster: &ClusterClient,
    kind: ActionKind,
    namespace: &str,
    target: &str,
    policy: &Policy,
    limit: Duration,
) -> Result<(Plan, Vec<PodInfo>), KubeError> {
    let ctx = cluster.context.as_str();
    let client = cluster.client.clone();
    match kind {
        ActionKind::DrainPod | ActionKind::RestartPod => {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            let get = ApiCall::new("get", "pods")
                .namespace(Some(namespace))
                .name(target)
                .context(ctx);
            let pod = get.run(limit, api.get(target)).await?;
            let list = ApiCall::new("list", "pods")
                .namespace(Some(namespace))
                .context(ctx);
            let all = list.run(limit, api.list(&ListParams::default())).await?;
            let label = policy.routing_label.as_deref();
            let mut infos: Vec<PodInfo> = all
                .items
                .iter()
                .filter_map(|p| convert(p, ctx, label))
                .collect();
            let mut info = convert(&pod, ctx, label).ok_or_else(|| {
                get.error(KubeErrorKind::BadResponse("a pod without a name".into()))
            })?;
            if label.is_none() && kind == ActionKind::DrainPod {
                let routes = routing::read_namespace(&client, ctx, namespace, limit).await?;
                let owner = routing::owner_selector(&client, ctx, &info, limit).await?;
                info.set_routing(routing::routing_of(&info, &routes, owner.as_ref()));
                for other in &mut infos {
                    let routing = routing::routing_of(other, &routes, None);
                    other.set_routing(routing);
                }
            }
            let grace = pod
                .spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .map(|g| g as f64);
            let mut plan = plan_pod(kind, &info, &infos, grace, policy);
            let pdbs: Api<PodDisruptionBudget> = Api::namespaced(cluster.client.clone(), namespace);
            let budgets = ApiCall::new("list", "poddisruptionbudgets")
                .namespace(Some(namespace))
                .context(ctx)
                .run(limit, pdbs.list(&ListParams::default()))
                .await;
            plan.reads.push(budget_read_access(namespace));
            plan.add_guard(match budgets {
                Ok(list) => disruption_budget_guard(kind, &info, &list.items),
                Err(e) => unreadable_budget_guard(namespace, &Explained(&e).to_string()),
            });
            Ok((plan, vec![info]))
        }
        ActionKind::Undrain => {
            let api: Api<Pod> = Api::namespaced(client, namespace);
            let get = ApiCall::new("get", "pods")
                .namespace(Some(namespace))
                .name(target)
                .context(ctx);
            let pod = get.run(limit, api.get(target)).await?;
            let info = convert(&pod, ctx, policy.routing_label.as_deref()).ok_or_else(|| {
                get.error(KubeErrorKind::BadResponse("a pod without a name".into()))
            })?;
            let drained = drained_labels(&pod);
            Ok((plan_undrain(&info, &drained, policy), vec![info]))
        }
        ActionKind::RolloutRestart => {
            let api: Api<Deployment> = Api::namespaced(client, namespace);
            ApiCall::new("get", "deployments")
                .namespace(Some(namespace))
                .name(target)
                .context(ctx)
                .run(limit, api.get(target))
                .await?;
            let plan = plan_rollout_restart(ctx, namespace, target, &now_rfc3339(), policy);
            Ok((plan, Vec::new()))
        }
        ActionKind::Cordon | ActionKind::Uncordon | ActionKind::DrainNode => {
            let nodes: Api<Node> = Api::all(client.clone());
            ApiCall::new("get", "nodes")
                .name(target)
                .context(ctx)
                .run(limit, nodes.get(target))
                .await?;
            if kind == ActionKind::DrainNode {
                return super::node_drain::build(cluster, target, policy, limit).await;
            }
            let plan = plan_cordon(ctx, target, kind == ActionKind::Cordon, policy);
            Ok((plan, Vec::new()))
        }
    }
}

/// The labels a drain removed, from the pod's [`DRAINED_LABELS_ANNOTATION`] (empty when it has
/// none or it does not read as a JSON object of strings).
fn drained_labels(pod: &Pod) -> Vec<(String, String)> {
    let text = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DRAINED_LABELS_ANNOTATION));
    let Some(text) = text else {
        return Vec::new();
    };
    match serde_json::from_str::<std::collections::BTreeMap<String, String>>(text) {
        Ok(map) => map.into_iter().collect(),
        Err(e) => {
            tracing::warn!(error = %e, "unreadable {DRAINED_LABELS_ANNOTATION} annotation");
            Vec::new()
        }
    }
}

/// Ask the API server, with one SelfSubjectAccessReview per distinct check, whether the plan's
/// steps are allowed, and record the answers as guards.
pub async fn preflight(
    cluster: &ClusterClient,
    plan: &mut Plan,
    limit: Duration,
) -> Result<(), KubeError> {
    let mut results = Vec::new();
    for access in plan.accesses() {
        results.push(review_access(cluster, access, limit).await?);
    }
    plan.add_access_results(&results);
    Ok(())
}

/// One SelfSubjectAccessReview: may the current user make this request?
pub async fn review_access(
    cluster: &ClusterClient,
    access: Access,
    limit: Duration,
) -> Result<AccessResult, KubeError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(cluster.client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(access.verb.clone()),
                group: Some(access.group.clone()),
                resource: Some(access.resource.clone()),
                subresource: access.subresource.clone(),
                namespace: access.namespace.clone(),
                name: access.name.clone(),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = ApiCall::new("create", "selfsubjectaccessreviews")
        .context(&cluster.context)
        .run(limit, api.create(&PostParams::default(), &review))
        .await?;
    let status = answer.status.unwrap_or_default();
    Ok(AccessResult {
        access,
        allowed: status.allowed,
        reason: status.reason.unwrap_or_default(),
    })
}

/// Progress of an execution, for the CLI's output or the console's events.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Step `index` (0-based) starts.
    Step { index: usize, text: String },
    /// The drain wait's latest reading of `pod` (`namespace/name`; `None`: the engine's
    /// metrics could not be read).
    InFlight { pod: String, in_flight: Option<f64> },
    /// Something worth telling (a retried 429, a timeout reached).
    Note(String),
}

/// Why a step failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error("{}", Explained(.0))]
    Api(KubeError),
    /// The drain wait ended with requests in flight, and the policy is to stop.
    #[error("{0}")]
    StillBusy(String),
    /// A node drain left pods on the node: each one's outcome.
    #[error("{} pod(s) left on the node: {}", .0.len(), .0.join("; "))]
    PodsLeft(Vec<String>),
}

/// A failed execution: the step that failed and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("step {} failed: {error}", step + 1)]
pub struct ExecError {
    /// 0-based.
    pub step: usize,
    pub error: StepError,
    /// What had been done before it.
    pub done: Vec<String>,
    /// The routing put back because an earlier step had removed it (boxed: rarely there).
    pub rollback: Option<Box<Rollback>>,
}

/// Reads a pod's in-flight requests (running + waiting; `None` when unknown) for the drain
/// wait: called with the pod's namespace and name.
pub trait InFlight: Sync {
    fn read(&self, namespace: &str, pod: &str) -> impl Future<Output = Option<f64>> + Send;
}

/// Run the plan's steps in order (a node drain: the cordon, then its pods each on their own,
/// see [`super::node_drain::execute_units`]). `in_flight` reads an engine's running + waiting
/// requests for the drain wait; `progress` hears about each step. Returns what was done, one
/// line per step. When a step fails after routing was removed, routing is put back before
/// returning (see [`restore_routing`]).
pub async fn execute(
    cluster: &ClusterClient,
    plan: &Plan,
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Vec<String>, ExecError> {
    if !plan.units.is_empty() {
        return super::node_drain::execute_units(cluster, plan, settings, in_flight, progress)
            .await;
    }
    let all: Vec<usize> = (0..plan.steps.len()).collect();
    let failed = match run_steps(cluster, plan, &all, settings, in_flight, progress).await {
        Ok(done) => return Ok(done),
        Err(failed) => failed,
    };
    let rollback = restore_routing(cluster, plan, failed.step, settings.api_timeout, progress)
        .await
        .map(Box::new);
    Err(ExecError { rollback, ..failed })
}

/// Run the steps `indices` of `plan` in order, stopping at the first that fails: the lines of
/// those done, or the failure (with no rollback: the caller decides what to put back).
pub(super) async fn run_steps(
    cluster: &ClusterClient,
    plan: &Plan,
    indices: &[usize],
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Vec<String>, ExecError> {
    let mut done = Vec::new();
    let mut removed = Removed::default();
    for &index in indices {
        let outcome = run_step(
            cluster,
            plan,
            index,
            settings,
            in_flight,
            &mut removed,
            progress,
        )
        .await;
        match outcome {
            Ok(line) => done.push(line),
            Err(error) => {
                return Err(ExecError {
                    step: index,
                    error,
                    done,
                    rollback: None,
                });
            }
        }
    }
    Ok(done)
}

/// What each pod's drain removed so far, written on the pod with each removal.
type Removed =
    std::collections::BTreeMap<(String, String), serde_json::Map<String, serde_json::Value>>;

/// Run step `index` of `plan`, telling `progress` it starts; the line to log when it is done
/// (`(dry run)` added for a dry run).
async fn run_step(
    cluster: &ClusterClient,
    plan: &Plan,
    index: usize,
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    removed: &mut Removed,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<String, StepError> {
    let Some(step) = plan.steps.get(index) else {
        return Err(StepError::Api(
            ApiCall::new("run", "plan")
                .context(&cluster.context)
                .error(KubeErrorKind::BadResponse(format!("no step {}", index + 1))),
        ));
    };
    let ctx = cluster.context.as_str();
    let client = cluster.client.clone();
    let limit = settings.api_timeout;
    progress(Progress::Step {
        index,
        text: step.describe(),
    });
    let dry = step.dry_run;
    let patch_params = PatchParams {
        dry_run: dry,
        ..PatchParams::default()
    };
    let outcome: Result<String, StepError> = match &step.op {
        StepOp::RemoveLabel {
            namespace,
            pod,
            label,
            value,
        } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            let record = removed.entry((namespace.clone(), pod.clone())).or_default();
            record.insert(label.clone(), json!(value));
            let drained = serde_json::Value::Object(record.clone()).to_string();
            let body = json!({"metadata": {
                "labels": {label.as_str(): null},
                "annotations": {DRAINED_LABELS_ANNOTATION: drained},
            }});
            ApiCall::new("patch", "pods")
                .namespace(Some(namespace))
                .name(pod)
                .context(ctx)
                .run(limit, api.patch(pod, &patch_params, &Patch::Merge(&body)))
                .await
                .map(|_| format!("removed label {label} from {namespace}/{pod}"))
                .map_err(StepError::Api)
        }
        StepOp::RestoreLabels {
            namespace,
            pod,
            labels,
        } => restore_labels(cluster, namespace, pod, labels, &patch_params, limit)
            .await
            .map_err(StepError::Api),
        StepOp::WaitIdle {
            namespace,
            pod,
            timeout_s,
        } => {
            if plan.dry_run {
                Ok("dry run: the drain wait is skipped".to_owned())
            } else {
                let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
                let waited = wait_idle(
                    &api, ctx, namespace, pod, *timeout_s, settings, in_flight, progress,
                )
                .await;
                match (waited, plan.on_timeout) {
                    (Ok(WaitEnd::Idle(line)), _) => Ok(line),
                    (Ok(WaitEnd::TimedOut(state)), OnTimeout::Evict) => {
                        let note = format!(
                            "{state}; evicting anyway (--on-timeout evict): the pod's grace period covers the rest"
                        );
                        progress(Progress::Note(note.clone()));
                        Ok(note)
                    }
                    (Ok(WaitEnd::TimedOut(state)), OnTimeout::Stop) => Err(StepError::StillBusy(
                        format!("{state}: not evicted (--on-timeout evict evicts anyway)"),
                    )),
                    (Err(e), _) => Err(StepError::Api(e)),
                }
            }
        }
        StepOp::Evict { namespace, pod } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            evict(&api, ctx, namespace, pod, dry, settings, progress)
                .await
                .map_err(StepError::Api)
        }
        StepOp::Delete { namespace, pod } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            let params = DeleteParams {
                dry_run: dry,
                ..DeleteParams::default()
            };
            ApiCall::new("delete", "pods")
                .namespace(Some(namespace))
                .name(pod)
                .context(ctx)
                .run(limit, api.delete(pod, &params))
                .await
                .map(|_| format!("deleted {namespace}/{pod}; its controller replaces it"))
                .map_err(StepError::Api)
        }
        StepOp::RestartTemplate {
            namespace,
            deployment,
            at,
        } => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let body = json!({"spec": {"template": {"metadata": {"annotations": {
                RESTARTED_AT_ANNOTATION: at
            }}}}});
            ApiCall::new("patch", "deployments")
                .namespace(Some(namespace))
                .name(deployment)
                .context(ctx)
                .run(
                    limit,
                    api.patch(deployment, &patch_params, &Patch::Merge(&body)),
                )
                .await
                .map(|_| format!("{namespace}/{deployment} restarted at {at}"))
                .map_err(StepError::Api)
        }
        StepOp::SetUnschedulable {
            node,
            unschedulable,
        } => {
            let api: Api<Node> = Api::all(client.clone());
            let body = json!({"spec": {"unschedulable": unschedulable}});
            ApiCall::new("patch", "nodes")
                .name(node)
                .context(ctx)
                .run(limit, api.patch(node, &patch_params, &Patch::Merge(&body)))
                .await
                .map(|_| {
                    if *unschedulable {
                        format!("cordoned {node}")
                    } else {
                        format!("uncordoned {node}")
                    }
                })
                .map_err(StepError::Api)
        }
        StepOp::WaitUnrouted {
            namespace,
            pod,
            uid,
            via,
            group,
            names,
            timeout_s,
        } => {
            if plan.dry_run {
                Ok("dry run: the wait for the routes to let go is skipped".to_owned())
            } else {
                let target = UnroutedTarget {
                    namespace,
                    pod,
                    uid,
                    via: *via,
                    group,
                    names,
                };
                wait_unrouted(&client, ctx, &target, *timeout_s, settings, progress)
                    .await
                    .map_err(StepError::Api)
            }
        }
    };
    outcome.map(|line| {
        if dry {
            format!("{line} (dry run)")
        } else {
            line
        }
    })
}

/// Merge-patch `labels` back onto a pod and drop the drain's annotation.
async fn restore_labels(
    cluster: &ClusterClient,
    namespace: &str,
    pod: &str,
    labels: &[(String, String)],
    params: &PatchParams,
    limit: Duration,
) -> Result<String, KubeError> {
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), namespace);
    let map: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let body = json!({"metadata": {
        "labels": map,
        "annotations": {DRAINED_LABELS_ANNOTATION: null},
    }});
    let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    ApiCall::new("patch", "pods")
        .namespace(Some(namespace))
        .name(pod)
        .context(&cluster.context)
        .run(limit, api.patch(pod, params, &Patch::Merge(&body)))
        .await
        .map(|_| {
            format!(
                "routing restored: re-added {} to {namespace}/{pod}",
                text.join(", ")
            )
        })
}

/// Put back the routing the plan's steps before `end` (0-based) removed, after a failure or
/// an interruption; `None` when they removed none. A pod gone or terminating meanwhile is left
/// as it is: it will not serve again, and its controller's replacement is routed.
pub async fn restore_routing(
    cluster: &ClusterClient,
    plan: &Plan,
    end: usize,
    limit: Duration,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Option<Rollback> {
    restore_removed(cluster, plan.routing_to_restore(end), limit, progress).await
}

/// Put back the routing labels `pods` had removed (see [`restore_routing`]).
pub(super) async fn restore_removed(
    cluster: &ClusterClient,
    pods: Vec<RemovedRouting>,
    limit: Duration,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Option<Rollback> {
    if pods.is_empty() {
        return None;
    }
    let mut rollback = Rollback::default();
    for removed in pods {
        let (namespace, pod, labels) = (removed.namespace, removed.pod, removed.labels);
        let api: Api<Pod> = Api::namespaced(cluster.client.clone(), &namespace);
        let current = ApiCall::new("get", "pods")
            .namespace(Some(&namespace))
            .name(&pod)
            .context(&cluster.context)
            .run(limit, api.get_opt(&pod))
            .await;
        let gone = match &current {
            Ok(None) => Some("is gone"),
            Ok(Some(p)) if p.metadata.deletion_timestamp.is_some() => Some("is terminating"),
            _ => None,
        };
        let line = match gone {
            Some(state) => {
                let line = format!("{namespace}/{pod} {state}: its routing is not put back");
                rollback.skipped.push(line.clone());
                line
            }
            None => {
                let params = PatchParams::default();
                match restore_labels(cluster, &namespace, &pod, &labels, &params, limit).await {
                    Ok(line) => {
                        rollback.restored.push(line.clone());
                        line
                    }
                    Err(e) => {
                        let line = format!(
                            "routing NOT restored on {namespace}/{pod}: {}; run kvtop undrain {pod} -n {namespace}",
                            Explained(&e)
                        );
                        rollback.failed.push(line.clone());
                        line
                    }
                }
            }
        };
        progress(Progress::Note(line));
    }
    Some(rollback)
}

/// How the drain wait ended.
enum WaitEnd {
    /// Nothing in flight (or the pod is gone): what to log.
    Idle(String),
    /// The time ran out with requests in flight (or none readable): what was left.
    TimedOut(String),
}

/// Wait until the engine has nothing running or waiting, the pod is gone, or `timeout_s`.
#[allow(clippy::too_many_arguments)]
async fn wait_idle(
    api: &Api<Pod>,
    ctx: &str,
    namespace: &str,
    pod: &str,
    timeout_s: f64,
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<WaitEnd, KubeError> {
    let timeout = Duration::from_secs_f64(timeout_s.max(0.0));
    let deadline = tokio::time::Instant::now() + timeout;
    let call = ApiCall::new("get", "pods")
        .namespace(Some(namespace))
        .name(pod)
        .context(ctx);
    let mut last = None;
    loop {
        let present = call.run(settings.api_timeout, api.get_opt(pod)).await?;
        let Some(present) = present else {
            return Ok(WaitEnd::Idle(format!("{namespace}/{pod} is already gone")));
        };
        // A crash-looping or not yet started engine serves nothing: no metrics will ever say
        // so, and waiting out the timeout for it would only stall the drain.
        if !any_container_running(&present) {
            return Ok(WaitEnd::Idle(format!(
                "{namespace}/{pod}: no container is running, so nothing is in flight"
            )));
        }
        let reading = in_flight.read(namespace, pod).await;
        progress(Progress::InFlight {
            pod: format!("{namespace}/{pod}"),
            in_flight: reading,
        });
        if reading.is_some_and(|n| n <= 0.0) {
            return Ok(WaitEnd::Idle(format!(
                "{namespace}/{pod}: no request in flight"
            )));
        }
        last = reading.or(last);
        if tokio::time::Instant::now() >= deadline {
            let state = match last {
                Some(n) => format!("{n:.0} request(s) still in flight"),
                None => "the engine's metrics could not be read".to_owned(),
            };
            return Ok(WaitEnd::TimedOut(format!(
                "{namespace}/{pod}: drain wait ended after {timeout_s:.0}s with {state}"
            )));
        }
        tokio::time::sleep(settings.poll).await;
    }
}

fn any_container_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|all| {
            all.iter()
                .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        })
}

/// Evict, retrying a PodDisruptionBudget's 429 until [`ExecSettings::evict_retry_for`].
async fn evict(
    api: &Api<Pod>,
    ctx: &str,
    namespace: &str,
    pod: &str,
    dry: bool,
    settings: &ExecSettings,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<String, KubeError> {
    let params = EvictParams {
        delete_options: Some(DeleteParams {
            dry_run: dry,
            ..DeleteParams::default()
        }),
        post_options: PostParams {
            dry_run: dry,
            ..PostParams::default()
        },
    };
    let call = ApiCall::new("evict", "pods/eviction")
        .namespace(Some(namespace))
        .name(pod)
        .context(ctx);
    let deadline = tokio::time::Instant::now() + settings.evict_retry_for;
    loop {
        match call
            .run(settings.api_timeout, api.evict(pod, &params))
            .await
        {
            Ok(_) => return Ok(format!("evicted {namespace}/{pod}")),
            Err(e) if e.is_not_found() => {
                return Ok(format!("{namespace}/{pod} is already gone"));
            }
            Err(e) if e.is_too_many_requests() && tokio::time::Instant::now() < deadline => {
                progress(Progress::Note(format!("{e}; retrying")));
                tokio::time::sleep(settings.poll).await;
            }
            Err(e) => return Err(e),
        }
    }
}
