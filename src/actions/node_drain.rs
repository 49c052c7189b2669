//! The node drain with the real client: what it is decided from ([`build`]: the node's pods by
//! `spec.nodeName`, which of them run an engine, their routes, the PodDisruptionBudgets of
//! their namespaces), and its run ([`execute_units`]): the cordon, then each pod through its
//! own steps, a bounded number at a time. A pod that fails (a budget that keeps refusing, an
//! engine still busy) gets its routing back and is reported; the others carry on.

use std::sync::Mutex;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};

use super::audit::Rollback;
use super::error::Explained;
use super::execute::{
    ExecError, ExecSettings, InFlight, Progress, StepError, convert, restore_removed, run_steps,
};
use crate::sources::kube::routing;
use crate::sources::kube::{ApiCall, ClusterClient, KubeError};
use kvtop_core::actions::node_drain::{EnginePod, NodePods, plan_drain_node};
use kvtop_core::actions::plan::{Plan, Policy, UnitHow};
use kvtop_core::kube_model::{DEFAULT_SELECTORS, LabelSelector, PodInfo, Recognizer};

/// Which of a node's pods run an inference engine: the discovery's selectors (the defaults
/// and the configured ones) or a container running vLLM or SGLang.
fn recognizer(policy: &Policy) -> Recognizer {
    let defaults = DEFAULT_SELECTORS
        .iter()
        .filter_map(|s| LabelSelector::parse(s).ok());
    Recognizer {
        selectors: defaults.chain(policy.engine_selectors.clone()).collect(),
        by_workload: true,
    }
}

/// Read what a drain of `node` needs and decide its plan; also gives the engine pods, whose
/// in-flight requests the drain waits on.
pub(super) async fn build(
    cluster: &ClusterClient,
    node: &str,
    policy: &Policy,
    limit: Duration,
) -> Result<(Plan, Vec<PodInfo>), KubeError> {
    let ctx = cluster.context.as_str();
    let client = &cluster.client;
    let label = policy.routing_label.as_deref();
    // As `kubectl drain` finds them: every namespace, by the node they are bound to.
    let on_node: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let on_node = ApiCall::new("list", "pods")
        .context(ctx)
        .run(limit, on_node.list(&params))
        .await?
        .items;
    let recognize = recognizer(policy);
    let mut namespaces: Vec<String> = on_node
        .iter()
        .filter_map(|p| p.metadata.namespace.clone())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let mut engines: Vec<EnginePod> = Vec::new();
    let mut others: Vec<PodInfo> = Vec::new();
    let mut all: Vec<PodInfo> = Vec::new();
    let mut budgets: Vec<PodDisruptionBudget> = Vec::new();
    let mut unreadable: Vec<(String, String)> = Vec::new();
    for ns in &namespaces {
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let siblings = ApiCall::new("list", "pods")
            .namespace(Some(ns))
            .context(ctx)
            .run(limit, pods.list(&ListParams::default()))
            .await?
            .items;
        let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
        match ApiCall::new("list", "poddisruptionbudgets")
            .namespace(Some(ns))
            .context(ctx)
            .run(limit, pdbs.list(&ListParams::default()))
            .await
        {
            Ok(list) => budgets.extend(list.items),
            Err(e) => unreadable.push((ns.clone(), Explained(&e).to_string())),
        }
        // Unreadable routes leave the engines' routing unknown: the plan refuses them unless
        // overridden, as the pod drain does.
        let routes = match label {
            Some(_) => None,
            None => match routing::read_namespace(client, ctx, ns, limit).await {
                Ok(routes) => Some(routes),
                Err(e) => {
                    tracing::warn!(namespace = %ns, error = %e, "routes unreadable for the node drain");
                    None
                }
            },
        };
        for pod in &siblings {
            let Some(mut info) = convert(pod, ctx, label) else {
                continue;
            };
            let engine = recognize.recognize(pod).is_some();
            let here = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node);
            // Only engines are counted by routing (min-ready counts routed replicas); the
            // owner's selector matters only for the pods whose labels the drain removes.
            if let (true, Some(routes)) = (engine, &routes) {
                let owner = match here {
                    true => routing::owner_selector(client, ctx, &info, limit).await?,
                    false => None,
                };
                info.set_routing(routing::routing_of(&info, routes, owner.as_ref()));
            }
            if here {
                if engine {
                    let grace_s = pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.termination_grace_period_seconds)
                        .map(|g| g as f64);
                    engines.push(EnginePod {
                        pod: info.clone(),
                        grace_s,
                    });
                } else {
                    others.push(info.clone());
                }
            }
            all.push(info);
        }
    }
    let pods = NodePods {
        engines: &engines,
        others: &others,
        all: &all,
        budgets: &budgets,
        unreadable_budgets: &unreadable,
    };
    let plan = plan_drain_node(ctx, node, pods, policy);
    Ok((plan, engines.into_iter().map(|e| e.pod).collect()))
}

