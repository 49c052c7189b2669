//! The controllers of the simulated cluster, run on every tick: the scheduler, the kubelet
//! (container starts, crash loops, logs, events), the Deployment controller's rollouts, and the
//! status of ReplicaSets, Deployments, PDBs and HPAs.

use serde_json::{Value, json};

use super::pod_status::Phase;
use super::{Cluster, EngineLog, ORPHANED, PodRec, pod_name};
use crate::fleet::CONTAINER;
use crate::kube::engines::EngineLink;
use crate::kube::objects::{self, HPA_METRIC, HPA_WAITING_TARGET, Involved, PDB_MIN_AVAILABLE};
use crate::logs;

/// The HPA algorithm's tolerance: no change while the ratio is within 10 % of 1.
const HPA_TOLERANCE: f64 = 0.1;
/// Controllers run at most this often (simulated seconds), however many requests arrive.
const MIN_TICK: f64 = 0.05;

impl Cluster {
    /// Move everything along to `now` (nothing happens within [`MIN_TICK`] of the last run).
    pub fn tick(&mut self, now: f64, engines: &EngineLink) {
        if now < self.last_tick + MIN_TICK {
            return;
        }
        self.last_tick = now;
        self.remove_terminated(now);
        self.reconcile_replicas(now, engines);
        self.schedule(now);
        for index in 0..self.pods.len() {
            self.run_pod(index, now, engines);
        }
        self.release_orphans(now);
        self.roll_out(now, engines);
        self.refresh_pods(now, engines);
        self.refresh_controllers(now);
        self.refresh_routing(now, engines);
        if now >= self.next_hpa {
            self.evaluate_hpas(now, engines);
            self.next_hpa = now + self.cfg.hpa_period;
        }
    }

    fn remove_terminated(&mut self, now: f64) {
        let grace = self.cfg.timings.terminating;
        let before = self.pods.len();
        self.pods
            .retain(|p| p.deleting.is_none_or(|at| now < at + grace));
        if self.pods.len() != before {
            self.bump();
        }
    }

    /// Bind pending pods whose node is schedulable and whose GPU is free.
    fn schedule(&mut self, now: f64) {
        for index in 0..self.pods.len() {
            let Some(pod) = self.pods.get(index) else {
                continue;
            };
            if pod.scheduled.is_some() || pod.deleting.is_some() {
                continue;
            }
            let engine = pod.engine;
            let cordoned = self.node_cordoned(engine);
            let gpu_busy = self
                .pods
                .iter()
                .enumerate()
                .any(|(i, p)| i != index && p.engine == engine && p.scheduled.is_some());
            let involved = self.involved_pod(pod, false);
            if cordoned || gpu_busy {
                if !pod.emitted.unschedulable {
                    let message = self.unschedulable_message(cordoned);
                    self.emit(
                        &involved,
                        "Warning",
                        "FailedScheduling",
                        &message,
                        "default-scheduler",
                        None,
                        1,
                        now,
                    );
                    if let Some(pod) = self.pods.get_mut(index) {
                        pod.emitted.unschedulable = true;
                    }
                }
                continue;
            }
            let node = self
                .slots
                .get(engine)
                .and_then(|s| self.nodes.get(s.spec.node))
                .and_then(|n| n["metadata"]["name"].as_str())
                .unwrap_or("")
                .to_owned();
            let message = format!(
                "Successfully assigned {}/{} to {node}",
                self.cfg.namespace, involved.name
            );
            self.emit(
                &involved,
                "Normal",
                "Scheduled",
                &message,
                "default-scheduler",
                None,
                1,
                now,
            );
            if let Some(pod) = self.pods.get_mut(index) {
                pod.scheduled = Some(now);
                pod.emitted.scheduled = true;
                pod.emitted.unschedulable = false;
                pod.obj["spec"]["nodeName"] = node.into();
            }
        }
    }

