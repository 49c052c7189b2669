//! PURE. The API objects of the simulated cluster, as the JSON the API server returns: nodes,
//! Deployments, ReplicaSets, pods, Services, HPAs, PDBs and events. Statuses are filled in by
//! the cluster's controllers.

use serde_json::{Value, json};

use crate::SimVersion;
use crate::fleet::{CONTAINER, EngineSpec, ModelSpec, Scenario};
use crate::logs::vllm_release;

/// Label every simulated vLLM pod carries (and the default discovery selectors include).
pub const APP_LABEL: (&str, &str) = ("app.kubernetes.io/name", "vllm");
/// The production-stack style component label.
pub(crate) const COMPONENT_LABEL: (&str, &str) = ("app.kubernetes.io/component", "serving-engine");
/// Label naming the model a pod serves (its value is the Deployment name without `vllm-`).
pub(crate) const MODEL_LABEL: &str = "model";
/// Label tying a pod to its ReplicaSet.
pub(crate) const HASH_LABEL: &str = "pod-template-hash";
/// Annotation `kubectl rollout restart` sets on the pod template.
pub(crate) const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
/// PodDisruptionBudget `minAvailable` of every Deployment (the vLLM-on-Kubernetes article's value).
pub(crate) const PDB_MIN_AVAILABLE: i64 = 2;
/// HPA target: average waiting requests per pod (the article's "pending requests 50 per pod").
pub(crate) const HPA_WAITING_TARGET: f64 = 50.0;
/// The metric the HPAs scale on.
pub(crate) const HPA_METRIC: &str = "vllm:num_requests_waiting";

/// RFC 3339 with whole seconds, as `metav1.Time` is written.
pub fn time(at: f64) -> String {
    k8s_openapi::jiff::Timestamp::from_second(at.floor() as i64)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// RFC 3339 with nanoseconds, as log timestamps are written.
pub(crate) fn time_nanos(at: f64) -> String {
    let nanos = (at * 1e9) as i128;
    k8s_openapi::jiff::Timestamp::from_nanosecond(nanos)
        .map(|t| format!("{t:.9}"))
        .unwrap_or_default()
}

/// A UID derived from a counter (deterministic, unique within the simulation).
pub fn uid(n: u64) -> String {
    let a = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) as u16,
        (a >> 4) & 0xfff,
        n & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

/// The value of the `model` label of a model's pods.
pub fn model_label(model: &ModelSpec) -> &'static str {
    model
        .deployment
        .strip_prefix("vllm-")
        .unwrap_or(model.deployment)
}

/// Labels selecting a model's pods (the Deployment's and ReplicaSets' selector).
pub(crate) fn selector_labels(model: &ModelSpec) -> Value {
    json!({
        APP_LABEL.0: APP_LABEL.1,
        MODEL_LABEL: model_label(model),
    })
}

/// Labels of a model's pod template: the selector labels and the component label.
pub(crate) fn template_labels(model: &ModelSpec) -> Value {
    json!({
        APP_LABEL.0: APP_LABEL.1,
        COMPONENT_LABEL.0: COMPONENT_LABEL.1,
        MODEL_LABEL: model_label(model),
    })
}

/// Labels a model's Service (or InferencePool) selects: the ReplicaSet's selector labels and
/// the component label. production-stack labels its engine pods
/// `app.kubernetes.io/component: serving-engine` and its Services select engines by labels
/// beyond the Deployment's own selector; the component label is such a label here, so the
/// Service requires one label the ReplicaSet does not, and removing it takes the pod out of
/// routing while it stays owned (the shape kvtop's drain looks for on a real cluster).
pub(crate) fn routing_labels(model: &ModelSpec) -> Value {
    let mut labels = selector_labels(model);
    labels[COMPONENT_LABEL.0] = COMPONENT_LABEL.1.into();
    labels
}

