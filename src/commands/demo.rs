//! `kvtop demo`: the simulated fleet in-process plus the console pointed at it.

use std::process::ExitCode;

use super::setup::{Loaded, load_config, load_theme, runtime, start_logging};
use crate::cli::{DemoArgs, GlobalArgs};
use crate::config::TargetConfig;
use crate::sim::SimConfig;

pub fn run(args: DemoArgs, global: &GlobalArgs) -> ExitCode {
    let Loaded {
        config,
        mut problems,
    } = load_config(global);
    if !config.targets.is_empty() && !global.targets.is_empty() {
        problems.push("demo ignores --target: it watches its own simulated fleet".into());
    }
    start_logging(&config, &mut problems);
    let theme = load_theme(&config, &mut problems);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("kvtop: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        let cfg = SimConfig {
            engines: args.engines as usize,
            version: args.vllm_version.into(),
            seed: args.seed,
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
        let code = super::console::run_console(&config, theme, &targets, source, problems).await;
        sim.shutdown().await;
        code
    })
}
