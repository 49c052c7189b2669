//! The mutating and reading operations of the simulated API: patch (pods, nodes, Deployments),
//! delete, evict, logs, and the pod proxy's target.

use serde_json::{Value, json};

use super::controllers::trim;
use super::pod_status::Phase;
use super::{Cluster, Kind, pod_name};
use crate::fleet::CONTAINER;
use crate::kube::engines::EngineLink;
use crate::kube::objects::{self, PDB_MIN_AVAILABLE, RESTARTED_AT};
use crate::kube::patch::{self, PatchError, PatchKind};
use crate::kube::status::ApiError;

/// `DeleteOptions` the simulation honours.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct DeleteOptions {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// `gracePeriodSeconds`; 0 removes the pod at once.
    pub grace_seconds: Option<i64>,
}

/// Query parameters of `pods/log`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct LogQuery {
    pub container: Option<String>,
    pub previous: bool,
    pub tail_lines: Option<usize>,
    pub since_seconds: Option<f64>,
    /// Seconds since the Unix epoch.
    pub since_time: Option<f64>,
    pub timestamps: bool,
    pub limit_bytes: Option<usize>,
}

impl Cluster {
    /// Apply a patch to a pod, node or Deployment.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        kind: Kind,
        namespace: Option<&str>,
        name: &str,
        patch_kind: PatchKind,
        body: &Value,
        dry_run: bool,
        now: f64,
        engines: &EngineLink,
    ) -> Result<Value, ApiError> {
        let current = self.get(kind, namespace, name)?;
        let mut next = current.clone();
        patch::apply(patch_kind, &mut next, body).map_err(|e| match e {
            PatchError::Malformed(m) => ApiError::bad_request(m),
            PatchError::Failed(m) => ApiError::invalid(kind.kind_name(), name, &m),
        })?;
        if let Some(rv) = body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            if current["metadata"]["resourceVersion"] != rv {
                return Err(ApiError::conflict(
                    kind.plural(),
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
        }
        for field in ["name", "namespace", "uid"] {
            if next["metadata"][field] != current["metadata"][field] {
                return Err(ApiError::invalid(
                    kind.kind_name(),
                    name,
                    &format!("metadata.{field}: Invalid value: field is immutable"),
                ));
            }
        }
        // Status belongs to the status subresource: a patch of the object leaves it alone.
        next["status"] = current["status"].clone();
        next["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        match kind {
            Kind::Pod => self.patch_pod(name, current, next, dry_run, now, engines),
            Kind::Node => self.patch_node(name, current, next, dry_run, now),
            Kind::Deployment => self.patch_deployment(name, current, next, dry_run, now),
            other => Err(ApiError::method_not_allowed(&format!(
                "the simulated API does not patch {}",
                other.plural()
            ))),
        }
    }

    fn patch_pod(
        &mut self,
        name: &str,
        current: Value,
        next: Value,
        dry_run: bool,
        now: f64,
        engines: &EngineLink,
    ) -> Result<Value, ApiError> {
        if next["spec"] != current["spec"] {
            return Err(ApiError::invalid(
                "Pod",
                name,
                "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
        if dry_run || next == current {
            return Ok(next);
        }
        let labels_changed = current["metadata"]["labels"] != next["metadata"]["labels"];
        let Some(index) = self.pods.iter().position(|p| pod_name(p) == name) else {
            return Err(ApiError::not_found("pods", name));
        };
        let rv = self.bump();
        self.changed();
        let Some(pod) = self.pods.get_mut(index) else {
            return Err(ApiError::not_found("pods", name));
        };
        pod.obj = next;
        pod.obj["metadata"]["resourceVersion"] = rv.to_string().into();
        let patched = pod.obj.clone();
        if labels_changed {
            // The EndpointSlice controller and the endpoint pickers react at once here.
            self.refresh_routing(now, engines);
        }
        Ok(patched)
    }

    fn patch_node(
        &mut self,
        name: &str,
        current: Value,
        mut next: Value,
        dry_run: bool,
        now: f64,
    ) -> Result<Value, ApiError> {
        let cordoned = |v: &Value| v["spec"]["unschedulable"] == true;
        let was = cordoned(&current);
        let is = cordoned(&next);
        if was != is {
            // The node lifecycle controller keeps the taint in step with `unschedulable`.
            let mut taints: Vec<Value> = next["spec"]["taints"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            taints.retain(|t| t["key"] != "node.kubernetes.io/unschedulable");
            if is {
                taints.push(json!({
                    "key": "node.kubernetes.io/unschedulable",
                    "effect": "NoSchedule",
                    "timeAdded": objects::time(now),
                }));
            }
            if taints.is_empty() {
                if let Some(spec) = next["spec"].as_object_mut() {
                    spec.remove("taints");
                }
            } else {
                next["spec"]["taints"] = taints.into();
            }
        }
        if dry_run || next == current {
            return Ok(next);
        }
        let Some(index) = self
            .nodes
            .iter()
            .position(|n| n["metadata"]["name"] == name)
        else {
            return Err(ApiError::not_found("nodes", name));
        };
        let rv = self.bump();
        self.changed();
        next["metadata"]["resourceVersion"] = rv.to_string().into();
        if let Some(node) = self.nodes.get_mut(index) {
            *node = next.clone();
        }
        if was != is {
            let involved = objects::Involved {
                kind: "Node",
                api_version: "v1",
                name: name.to_owned(),
                namespace: "default".to_owned(),
                uid: next["metadata"]["uid"].as_str().unwrap_or("").to_owned(),
                field_path: None,
            };
            let state = if is {
                "NodeNotSchedulable"
            } else {
                "NodeSchedulable"
            };
            self.emit(
                &involved,
                "Normal",
                state,
                &format!("Node {name} status is now: {state}"),
                "kubelet",
                Some(name),
                1,
                now,
            );
        }
        Ok(next)
    }

    fn patch_deployment(
        &mut self,
        name: &str,
        current: Value,
        mut next: Value,
        dry_run: bool,
        now: f64,
    ) -> Result<Value, ApiError> {
        let mut spec_without_template = next["spec"].clone();
        let mut current_without_template = current["spec"].clone();
        for spec in [&mut spec_without_template, &mut current_without_template] {
            if let Some(map) = spec.as_object_mut() {
                map.remove("template");
            }
        }
        if spec_without_template != current_without_template {
            return Err(ApiError::invalid(
                "Deployment",
                name,
                "spec: Forbidden: the simulated cluster has one GPU per engine; only the pod template's annotations can change (e.g. kubectl rollout restart)",
            ));
        }
        let template_changed = next["spec"]["template"] != current["spec"]["template"];
        if template_changed {
            let mut template = next["spec"]["template"].clone();
            let mut before = current["spec"]["template"].clone();
            for t in [&mut template, &mut before] {
                if let Some(meta) = t["metadata"].as_object_mut() {
                    meta.remove("annotations");
                }
            }
            if template != before {
                return Err(ApiError::invalid(
                    "Deployment",
                    name,
                    "spec.template: Forbidden: the simulated cluster only rolls out changes of the pod template's annotations",
                ));
            }
            let generation = current["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
            next["metadata"]["generation"] = generation.into();
        }
        if dry_run || next == current {
            return Ok(next);
        }
        let Some(d) = self
            .deployments
            .iter()
            .position(|r| r.obj["metadata"]["name"] == name)
        else {
            return Err(ApiError::not_found("deployments", name));
        };
        let rv = self.bump();
        self.changed();
        next["metadata"]["resourceVersion"] = rv.to_string().into();
        if template_changed {
            let hash = loop {
                let candidate = crate::fleet::k8s_suffix(&mut self.names);
                if !self.replica_sets.iter().any(|(_, h, _)| *h == candidate) {
                    break candidate;
                }
            };
            let revision = self.replica_sets.iter().filter(|(i, _, _)| *i == d).count() + 1;
            next["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
                revision.to_string().into();
            if let Some(rec) = self.deployments.get_mut(d) {
                rec.obj = next.clone();
                rec.hash = hash.clone();
            }
            self.add_replica_set(d, &hash, 0, now);
            let restarted = next["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
                .as_str()
                .map(str::to_owned);
            tracing::debug!(deployment = name, ?restarted, "rollout started");
        } else if let Some(rec) = self.deployments.get_mut(d) {
            rec.obj = next.clone();
        }
        Ok(next)
    }

    /// Delete a pod: it terminates for a moment, its engine stops, and its ReplicaSet creates a
    /// replacement (a new name) that starts the engine again.
    pub(crate) fn delete_pod(
        &mut self,
        name: &str,
        opts: &DeleteOptions,
        now: f64,
        engines: &EngineLink,
    ) -> Result<Value, ApiError> {
        let Some(index) = self.pods.iter().position(|p| pod_name(p) == name) else {
            return Err(ApiError::not_found("pods", name));
        };
        let Some(pod) = self.pods.get(index) else {
            return Err(ApiError::not_found("pods", name));
        };
        check_preconditions(&pod.obj, name, opts)?;
        if pod.deleting.is_some() {
            return Ok(pod.obj.clone());
        }
        if opts.dry_run {
            let mut preview = pod.obj.clone();
            preview["metadata"]["deletionTimestamp"] = objects::time(now + 30.0).into();
            preview["metadata"]["deletionGracePeriodSeconds"] = 30.into();
            return Ok(preview);
        }
        self.begin_delete(index, now, engines);
        if opts.grace_seconds == Some(0) {
            if let Some(pod) = self.pods.get_mut(index) {
                pod.deleting = Some(f64::NEG_INFINITY);
            }
        }
        let obj = self
            .pods
            .get(index)
            .map(|p| p.obj.clone())
            .unwrap_or(Value::Null);
        Ok(obj)
    }

    /// Start deleting the pod at `index` and create its replacement.
    pub(super) fn begin_delete(&mut self, index: usize, now: f64, engines: &EngineLink) {
        let Some((deployment, engine, crash)) = self.stop_pod(index, now, engines) else {
            return;
        };
        let Some((model, hash)) = self
            .deployments
            .get(deployment)
            .map(|d| (d.model.deployment, d.hash.clone()))
        else {
            return;
        };
        let name = self.new_pod_name(model, &hash);
        self.add_pod(deployment, engine, &hash, name, now, crash, None);
    }

    /// Start deleting the pod at `index` (its engine stops); its deployment, engine and
    /// whether it crash-loops.
    pub(super) fn stop_pod(
        &mut self,
        index: usize,
        now: f64,
        engines: &EngineLink,
    ) -> Option<(usize, usize, bool)> {
        let pod = self.pods.get(index)?;
        let involved = self.involved_pod(pod, true);
        let host = pod.obj["spec"]["nodeName"].as_str().map(str::to_owned);
        let rv = self.bump();
        self.changed();
        let pod = self.pods.get_mut(index)?;
        pod.deleting = Some(now);
        pod.obj["metadata"]["deletionTimestamp"] = objects::time(now + 30.0).into();
        pod.obj["metadata"]["deletionGracePeriodSeconds"] = 30.into();
        pod.obj["metadata"]["resourceVersion"] = rv.to_string().into();
        let (engine, deployment, crash, was_up) =
            (pod.engine, pod.deployment, pod.crash, pod.engine_up);
        if was_up && !crash {
            let until = engines.stop(engine, now);
            if let Some(log) = pod.engine_log.as_mut() {
                log.until = until;
            }
        }
        self.emit(
            &involved,
            "Normal",
            "Killing",
            &format!("Stopping container {CONTAINER}"),
            "kubelet",
            host.as_deref(),
            1,
            now,
        );
        Some((deployment, engine, crash))
    }

    /// Evict a pod, unless its PodDisruptionBudget forbids it (429).
    pub(crate) fn evict(
        &mut self,
        name: &str,
        opts: &DeleteOptions,
        now: f64,
        engines: &EngineLink,
    ) -> Result<(), ApiError> {
        let Some(index) = self.pods.iter().position(|p| pod_name(p) == name) else {
            return Err(ApiError::not_found("pods", name));
        };
        let Some(pod) = self.pods.get(index) else {
            return Err(ApiError::not_found("pods", name));
        };
        check_preconditions(&pod.obj, name, opts)?;
        if pod.deleting.is_some() {
            return Ok(());
        }
        // An orphan lost a label its budget's selector shares with its ReplicaSet's: no
        // budget covers it any more.
        let ready = matches!(self.phase_of(pod, now), Phase::Ready { .. });
        if ready && pod.deployment != super::ORPHANED {
            let d = pod.deployment;
            let healthy = self
                .pods
                .iter()
                .filter(|p| {
                    p.deployment == d
                        && p.deleting.is_none()
                        && matches!(self.phase_of(p, now), Phase::Ready { .. })
                })
                .count() as i64;
            if healthy - PDB_MIN_AVAILABLE <= 0 {
                let pdb = self.deployments.get(d).map_or("", |r| r.model.deployment);
                return Err(ApiError::disruption_budget(
                    pdb,
                    PDB_MIN_AVAILABLE as i32,
                    healthy as i32,
                ));
            }
        }
        if !opts.dry_run {
            self.begin_delete(index, now, engines);
        }
        Ok(())
    }

    /// Like [`Cluster::log`], with each line's time (for following).
    ///
    /// Once its engine is up, a pod's container log is its engine's own log (the lines of the
    /// engine's current process, and of the one before as `previous`), with the lines only the
    /// cluster knows merged in by time.
    pub(crate) fn log_entries(
        &self,
        name: &str,
        q: &LogQuery,
        now: f64,
        engines: &EngineLink,
    ) -> Result<Vec<(f64, String)>, ApiError> {
        let Some(pod) = self.pods.iter().find(|p| pod_name(p) == name) else {
            return Err(ApiError::not_found("pods", name));
        };
        if let Some(container) = &q.container {
            if container != CONTAINER {
                return Err(ApiError::bad_request(format!(
                    "container {container} is not valid for pod {name}"
                )));
            }
        }
        let phase = self.phase_of(pod, now);
        if matches!(phase, Phase::Unscheduled { .. } | Phase::Creating) {
            let reason = if matches!(phase, Phase::Creating) {
                "ContainerCreating"
            } else {
                "PodInitializing"
            };
            return Err(ApiError::bad_request(format!(
                "container \"{CONTAINER}\" in pod \"{name}\" is waiting to start: {reason}"
            )));
        }
        let (current, previous) = match pod.engine_log {
            Some(span) => engine_runs(pod, span, engines.log_since(pod.engine, span.from, now)),
            None => (pod.log.clone(), pod.previous_log.clone()),
        };
        let source = if q.previous {
            if previous.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "previous terminated container \"{CONTAINER}\" in pod \"{name}\" not found"
                )));
            }
            previous
        } else {
            current
        };
        let since = match (q.since_time, q.since_seconds) {
            (Some(t), _) => t,
            (None, Some(s)) => now - s,
            (None, None) => f64::NEG_INFINITY,
        };
        let mut lines: Vec<(f64, String)> = source
            .iter()
            .filter(|(at, _)| *at <= now && *at >= since)
            .map(|(at, line)| {
                let text = if q.timestamps {
                    format!("{} {line}", objects::time_nanos(*at))
                } else {
                    line.clone()
                };
                (*at, text)
            })
            .collect();
        if let Some(tail) = q.tail_lines {
            let excess = lines.len().saturating_sub(tail);
            lines.drain(..excess);
        }
        if let Some(limit) = q.limit_bytes {
            let mut used = 0;
            lines.retain(|(_, l)| {
                used += l.len() + 1;
                used <= limit
            });
        }
        Ok(lines)
    }

    /// Where the API server's proxy reaches a pod: `[https:]NAME[:PORT]` → the engine's port
    /// on 127.0.0.1. 503 while the pod is not running.
    pub(crate) fn proxy_target(&self, name_port: &str, now: f64) -> Result<u16, ApiError> {
        let spec = name_port
            .strip_prefix("https:")
            .or_else(|| name_port.strip_prefix("http:"))
            .unwrap_or(name_port);
        let (name, port) = match spec.rsplit_once(':') {
            Some((name, port)) => (
                name,
                Some(port.parse::<u16>().map_err(|_| {
                    ApiError::bad_request(format!("invalid port in {name_port:?}"))
                })?),
            ),
            None => (spec, None),
        };
        let Some(pod) = self.pods.iter().find(|p| pod_name(p) == name) else {
            return Err(ApiError::not_found("pods", name));
        };
        let slot_port = self.slots.get(pod.engine).map_or(0, |s| s.port);
        let port = port.unwrap_or(slot_port);
        let running = matches!(
            self.phase_of(pod, now),
            Phase::Starting { .. } | Phase::Ready { .. } | Phase::Crashing(_)
        );
        if !running || pod.deleting.is_some() {
            return Err(ApiError::unavailable(format!(
                "error trying to reach service: pod {name} is not running"
            )));
        }
        if port != slot_port {
            return Err(ApiError::unavailable(format!(
                "error trying to reach service: dial tcp 127.0.0.1:{port}: connect: connection refused"
            )));
        }
        Ok(port)
    }

    /// Append a line to a pod's current log (tests use it to plant text); false if no such pod.
    pub fn append_log(&mut self, pod: &str, at: f64, line: &str) -> bool {
        let capacity = self.cfg.log_capacity;
        match self.pods.iter_mut().find(|p| pod_name(p) == pod) {
            Some(p) => {
                p.log.push((at, line.to_owned()));
                trim(&mut p.log, capacity);
                true
            }
            None => false,
        }
    }
}

/// Log lines with the time each was written.
type TimedLines = Vec<(f64, String)>;

/// A pod's current and previous container logs from its engine's lines (`lines`, read from
/// `span.from`): the lines of the engine's latest process up to `span.until`, with the pod's
/// own lines merged in by time, and the lines of the process before it, or the pod's own
/// previous log when the engine has not restarted since the pod started it.
fn engine_runs(
    pod: &super::PodRec,
    span: super::EngineLog,
    lines: Vec<crate::logs::LogLine>,
) -> (TimedLines, TimedLines) {
    let lines: Vec<_> = lines
        .into_iter()
        .filter(|l| span.until.is_none_or(|until| l.seq < until))
        .collect();
    let latest = lines
        .iter()
        .map(|l| l.container)
        .max()
        .unwrap_or(span.instance);
    let of = |instance: u32| -> Vec<(f64, String)> {
        lines
            .iter()
            .filter(|l| l.container == instance)
            .map(|l| (l.at, l.text.clone()))
            .collect()
    };
    let mut current = of(latest);
    current.extend(pod.log.iter().cloned());
    // Stable: lines of the same time keep their order, the engine's first.
    current.sort_by(|a, b| a.0.total_cmp(&b.0));
    let previous = match latest.checked_sub(1).filter(|p| *p >= span.instance) {
        Some(before) => of(before),
        None => pod.previous_log.clone(),
    };
    (current, previous)
}

/// 409 when the object is not the one `DeleteOptions.preconditions` names.
fn check_preconditions(obj: &Value, name: &str, opts: &DeleteOptions) -> Result<(), ApiError> {
    let meta = &obj["metadata"];
    if let Some(uid) = &opts.uid {
        if meta["uid"] != uid.as_str() {
            return Err(ApiError::conflict(
                "pods",
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta["uid"].as_str().unwrap_or("")
                ),
            ));
        }
    }
    if let Some(rv) = &opts.resource_version {
        if meta["resourceVersion"] != rv.as_str() {
            return Err(ApiError::conflict(
                "pods",
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta["resourceVersion"].as_str().unwrap_or("")
                ),
            ));
        }
    }
    Ok(())
}