/// How the simulated workloads are labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelStyle {
    /// `app.kubernetes.io/name: vllm` and production-stack's component label (the default
    /// discovery selectors find the pods).
    #[default]
    Recommended,
    /// Only `app: vllm` (and the model and routing labels), as in vLLM's own Kubernetes guide:
    /// no default selector matches, the image says what the pods run.
    PlainApp,
}

/// Rewrite `obj`'s labels and selectors to `style` (objects are built in the recommended style).
pub(crate) fn restyle_labels(obj: &mut Value, style: LabelStyle) {
    if style == LabelStyle::Recommended {
        return;
    }
    let maps = [
        "/metadata/labels",
        "/spec/selector",
        "/spec/selector/matchLabels",
        "/spec/template/metadata/labels",
    ];
    for path in maps {
        let Some(Value::Object(map)) = obj.pointer_mut(path) else {
            continue;
        };
        if map.remove(APP_LABEL.0).is_some() {
            map.insert("app".to_owned(), APP_LABEL.1.into());
        }
        map.remove(COMPONENT_LABEL.0);
    }
}

/// What differs between the simulated engines' containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// The parameters the engine runs with.
    Plain,
    /// Also `OMP_NUM_THREADS=32` (rule T1.5 / T1.P1 material).
    ManyOmpThreads,
    /// Chunked prefill with a 16k token budget that does not fit: the engine crashes at
    /// start-up with a CUDA OOM (rule T1.P3 material).
    OversizedChunkedPrefill,
}

/// Token budget of the engine that cannot start.
pub(crate) const OVERSIZED_BATCHED_TOKENS: u64 = 16_384;

/// How each engine of a fleet of `engines` is tuned: the down engine has the oversized
/// chunked-prefill budget, the first healthy one too many OpenMP threads.
pub(crate) fn tuning_for(spec: &EngineSpec, engines: usize) -> Tuning {
    let first_healthy =
        (0..engines).find(|i| crate::fleet::scenario_for(*i, engines) == Scenario::Healthy);
    if spec.scenario == Scenario::Down {
        Tuning::OversizedChunkedPrefill
    } else if Some(spec.index) == first_healthy {
        Tuning::ManyOmpThreads
    } else {
        Tuning::Plain
    }
}

/// The vLLM container of an engine's pod.
pub fn container(spec: &EngineSpec, port: u16, version: SimVersion, tuning: Tuning) -> Value {
    let p = &spec.params;
    let batched = match tuning {
        Tuning::OversizedChunkedPrefill => OVERSIZED_BATCHED_TOKENS,
        _ => u64::from(p.max_num_batched_tokens),
    };
    let mut args: Vec<String> = vec![
        spec.model.id.to_owned(),
        "--port".into(),
        port.to_string(),
        "--max-model-len".into(),
        p.max_model_len.to_string(),
        "--gpu-memory-utilization".into(),
        p.gpu_memory_utilization.to_string(),
        "--max-num-seqs".into(),
        p.max_num_seqs.to_string(),
        "--tensor-parallel-size".into(),
        "1".into(),
        "--enable-prefix-caching".into(),
    ];
    if tuning == Tuning::OversizedChunkedPrefill {
        args.push("--enable-chunked-prefill".into());
    }
    args.extend(["--max-num-batched-tokens".to_owned(), batched.to_string()]);
    let mut env = vec![
        json!({"name": "HF_HOME", "value": "/models"}),
        json!({"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}),
        json!({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}),
    ];
    if tuning == Tuning::ManyOmpThreads {
        env.push(json!({"name": "OMP_NUM_THREADS", "value": "32"}));
    }
    json!({
        "name": CONTAINER,
        "image": format!("vllm/vllm-openai:v{}", vllm_release(version)),
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm", "serve"],
        "args": args,
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": env,
        "resources": {
            "limits": {"nvidia.com/gpu": "1"},
            "requests": {"nvidia.com/gpu": "1", "cpu": "8", "memory": "64Gi"}
        },
        // With the fields the API server defaults (scheme, timeout, thresholds) filled in.
        "readinessProbe": {"httpGet": {"path": "/v1/models", "port": "http", "scheme": "HTTP"},
            "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/health", "port": "http", "scheme": "HTTP"},
            "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
    })
}

/// A node with `gpus` GPUs of `gpu_product`.
pub fn node(name: &str, uid: &str, gpus: usize, gpu_product: &str, created: f64, rv: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid,
            "resourceVersion": rv.to_string(),
            "creationTimestamp": time(created),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": gpu_product.replace(' ', "-"),
                "nvidia.com/gpu.count": gpus.to_string(),
            }
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "224", "memory": "2113510400Ki", "nvidia.com/gpu": gpus.to_string(), "pods": "110"},
            "allocatable": {"cpu": "223", "memory": "2112461824Ki", "nvidia.com/gpu": gpus.to_string(), "pods": "110"},
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": time(created), "lastTransitionTime": time(created)
            }],
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name}
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.33.1", "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.8.0-60-generic", "osImage": "Ubuntu 24.04.2 LTS",
                "operatingSystem": "linux", "architecture": "amd64",
                "machineID": uid.replace('-', ""), "systemUUID": uid, "bootID": uid,
                "kubeProxyVersion": "v1.33.1",
            }
        }
    })
}

