//! The findings on screen: a fleet whose signals trigger known built-in rules for longer than
//! their `for` durations, fed through `update` scrape by scrape with the rules evaluated on
//! every tick, drawn into a `TestBackend`. Snapshots of the diagnostics and routing views and
//! of the first screen; severity badge colours; no colour at all in mono.

use crate::common;
use std::time::Duration;

use crossterm::event::KeyCode;
use kvtop::app::{App, Event, View, update};
use kvtop::theme::Theme;
use kvtop_core::engine::{CacheConfig, EngineFlavor, EngineId, EngineSample, Histogram};
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapeError, ScrapePayload, ScrapeReport, TargetId, TargetSpec, Ts,
};
use kvtop_core::metrics::Bucket;
use ratatui::buffer::Buffer;
use ratatui::style::Color;

/// 2024-01-01 12:03:04 UTC.
const NOW: Ts = 1_704_110_584.0;
const INTERVAL: f64 = 2.0;
/// Scrapes per engine: 6 min 40 s, longer than the 5-minute rules.
const STEPS: usize = 200;
/// The scrape from which the recovered engine's KV usage is back to normal (two minutes ago).
const RECOVERY_STEP: usize = STEPS - 60;

const TTFT_BOUNDS: [f64; 8] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, f64::INFINITY];
/// Requests per scrape in each TTFT bucket. Slow: p95 = 1 + 1.5 × 7.5/8 = 2.41 s.
const TTFT_SLOW: [f64; 8] = [0.0, 0.0, 0.0, 0.0, 2.0, 8.0, 0.0, 0.0];
/// Middling: p95 = 0.1 + 0.15 × 4.5/5 = 235 ms.
const TTFT_MID: [f64; 8] = [0.0, 5.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0];
/// Fast: every request under 50 ms, p95 = 47.5 ms.
const TTFT_FAST: [f64; 8] = [10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];

const LLAMA: &str = "meta-llama/Llama-3.1-8B-Instruct";
const QWEN: &str = "Qwen/Qwen2.5-7B-Instruct";

struct Engine {
    name: &'static str,
    model: &'static str,
    /// KV usage at scrape `step`.
    kv: fn(usize) -> f64,
    waiting: f64,
    ttft: [f64; 8],
}

fn at(step: usize) -> Ts {
    NOW - 1.0 - INTERVAL * (STEPS - 1 - step) as f64
}

fn sample(e: &Engine, step: usize) -> EngineSample {
    let n = (step + 1) as f64;
    let mut cumulative = 0.0;
    let buckets = TTFT_BOUNDS
        .iter()
        .zip(e.ttft)
        .map(|(le, per_step)| {
            cumulative += per_step * n;
            Bucket {
                le: *le,
                count: cumulative,
            }
        })
        .collect();
    EngineSample {
        id: EngineId {
            model: e.model.into(),
            engine: "0".into(),
        },
        flavor: EngineFlavor::VllmV1,
        kv_usage: Some((e.kv)(step)),
        running: Some(24.0),
        waiting: Some(e.waiting),
        ttft: Some(Histogram {
            buckets,
            sum: None,
            count: Some(cumulative),
        }),
        cache_config: Some(CacheConfig {
            block_size: Some(16),
            num_gpu_blocks: Some(8000),
            ..CacheConfig::default()
        }),
        ..EngineSample::default()
    }
}

