//! `kvtop` / `kvtop console`: watch the configured targets.

use std::process::ExitCode;

use super::setup::{Session, load_config};
use crate::cli::GlobalArgs;

pub fn run(global: &GlobalArgs) -> ExitCode {
    let loaded = load_config(global);
    if loaded.config.targets.is_empty() {
        for problem in &loaded.problems {
            eprintln!("kvtop: {problem}");
        }
        eprintln!(
            "kvtop: no targets to watch. Pass --target http://HOST:PORT/metrics (repeatable), \
             add [[targets]] to the config file (kvtop config init), or try `kvtop demo`."
        );
        return ExitCode::from(2);
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
    let source = match config.targets.len() {
        1 => "1 target".to_string(),
        n => format!("{n} targets"),
    };
    runtime.block_on(super::console::run_console(
        &config,
        theme,
        &config.targets,
        source,
        problems,
    ))
}
