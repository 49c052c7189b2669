//! `kvtop` / `kvtop console`: watch the configured targets, and with `--kube` (or
//! `[kubernetes] enabled = true`) the vLLM pods discovered in the cluster(s).

use std::process::ExitCode;

use super::setup::{Loaded, load_config, load_theme, runtime, start_logging};
use crate::cli::GlobalArgs;
use crate::config::Config;
use crate::sources::kube::ClusterClient;

pub fn run(global: &GlobalArgs) -> ExitCode {
    let Loaded {
        mut config,
        mut problems,
    } = load_config(global);
    if let Err(err) = config.kubernetes.apply(&global.kube.overrides()) {
        eprintln!("kvtop: {err}");
        return ExitCode::from(2);
    }
    let kube = config.kubernetes.enabled;
    if config.targets.is_empty() && !kube {
        for problem in &problems {
            eprintln!("kvtop: {problem}");
        }
        eprintln!(
            "kvtop: no targets to watch. Pass --target http://HOST:PORT/metrics (repeatable), \
             --kube to discover vLLM pods in Kubernetes, add [[targets]] to the config file \
             (kvtop config init), or try `kvtop demo`."
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
    let targets = config.targets.clone();
    rt.block_on(async move {
        let clusters = if kube {
            match crate::sources::kube::connect(&config.kubernetes).await {
                Ok(clusters) => clusters,
                Err(err) => {
                    eprintln!("kvtop: {err}");
                    return ExitCode::from(2);
                }
            }
        } else {
            Vec::new()
        };
        let source = describe_source(&config, targets.len(), &clusters);
        super::console::run_console_with(&config, theme, &targets, source, problems, clusters).await
    })
}

/// What the header says is watched: `3 targets`, `kube prod/llm`, `kube a, b/* + 1 target`.
pub fn describe_source(config: &Config, targets: usize, clusters: &[ClusterClient]) -> String {
    let static_part = match targets {
        0 => None,
        1 => Some("1 target".to_owned()),
        n => Some(format!("{n} targets")),
    };
    if clusters.is_empty() {
        return static_part.unwrap_or_else(|| "no targets".to_owned());
    }
    let k = &config.kubernetes;
    let contexts: Vec<&str> = clusters.iter().map(|c| c.context.as_str()).collect();
    let namespace = if k.all_namespaces {
        "*".to_owned()
    } else {
        k.namespace.clone().unwrap_or_else(|| {
            clusters
                .first()
                .map(|c| c.default_namespace.clone())
                .unwrap_or_default()
        })
    };
    let kube = format!("kube {}/{namespace}", contexts.join(", "));
    match static_part {
        Some(s) => format!("{kube} + {s}"),
        None => kube,
    }
}
