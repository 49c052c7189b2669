//! Guards decided from objects read beside the target: the PodDisruptionBudget that governs a
//! pod's eviction. Checked before anything is sent, so a drain the budget forbids is refused
//! while the pod is still in routing, instead of failing at its last step.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::plan::{Access, ActionKind, Guard};
use crate::kube_model::{LabelSelector, PodInfo};

const NAME: &str = "disruption-budget";

/// The list of PodDisruptionBudgets the guard reads, for the RBAC preflight.
pub fn budget_read_access(namespace: &str) -> Access {
    Access {
        verb: "list".into(),
        group: "policy".into(),
        resource: "poddisruptionbudgets".into(),
        subresource: None,
        namespace: Some(namespace.to_owned()),
        name: None,
    }
}

pub(crate) fn selects(pdb: &PodDisruptionBudget, labels: &BTreeMap<String, String>) -> bool {
    pdb.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|s| LabelSelector::from_k8s(s).ok())
        // An empty selector in policy/v1 selects every pod of the namespace.
        .is_some_and(|s| s.matches(labels))
}

/// Whether `kind` on `pod` may disrupt it under the budgets of its namespace (`pdbs`). An
/// eviction the budget forbids would be refused by the API server anyway: that refusal is
/// final. A delete bypasses the budget, so for a restart it is a refusal one may override.
pub fn disruption_budget_guard(
    kind: ActionKind,
    pod: &PodInfo,
    pdbs: &[PodDisruptionBudget],
) -> Guard {
    let evicts = kind != ActionKind::RestartPod;
    let labels: BTreeMap<String, String> = pod.labels.iter().cloned().collect();
    let mine: Vec<&PodDisruptionBudget> = pdbs
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(pod.key.namespace.as_str()))
        .filter(|p| selects(p, &labels))
        .collect();
    let name_of = |p: &PodDisruptionBudget| p.metadata.name.clone().unwrap_or_default();
    let [pdb] = mine.as_slice() else {
        if mine.is_empty() {
            return Guard::pass(NAME, "no PodDisruptionBudget selects the pod".into());
        }
        let names: Vec<String> = mine.iter().map(|p| name_of(p)).collect();
        let reason = format!(
            "PodDisruptionBudgets {} all select the pod: the API server refuses to evict it",
            names.join(", ")
        );
        return if evicts {
            Guard::fail(NAME, reason, false)
        } else {
            Guard::pass(NAME, format!("{reason} (a delete is not an eviction)"))
        };
    };
    let name = format!("PodDisruptionBudget {}/{}", pod.key.namespace, name_of(pdb));
    let status = pdb.status.clone().unwrap_or_default();
    let allowed = status.disruptions_allowed;
    let counts = format!(
        "{} healthy, {} desired",
        status.current_healthy, status.desired_healthy
    );
    if !pod.ready {
        return Guard::pass(
            NAME,
            format!("{name}: the pod is not ready, so it is not one of the {counts}"),
        );
    }
    if allowed > 0 {
        return Guard::pass(
            NAME,
            format!("{name} allows {allowed} disruption(s) ({counts})"),
        );
    }
    if evicts {
        Guard::fail(
            NAME,
            format!("{name} allows 0 disruptions ({counts}): the eviction would be refused"),
            false,
        )
    } else {
        Guard::fail(
            NAME,
            format!("{name} allows 0 disruptions ({counts}): deleting the pod bypasses it"),
            true,
        )
    }
}

/// The budget could not be read: the action may still be taken, knowingly.
pub fn unreadable_budget_guard(namespace: &str, why: &str) -> Guard {
    Guard::fail(
        NAME,
        format!("cannot read the PodDisruptionBudgets of {namespace}: {why}"),
        true,
    )
}
