//! `kvtop sim`: serve a simulated fleet on 127.0.0.1 until interrupted.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

use super::file_limit::{FileLimit, raise_open_file_limit};
use crate::cli::{SimArgs, VllmVersion};
use crate::sim::{Baseline, SimConfig, SimVersion};

impl From<VllmVersion> for SimVersion {
    fn from(v: VllmVersion) -> Self {
        match v {
            VllmVersion::V1 => SimVersion::V1,
            VllmVersion::V0 => SimVersion::V0,
        }
    }
}

pub fn run(args: SimArgs) -> ExitCode {
    let _ = crate::logging::init(crate::logging::LogSink::Stderr, "warn");
    let runtime = match super::setup::runtime() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("kvtop: cannot start the runtime: {err}");
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
        let sim = match crate::sim::start(cfg).await {
            Ok(sim) => sim,
            Err(err) => {
                eprintln!("kvtop sim: {err}");
                return ExitCode::from(2);
            }
        };
        println!(
            "kvtop sim: {} engines, {} dcgm-exporters on 127.0.0.1",
            sim.engines.len(),
            sim.dcgm.len()
        );
        for line in sim.describe() {
            println!("{line}");
        }
        for timed in args.scenarios.iter().filter(|t| t.after_s > 0.0) {
            println!("scheduled: {timed}");
        }
        println!("Ctrl-C to stop.");
        wait_for_stop_signal().await;
        sim.shutdown().await;
        ExitCode::SUCCESS
    })
}

/// Raise the soft open-file limit so every listener fits (one per engine and one per node's
/// dcgm-exporter, plus a margin for connections being served), and say so when even the hard
/// limit is too low; binding then fails with the simulator's own error naming `ulimit -n`.
fn ensure_file_limit(engines: u64) {
    let needed = engines + engines.div_ceil(8) + FILE_LIMIT_MARGIN;
    if let Some(FileLimit::TooLow { hard }) = raise_open_file_limit(needed) {
        eprintln!(
            "kvtop sim: {engines} engines need about {needed} open files but the hard limit is \
             {hard}; raise it (e.g. `ulimit -Hn {needed}` as root, or LimitNOFILE in systemd)"
        );
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
