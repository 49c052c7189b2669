//! A simulated pod's `status`, from where its life is at `now`.

use serde_json::{Value, json};

use super::{Cluster, EngineLog, PodRec};
use crate::PodLifecycle;
use crate::fleet::CONTAINER;
use crate::kube::lifecycle::{self, CrashLoop, Stage};
use crate::kube::objects::time;

/// Where a pod is, for its status and its controllers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Phase {
    /// Not bound to a node yet; `true` when its node is cordoned.
    Unscheduled {
        cordoned: bool,
    },
    Creating,
    Starting {
        since: f64,
    },
    Ready {
        since: f64,
    },
    Crashing(CrashLoop),
}

impl Cluster {
    /// Where `pod` is at `now`.
    pub(super) fn phase_of(&self, pod: &PodRec, now: f64) -> Phase {
        let t = &self.cfg.timings;
        let Some(scheduled) = pod.scheduled else {
            let cordoned = self.node_cordoned(pod.engine);
            return Phase::Unscheduled { cordoned };
        };
        let age = now - scheduled;
        if age < t.creating {
            return Phase::Creating;
        }
        let started = scheduled + t.creating;
        if pod.crash {
            return Phase::Crashing(lifecycle::crash_loop(started, t.crash_after, now));
        }
        match lifecycle::stage(age, t) {
            Stage::Creating => Phase::Creating,
            Stage::Starting => Phase::Starting { since: started },
            Stage::Ready => Phase::Ready {
                since: started + t.starting,
            },
        }
    }

