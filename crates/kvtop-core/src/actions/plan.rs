//! What a Kubernetes action will do, decided from the current state before anything is sent:
//! the API requests in order ([`ApiStep`]) and the checks that allow or refuse it ([`Guard`]).
//!
//! Pure: it reads pods as [`PodInfo`] and the operator's [`Policy`], and returns a [`Plan`]. The
//! RBAC preflight's answers come back through [`Plan::add_access_results`].

use crate::kube_model::PodInfo;
use crate::kube_model::routing::{PodRouting, RouteKind, inference_pool_version};

/// The safe actions kvtop can take on a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Take a pod out of routing, wait for its engine to go idle, then evict it.
    DrainPod,
    /// Delete a pod; its controller starts a replacement.
    RestartPod,
    /// Roll a Deployment by changing its template's `restartedAt` annotation.
    RolloutRestart,
    /// Mark a node unschedulable.
    Cordon,
    /// Mark a node schedulable again.
    Uncordon,
    /// Cordon a node and evict every pod on it that no DaemonSet owns.
    DrainNode,
    /// Put a drained pod back into routing: re-add the labels its drain removed.
    Undrain,
}

impl ActionKind {
    /// The command-line name (`drain`, `restart`, …).
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::DrainPod => "drain",
            ActionKind::RestartPod => "restart",
            ActionKind::RolloutRestart => "rollout-restart",
            ActionKind::Cordon => "cordon",
            ActionKind::Uncordon => "uncordon",
            ActionKind::DrainNode => "drain-node",
            ActionKind::Undrain => "undrain",
        }
    }

    /// What the target is: `pod`, `deployment` or `node`.
    pub fn target_kind(self) -> &'static str {
        match self {
            ActionKind::DrainPod | ActionKind::RestartPod | ActionKind::Undrain => "pod",
            ActionKind::RolloutRestart => "deployment",
            ActionKind::Cordon | ActionKind::Uncordon | ActionKind::DrainNode => "node",
        }
    }
}

/// The annotation `kubectl rollout restart` sets on a Deployment's pod template.
pub const RESTARTED_AT_ANNOTATION: &str = "kubectl.kubernetes.io/restartedAt";

/// The pod annotation a drain writes with the labels it removed (a JSON object of label to
/// value), so that `kvtop undrain` can put them back from any machine, even once the removal
/// orphaned the pod from its ReplicaSet (whose template then no longer describes it).
pub const DRAINED_LABELS_ANNOTATION: &str = "kvtop.dev/drained-labels";

/// What the drain does when its wait ends with requests still in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnTimeout {
    /// Put routing back and stop: no request is cut short (the default).
    #[default]
    Stop,
    /// Evict anyway: the pod's grace period covers what is left.
    Evict,
}

impl OnTimeout {
    /// `stop` or `evict`, as `--on-timeout` spells it.
    pub fn name(self) -> &'static str {
        match self {
            OnTimeout::Stop => "stop",
            OnTimeout::Evict => "evict",
        }
    }

    /// What the plan's wait step adds to its description.
    fn then(self) -> &'static str {
        match self {
            OnTimeout::Stop => "; still busy then: restore routing and stop",
            OnTimeout::Evict => "; still busy then: evict anyway",
        }
    }
}

/// The operator's settings that shape a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The label whose removal takes a pod out of routing; `None` (the default): the labels
    /// are derived from the Services and InferencePools that route to the pod.
    pub routing_label: Option<String>,
    /// Fewest ready replicas an action may leave in a Deployment.
    pub min_ready: u32,
    /// No mutation may be sent (`--read-only`, or the context's `read_only = true`).
    pub read_only: bool,
    /// The context is protected: the operator must type the target's name.
    pub protected: bool,
    /// Longest wait for a drained engine to go idle, in seconds (further bounded by the pod's
    /// `terminationGracePeriodSeconds`).
    pub drain_timeout_s: f64,
    /// Send every mutation as a server-side dry run.
    pub dry_run: bool,
    /// What a drain does when its wait ends with requests in flight.
    pub on_timeout: OnTimeout,
    /// How many pods a node drain drains at once.
    pub parallelism: usize,
    /// Selectors that mark a node's pods as inference engines, beside what their containers
    /// run (the discovery's own selectors).
    pub engine_selectors: Vec<crate::kube_model::LabelSelector>,
}