/// Five engines and one that never answers, scraped every 2 s for 6 min 40 s until `NOW`:
/// - `vllm-hot`: KV 97 % and TTFT p95 2.4 s throughout (KV above 95 % for 5 min: critical);
/// - `vllm-warm`: KV 92 %, fast (KV above 90 % for 5 min: warning);
/// - `vllm-ok`: KV 35 %, fast: nothing;
/// - `vllm-recovered`: KV 97 % until two minutes ago, then 30 % (its findings resolved);
/// - `vllm-qwen`: KV 50 %, TTFT p95 235 ms (over the 100 ms target: info);
/// - `vllm-gone`: connection refused throughout (engine down: critical).
fn app(theme: Theme) -> App {
    let engines = [
        Engine {
            name: "vllm-hot",
            model: LLAMA,
            kv: |_| 0.97,
            waiting: 20.0,
            ttft: TTFT_SLOW,
        },
        Engine {
            name: "vllm-warm",
            model: LLAMA,
            kv: |_| 0.92,
            waiting: 0.0,
            ttft: TTFT_FAST,
        },
        Engine {
            name: "vllm-ok",
            model: LLAMA,
            kv: |_| 0.35,
            waiting: 0.0,
            ttft: TTFT_FAST,
        },
        Engine {
            name: "vllm-recovered",
            model: LLAMA,
            kv: |step| if step < RECOVERY_STEP { 0.97 } else { 0.3 },
            waiting: 0.0,
            ttft: TTFT_FAST,
        },
        Engine {
            name: "vllm-qwen",
            model: QWEN,
            kv: |_| 0.5,
            waiting: 0.0,
            ttft: TTFT_MID,
        },
    ];
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL,
        ..FleetSettings::default()
    });
    let spec = |name: &str| TargetSpec {
        name: name.into(),
        url: format!("http://{name}:8000/metrics"),
    };
    let targets: Vec<TargetId> = engines
        .iter()
        .map(|e| fleet.add_target(spec(e.name)))
        .collect();
    let gone = fleet.add_target(spec("vllm-gone"));
    let mut app = App::new(
        fleet,
        theme,
        "6 targets".into(),
        Duration::from_secs_f64(INTERVAL),
        Duration::from_secs(300),
    );
    for step in 0..STEPS {
        let now = at(step);
        for (engine, target) in engines.iter().zip(&targets) {
            let report = ScrapeReport {
                target: *target,
                at: now,
                took: 0.02,
                outcome: Ok(ScrapePayload {
                    engines: vec![sample(engine, step)],
                    samples: 300,
                    bytes: 90_000,
                    ..ScrapePayload::default()
                }),
            };
            update(&mut app, Event::Scrape(report), now);
        }
        let refused = ScrapeReport {
            target: gone,
            at: now,
            took: 0.001,
            outcome: Err(ScrapeError::Refused),
        };
        update(&mut app, Event::Scrape(refused), now);
        update(&mut app, Event::Tick, now);
    }
    update(&mut app, Event::Tick, NOW);
    app
}

/// The row of the screen whose text contains `needle`.
fn line_with<'a>(screen: &'a str, needle: &str) -> &'a str {
    match screen.lines().find(|l| l.contains(needle)) {
        Some(line) => line,
        None => panic!("{needle:?} not on screen:\n{screen}"),
    }
}

/// Row index of the table row of engine `name` (its name after the badge column).
fn table_row(buf: &Buffer, name: &str) -> u16 {
    let area = buf.area;
    let found = (area.top()..area.bottom()).find(|&y| {
        let line: String = (3..area.right()).map(|x| buf[(x, y)].symbol()).collect();
        line.starts_with(&format!("{name} "))
    });
    match found {
        Some(y) => y,
        None => panic!("no table row for {name}:\n{}", text(buf)),
    }
}

#[test]
fn the_fleet_triggers_the_expected_rules() {
    let app = app(Theme::fallback());
    let firing: Vec<(String, String)> = app
        .diag
        .view()
        .findings()
        .iter()
        .filter(|f| f.state == kvtop_core::rules::FindingState::Firing)
        .map(|f| (f.subject.label().to_string(), f.rule_id.to_string()))
        .collect();
    let has = |engine: &str, rule: &str| firing.iter().any(|(e, r)| e == engine && r == rule);
    assert!(has("vllm-hot", "kv-critical"), "{firing:?}");
    assert!(has("vllm-hot", "ttft-kv-thrash"), "{firing:?}");
    assert!(has("vllm-warm", "kv-high"), "{firing:?}");
    assert!(!has("vllm-warm", "kv-critical"), "{firing:?}");
    assert!(has("vllm-qwen", "ttft-target"), "{firing:?}");
    assert!(has("vllm-gone", "engine-down"), "{firing:?}");
    assert!(
        !firing
            .iter()
            .any(|(e, _)| e == "vllm-ok" || e == "vllm-recovered"),
        "{firing:?}"
    );
    let resolved = app.diag.view().findings().iter().any(|f| {
        f.subject.label() == "vllm-recovered"
            && f.rule_id.as_ref() == "kv-breaker"
            && matches!(f.state, kvtop_core::rules::FindingState::Resolved { .. })
    });
    assert!(
        resolved,
        "the recovered engine's breaker finding is resolved"
    );
}

