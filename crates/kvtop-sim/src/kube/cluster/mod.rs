//! The simulated cluster: its objects (as the JSON the API returns), the controllers that move
//! them along (kubelet, ReplicaSet and Deployment controllers, HPA, PDB), and the operations
//! the API offers. Everything takes the simulated time `now`; engines are reached through
//! [`EngineLink`].
//!
//! Layout: one Deployment per model (its pods are the engines serving that model), each with a
//! ReplicaSet per pod-template hash, a Service selecting its pods by the ReplicaSet's labels and
//! the component label (or an InferencePool, see [`ModelRouting`]), an HPA and a PDB; one node
//! per 8 GPUs. Every engine is one pod; deleting, evicting or rolling a pod replaces it with a
//! new pod (new name) on the same engine, whose process restarts. An engine gets requests only
//! while its pod is routed: a ready endpoint of a Service or selected by a pool.

mod access;
mod controllers;
mod endpoints;
mod journal;
mod ops;
mod pod_status;
mod routing;
mod scale;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::lifecycle::Timings;
use super::objects::{self, Involved, Tuning};
use crate::SimVersion;
use crate::fleet::{EngineSpec, FleetPlan, MODELS, ModelSpec, Scenario};
use crate::gpu::GpuSpec;
use crate::sampling::Sampler;
use kvtop_core::kube_model::{FieldSelector, LabelSelector};

pub use crate::kube::kinds::Kind;
pub(crate) use access::AccessRequest;
pub use access::Denial;
pub(crate) use journal::{Change, Expired};
pub(crate) use ops::{DeleteOptions, LogQuery};

use super::status::ApiError;

/// How the simulated cluster behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// Namespace of the vLLM pods and their controllers.
    pub namespace: String,
    /// The user the API authenticates every request as (named in 403 messages).
    pub user: String,
    pub timings: Timings,
    /// Seconds between HPA evaluations (the controller's default sync period is 15 s).
    pub hpa_period: f64,
    /// Lines the cluster itself keeps per container run (a crash loop's runs, a starting
    /// container's start-up, planted lines); a running engine's lines live in its own log.
    pub log_capacity: usize,
    /// Events kept in the cluster.
    pub event_capacity: usize,
    /// How each model (by Deployment name) is routed; models not named have a Service.
    pub routing: BTreeMap<String, ModelRouting>,
    /// How the workloads and their pods are labelled.
    pub labels: objects::LabelStyle,
    /// Each model's HPA is driven by a KEDA ScaledObject (a Prometheus trigger on waiting
    /// requests) that adopted it, as KEDA does with `transfer-hpa-ownership`.
    pub keda: bool,
}

/// What sends a model's pods their traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelRouting {
    /// A Service selecting the ReplicaSet's labels and the component label.
    #[default]
    Service,
    /// A Service selecting only labels the ReplicaSet selects on too: taking a pod out of it
    /// orphans the pod.
    ServiceOnReplicaSetLabels,
    /// A Gateway API Inference Extension InferencePool, no Service.
    InferencePool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            namespace: crate::fleet::NAMESPACE.to_owned(),
            user: "kvtop-sim".to_owned(),
            timings: Timings::default(),
            hpa_period: 15.0,
            log_capacity: 2_000,
            event_capacity: 5_000,
            routing: BTreeMap::new(),
            labels: objects::LabelStyle::default(),
            keda: true,
        }
    }
}

/// One engine's place in the cluster.
#[derive(Debug, Clone)]
struct EngineSlot {
    spec: EngineSpec,
    port: u16,
    tuning: Tuning,
    /// The pod IP advertised in pod status (`127.0.0.1` unless a test overrides it).
    pod_ip: String,
    /// The GPU model of the engine's node.
    gpu: GpuSpec,
}

/// How an earlier container run ended, for pods that start with history.
#[derive(Debug, Clone, PartialEq)]
struct PriorRun {
    reason: &'static str,
    exit_code: i32,
    started: f64,
    finished: f64,
}

/// Event counts already emitted for a pod, so controllers emit each occurrence once.
#[derive(Debug, Clone, Default)]
struct Emitted {
    scheduled: bool,
    runs: u32,
    backoffs: u32,
    unschedulable: bool,
}