/// How one pod of the drain ended.
struct UnitEnd {
    unit: usize,
    done: Vec<String>,
    /// The step that failed, why, and the routing put back.
    failed: Option<(usize, StepError, Option<Rollback>)>,
}

/// Run a node drain: its own steps (the cordon) first, then its pods, at most
/// `plan.parallelism` at a time. Every pod is tried; the run fails, after all of them, when
/// any pod was skipped or failed, listing each one's outcome.
pub(super) async fn execute_units(
    cluster: &ClusterClient,
    plan: &Plan,
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Vec<String>, ExecError> {
    // Indices, not iterators over the plan: nothing borrowed by a closure lives across an
    // await (the run's future must be Send for every lifetime).
    let node_steps: Vec<usize> = (0..plan.steps.len())
        .filter(|&i| plan.steps[i].unit.is_none())
        .collect();
    // The cordon removes no routing: a failure there has nothing to put back.
    let mut done = run_steps(cluster, plan, &node_steps, settings, in_flight, progress).await?;
    let shared = Mutex::new(progress);
    let runnable: Vec<usize> = (0..plan.units.len())
        .filter(|&u| !matches!(plan.units[u].how, UnitHow::Skip { .. }))
        .collect();
    let shared = &shared;
    let mut ends: Vec<UnitEnd> = futures_util::stream::iter(runnable)
        .map(|unit| run_unit(cluster, plan, unit, settings, in_flight, shared))
        .buffer_unordered(plan.parallelism.max(1))
        .collect()
        .await;
    ends.sort_by_key(|e| e.unit);
    let mut left: Vec<String> = Vec::new();
    let mut first_failed: Option<usize> = None;
    let mut rollback = Rollback::default();
    for (unit, pod) in plan.units.iter().enumerate() {
        let name = pod.name();
        if let UnitHow::Skip { reason } = &pod.how {
            left.push(format!("{name}: skipped: {reason}"));
            continue;
        }
        let Some(end) = ends.iter_mut().find(|e| e.unit == unit) else {
            continue;
        };
        done.append(&mut end.done);
        match end.failed.take() {
            None => done.push(match pod.how {
                UnitHow::Drain => format!("{name}: drained"),
                _ => format!("{name}: evicted"),
            }),
            Some((step, error, restored)) => {
                first_failed.get_or_insert(step);
                let mut line = format!("{name}: NOT drained: step {} failed: {error}", step + 1);
                if let Some(restored) = restored {
                    if restored.failed.is_empty() {
                        line.push_str(" (routing put back)");
                    }
                    rollback.restored.extend(restored.restored);
                    rollback.skipped.extend(restored.skipped);
                    rollback.failed.extend(restored.failed);
                }
                left.push(line);
            }
        }
    }
    if left.is_empty() {
        return Ok(done);
    }
    Err(ExecError {
        // Only skips: the run ended with its last step.
        step: first_failed.unwrap_or(plan.steps.len().saturating_sub(1)),
        error: StepError::PodsLeft(left),
        done,
        rollback: (!rollback.is_empty()).then(|| Box::new(rollback)),
    })
}

/// Run one pod's steps in order; on a failure, put back the routing its earlier steps removed.
async fn run_unit(
    cluster: &ClusterClient,
    plan: &Plan,
    unit: usize,
    settings: &ExecSettings,
    in_flight: &impl InFlight,
    shared: &Mutex<&mut (dyn FnMut(Progress) + Send)>,
) -> UnitEnd {
    let mut report = |update: Progress| {
        let mut progress = shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (*progress)(update);
    };
    let mine: Vec<usize> = (0..plan.steps.len())
        .filter(|&i| plan.steps[i].unit == Some(unit))
        .collect();
    match run_steps(cluster, plan, &mine, settings, in_flight, &mut report).await {
        Ok(done) => UnitEnd {
            unit,
            done,
            failed: None,
        },
        Err(failed) => {
            let back = plan.unit_routing_to_restore(unit, failed.step);
            let rollback = restore_removed(cluster, back, settings.api_timeout, &mut report).await;
            UnitEnd {
                unit,
                done: failed.done,
                failed: Some((failed.step, failed.error, rollback)),
            }
        }
    }
}
