//! `kvtop` / `kvtop console`: watch the configured targets.

use std::process::ExitCode;

use super::setup::{Loaded, load_config, load_theme, runtime, start_logging};
use crate::cli::GlobalArgs;

pub fn run(global: &GlobalArgs) -> ExitCode {
    let Loaded {
        config,
        mut problems,
    } = load_config(global);
    if config.targets.is_empty() {
        for problem in &problems {
            eprintln!("kvtop: {problem}");
        }
        eprintln!(
            "kvtop: no targets to watch. Pass --target http://HOST:PORT/metrics (repeatable), \
             add [[targets]] to the config file (kvtop config init), or try `kvtop demo`."
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
    let source = match config.targets.len() {
        1 => "1 target".to_string(),
        n => format!("{n} targets"),
    };
    let targets = config.targets.clone();
    rt.block_on(super::console::run_console(
        &config, theme, &targets, source, problems,
    ))
}
