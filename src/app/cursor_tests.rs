//! The time cursor over a fleet whose values, statuses and findings changed.

use super::*;
use crate::app::test_fleet::{KV_RULE, kv_report, one_target_app};
use crate::app::{Diagnostics, Event, RowKey, update};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kvtop_core::fleet::{EngineStatus, TargetId};
use kvtop_core::rules::{FindingState, RuleSet};

const T0: Ts = 50_000.0;

fn scrape(target: TargetId, at: Ts, kv: f64) -> Event {
    Event::Scrape(kv_report(target, at, "m", kv))
}

fn key(app: &mut App, c: char, now: Ts) {
    update(
        app,
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)),
        now,
    );
}

/// One engine scraped each second from T0 to T0 + 100: KV 50 % until T0 + 30, 95 % until
/// T0 + 80 (the `kv` finding pending from 30, firing from 40, resolved at 80), then 40 %; no
/// scrape after T0 + 100, so it is down from T0 + 161. Ticks each second until T0 + 200.
fn app() -> App {
    let (mut app, target) = one_target_app();
    let rules = RuleSet::from_texts(&[("test.toml", KV_RULE)]).unwrap_or_else(|e| panic!("{e}"));
    app.diag = Diagnostics::new(&rules).with_retention(3600.0);
    for second in 0..=200 {
        let at = T0 + f64::from(second);
        if second <= 100 {
            let kv = match second {
                0..30 => 0.5,
                30..80 => 0.95,
                _ => 0.4,
            };
            update(&mut app, scrape(target, at, kv), at);
        }
        update(&mut app, Event::Tick, at);
    }
    app
}

/// KV, status and the `kv` finding's state shown at the view's instant.
fn shown(app: &App) -> (Option<f64>, EngineStatus, Option<FindingState>) {
    let fleet = app.view_fleet();
    let Some(engine) = fleet.engines().first() else {
        panic!("no engine shown");
    };
    let state = app
        .diag
        .view()
        .findings()
        .iter()
        .find(|f| &*f.rule_id == "kv")
        .map(|f| f.state);
    (engine.signals.kv_usage, engine.status, state)
}

#[test]
fn the_cursor_shows_values_statuses_and_findings_as_they_were() {
    let mut app = app();
    let now = T0 + 200.0;
    // Live: the engine is down, the finding resolved (listed for five minutes).
    assert_eq!(
        shown(&app),
        (
            Some(0.4),
            EngineStatus::Down,
            Some(FindingState::Resolved { at: T0 + 80.0 })
        )
    );

    app.move_cursor(T0 + 60.0, now);
    let (kv, status, state) = shown(&app);
    assert!(kv.is_some_and(|kv| (kv - 0.95).abs() < 1e-6), "{kv:?}");
    assert_eq!(status, EngineStatus::Up);
    assert_eq!(state, Some(FindingState::Firing));
    assert_eq!(app.diag.view().incident_counts().critical, 1);
    let marks = app
        .diag
        .view()
        .marks(&RowKey::of(&app.view_fleet().engines()[0]));
    assert_eq!(marks.firing, 1);

    app.move_cursor(T0 + 35.0, now);
    assert_eq!(shown(&app).2, Some(FindingState::Pending));

    app.move_cursor(T0 + 85.0, now);
    assert!(matches!(shown(&app).2, Some(FindingState::Resolved { .. })));

    app.move_cursor(T0 + 20.0, now);
    let (kv, status, state) = shown(&app);
    assert!(kv.is_some_and(|kv| (kv - 0.5).abs() < 1e-6), "{kv:?}");
    assert_eq!((status, state), (EngineStatus::Up, None));
    assert_eq!(app.diag.view().incident_counts().critical, 0);

    // Stale two intervals after the last scrape, down after a minute.
    app.move_cursor(T0 + 103.0, now);
    assert_eq!(shown(&app).1, EngineStatus::Stale);
    app.move_cursor(T0 + 170.0, now);
    assert_eq!(shown(&app).1, EngineStatus::Down);

    // The live fleet and findings went on untouched.
    assert_eq!(app.fleet.engines()[0].status, EngineStatus::Down);
    assert_eq!(app.diag.live().findings().len(), 1);
}