/// Pods a node drain drains at once unless told otherwise: each engine's wait may last minutes,
/// and two at a time keeps the model's other replicas carrying most of the traffic.
pub const DEFAULT_NODE_PARALLELISM: usize = 2;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            routing_label: None,
            min_ready: 1,
            read_only: false,
            protected: false,
            drain_timeout_s: 120.0,
            dry_run: false,
            on_timeout: OnTimeout::Stop,
            parallelism: DEFAULT_NODE_PARALLELISM,
            engine_selectors: Vec::new(),
        }
    }
}

/// The RBAC attributes of a request, for a SelfSubjectAccessReview.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Access {
    pub verb: String,
    /// API group (`""` for the core group).
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// What a step does, for the executor.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum StepOp {
    /// Merge-patch the routing label away.
    RemoveLabel {
        namespace: String,
        pod: String,
        label: String,
        /// Its value before the drain, which a rollback or `undrain` puts back.
        value: String,
    },
    /// Poll the engine until nothing is running or waiting, at most `timeout_s`.
    WaitIdle {
        namespace: String,
        pod: String,
        timeout_s: f64,
    },
    /// Create an Eviction (the PodDisruptionBudget decides; 429 is retried, bounded).
    Evict { namespace: String, pod: String },
    /// Delete the pod.
    Delete { namespace: String, pod: String },
    /// Set the Deployment's template annotation `restartedAt` to `at`.
    RestartTemplate {
        namespace: String,
        deployment: String,
        at: String,
    },
    /// Set the node's `spec.unschedulable`.
    SetUnschedulable { node: String, unschedulable: bool },
    /// Poll until no EndpointSlice of the named Services lists the pod (`via` Service), or
    /// the named pools (of API group `group`) no longer select it, at most `timeout_s`.
    WaitUnrouted {
        namespace: String,
        pod: String,
        uid: String,
        via: RouteKind,
        group: String,
        names: Vec<String>,
        timeout_s: f64,
    },
    /// Merge-patch labels back onto a drained pod and drop [`DRAINED_LABELS_ANNOTATION`].
    RestoreLabels {
        namespace: String,
        pod: String,
        labels: Vec<(String, String)>,
    },
}

impl StepOp {
    /// True when the step changes the cluster (everything but the wait).
    pub(crate) fn mutates(&self) -> bool {
        !matches!(self, StepOp::WaitIdle { .. } | StepOp::WaitUnrouted { .. })
    }
}

/// One step of a plan, described as the request it sends.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ApiStep {
    /// HTTP method, or `WAIT` for the drain wait.
    pub verb: String,
    pub path: String,
    /// What the body says, in short.
    pub body: String,
    /// Sent with `dryRun=All`.
    pub dry_run: bool,
    pub op: StepOp,
    /// RBAC attributes to check before running (`None`: nothing to check).
    pub access: Option<Access>,
    /// The pod of a node drain this step belongs to (index in [`Plan::units`]); `None` for a
    /// step of the action as a whole (the cordon), and for every step of other actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<usize>,
}

impl ApiStep {
    /// `PATCH /api/v1/… {body} (dry run)`, for plans printed and logged.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.verb, self.path);
        if !self.body.is_empty() {
            text.push_str(&format!(" {}", self.body));
        }
        if self.dry_run && self.op.mutates() {
            text.push_str(" (dry run)");
        }
        text
    }
}

/// One check of a plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Guard {
    pub name: String,
    pub passed: bool,
    pub reason: String,
    /// A failed guard the operator may override by typing the target's name.
    pub overridable: bool,
}

impl Guard {
    pub(crate) fn pass(name: &str, reason: String) -> Guard {
        Guard {
            name: name.to_owned(),
            passed: true,
            reason,
            overridable: false,
        }
    }

    pub(crate) fn fail(name: &str, reason: String, overridable: bool) -> Guard {
        Guard {
            name: name.to_owned(),
            passed: false,
            reason,
            overridable,
        }
    }
}

/// An action, decided.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Plan {
    pub kind: ActionKind,
    pub context: String,
    /// `None` for nodes.
    pub namespace: Option<String>,
    pub target: String,
    pub steps: Vec<ApiStep>,
    pub guards: Vec<Guard>,
    /// The operator must type the target's name (protected context, or a guard to override).
    pub requires_typed_name: bool,
    pub dry_run: bool,
    /// The context is protected: typing the name confirms (it never overrides a guard).
    pub protected: bool,
    /// What a drain does when its wait ends with requests in flight.
    pub on_timeout: OnTimeout,
    /// Reads the guards depend on (e.g. the PodDisruptionBudgets), for the RBAC preflight.
    pub reads: Vec<Access>,
    /// A node drain's pods, each drained on its own: steps name theirs by [`ApiStep::unit`].
    /// Empty for every other action.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<PodUnit>,
    /// How many of `units` run at once.
    pub parallelism: usize,
}