#[test]
fn diagnostics_at_80x24() {
    let mut app = app(Theme::fallback());
    // From the hot engine: the view opens on its worst finding.
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('x'));
    assert_eq!(app.view, View::Diagnostics);
    let screen = text(&render(&app, 80, 24));
    // The most severe findings first; the selected one's evidence in full.
    let first = screen.lines().nth(2).unwrap_or_default();
    assert!(first.contains("CRIT"), "{screen}");
    assert!(
        screen.contains("CRIT · KV above 95% · vllm-hot"),
        "{screen}"
    );
    assert!(screen.contains("✓ kv_usage = 97% > 95%"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn diagnostics_at_160x48_with_the_thrashing_finding_selected() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('x'));
    for _ in 0..30 {
        let findings = app.diag.view().findings();
        let at = app.diag.selection(findings).and_then(|i| findings.get(i));
        if at.is_some_and(|f| f.rule_id.as_ref() == "ttft-kv-thrash") {
            break;
        }
        press(&mut app, KeyCode::Char('j'));
    }
    let screen = text(&render(&app, 160, 48));
    assert!(screen.contains("ttft_p95 = 2.41s > 500ms"), "{screen}");
    assert!(screen.contains("T1.1 · rule ttft-kv-thrash"), "{screen}");
    // The recovered engine's findings are listed as resolved two minutes ago.
    // It recovered at scrape 140, at NOW - 1 - 2 × 59 s = 1m59s ago.
    let recovered = line_with(&screen, "vllm-recovered");
    assert!(recovered.contains("resolved 1m59s ago"), "{recovered}");
    insta::assert_snapshot!(screen);
}

#[test]
fn enter_jumps_from_a_finding_to_its_engine() {
    let mut app = app(Theme::fallback());
    let selected = |app: &App| {
        let rows = app.rows(NOW);
        app.selected_engine(&rows).map(|e| e.name.clone())
    };
    assert_eq!(selected(&app).as_deref(), Some("vllm-gone"));
    press(&mut app, KeyCode::Char('x'));
    // Down to the second incident (the list starts with the older critical, vllm-gone's).
    press(&mut app, KeyCode::Home);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    let view = app.diag.view();
    let first = app
        .diag
        .selected_finding(view)
        .map(|f| f.subject.label().to_string());
    assert_eq!(first.as_deref(), Some("vllm-hot"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view, View::Fleet);
    assert_eq!(selected(&app).as_deref(), Some("vllm-hot"));
    let buf = render(&app, 80, 24);
    let y = table_row(&buf, "vllm-hot");
    assert!(
        buf[(3, y)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED)
    );
}

#[test]
fn first_screen_at_80x24_shows_the_findings() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('j'));
    let screen = text(&render(&app, 80, 24));
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains("2 crit"), "{header}");
    let hot = line_with(&screen, "vllm-hot ");
    assert!(hot.starts_with("!! "), "{hot}");
    let warm = line_with(&screen, "vllm-warm ");
    assert!(warm.starts_with("!  "), "{warm}");
    let qwen = line_with(&screen, "vllm-qwen ");
    assert!(qwen.starts_with("·  "), "{qwen}");
    let ok = line_with(&screen, "vllm-ok ");
    assert!(ok.starts_with("   "), "{ok}");
    insta::assert_snapshot!(screen);
}

#[test]
fn first_screen_at_160x48_lists_the_selected_engine_s_findings() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('j'));
    let screen = text(&render(&app, 160, 48));
    assert!(line_with(&screen, "vllm-hot ").contains("degraded·open"));
    assert!(line_with(&screen, "vllm-ok ").contains("healthy"));
    insta::assert_snapshot!(screen);
}

#[test]
fn routing_at_80x24() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('r'));
    assert_eq!(app.view, View::Routing);
    let screen = text(&render(&app, 80, 24));
    // Both routers pick the emptiest engine; 8000 blocks × 16 = 128,000 tokens, so at 97 %
    // the hot engine has 3,840 free: no room for 8,192 tokens.
    let hot = line_with(&screen, " vllm-hot ");
    assert!(hot.contains("no room"), "{hot}");
    let picks = line_with(&screen, "picks: seed → vllm-recovered (every size)");
    assert!(picks.contains("IE → vllm-recovered"), "{picks}");
    insta::assert_snapshot!(screen);
}

#[test]
fn routing_at_160x48() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('r'));
    insta::assert_snapshot!(text(&render(&app, 160, 48)));
}

