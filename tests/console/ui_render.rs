//! Rendering tests: the console drawn into a `TestBackend` from a hand-built fleet at a fixed
//! time, compared with reviewed snapshots; colours and markers checked cell by cell.

use crate::common;
use std::time::Duration;

use crossterm::event::KeyCode;
use kvtop::app::{App, Event, update};
use kvtop::theme::Theme;
use kvtop_core::engine::{CacheConfig, EngineFlavor, EngineId, EngineSample, Histogram};
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapeError, ScrapePayload, ScrapeReport, TargetId, TargetSpec, Ts,
};
use kvtop_core::metrics::Bucket;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

/// 2024-01-01 12:03:04 UTC.
const NOW: Ts = 1_704_110_584.0;
/// Scrape interval of the test fleet, seconds.
const INTERVAL: f64 = 2.0;
/// Scrapes per engine: three minutes of history.
const STEPS: usize = 90;

const INF: f64 = f64::INFINITY;
const TTFT_BOUNDS: [f64; 8] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, INF];
const ITL_BOUNDS: [f64; 8] = [0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, INF];

/// How one simulated engine behaves; per-scrape increments of its counters and histograms.
#[derive(Clone)]
struct Profile {
    target: &'static str,
    model: &'static str,
    engine: &'static str,
    flavor: EngineFlavor,
    kv_from: f64,
    kv_to: f64,
    running: f64,
    waiting_to: f64,
    /// Requests per scrape landing in each TTFT bucket (not cumulative).
    ttft: [f64; 8],
    itl: [f64; 8],
    gen_per_step: f64,
    prefix_queries_per_step: f64,
    prefix_hits_per_step: f64,
    preemptions_per_step: f64,
    errors_per_step: f64,
    /// Step at which the counters start again from zero (a process restart).
    restart_at: Option<usize>,
    histograms: bool,
}

fn base(target: &'static str, model: &'static str) -> Profile {
    Profile {
        target,
        model,
        engine: "0",
        flavor: EngineFlavor::VllmV1,
        kv_from: 0.2,
        kv_to: 0.4,
        running: 12.0,
        waiting_to: 0.0,
        ttft: [2.0, 8.0, 6.0, 3.0, 1.0, 0.0, 0.0, 0.0],
        itl: [40.0, 300.0, 120.0, 30.0, 8.0, 2.0, 0.0, 0.0],
        gen_per_step: 2400.0,
        prefix_queries_per_step: 8000.0,
        prefix_hits_per_step: 3600.0,
        preemptions_per_step: 0.0,
        errors_per_step: 0.0,
        restart_at: None,
        histograms: true,
    }
}

fn histogram(bounds: &[f64; 8], per_step: &[f64; 8], steps: f64) -> Histogram {
    let mut cumulative = 0.0;
    let buckets: Vec<Bucket> = bounds
        .iter()
        .zip(per_step)
        .map(|(le, n)| {
            cumulative += n * steps;
            Bucket {
                le: *le,
                count: cumulative,
            }
        })
        .collect();
    Histogram {
        buckets,
        sum: None,
        count: Some(cumulative),
    }
}

/// The sample of `p` at scrape `step` (0-based).
fn sample(p: &Profile, step: usize) -> EngineSample {
    let progress = step as f64 / (STEPS - 1) as f64;
    // Counters count scrapes since the last (re)start.
    let n = match p.restart_at {
        Some(r) if step >= r => (step - r + 1) as f64,
        _ => (step + 1) as f64,
    };
    let finished = p.ttft.iter().sum::<f64>() * n;
    EngineSample {
        id: EngineId {
            model: p.model.into(),
            engine: p.engine.into(),
        },
        flavor: p.flavor,
        kv_usage: Some(p.kv_from + (p.kv_to - p.kv_from) * progress),
        running: Some(p.running),
        waiting: Some((p.waiting_to * progress).round()),
        generation_tokens_total: Some(p.gen_per_step * n),
        prompt_tokens_total: Some(p.gen_per_step * 3.0 * n),
        prefix_queries_total: p.histograms.then_some(p.prefix_queries_per_step * n),
        prefix_hits_total: p.histograms.then_some(p.prefix_hits_per_step * n),
        preemptions_total: Some(p.preemptions_per_step * n),
        request_success_total: if p.histograms {
            vec![
                ("stop".into(), finished - p.errors_per_step * n),
                ("abort".into(), p.errors_per_step * n),
            ]
        } else {
            Vec::new()
        },
        process_cpu_seconds_total: Some(2.4 * n),
        ttft: p.histograms.then(|| histogram(&TTFT_BOUNDS, &p.ttft, n)),
        itl: p.histograms.then(|| histogram(&ITL_BOUNDS, &p.itl, n)),
        cache_config: Some(CacheConfig {
            block_size: Some(16),
            num_gpu_blocks: Some(7800),
            enable_prefix_caching: Some(true),
            ..CacheConfig::default()
        }),
        ..EngineSample::default()
    }
}