/// What a node drain does with one pod of the node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum UnitHow {
    /// An inference engine: out of routing, wait for its requests, then evict (the pod drain).
    Drain,
    /// Another pod: evicted, as `kubectl drain` does.
    Evict,
    /// Left on the node, for the reason given (its PodDisruptionBudget allows no disruption).
    Skip { reason: String },
}

/// One pod of a node drain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PodUnit {
    pub namespace: String,
    pub pod: String,
    #[serde(flatten)]
    pub how: UnitHow,
}

impl PodUnit {
    /// `llm/vllm-0`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.namespace, self.pod)
    }
}

/// The routing labels a drain removed from one pod, with their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedRouting {
    pub namespace: String,
    pub pod: String,
    pub labels: Vec<(String, String)>,
}

/// The answer of one access review: the step it was for, and whether it is allowed (with the
/// API's reason when it is not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessResult {
    pub access: Access,
    pub allowed: bool,
    pub reason: String,
}

impl Plan {
    pub(crate) fn new(
        kind: ActionKind,
        context: &str,
        namespace: Option<&str>,
        target: &str,
    ) -> Plan {
        Plan {
            kind,
            context: context.to_owned(),
            namespace: namespace.map(str::to_owned),
            target: target.to_owned(),
            steps: Vec::new(),
            guards: Vec::new(),
            requires_typed_name: false,
            dry_run: false,
            protected: false,
            on_timeout: OnTimeout::Stop,
            reads: Vec::new(),
            units: Vec::new(),
            parallelism: 1,
        }
    }

    /// The failed guards that stop the plan; with `overridden`, overridable ones do not.
    pub fn blocking_guards(&self, overridden: bool) -> Vec<&Guard> {
        self.guards
            .iter()
            .filter(|g| !(g.passed || (overridden && g.overridable)))
            .collect()
    }

    /// True when some failed guard can be overridden by typing the target's name.
    pub fn has_overridable_failure(&self) -> bool {
        self.guards.iter().any(|g| !g.passed && g.overridable)
    }

    /// Add a guard decided after the plan (from objects read beside the target).
    pub fn add_guard(&mut self, guard: Guard) {
        self.guards.push(guard);
        self.requires_typed_name = self.protected || self.has_overridable_failure();
    }

    /// The labels to put back for the routing removals among steps `..end` (0-based, end
    /// excluded), one entry per pod; nothing for a dry run, which changed nothing.
    pub fn routing_to_restore(&self, end: usize) -> Vec<RemovedRouting> {
        self.routing_removed_by(|index, _| index < end)
    }

    /// Like [`Plan::routing_to_restore`], for the steps of node-drain unit `unit` only.
    pub fn unit_routing_to_restore(&self, unit: usize, end: usize) -> Vec<RemovedRouting> {
        self.routing_removed_by(|index, step| index < end && step.unit == Some(unit))
    }

    fn routing_removed_by(&self, taken: impl Fn(usize, &ApiStep) -> bool) -> Vec<RemovedRouting> {
        let mut out: Vec<RemovedRouting> = Vec::new();
        if self.dry_run {
            return out;
        }
        let steps = self.steps.iter().enumerate();
        for (_, step) in steps.filter(|(index, step)| taken(*index, step)) {
            if let StepOp::RemoveLabel {
                namespace,
                pod,
                label,
                value,
            } = &step.op
            {
                let entry = (label.clone(), value.clone());
                match out
                    .iter_mut()
                    .find(|r| r.namespace == *namespace && r.pod == *pod)
                {
                    Some(removed) => removed.labels.push(entry),
                    None => out.push(RemovedRouting {
                        namespace: namespace.clone(),
                        pod: pod.clone(),
                        labels: vec![entry],
                    }),
                }
            }
        }
        out
    }

    /// The distinct access checks the steps need, in step order, then the guards' reads.
    pub fn accesses(&self) -> Vec<Access> {
        let mut out: Vec<Access> = Vec::new();
        let reads = self.reads.iter();
        for access in self
            .steps
            .iter()
            .filter_map(|s| s.access.as_ref())
            .chain(reads)
        {
            if !out.contains(access) {
                out.push(access.clone());
            }
        }
        out
    }