/// Common metadata of a namespaced object.
pub fn meta(name: &str, namespace: &str, uid: &str, created: f64, rv: u64) -> Value {
    json!({
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": rv.to_string(),
        "creationTimestamp": time(created),
    })
}

/// An owner reference to a controller.
pub fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!([{
        "apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true
    }])
}

/// A model's Deployment (one GPU per pod, so rollouts replace one pod at a time: maxSurge 0).
pub fn deployment(model: &ModelSpec, replicas: usize, meta: Value, template: &Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector_labels(model)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": template,
        },
        "status": {}
    })
}

/// A pod template of a model; `container` is taken from the first engine's pod and stands for
/// the model's engines (the simulated engines' ports differ, which a real template cannot).
pub(crate) fn pod_template(model: &ModelSpec, container: Value) -> Value {
    json!({
        "metadata": {"labels": template_labels(model)},
        "spec": {"containers": [container], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30}
    })
}

/// A ReplicaSet of a Deployment for one template hash.
pub(crate) fn replica_set(
    model: &ModelSpec,
    hash: &str,
    replicas: usize,
    mut meta: Value,
    owner_ref: Value,
    template: &Value,
) -> Value {
    meta["ownerReferences"] = owner_ref;
    let mut labels = selector_labels(model);
    labels[HASH_LABEL] = hash.into();
    meta["labels"] = labels.clone();
    let mut template = template.clone();
    template["metadata"]["labels"][HASH_LABEL] = hash.into();
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
        "status": {"replicas": 0}
    })
}

/// A pod of an engine (status filled in later).
pub fn pod(meta: Value, labels: Value, owner_ref: Value, container: Value) -> Value {
    let mut meta = meta;
    meta["labels"] = labels;
    meta["ownerReferences"] = owner_ref;
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"}
    })
}

/// A model's Service selecting `selector`.
pub fn service(meta: Value, cluster_ip: &str, selector: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip,
            "clusterIPs": [cluster_ip],
            "selector": selector,
            "ports": [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}],
            "sessionAffinity": "None"
        }
    })
}

/// A model's Gateway API Inference Extension pool (v1): its pods that carry `selector`, on
/// the engines' port, picked by an endpoint picker named after the Deployment.
pub fn inference_pool(deployment: &str, meta: Value, selector: Value) -> Value {
    json!({
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": selector},
            "targetPorts": [{"number": 8000}],
            "endpointPickerRef": {"name": format!("{deployment}-epp"), "port": {"number": 9002}}
        }
    })
}

