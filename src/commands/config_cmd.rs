//! `kvtop config path | init | check`.

use std::process::ExitCode;

use crate::cli::ConfigAction;
use crate::config::{self, ConfigError};

/// Run a `config` sub-command, printing to stdout/stderr.
pub fn run(action: ConfigAction, explicit: Option<&std::path::Path>) -> ExitCode {
    match action {
        ConfigAction::Path => match explicit
            .map(std::path::Path::to_path_buf)
            .or_else(config::default_config_path)
        {
            Some(path) => {
                println!("{}", path.display());
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("kvtop: no config directory could be determined (is HOME set?)");
                ExitCode::from(2)
            }
        },
        ConfigAction::Init { path, force } => {
            match config::init(path.as_deref().or(explicit), force) {
                Ok(written) => {
                    println!("wrote {}", written.display());
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
                eprintln!("kvtop: no config file given and no config directory (is HOME set?)");
                return ExitCode::from(2);
            };
            match config::check_file(&path) {
                Ok(report) => {
                    println!("{report}");
                    ExitCode::SUCCESS
                }
                Err(err) => fail(&err),
            }
        }
    }
}

fn fail(err: &ConfigError) -> ExitCode {
    eprintln!("kvtop: {err}");
    ExitCode::from(2)
}