    /// Record the RBAC preflight: one guard per check; a denial blocks the plan.
    pub fn add_access_results(&mut self, results: &[AccessResult]) {
        for r in results {
            let what = access_text(&r.access);
            let guard = if r.allowed {
                Guard::pass("rbac", format!("may {what}"))
            } else {
                let why = if r.reason.is_empty() {
                    "denied by RBAC".to_owned()
                } else {
                    r.reason.clone()
                };
                Guard::fail("rbac", format!("may not {what}: {why}"), false)
            };
            self.guards.push(guard);
        }
    }

    /// The steps as text, one per line's worth.
    pub fn step_texts(&self) -> Vec<String> {
        self.steps.iter().map(ApiStep::describe).collect()
    }

    /// A human-readable plan: the action, its steps and its guards.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{} {} {}{} (context {}){}\n",
            self.kind.name(),
            self.kind.target_kind(),
            self.namespace
                .as_deref()
                .map(|ns| format!("{ns}/"))
                .unwrap_or_default(),
            self.target,
            self.context,
            if self.dry_run { " — dry run" } else { "" }
        );
        out.push_str("steps:\n");
        for (i, step) in self.steps.iter().enumerate() {
            out.push_str(&format!("  {}. {}\n", i + 1, step.describe()));
        }
        if !self.units.is_empty() {
            out.push_str(&format!("pods ({} at a time):\n", self.parallelism));
        }
        for unit in &self.units {
            let how = match &unit.how {
                UnitHow::Drain => "drain: out of routing, wait for its requests, evict".to_owned(),
                UnitHow::Evict => "evict".to_owned(),
                UnitHow::Skip { reason } => format!("SKIPPED: {reason}"),
            };
            out.push_str(&format!("  {}: {how}\n", unit.name()));
        }
        if !self.guards.is_empty() {
            out.push_str("guards:\n");
        }
        for g in &self.guards {
            let mark = match (g.passed, g.overridable) {
                (true, _) => "ok     ",
                (false, true) => "REFUSED (overridable: --override)",
                (false, false) => "REFUSED",
            };
            out.push_str(&format!("  {mark} {}: {}\n", g.name, g.reason));
        }
        out
    }

    pub(crate) fn finish(mut self, policy: &Policy) -> Plan {
        self.dry_run = policy.dry_run;
        self.protected = policy.protected;
        self.on_timeout = policy.on_timeout;
        for step in &mut self.steps {
            step.dry_run = policy.dry_run && step.op.mutates();
            if matches!(step.op, StepOp::WaitIdle { .. }) {
                step.body.push_str(policy.on_timeout.then());
            }
        }
        if policy.read_only {
            self.guards.push(Guard::fail(
                "read-only",
                format!(
                    "context {} is read-only (--read-only or read_only = true): no change is sent",
                    self.context
                ),
                false,
            ));
        }
        if policy.protected {
            self.guards.push(Guard::pass(
                "protected",
                format!(
                    "context {} is protected: type {:?} to confirm",
                    self.context, self.target
                ),
            ));
        }
        self.requires_typed_name = policy.protected || self.has_overridable_failure();
        self
    }
}

/// `patch pods llm/vllm-0`, `create pods/eviction llm/vllm-0`, `patch nodes gpu-node-00`.
pub fn access_text(a: &Access) -> String {
    let resource = match &a.subresource {
        Some(sub) => format!("{}/{sub}", a.resource),
        None => a.resource.clone(),
    };
    let group = if a.group.is_empty() {
        String::new()
    } else {
        format!(".{}", a.group)
    };
    let scope = match (&a.namespace, &a.name) {
        (Some(ns), Some(name)) => format!(" {ns}/{name}"),
        (None, Some(name)) => format!(" {name}"),
        (Some(ns), None) => format!(" in {ns}"),
        (None, None) => String::new(),
    };
    format!("{} {resource}{group}{scope}", a.verb)
}

pub(crate) fn pod_access(
    verb: &str,
    subresource: Option<&str>,
    namespace: &str,
    pod: &str,
) -> Access {
    Access {
        verb: verb.to_owned(),
        group: String::new(),
        resource: "pods".to_owned(),
        subresource: subresource.map(str::to_owned),
        namespace: Some(namespace.to_owned()),
        name: Some(pod.to_owned()),
    }
}

