//! `kvtop` / `kvtop console`: watch the configured targets.

use std::process::ExitCode;

use super::setup::{Loaded, load_config, load_theme, runtime, start_logging};
use crate::cli::GlobalArgs;

pub fn run(global: &GlobalArgs) -> ExitCode {
    let Loaded {
        config,
        mut problems,
    } = load_config(global);
    if config.targets.is_empty() && config.prometheus.is_none() {
        for problem in &problems {
            eprintln!("kvtop: {problem}");
        }
        eprintln!(
            "kvtop: no targets to watch. Pass --target http://HOST:PORT/metrics (repeatable), \
             add [[targets]] to the config file (kvtop config init), read them through \
             Prometheus with --prometheus URL, or try `kvtop demo`."
        );
        return ExitCode::from(2);
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
    let targets = match config.targets.len() {
        0 => None,
        1 => Some("1 target".to_string()),
        n => Some(format!("{n} targets")),
    };
    let prometheus = config
        .prometheus
        .as_ref()
        .map(|p| super::console::source_name(&p.url));
    let source = match (targets, prometheus) {
        (Some(t), Some(p)) => format!("{t} + {p}"),
        (Some(t), None) => t,
        (None, Some(p)) => p,
        (None, None) => String::new(),
    };
    let targets = config.targets.clone();
    rt.block_on(super::console::run_console(
        &config, theme, &targets, source, problems,
    ))
}
