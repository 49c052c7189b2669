//! The whole path over real HTTP on 127.0.0.1: simulator → scrape workers → fleet state →
//! console state → screen, including endpoints that go bad while the console runs.

use crate::common;

use std::time::Duration;

use common::bad_server::{BadServer, Behaviour, refused_url};
use kvtop::app::{App, Event, update};
use kvtop::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use kvtop::theme::Theme;
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{EngineStatus, Fleet, FleetSettings, ScrapeError, TargetSpec};
use kvtop_sim::{SimConfig, SimVersion};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;

fn scrape_settings(interval_ms: u64) -> ScrapeSettings {
    ScrapeSettings {
        interval: Duration::from_millis(interval_ms),
        timeout: Duration::from_millis(interval_ms * 8 / 10),
        body_limit: 8 * 1024 * 1024,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    }
}

fn fleet_settings(interval: f64) -> FleetSettings {
    FleetSettings {
        interval,
        ..FleetSettings::default()
    }
}

/// A console on `endpoints` (name, URL) scraped every 250 ms: the app state, the queue the
/// workers report into, and the workers (dropping them stops scraping).
fn console_on(endpoints: &[(String, String)]) -> (App, mpsc::Receiver<Event>, Scrapers) {
    let settings = scrape_settings(250);
    let mut fleet = Fleet::new(fleet_settings(0.25));
    let targets: Vec<ScrapeTarget> = endpoints
        .iter()
        .map(|(name, url)| ScrapeTarget {
            id: fleet.add_target(TargetSpec {
                name: name.clone(),
                url: url.clone(),
            }),
            url: url.clone(),
            bearer_token: None,
        })
        .collect();
    let app = App::new(
        fleet,
        Theme::fallback(),
        "test".into(),
        settings.interval,
        Duration::from_secs(300),
    );
    let (tx, rx) = mpsc::channel(1024);
    let client = build_client(&settings).expect("client");
    let scrapers = Scrapers::start(client, settings, targets, kvtop::sources::Outbox::new(tx));
    (app, rx, scrapers)
}