pub(crate) fn pod_path(namespace: &str, pod: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/pods/{pod}")
}

pub(crate) fn evict_step(namespace: &str, pod: &str) -> ApiStep {
    ApiStep {
        verb: "POST".into(),
        path: format!("{}/eviction", pod_path(namespace, pod)),
        body: "Eviction (the PodDisruptionBudget decides)".into(),
        dry_run: false,
        op: StepOp::Evict {
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
        },
        unit: None,
        access: Some(pod_access("create", Some("eviction"), namespace, pod)),
    }
}

pub(crate) fn unschedulable_step(node: &str, unschedulable: bool) -> ApiStep {
    ApiStep {
        verb: "PATCH".into(),
        path: format!("/api/v1/nodes/{node}"),
        body: format!("{{\"spec\":{{\"unschedulable\":{unschedulable}}}}}"),
        dry_run: false,
        op: StepOp::SetUnschedulable {
            node: node.to_owned(),
            unschedulable,
        },
        unit: None,
        access: Some(Access {
            verb: "patch".into(),
            group: String::new(),
            resource: "nodes".into(),
            subresource: None,
            namespace: None,
            name: Some(node.to_owned()),
        }),
    }
}

/// The replica group a pod belongs to: its Deployment, else its controller.
fn group_of(pod: &PodInfo) -> Option<(String, String)> {
    let owner = pod.owner.as_ref()?;
    Some(match &owner.deployment {
        Some(d) => ("Deployment".to_owned(), d.clone()),
        None => (owner.kind.clone(), owner.name.clone()),
    })
}

/// Ready, not terminating, and receiving traffic: a pod already out of routing serves nothing,
/// so two drains in a row cannot both count the other's pod.
fn counts_as_ready(pod: &PodInfo) -> bool {
    pod.ready && !pod.terminating && pod.routed != Some(false)
}

/// The min-ready guard for taking `leaving` (ready pods among them) out of their groups.
pub(crate) fn replica_guards(leaving: &[&PodInfo], all: &[PodInfo], policy: &Policy) -> Vec<Guard> {
    let mut groups: Vec<(String, String, String)> = Vec::new();
    let mut guards = Vec::new();
    for pod in leaving {
        let Some((kind, name)) = group_of(pod) else {
            continue;
        };
        let ns = pod.key.namespace.clone();
        if !groups.contains(&(ns.clone(), kind.clone(), name.clone())) {
            groups.push((ns, kind, name));
        }
    }
    for (ns, kind, name) in groups {
        let member = |p: &PodInfo| {
            p.key.namespace == ns && group_of(p).is_some_and(|(k, n)| k == kind && n == name)
        };
        let ready_now = all
            .iter()
            .filter(|p| member(p) && counts_as_ready(p))
            .count();
        let ready_leaving = leaving
            .iter()
            .filter(|p| member(p) && counts_as_ready(p))
            .count();
        let after = ready_now.saturating_sub(ready_leaving);
        let min = policy.min_ready as usize;
        let label = format!("{kind} {ns}/{name}");
        let guard = if ready_leaving == 0 {
            Guard::pass(
                "min-ready",
                format!("{label}: no ready replica is taken ({ready_now} ready)"),
            )
        } else if ready_now <= ready_leaving && ready_now > 0 {
            Guard::fail(
                "min-ready",
                format!("{label}: this takes its last ready replica ({ready_now} ready)"),
                true,
            )
        } else if after < min {
            Guard::fail(
                "min-ready",
                format!("{label}: leaves {after} ready, fewer than min_ready {min}"),
                true,
            )
        } else {
            Guard::pass(
                "min-ready",
                format!("{label}: leaves {after} ready of {ready_now} (min_ready {min})"),
            )
        };
        guards.push(guard);
    }
    guards
}

/// Longest wait for a pod to leave its EndpointSlices and pools after its labels are removed:
/// the EndpointSlice controller reacts within a second or two; much longer means something
/// else keeps the pod listed.
pub const UNROUTE_TIMEOUT_S: f64 = 30.0;

/// A step of the drain, before the wait's timeout is known.
enum DrainStep {
    Api(Box<ApiStep>),
    WaitIdle,
    Evict,
    DeleteOrphan,
}