    /// The pod's `status` at `now`; `process` is its engine's process once the engine serves
    /// for it (its crashes and restarts are the container's).
    pub(super) fn pod_status(
        &self,
        pod: &PodRec,
        now: f64,
        process: Option<&(EngineLog, PodLifecycle)>,
    ) -> Value {
        let phase = self.phase_of(pod, now);
        let slot = self.slots.get(pod.engine);
        let image = pod.obj["spec"]["containers"][0]["image"].clone();
        let node_ip = "127.0.0.1";
        let pod_ip = slot.map_or("", |s| s.pod_ip.as_str());
        let created = time(pod.created);
        let terminating = pod.deleting.is_some();

        let condition = |type_: &str, ok: bool, since: f64| {
            let mut c = json!({
                "type": type_,
                "status": if ok { "True" } else { "False" },
                "lastProbeTime": null,
                "lastTransitionTime": time(since),
            });
            if !ok && (type_ == "Ready" || type_ == "ContainersReady") {
                c["reason"] = "ContainersNotReady".into();
                c["message"] = format!("containers with unready status: [{CONTAINER}]").into();
            }
            c
        };

        if let Phase::Unscheduled { cordoned } = phase {
            let mut scheduled = json!({
                "type": "PodScheduled", "status": "False", "lastProbeTime": null,
                "lastTransitionTime": created, "reason": "Unschedulable",
            });
            scheduled["message"] = self.unschedulable_message(cordoned).into();
            return json!({"phase": "Pending", "conditions": [scheduled], "qosClass": "Burstable"});
        }

        let scheduled_at = pod.scheduled.unwrap_or(pod.created);
        let restarts_before = pod.prior.as_ref().map_or(0, |_| 1);
        let mut last_state = pod.prior.as_ref().map_or(json!({}), |p| {
            json!({"terminated": {
                "exitCode": p.exit_code, "reason": p.reason,
                "startedAt": time(p.started), "finishedAt": time(p.finished),
                "containerID": format!("containerd://{:064x}", p.started as u64),
            }})
        });
        let container_id = format!("containerd://{:064x}", scheduled_at.to_bits());
        let (phase_name, ready, ready_since, state, restarts, started) = match phase {
            Phase::Unscheduled { .. } | Phase::Creating => (
                "Pending",
                false,
                scheduled_at,
                json!({"waiting": {"reason": "ContainerCreating"}}),
                restarts_before,
                false,
            ),
            Phase::Starting { since } => (
                "Running",
                false,
                since,
                json!({"running": {"startedAt": time(since)}}),
                restarts_before,
                true,
            ),
            Phase::Ready { since } => match process {
                Some((span, life)) => {
                    let (state, ready, ready_since, restarts, started) =
                        self.engine_container(pod, span, life, since, &mut last_state);
                    (
                        "Running",
                        ready && !terminating,
                        ready_since,
                        state,
                        restarts_before + restarts,
                        started,
                    )
                }
                None => (
                    "Running",
                    !terminating,
                    since,
                    json!({"running": {"startedAt": time(since - self.cfg.timings.starting)}}),
                    restarts_before,
                    true,
                ),
            },
            Phase::Crashing(cl) => {
                if let (Some(finished), Some(run_started)) =
                    (cl.last_failed, cl.last_failed_started)
                {
                    last_state = json!({"terminated": {
                        "exitCode": 1, "reason": "Error",
                        "startedAt": time(run_started), "finishedAt": time(finished),
                        "containerID": container_id,
                    }});
                }
                let state = if cl.running {
                    json!({"running": {"startedAt": time(cl.run_started)}})
                } else {
                    json!({"waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": format!(
                            "back-off {}s restarting failed container={CONTAINER} pod={}_{}({})",
                            cl.backoff.unwrap_or(0.0).round() as i64,
                            pod.obj["metadata"]["name"].as_str().unwrap_or(""),
                            self.cfg.namespace,
                            pod.obj["metadata"]["uid"].as_str().unwrap_or(""),
                        ),
                    }})
                };
                (
                    "Running",
                    false,
                    cl.last_failed.unwrap_or(scheduled_at),
                    state,
                    cl.restarts(),
                    cl.running,
                )
            }
        };
        let mut container = json!({
            "name": CONTAINER,
            "image": image,
            "imageID": format!("docker.io/{}@sha256:{:064x}", image.as_str().unwrap_or(""), 0x5eed_u64),
            "ready": ready,
            "restartCount": restarts,
            "started": started,
            "state": state,
            "lastState": last_state,
        });
        if started {
            container["containerID"] = container_id.into();
        }
        let initialized_at = scheduled_at;
        json!({
            "phase": phase_name,
            "conditions": [
                condition("PodReadyToStartContainers", phase_name == "Running", scheduled_at + 0.5),
                condition("Initialized", true, initialized_at),
                condition("Ready", ready, ready_since),
                condition("ContainersReady", ready, ready_since),
                condition("PodScheduled", true, scheduled_at),
            ],
            "hostIP": node_ip,
            "hostIPs": [{"ip": node_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": time(scheduled_at),
            "containerStatuses": [container],
            "qosClass": "Burstable",
        })
    }

    /// The container of a ready pod as its engine's process makes it: restarted as often as
    /// the engine since the pod started it, terminated with the engine's last exit, waiting
    /// in `CrashLoopBackOff` while a crashed engine waits for its restart, not ready while
    /// the engine does not serve. Returns (state, ready, ready since, restarts, started) and
    /// sets `last_state`.
    fn engine_container(
        &self,
        pod: &PodRec,
        span: &EngineLog,
        life: &PodLifecycle,
        ready_at: f64,
        last_state: &mut Value,
    ) -> (Value, bool, f64, u32, bool) {
        let restarts = life.restarts.saturating_sub(span.instance);
        let exit = life.last_exit.as_ref().filter(|e| e.at >= span.since);
        if let Some(exit) = exit {
            *last_state = json!({"terminated": {
                "exitCode": exit.exit_code, "reason": exit.reason, "message": exit.message,
                "startedAt": time(exit.started), "finishedAt": time(exit.at),
                "containerID": format!("containerd://{:064x}", exit.started.to_bits()),
            }});
        }
        let started_at = if restarts > 0 {
            life.started_at
        } else {
            ready_at - self.cfg.timings.starting
        };
        if life.serving {
            let since = if restarts > 0 {
                life.started_at
            } else {
                ready_at
            };
            let state = json!({"running": {"startedAt": time(started_at)}});
            return (state, true, since, restarts, true);
        }
        match (exit, life.restart_at) {
            (Some(exit), Some(restart_at)) => {
                let state = json!({"waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": format!(
                        "back-off {}s restarting failed container={CONTAINER} pod={}_{}({})",
                        (restart_at - exit.at).round() as i64,
                        pod.obj["metadata"]["name"].as_str().unwrap_or(""),
                        self.cfg.namespace,
                        pod.obj["metadata"]["uid"].as_str().unwrap_or(""),
                    ),
                }});
                (state, false, exit.at, restarts, false)
            }
            // Stopped for good (the engine is down): running, failing its readiness probe.
            _ => {
                let state = json!({"running": {"startedAt": time(started_at)}});
                (state, false, started_at, restarts, true)
            }
        }
    }

    /// Why a pod cannot be scheduled: its engine's node is cordoned, or the GPU it needs is
    /// still held by the pod being replaced.
    pub(super) fn unschedulable_message(&self, cordoned: bool) -> String {
        let nodes = self.nodes.len();
        if cordoned {
            format!(
                "0/{nodes} nodes are available: 1 node(s) were unschedulable, {} Insufficient nvidia.com/gpu. preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling.",
                nodes.saturating_sub(1)
            )
        } else {
            format!(
                "0/{nodes} nodes are available: {nodes} Insufficient nvidia.com/gpu. preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling."
            )
        }
    }

    /// Whether the node of `engine` is cordoned.
    pub(super) fn node_cordoned(&self, engine: usize) -> bool {
        let Some(slot) = self.slots.get(engine) else {
            return false;
        };
        self.nodes
            .get(slot.spec.node)
            .is_some_and(|n| n["spec"]["unschedulable"] == true)
    }
}
