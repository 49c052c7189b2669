//! Time from a fault to its finding on screen, over the real path: the simulator on loopback,
//! the console's scrape workers every 250 ms, `update`, the rules evaluated once per batch as
//! the event loop does, and the screen drawn into a buffer.
//!
//! An engine is overloaded while the fleet runs (its arrival rate raised far above capacity);
//! the test waits until the circuit-breaker finding (KV above 88 %, `for` shortened to 2 s by a
//! user rules file) appears in the rendered findings strip naming that engine. It asserts only
//! that; the latencies are printed (goal: scrape interval + `for` + 1 s from the moment the
//! scraped KV usage crosses the threshold).

use std::time::Duration;

use kvtop::app::{App, Event, update};
use kvtop::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use kvtop::theme::Theme;
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{EngineStatus, Fleet, FleetSettings, TargetSpec, Ts};
use kvtop_core::rules::{FindingState, RuleSet};
use kvtop_sim::{SimConfig, SimVersion};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

const INTERVAL_MS: u64 = 250;
/// The rule under test, with its `for` shortened so the test takes seconds, not minutes.
const RULE_ID: &str = "kv-breaker";
const RULE_FOR_SECS: f64 = 2.0;
const THRESHOLD: f64 = 0.88;
/// The engine overloaded, and its new arrival rate (requests per simulated second).
const OVERLOADED: usize = 0;
const OVERLOAD_RATE: f64 = 400.0;
/// Only guards against a hang: the test fails if the finding never shows.
const GIVE_UP: Duration = Duration::from_secs(120);

fn screen(app: &App, now: Ts) -> String {
    let area = Rect::new(0, 0, 160, 48);
    let mut buf = Buffer::empty(area);
    kvtop::ui::draw_into(&mut buf, area, app, now);
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rendered line showing the rule's finding about `engine`, if any.
fn finding_on_screen(screen: &str, title: &str, engine: &str) -> Option<String> {
    screen
        .lines()
        .find(|line| {
            line.find(title)
                .is_some_and(|at| line[at..].contains(&format!("· {engine}")))
        })
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_engine_shows_up_as_a_finding() {
    // Two healthy engines; simulated time runs 10x faster so the overload fills the cache
    // quickly (the console's clock, and with it `for`, stays the wall clock).
    let sim = kvtop_sim::start(SimConfig {
        engines: 2,
        time_scale: 10.0,
        version: SimVersion::V1,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let settings = ScrapeSettings {
        interval: Duration::from_millis(INTERVAL_MS),
        timeout: Duration::from_millis(INTERVAL_MS * 8 / 10),
        body_limit: 8 * 1024 * 1024,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    };
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL_MS as f64 / 1000.0,
        ..FleetSettings::default()
    });
    let targets: Vec<ScrapeTarget> = sim
        .engines
        .iter()
        .map(|e| ScrapeTarget {
            id: fleet.add_target(TargetSpec {
                name: e.name.clone(),
                url: e.url.clone(),
            }),
            url: e.url.clone(),
            bearer_token: None,
        })
        .collect();
    let mut app = App::new(
        fleet,
        Theme::fallback(),
        "time to finding".into(),
        settings.interval,
        Duration::from_secs(300),
    );
    let user_rules = format!("[[rule]]\nid = \"{RULE_ID}\"\nfor = \"{RULE_FOR_SECS}s\"\n");
    let rules = RuleSet::with_user_text("test-rules.toml", &user_rules).expect("rules");
    let title = rules
        .get(RULE_ID)
        .map(|rule| rule.title.clone())
        .expect("the rule exists");
    app.diag.set_rules(&rules);
    let (tx, mut rx) = mpsc::channel(1024);
    let client = build_client(&settings).expect("client");
    let _scrapers = Scrapers::start(client, settings, targets, kvtop::sources::Outbox::new(tx));
    let engine_name = sim.engines[OVERLOADED].name.clone();

    // Fold events as the event loop does: a batch, then the rules once, then a frame.
    let deadline = tokio::time::Instant::now() + GIVE_UP;
    let mut last_tick = unix_now();
    let mut step = |app: &mut App, event: Option<Event>| {
        let now = unix_now();
        if let Some(event) = event {
            update(app, event, now);
        }
        if now - last_tick >= 1.0 {
            update(app, Event::Tick, now);
            last_tick = now;
        }
        app.refresh_rules(now);
        now
    };
    async fn next(rx: &mut mpsc::Receiver<Event>) -> Option<Event> {
        match tokio::time::timeout(Duration::from_millis(INTERVAL_MS), rx.recv()).await {
            Ok(Some(event)) => Some(event),
            Ok(None) => panic!("the scrape workers stopped"),
            Err(_) => None,
        }
    }

    // Both engines up and healthy first.
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "engines never came up"
        );
        let event = next(&mut rx).await;
        step(&mut app, event);
        let engines = app.fleet.engines();
        if engines.len() == 2
            && engines
                .iter()
                .all(|e| e.status == EngineStatus::Up && e.signals.kv_usage.is_some())
        {
            break;
        }
    }
    let now = unix_now();
    assert!(
        finding_on_screen(&screen(&app, now), &title, &engine_name).is_none(),
        "the finding is on screen before the fault"
    );

    assert!(sim.set_arrival_rate(OVERLOADED, OVERLOAD_RATE));
    let fault_at = unix_now();
    let mut crossed_at: Option<Ts> = None;
    let (seen_at, line) = loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {RULE_ID} finding on screen for {engine_name}"
        );
        let event = next(&mut rx).await;
        let now = step(&mut app, event);
        let kv = app
            .fleet
            .engines()
            .iter()
            .find(|e| e.name == engine_name)
            .and_then(|e| e.signals.kv_usage);
        if crossed_at.is_none() && kv.is_some_and(|kv| kv > THRESHOLD) {
            crossed_at = Some(now);
        }
        if let Some(line) = finding_on_screen(&screen(&app, now), &title, &engine_name) {
            break (now, line);
        }
    };

    // The finding is the overloaded engine's, firing.
    let finding = app
        .diag
        .view()
        .findings()
        .iter()
        .find(|f| f.rule_id.as_ref() == RULE_ID && f.subject.label() == engine_name)
        .expect("the finding behind the screen line");
    assert_eq!(finding.state, FindingState::Firing);
    let other = &sim.engines[1 - OVERLOADED].name;
    assert!(
        finding_on_screen(&screen(&app, seen_at), &title, other).is_none(),
        "the other engine is not blamed"
    );

    let interval = INTERVAL_MS as f64 / 1000.0;
    let held_from = finding.since;
    println!("finding on screen: {}", line.trim());
    println!(
        "fault → finding on screen: {:.2} s (the simulated cache fills first)",
        seen_at - fault_at
    );
    if let Some(crossed) = crossed_at {
        println!(
            "fault → first scrape above 88%: {:.2} s; the condition then held without a break \
             from {:.2} s",
            crossed - fault_at,
            held_from - fault_at
        );
    }
    println!(
        "condition holding → finding on screen: {:.2} s (goal ≤ interval {interval} s + for \
         {RULE_FOR_SECS} s + 1 s = {:.2} s; fired {:.2} s after it began to hold)",
        seen_at - held_from,
        interval + RULE_FOR_SECS + 1.0,
        finding.fired_at.map_or(f64::NAN, |at| at - held_from)
    );
    sim.shutdown().await;
}