fn delete_step(namespace: &str, pod: &str) -> ApiStep {
    ApiStep {
        verb: "DELETE".into(),
        path: pod_path(namespace, pod),
        body: String::new(),
        dry_run: false,
        op: StepOp::Delete {
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
        },
        unit: None,
        access: Some(pod_access("delete", None, namespace, pod)),
    }
}

fn wait_idle_step(namespace: &str, pod: &str, timeout_s: f64) -> ApiStep {
    ApiStep {
        verb: "WAIT".into(),
        path: format!("{namespace}/{pod}"),
        body: format!("until running + waiting = 0, at most {timeout_s:.0}s"),
        dry_run: false,
        op: StepOp::WaitIdle {
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
            timeout_s,
        },
        unit: None,
        access: None,
    }
}

/// Remove `label` from `pod`, keeping its current value for a rollback or `undrain`.
fn remove_label_step(pod: &PodInfo, label: &str) -> ApiStep {
    let namespace = pod.key.namespace.as_str();
    let value = pod
        .labels
        .iter()
        .find(|(k, _)| k == label)
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let pod = pod.key.name.as_str();
    ApiStep {
        verb: "PATCH".into(),
        path: pod_path(namespace, pod),
        body: format!("{{\"metadata\":{{\"labels\":{{\"{label}\":null}}}}}}"),
        dry_run: false,
        op: StepOp::RemoveLabel {
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
            label: label.to_owned(),
            value,
        },
        unit: None,
        access: Some(pod_access("patch", None, namespace, pod)),
    }
}

/// The wait for the pod to leave the routes of one kind (`names` of API group `group`).
fn wait_unrouted_step(pod: &PodInfo, via: RouteKind, group: &str, names: Vec<String>) -> ApiStep {
    let ns = pod.key.namespace.as_str();
    let (path, resource, body) = match via {
        RouteKind::Service => (
            format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"),
            "endpointslices",
            format!(
                "until no EndpointSlice of Service {} lists the pod, at most {UNROUTE_TIMEOUT_S:.0}s",
                names.join(", ")
            ),
        ),
        RouteKind::InferencePool => (
            format!(
                "/apis/{group}/{}/namespaces/{ns}/inferencepools",
                inference_pool_version(group).unwrap_or("v1")
            ),
            "inferencepools",
            format!(
                "until InferencePool {} no longer selects the pod, at most {UNROUTE_TIMEOUT_S:.0}s",
                names.join(", ")
            ),
        ),
    };
    ApiStep {
        verb: "WAIT".into(),
        path,
        body,
        dry_run: false,
        op: StepOp::WaitUnrouted {
            namespace: ns.to_owned(),
            pod: pod.key.name.clone(),
            uid: pod.uid.clone(),
            via,
            group: group.to_owned(),
            names,
            timeout_s: UNROUTE_TIMEOUT_S,
        },
        unit: None,
        access: Some(Access {
            verb: "list".into(),
            group: match via {
                RouteKind::Service => "discovery.k8s.io".into(),
                RouteKind::InferencePool => group.to_owned(),
            },
            resource: resource.into(),
            subresource: None,
            namespace: Some(ns.to_owned()),
            name: None,
        }),
    }
}

/// The operator configured the routing label: remove it when the pod has it.
fn drain_by_configured_label(pod: &PodInfo, label: &str) -> (Vec<DrainStep>, Guard) {
    let labelled = pod.labels.iter().any(|(k, _)| k == label);
    let mut steps = Vec::new();
    let guard = if labelled {
        steps.push(DrainStep::Api(Box::new(remove_label_step(pod, label))));
        Guard::pass(
            "routing",
            format!("{label} is removed first, so no new request arrives"),
        )
    } else {
        Guard::pass(
            "routing",
            format!("the pod has no {label} label: already out of routing"),
        )
    };
    steps.extend([DrainStep::WaitIdle, DrainStep::Evict]);
    (steps, guard)
}