fn at(step: usize) -> Ts {
    NOW - 1.0 - INTERVAL * (STEPS - 1 - step) as f64
}

fn ok(target: TargetId, step: usize, engines: Vec<EngineSample>) -> ScrapeReport {
    ScrapeReport {
        target,
        at: at(step),
        took: 0.042,
        outcome: Ok(ScrapePayload {
            engines,
            samples: 480,
            bytes: 184_320,
            ..ScrapePayload::default()
        }),
    }
}

fn failed(target: TargetId, step: usize, error: ScrapeError) -> ScrapeReport {
    ScrapeReport {
        target,
        at: at(step),
        took: 0.001,
        outcome: Err(error),
    }
}

fn spec(name: &str) -> TargetSpec {
    TargetSpec {
        name: name.into(),
        url: format!("http://{name}:8000/metrics"),
    }
}

/// Ten rows over nine targets: a hot engine (KV 95 %, queue growing), a warm one (80 %), a
/// data-parallel pair, a V0 engine, one restarted 20 s ago, one stale for 21 s after timeouts,
/// one refused since the start, one answering HTTP 503, and an SGLang engine whose latency
/// histograms are not exported.
fn test_fleet() -> Fleet {
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL,
        ..FleetSettings::default()
    });
    let llama = "meta-llama/Llama-3.1-8B-Instruct";
    let qwen = "Qwen/Qwen2.5-72B-Instruct";
    let hot = Profile {
        kv_from: 0.62,
        kv_to: 0.95,
        running: 48.0,
        waiting_to: 17.0,
        ttft: [0.0, 1.0, 3.0, 6.0, 6.0, 3.0, 1.0, 0.0],
        itl: [10.0, 120.0, 200.0, 100.0, 60.0, 10.0, 0.0, 0.0],
        gen_per_step: 5200.0,
        preemptions_per_step: 0.2,
        errors_per_step: 0.1,
        ..base("vllm-a-0", llama)
    };
    let warm = Profile {
        kv_from: 0.55,
        kv_to: 0.80,
        running: 31.0,
        waiting_to: 2.0,
        ..base("vllm-a-1", llama)
    };
    let dp0 = Profile {
        kv_from: 0.35,
        kv_to: 0.41,
        running: 9.0,
        ..base("vllm-b", qwen)
    };
    let dp1 = Profile {
        engine: "1",
        kv_from: 0.38,
        kv_to: 0.33,
        running: 8.0,
        ..base("vllm-b", qwen)
    };
    let v0 = Profile {
        engine: "",
        flavor: EngineFlavor::VllmV0,
        kv_from: 0.30,
        kv_to: 0.28,
        running: 4.0,
        gen_per_step: 610.0,
        ..base("vllm-c", "mistralai/Mistral-7B-Instruct-v0.3")
    };
    let restarted = Profile {
        restart_at: Some(STEPS - 10),
        kv_from: 0.1,
        kv_to: 0.12,
        running: 2.0,
        ..base("vllm-d", llama)
    };
    let stale = Profile {
        kv_from: 0.5,
        kv_to: 0.7,
        ..base("vllm-e", llama)
    };
    let sglang = Profile {
        engine: "",
        flavor: EngineFlavor::SGLang,
        kv_from: 0.05,
        kv_to: 0.07,
        running: 1.0,
        histograms: false,
        ..base("sglang-h", "google/gemma-2-9b-it")
    };

    // A target is named after its profiles' `target`.
    let add = |fleet: &mut Fleet, profiles: &[&Profile]| {
        let id = fleet.add_target(spec(profiles[0].target));
        for step in 0..STEPS {
            let engines = profiles.iter().map(|p| sample(p, step)).collect();
            fleet.ingest(ok(id, step, engines));
        }
        id
    };
    add(&mut fleet, &[&hot]);
    add(&mut fleet, &[&warm]);
    add(&mut fleet, &[&dp0, &dp1]);
    add(&mut fleet, &[&v0]);
    add(&mut fleet, &[&restarted]);

    // Good until 21 s ago, then timeouts.
    let id = fleet.add_target(spec("vllm-e"));
    for step in 0..STEPS {
        if at(step) <= NOW - 21.0 {
            fleet.ingest(ok(id, step, vec![sample(&stale, step)]));
        } else {
            fleet.ingest(failed(id, step, ScrapeError::Timeout { after_ms: 2000 }));
        }
    }
    let id = fleet.add_target(spec("vllm-f"));
    for step in 0..STEPS {
        fleet.ingest(failed(id, step, ScrapeError::Refused));
    }
    let id = fleet.add_target(spec("vllm-g"));
    fleet.ingest(failed(
        id,
        STEPS - 1,
        ScrapeError::Http {
            status: 503,
            reason: Some("Service Unavailable".into()),
        },
    ));
    add(&mut fleet, &[&sglang]);
    fleet.tick(NOW);
    fleet
}

