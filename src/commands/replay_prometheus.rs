//! `kvtop --prometheus URL --from TIME [--to TIME] [--speed N]`: the console on a past window
//! of a Prometheus server.
//!
//! The window is read as `check --prometheus --from` reads it (a live cycle per step, see
//! `sources::prometheus::replay`), and each cycle is handed to the console when the replay
//! clock reaches its time, as `kvtop replay` hands over a recording's records: the same run
//! loop on the same clock, `--speed` times faster than it happened, the time cursor keys
//! through what was replayed. The steps of a lead-in before `--from` are handed over at once
//! so the rules' `for` durations may have started. Nothing reaches a cluster: read-only.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::past_window::{WindowArgs, open_reader};
use super::replay::{ReplayClock, console};
use super::setup::{Session, load_config};
use crate::app::Event;
use crate::app::state::App;
use crate::cli::{GlobalArgs, PastArgs};
use crate::diagnose::prometheus_replay::MAX_LEAD_IN_SECS;
use crate::sources::prometheus::replay::WindowReader;
use kvtop_core::clock::utc;
use kvtop_core::fleet::{Fleet, FleetSettings, SourceReport, Ts};

/// Cycles queued from the reader to the console.
const QUEUE: usize = 4096;

#[inline(never)] // a command entry: see main.rs
pub fn run(args: &PastArgs, global: &GlobalArgs) -> ExitCode {
    let Some(from) = args.from.as_deref() else {
        return super::console_cmd::run(global);
    };
    let Session {
        config,
        theme,
        problems,
        runtime,
    } = match Session::start(load_config(global)) {
        Ok(session) => session,
        Err(code) => return code,
    };
    let Some(prom) = config.prometheus.clone() else {
        super::err("kvtop: --from replays a Prometheus server's past: pass --prometheus URL");
        return ExitCode::from(2);
    };
    let window = match WindowArgs::parse(
        from,
        args.to.as_deref(),
        args.step.as_deref(),
        kvtop_core::clock::unix_now(),
    ) {
        Ok(window) => window,
        Err(message) => {
            super::err(&format!("kvtop: {message}"));
            return ExitCode::from(2);
        }
    };
    let speed = args.speed.unwrap_or(1.0);
    runtime.block_on(async move {
        let reader = match open_reader(&config, &prom, &window, MAX_LEAD_IN_SECS).await {
            Ok(reader) => reader,
            Err(message) => {
                super::err(&format!("kvtop: {}: {message}", prom.url));
                return ExitCode::from(1);
            }
        };
        let step = reader.window().step;
        let settings = FleetSettings {
            interval: step,
            ..config.fleet_settings()
        };
        let mut fleet = Fleet::new(settings);
        fleet.add_source(reader.source(), &super::console::source_name(&prom.url));
        let source = format!(
            "replay of {} from {}",
            super::console::source_name(&prom.url),
            utc(window.from)
        );
        let interval = Duration::from_secs_f64(step.clamp(0.05, 3600.0));
        let mut app = App::new(fleet, theme, source, interval, config.range);
        app.utc_offset_secs = 0;
        let clock = Arc::new(ReplayClock::start(window.from, speed));
        let now = clock.now();
        for problem in problems {
            app.warn(problem, now);
        }
        app.load_user_rules(config.user_rules_path().as_deref(), now);
        let (tx, rx) = mpsc::channel(QUEUE);
        let feeder = tokio::spawn(feed(reader, Arc::clone(&clock), window.to, tx));
        let code = console(&mut app, rx, clock, config.max_fps).await;
        feeder.abort();
        code
    })
}

/// Hand each cycle of the window to the console when the clock reaches its time; stop the
/// clock at the window's last step.
async fn feed(mut reader: WindowReader, clock: Arc<ReplayClock>, end: Ts, tx: mpsc::Sender<Event>) {
    if let Some(history) = reader.history().await {
        if tx
            .send(Event::Source(SourceReport::Backfill(history)))
            .await
            .is_err()
        {
            return;
        }
    }
    let mut last = None;
    while let Some(chunk) = reader.next_chunk().await {
        for report in chunk {
            let at = report.at;
            wait_until(&clock, at).await;
            if tx
                .send(Event::Source(SourceReport::Cycle(report)))
                .await
                .is_err()
            {
                return;
            }
            last = Some(at);
        }
    }
    clock.stop_at(last.unwrap_or(end).max(clock.now()));
    let _ = tx
        .send(Event::ReplayEnded(Some(format!(
            "end of the window ({}): the replay stops here",
            utc(end)
        ))))
        .await;
}

/// Sleep until the replay clock reaches `at` (at once when it already has, or a jump forward
/// passes it).
async fn wait_until(clock: &ReplayClock, at: Ts) {
    while !clock.due(at) {
        let ahead = at - clock.now();
        if !ahead.is_finite() {
            return;
        }
        let wall = (ahead / clock.speed()).clamp(0.001, 0.02);
        tokio::time::sleep(Duration::from_secs_f64(wall)).await;
    }
}
