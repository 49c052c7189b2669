//! PURE. Kubernetes API objects → [`PodInfo`].

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::endpoint::{EndpointDefaults, MetricsEndpoint, NamedPort};
use super::lines::LineRing;
use super::pod::{EnvVar, Owner, PodInfo, PodKey, PodPhase, Termination};
use super::recognize::{EngineKind, engine_container};
use super::vllm_args::VllmArgs;
use crate::clock::Ts;

/// What the conversion needs besides the pod.
#[derive(Debug, Clone, Copy)]
pub struct ConvertOptions<'a> {
    /// The context the pod was found through.
    pub context: &'a str,
    pub endpoint: &'a EndpointDefaults,
    /// The label whose value `true` puts a pod in rotation (`None`: not tracked).
    pub routing_label: Option<&'a str>,
    /// Capacity of the event and log buffers.
    pub event_lines: usize,
    pub log_lines: usize,
}

/// Seconds since the Unix epoch of an API timestamp.
pub fn ts(time: &Time) -> Ts {
    time.0.as_millisecond() as f64 / 1000.0
}

/// The pod as kvtop sees it; `None` for an object without a name.
pub fn pod_info(pod: &Pod, opts: &ConvertOptions<'_>) -> Option<PodInfo> {
    let meta = &pod.metadata;
    let name = meta.name.clone().filter(|n| !n.is_empty())?;
    let namespace = meta
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let containers: &[Container] = spec.map(|s| s.containers.as_slice()).unwrap_or_default();

    let parsed: Vec<VllmArgs> = containers
        .iter()
        .map(|c| {
            VllmArgs::parse(
                c.command.as_deref().unwrap_or_default(),
                c.args.as_deref().unwrap_or_default(),
            )
        })
        .collect();
    let running = engine_container(containers);
    let index = parsed
        .iter()
        .position(|a| a.found)
        .or(running.map(|(i, _, _)| i))
        .or_else(|| containers.iter().position(|c| c.name == "vllm"))
        .unwrap_or(0);
    let container = containers.get(index);
    let args = parsed.get(index).cloned().unwrap_or_default();

    let container_status: Option<&ContainerStatus> = container.and_then(|c| {
        status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|all| all.iter().find(|cs| cs.name == c.name))
    });

    let ports: Vec<NamedPort> = container
        .and_then(|c| c.ports.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some(NamedPort {
                name: p.name.clone(),
                port: u16::try_from(p.container_port).ok()?,
            })
        })
        .collect();
    let annotations = meta.annotations.clone().unwrap_or_default();
    let endpoint = MetricsEndpoint::choose(
        &annotations,
        &ports,
        status.and_then(|s| s.pod_ip.as_deref()),
        opts.endpoint,
    );

    let env = container
        .and_then(|c| c.env.as_ref())
        .into_iter()
        .flatten()
        .filter(|e| EnvVar::is_relevant(&e.name))
        .map(|e| EnvVar {
            name: e.name.clone(),
            value: if e.value_from.is_some() {
                None
            } else {
                Some(e.value.clone().unwrap_or_default())
            },
        })
        .collect();

    let labels: Vec<(String, String)> = meta
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let routed = opts.routing_label.map(|key| {
        labels
            .iter()
            .any(|(k, v)| k == key && v.eq_ignore_ascii_case("true"))
    });

    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let waiting = container_status
        .and_then(|cs| cs.state.as_ref())
        .and_then(|s| s.waiting.as_ref());
    let last_termination = container_status
        .and_then(|cs| cs.last_state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .map(|t| Termination {
            reason: t.reason.clone().unwrap_or_else(|| "Terminated".to_owned()),
            exit_code: t.exit_code,
            finished_at: t.finished_at.as_ref().map(ts),
            message: t.message.clone(),
        });

    let mut info = PodInfo {
        key: PodKey {
            context: opts.context.to_owned(),
            namespace,
            name,
        },
        uid: meta.uid.clone().unwrap_or_default(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref()).unwrap_or("")),
        ready,
        terminating: meta.deletion_timestamp.is_some(),
        node: spec.and_then(|s| s.node_name.clone()),
        created_at: meta.creation_timestamp.as_ref().map(ts),
        started_at: status.and_then(|s| s.start_time.as_ref()).map(ts),
        container: container.map(|c| c.name.clone()),
        engine: running.map_or(EngineKind::Vllm, |(_, kind, _)| kind),
        restarts: container_status.map_or(0, |cs| u32::try_from(cs.restart_count).unwrap_or(0)),
        waiting_reason: waiting.and_then(|w| w.reason.clone()),
        waiting_message: waiting.and_then(|w| w.message.clone()),
        last_termination,
        owner: owner(pod),
        labels,
        routed,
        routing: None,
        endpoint,
        args,
        env,
        events: LineRing::new(opts.event_lines),
        logs: LineRing::new(opts.log_lines),
        facts: Vec::new(),
        status_reasons: Vec::new(),
    };
    info.refresh();
    Some(info)
}