fn app(theme: Theme) -> App {
    let mut app = App::new(
        test_fleet(),
        theme,
        "9 targets from kvtop.toml".into(),
        Duration::from_secs_f64(INTERVAL),
        Duration::from_secs(300),
    );
    update(&mut app, Event::Tick, NOW);
    app
}

/// Row and column where `needle` first appears, in display columns.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let area = buf.area;
    (area.top()..area.bottom()).find_map(|y| {
        let cells: Vec<&str> = (area.left()..area.right())
            .map(|x| buf[(x, y)].symbol())
            .collect();
        let line: String = cells.concat();
        let byte = line.find(needle)?;
        // Columns up to that byte offset (every symbol here is one column wide).
        let mut bytes = 0;
        let x = cells.iter().position(|s| {
            let here = bytes;
            bytes += s.len();
            here >= byte
        })?;
        Some((u16::try_from(x).ok()?, y))
    })
}

/// Column where the name starts in a table row: after the two-column severity badge.
const NAME_X: u16 = 3;

fn row_of(buf: &Buffer, name: &str) -> u16 {
    let Some((x, y)) = find(buf, name) else {
        panic!("{name} not drawn:\n{}", text(buf));
    };
    assert_eq!(x, NAME_X, "{name} is not at the name column of a table row");
    y
}

#[test]
fn fleet_at_80x24() {
    let app = app(Theme::fallback());
    insta::assert_snapshot!(text(&render(&app, 80, 24, NOW)));
}

#[test]
fn fleet_at_160x48_with_the_hot_engine_selected() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('j'), NOW);
    insta::assert_snapshot!(text(&render(&app, 160, 48, NOW)));
}

#[test]
fn selected_down_engine_at_160x48_shows_its_error() {
    let mut app = app(Theme::fallback());
    for _ in 0..8 {
        press(&mut app, KeyCode::Char('j'), NOW);
    }
    insta::assert_snapshot!(text(&render(&app, 160, 48, NOW)));
}

#[test]
fn expanded_detail_at_80x24() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Enter, NOW);
    insta::assert_snapshot!(text(&render(&app, 80, 24, NOW)));
}

#[test]
fn sorted_by_kv_at_100x30() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('s'), NOW);
    press(&mut app, KeyCode::Char('s'), NOW);
    insta::assert_snapshot!(text(&render(&app, 100, 30, NOW)));
}

#[test]
fn help_overlay_at_80x24() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('?'), NOW);
    insta::assert_snapshot!(text(&render(&app, 80, 24, NOW)));
}

#[test]
fn help_overlay_at_160x48() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('?'), NOW);
    insta::assert_snapshot!(text(&render(&app, 160, 48, NOW)));
}