/// A KEDA ScaledObject scaling a model's Deployment on its waiting requests through
/// Prometheus, having adopted the model's HPA (`transfer-hpa-ownership`, the HPA keeps its
/// name). Ready; `Active` while requests wait (the controllers update it).
pub fn scaled_object(model: &ModelSpec, meta: Value, replicas: usize) -> Value {
    let mut meta = meta;
    meta["annotations"] = json!({"scaledobject.keda.sh/transfer-hpa-ownership": "true"});
    json!({
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"name": model.deployment},
            "minReplicaCount": replicas,
            "maxReplicaCount": replicas,
            "advanced": {"horizontalPodAutoscalerConfig": {"name": model.deployment}},
            "triggers": [{
                "type": "prometheus",
                "metadata": {
                    "serverAddress": "http://prometheus.monitoring:9090",
                    "query": format!("sum({HPA_METRIC}{{model_name=\"{}\"}})", model.id),
                    "threshold": format_quantity(HPA_WAITING_TARGET),
                }
            }]
        },
        "status": {
            "scaleTargetKind": "apps/v1.Deployment",
            "hpaName": model.deployment,
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "ScaledObjectReady", "message": "ScaledObject is defined correctly and is ready for scaling"},
                {"type": "Active", "status": "False", "reason": "ScalerNotActive", "message": "Scaling is not performed because triggers are not active"},
                {"type": "Fallback", "status": "False", "reason": "NoFallbackFound", "message": "No fallback was found"},
            ]
        }
    })
}

/// A model's HPA on average waiting requests per pod; `max` = the replicas the GPUs allow.
pub fn hpa(deployment: &str, meta: Value, min: usize, max: usize) -> Value {
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
            "minReplicas": min,
            "maxReplicas": max,
            "metrics": [{
                "type": "Pods",
                "pods": {
                    "metric": {"name": HPA_METRIC},
                    "target": {"type": "AverageValue", "averageValue": format_quantity(HPA_WAITING_TARGET)}
                }
            }]
        },
        "status": {"desiredReplicas": 0}
    })
}

/// A model's PDB (`minAvailable` [`PDB_MIN_AVAILABLE`]).
pub fn pdb(model: &ModelSpec, meta: Value) -> Value {
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {
            "minAvailable": PDB_MIN_AVAILABLE,
            "selector": {"matchLabels": selector_labels(model)}
        },
        "status": {"currentHealthy": 0, "desiredHealthy": PDB_MIN_AVAILABLE, "disruptionsAllowed": 0, "expectedPods": 0}
    })
}

/// A quantity for a value that may have a fraction: whole numbers plain, else in milli-units.
pub(crate) fn format_quantity(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{}m", (v * 1000.0).round() as i64)
    }
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Involved {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub field_path: Option<String>,
}

