//! The Kubernetes bits of the console drawn into a `TestBackend`: the pod marker in the fleet
//! table's status cell, the pod panel of the full detail pane, the marker of the compact
//! detail, and the Deployments view (`d`).

use crate::common;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use k8s_openapi::api::core::v1::Pod;
use kvtop::app::kube::KubeView;
use kvtop::app::{App, Event, update};
use kvtop::theme::Theme;
use kvtop_core::engine::{EngineId, EngineSample};
use kvtop_core::fleet::{Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetSpec, Ts};
use kvtop_core::kube_model::{
    self, ConvertOptions, DeploymentSummary, EndpointDefaults, HpaSummary, PdbSummary,
    ScaledObjectSummary, ScrapeVia,
};
use serde_json::json;

const NOW: Ts = 1_704_110_584.0;

fn pod(name: &str, crashing: bool) -> kube_model::PodInfo {
    let state = if crashing {
        json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}})
    } else {
        json!({"running": {"startedAt": "2024-01-01T11:00:00Z"}})
    };
    let last = if crashing {
        json!({"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": "2024-01-01T12:02:04Z"}})
    } else {
        json!({})
    };
    let value = json!({
        "metadata": {
            "name": name, "namespace": "llm", "uid": format!("uid-{name}"),
            "labels": {"pod-template-hash": "6d4f9", "kvtop.dev/serving": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "vllm-llama-8b-6d4f9", "uid": "rs", "controller": true}]
        },
        "spec": {"nodeName": "gpu-node-00", "containers": [{
            "name": "vllm", "command": ["vllm", "serve"],
            "args": ["meta-llama/Llama-3.1-8B-Instruct", "--enable-chunked-prefill", "--max-num-batched-tokens", "16384"],
            "ports": [{"name": "http", "containerPort": 8000}],
            "env": [{"name": "OMP_NUM_THREADS", "value": "32"}]
        }]},
        "status": {
            "phase": "Running", "podIP": "10.0.0.7",
            "conditions": [{"type": "Ready", "status": if crashing { "False" } else { "True" }}],
            "containerStatuses": [{"name": "vllm", "image": "vllm", "imageID": "", "ready": !crashing,
                                   "restartCount": if crashing { 4 } else { 0 },
                                   "state": state, "lastState": last}]
        }
    });
    let pod: Pod = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
    let defaults = EndpointDefaults::default();
    let mut info = kube_model::pod_info(
        &pod,
        &ConvertOptions {
            context: "prod",
            endpoint: &defaults,
            routing_label: Some("kvtop.dev/serving"),
            event_lines: 10,
            log_lines: 50,
        },
    )
    .unwrap_or_else(|| panic!("no pod"));
    if crashing {
        info.events
            .push("Warning BackOff: Back-off restarting failed container vllm (×4)".into());
        info.logs.extend([
            "INFO 01-01 12:02:00 [api_server.py:1805] vLLM API server version 0.10.1.1".to_owned(),
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
                .to_owned(),
        ]);
    }
    info
}

