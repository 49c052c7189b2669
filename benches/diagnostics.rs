//! The rules inside the console for a 1,000-engine fleet: what `benches/rules.rs` does not
//! cover (it times `RuleEngine::evaluate` over prepared inputs).
//!
//! - `refresh_rules`: the console's evaluation as the event loop runs it once per drawn batch —
//!   inputs built from the fleet state, every built-in rule evaluated, the table marks rebuilt.
//! - `update path`: one second of a 1,000-engine console: 1,000 `Event::Scrape` folded through
//!   `update` (ingest, derived signals, history) and one `refresh_rules`.
//! - `draw diagnostics` / `draw routing`: the two views at 200×60 (the routing view computes
//!   the explainer for every model group on each draw).
//!
//! The fleet: 1,000 engines over 4 models with two minutes of history at 1 s; one engine in ten
//! is in trouble (KV 95 %, a queue, TTFT p95 around 1 s), so findings are firing and pending in
//! steady state, as in an incident.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kvtop::app::{App, Event, View, update};
use kvtop_core::engine::{CacheConfig, EngineFlavor, EngineId, EngineSample};
use kvtop_core::fleet::{ScrapePayload, ScrapeReport, TargetId, Ts};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

mod common;

use common::{ENGINES, START, STEPS, histogram};
const MODELS: [&str; 4] = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen2.5-7B-Instruct",
    "mistralai/Mistral-7B-Instruct-v0.3",
];

fn sample(engine: usize, step: usize) -> EngineSample {
    let n = (step + 1) as f64;
    let spread = (engine % 97) as f64 / 97.0;
    let sick = engine % 10 == 0;
    EngineSample {
        id: EngineId {
            model: MODELS[engine % MODELS.len()].into(),
            engine: "0".into(),
        },
        flavor: EngineFlavor::VllmV1,
        kv_usage: Some(if sick { 0.95 } else { 0.2 + 0.5 * spread }),
        running: Some((engine % 40) as f64),
        waiting: Some(if sick { 30.0 } else { 0.0 }),
        generation_tokens_total: Some(1000.0 * n * (1.0 + spread)),
        prompt_tokens_total: Some(3000.0 * n),
        prefix_queries_total: Some(500.0 * n),
        prefix_hits_total: Some(450.0 * n),
        ttft: Some(if sick {
            histogram([0.0, 0.0, 1.0, 3.0, 6.0, 1.0], n)
        } else {
            histogram([9.0, 2.0, 0.0, 0.0, 0.0, 0.0], n)
        }),
        itl: Some(histogram([30.0, 10.0, 2.0, 0.0, 0.0, 0.0], n)),
        cache_config: Some(CacheConfig {
            block_size: Some(16),
            num_gpu_blocks: Some(7500),
            enable_prefix_caching: Some(true),
            ..CacheConfig::default()
        }),
        ..EngineSample::default()
    }
}

fn report(target: TargetId, engine: usize, step: usize) -> ScrapeReport {
    ScrapeReport {
        target,
        at: START + step as f64,
        took: 0.01,
        outcome: Ok(ScrapePayload {
            engines: vec![sample(engine, step)],
            ..ScrapePayload::default()
        }),
    }
}

/// The console after two minutes: scraped every second, the rules run after every second.
fn app() -> (App, Vec<TargetId>, Ts) {
    let (fleet, ids) = common::fleet_of(ENGINES);
    let mut app = common::console(fleet, ENGINES);
    for step in 0..STEPS {
        for (i, id) in ids.iter().enumerate() {
            app.fleet.ingest(report(*id, i, step));
        }
        app.evaluate_rules(START + step as f64);
    }
    let now = START + STEPS as f64;
    update(&mut app, Event::Tick, now);
    (app, ids, now)
}

fn refresh(c: &mut Criterion) {
    let (mut app, _, now) = app();
    let counts = app.diag.view().engine().counts();
    println!(
        "steady state: {} critical, {} warning, {} info firing, {} pending",
        counts.critical, counts.warning, counts.info, counts.pending
    );
    let mut at = now;
    c.bench_function("refresh_rules 1000 engines", |b| {
        b.iter(|| {
            at += 1.0;
            app.diag.mark_stale();
            app.refresh_rules(black_box(at));
        })
    });
}

fn update_path(c: &mut Criterion) {
    let (mut app, ids, _) = app();
    let mut step = STEPS;
    c.bench_function("update path: 1000 scrapes + refresh_rules", |b| {
        b.iter_batched(
            || {
                step += 1;
                let events: Vec<Event> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| Event::Scrape(report(*id, i, step)))
                    .collect();
                (events, START + step as f64)
            },
            |(events, now)| {
                for event in events {
                    update(&mut app, event, now);
                }
                app.refresh_rules(now);
            },
            BatchSize::PerIteration,
        )
    });
}

fn views(c: &mut Criterion) {
    let (mut app, _, now) = app();
    let area = Rect::new(0, 0, 200, 60);
    let mut buf = Buffer::empty(area);
    app.view = View::Diagnostics;
    c.bench_function("draw diagnostics 1000 engines 200x60", |b| {
        b.iter(|| {
            buf.reset();
            kvtop::ui::draw_into(&mut buf, area, black_box(&app), now);
        })
    });
    app.view = View::Routing;
    c.bench_function("draw routing 1000 engines 200x60", |b| {
        b.iter(|| {
            buf.reset();
            kvtop::ui::draw_into(&mut buf, area, black_box(&app), now);
        })
    });
}

criterion_group!(benches, refresh, update_path, views);
criterion_main!(benches);