/// Remove one label per route, wait until the routes have let go of the pod, wait for the
/// engine to go idle, evict (or delete the orphan).
fn drain_by_routes(pod: &PodInfo, routing: &PodRouting) -> (Vec<DrainStep>, Guard) {
    let unremovable: Vec<String> = routing.unremovable().map(|r| r.describe()).collect();
    let manual = if unremovable.is_empty() {
        String::new()
    } else {
        format!(
            "; {} has no selector (its EndpointSlices are written by hand): no label takes the pod out of it",
            unremovable.join(", ")
        )
    };
    if routing.routes.is_empty() {
        let guard = Guard::pass(
            "routing",
            "no Service or InferencePool routes to the pod: already out of routing".into(),
        );
        return (vec![DrainStep::WaitIdle, DrainStep::Evict], guard);
    }
    if routing.removals.is_empty() {
        let guard = Guard::pass(
            "routing",
            format!(
                "nothing routes to the pod by labels{manual}: only a graceful eviction is offered (the pod's grace period lets in-flight requests finish)"
            ),
        );
        return (vec![DrainStep::Evict], guard);
    }
    let mut steps: Vec<DrainStep> = routing
        .removals
        .iter()
        .map(|r| DrainStep::Api(Box::new(remove_label_step(pod, &r.label))))
        .collect();
    let services = routing.services();
    if !services.is_empty() {
        steps.push(DrainStep::Api(Box::new(wait_unrouted_step(
            pod,
            RouteKind::Service,
            "",
            services,
        ))));
    }
    let mut groups: Vec<String> = routing.pools().into_iter().map(|(g, _)| g).collect();
    groups.dedup();
    for group in groups {
        let names = routing
            .pools()
            .into_iter()
            .filter(|(g, _)| *g == group)
            .map(|(_, n)| n)
            .collect();
        steps.push(DrainStep::Api(Box::new(wait_unrouted_step(
            pod,
            RouteKind::InferencePool,
            &group,
            names,
        ))));
    }
    steps.push(DrainStep::WaitIdle);
    let stops: Vec<String> = routing
        .removals
        .iter()
        .map(|r| format!("removing {} stops {}", r.label, r.stops.join(", ")))
        .collect();
    let mut reason = format!("{}, so no new request arrives{manual}", stops.join("; "));
    if routing.orphans() {
        let orphaning: Vec<&str> = routing
            .removals
            .iter()
            .filter(|r| r.orphans)
            .map(|r| r.label.as_str())
            .collect();
        reason.push_str(&format!(
            "; every such label is also the ReplicaSet's: removing {} orphans the pod, its controller starts a replacement at once (capacity kept), and the last step deletes the orphan instead of evicting it",
            orphaning.join(", ")
        ));
        steps.push(DrainStep::DeleteOrphan);
    } else {
        steps.push(DrainStep::Evict);
    }
    (steps, Guard::pass("routing", reason))
}

/// The steps that drain `pod` (out of routing, the waits, evict or delete the orphan) and the
/// routing guard saying how; `grace_s` is its `terminationGracePeriodSeconds`.
pub(crate) fn pod_drain_steps(
    pod: &PodInfo,
    grace_s: Option<f64>,
    policy: &Policy,
) -> (Vec<ApiStep>, Guard) {
    let (ns, name) = (pod.key.namespace.as_str(), pod.key.name.as_str());
    let (steps, guard) = match (&policy.routing_label, &pod.routing) {
        (Some(label), _) => drain_by_configured_label(pod, label),
        (None, Some(routing)) => drain_by_routes(pod, routing),
        (None, None) => (
            vec![DrainStep::WaitIdle, DrainStep::Evict],
            Guard::fail(
                "routing",
                format!(
                    "the Services and InferencePools of {ns}/{name} could not be read: kvtop cannot take it out of routing"
                ),
                true,
            ),
        ),
    };
    let timeout_s = match grace_s {
        Some(g) if g >= 0.0 => policy.drain_timeout_s.min(g),
        _ => policy.drain_timeout_s,
    };
    let steps = steps
        .into_iter()
        .map(|step| match step {
            DrainStep::Api(step) => *step,
            DrainStep::WaitIdle => wait_idle_step(ns, name, timeout_s),
            DrainStep::Evict => evict_step(ns, name),
            DrainStep::DeleteOrphan => delete_step(ns, name),
        })
        .collect();
    (steps, guard)
}

/// Drain or restart one pod. `pods` is every pod of the pod's namespace (its siblings count
/// for the min-ready guard); `grace_s` its `terminationGracePeriodSeconds`.
pub fn plan_pod(
    kind: ActionKind,
    pod: &PodInfo,
    pods: &[PodInfo],
    grace_s: Option<f64>,
    policy: &Policy,
) -> Plan {
    let ns = pod.key.namespace.as_str();
    let name = pod.key.name.as_str();
    let mut plan = Plan::new(kind, &pod.key.context, Some(ns), name);
    if kind == ActionKind::DrainPod {
        let (steps, guard) = pod_drain_steps(pod, grace_s, policy);
        plan.steps.extend(steps);
        plan.guards.push(guard);
    } else {
        plan.steps.push(delete_step(ns, name));
    }
    if pod.owner.is_none() {
        plan.guards.push(Guard::fail(
            "controller",
            "no controller owns the pod: nothing recreates it".into(),
            true,
        ));
    }
    plan.guards.extend(replica_guards(&[pod], pods, policy));
    plan.finish(policy)
}