#[test]
fn severity_badges_use_the_severity_colours() {
    let theme = Theme::fallback();
    let app = app(theme.clone());
    let buf = render(&app, 80, 24);
    let badge = |name: &str| buf[(0, table_row(&buf, name))].clone();
    let hot = badge("vllm-hot");
    assert_eq!(hot.symbol(), "!");
    assert_eq!(Some(hot.fg), theme.crit.fg);
    assert_eq!(Some(badge("vllm-gone").fg), theme.crit.fg);
    assert_eq!(Some(badge("vllm-warm").fg), theme.warn.fg);
    assert_eq!(Some(badge("vllm-qwen").fg), theme.info.fg);
    assert_eq!(badge("vllm-ok").symbol(), " ");
    // The header counts in the same colours.
    let header: String = (0..80).map(|x| buf[(x, 0)].symbol()).collect();
    let Some(at) = header.find("2 crit") else {
        panic!("no crit count: {header}");
    };
    let x = u16::try_from(header[..at].chars().count()).unwrap_or(0);
    assert_eq!(Some(buf[(x, 0)].fg), theme.crit.fg);
}

#[test]
fn diagnostics_list_colours_severities_and_greys_resolved_findings() {
    let theme = Theme::fallback();
    let mut app = app(theme.clone());
    press(&mut app, KeyCode::Char('x'));
    let buf = render(&app, 160, 48);
    let screen = text(&buf);
    let row = |needle: &str| -> u16 {
        let lines: Vec<&str> = screen.lines().collect();
        match lines.iter().position(|l| l.contains(needle)) {
            Some(y) => u16::try_from(y).unwrap_or(0),
            None => panic!("{needle:?} not listed:\n{screen}"),
        }
    };
    // Column 1 holds the severity word.
    let warm = row("vllm-warm");
    assert_eq!(Some(buf[(1, warm)].fg), theme.warn.fg);
    let resolved = row("vllm-recovered");
    assert_eq!(buf[(1, resolved)].fg, theme.dim.fg.unwrap_or(Color::Reset));
    assert_eq!(buf[(20, resolved)].fg, theme.dim.fg.unwrap_or(Color::Reset));
}

#[test]
fn mono_uses_no_colour_and_writes_every_severity_out() {
    let mut app = app(Theme::fallback_mono());
    for (view_key, width, height) in [
        (None, 80, 24),
        (Some('x'), 80, 24),
        (Some('x'), 160, 48),
        (Some('r'), 80, 24),
    ] {
        app.view = View::Fleet;
        if let Some(c) = view_key {
            press(&mut app, KeyCode::Char(c));
        }
        let buf = render(&app, width, height);
        for cell in &buf.content {
            assert_eq!(cell.fg, Color::Reset, "fg of {:?}", cell.symbol());
            assert_eq!(cell.bg, Color::Reset, "bg of {:?}", cell.symbol());
        }
        let screen = text(&buf);
        match view_key {
            None => {
                assert!(line_with(&screen, "vllm-hot ").starts_with("!! "));
                assert!(screen.lines().next().unwrap_or_default().contains("2 crit"));
            }
            Some('x') => {
                assert!(screen.contains("CRIT"), "{screen}");
                assert!(screen.contains("WARN"), "{screen}");
                if height > 24 {
                    assert!(screen.contains("INFO"), "{screen}");
                }
            }
            Some(_) => assert!(screen.contains("◀"), "{screen}"),
        }
    }
}