/// Where a pod's lines are in its engine's log: the engine process it started, from the
/// cursor where that process's lines begin to the one where the pod stopped it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EngineLog {
    from: u64,
    until: Option<u64>,
    /// The engine's container instance number when the pod started it: later instances are
    /// restarts of the pod's container.
    instance: u32,
    /// When that process started serving (an engine exit before it is not the pod's).
    since: f64,
}

/// One pod and what its containers have done.
#[derive(Debug, Clone)]
struct PodRec {
    obj: Value,
    engine: usize,
    /// Index of its Deployment; [`ORPHANED`] once its ReplicaSet let go of it.
    deployment: usize,
    hash: String,
    created: f64,
    /// When the scheduler bound the pod to its node.
    scheduled: Option<f64>,
    /// When the deletion was requested.
    deleting: Option<f64>,
    /// The engine cannot start (crash loop).
    crash: bool,
    prior: Option<PriorRun>,
    /// Lines of the current container run that only the cluster knows (time, text): a crash
    /// loop's run, the start-up of a container whose engine is not up yet, planted lines.
    /// Future-dated lines show up when due.
    log: Vec<(f64, String)>,
    previous_log: Vec<(f64, String)>,
    /// Start of the crash-loop run whose lines are in `log`.
    logged_run: Option<f64>,
    startup_logged: bool,
    /// The engine's process was started for this pod.
    engine_up: bool,
    /// The pod's lines in its engine's log, once its engine is up.
    engine_log: Option<EngineLog>,
    /// Whether its engine was last given traffic (`None`: not decided yet).
    routed: Option<bool>,
    emitted: Emitted,
}

/// [`PodRec::deployment`] of a pod no ReplicaSet owns any more: no controller counts it,
/// replaces it when it goes, or finds a budget over it.
const ORPHANED: usize = usize::MAX;

/// A model's Deployment.
#[derive(Debug, Clone)]
struct DeploymentRec {
    obj: Value,
    model: &'static ModelSpec,
    /// Pod-template hash of the current template.
    hash: String,
    /// Engines of this model, in index order.
    engines: Vec<usize>,
    /// `spec.replicas`: pods the ReplicaSet controller keeps (beyond the engines, they stay
    /// Pending for want of a GPU).
    replicas: usize,
}

/// A stored event and what identifies it for aggregation.
#[derive(Debug, Clone)]
struct EventRec {
    key: (String, String, String),
    obj: Value,
}

/// The simulated cluster.
#[derive(Debug)]
pub(crate) struct Cluster {
    cfg: ClusterConfig,
    version: SimVersion,
    rv: u64,
    uids: u64,
    names: Sampler,
    slots: Vec<EngineSlot>,
    nodes: Vec<Value>,
    /// The workloads' namespace, `default` and `kube-system`.
    namespaces: Vec<Value>,
    deployments: Vec<DeploymentRec>,
    /// (deployment index, template hash, object).
    replica_sets: Vec<(usize, String, Value)>,
    pods: Vec<PodRec>,
    services: Vec<Value>,
    hpas: Vec<Value>,
    next_hpa: f64,
    pdbs: Vec<Value>,
    /// One EndpointSlice per Service, kept in step with its ready pods.
    endpoint_slices: Vec<Value>,
    /// InferencePools (an endpoint picker serves each: its pods get traffic).
    pools: Vec<Value>,
    /// KEDA ScaledObjects, one per model when [`ClusterConfig::keda`] is on.
    scaled_objects: Vec<Value>,
    events: Vec<EventRec>,
    denials: Vec<Denial>,
    journal: journal::Journal,
    started: f64,
    /// When the controllers last ran.
    last_tick: f64,
}