#[test]
fn filter_prompt_at_80x24() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('/'), NOW);
    for c in "vllm-a".chars() {
        press(&mut app, KeyCode::Char(c), NOW);
    }
    insta::assert_snapshot!(text(&render(&app, 80, 24, NOW)));
}

#[test]
fn frozen_view_at_80x24_keeps_the_snapshot_and_its_ages() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('f'), NOW);
    // Ten seconds later: the refused target keeps failing, the clock moves on.
    let later = NOW + 10.0;
    let Some(target) = app.fleet.targets().get(6).map(|t| t.id) else {
        panic!("test fleet has no seventh target");
    };
    update(
        &mut app,
        Event::Scrape(ScrapeReport {
            target,
            at: later,
            took: 0.001,
            outcome: Err(ScrapeError::Refused),
        }),
        later,
    );
    update(&mut app, Event::Tick, later);
    // The notice has expired; the FROZEN marker stays.
    let later = later + 1.0;
    update(&mut app, Event::Tick, later);
    let buf = render(&app, 80, 24, later);
    let screen = text(&buf);
    assert!(screen.contains("FROZEN"), "{screen}");
    assert!(screen.contains("12:03:15"), "the clock moves on: {screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn smallest_supported_terminal_60x15() {
    let app = app(Theme::fallback());
    insta::assert_snapshot!(text(&render(&app, 60, 15, NOW)));
}

#[test]
fn too_small_terminal_says_so() {
    let app = app(Theme::fallback());
    insta::assert_snapshot!(text(&render(&app, 50, 12, NOW)));
}

#[test]
fn no_size_panics() {
    let mut app = app(Theme::fallback());
    let heights = [0, 1, 2, 3, 14, 15, 16, 23, 24, 39, 40, 41];
    let widths = [0, 1, 2, 10, 59, 60, 61, 79, 80, 81, 120, 200];
    for expanded in [false, true] {
        app.detail_expanded = expanded;
        for help in [false, true] {
            app.set_help_visible(help);
            for &w in &widths {
                for &h in &heights {
                    render(&app, w, h, NOW);
                }
            }
        }
    }
}