/// GPU signals reach the rules: an engine with a queue on a GPU that a dcgm-exporter reports
/// as 5 % busy, for two minutes, fires "GPU idle while requests wait" (gpu_util ≤ 10 % and
/// waiting > 0 for 1 m) with the GPU value in its evidence.
#[test]
fn gpu_signals_from_dcgm_reach_the_rules() {
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL,
        ..FleetSettings::default()
    });
    let engine_target = fleet.add_target(TargetSpec {
        name: "vllm-idle".into(),
        url: "http://vllm-idle:8000/metrics".into(),
    });
    let exporter = fleet.add_target(TargetSpec {
        name: "dcgm-exporter-x7k2p".into(),
        url: "http://10.0.0.9:9400/metrics".into(),
    });
    let mut app = App::new(
        fleet,
        Theme::fallback(),
        "2 targets".into(),
        Duration::from_secs_f64(INTERVAL),
        Duration::from_secs(300),
    );
    let idle = Engine {
        name: "vllm-idle",
        model: LLAMA,
        kv: |_| 0.3,
        waiting: 5.0,
        ttft: TTFT_FAST,
    };
    for step in 0..60 {
        let now = at(STEPS - 60 + step);
        let engine = ScrapeReport {
            target: engine_target,
            at: now,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![sample(&idle, step)],
                ..ScrapePayload::default()
            }),
        };
        let gpus = ScrapeReport {
            target: exporter,
            at: now,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                gpus: vec![kvtop_core::engine::GpuSample {
                    gpu: "0".into(),
                    uuid: "GPU-00000000".into(),
                    model_name: "NVIDIA H100 80GB HBM3".into(),
                    hostname: "gpu-node-00".into(),
                    pod: Some("vllm-idle".into()),
                    namespace: Some("llm".into()),
                    util_pct: Some(5.0),
                    fb_used_mib: Some(70_000.0),
                    fb_free_mib: Some(11_000.0),
                    ..kvtop_core::engine::GpuSample::default()
                }],
                ..ScrapePayload::default()
            }),
        };
        update(&mut app, Event::Scrape(engine), now);
        update(&mut app, Event::Scrape(gpus), now);
        update(&mut app, Event::Tick, now);
    }
    let finding = app
        .diag
        .view()
        .findings()
        .iter()
        .find(|f| f.rule_id.as_ref() == "gpu-idle-with-queue")
        .cloned();
    let Some(finding) = finding else {
        panic!("no GPU finding: {:?}", app.diag.view().findings());
    };
    assert_eq!(finding.subject.label(), "vllm-idle");
    assert_eq!(finding.state, kvtop_core::rules::FindingState::Firing);
    let evidence: Vec<String> = finding.evidence.iter().map(|e| e.describe()).collect();
    assert!(
        evidence.iter().any(|e| e == "gpu_util = 5% <= 10%"),
        "{evidence:?}"
    );
}

fn press(app: &mut App, code: KeyCode) {
    common::screen::press(app, code, NOW);
}

fn render(app: &App, width: u16, height: u16) -> Buffer {
    common::screen::render(app, width, height, NOW)
}

use common::screen::buffer_text as text;

#[test]
fn diagnostics_list_incidents_with_their_symptoms_beneath() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('x'));
    let screen = text(&render(&app, 160, 48));
    let lines: Vec<&str> = screen.lines().collect();
    let at = |needle: &str| lines.iter().position(|l| l.contains(needle));
    // The crashed engine is one incident: its cause, then what it explains, indented.
    let Some(down) = at("Engine down +1") else {
        panic!("no incident line:\n{screen}");
    };
    let symptom = lines.get(down + 1).copied().unwrap_or_default();
    assert!(symptom.contains("└ WARN Engine not answering"), "{screen}");
    assert!(
        !symptom.contains("vllm-gone"),
        "one engine: not named again\n{screen}"
    );
    // Each finding is listed once: the hot engine's lesser findings only under its incident.
    let hot_lines = lines
        .iter()
        .filter(|l| l.contains("vllm-hot") && !l.contains("·"))
        .count();
    assert_eq!(hot_lines, 1, "{screen}");
    // Pending findings, which no incident holds yet, follow the incidents.
    press(&mut app, KeyCode::End);
    let screen = text(&render(&app, 160, 48));
    let lines: Vec<&str> = screen.lines().collect();
    let pending = lines.iter().position(|l| l.contains("pending 6m39s"));
    let resolved = lines.iter().position(|l| l.contains("resolved 1m59s ago"));
    assert!(pending > resolved && resolved.is_some(), "{screen}");
}

fn key_at(app: &mut App, c: char, now: Ts) -> Vec<kvtop::app::Command> {
    let key =
        crossterm::event::KeyEvent::new(KeyCode::Char(c), crossterm::event::KeyModifiers::NONE);
    update(app, Event::Key(key), now)
}

/// The findings strip: the lines between the table and the detail pane naming an incident.
fn strip_has(app: &App, needle: &str, now: Ts) -> bool {
    let screen = text(&common::screen::render(app, 80, 24, now));
    screen
        .lines()
        .any(|l| l.contains(needle) && (l.starts_with(" CRIT") || l.starts_with(" WARN")))
}

