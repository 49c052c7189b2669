//! PURE. A pod's data as the rules read it: facts (`config.*`, `env.*`, `pod.*`), labels, state
//! reasons, event messages and log lines, added to an engine's [`EngineInput`].

use super::input::EngineInput;
use crate::kube_model::PodInfo;

/// `input` with what the engine's pod says; unchanged without a pod (the pod-based rules then
/// see unknowns and do not fire).
///
/// ```no_run
/// # use kvtop_core::rules::EngineInput;
/// # fn f(fleet: &kvtop_core::fleet::Fleet) {
/// let inputs: Vec<EngineInput<'_>> = fleet
///     .engines()
///     .iter()
///     .map(|e| kvtop_core::rules::with_pod(EngineInput::from_state(e), fleet.pod_info(e.target)))
///     .collect();
/// # }
/// ```
pub fn with_pod<'a>(input: EngineInput<'a>, pod: Option<&'a PodInfo>) -> EngineInput<'a> {
    match pod {
        Some(pod) => input
            .with_facts(&pod.facts)
            .with_labels(&pod.labels)
            .with_pod_status(&pod.status_reasons)
            .with_events(pod.events.lines())
            .with_logs(pod.logs.lines()),
        None => input,
    }
}
