//! `kvtop config path | init | check`.

use std::process::ExitCode;

use crate::cli::ConfigAction;
use crate::config::{self, ConfigError};

/// Run a `config` sub-command, printing to stdout/stderr.
#[inline(never)] // a command entry: see main.rs
pub fn run(action: ConfigAction, explicit: Option<&std::path::Path>) -> ExitCode {
    match action {
        ConfigAction::Path => match explicit
            .map(std::path::Path::to_path_buf)
            .or_else(config::default_config_path)
        {
            Some(path) => {
                super::out(&format!("{}", path.display()));
                ExitCode::SUCCESS
            }
            None => {
                super::err("kvtop: no config directory could be determined (is HOME set?)");
                ExitCode::from(2)
            }
        },
        ConfigAction::Init { path, force } => {
            match config::init(path.as_deref().or(explicit), force) {
                Ok(written) => {
                    super::out(&format!("wrote {}", written.display()));
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
        ConfigAction::Check { file } => {
            let Some(path) = file
                .or_else(|| explicit.map(std::path::Path::to_path_buf))
                .or_else(config::default_config_path)
            else {
                super::err("kvtop: no config file given and no config directory (is HOME set?)");
                return ExitCode::from(2);
            };
            match config::check_file(&path) {
                Ok(report) => {
                    super::out(&report.to_string());
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
    }
}

fn fail(err: &ConfigError) -> ExitCode {
    super::err(&format!("kvtop: {err}"));
    ExitCode::from(2)
}
