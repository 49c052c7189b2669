use serde_json::{Value, json};

use super::*;
use crate::kube_model::DEFAULT_SELECTORS;

fn pod(value: Value) -> Pod {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("not a pod: {e}"))
}

/// The recognizer discovery uses with no selector configured.
fn defaults() -> Recognizer {
    Recognizer {
        selectors: DEFAULT_SELECTORS
            .iter()
            .map(|s| LabelSelector::parse(s).unwrap_or_else(|e| panic!("{e}")))
            .collect(),
        by_workload: true,
    }
}

fn recognized(value: Value) -> Option<Recognized> {
    defaults().recognize(&pod(value))
}

/// A plain Deployment as in vLLM's Kubernetes guide: `app: vllm`, the image's entry point, the
/// model in `args`.
fn plain_deployment_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "vllm-server-7d9c8b6f5-x2kqp", "namespace": "default",
            "labels": {"app": "vllm", "pod-template-hash": "7d9c8b6f5"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "vllm-server-7d9c8b6f5", "uid": "rs", "controller": true}]
        },
        "spec": {
            "containers": [{
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.10.1",
                "args": ["--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu-memory-utilization", "0.9"],
                "ports": [{"containerPort": 8000}],
                "resources": {"limits": {"nvidia.com/gpu": "1"}}
            }],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
        },
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

#[test]
fn a_plain_app_vllm_deployment_is_found_by_its_image() {
    let found = recognized(plain_deployment_pod()).unwrap_or_else(|| panic!("not found"));
    assert_eq!(found.kind, EngineKind::Vllm);
    assert_eq!(found.by, MatchedBy::Image);
    assert_eq!(found.container, Some(0));
}

#[test]
fn user_selectors_narrow_and_do_not_fall_back_to_the_image() {
    let narrow = Recognizer {
        selectors: vec![LabelSelector::parse("team=search").unwrap_or_else(|e| panic!("{e}"))],
        by_workload: false,
    };
    assert_eq!(narrow.recognize(&pod(plain_deployment_pod())), None);
    let mut labelled = plain_deployment_pod();
    labelled["metadata"]["labels"]["team"] = "search".into();
    let found = narrow
        .recognize(&pod(labelled))
        .unwrap_or_else(|| panic!("the selector matches"));
    assert_eq!((found.by, found.container), (MatchedBy::Selector, Some(0)));
}

