//! `kvtop sim`: serve a simulated fleet on 127.0.0.1 until interrupted; with `--kube`, also
//! the simulated Kubernetes API, with a kubeconfig written for it so that `kvtop --kube` and
//! the actions can be pointed at it from another shell.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

use super::demo::SIM_CONTEXT;
use super::file_limit::{FileLimit, raise_open_file_limit};
use crate::cli::{GlobalArgs, SimArgs, VllmVersion};
use kvtop_sim::kube::{KubeSimConfig, KubeSimHandle};
use kvtop_sim::{Baseline, SimConfig, SimVersion};

/// File name of the simulated cluster's kubeconfig in kvtop's state directory.
const KUBECONFIG_FILE: &str = "sim-kubeconfig.yaml";

impl From<VllmVersion> for SimVersion {
    fn from(v: VllmVersion) -> Self {
        match v {
            VllmVersion::V1 => SimVersion::V1,
            VllmVersion::V0 => SimVersion::V0,
        }
    }
}

#[inline(never)] // a command entry: see main.rs
pub fn run(args: SimArgs, global: &GlobalArgs) -> ExitCode {
    let kube = global.kube.kube;
    let context_given = args.context_name != SIM_CONTEXT;
    if (args.kubeconfig_out.is_some() || context_given) && !kube {
        super::err("kvtop sim: --kubeconfig-out and --context-name need --kube");
        return ExitCode::from(2);
    }
    let _ = crate::logging::init(crate::logging::LogSink::Stderr, "warn");
    let runtime = match super::setup::server_runtime() {
        Ok(rt) => rt,
        Err(err) => {
            super::err(&format!("kvtop: cannot start the runtime: {err}"));
            return ExitCode::from(1);
        }
    };
    ensure_file_limit(u64::from(args.engines));
    runtime.block_on(async move {
        let cfg = SimConfig {
            engines: args.engines as usize,
            port_base: args.port_base,
            version: args.vllm_version.into(),
            seed: args.seed,
            gpus_per_node: usize::from(args.gpus_per_node),
            time_scale: args.time_scale,
            // With --scenario, only the named engines misbehave.
            baseline: if args.scenarios.is_empty() {
                Baseline::Mixed
            } else {
                Baseline::Healthy
            },
            schedule: args.scenarios.clone(),
            ..SimConfig::default()
        };
        let sim = match kvtop_sim::start(cfg).await {
            Ok(sim) => sim,
            Err(err) => {
                super::err(&format!("kvtop sim: {err}"));
                return ExitCode::from(2);
            }
        };
        super::out(&format!(
            "kvtop sim: {} engines, {} dcgm-exporters on 127.0.0.1",
            sim.engines.len(),
            sim.dcgm.len()
        ));
        for line in sim.describe() {
            super::out(&line.to_string());
        }
        for timed in args.scenarios.iter().filter(|t| t.after_s > 0.0) {
            super::out(&format!("scheduled: {timed}"));
        }
        let api = if kube {
            let path = args
                .kubeconfig_out
                .clone()
                .unwrap_or_else(default_kubeconfig_path);
            match serve_kube(&sim, &path, &args.context_name).await {
                Ok(api) => Some(api),
                Err(message) => {
                    super::err(&format!("kvtop sim: {message}"));
                    sim.shutdown().await;
                    return ExitCode::from(2);
                }
            }
        } else {
            None
        };
        super::out("Ctrl-C to stop.");
        wait_for_stop_signal().await;
        if let Some(api) = api {
            api.shutdown().await;
        }
        sim.shutdown().await;
        ExitCode::SUCCESS
    })
}

/// Start the simulated Kubernetes API for `sim`, write its kubeconfig to `path` and say how to
/// use it.
async fn serve_kube(
    sim: &kvtop_sim::SimHandle,
    path: &Path,
    context: &str,
) -> Result<KubeSimHandle, String> {
    let api = kvtop_sim::kube::start(sim, KubeSimConfig::default())
        .await
        .map_err(|e| format!("the simulated Kubernetes API did not start: {e}"))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, api.kubeconfig_yaml(context))
        .map_err(|e| format!("cannot write the kubeconfig {}: {e}", path.display()))?;
    super::out(&format!(
        "Kubernetes API {} (context {context}, namespace {})",
        api.url, api.namespace
    ));
    super::out(&format!("kubeconfig: {}", path.display()));
    for line in usage_lines(path, &api.namespace) {
        super::out(&line.to_string());
    }
    Ok(api)
}

/// How to use a simulated cluster's kubeconfig: kvtop itself, and the real kubectl (second).
pub(crate) fn usage_lines(kubeconfig: &Path, namespace: &str) -> [String; 2] {
    let path = shell_word(&kubeconfig.display().to_string());
    [
        format!("  try: kvtop --kube --kubeconfig {path}    kvtop drain POD --kubeconfig {path}"),
        format!("       kubectl --kubeconfig {path} get pods -n {namespace}"),
    ]
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._/@:=+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `sim-kubeconfig.yaml` in kvtop's state directory, else in the temporary directory.
fn default_kubeconfig_path() -> PathBuf {
    crate::config::state_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join(KUBECONFIG_FILE)
}
/// Raise the soft open-file limit so every listener fits (one per engine and one per node's
/// dcgm-exporter, plus a margin for connections being served), and say so when even the hard
/// limit is too low; binding then fails with the simulator's own error naming `ulimit -n`.
fn ensure_file_limit(engines: u64) {
    let needed = engines + engines.div_ceil(8) + FILE_LIMIT_MARGIN;
    if let Some(FileLimit::TooLow { hard }) = raise_open_file_limit(needed) {
        super::err(&format!(
            "kvtop sim: {engines} engines need about {needed} open files but the hard limit is \
             {hard}; raise it (e.g. `ulimit -Hn {needed}` as root, or LimitNOFILE in systemd)"
        ));
    }
}

/// Descriptors beyond the listeners: the runtime, stdio and connections being served.
const FILE_LIMIT_MARGIN: u64 = 64;

async fn wait_for_stop_signal() {
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        // Without signal handlers, Ctrl-C still ends the process the default way.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}
