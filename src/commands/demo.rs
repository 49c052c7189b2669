//! `kvtop demo`: the simulated fleet in-process plus the console pointed at it.
//!
//! By default the simulated Kubernetes API runs too, and the console discovers the engines as
//! pods through it, exactly as `kvtop --kube` does on a real cluster: pod state, events, logs,
//! Deployments with their HPA and PDB, and actions that act on the simulated fleet. Only the
//! dcgm-exporters are static targets. `--no-kube` scrapes the engines directly instead.

use std::process::ExitCode;

use super::console::Sources;
use super::setup::{Session, load_config};
use crate::cli::{DemoArgs, GlobalArgs};
use crate::config::{Config, KubernetesConfig, TargetConfig};
use crate::sources::kube::ClusterClient;
use crate::theme::Theme;
use kvtop_core::kube_model::ScrapeVia;
use kvtop_sim::kube::{KubeSimConfig, KubeSimHandle};
use kvtop_sim::{Baseline, SimConfig, SimEndpoint, SimHandle, demo_story};

/// The kubeconfig context name of `kvtop sim --kube`'s cluster (unless --context-name).
pub(crate) const SIM_CONTEXT: &str = "kvtop-sim";
/// The context name of the demo's cluster: not the simulator's, so both merge into one
/// KUBECONFIG without colliding.
const DEMO_CONTEXT: &str = "kvtop-demo";

#[inline(never)] // a command entry: see main.rs
pub fn run(args: DemoArgs, global: &GlobalArgs) -> ExitCode {
    let mut loaded = load_config(global);
    if !global.targets.is_empty() {
        loaded
            .problems
            .push("demo ignores --target: it watches its own simulated fleet".into());
    }
    if global.kube.overrides() != crate::config::KubeOverrides::default() {
        loaded
            .problems
            .push("demo ignores the Kubernetes flags: it watches its own simulated cluster".into());
    }
    let Session {
        config,
        theme,
        problems,
        runtime,
    } = match Session::start(loaded) {
        Ok(session) => session,
        Err(code) => return code,
    };
    // Boxed where it is made, as the console's is (console_cmd::run).
    runtime.block_on(Box::pin(async move {
        let engines = args.engines as usize;
        // The scripted story (sim::schedule::demo_story), unless --scenario replaces it.
        let schedule = if args.scenarios.is_empty() {
            demo_story(engines)
        } else {
            args.scenarios.clone()
        };
        let cfg = SimConfig {
            engines,
            version: args.vllm_version.into(),
            seed: args.seed,
            baseline: Baseline::Healthy,
            schedule,
            ..SimConfig::default()
        };
        let sim = match kvtop_sim::start(cfg).await {
            Ok(sim) => sim,
            Err(err) => {
                super::err(&format!(
                    "kvtop demo: the simulated fleet did not start: {err}"
                ));
                return ExitCode::from(1);
            }
        };
        let code = if args.no_kube {
            run_direct(&config, theme, &sim, problems).await
        } else {
            run_with_kube(config, theme, &sim, problems).await
        };
        sim.shutdown().await;
        code
    }))
}

/// The console scraping every engine and dcgm-exporter directly; the engines' logs reach the
/// rules through the in-process log feed.
async fn run_direct(
    config: &Config,
    theme: Theme,
    sim: &SimHandle,
    problems: Vec<String>,
) -> ExitCode {
    let targets = static_targets(sim.engines.iter().chain(&sim.dcgm));
    let source = format!("demo ({} simulated engines)", sim.engines.len());
    let sources = Sources {
        targets: &targets,
        clusters: Vec::new(),
        sim: Some(sim),
        help_note: None,
        focus: None,
        audit_log: None,
    };
    super::console::run_console_with(config, theme, sources, source, problems).await
}

/// The console discovering the engines as pods through the simulated Kubernetes API.
///
/// The logs come through the API too (`pods/log`, which serves the engines' own lines plus
/// what only the cluster knows: the crash-looping pod's runs, previous containers), so the
/// in-process log feed stays off and no line reaches the rules twice.
async fn run_with_kube(
    mut config: Config,
    theme: Theme,
    sim: &SimHandle,
    mut problems: Vec<String>,
) -> ExitCode {
    let api = match kvtop_sim::kube::start(sim, KubeSimConfig::default()).await {
        Ok(api) => api,
        Err(err) => {
            super::err(&format!(
                "kvtop demo: the simulated Kubernetes API did not start: {err}"
            ));
            return ExitCode::from(1);
        }
    };
    config.kubernetes = demo_kubernetes(&config.kubernetes, &api);
    let cluster = api
        .client_config()
        .map_err(|e| e.to_string())
        .and_then(|c| {
            ClusterClient::from_config(DEMO_CONTEXT, c, config.kubernetes.api_timeout)
                .map_err(|e| e.to_string())
        });
    let cluster = match cluster {
        Ok(cluster) => cluster,
        Err(err) => {
            super::err(&format!(
                "kvtop demo: cannot reach the simulated Kubernetes API: {err}"
            ));
            api.shutdown().await;
            return ExitCode::from(1);
        }
    };
    // The engines are discovered as pods; only the GPU exporters are static targets.
    let targets = static_targets(&sim.dcgm);
    let source = format!(
        "demo ({} simulated engines, simulated Kubernetes API)",
        sim.engines.len()
    );
    // The cluster is there for the real kubectl too: its kubeconfig, named for this process
    // (several demos may run), removed when the demo ends.
    let kubeconfig = crate::config::state_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("demo-{}.kubeconfig.yaml", std::process::id()));
    let written = kubeconfig
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&kubeconfig, api.kubeconfig_yaml(DEMO_CONTEXT)));
    let help_note = match written {
        Ok(()) => Some(
            super::sim::usage_lines(&kubeconfig, &api.namespace)[1]
                .trim()
                .to_owned(),
        ),
        Err(err) => {
            problems.push(format!(
                "the demo's kubeconfig was not written ({}): {err}",
                kubeconfig.display()
            ));
            None
        }
    };
    let sources = Sources {
        targets: &targets,
        clusters: vec![cluster],
        sim: None,
        help_note,
        focus: None,
        // Actions on the simulated cluster are not the operator's: never in the real log.
        audit_log: Some(crate::actions::AuditLog::demo_path()),
    };
    let code = super::console::run_console_with(&config, theme, sources, source, problems).await;
    let _ = std::fs::remove_file(&kubeconfig);
    api.shutdown().await;
    code
}

/// The configured Kubernetes settings pointed at the simulated cluster: its context,
/// namespace and pod selector, pods reached directly with the API server's proxy as fallback.
/// Timings, log and event depths and action policies stay as configured.
fn demo_kubernetes(configured: &KubernetesConfig, api: &KubeSimHandle) -> KubernetesConfig {
    let (key, value) = kvtop_sim::kube::objects::APP_LABEL;
    KubernetesConfig {
        enabled: true,
        kubeconfig: None,
        contexts: vec![DEMO_CONTEXT.to_owned()],
        namespace: Some(api.namespace.clone()),
        all_namespaces: false,
        selectors: vec![format!("{key}={value}")],
        scrape_via: ScrapeVia::Auto,
        // The demo's Services select on labels a real deployment has: routing is derived.
        routing_label: None,
        ..configured.clone()
    }
}

fn static_targets<'a>(endpoints: impl IntoIterator<Item = &'a SimEndpoint>) -> Vec<TargetConfig> {
    endpoints
        .into_iter()
        .map(|e| TargetConfig {
            name: e.name.clone(),
            url: e.url.clone(),
            bearer_token: None,
        })
        .collect()
}