impl Cluster {
    /// The cluster of a fleet, as of simulated time `now` (the fleet's start): every healthy
    /// pod Running and Ready, the down engine's pod five minutes into its crash loop.
    pub(crate) fn new(
        plan: &FleetPlan,
        ports: &[u16],
        version: SimVersion,
        cfg: ClusterConfig,
        seed: u64,
        now: f64,
    ) -> Cluster {
        let mut c = Cluster {
            cfg,
            version,
            rv: 1,
            uids: 0,
            names: Sampler::new(seed ^ 0x6b75_6265_5f73_696d),
            slots: Vec::with_capacity(plan.engines.len()),
            nodes: Vec::new(),
            namespaces: Vec::new(),
            deployments: Vec::new(),
            replica_sets: Vec::new(),
            pods: Vec::with_capacity(plan.engines.len()),
            services: Vec::new(),
            hpas: Vec::new(),
            next_hpa: now,
            pdbs: Vec::new(),
            endpoint_slices: Vec::new(),
            pools: Vec::new(),
            scaled_objects: Vec::new(),
            events: Vec::new(),
            denials: Vec::new(),
            journal: journal::Journal::default(),
            started: now,
            last_tick: f64::NEG_INFINITY,
        };
        let born = now - 86_400.0;
        let workloads = c.cfg.namespace.clone();
        for name in [workloads.as_str(), "default", "kube-system"] {
            let uid = c.next_uid();
            let rv = c.bump();
            let mut meta = objects::meta(name, "", &uid, born, rv);
            if let Some(map) = meta.as_object_mut() {
                map.remove("namespace");
            }
            meta["labels"] = json!({"kubernetes.io/metadata.name": name});
            c.namespaces.push(json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": meta,
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}
            }));
        }
        for node in &plan.nodes {
            let uid = c.next_uid();
            let rv = c.bump();
            c.nodes.push(objects::node(
                &node.name,
                &uid,
                node.gpus.len(),
                node.gpu.name,
                born,
                rv,
            ));
        }
        for spec in &plan.engines {
            let gpu = plan
                .nodes
                .get(spec.node)
                .map_or(crate::gpu::H100_SXM, |n| n.gpu.clone());
            c.slots.push(EngineSlot {
                spec: spec.clone(),
                port: ports.get(spec.index).copied().unwrap_or(0),
                tuning: objects::tuning_for(spec, plan.engines.len()),
                pod_ip: "127.0.0.1".to_owned(),
                gpu,
            });
        }
        for model in MODELS {
            c.add_model(plan, model, now);
        }
        let style = c.cfg.labels;
        let objects = c.deployments.iter_mut().map(|d| &mut d.obj);
        let objects = objects
            .chain(c.replica_sets.iter_mut().map(|(_, _, rs)| rs))
            .chain(c.pods.iter_mut().map(|p| &mut p.obj))
            .chain(c.services.iter_mut())
            .chain(c.pdbs.iter_mut());
        for obj in objects {
            objects::restyle_labels(obj, style);
        }
        c.refresh_endpoint_slices(now);
        c.start_journal();
        c
    }

    /// Deployment, ReplicaSet, pods, Service, HPA and PDB of one model.
    fn add_model(&mut self, plan: &FleetPlan, model: &'static ModelSpec, now: f64) {
        let engines: Vec<usize> = plan
            .engines
            .iter()
            .filter(|e| e.model.id == model.id)
            .map(|e| e.index)
            .collect();
        let Some(&first) = engines.first() else {
            return;
        };
        let ns = self.cfg.namespace.clone();
        let container = self.container_of(first);
        let template = objects::pod_template(model, container);
        // The plan's pod names carry the ReplicaSet hash: `DEPLOYMENT-HASH-SUFFIX`.
        let hash = plan
            .engines
            .get(first)
            .and_then(|e| e.pod.strip_prefix(model.deployment))
            .and_then(|rest| rest.trim_start_matches('-').split('-').next())
            .map(str::to_owned)
            .unwrap_or_else(|| crate::fleet::k8s_suffix(&mut self.names));
        let created = now - 86_400.0;
        let uid = self.next_uid();
        let rv = self.bump();
        let mut meta = objects::meta(model.deployment, &ns, &uid, created, rv);
        meta["generation"] = 1.into();
        meta["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
        let deployment = objects::deployment(model, engines.len(), meta, &template);
        let index = self.deployments.len();
        self.deployments.push(DeploymentRec {
            obj: deployment,
            model,
            hash: hash.clone(),
            engines: engines.clone(),
            replicas: engines.len(),
        });
        self.add_replica_set(index, &hash, engines.len(), created);

        for &engine in &engines {
            let Some(spec) = plan.engines.get(engine) else {
                continue;
            };
            let crash = spec.scenario == Scenario::Down;
            let t = self.cfg.timings;
            // Healthy pods became ready when the fleet started; the down engine's pod has been
            // crash-looping for five minutes.
            let pod_created = if crash {
                now - 300.0
            } else {
                now - t.creating - t.starting
            };
            let prior = (spec.scenario == Scenario::KvPressure).then_some(PriorRun {
                reason: "OOMKilled",
                exit_code: 137,
                started: now - 3_600.0,
                finished: pod_created + t.creating - 1.0,
            });
            let name = spec.pod.clone();
            let node = plan.nodes.get(spec.node).map(|n| n.name.clone());
            self.add_pod(index, engine, &hash, name, pod_created, crash, prior);
            if let Some(pod) = self.pods.last_mut() {
                pod.scheduled = Some(pod_created);
                pod.obj["spec"]["nodeName"] = node.unwrap_or_default().into();
                if !crash {
                    // The engine process is already serving: adopt it (and its whole log)
                    // without a restart.
                    pod.engine_up = true;
                    pod.engine_log = Some(EngineLog {
                        from: 0,
                        until: None,
                        instance: 0,
                        since: f64::NEG_INFINITY,
                    });
                }
            }
        }

        let uid = self.next_uid();
        let rv = self.bump();
        let meta = objects::meta(model.deployment, &ns, &uid, created, rv);
        let cluster_ip = format!("10.96.{}.{}", 10 + index / 250, 10 + index % 250);
        let routing = self
            .cfg
            .routing
            .get(model.deployment)
            .copied()
            .unwrap_or_default();
        match routing {
            ModelRouting::Service => self.services.push(objects::service(
                meta,
                &cluster_ip,
                objects::routing_labels(model),
            )),
            ModelRouting::ServiceOnReplicaSetLabels => self.services.push(objects::service(
                meta,
                &cluster_ip,
                objects::selector_labels(model),
            )),
            ModelRouting::InferencePool => self.pools.push(objects::inference_pool(
                model.deployment,
                meta,
                objects::routing_labels(model),
            )),
        }
        let uid = self.next_uid();
        let rv = self.bump();
        let replicas = engines.len();
        self.hpas.push(objects::hpa(
            model.deployment,
            objects::meta(model.deployment, &ns, &uid, created, rv),
            replicas,
            replicas,
        ));
        let uid = self.next_uid();
        let rv = self.bump();
        self.pdbs.push(objects::pdb(
            model,
            objects::meta(model.deployment, &ns, &uid, created, rv),
        ));
        if self.cfg.keda {
            let uid = self.next_uid();
            let rv = self.bump();
            self.scaled_objects.push(objects::scaled_object(
                model,
                objects::meta(model.deployment, &ns, &uid, created, rv),
                replicas,
            ));
        }
    }

    fn container_of(&self, engine: usize) -> Value {
        self.slots.get(engine).map_or(Value::Null, |slot| {
            objects::container(&slot.spec, slot.port, self.version, slot.tuning)
        })
    }

    fn add_replica_set(&mut self, deployment: usize, hash: &str, replicas: usize, created: f64) {
        let Some(d) = self.deployments.get(deployment) else {
            return;
        };
        let model = d.model;
        let template = d.obj["spec"]["template"].clone();
        let owner = objects::owner(
            "apps/v1",
            "Deployment",
            model.deployment,
            d.obj["metadata"]["uid"].as_str().unwrap_or(""),
        );
        let name = format!("{}-{hash}", model.deployment);
        let uid = self.next_uid();
        let rv = self.bump();
        let mut meta = objects::meta(&name, &self.cfg.namespace, &uid, created, rv);
        let revision = self
            .replica_sets
            .iter()
            .filter(|(d, _, _)| *d == deployment)
            .count()
            + 1;
        meta["annotations"] = json!({"deployment.kubernetes.io/revision": revision.to_string()});
        let mut rs = objects::replica_set(model, hash, replicas, meta, owner, &template);
        objects::restyle_labels(&mut rs, self.cfg.labels);
        self.replica_sets.push((deployment, hash.to_owned(), rs));
    }

    /// Create a pod object for `engine` in the ReplicaSet `hash` of `deployment`.
    #[allow(clippy::too_many_arguments)]
    fn add_pod(
        &mut self,
        deployment: usize,
        engine: usize,
        hash: &str,
        name: String,
        created: f64,
        crash: bool,
        prior: Option<PriorRun>,
    ) {
        let Some(d) = self.deployments.get(deployment) else {
            return;
        };
        let mut labels = d.obj["spec"]["template"]["metadata"]["labels"].clone();
        labels[objects::HASH_LABEL] = hash.into();
        let annotations = d.obj["spec"]["template"]["metadata"]["annotations"].clone();
        let rs_name = format!("{}-{hash}", d.model.deployment);
        let rs_uid = self
            .replica_sets
            .iter()
            .find(|(_, h, _)| h == hash)
            .and_then(|(_, _, rs)| rs["metadata"]["uid"].as_str())
            .unwrap_or("")
            .to_owned();
        let uid = self.next_uid();
        let rv = self.bump();
        let mut meta = objects::meta(&name, &self.cfg.namespace, &uid, created, rv);
        if annotations.is_object() {
            meta["annotations"] = annotations;
        }
        let owner = objects::owner("apps/v1", "ReplicaSet", &rs_name, &rs_uid);
        let obj = objects::pod(meta, labels, owner, self.container_of(engine));
        self.pods.push(PodRec {
            obj,
            engine,
            deployment,
            hash: hash.to_owned(),
            created,
            scheduled: None,
            deleting: None,
            crash,
            prior,
            log: Vec::new(),
            previous_log: Vec::new(),
            logged_run: None,
            startup_logged: false,
            engine_up: false,
            engine_log: None,
            routed: None,
            emitted: Emitted::default(),
        });
    }

    /// A new pod name in the ReplicaSet `hash` of a deployment.
    fn new_pod_name(&mut self, deployment: &str, hash: &str) -> String {
        loop {
            let suffix = crate::fleet::k8s_suffix(&mut self.names);
            let name = format!("{deployment}-{hash}-{suffix}");
            if !self.pods.iter().any(|p| pod_name(p) == name) {
                return name;
            }
        }
    }

    fn bump(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn next_uid(&mut self) -> String {
        self.uids += 1;
        objects::uid(self.uids)
    }

    /// Advertise `ip` as the pod IP of `engine`'s pods (the API server's proxy still reaches
    /// the engine on 127.0.0.1).
    pub fn set_pod_ip(&mut self, engine: usize, ip: &str) {
        if let Some(slot) = self.slots.get_mut(engine) {
            slot.pod_ip = ip.to_owned();
        }
        self.changed();
    }

    /// Something changed outside the controllers: run them at the next chance.
    fn changed(&mut self) {
        self.last_tick = f64::NEG_INFINITY;
    }

    /// Names of the pods (not being deleted) of `engine`.
    pub fn pod_object(&self, name: &str) -> Option<Value> {
        self.pods
            .iter()
            .find(|p| pod_name(p) == name)
            .map(|p| p.obj.clone())
    }

    pub fn pods_of(&self, engine: usize) -> Vec<String> {
        self.pods
            .iter()
            .filter(|p| p.engine == engine && p.deleting.is_none())
            .map(|p| pod_name(p).to_owned())
            .collect()
    }

    /// Objects of a kind in a namespace (all namespaces for `None`) matching both selectors,
    /// as a list object with `metadata.resourceVersion`; `limit`/`continue` page through it.
    pub fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        limit: Option<usize>,
        continue_from: Option<&str>,
    ) -> Result<Value, ApiError> {
        check_fields(kind, fields)?;
        let start = match continue_from.filter(|c| !c.is_empty()) {
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request("continue key is not valid"))?,
            None => 0,
        };
        let matching: Vec<&Value> = self
            .objects(kind)
            .into_iter()
            .filter(|o| namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns))
            .filter(|o| selects(o, labels, fields))
            .collect();
        let end = limit
            .filter(|l| *l > 0)
            .map_or(matching.len(), |l| (start + l).min(matching.len()));
        let items: Vec<Value> = matching
            .get(start.min(end)..end)
            .unwrap_or_default()
            .iter()
            .map(|o| (*o).clone())
            .collect();
        let mut metadata = json!({"resourceVersion": self.rv.to_string()});
        if end < matching.len() {
            metadata["continue"] = end.to_string().into();
            metadata["remainingItemCount"] = (matching.len() - end).into();
        }
        Ok(json!({
            "kind": kind.list_kind(),
            "apiVersion": kind.api_version(),
            "metadata": metadata,
            "items": items,
        }))
    }

    /// One object.
    pub fn get(&self, kind: Kind, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
        self.objects(kind)
            .into_iter()
            .find(|o| {
                o["metadata"]["name"] == name
                    && namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns)
            })
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind.plural(), name))
    }

    pub(crate) fn objects(&self, kind: Kind) -> Vec<&Value> {
        match kind {
            Kind::Pod => self.pods.iter().map(|p| &p.obj).collect(),
            Kind::Node => self.nodes.iter().collect(),
            Kind::Namespace => self.namespaces.iter().collect(),
            Kind::Service => self.services.iter().collect(),
            Kind::Event => self.events.iter().map(|e| &e.obj).collect(),
            Kind::Deployment => self.deployments.iter().map(|d| &d.obj).collect(),
            Kind::ReplicaSet => self.replica_sets.iter().map(|(_, _, rs)| rs).collect(),
            Kind::Hpa => self.hpas.iter().collect(),
            Kind::Pdb => self.pdbs.iter().collect(),
            Kind::EndpointSlice => self.endpoint_slices.iter().collect(),
            Kind::InferencePool => self.pools.iter().collect(),
            Kind::ScaledObject => self.scaled_objects.iter().collect(),
        }
    }

    /// Record an event, or count one more occurrence of the same (object, reason, message).
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        involved: &Involved,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        host: Option<&str>,
        count: u32,
        at: f64,
    ) {
        if count == 0 {
            return;
        }
        let key = (involved.uid.clone(), reason.to_owned(), message.to_owned());
        let rv = self.bump();
        if let Some(existing) = self.events.iter_mut().rev().find(|e| e.key == key) {
            let before = existing.obj["count"].as_u64().unwrap_or(1);
            existing.obj["count"] = (before + u64::from(count)).into();
            existing.obj["lastTimestamp"] = objects::time(at).into();
            existing.obj["metadata"]["resourceVersion"] = rv.to_string().into();
            return;
        }
        let uid = self.next_uid();
        let name = format!(
            "{}.{:016x}",
            involved.name,
            self.uids.wrapping_mul(0x9E37_79B9)
        );
        let mut obj = objects::event(
            &name, involved, type_, reason, message, component, host, at, rv, &uid,
        );
        obj["count"] = count.into();
        self.events.push(EventRec { key, obj });
        if self.events.len() > self.cfg.event_capacity {
            let excess = self.events.len() - self.cfg.event_capacity;
            self.events.drain(..excess);
        }
    }

    /// What an event about `pod` names.
    fn involved_pod(&self, pod: &PodRec, container: bool) -> Involved {
        Involved {
            kind: "Pod",
            api_version: "v1",
            name: pod_name(pod).to_owned(),
            namespace: self.cfg.namespace.clone(),
            uid: pod.obj["metadata"]["uid"].as_str().unwrap_or("").to_owned(),
            field_path: container
                .then(|| format!("spec.containers{{{}}}", crate::fleet::CONTAINER)),
        }
    }
}

