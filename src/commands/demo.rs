//! `kvtop demo`: the simulated fleet in-process plus the console pointed at it.

use std::process::ExitCode;

use super::setup::{Session, load_config};
use crate::cli::{DemoArgs, GlobalArgs};
use crate::config::TargetConfig;
use crate::sim::{Baseline, SimConfig, demo_story};

pub fn run(args: DemoArgs, global: &GlobalArgs) -> ExitCode {
    let mut loaded = load_config(global);
    if !global.targets.is_empty() {
        loaded
            .problems
            .push("demo ignores --target: it watches its own simulated fleet".into());
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
    runtime.block_on(async move {
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
        let sim = match crate::sim::start(cfg).await {
            Ok(sim) => sim,
            Err(err) => {
                eprintln!("kvtop demo: the simulated fleet did not start: {err}");
                return ExitCode::from(1);
            }
        };
        // Engines, then each node's dcgm-exporter (GPU panel, GPU columns, node view).
        let targets: Vec<TargetConfig> = sim
            .engines
            .iter()
            .chain(&sim.dcgm)
            .map(|e| TargetConfig {
                name: e.name.clone(),
                url: e.url.clone(),
                bearer_token: None,
            })
            .collect();
        let source = format!("demo ({} simulated engines)", sim.engines.len());
        // The simulator's engine logs feed the rules that match text (e.g. CUDA out of memory).
        let sources = super::console::Sources {
            targets: &targets,
            clusters: Vec::new(),
            sim: Some(&sim),
        };
        let code =
            super::console::run_console_with(&config, theme, sources, source, problems).await;
        sim.shutdown().await;
        code
    })
}