/// Roll a Deployment: its template annotation [`RESTARTED_AT_ANNOTATION`] becomes `now_rfc3339`.
pub fn plan_rollout_restart(
    context: &str,
    namespace: &str,
    deployment: &str,
    now_rfc3339: &str,
    policy: &Policy,
) -> Plan {
    let mut plan = Plan::new(
        ActionKind::RolloutRestart,
        context,
        Some(namespace),
        deployment,
    );
    plan.steps.push(ApiStep {
        verb: "PATCH".into(),
        path: format!("/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}"),
        body: format!(
            "{{\"spec\":{{\"template\":{{\"metadata\":{{\"annotations\":{{\"{RESTARTED_AT_ANNOTATION}\":\"{now_rfc3339}\"}}}}}}}}}}"
        ),
        dry_run: false,
        op: StepOp::RestartTemplate {
            namespace: namespace.to_owned(),
            deployment: deployment.to_owned(),
            at: now_rfc3339.to_owned(),
        },
        unit: None,
        access: Some(Access {
            verb: "patch".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: None,
            namespace: Some(namespace.to_owned()),
            name: Some(deployment.to_owned()),
        }),
    });
    plan.finish(policy)
}

/// Cordon (`unschedulable = true`) or uncordon a node; `currently` is its `spec.unschedulable`.
pub fn plan_cordon(context: &str, node: &str, unschedulable: bool, policy: &Policy) -> Plan {
    let kind = if unschedulable {
        ActionKind::Cordon
    } else {
        ActionKind::Uncordon
    };
    let mut plan = Plan::new(kind, context, None, node);
    plan.steps.push(unschedulable_step(node, unschedulable));
    plan.finish(policy)
}

/// Put a drained pod back into routing: re-add `drained` (the labels its drain removed, read
/// from its [`DRAINED_LABELS_ANNOTATION`]) and drop the annotation.
pub fn plan_undrain(pod: &PodInfo, drained: &[(String, String)], policy: &Policy) -> Plan {
    let ns = pod.key.namespace.as_str();
    let name = pod.key.name.as_str();
    let mut plan = Plan::new(ActionKind::Undrain, &pod.key.context, Some(ns), name);
    let missing: Vec<(String, String)> = drained
        .iter()
        .filter(|(k, v)| !pod.labels.iter().any(|(pk, pv)| pk == k && pv == v))
        .cloned()
        .collect();
    let labels = drained
        .iter()
        .map(|(k, v)| format!("\"{k}\":\"{v}\""))
        .collect::<Vec<_>>()
        .join(",");
    plan.steps.push(ApiStep {
        verb: "PATCH".into(),
        path: pod_path(ns, name),
        body: format!(
            "{{\"metadata\":{{\"labels\":{{{labels}}},\"annotations\":{{\"{DRAINED_LABELS_ANNOTATION}\":null}}}}}}"
        ),
        dry_run: false,
        op: StepOp::RestoreLabels {
            namespace: ns.to_owned(),
            pod: name.to_owned(),
            labels: drained.to_vec(),
        },
        unit: None,
        access: Some(pod_access("patch", None, ns, name)),
    });
    plan.guards.push(if drained.is_empty() {
        Guard::fail(
            "drained",
            format!(
                "the pod has no {DRAINED_LABELS_ANNOTATION} annotation: no kvtop drain removed its routing (or it was restored already)"
            ),
            false,
        )
    } else if missing.is_empty() {
        Guard::pass(
            "drained",
            "its labels are back already: the patch only drops the annotation".into(),
        )
    } else {
        let text: Vec<String> = missing.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Guard::pass("drained", format!("re-adds {}", text.join(", ")))
    });
    if pod.terminating {
        plan.guards.push(Guard::fail(
            "terminating",
            "the pod is terminating: it cannot serve again".into(),
            false,
        ));
    }
    plan.finish(policy)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "plan_routing_tests.rs"]
mod routing_tests;
