//! `deployments/scale` and the ReplicaSet controller's part of it: a Deployment scaled down
//! loses its least useful pods first (unscheduled, then not ready, then the newest), whose
//! engines stop; scaled up, it gets pods on its engines that have none (those engines start
//! again), and beyond its engines pods that stay Pending for want of a GPU, as on a real node
//! whose GPUs are all taken.

use serde_json::{Value, json};

use super::pod_status::Phase;
use super::{Cluster, pod_name};
use crate::fleet::Scenario;
use crate::kube::engines::EngineLink;
use crate::kube::status::ApiError;

impl Cluster {
    fn deployment_index(&self, namespace: Option<&str>, name: &str) -> Result<usize, ApiError> {
        self.deployments
            .iter()
            .position(|d| {
                d.obj["metadata"]["name"] == name
                    && namespace.is_none_or(|ns| d.obj["metadata"]["namespace"] == ns)
            })
            .ok_or_else(|| ApiError::not_found("deployments.apps", name))
    }

    /// The autoscaling/v1 `Scale` of a Deployment.
    pub(crate) fn scale_of(&self, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let d = self.deployment_index(namespace, name)?;
        let Some(rec) = self.deployments.get(d) else {
            return Err(ApiError::not_found("deployments.apps", name));
        };
        let meta = &rec.obj["metadata"];
        let selector: Vec<String> = rec.obj["spec"]["selector"]["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
            .collect();
        Ok(json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"],
            },
            "spec": {"replicas": rec.replicas},
            "status": {"replicas": rec.obj["status"]["replicas"].as_u64().unwrap_or(0), "selector": selector.join(",")},
        }))
    }

    /// Set a Deployment's replicas; the controllers create or remove pods on their next run.
    pub(crate) fn scale_deployment(
        &mut self,
        namespace: Option<&str>,
        name: &str,
        replicas: i64,
        dry_run: bool,
        _now: f64,
    ) -> Result<Value, ApiError> {
        let d = self.deployment_index(namespace, name)?;
        let Ok(replicas) = usize::try_from(replicas) else {
            return Err(ApiError::invalid(
                "Scale",
                name,
                &format!(
                    "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
                ),
            ));
        };
        let same = self
            .deployments
            .get(d)
            .is_some_and(|r| r.replicas == replicas);
        if !dry_run && !same {
            let rv = self.bump();
            self.changed();
            if let Some(rec) = self.deployments.get_mut(d) {
                rec.replicas = replicas;
                rec.obj["spec"]["replicas"] = replicas.into();
                let generation = rec.obj["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                rec.obj["metadata"]["generation"] = generation.into();
                rec.obj["metadata"]["resourceVersion"] = rv.to_string().into();
            }
        }
        let mut scale = self.scale_of(namespace, name)?;
        scale["spec"]["replicas"] = replicas.into();
        Ok(scale)
    }

    /// The ReplicaSet controller: bring each Deployment's live pods to its replicas.
    pub(super) fn reconcile_replicas(&mut self, now: f64, engines: &EngineLink) {
        for d in 0..self.deployments.len() {
            let Some(rec) = self.deployments.get(d) else {
                continue;
            };
            let (desired, hash, model) = (rec.replicas, rec.hash.clone(), rec.model.deployment);
            let owned = rec.engines.clone();
            let mut live: Vec<usize> = (0..self.pods.len())
                .filter(|&i| {
                    self.pods
                        .get(i)
                        .is_some_and(|p| p.deployment == d && p.deleting.is_none())
                })
                .collect();
            let before = live.len();
            if before == desired || owned.is_empty() {
                continue;
            }
            if before > desired {
                // Least useful first: unscheduled, not ready, newest.
                live.sort_by(|&a, &b| {
                    let rank = |i: usize| {
                        self.pods.get(i).map_or((0, 0, 0.0), |p| {
                            let ready = matches!(self.phase_of(p, now), Phase::Ready { .. });
                            (u8::from(p.scheduled.is_some()), u8::from(ready), -p.created)
                        })
                    };
                    let (ra, rb) = (rank(a), rank(b));
                    (ra.0, ra.1).cmp(&(rb.0, rb.1)).then(ra.2.total_cmp(&rb.2))
                });
                let victims: Vec<usize> = live.iter().copied().take(before - desired).collect();
                // Deleting by index: remove from the back so earlier indices stay valid.
                let mut names: Vec<String> = victims
                    .iter()
                    .filter_map(|&i| self.pods.get(i).map(|p| pod_name(p).to_owned()))
                    .collect();
                names.sort();
                for name in names {
                    if let Some(i) = self.pods.iter().position(|p| pod_name(p) == name) {
                        self.stop_pod(i, now, engines);
                    }
                }
            } else {
                for n in 0..desired - before {
                    let busy: Vec<usize> = self
                        .pods
                        .iter()
                        .filter(|p| p.deployment == d && p.deleting.is_none())
                        .map(|p| p.engine)
                        .collect();
                    let engine = owned
                        .iter()
                        .copied()
                        .find(|e| !busy.contains(e))
                        .unwrap_or_else(|| owned.get(n % owned.len()).copied().unwrap_or(0));
                    let crash = self
                        .slots
                        .get(engine)
                        .is_some_and(|s| s.spec.scenario == Scenario::Down);
                    let name = self.new_pod_name(model, &hash);
                    self.add_pod(d, engine, &hash, name, now, crash, None);
                }
            }
            let verb = if before > desired { "down" } else { "up" };
            let involved = self.involved_deployment(d);
            self.emit(
                &involved,
                "Normal",
                "ScalingReplicaSet",
                &format!("Scaled {verb} replica set {model}-{hash} from {before} to {desired}"),
                "deployment-controller",
                None,
                1,
                now,
            );
        }
    }
}