/// A core/v1 event.
#[allow(clippy::too_many_arguments)]
pub fn event(
    name: &str,
    involved: &Involved,
    type_: &str,
    reason: &str,
    message: &str,
    component: &str,
    host: Option<&str>,
    at: f64,
    rv: u64,
    uid: &str,
) -> Value {
    let mut involved_json = json!({
        "kind": involved.kind,
        "apiVersion": involved.api_version,
        "name": involved.name,
        "namespace": involved.namespace,
        "uid": involved.uid,
    });
    if let Some(path) = &involved.field_path {
        involved_json["fieldPath"] = path.clone().into();
    }
    let mut source = json!({"component": component});
    if let Some(host) = host {
        source["host"] = host.into();
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta(name, &involved.namespace, uid, at, rv),
        "involvedObject": involved_json,
        "reason": reason,
        "message": message,
        "type": type_,
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host.unwrap_or(""),
        "firstTimestamp": time(at),
        "lastTimestamp": time(at),
        "count": 1
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{LLAMA_8B, plan};
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;

    fn parses<T: serde::de::DeserializeOwned>(v: &Value) -> bool {
        match serde_json::from_value::<T>(v.clone()) {
            Ok(_) => true,
            Err(e) => panic!("{e}: {v}"),
        }
    }

    #[test]
    fn every_object_deserializes_as_its_k8s_type() {
        let fleet = plan(3, 8, SimVersion::V1, 1);
        let spec = &fleet.engines[2];
        let c = container(spec, 41000, SimVersion::V1, tuning_for(spec, 3));
        let m = meta("x", "llm", &uid(1), 1.7e9, 5);
        let template = pod_template(&LLAMA_8B, c.clone());
        assert!(parses::<Node>(&node(
            "gpu-node-00",
            &uid(2),
            8,
            "NVIDIA H100 80GB HBM3",
            1.7e9,
            1
        )));
        assert!(parses::<Deployment>(&deployment(
            &LLAMA_8B,
            2,
            m.clone(),
            &template
        )));
        let o = owner("apps/v1", "Deployment", "vllm-llama-8b", &uid(3));
        assert!(parses::<ReplicaSet>(&replica_set(
            &LLAMA_8B,
            "abcde",
            2,
            m.clone(),
            o.clone(),
            &template
        )));
        assert!(parses::<Pod>(&pod(
            m.clone(),
            template_labels(&LLAMA_8B),
            o,
            c
        )));
        assert!(parses::<Service>(&service(
            m.clone(),
            "10.96.0.10",
            routing_labels(&LLAMA_8B)
        )));
        let pool = inference_pool("vllm-llama-8b", m.clone(), routing_labels(&LLAMA_8B));
        let read = kvtop_core::kube_model::InferencePool::from_json(&pool);
        assert_eq!(
            read.map(|p| p.selector.len()),
            Some(3),
            "kvtop reads the pool's matchLabels"
        );
        assert!(parses::<HorizontalPodAutoscaler>(&hpa(
            "vllm-llama-8b",
            m.clone(),
            2,
            4
        )));
        assert!(parses::<PodDisruptionBudget>(&pdb(&LLAMA_8B, m)));
        let involved = Involved {
            kind: "Pod",
            api_version: "v1",
            name: "p".into(),
            namespace: "llm".into(),
            uid: uid(4),
            field_path: Some("spec.containers{vllm}".into()),
        };
        assert!(parses::<Event>(&event(
            "p.1",
            &involved,
            "Normal",
            "Pulled",
            "m",
            "kubelet",
            Some("n"),
            1.7e9,
            3,
            &uid(5)
        )));
    }

    #[test]
    fn the_down_engine_gets_the_oversized_budget_and_the_first_healthy_one_32_threads() {
        let fleet = plan(4, 8, SimVersion::V1, 1);
        let tunings: Vec<Tuning> = fleet.engines.iter().map(|e| tuning_for(e, 4)).collect();
        assert_eq!(
            tunings,
            [
                Tuning::Plain,
                Tuning::ManyOmpThreads,
                Tuning::Plain,
                Tuning::OversizedChunkedPrefill
            ]
        );
        let c = container(
            &fleet.engines[3],
            1,
            SimVersion::V1,
            Tuning::OversizedChunkedPrefill,
        );
        let args: Vec<&str> = c["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            args.windows(2)
                .any(|w| w == ["--max-num-batched-tokens", "16384"])
        );
        assert!(args.contains(&"--enable-chunked-prefill"));
    }

    #[test]
    fn times_and_quantities() {
        assert_eq!(time(1_735_689_600.7), "2025-01-01T00:00:00Z");
        assert_eq!(
            time_nanos(1_735_689_600.5),
            "2025-01-01T00:00:00.500000000Z"
        );
        assert_eq!(format_quantity(50.0), "50");
        assert_eq!(format_quantity(12.5), "12500m");
        assert_ne!(uid(1), uid(2));
    }
}