#[test]
fn keys_step_the_cursor_and_going_past_now_is_live_again() {
    let mut app = app();
    let now = T0 + 200.0;
    key(&mut app, '{', now);
    key(&mut app, '[', now);
    let at = app.frozen.as_ref().map(|f| (f.at, f.past));
    assert_eq!(at, Some((T0 + 130.0, true)));
    key(&mut app, '}', now);
    assert_eq!(app.frozen.as_ref().map(|f| f.at), Some(T0 + 190.0));
    key(&mut app, ']', now);
    assert!(app.frozen.is_none(), "back to live");
    assert!(app.diag.frozen_view().is_none());
}

#[test]
fn the_cursor_stops_at_the_start_of_the_kept_past_and_says_so() {
    let mut app = app();
    let now = T0 + 200.0;
    app.move_cursor(T0 - 500.0, now);
    assert_eq!(app.frozen.as_ref().map(|f| f.at), Some(T0));
    assert!(matches!(
        app.notice.as_ref().map(|n| &n.kind),
        Some(NoticeKind::CursorAtStart { ago }) if (*ago - 200.0).abs() < 1e-9
    ));
}

#[test]
fn jumping_to_a_finding_puts_the_cursor_where_it_started() {
    let mut app = app();
    let now = T0 + 200.0;
    app.move_cursor(T0 + 60.0, now);
    key(&mut app, 'x', now);
    key(&mut app, 't', now);
    let at = app.frozen.as_ref().map(|f| f.at);
    assert_eq!(at, Some(T0 + 30.0));
    assert_eq!(shown(&app).2, Some(FindingState::Pending));
}

#[test]
fn charts_at_the_cursor_go_on_past_it_as_far_as_data_came() {
    let mut app = app();
    let now = T0 + 200.0;
    app.move_cursor(T0 + 60.0, now);
    let engine = app.view_fleet().engines()[0].clone();
    // A quarter of a 5-minute range after the cursor, but the data ends at T0 + 100.
    assert_eq!(
        app.chart_end(&engine, 300.0, T0 + 60.0),
        (T0 + 100.0, Some(T0 + 60.0))
    );
    assert_eq!(
        app.chart_end(&engine, 40.0, T0 + 60.0),
        (T0 + 70.0, Some(T0 + 60.0))
    );
    let points = app.history_points(&engine, Series::KvUsage, 0.0);
    assert_eq!(points.last().map(|p| p.0), Some(T0 + 100.0));
    app.toggle_freeze(now);
    app.toggle_freeze(now);
    assert_eq!(app.chart_end(&engine, 300.0, now), (now, None));
}

/// A replay's clock as the console sees it, noting where it was asked to jump.
#[derive(Debug, Default)]
struct JumpLog(std::sync::Mutex<Vec<Ts>>);

impl crate::app::replay_control::ReplayControl for JumpLog {
    fn paused(&self) -> bool {
        false
    }
    fn set_paused(&self, _paused: bool) {}
    fn skip_to(&self, t: Ts) {
        if let Ok(mut jumps) = self.0.lock() {
            jumps.push(t);
        }
    }
    // Every jump is still being caught up until the test says otherwise.
    fn skipping_to(&self) -> Option<Ts> {
        self.0.lock().ok().and_then(|j| j.last().copied())
    }
}

#[test]
fn in_a_replay_stepping_forward_past_the_present_jumps_the_replay_there() {
    let mut app = app();
    let now = T0 + 200.0;
    let log = std::sync::Arc::new(JumpLog::default());
    app.replay = Some(std::sync::Arc::clone(&log) as _);
    let jumps = || log.0.lock().map(|j| j.clone()).unwrap_or_default();

    // At the present: `]` jumps 10 s on, then `}` a minute on from there (the first jump
    // still being caught up).
    key(&mut app, ']', now);
    key(&mut app, '}', now);
    assert_eq!(jumps(), vec![now + 10.0, now + 70.0]);
    assert!(app.frozen.is_none());
    if let Ok(mut j) = log.0.lock() {
        j.clear();
    }

    // In the past, a step that stays there moves the cursor; one past the present goes live
    // and jumps on by what is left of the step.
    app.move_cursor(now - 5.0, now);
    key(&mut app, '[', now);
    assert_eq!(app.frozen.as_ref().map(|f| f.at), Some(now - 15.0));
    assert!(jumps().is_empty());
    key(&mut app, '}', now);
    assert!(app.frozen.is_none());
    assert_eq!(jumps().last(), Some(&(now + 45.0)));
}

#[test]
fn live_stepping_forward_past_the_present_only_goes_live() {
    let mut app = app();
    let now = T0 + 200.0;
    app.move_cursor(now - 5.0, now);
    key(&mut app, '}', now);
    assert!(app.frozen.is_none());
    assert!(app.replay.is_none());
}