fn app() -> App {
    let mut fleet = Fleet::new(FleetSettings::default());
    let healthy = fleet.add_target(TargetSpec {
        name: "vllm-llama-8b-6d4f9-aaaaa".into(),
        url: "http://10.0.0.6:8000/metrics".into(),
    });
    let crashing = fleet.add_target(TargetSpec {
        name: "vllm-llama-8b-6d4f9-bbbbb".into(),
        url: "http://10.0.0.7:8000/metrics".into(),
    });
    fleet.set_pod_info(healthy, pod("vllm-llama-8b-6d4f9-aaaaa", false));
    fleet.set_pod_info(crashing, pod("vllm-llama-8b-6d4f9-bbbbb", true));
    fleet.ingest(ScrapeReport {
        target: healthy,
        at: NOW - 1.0,
        took: 0.01,
        outcome: Ok(ScrapePayload {
            engines: vec![EngineSample {
                id: EngineId {
                    model: "meta-llama/Llama-3.1-8B-Instruct".into(),
                    engine: "0".into(),
                },
                kv_usage: Some(0.3),
                ..EngineSample::default()
            }],
            ..ScrapePayload::default()
        }),
    });
    let mut app = App::new(
        fleet,
        Theme::fallback(),
        "kube prod/llm".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    app.kube = KubeView::new(ScrapeVia::Auto, 1, false);
    app.kube.deployments = vec![DeploymentSummary {
        context: "prod".into(),
        namespace: "llm".into(),
        name: "vllm-llama-8b".into(),
        desired: 2,
        ready: 1,
        updated: 2,
        available: 1,
        rolling_out: false,
        hpa: Some(HpaSummary {
            name: "vllm-llama-8b".into(),
            current: Some(2),
            desired: 2,
            min: 2,
            max: 2,
            metrics: vec!["vllm:num_requests_waiting 180/50".into()],
            limited: Some("TooManyReplicas".into()),
        }),
        pdb: Some(PdbSummary {
            name: "vllm-llama-8b".into(),
            rule: "minAvailable 2".into(),
            disruptions_allowed: 0,
            current_healthy: 1,
            desired_healthy: 2,
            expected_pods: 2,
        }),
        scaled_object: Some(ScaledObjectSummary {
            name: "llama-waiting".into(),
            min: 1,
            max: 4,
            triggers: vec!["prometheus: sum(vllm:num_requests_waiting) > 50".into()],
            ready: Some(true),
            active: Some(true),
            fallback: false,
            paused: None,
            hpa: Some("keda-hpa-llama-waiting".into()),
        }),
    }];
    update(&mut app, Event::Tick, NOW);
    app
}

fn screen(app: &mut App, width: u16, height: u16) -> String {
    common::screen::text(app, width, height, NOW)
}

#[test]
fn the_table_marks_the_crash_looping_pod_and_the_detail_shows_its_pod() {
    let mut app = app();
    // Select the crash-looping pod (second row by name).
    key(&mut app, 'j');
    let text = screen(&mut app, 160, 48);
    assert!(text.contains("CrashLoop↻4 · no data"), "{text}");
    // The rules read the pod: its CUDA OOM with a 16k chunked-prefill budget is a finding.
    assert!(text.contains("OOM with chunked prefill"), "{text}");
    assert!(text.contains(" pod "), "the panel's title\n{text}");
    for part in [
        "Running · not ready · gpu-node-00",
        "CrashLoopBackOff: back-off 40s",
        "4 · last Error (exit 1) 1m00s ago",
        "Deployment vllm-llama-8b (ReplicaSet 6d4f9)",
        "batched 16384 · chunked on",
        "OMP_NUM_THREADS=32",
        "Warning BackOff: Back-off restarting",
        "torch.cuda.OutOfMemoryError: CUDA out of memory.",
    ] {
        assert!(text.contains(part), "missing {part:?}\n{text}");
    }
}

#[test]
fn the_compact_detail_shows_the_findings_the_pod_raises() {
    let mut app = app();
    key(&mut app, 'j');
    let text = screen(&mut app, 80, 24);
    let detail: Vec<&str> = text.lines().skip(20).collect();
    assert!(
        detail.iter().any(|l| l.contains("CUDA out of memory")),
        "{text}"
    );
    assert!(text.contains("CrashLoop↻4 · no data"), "{text}");
}

#[test]
fn d_opens_the_deployments_view_and_esc_closes_it() {
    let mut app = app();
    key(&mut app, 'd');
    let text = screen(&mut app, 160, 48);
    for part in [
        " Deployments ",
        "llm/vllm-llama-8b",
        "1/2",
        "2→2 [2–2] at max",
        "vllm:num_requests_waiting 180/50",
        "minAvailable 2 · allows 0",
        "KEDA llama-waiting active · [1–4] · prometheus: sum(vllm:num_requests_waiting) > 50 · → keda-hpa-llama-waiting",
    ] {
        assert!(text.contains(part), "missing {part:?}\n{text}");
    }
    update(
        &mut app,
        Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
        NOW,
    );
    assert!(!app.kube.deployments_open);
    let text = screen(&mut app, 160, 48);
    assert!(!text.contains(" Deployments "));
    // Without Kubernetes the view says how to turn it on.
    app.kube.enabled = false;
    key(&mut app, 'd');
    let text = screen(&mut app, 160, 48);
    assert!(text.contains("Kubernetes discovery is off"), "{text}");
}

fn key(app: &mut App, c: char) {
    common::screen::press_char(app, c, NOW);
}

/// With discovery on and nothing found, the empty table says what was searched and, per
/// context, why nothing matched (API text with its control characters made visible), instead
/// of waiting for a first scrape that will never come.
#[test]
fn an_empty_fleet_says_what_discovery_searched_and_why_nothing_matched() {
    use kvtop::sources::kube::KubeUpdate;
    use kvtop_core::kube_model::{ContextSearch, SearchOutcome};
    let mut app = App::new(
        Fleet::new(FleetSettings::default()),
        Theme::fallback(),
        "kube prod, stage".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    app.kube = KubeView::new(ScrapeVia::Auto, 2, false);
    update(&mut app, Event::Tick, NOW);
    let before = screen(&mut app, 140, 20);
    assert!(
        before.contains("waiting for the first scrape"),
        "no round yet\n{before}"
    );
    let search = |context: &str, outcome| ContextSearch {
        context: context.into(),
        namespace: Some("llm".into()),
        selectors: vec!["app.kubernetes.io/name=vllm".into()],
        by_workload: true,
        outcome,
    };
    for s in [
        search(
            "prod",
            SearchOutcome::Listed {
                pods: 12,
                engines: 0,
            },
        ),
        search(
            "stage",
            SearchOutcome::Forbidden(
                "pods is forbidden: User \"dev\" cannot list resource \"pods\"\x1b[31m".into(),
            ),
        ),
    ] {
        update(&mut app, Event::Kube(KubeUpdate::Searched(s)), NOW);
    }
    let text = screen(&mut app, 140, 20);
    assert!(!text.contains("waiting for the first scrape"), "{text}");
    // Narrower, the long lines wrap rather than lose their end.
    let narrow = screen(&mut app, 80, 20);
    assert!(
        narrow.contains("   whose image or command runs vLLM or SGLang in namespace llm"),
        "{narrow}"
    );
    for part in [
        "no vLLM or SGLang pods found",
        "searched contexts prod, stage: pods labelled app.kubernetes.io/name=vllm, or whose \
         image or command runs vLLM or SGLang in namespace llm",
        "prod: 12 pods in namespace llm, none running vLLM or SGLang",
        "stage: forbidden: pods is forbidden: User \"dev\" cannot list resource \"pods\"\u{FFFD}[31m",
    ] {
        assert!(text.contains(part), "missing {part:?}\n{text}");
    }
    assert!(!text.contains('\x1b'));
}
