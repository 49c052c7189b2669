//! `kvtop sim`: serve a simulated fleet on 127.0.0.1 until interrupted.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

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