#[test]
fn an_acknowledged_incident_leaves_the_strip_stays_listed_and_is_audited() {
    let mut app = app(Theme::fallback());
    assert!(strip_has(&app, "Engine down", NOW), "on the strip first");
    // `x` opens on the selected engine (vllm-gone): its incident is selected.
    press(&mut app, KeyCode::Char('x'));
    let commands = key_at(&mut app, 'A', NOW);
    let notes: Vec<_> = commands
        .iter()
        .filter_map(|c| match c {
            kvtop::app::Command::AuditIncident(note) => Some(note),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 1, "{commands:?}");
    assert_eq!(notes[0].action, "acknowledge");
    assert_eq!(notes[0].rule_id, "engine-down");
    assert_eq!(notes[0].engines, ["vllm-gone"]);
    let screen = text(&render(&app, 80, 24));
    assert!(
        line_with(&screen, "Engine down").contains("acked"),
        "{screen}"
    );
    press(&mut app, KeyCode::Tab);
    assert!(
        !strip_has(&app, "Engine down", NOW),
        "acknowledged: off the strip"
    );
    assert!(strip_has(&app, "KV above 95%", NOW), "the others stay");
    // Still acknowledged after the next cycles (nothing got worse).
    update(&mut app, Event::Tick, NOW + 1.0);
    assert!(!strip_has(&app, "Engine down", NOW + 1.0));
    // A again takes it back.
    press(&mut app, KeyCode::Char('x'));
    let commands = key_at(&mut app, 'A', NOW + 1.0);
    assert!(commands.iter().any(|c| matches!(
        c,
        kvtop::app::Command::AuditIncident(n) if n.action == "unacknowledge"
    )));
    press(&mut app, KeyCode::Tab);
    assert!(strip_has(&app, "Engine down", NOW + 1.0));
}

#[test]
fn a_snooze_steps_through_its_lengths_shows_what_is_left_and_ends() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('x'));
    let commands = key_at(&mut app, 'z', NOW);
    let until = commands.iter().find_map(|c| match c {
        kvtop::app::Command::AuditIncident(n) if n.action == "snooze" => n.until,
        _ => None,
    });
    assert_eq!(until, Some(NOW + 900.0));
    let screen = text(&common::screen::render(&app, 80, 24, NOW + 60.0));
    assert!(
        line_with(&screen, "Engine down").contains("zz 14m00s"),
        "{screen}"
    );
    // z again: one hour from now.
    let commands = key_at(&mut app, 'z', NOW + 60.0);
    let until = commands.iter().find_map(|c| match c {
        kvtop::app::Command::AuditIncident(n) => n.until,
        _ => None,
    });
    assert_eq!(until, Some(NOW + 60.0 + 3600.0));
    press(&mut app, KeyCode::Tab);
    assert!(!strip_has(&app, "Engine down", NOW + 120.0));
    // Once the hour is up, it is back.
    update(&mut app, Event::Tick, NOW + 3700.0);
    assert!(strip_has(&app, "Engine down", NOW + 3700.0));
}

#[test]
fn y_copies_the_selected_incident_as_a_block_for_the_incident_channel() {
    let mut app = app(Theme::fallback());
    app.clipboard = true;
    press(&mut app, KeyCode::Char('x'));
    key_at(&mut app, 'y', NOW);
    let Some(copied) = app.copy_out.clone() else {
        panic!("nothing copied: {:?}", app.notice);
    };
    let lines: Vec<&str> = copied.lines().collect();
    assert!(
        lines[0].starts_with("[CRITICAL] Engine down · vllm-gone (firing 6m39s, since"),
        "{copied}"
    );
    assert!(lines.contains(&"symptoms:"), "{copied}");
    assert!(
        lines.contains(&"  - warning Engine not answering"),
        "{copied}"
    );
    assert!(lines.iter().any(|l| l.starts_with("cause: ")), "{copied}");
    assert!(
        lines.iter().any(|l| l.starts_with("rule: engine-down")),
        "{copied}"
    );
}

