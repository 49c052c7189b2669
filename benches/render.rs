//! Drawing the console for a 1,000-engine fleet at 200×60: `ui::draw_into` a buffer (our cost),
//! and a whole `Terminal::draw` on a test backend (ours plus ratatui's frame diff); the same
//! whole draw for 8 engines at 160×45, the console of issue 17's table, through ratatui's
//! `Terminal` and through the console's own `Screen` (one buffer and a compact copy of what the
//! terminal shows, `src/screen.rs`).
//!
//! Every engine has two minutes of history at a 1 s interval, with latency histograms, so the
//! detail charts of the selected engine have data; the table is sorted by KV usage (the
//! costliest sort key path) with the selection in the middle of the fleet.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use kvtop::app::{App, Event, SortColumn, update};
use kvtop::screen::Screen;

use kvtop_core::engine::{EngineFlavor, EngineId, EngineSample};
use kvtop_core::fleet::{ScrapePayload, ScrapeReport, Ts};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

mod common;

use common::{ENGINES, START, STEPS, histogram};

fn sample(engine: usize, step: usize) -> EngineSample {
    let n = (step + 1) as f64;
    let spread = (engine % 97) as f64 / 97.0;
    EngineSample {
        id: EngineId {
            model: "meta-llama/Llama-3.1-8B-Instruct".into(),
            engine: "0".into(),
        },
        flavor: EngineFlavor::VllmV1,
        kv_usage: Some(spread * (0.8 + 0.2 * (step % 10) as f64 / 10.0)),
        running: Some((engine % 40) as f64),
        waiting: Some((step % 7) as f64),
        generation_tokens_total: Some(1000.0 * n * (1.0 + spread)),
        prefix_queries_total: Some(500.0 * n),
        prefix_hits_total: Some(200.0 * n),
        ttft: Some(histogram([2.0, 5.0, 3.0, 1.0, 1.0, 0.0], n)),
        itl: Some(histogram([30.0, 10.0, 2.0, 0.0, 0.0, 0.0], n)),
        ..EngineSample::default()
    }
}

fn app() -> (App, Ts) {
    app_of(ENGINES)
}

/// The console over `engines` engines with history, sorted by KV usage, the selection in the
/// middle of the fleet.
fn app_of(engines: usize) -> (App, Ts) {
    let (mut fleet, ids) = common::fleet_of(engines);
    for step in 0..STEPS {
        for (i, id) in ids.iter().enumerate() {
            fleet.ingest(ScrapeReport {
                target: *id,
                at: START + step as f64,
                took: 0.01,
                outcome: Ok(ScrapePayload {
                    engines: vec![sample(i, step)],
                    ..ScrapePayload::default()
                }),
            });
        }
    }
    let now = START + STEPS as f64;
    let mut app = common::console(fleet, engines);
    app.sort = SortColumn::Kv;
    app.sort_descending = true;
    update(&mut app, Event::Tick, now);
    for _ in 0..engines / 2 {
        update(
            &mut app,
            Event::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Down,
                crossterm::event::KeyModifiers::NONE,
            )),
            now,
        );
    }
    (app, now)
}

fn render(c: &mut Criterion) {
    let (app, now) = app();
    let area = Rect::new(0, 0, 200, 60);
    let mut buf = Buffer::empty(area);
    c.bench_function("draw_into 1000 engines 200x60", |b| {
        b.iter(|| {
            buf.reset();
            kvtop::ui::draw_into(&mut buf, area, black_box(&app), now);
        })
    });

    // Grouped by model (`m`): the model line reads the cycle's merged quantiles rather than
    // merging 1,000 engines' histograms again on each frame.
    let (mut grouped, _) = crate::app();
    grouped.group_by_model = true;
    // The top of the table, so the model line is drawn.
    let home = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Home,
        crossterm::event::KeyModifiers::NONE,
    );
    update(&mut grouped, Event::Key(home), now);
    c.bench_function("draw_into 1000 engines 200x60 grouped by model", |b| {
        b.iter(|| {
            buf.reset();
            kvtop::ui::draw_into(&mut buf, area, black_box(&grouped), now);
        })
    });

    whole_draws(c, "terminal.draw 1000 engines 200x60", &app, now, (200, 60));
}

/// The console of issue 17's table: 8 engines on a 160×45 terminal, a whole `Terminal::draw`,
/// and the same frames through the console's `Screen`.
fn small_fleet(c: &mut Criterion) {
    let (app, now) = app_of(8);
    whole_draws(c, "terminal.draw 8 engines 160x45", &app, now, (160, 45));
    let mut screen = Screen::new(TestBackend::new(160, 45), Rect::new(0, 0, 160, 45));
    let mut tick = 0.0;
    c.bench_function("screen.draw 8 engines 160x45", |b| {
        b.iter(|| {
            tick = 1.0 - tick;
            let result = screen
                .draw(|buf, area| kvtop::ui::draw_into(buf, area, black_box(&app), now + tick));
            if let Err(e) = result {
                panic!("draw: {e}");
            }
        })
    });
}

/// Time whole `Terminal::draw`s of `app` on a test terminal of `size`, the clock second
/// alternating so every frame has a change to diff.
fn whole_draws(c: &mut Criterion, name: &str, app: &App, now: Ts, (width, height): (u16, u16)) {
    let mut terminal = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(e) => panic!("test terminal: {e}"),
    };
    let mut tick = 0.0;
    c.bench_function(name, |b| {
        b.iter(|| {
            tick = 1.0 - tick;
            let result = terminal.draw(|frame| kvtop::ui::draw(frame, black_box(app), now + tick));
            if let Err(e) = result {
                panic!("draw: {e}");
            }
        })
    });
}

/// Criterion reports means; the goal is on the 99th percentile of single frames, so time 2,000
/// frames one by one (the clock second alternating so each frame has changes to diff) and print
/// the distribution.
fn frame_percentiles(_: &mut Criterion) {
    let (app, now) = app();
    let mut terminal = match Terminal::new(TestBackend::new(200, 60)) {
        Ok(t) => t,
        Err(e) => panic!("test terminal: {e}"),
    };
    // Wall time includes whatever else the machine runs; this thread's CPU time does not.
    let (mut wall, mut cpu): (Vec<Duration>, Vec<Duration>) = (0..2000)
        .map(|i| {
            let started = std::time::Instant::now();
            let cpu_started = thread_cpu_time();
            let at = now + (i % 2) as f64;
            if let Err(e) = terminal.draw(|frame| kvtop::ui::draw(frame, black_box(&app), at)) {
                panic!("draw: {e}");
            }
            (
                started.elapsed(),
                thread_cpu_time().saturating_sub(cpu_started),
            )
        })
        .unzip();
    for (what, times) in [("wall", &mut wall), ("thread CPU", &mut cpu)] {
        times.sort();
        let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        println!(
            "terminal.draw 1000 engines 200x60, 2000 frames, {what}: p50 {:?}  p99 {:?}  max {:?}",
            pick(0.50),
            pick(0.99),
            pick(1.0)
        );
    }
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a live timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

criterion_group!(benches, render, small_fleet, frame_percentiles);
criterion_main!(benches);