#[test]
fn an_empty_fleet_draws_a_waiting_message() {
    let app = App::new(
        Fleet::new(FleetSettings::default()),
        Theme::fallback(),
        "no targets".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    let screen = text(&render(&app, 80, 24, NOW));
    assert!(screen.contains("no engines yet"), "{screen}");
    assert!(screen.contains("no engine selected"), "{screen}");
}

#[test]
fn kv_bar_colours_follow_the_level() {
    let theme = Theme::fallback();
    let app = app(theme.clone());
    let buf = render(&app, 80, 24, NOW);
    let Some((kv_x, _)) = find(&buf, "KV ") else {
        panic!("no KV header:\n{}", text(&buf));
    };
    let bar_fg = |name: &str| buf[(kv_x, row_of(&buf, name))].fg;
    // 0.95 → high, 0.80 → mid, ~0.41 → low.
    assert_eq!(Some(bar_fg("vllm-a-0")), theme.bar_high.fg);
    assert_eq!(Some(bar_fg("vllm-a-1")), theme.bar_mid.fg);
    assert_eq!(Some(bar_fg("vllm-b/0")), theme.bar_low.fg);
    assert_eq!(buf[(kv_x, row_of(&buf, "vllm-a-0"))].symbol(), "█");
}

#[test]
fn status_cells_use_the_status_styles() {
    let theme = Theme::fallback();
    let app = app(theme.clone());
    let buf = render(&app, 80, 24, NOW);
    let Some((status_x, _)) = find(&buf, "STATUS") else {
        panic!("no STATUS header:\n{}", text(&buf));
    };
    let cell = |name: &str| buf[(status_x, row_of(&buf, name))].clone();
    let down = cell("vllm-f");
    assert_eq!(down.symbol(), "D");
    assert_eq!(Some(down.fg), theme.down.fg);
    assert!(down.modifier.contains(Modifier::BOLD));
    assert_eq!(Some(cell("vllm-e").fg), theme.stale.fg);
    assert_eq!(Some(cell("vllm-c").fg), theme.ok.fg);
    assert_eq!(Some(cell("vllm-d").fg), theme.warn.fg);
    // The reason replaces the values of a down row.
    let Some((reason_x, reason_y)) = find(&buf, "refused") else {
        panic!("no reason:\n{}", text(&buf));
    };
    assert_eq!(reason_y, row_of(&buf, "vllm-f"));
    assert_eq!(Some(buf[(reason_x, reason_y)].fg), theme.down.fg);
    assert!(find(&buf, "HTTP 503").is_some());
}

#[test]
fn header_shows_counts_window_and_clock() {
    let app = app(Theme::fallback());
    let buf = render(&app, 160, 48, NOW);
    let screen = text(&buf);
    let header = screen.lines().next().unwrap_or_default();
    // 7 engines up (hot, warm, 2 data-parallel, V0, restarted, SGLang), 1 stale, 2 down.
    assert!(header.contains("7 up 1 stale 2 down"), "{header}");
    assert!(header.contains("p95 over 1m"), "{header}");
    assert!(header.contains("every 2s"), "{header}");
    assert!(header.ends_with("12:03:04 UTC"), "{header}");
    assert_eq!(buf[(1, 0)].bg, Color::Cyan);
}

#[test]
fn the_selected_row_is_highlighted() {
    let theme = Theme::fallback();
    let mut app = app(theme.clone());
    press(&mut app, KeyCode::Char('j'), NOW);
    press(&mut app, KeyCode::Char('j'), NOW);
    let buf = render(&app, 80, 24, NOW);
    let y = row_of(&buf, "vllm-a-1");
    for x in [0, 40, 79] {
        assert!(buf[(x, y)].modifier.contains(Modifier::REVERSED), "x={x}");
    }
    let other = row_of(&buf, "vllm-a-0");
    assert!(!buf[(0, other)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn mono_theme_uses_no_colour_and_marks_levels_in_text() {
    let theme = Theme::fallback_mono();
    let mut app = app(theme);
    for (w, h, help) in [(80, 24, false), (160, 48, false), (80, 24, true)] {
        app.set_help_visible(help);
        let buf = render(&app, w, h, NOW);
        for cell in &buf.content {
            assert_eq!(cell.fg, Color::Reset, "fg of {:?}", cell.symbol());
            assert_eq!(cell.bg, Color::Reset, "bg of {:?}", cell.symbol());
        }
        if !help {
            let screen = text(&buf);
            let row = |name: &str| {
                screen.lines().find(|l| {
                    l.get(usize::from(NAME_X)..)
                        .is_some_and(|r| r.starts_with(name))
                })
            };
            let hot = row("vllm-a-0");
            let warm = row("vllm-a-1");
            assert!(hot.is_some_and(|l| l.contains("95%!")), "{hot:?}");
            assert!(warm.is_some_and(|l| l.contains("80%+")), "{warm:?}");
        }
    }
}

#[test]
fn a_thousand_rows_scroll_to_the_selection() {
    let mut fleet = Fleet::new(FleetSettings::default());
    for i in 0..1000 {
        let id = fleet.add_target(spec(&format!("engine-{i:04}")));
        let p = Profile {
            kv_from: f64::from(i % 100) / 100.0,
            kv_to: f64::from(i % 100) / 100.0,
            ..base("x", "org/model")
        };
        for step in [STEPS - 2, STEPS - 1] {
            fleet.ingest(ok(id, step, vec![sample(&p, step)]));
        }
    }
    let mut app = App::new(
        fleet,
        Theme::fallback(),
        "1000 targets".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    update(&mut app, Event::Tick, NOW);
    press(&mut app, KeyCode::Char('G'), NOW);
    let buf = render(&app, 200, 60, NOW);
    let y = row_of(&buf, "engine-0999");
    assert!(buf[(NAME_X, y)].modifier.contains(Modifier::REVERSED));
    assert!(find(&buf, "engine-0000").is_none());
    // Paging up by a table height keeps the selection in view at the top of the table.
    press(&mut app, KeyCode::PageUp, NOW);
    let buf = render(&app, 200, 60, NOW);
    let selected = (0..60).find(|&y| buf[(NAME_X, y)].modifier.contains(Modifier::REVERSED));
    assert_eq!(selected, Some(2), "{}", text(&buf));
}

use common::screen::{buffer_text as text, press, render};