#[test]
fn m_groups_the_table_by_model_with_a_summary_line_per_model() {
    let mut app = app(Theme::fallback());
    press(&mut app, KeyCode::Char('m'));
    assert!(app.group_by_model);
    let screen = text(&render(&app, 80, 24));
    let llama = line_with(&screen, "▸ Llama-3.1-8B-Instruct");
    // Four engines up of four; KV the mean of 97, 92, 35 and 30 %; 20 waiting on the hot one.
    assert!(llama.contains("4/4 up"), "{llama}");
    assert!(llama.contains("64%"), "{llama}");
    // p95 TTFT of the merged histogram: per scrape 30 requests ≤ 50 ms from the three fast
    // engines, 2 ≤ 1 s and 8 ≤ 2.5 s from the hot one; rank 38 of 40 lies 6/8 into (1, 2.5]:
    // 1 + 1.5 × 0.75 = 2.125 s, shown 2.12s (the hot engine alone says 2.41 s).
    assert!(llama.contains("2.12s"), "{llama}");
    let qwen = line_with(&screen, "▸ Qwen2.5-7B-Instruct");
    assert!(qwen.contains("1/1 up"), "{qwen}");
    // The engine that never answered has no model, and nothing known but its count.
    let none = line_with(&screen, "▸ (no model)");
    assert!(none.contains("0/1 up"), "{none}");
    assert!(none.contains('–'), "{none}");
    // Each group's engines follow its line.
    let lines: Vec<&str> = screen.lines().collect();
    let at = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or(0);
    assert!(
        at("▸ Llama") < at("vllm-hot ") && at("vllm-hot ") < at("▸ Qwen"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
    // The latency columns: the group line gives each quantile of the merged histograms (here
    // TTFT only: the engines export no other histogram).
    press(&mut app, KeyCode::Char('c'));
    let screen = text(&render(&app, 160, 48));
    let llama = line_with(&screen, "▸ Llama-3.1-8B-Instruct");
    assert!(llama.contains("2.12s"), "{llama}");
    assert!(llama.contains('–'), "{llama}");
    press(&mut app, KeyCode::Char('m'));
    let screen = text(&render(&app, 80, 24));
    assert!(!screen.contains("▸ "), "{screen}");
}

#[test]
fn e_writes_a_snapshot_of_what_the_console_saw_and_names_it_in_the_footer() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut app = app(Theme::fallback());
    app.state_dir = Some(dir.path().to_path_buf());
    let commands = key_at(&mut app, 'e', NOW);
    let job = commands.into_iter().find_map(|c| match c {
        kvtop::app::Command::WriteSnapshot(job) => Some(*job),
        _ => None,
    });
    let Some(job) = job else {
        panic!("no snapshot asked for");
    };
    assert_eq!(
        job.markdown,
        dir.path()
            .join("snapshots/kvtop-snapshot-20240101-120304.md")
    );
    let screen = text(&render(&app, 160, 48));
    assert!(
        screen.contains("kvtop-snapshot-20240101-120304.md"),
        "{screen}"
    );
    // The last 15 minutes: the whole run here.
    assert_eq!(job.snapshot.started, NOW - 900.0);
    let audit = dir.path().join("audit.jsonl");
    std::fs::write(
        &audit,
        "{\"time\":\"2024-01-01T12:01:00Z\",\"user\":\"alice\",\"action\":\"drain\",\"target\":\"vllm-hot\",\"result\":\"ok\"}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (md_path, json_path) = (job.markdown.clone(), job.json.clone());
    kvtop::commands::snapshot_files::write(job, Some(&audit)).unwrap_or_else(|e| panic!("{e}"));
    let md = std::fs::read_to_string(md_path).unwrap_or_default();
    assert!(
        md.starts_with("# kvtop incident snapshot: CRITICAL"),
        "{md}"
    );
    assert!(md.contains("## Over the last 15m"), "{md}");
    // min / max / last of the recovered engine's KV usage: 30 % now, 97 % before.
    let recovered = md
        .lines()
        .skip_while(|l| !l.starts_with("## Over the last"))
        .find(|l| l.starts_with("| `vllm-recovered`"))
        .unwrap_or_default();
    assert!(recovered.contains("| 30% | 97% |"), "{recovered}");
    assert!(
        md.contains("### CRITICAL: Engine down on `vllm-gone`"),
        "{md}"
    );
    assert!(
        md.contains("- Symptom: warning Engine not answering"),
        "{md}"
    );
    assert!(
        md.contains("## Actions taken\n\n- 2024-01-01T12:01:00Z alice drain vllm-hot: ok"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json_path).unwrap_or_default())
            .unwrap_or_default();
    assert_eq!(json["verdict"], "critical");
    assert_eq!(json["incidents"][0]["rule"], "engine-down");
    assert_eq!(json["actions"].as_array().map(Vec::len), Some(1));
}
