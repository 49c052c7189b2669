//! The node drain, vLLM-aware: cordon the node, then take each pod off it on its own. An
//! inference engine goes through the pod drain (out of routing, its requests finish, evicted);
//! any other pod is evicted as `kubectl drain` evicts it. A pod whose PodDisruptionBudget
//! allows no disruption is named and left where it is, and the rest carry on: a node half
//! drained with a clear list beats a node cordoned and abandoned at the first refusal.

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::guards::{
    budget_read_access, disruption_budget_guard, selects, unreadable_budget_guard,
};
use super::plan::{
    ActionKind, Guard, Plan, PodUnit, Policy, UnitHow, evict_step, pod_drain_steps, replica_guards,
    unschedulable_step,
};
use crate::kube_model::PodInfo;

/// An engine pod on the node and its `terminationGracePeriodSeconds`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnginePod {
    pub pod: PodInfo,
    pub grace_s: Option<f64>,
}

/// What a node drain is decided from.
#[derive(Debug, Clone, Copy)]
pub struct NodePods<'a> {
    /// The node's pods that run an inference engine (their routes read, unless a routing label
    /// is configured).
    pub engines: &'a [EnginePod],
    /// The node's other pods.
    pub others: &'a [PodInfo],
    /// Every pod of the namespaces concerned: replicas elsewhere count for min-ready.
    pub all: &'a [PodInfo],
    /// The PodDisruptionBudgets of those namespaces.
    pub budgets: &'a [PodDisruptionBudget],
    /// Namespaces whose budgets could not be read, with why.
    pub unreadable_budgets: &'a [(String, String)],
}

/// Why a pod stays on the node untouched (`None`: it leaves).
fn stays(pod: &PodInfo) -> Option<&'static str> {
    let owner = pod.owner.as_ref().map(|o| o.kind.as_str());
    match owner {
        // Its controller would put it straight back; `kubectl drain --ignore-daemonsets`.
        Some("DaemonSet") => Some("DaemonSet"),
        // A static pod's mirror: only the kubelet's manifest removes it.
        Some("Node") => Some("static (mirror) pod"),
        _ if pod.terminating => Some("already terminating"),
        _ => None,
    }
}

/// Cordon `node`, then drain its engines and evict its other pods, at most
/// `policy.parallelism` at a time.
pub fn plan_drain_node(context: &str, node: &str, pods: NodePods<'_>, policy: &Policy) -> Plan {
    let mut plan = Plan::new(ActionKind::DrainNode, context, None, node);
    plan.parallelism = policy.parallelism.max(1);
    plan.steps.push(unschedulable_step(node, true));
    let mut staying: Vec<String> = Vec::new();
    let mut leaving: Vec<&PodInfo> = Vec::new();
    let candidates = pods
        .engines
        .iter()
        .map(|e| (&e.pod, Some(e.grace_s)))
        .chain(pods.others.iter().map(|p| (p, None)));
    for (pod, engine_grace) in candidates {
        if let Some(why) = stays(pod) {
            staying.push(format!("{} ({why})", pod.key.name));
            continue;
        }
        let unit = plan.units.len();
        let budget = disruption_budget_guard(ActionKind::DrainPod, pod, pods.budgets);
        let how = if !budget.passed && !budget.overridable {
            UnitHow::Skip {
                reason: budget.reason,
            }
        } else if let Some(grace_s) = engine_grace {
            let (steps, routing) = pod_drain_steps(pod, grace_s, policy);
            plan.steps
                .extend(steps.into_iter().map(|s| with_unit(s, unit)));
            plan.guards.push(routing);
            UnitHow::Drain
        } else {
            plan.steps.push(with_unit(
                evict_step(&pod.key.namespace, &pod.key.name),
                unit,
            ));
            UnitHow::Evict
        };
        if !matches!(how, UnitHow::Skip { .. }) {
            leaving.push(pod);
        }
        plan.units.push(PodUnit {
            namespace: pod.key.namespace.clone(),
            pod: pod.key.name.clone(),
            how,
        });
    }
    plan.guards.push(summary(&plan, &staying));
    plan.guards.extend(budget_queues(&leaving, pods.budgets));
    let bare: Vec<&str> = leaving
        .iter()
        .filter(|p| p.owner.is_none())
        .map(|p| p.key.name.as_str())
        .collect();
    if !bare.is_empty() {
        plan.guards.push(Guard::fail(
            "controller",
            format!("no controller recreates {}", bare.join(", ")),
            true,
        ));
    }
    let mut namespaces: Vec<&str> = plan.units.iter().map(|u| u.namespace.as_str()).collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    for ns in namespaces {
        plan.reads.push(budget_read_access(ns));
    }
    for (ns, why) in pods.unreadable_budgets {
        plan.guards.push(unreadable_budget_guard(ns, why));
    }
    plan.guards
        .extend(replica_guards(&leaving, pods.all, policy));
    plan.finish(policy)
}

/// Budgets that cover more of the leaving ready pods than they allow at once: the evictions
/// past the allowance are refused (429) until replacements elsewhere are ready, and are retried
/// meanwhile. Said up front, so a slow or partial drain is no surprise.
fn budget_queues(leaving: &[&PodInfo], budgets: &[PodDisruptionBudget]) -> Vec<Guard> {
    let mut out = Vec::new();
    for pdb in budgets {
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let covered = leaving
            .iter()
            .filter(|p| p.ready && p.key.namespace == ns)
            .filter(|p| selects(pdb, &p.labels.iter().cloned().collect()))
            .count();
        let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
        let allowed = usize::try_from(allowed).unwrap_or(0);
        if covered > allowed && allowed > 0 {
            let name = pdb.metadata.name.as_deref().unwrap_or_default();
            out.push(Guard::pass(
                "disruption-budget",
                format!(
                    "PodDisruptionBudget {ns}/{name} allows {allowed} disruption(s) at a time and covers {covered} of these pods: the other evictions are refused until replacements are ready elsewhere, and are retried for --evict-timeout"
                ),
            ));
        }
    }
    out
}

fn with_unit(mut step: super::plan::ApiStep, unit: usize) -> super::plan::ApiStep {
    step.unit = Some(unit);
    step
}

/// `2 engine(s) drained through routing, 1 other pod evicted, …`: what happens to whom.
fn summary(plan: &Plan, staying: &[String]) -> Guard {
    let count = |want: fn(&UnitHow) -> bool| plan.units.iter().filter(|u| want(&u.how)).count();
    let drained = count(|h| matches!(h, UnitHow::Drain));
    let evicted = count(|h| matches!(h, UnitHow::Evict));
    let skipped: Vec<String> = plan
        .units
        .iter()
        .filter(|u| matches!(u.how, UnitHow::Skip { .. }))
        .map(PodUnit::name)
        .collect();
    let mut text = format!(
        "{drained} engine pod(s) drained through routing, {evicted} other pod(s) evicted, {} at a time",
        plan.parallelism
    );
    if !staying.is_empty() {
        text.push_str(&format!("; stay: {}", staying.join(", ")));
    }
    if skipped.is_empty() {
        return Guard::pass("pods", text);
    }
    text.push_str(&format!(
        "; SKIPPED (their PodDisruptionBudget allows no disruption, the node stays cordoned with them on it): {}",
        skipped.join(", ")
    ));
    Guard::pass("pods", text)
}

#[cfg(test)]
#[path = "node_drain_tests.rs"]
pub(crate) mod tests;