/// Drain scrape reports into the app until `done` holds, ticking the clock as time passes.
async fn run_until(
    app: &mut App,
    rx: &mut mpsc::Receiver<Event>,
    limit: Duration,
    what: &str,
    done: impl Fn(&App) -> bool,
) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done(app) {
        let wait = tokio::time::timeout_at(deadline, rx.recv()).await;
        match wait {
            Ok(Some(event)) => {
                update(app, event, unix_now());
            }
            Ok(None) => panic!("scrapers stopped"),
            Err(_) => panic!("gave up waiting for {what}"),
        }
        update(app, Event::Tick, unix_now());
    }
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal
        .draw(|f| kvtop::ui::draw(f, app, unix_now()))
        .expect("draw");
    let buf = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_fleet_reaches_the_fleet_state() {
    // Simulated time runs 20x faster so the pressured engine fills its KV cache quickly;
    // the console's own clock (rates, windows) stays the wall clock.
    let sim = kvtop_sim::start(SimConfig {
        engines: 4,
        time_scale: 20.0,
        version: SimVersion::V1,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let endpoints: Vec<(String, String)> = sim
        .engines
        .iter()
        .map(|e| (e.name.clone(), e.url.clone()))
        .collect();
    let (mut app, mut rx, _scrapers) = console_on(&endpoints);

    let pressured = sim
        .engines
        .iter()
        .position(|e| e.scenario.note().is_some_and(|n| n.contains("KV")))
        .expect("a pressured engine");
    let down = sim
        .engines
        .iter()
        .position(|e| e.down)
        .expect("a down engine");

    run_until(
        &mut app,
        &mut rx,
        Duration::from_secs(30),
        "rates, quantiles and KV pressure",
        |app| {
            let engines = app.fleet.engines();
            let up: Vec<_> = engines
                .iter()
                .filter(|e| e.status == EngineStatus::Up)
                .collect();
            up.len() == 3
                && up
                    .iter()
                    .all(|e| e.signals.gen_tps.is_some() && e.signals.ttft_p95.is_some())
                && engines.iter().any(|e| {
                    e.name == sim.engines[pressured].name
                        && e.signals.kv_usage.is_some_and(|k| k > 0.9)
                })
        },
    )
    .await;

    let fleet = &app.fleet;
    let counts = fleet.counts();
    assert_eq!((counts.up, counts.stale, counts.down), (3, 0, 1));
    let down_target = fleet
        .targets()
        .iter()
        .find(|t| t.spec.name == sim.engines[down].name)
        .expect("down target");
    assert_eq!(
        down_target.last_error.as_ref().map(|(_, e)| e.clone()),
        Some(ScrapeError::Refused)
    );
    for engine in fleet
        .engines()
        .iter()
        .filter(|e| e.status == EngineStatus::Up)
    {
        let s = &engine.signals;
        let kv = s.kv_usage.expect("kv usage exported");
        assert!((0.0..=1.0).contains(&kv), "{}: kv {kv}", engine.name);
        assert!(
            s.running.is_some() && s.waiting.is_some(),
            "{}",
            engine.name
        );
        assert!(
            s.gen_tps.is_some_and(|v| v > 0.0),
            "{}: tokens flow",
            engine.name
        );
        assert!(
            s.kv_capacity_tokens.is_some_and(|c| c > 0.0),
            "{}: capacity from cache_config_info",
            engine.name
        );
        assert!(
            !engine
                .history
                .points(kvtop_core::fleet::Series::KvUsage, 0.0)
                .is_empty()
        );
    }
    let shown = screen(&app, 160, 40);
    assert!(shown.contains("3 up"), "{shown}");
    assert!(shown.contains("refused"), "{shown}");
    sim.shutdown().await;
}

const GOOD: &str = "# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4.0\n\
# TYPE vllm:kv_cache_usage_perc gauge\n\
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n";

/// Endpoints that answer at first and then hang, fail or send garbage go STALE with the
/// reason on their row, a refused one is DOWN, the healthy one stays UP, and the console
/// keeps producing frames throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_go_bad_show_stale_with_the_reason() {
    let healthy = BadServer::start(Behaviour::Ok(GOOD.into())).await;
    let hangs = BadServer::start(Behaviour::Ok(GOOD.into())).await;
    let fails = BadServer::start(Behaviour::Ok(GOOD.into())).await;
    let garbage = BadServer::start(Behaviour::Ok(GOOD.into())).await;
    let refused = refused_url();
    let endpoints = [
        ("healthy", healthy.url.clone()),
        ("hangs", hangs.url.clone()),
        ("fails", fails.url.clone()),
        ("garbage", garbage.url.clone()),
        ("refused", refused),
    ];
    let endpoints: Vec<(String, String)> = endpoints
        .iter()
        .map(|(name, url)| (name.to_string(), url.clone()))
        .collect();
    let (mut app, mut rx, _scrapers) = console_on(&endpoints);

    run_until(
        &mut app,
        &mut rx,
        Duration::from_secs(10),
        "four engines up",
        |app| app.fleet.counts().up == 4,
    )
    .await;

    hangs.set(Behaviour::Hang);
    fails.set(Behaviour::Status(500));
    garbage.set(Behaviour::Ok(b"<html>maintenance</html>".to_vec()));

    let status_of = |app: &App, name: &str| {
        app.fleet
            .engines()
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.status)
    };
    let mut frames = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
            update(&mut app, event, unix_now());
        }
        update(&mut app, Event::Tick, unix_now());
        if app.dirty {
            screen(&app, 120, 30);
            app.dirty = false;
            frames += 1;
        }
        let all_stale = ["hangs", "fails", "garbage"]
            .iter()
            .all(|n| status_of(&app, n) == Some(EngineStatus::Stale));
        if all_stale {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "bad endpoints never went stale"
        );
    }
    assert!(frames >= 2, "the console kept drawing ({frames} frames)");
    assert_eq!(status_of(&app, "healthy"), Some(EngineStatus::Up));
    assert_eq!(status_of(&app, "refused"), Some(EngineStatus::Down));

    let shown = screen(&app, 120, 30);
    // Table rows: a two-column severity badge, a space, then the name.
    let row = |name: &str| {
        shown
            .lines()
            .find(|l| l.get(3..).is_some_and(|rest| rest.starts_with(name)))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("hangs").contains("STALE timeout"), "{shown}");
    assert!(row("fails").contains("STALE HTTP 500"), "{shown}");
    assert!(row("garbage").contains("STALE bad data"), "{shown}");
    assert!(
        row("refused").contains("DOWN") && row("refused").contains("refused"),
        "{shown}"
    );
    assert!(row("healthy").contains("UP"), "{shown}");
}