fn pod_name(p: &PodRec) -> &str {
    p.obj["metadata"]["name"].as_str().unwrap_or("")
}

/// 400 for a field selector naming a field the kind cannot be selected by.
pub(crate) fn check_fields(kind: Kind, fields: &FieldSelector) -> Result<(), ApiError> {
    for r in &fields.requirements {
        let allowed = r.field == "metadata.name"
            || r.field == "metadata.namespace"
            || kind.selectable_fields().contains(&r.field.as_str());
        if !allowed {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {}",
                r.field
            )));
        }
    }
    Ok(())
}

/// Whether both selectors select `obj`.
pub(crate) fn selects(obj: &Value, labels: &LabelSelector, fields: &FieldSelector) -> bool {
    labels.matches(&label_map(obj)) && fields.matches(|f| Ok(field_value(obj, f))).unwrap_or(false)
}

fn label_map(obj: &Value) -> BTreeMap<String, String> {
    obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// A field of an object for field selectors (`spec.nodeName`); booleans as `true`/`false`.
fn field_value(obj: &Value, field: &str) -> Option<String> {
    let path = if field == "source" {
        "/source/component".to_owned()
    } else {
        format!("/{}", field.replace('.', "/"))
    };
    let value = match obj.pointer(&path) {
        Some(value) => value,
        // An unset boolean reads as false, as the API server's field labels do.
        None if field == "spec.unschedulable" => return Some("false".to_owned()),
        None => return None,
    };
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