    /// The kubelet's side of one pod: container starts, crash loop, logs and events.
    fn run_pod(&mut self, index: usize, now: f64, engines: &EngineLink) {
        let Some(pod) = self.pods.get(index) else {
            return;
        };
        // Pods already bound when the cluster was built announce their scheduling too.
        if pod.scheduled.is_some() && !pod.emitted.scheduled {
            let at = pod.scheduled.unwrap_or(now);
            let involved = self.involved_pod(pod, false);
            let node = pod.obj["spec"]["nodeName"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            let message = format!(
                "Successfully assigned {}/{} to {node}",
                self.cfg.namespace, involved.name
            );
            self.emit(
                &involved,
                "Normal",
                "Scheduled",
                &message,
                "default-scheduler",
                None,
                1,
                at,
            );
            if let Some(pod) = self.pods.get_mut(index) {
                pod.emitted.scheduled = true;
            }
        }
        let Some(pod) = self.pods.get(index) else {
            return;
        };
        match self.phase_of(pod, now) {
            Phase::Unscheduled { .. } | Phase::Creating => {}
            Phase::Starting { since } => self.container_started(index, since),
            Phase::Ready { since } => {
                let started = since - self.cfg.timings.starting;
                self.container_started(index, started);
                self.serve(index, started, since, now, engines);
            }
            Phase::Crashing(cl) => self.crash_loop(index, &cl, now),
        }
    }

    /// Events of a container that started at `started`, and until its engine is up the
    /// start-up lines it is writing (the engine writes the same ones once it serves).
    fn container_started(&mut self, index: usize, started: f64) {
        let Some(pod) = self.pods.get(index) else {
            return;
        };
        if pod.startup_logged {
            return;
        }
        let involved = self.involved_pod(pod, true);
        let host = pod.obj["spec"]["nodeName"].as_str().map(str::to_owned);
        let image = pod.obj["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let prior_start = pod.prior.as_ref().map(|prior| prior.started);
        let engine_up = pod.engine_up;
        self.container_events(&involved, host.as_deref(), &image, 1, started);
        let lines = if engine_up {
            Vec::new()
        } else {
            self.startup_lines(index, started)
        };
        // The killed container's log: its start-up, cut off where the kernel killed it.
        let prior_lines = prior_start.map(|at| self.startup_lines(index, at));
        if let Some(pod) = self.pods.get_mut(index) {
            pod.startup_logged = true;
            pod.emitted.runs = 1;
            if let Some(prior) = prior_lines {
                pod.previous_log = prior;
            }
            pod.log.extend(lines);
        }
    }

    /// `Pulled`, `Created`, `Started` for `count` container starts.
    fn container_events(
        &mut self,
        involved: &Involved,
        host: Option<&str>,
        image: &str,
        count: u32,
        at: f64,
    ) {
        let pulled = format!("Container image \"{image}\" already present on machine");
        let created = format!("Created container: {CONTAINER}");
        let started = format!("Started container {CONTAINER}");
        for (reason, message) in [
            ("Pulled", pulled),
            ("Created", created),
            ("Started", started),
        ] {
            self.emit(
                involved, "Normal", reason, &message, "kubelet", host, count, at,
            );
        }
    }

    /// The start-up lines of the pod's engine for a container started at `started`.
    fn startup_lines(&self, index: usize, started: f64) -> Vec<(f64, String)> {
        let Some(slot) = self.pods.get(index).and_then(|p| self.slots.get(p.engine)) else {
            return Vec::new();
        };
        logs::startup(
            &slot.spec,
            &slot.gpu,
            self.version,
            started,
            started + self.cfg.timings.starting,
        )
    }

    /// A ready pod: start its engine once (it started at `started`, ready at `ready`). From
    /// then on the engine writes the pod's log, start-up lines included.
    fn serve(&mut self, index: usize, started: f64, ready: f64, now: f64, engines: &EngineLink) {
        let Some(pod) = self.pods.get(index) else {
            return;
        };
        if pod.deleting.is_some() || pod.crash || pod.engine_up {
            return;
        }
        let startup = self.startup_lines(index, started);
        let routed = self.selected_by_a_route(&pod.obj);
        let Some(pod) = self.pods.get_mut(index) else {
            return;
        };
        pod.engine_up = true;
        pod.routed = Some(routed);
        if let Some((from, instance)) = engines.start(pod.engine, started, ready, now, routed) {
            pod.engine_log = Some(EngineLog {
                from,
                until: None,
                instance,
                since: ready,
            });
            // The engine's log has these lines now.
            pod.log.retain(|line| !startup.contains(line));
        }
    }

    /// A crash-looping pod: one set of container events per run, a back-off event per failure,
    /// each run's log (start-up, then the CUDA OOM), the previous run's log kept.
    fn crash_loop(&mut self, index: usize, cl: &crate::kube::lifecycle::CrashLoop, now: f64) {
        let Some(pod) = self.pods.get(index) else {
            return;
        };
        let runs = cl.failures + u32::from(cl.running);
        let new_runs = runs.saturating_sub(pod.emitted.runs);
        let new_backoffs = cl.failures.saturating_sub(pod.emitted.backoffs);
        let involved = self.involved_pod(pod, true);
        let host = pod.obj["spec"]["nodeName"].as_str().map(str::to_owned);
        let image = pod.obj["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let logged = pod.logged_run;
        self.container_events(&involved, host.as_deref(), &image, new_runs, now);
        let backoff = format!(
            "Back-off restarting failed container {CONTAINER} in pod {}_{}({})",
            involved.name, self.cfg.namespace, involved.uid
        );
        self.emit(
            &involved,
            "Warning",
            "BackOff",
            &backoff,
            "kubelet",
            host.as_deref(),
            new_backoffs,
            now,
        );
        let current =
            (logged != Some(cl.run_started)).then(|| self.crash_run_lines(index, cl.run_started));
        // A pod seen for the first time also gets the log of the run before.
        let previous = match (logged, cl.earlier_run_started) {
            (None, Some(earlier)) => Some(self.crash_run_lines(index, earlier)),
            _ => None,
        };
        if let Some(pod) = self.pods.get_mut(index) {
            pod.emitted.runs = runs;
            pod.emitted.backoffs = cl.failures;
            if let Some(lines) = current {
                pod.previous_log = std::mem::replace(&mut pod.log, lines);
                pod.logged_run = Some(cl.run_started);
            }
            if let Some(lines) = previous {
                pod.previous_log = lines;
            }
        }
    }

    /// The log of one crashing run that started at `started`: it never gets past the
    /// profiling run, which runs out of memory.
    fn crash_run_lines(&self, index: usize, started: f64) -> Vec<(f64, String)> {
        let Some(slot) = self.pods.get(index).and_then(|p| self.slots.get(p.engine)) else {
            return Vec::new();
        };
        let budget = match slot.tuning {
            objects::Tuning::OversizedChunkedPrefill => objects::OVERSIZED_BATCHED_TOKENS,
            _ => u64::from(slot.spec.params.max_num_batched_tokens),
        };
        logs::failed_startup(
            &slot.spec,
            &slot.gpu,
            self.version,
            started,
            started + self.cfg.timings.crash_after,
            budget,
        )
    }

    /// Replace the Deployments' old pods one at a time (maxSurge 0, maxUnavailable 1): the next
    /// old pod goes once every pod of the new template is ready (or crash-looping, which a
    /// new pod cannot fix) and nothing is terminating.
    fn roll_out(&mut self, now: f64, engines: &EngineLink) {
        for d in 0..self.deployments.len() {
            let Some(hash) = self.deployments.get(d).map(|r| r.hash.clone()) else {
                continue;
            };
            let busy = self.pods.iter().any(|p| {
                p.deployment == d
                    && (p.deleting.is_some()
                        || (p.hash == hash
                            && !matches!(
                                self.phase_of(p, now),
                                Phase::Ready { .. } | Phase::Crashing(_)
                            )))
            });
            if busy {
                continue;
            }
            let next_old = self
                .pods
                .iter()
                .enumerate()
                .filter(|(_, p)| p.deployment == d && p.hash != hash && p.deleting.is_none())
                .min_by(|(_, a), (_, b)| pod_name(a).cmp(pod_name(b)))
                .map(|(i, p)| (i, p.hash.clone()));
            let Some((index, old_hash)) = next_old else {
                continue;
            };
            self.begin_delete(index, now, engines);
            let model = self
                .deployments
                .get(d)
                .map(|r| r.model.deployment)
                .unwrap_or("");
            let count = |cluster: &Cluster, h: &str| {
                cluster
                    .pods
                    .iter()
                    .filter(|p| p.deployment == d && p.hash == h && p.deleting.is_none())
                    .count()
            };
            let old_left = count(self, &old_hash);
            let new_now = count(self, &hash);
            let involved = self.involved_deployment(d);
            self.emit(
                &involved,
                "Normal",
                "ScalingReplicaSet",
                &format!(
                    "Scaled down replica set {model}-{old_hash} from {} to {old_left}",
                    old_left + 1
                ),
                "deployment-controller",
                None,
                1,
                now,
            );
            self.emit(
                &involved,
                "Normal",
                "ScalingReplicaSet",
                &format!(
                    "Scaled up replica set {model}-{hash} from {} to {new_now}",
                    new_now.saturating_sub(1)
                ),
                "deployment-controller",
                None,
                1,
                now,
            );
        }
    }

    /// The ReplicaSet controller letting go of pods its selector no longer matches (a label
    /// removed by hand, or by a drain whose route selects only the ReplicaSet's labels): the
    /// pod loses its ownerReference and keeps running, and the ReplicaSet, one short, creates a
    /// replacement at once. The replacement waits for a GPU while the orphan holds the engine's.
    fn release_orphans(&mut self, now: f64) {
        for index in 0..self.pods.len() {
            let Some(pod) = self.pods.get(index) else {
                continue;
            };
            if pod.deleting.is_some() || pod.deployment == ORPHANED {
                continue;
            }
            let owner = self
                .replica_sets
                .iter()
                .find(|(d, hash, _)| *d == pod.deployment && *hash == pod.hash);
            let Some((_, _, rs)) = owner else {
                continue;
            };
            let labels = &pod.obj["metadata"]["labels"];
            let selected = rs["spec"]["selector"]["matchLabels"]
                .as_object()
                .is_some_and(|want| want.iter().all(|(k, v)| labels.get(k) == Some(v)));
            if selected {
                continue;
            }
            let rs_name = rs["metadata"]["name"].as_str().unwrap_or("").to_owned();
            let rs_uid = rs["metadata"]["uid"].as_str().unwrap_or("").to_owned();
            let (deployment, engine, hash, crash) =
                (pod.deployment, pod.engine, pod.hash.clone(), pod.crash);
            let rv = self.bump();
            self.changed();
            if let Some(pod) = self.pods.get_mut(index) {
                pod.deployment = ORPHANED;
                if let Some(meta) = pod.obj["metadata"].as_object_mut() {
                    meta.remove("ownerReferences");
                }
                pod.obj["metadata"]["resourceVersion"] = rv.to_string().into();
            }
            let Some(model) = self.deployments.get(deployment).map(|d| d.model.deployment) else {
                continue;
            };
            let name = self.new_pod_name(model, &hash);
            self.add_pod(deployment, engine, &hash, name.clone(), now, crash, None);
            let involved = Involved {
                kind: "ReplicaSet",
                api_version: "apps/v1",
                name: rs_name,
                namespace: self.cfg.namespace.clone(),
                uid: rs_uid,
                field_path: None,
            };
            self.emit(
                &involved,
                "Normal",
                "SuccessfulCreate",
                &format!("Created pod: {name}"),
                "replicaset-controller",
                None,
                1,
                now,
            );
        }
    }

    pub(super) fn involved_deployment(&self, d: usize) -> Involved {
        let obj = self.deployments.get(d).map(|r| &r.obj);
        Involved {
            kind: "Deployment",
            api_version: "apps/v1",
            name: obj
                .and_then(|o| o["metadata"]["name"].as_str())
                .unwrap_or("")
                .to_owned(),
            namespace: self.cfg.namespace.clone(),
            uid: obj
                .and_then(|o| o["metadata"]["uid"].as_str())
                .unwrap_or("")
                .to_owned(),
            field_path: None,
        }
    }

    /// Rewrite each pod's status; a changed status gets a new resource version.
    fn refresh_pods(&mut self, now: f64, engines: &EngineLink) {
        for index in 0..self.pods.len() {
            let Some(pod) = self.pods.get(index) else {
                continue;
            };
            // A serving pod's container is its engine's process: its crashes are the pod's.
            let process = pod
                .engine_log
                .filter(|_| pod.deleting.is_none())
                .and_then(|span| Some((span, engines.lifecycle(pod.engine, now)?)));
            let status = self.pod_status(pod, now, process.as_ref());
            if pod.obj["status"] != status {
                let rv = self.bump();
                if let Some(pod) = self.pods.get_mut(index) {
                    pod.obj["status"] = status;
                    pod.obj["metadata"]["resourceVersion"] = rv.to_string().into();
                }
            }
        }
    }

    /// Status of ReplicaSets, Deployments and PDBs from their pods.
    fn refresh_controllers(&mut self, now: f64) {
        let ready_of = |cluster: &Cluster, p: &PodRec| {
            p.deleting.is_none() && matches!(cluster.phase_of(p, now), Phase::Ready { .. })
        };
        for i in 0..self.replica_sets.len() {
            let Some((d, hash, _)) = self.replica_sets.get(i).cloned() else {
                continue;
            };
            let active: Vec<&PodRec> = self
                .pods
                .iter()
                .filter(|p| p.deployment == d && p.hash == hash && p.deleting.is_none())
                .collect();
            let ready = active.iter().filter(|p| ready_of(self, p)).count();
            let replicas = active.len();
            let status = json!({
                "replicas": replicas,
                "fullyLabeledReplicas": replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": 1,
            });
            self.update_status(
                |c| c.replica_sets.get_mut(i).map(|r| &mut r.2),
                status,
                Some(replicas),
            );
        }
        for d in 0..self.deployments.len() {
            let Some(rec) = self.deployments.get(d) else {
                continue;
            };
            let desired = rec.replicas;
            let hash = rec.hash.clone();
            let generation = rec.obj["metadata"]["generation"].clone();
            let name: &'static str = rec.model.deployment;
            let active: Vec<&PodRec> = self
                .pods
                .iter()
                .filter(|p| p.deployment == d && p.deleting.is_none())
                .collect();
            let ready = active.iter().filter(|p| ready_of(self, p)).count();
            let updated = active.iter().filter(|p| p.hash == hash).count();
            let active = active.len();
            let complete = updated == desired && active == desired;
            let available = ready + 1 >= desired;
            let status = json!({
                "observedGeneration": generation,
                "replicas": active,
                "updatedReplicas": updated,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "unavailableReplicas": desired.saturating_sub(ready),
                "conditions": [
                    {
                        "type": "Available",
                        "status": if available { "True" } else { "False" },
                        "reason": if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                        "message": if available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." },
                    },
                    {
                        "type": "Progressing",
                        "status": "True",
                        "reason": if complete { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
                        "message": format!("ReplicaSet \"{name}-{hash}\" {}",
                            if complete { "has successfully progressed." } else { "is progressing." }),
                    }
                ]
            });
            self.update_status(
                |c| c.deployments.get_mut(d).map(|r| &mut r.obj),
                status,
                None,
            );

            let healthy = ready as i64;
            let allowed = (healthy - PDB_MIN_AVAILABLE).max(0);
            let pdb_status = json!({
                "observedGeneration": 1,
                "expectedPods": active,
                "currentHealthy": healthy,
                "desiredHealthy": PDB_MIN_AVAILABLE,
                "disruptionsAllowed": allowed,
                "conditions": [{
                    "type": "DisruptionAllowed",
                    "status": if allowed > 0 { "True" } else { "False" },
                    "reason": if allowed > 0 { "SufficientPods" } else { "InsufficientPods" },
                    "message": "",
                    "observedGeneration": 1,
                    "lastTransitionTime": objects::time(self.started),
                }]
            });
            if let Some(i) = self.pdbs.iter().position(|p| p["metadata"]["name"] == name) {
                self.update_status(|c| c.pdbs.get_mut(i), pdb_status, None);
            }
        }
    }

    /// Set an object's status (and, for a ReplicaSet, `spec.replicas`); touch it if it changed.
    fn update_status(
        &mut self,
        get: impl Fn(&mut Cluster) -> Option<&mut Value>,
        status: Value,
        spec_replicas: Option<usize>,
    ) {
        let changed = match get(self) {
            Some(obj) => {
                obj["status"] != status
                    || spec_replicas.is_some_and(|r| obj["spec"]["replicas"] != r)
            }
            None => false,
        };
        if changed {
            let rv = self.bump();
            if let Some(obj) = get(self) {
                obj["status"] = status;
                if let Some(r) = spec_replicas {
                    obj["spec"]["replicas"] = r.into();
                }
                obj["metadata"]["resourceVersion"] = rv.to_string().into();
            }
        }
    }

    /// The HPA controller: average waiting requests per ready pod against the target.
    fn evaluate_hpas(&mut self, now: f64, engines: &EngineLink) {
        for d in 0..self.deployments.len() {
            let Some(rec) = self.deployments.get(d) else {
                continue;
            };
            let name = rec.model.deployment;
            let Some(i) = self.hpas.iter().position(|h| h["metadata"]["name"] == name) else {
                continue;
            };
            let active: Vec<&PodRec> = self
                .pods
                .iter()
                .filter(|p| p.deployment == d && p.deleting.is_none())
                .collect();
            let waiting: Vec<f64> = active
                .iter()
                .filter(|p| matches!(self.phase_of(p, now), Phase::Ready { .. }))
                .filter_map(|p| engines.read(p.engine, now))
                .map(|r| r.waiting as f64)
                .collect();
            let triggered = waiting.iter().sum::<f64>() > 0.0;
            let Some(hpa) = self.hpas.get(i) else {
                continue;
            };
            let min = hpa["spec"]["minReplicas"].as_u64().unwrap_or(1) as usize;
            let max = hpa["spec"]["maxReplicas"].as_u64().unwrap_or(1) as usize;
            let current = active.len();
            let condition = |type_: &str, ok: bool, reason: &str, message: &str| {
                json!({
                    "type": type_, "status": if ok { "True" } else { "False" },
                    "reason": reason, "message": message,
                    "lastTransitionTime": objects::time(now),
                })
            };
            let status = if waiting.is_empty() {
                json!({
                    "currentReplicas": current,
                    "desiredReplicas": current,
                    "conditions": [
                        condition("AbleToScale", true, "SucceededGetScale", "the HPA controller was able to get the target's current scale"),
                        condition("ScalingActive", false, "FailedGetPodsMetric",
                            &format!("the HPA was unable to compute the replica count: no ready pods report {HPA_METRIC}")),
                    ]
                })
            } else {
                let average = waiting.iter().sum::<f64>() / waiting.len() as f64;
                let ratio = average / HPA_WAITING_TARGET;
                let wanted = if (ratio - 1.0).abs() <= HPA_TOLERANCE {
                    current
                } else {
                    (current as f64 * ratio).ceil() as usize
                };
                let desired = wanted.clamp(min, max.max(min));
                let limited = if wanted > max {
                    condition(
                        "ScalingLimited",
                        true,
                        "TooManyReplicas",
                        "the desired replica count is more than the maximum replica count",
                    )
                } else if wanted < min {
                    condition(
                        "ScalingLimited",
                        true,
                        "TooFewReplicas",
                        "the desired replica count is less than the minimum replica count",
                    )
                } else {
                    condition(
                        "ScalingLimited",
                        false,
                        "DesiredWithinRange",
                        "the desired count is within the acceptable range",
                    )
                };
                json!({
                    "currentReplicas": current,
                    "desiredReplicas": desired,
                    "currentMetrics": [{
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": HPA_METRIC},
                            "current": {"averageValue": objects::format_quantity((average * 1000.0).round() / 1000.0)}
                        }
                    }],
                    "conditions": [
                        condition("AbleToScale", true, "ReadyForNewScale", "recommended size matches current size"),
                        condition("ScalingActive", true, "ValidMetricFound",
                            &format!("the HPA was able to successfully calculate a replica count from pods metric {HPA_METRIC}")),
                        limited,
                    ]
                })
            };
            // Transition times only move when a condition's status flips.
            let old = self
                .hpas
                .get(i)
                .map(|h| h["status"].clone())
                .unwrap_or_default();
            let status = keep_transition_times(&old, status);
            self.update_status(|c| c.hpas.get_mut(i), status, None);
            self.set_scaled_object_active(name, triggered);
        }
    }

    /// KEDA's `Active` condition of the ScaledObject scaling `deployment`: a trigger is above
    /// its activation threshold (0) while requests wait.
    fn set_scaled_object_active(&mut self, deployment: &str, active: bool) {
        let Some(i) = self
            .scaled_objects
            .iter()
            .position(|so| so["spec"]["scaleTargetRef"]["name"] == deployment)
        else {
            return;
        };
        let Some(mut status) = self.scaled_objects.get(i).map(|so| so["status"].clone()) else {
            return;
        };
        let (word, reason, message) = if active {
            (
                "True",
                "ScalerActive",
                "Scaling is performed because triggers are active",
            )
        } else {
            (
                "False",
                "ScalerNotActive",
                "Scaling is not performed because triggers are not active",
            )
        };
        if let Some(conditions) = status["conditions"].as_array_mut() {
            for c in conditions.iter_mut().filter(|c| c["type"] == "Active") {
                c["status"] = word.into();
                c["reason"] = reason.into();
                c["message"] = message.into();
            }
        }
        self.update_status(|c| c.scaled_objects.get_mut(i), status, None);
    }
}

/// Carry `lastTransitionTime` over from the old conditions whose status did not change.
fn keep_transition_times(old: &Value, mut new: Value) -> Value {
    let old_conditions = old["conditions"].as_array().cloned().unwrap_or_default();
    if let Some(conditions) = new["conditions"].as_array_mut() {
        for c in conditions {
            if let Some(before) = old_conditions
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
            {
                c["lastTransitionTime"] = before["lastTransitionTime"].clone();
            }
        }
    }
    new
}

/// Keep at most `capacity` lines.
pub(super) fn trim(lines: &mut Vec<(f64, String)>, capacity: usize) {
    if lines.len() > capacity {
        let excess = lines.len() - capacity;
        lines.drain(..excess);
    }
}
