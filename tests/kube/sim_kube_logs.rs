//! The simulated Kubernetes API's `pods/log` is the engine's own log: the lines a scenario
//! makes the simulated engine write (the CUDA out-of-memory traceback of `oom-crashloop`) are
//! what a real `kube::Client` reads, and the engine's crash and restart are the pod's
//! container's (restart count, last state, `previous=true` log).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, LogParams};
use kvtop_sim::kube::KubeSimConfig;
use kvtop_sim::{Baseline, EngineRef, Scenario, ScenarioAssignment, SimConfig};

const PATIENCE: Duration = Duration::from_secs(30);
const OOM: &str = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate";

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_log_serves_the_engines_scenario_lines_and_its_crash_is_the_containers() {
    // Ten simulated seconds per second: engine 2 runs out of memory 20 s into the scenario,
    // is back 8 s later.
    let sim = kvtop_sim::start(SimConfig {
        engines: 4,
        seed: 11,
        time_scale: 10.0,
        baseline: Baseline::Healthy,
        scenarios: vec![ScenarioAssignment {
            scenario: Scenario::OomCrashloop,
            engine: EngineRef::Index(2),
        }],
        ..SimConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("sim: {e}"));
    let kube = kvtop_sim::kube::start(&sim, KubeSimConfig::default())
        .await
        .unwrap_or_else(|e| panic!("kube sim: {e}"));
    let client = Client::try_from(kube.client_config().unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("client: {e}"));
    let pods: Api<Pod> = Api::namespaced(client, &kube.namespace);
    let pod = kube
        .pods_of(2)
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("engine 2 has no pod"));

    // The traceback comes through the API...
    let served = eventually("the OOM traceback in pods/log", || {
        let pods = pods.clone();
        let pod = pod.clone();
        async move {
            let text = pods.logs(&pod, &LogParams::default()).await.ok()?;
            text.contains(OOM).then_some(text)
        }
    })
    .await;
    // ...as the very lines the engine wrote: nothing the API made up on its own.
    let engine: Vec<String> = sim
        .log_tail(2, usize::MAX)
        .into_iter()
        .map(|l| l.text)
        .collect();
    for line in served.lines() {
        assert!(
            engine.iter().any(|e| e == line),
            "served a line the engine did not write: {line:?}"
        );
    }
    assert!(
        served.contains("vLLM API server version"),
        "the start-up is there too:\n{served}"
    );

    // Once the engine is back, the container has restarted: the crash is its last state and
    // the previous container's log ends with the traceback.
    let restarted = eventually("the pod's container restarted", || {
        let pods = pods.clone();
        let pod = pod.clone();
        async move {
            let p = pods.get(&pod).await.ok()?;
            let status = p.status?.container_statuses?.into_iter().next()?;
            (status.restart_count >= 1).then_some(status)
        }
    })
    .await;
    let terminated = restarted
        .last_state
        .and_then(|s| s.terminated)
        .unwrap_or_else(|| panic!("no last state after the crash"));
    assert_eq!(terminated.exit_code, 1);
    assert_eq!(terminated.reason.as_deref(), Some("Error"));
    let previous = pods
        .logs(
            &pod,
            &LogParams {
                previous: true,
                ..LogParams::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("previous log: {e}"));
    assert!(previous.contains(OOM), "{previous}");
    assert!(
        previous.contains("EngineCore encountered a fatal error."),
        "{previous}"
    );
    kube.shutdown().await;
    sim.shutdown().await;
}
