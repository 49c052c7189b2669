//! `kvtop doctor`: everything kvtop will need, checked in one run, each with a verdict and a
//! fix, instead of one error at a time inside the console. Exit code 0 when nothing needed is
//! missing (warnings allowed), 1 otherwise.

mod endpoint_checks;
mod kube_checks;
mod prometheus_checks;
mod report;

use std::process::ExitCode;

pub use report::{Check, Report, Verdict};

use crate::cli::{DoctorArgs, DoctorOutput, GlobalArgs};
use crate::config::{self, Config};

/// Exit code when something kvtop needs is missing.
pub const EXIT_MISSING: u8 = 1;

#[inline(never)] // a command entry: see main.rs
pub fn run(args: DoctorArgs, global: &GlobalArgs) -> ExitCode {
    // Every failure the libraries underneath would log is a row of the report already.
    let _ = crate::logging::init(crate::logging::LogSink::Stderr, "off");
    let mut checks = Vec::new();
    let mut config = check_config(global, &mut checks);
    check_rules(args.rules.clone(), &mut checks);
    if let Err(err) = config.kubernetes.apply(&global.kube.overrides()) {
        checks.push(
            Check::new("config", "Kubernetes flags", Verdict::Fail)
                .detail(err.to_string())
                .fix("correct the flag (see `kvtop --help`)"),
        );
    }
    let kube = config.kubernetes.enabled;
    if config.targets.is_empty() && !kube && config.prometheus.is_none() {
        checks.push(
            Check::new("config", "something to watch", Verdict::Fail)
                .detail("no target, no Kubernetes discovery, no Prometheus")
                .fix(
                    "pass --kube (or run as `kubectl kvtop`), --prometheus URL or --target URL, \
                     or write them into the config file (`kvtop config init`)",
                ),
        );
    }
    match super::setup::runtime() {
        Ok(runtime) => runtime.block_on(async {
            let pods = if kube {
                kube_checks::run(&config.kubernetes, &mut checks).await
            } else {
                Vec::new()
            };
            let settings = super::check::scrape_settings(&config);
            endpoint_checks::run(&config, &settings, &pods, &mut checks).await;
            if let Some(prom) = &config.prometheus {
                prometheus_checks::run(&config, prom, &mut checks).await;
            }
        }),
        Err(err) => checks.push(
            Check::new("kvtop", "runtime", Verdict::Fail)
                .detail(format!("cannot start the runtime: {err}")),
        ),
    }
    let report = Report::new(checks);
    match args.output {
        DoctorOutput::Text => super::out_raw(&report.render_text()),
        DoctorOutput::Json => super::out_raw(&report.render_json()),
    }
    if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_MISSING)
    }
}

/// The config file parses (or there is none, and the defaults apply) and the flags fit it.
fn check_config(global: &GlobalArgs, checks: &mut Vec<Check>) -> Config {
    let named = global.config.clone().or_else(config::env_config_path);
    let path = named.clone().or_else(config::default_config_path);
    let shown = path
        .as_ref()
        .map_or("(no config directory)".to_owned(), |p| {
            p.display().to_string()
        });
    let mut config = match config::load(global.config.as_deref()) {
        Ok(config) => {
            let exists = path.as_ref().is_some_and(|p| p.is_file());
            checks.push(
                Check::new("config", "config file", Verdict::Ok).detail(if exists {
                    format!("{shown} parses")
                } else {
                    format!("{shown} does not exist: the defaults apply")
                }),
            );
            config
        }
        Err(err) => {
            checks.push(
                Check::new("config", "config file", Verdict::Fail)
                    .detail(err.to_string())
                    .fix(format!(
                        "correct the key named above (`kvtop config check {shown}`), or start \
                         from `kvtop config init --force`"
                    )),
            );
            Config::default()
        }
    };
    if let Err(err) = config.apply(super::setup::overrides(global)) {
        checks.push(
            Check::new("config", "command-line flags", Verdict::Fail)
                .detail(err.to_string())
                .fix("correct the flag (see `kvtop --help`)"),
        );
    }
    config
}

/// The built-in rules and the user's rules file parse.
fn check_rules(explicit: Option<std::path::PathBuf>, checks: &mut Vec<Check>) {
    checks.push(match super::check::load_rules(explicit) {
        Ok(rules) => Check::new("config", "rules", Verdict::Ok)
            .detail(format!("{} rules load", rules.rules().len())),
        Err(message) => Check::new("config", "rules", Verdict::Fail)
            .detail(message)
            .fix("correct the rule named above (`kvtop rules list --rules FILE` loads it)"),
    });
}
