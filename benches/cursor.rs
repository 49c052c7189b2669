//! Seeking with the time cursor through an hour held in memory (`kvtop replay` of a one-hour
//! recording once it has been read, or a console that has run for an hour): one step of the
//! cursor rebuilds the fleet, the findings and the model quantiles as they were at its instant.
//!
//! Eight engines scraped every second for an hour; engine 0's KV cache is above 90 % from
//! minute 20 to minute 40, so the findings at the cursor change along the hour. The cursor is
//! put 30 minutes back before timing; each iteration steps it back 10 s and forward again (two
//! seeks), so the figure per seek is half an iteration.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kvtop::app::{App, Event, update};
use kvtop_core::engine::{EngineFlavor, EngineId, EngineSample};
use kvtop_core::fleet::{ScrapePayload, ScrapeReport, Ts};

// Not every shared constant is used here.
#[allow(dead_code)]
mod common;

use common::{START, histogram};

const ENGINES: usize = 8;
const HOUR: usize = 3600;

fn sample(engine: usize, second: usize) -> EngineSample {
    let n = (second + 1) as f64;
    let hot = engine == 0 && (1200..2400).contains(&second);
    EngineSample {
        id: EngineId {
            model: format!("model-{}", engine % 2),
            engine: "0".into(),
        },
        flavor: EngineFlavor::VllmV1,
        kv_usage: Some(if hot {
            0.95
        } else {
            0.3 + 0.02 * engine as f64
        }),
        running: Some(20.0 + engine as f64),
        waiting: Some(if hot { 40.0 } else { 0.0 }),
        generation_tokens_total: Some(2000.0 * n),
        prefix_queries_total: Some(500.0 * n),
        prefix_hits_total: Some(300.0 * n),
        ttft: Some(histogram([2.0, 5.0, 3.0, 1.0, 1.0, 0.0], n)),
        itl: Some(histogram([30.0, 10.0, 2.0, 0.0, 0.0, 0.0], n)),
        ..EngineSample::default()
    }
}

fn key(app: &mut App, c: char, now: Ts) {
    update(
        app,
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
        now,
    );
}

/// An hour of scrapes and ticks, as the console folds them.
fn an_hour() -> (App, Ts) {
    let (fleet, ids) = common::fleet_of(ENGINES);
    let mut app = common::console(fleet, ENGINES);
    for second in 0..HOUR {
        let at = START + second as f64;
        for (i, id) in ids.iter().enumerate() {
            let report = ScrapeReport {
                target: *id,
                at,
                took: 0.01,
                outcome: Ok(ScrapePayload {
                    engines: vec![sample(i, second)],
                    ..ScrapePayload::default()
                }),
            };
            update(&mut app, Event::Scrape(report), at);
        }
        update(&mut app, Event::Tick, at);
    }
    (app, START + HOUR as f64)
}

fn cursor(c: &mut Criterion) {
    let (mut app, now) = an_hour();
    // 30 minutes back: `{` steps a minute.
    for _ in 0..30 {
        key(&mut app, '{', now);
    }
    // The header says where the cursor is: make sure the timed steps are seeks in the past.
    let area = ratatui::layout::Rect::new(0, 0, 120, 30);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    kvtop::ui::draw_into(&mut buf, area, &app, now);
    let header: String = (0..area.width)
        .map(|x| buf[(x, 0)].symbol().to_owned())
        .collect();
    assert!(
        header.contains("(−30m)"),
        "the cursor is not 30 minutes back: {header}"
    );
    c.bench_function(
        "cursor step 30 min back in an hour of 8 engines (2 seeks)",
        |b| {
            b.iter(|| {
                key(&mut app, '[', now);
                key(&mut app, ']', now);
                black_box(&app);
            })
        },
    );
}

criterion_group!(benches, cursor);
criterion_main!(benches);