/// The controlling owner; for a ReplicaSet named `DEPLOY-HASH` where `HASH` is the pod's
/// `pod-template-hash` label, the Deployment `DEPLOY` as well.
fn owner(pod: &Pod) -> Option<Owner> {
    let refs = pod.metadata.owner_references.as_ref()?;
    let owner = refs
        .iter()
        .find(|r| r.controller == Some(true))
        .or_else(|| refs.first())?;
    let deployment = if owner.kind == "ReplicaSet" {
        pod.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash"))
            .and_then(|hash| owner.name.strip_suffix(hash.as_str()))
            .and_then(|prefix| prefix.strip_suffix('-'))
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
    } else {
        None
    };
    Some(Owner {
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        deployment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_model::endpoint::PortSource;

    fn pod_json() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "vllm-llama-8b-6d4f9-x7k2p",
                "namespace": "llm",
                "uid": "u-1",
                "resourceVersion": "42",
                "creationTimestamp": "2025-01-01T00:00:00Z",
                "labels": {
                    "app.kubernetes.io/name": "vllm",
                    "pod-template-hash": "6d4f9",
                    "kvtop.dev/serving": "true"
                },
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "vllm-llama-8b-6d4f9", "uid": "rs-1", "controller": true
                }]
            },
            "spec": {
                "nodeName": "gpu-node-00",
                "containers": [
                    {"name": "proxy", "image": "envoy", "ports": [{"name": "http", "containerPort": 15001}]},
                    {
                        "name": "engine",
                        "image": "vllm/vllm-openai:v0.10.1",
                        "command": ["vllm", "serve"],
                        "args": ["meta-llama/Llama-3.1-8B-Instruct", "--enable-chunked-prefill",
                                 "--max-num-batched-tokens", "16384"],
                        "ports": [{"name": "http", "containerPort": 8000}],
                        "env": [
                            {"name": "OMP_NUM_THREADS", "value": "32"},
                            {"name": "NCCL_DEBUG", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                            {"name": "HF_TOKEN", "value": "hf_secret"}
                        ]
                    }
                ]
            },
            "status": {
                "phase": "Running",
                "podIP": "10.0.0.7",
                "startTime": "2025-01-01T00:00:10Z",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{
                    "name": "engine", "image": "vllm/vllm-openai:v0.10.1", "imageID": "",
                    "ready": false, "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                    "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                                  "finishedAt": "2025-01-01T00:05:00Z"}}
                }]
            }
        })
    }

    fn convert(value: serde_json::Value) -> Option<PodInfo> {
        let pod: Pod = serde_json::from_value(value).ok()?;
        let defaults = EndpointDefaults::default();
        pod_info(
            &pod,
            &ConvertOptions {
                context: "prod",
                endpoint: &defaults,
                routing_label: Some("kvtop.dev/serving"),
                event_lines: 10,
                log_lines: 20,
            },
        )
    }

    #[test]
    fn a_crashlooping_pod_reads_fully() {
        let Some(info) = convert(pod_json()) else {
            panic!("the pod did not convert");
        };
        assert_eq!(info.key.to_string(), "prod/llm/vllm-llama-8b-6d4f9-x7k2p");
        assert_eq!(info.phase, PodPhase::Running);
        assert!(!info.ready);
        assert_eq!(info.container.as_deref(), Some("engine"));
        assert_eq!(info.restarts, 4);
        assert_eq!(info.waiting_reason.as_deref(), Some("CrashLoopBackOff"));
        let last = info
            .last_termination
            .clone()
            .unwrap_or_else(|| panic!("no termination"));
        assert_eq!((last.reason.as_str(), last.exit_code), ("OOMKilled", 137));
        // 2025-01-01T00:05:00Z
        assert_eq!(last.finished_at, Some(1_735_689_900.0));
        let owner = info.owner.clone().unwrap_or_else(|| panic!("no owner"));
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.deployment.as_deref(), Some("vllm-llama-8b"));
        assert_eq!(info.node.as_deref(), Some("gpu-node-00"));
        assert_eq!(info.routed, Some(true));
        assert_eq!(
            info.endpoint.port, 8000,
            "the vLLM container's port, not the sidecar's"
        );
        assert_eq!(info.endpoint.port_source, PortSource::NamedHttp);
        assert_eq!(
            info.endpoint.direct_url().as_deref(),
            Some("http://10.0.0.7:8000/metrics")
        );
        assert_eq!(info.args.max_num_batched_tokens, Some(16_384));
        assert_eq!(info.args.enable_chunked_prefill, Some(true));
        assert_eq!(info.env.len(), 2, "HF_TOKEN is not kept");
        assert_eq!(info.events.capacity(), 10);
        assert_eq!(info.logs.capacity(), 20);

        let facts = info.facts.clone();
        let fact = |k: &str| facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(fact("config.max_num_batched_tokens"), Some("16384"));
        assert_eq!(fact("config.enable_chunked_prefill"), Some("true"));
        assert_eq!(
            fact("config.model"),
            Some("meta-llama/Llama-3.1-8B-Instruct")
        );
        assert_eq!(fact("env.OMP_NUM_THREADS"), Some("32"));
        assert_eq!(
            fact("env.NCCL_DEBUG"),
            None,
            "value from a config map is unknown"
        );
        assert_eq!(fact("pod.restarts"), Some("4"));
        assert_eq!(fact("pod.last_exit_code"), Some("137"));
        assert_eq!(
            info.status_reasons,
            ["Running", "CrashLoopBackOff", "OOMKilled", "NotReady"]
        );
        assert_eq!(info.marker(), Some("CrashLoop"));
    }

    #[test]
    fn the_engine_container_is_found_by_its_image_when_no_command_says_so() {
        let info = convert(serde_json::json!({
            "metadata": {"name": "llama-predictor-7c9d-h2k", "namespace": "kserve-test",
                         "labels": {"serving.kserve.io/inferenceservice": "llama"}},
            "spec": {"containers": [
                {"name": "queue-proxy", "image": "gcr.io/knative-releases/queue:v1.15",
                 "ports": [{"name": "http-usermetric", "containerPort": 9091}]},
                {"name": "kserve-container", "image": "vllm/vllm-openai:v0.10.1",
                 "args": ["--model", "/mnt/models", "--port", "8080"],
                 "ports": [{"name": "http", "containerPort": 8080}]}
            ]},
            "status": {"phase": "Running", "podIP": "10.0.0.9"}
        }))
        .unwrap_or_else(|| panic!("did not convert"));
        assert_eq!(info.container.as_deref(), Some("kserve-container"));
        assert_eq!(info.engine, EngineKind::Vllm);
        assert_eq!(info.endpoint.port, 8080);

        let sglang = convert(serde_json::json!({
            "metadata": {"name": "sglang-0", "namespace": "ns"},
            "spec": {"containers": [{"name": "server", "image": "lmsysorg/sglang:v0.4.9",
                "command": ["python3", "-m", "sglang.launch_server", "--port", "30000"]}]}
        }))
        .unwrap_or_else(|| panic!("did not convert"));
        assert_eq!(sglang.engine, EngineKind::Sglang);
        assert_eq!(sglang.container.as_deref(), Some("server"));
    }

    #[test]
    fn a_bare_pending_pod_converts_with_unknowns() {
        let info = convert(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": []}
        }))
        .unwrap_or_else(|| panic!("did not convert"));
        assert_eq!(info.phase, PodPhase::Unknown);
        assert_eq!(info.container, None);
        assert_eq!(info.endpoint.direct_url(), None);
        assert_eq!(info.owner, None);
        assert_eq!(info.routed, Some(false));
        assert!(!info.args.found);
        assert!(convert(serde_json::json!({"metadata": {}})).is_none());
    }

    #[test]
    fn text_buffers_survive_an_update_of_the_same_pod_only() {
        let Some(mut old) = convert(pod_json()) else {
            panic!("no pod");
        };
        old.logs.push("line".into());
        let Some(mut new) = convert(pod_json()) else {
            panic!("no pod");
        };
        new.keep_text_from(&mut old);
        assert_eq!(new.logs.lines(), ["line"]);
        let mut other_json = pod_json();
        other_json["metadata"]["uid"] = "u-2".into();
        let Some(mut replacement) = convert(other_json) else {
            panic!("no pod");
        };
        replacement.keep_text_from(&mut new);
        assert!(replacement.logs.is_empty());
    }
}