#[test]
fn production_stack_engines_match_their_selector_and_name_the_vllm_container() {
    let found = recognized(json!({
        "metadata": {
            "name": "vllm-llama3-deployment-vllm-5b9d7c9f4-abcde", "namespace": "default",
            "labels": {
                "app.kubernetes.io/component": "serving-engine",
                "app.kubernetes.io/managed-by": "helm",
                "environment": "test", "model": "llama3", "release": "test"
            }
        },
        "spec": {"containers": [{
            "name": "vllm",
            "image": "lmcache/vllm-openai:latest",
            "command": ["/opt/venv/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                        "--host", "0.0.0.0", "--port", "8000"],
            "ports": [{"name": "container-port", "containerPort": 8000}]
        }]}
    }))
    .unwrap_or_else(|| panic!("not found"));
    assert_eq!(found.by, MatchedBy::Selector);
    assert_eq!((found.kind, found.container), (EngineKind::Vllm, Some(0)));
}

#[test]
fn llm_d_decode_pods_pick_the_vllm_container_not_the_routing_sidecar() {
    let found = recognized(json!({
        "metadata": {
            "name": "ms-llm-d-decode-6b8f7-qwz", "namespace": "llm-d",
            "labels": {"llm-d.ai/inferenceServing": "true", "llm-d.ai/model": "qwen3",
                       "llm-d.ai/role": "decode"}
        },
        "spec": {"containers": [
            {"name": "routing-proxy", "image": "ghcr.io/llm-d/llm-d-routing-sidecar:v0.2.0",
             "args": ["--port=8000", "--vllm-port=8200"], "ports": [{"containerPort": 8000}]},
            {"name": "vllm", "image": "ghcr.io/llm-d/llm-d:v0.2.0",
             "command": ["vllm", "serve"], "args": ["Qwen/Qwen3-0.6B", "--port", "8200"],
             "ports": [{"containerPort": 8200}]}
        ]}
    }))
    .unwrap_or_else(|| panic!("not found"));
    assert_eq!(found.by, MatchedBy::Selector);
    assert_eq!(found.container, Some(1));
}

#[test]
fn kserve_predictors_are_found_by_the_kserve_container_s_command() {
    let found = recognized(json!({
        "metadata": {
            "name": "llama-predictor-00001-deployment-7c9d-h2k", "namespace": "kserve-test",
            "labels": {
                "serving.kserve.io/inferenceservice": "llama",
                "component": "predictor",
                "app": "llama-predictor-00001"
            }
        },
        "spec": {"containers": [
            {"name": "kserve-container", "image": "docker.io/vllm/vllm-openai:v0.9.2",
             "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
             "args": ["--port", "8080", "--model", "/mnt/models", "--served-model-name", "llama"],
             "ports": [{"name": "h2c", "containerPort": 8080}]},
            {"name": "queue-proxy", "image": "gcr.io/knative-releases/knative.dev/serving/cmd/queue@sha256:abc",
             "ports": [{"name": "http-usermetric", "containerPort": 9091}]}
        ]}
    }))
    .unwrap_or_else(|| panic!("not found"));
    assert_eq!(found.by, MatchedBy::Command);
    assert_eq!((found.kind, found.container), (EngineKind::Vllm, Some(0)));
}

#[test]
fn aibrix_model_pods_are_found_past_their_runtime_sidecar() {
    let found = recognized(json!({
        "metadata": {
            "name": "deepseek-r1-distill-llama-8b-5f6d-k8s", "namespace": "default",
            "labels": {"model.aibrix.ai/name": "deepseek-r1-distill-llama-8b",
                       "model.aibrix.ai/port": "8000",
                       "adapter.model.aibrix.ai/enabled": "true"}
        },
        "spec": {"containers": [
            {"name": "aibrix-runtime", "image": "aibrix/runtime:v0.3.0",
             "command": ["aibrix_runtime", "--port", "8080"]},
            {"name": "vllm-openai", "image": "vllm/vllm-openai:v0.7.1",
             "command": ["python3", "-m", "vllm.entrypoints.openai.api_server",
                         "--host", "0.0.0.0", "--port", "8000",
                         "--model", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"]}
        ]}
    }))
    .unwrap_or_else(|| panic!("not found"));
    assert_eq!((found.by, found.container), (MatchedBy::Command, Some(1)));
}

fn lws_pod(worker_index: &str, args: &str) -> Value {
    json!({
        "metadata": {
            "name": format!("vllm-0{}", if worker_index == "0" { String::new() } else { format!("-{worker_index}") }),
            "namespace": "default",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "vllm",
                "leaderworkerset.sigs.k8s.io/group-index": "0",
                "leaderworkerset.sigs.k8s.io/worker-index": worker_index,
                "role": if worker_index == "0" { "leader" } else { "worker" }
            }
        },
        "spec": {"containers": [{
            "name": "vllm-leader", "image": "vllm/vllm-openai:v0.10.1",
            "command": ["sh", "-c", args]
        }]}
    })
}

#[test]
fn only_the_leader_of_a_leader_worker_set_is_an_engine() {
    let leader = recognized(lws_pod(
        "0",
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader \
         --ray_cluster_size=$(LWS_GROUP_SIZE); vllm serve meta-llama/Llama-3.1-405B-Instruct \
         --port 8080 --tensor-parallel-size 8 --pipeline-parallel-size 2",
    ))
    .unwrap_or_else(|| panic!("the leader is not found"));
    assert_eq!(leader.by, MatchedBy::Command);
    assert_eq!(
        recognized(lws_pod(
            "1",
            "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker \
             --ray_address=$(LWS_LEADER_ADDRESS)"
        )),
        None
    );
}

#[test]
fn sglang_is_recognised_as_sglang() {
    let found = recognized(json!({
        "metadata": {"name": "sglang-6c-z", "namespace": "default", "labels": {"app": "sglang"}},
        "spec": {"containers": [{
            "name": "sglang", "image": "lmsysorg/sglang:v0.4.9-cu126",
            "command": ["python3", "-m", "sglang.launch_server"],
            "args": ["--model-path", "Qwen/Qwen2.5-7B-Instruct", "--host", "0.0.0.0", "--port", "30000"]
        }]}
    }))
    .unwrap_or_else(|| panic!("not found"));
    assert_eq!(
        (found.kind, found.by),
        (EngineKind::Sglang, MatchedBy::Command)
    );
}

#[test]
fn other_pods_are_not_engines() {
    let other = |image: &str, command: Value| {
        recognized(json!({
            "metadata": {"name": "x", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": image, "command": command}]}
        }))
    };
    assert_eq!(other("nginx:1.27", Value::Null), None);
    assert_eq!(other("registry.example/novllmx:1", Value::Null), None);
    assert_eq!(other("lmcache/lmstack-router:latest", Value::Null), None);
    // LMCache's cache server ships in a vLLM image but runs something else.
    assert_eq!(
        other(
            "lmcache/vllm-openai:latest",
            json!(["lmcache_server", "0.0.0.0", "8100"])
        ),
        None
    );
    assert!(
        other(
            "lmcache/vllm-openai:latest",
            json!(["/bin/bash", "/start.sh"])
        )
        .is_some()
    );
}

#[test]
fn image_names_are_read_word_by_word() {
    let cases = [
        ("vllm/vllm-openai:v0.10.1", Some(EngineKind::Vllm)),
        ("myregistry/vllm-openai:v0.10", Some(EngineKind::Vllm)),
        (
            "registry.internal:5000/ml/vllm_rocm@sha256:0123",
            Some(EngineKind::Vllm),
        ),
        ("lmsysorg/sglang", Some(EngineKind::Sglang)),
        ("ghcr.io/acme/sglang-vllm:1", Some(EngineKind::Sglang)),
        ("vllm", Some(EngineKind::Vllm)),
        ("novllmx", None),
        ("vllm.example.com/team/server:1", None),
        ("acme/server:vllm", None),
        ("", None),
    ];
    for (image, kind) in cases {
        assert_eq!(image_engine(image), kind, "{image}");
    }
}

#[test]
fn command_lines_are_read_through_shells() {
    let words = |ws: &[&str]| ws.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        command_engine(&words(&["vllm", "serve"]), &words(&["m"])),
        Some(EngineKind::Vllm)
    );
    assert_eq!(
        command_engine(
            &words(&["/bin/sh", "-c", "pip install x && exec vllm serve m"]),
            &[]
        ),
        Some(EngineKind::Vllm)
    );
    assert_eq!(
        command_engine(&words(&["python", "-m", "sglang.launch_server"]), &[]),
        Some(EngineKind::Sglang)
    );
    assert_eq!(command_engine(&words(&["vllm", "bench"]), &[]), None);
    assert_eq!(command_engine(&[], &words(&["--model", "vllm"])), None);
}
