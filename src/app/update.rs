//! The state machine: one event in, state changed, commands out. No I/O, no clock.
//!
//! An event is folded in by [`step`]; [`settle`] then brings what is derived from the state up
//! to date (the rules' findings, the visible rows, the pinned selection, the followed log), so
//! that drawing only reads. [`update`] does both; the event loop steps through a batch of
//! worker events and settles once before it draws.

use super::state::{App, NoticeKind};
use super::{Command, Event, input, kube};
use kvtop_core::fleet::Ts;

/// Apply one event to the state at time `now` and settle; sets `app.dirty` when the screen
/// may change.
pub fn update(app: &mut App, event: Event, now: Ts) -> Vec<Command> {
    let mut commands = step(app, event, now);
    commands.extend(settle(app, now));
    commands
}

/// Fold one event into the state at `now`, leaving what is derived from it to [`settle`].
pub fn step(app: &mut App, event: Event, now: Ts) -> Vec<Command> {
    match event {
        Event::Scrape(report) => {
            app.fleet.ingest(report);
            app.diag.mark_stale();
            if !app.is_frozen() {
                app.dirty = true;
            }
            Vec::new()
        }
        Event::Source(report) => {
            app.fleet.ingest_source(report);
            if !app.is_frozen() {
                app.dirty = true;
            }
            Vec::new()
        }
        Event::Logs(batch) => {
            for (target, lines) in batch {
                app.diag.logs.extend(target, lines);
            }
            app.diag.mark_stale();
            Vec::new()
        }
        Event::Tick => {
            on_tick(app, now);
            Vec::new()
        }
        Event::Resize { .. } => {
            app.dirty = true;
            Vec::new()
        }
        Event::Key(key) => input::on_key(app, &key, now),
        Event::Paste(text) => {
            input::on_paste(app, &text, now);
            Vec::new()
        }
        Event::Shutdown => {
            app.should_quit = true;
            vec![Command::Quit]
        }
        Event::Kube(update) => kube::apply(app, update, now),
        Event::Action(update) => super::action_update::apply(app, update, now),
        Event::Problem(message) => {
            app.warn(message, now);
            app.dirty = true;
            Vec::new()
        }
        Event::ReplayTargets(targets) => {
            app.fleet.set_targets(&targets);
            app.diag.mark_stale();
            app.dirty = true;
            Vec::new()
        }
        Event::ReplayKube(change) => {
            kube::apply_recorded(app, change, now);
            app.diag.mark_stale();
            Vec::new()
        }
        Event::ReplayCycle(at) => {
            app.replayed_cycle(at);
            Vec::new()
        }
        Event::ReplayAction(note) => {
            super::action_update::replayed(app, &note, now);
            Vec::new()
        }
        Event::ReplayRestore(state) => {
            app.restore(*state);
            Vec::new()
        }
        Event::ReplayEnded(problem) => {
            match problem {
                Some(problem) => app.warn(problem, now),
                None => app.set_notice(NoticeKind::ReplayEnded, now),
            }
            // The replay's clock stops here, so no new second would draw it.
            app.dirty = true;
            Vec::new()
        }
    }
}

/// Bring everything derived from the state up to date as of `now`: the rules (when data or
/// rules arrived, spaced as `App::refresh_rules` says), the visible rows, the selection (pinned
/// to the first row once there is one, so that re-sorting keeps it), and the log followed.
pub fn settle(app: &mut App, now: Ts) -> Vec<Command> {
    if app.diag.has_news() {
        app.refresh_rules(now);
    }
    app.settle_rows(now);
    if app.selected.is_none() {
        let first = app.visible_rows().first().copied();
        app.selected = first
            .and_then(|i| app.view_fleet().engines().get(i))
            .map(super::RowKey::of);
    }
    kube::follow_selection(app).into_iter().collect()
}

/// Time-driven changes: fleet status, the clock's second (and with it every age shown), the
/// expiry of a notice.
fn on_tick(app: &mut App, now: Ts) {
    // Time alone advances statuses, `for` durations and staleness; in a replay paced by its
    // recorded cycles, they advance at those cycles.
    if !app.diag.paced_by_recording() {
        let changed = app.fleet.tick(now);
        if changed && !app.is_frozen() {
            app.dirty = true;
        }
        app.evaluate_rules(now);
    }
    let second = now.floor() as i64;
    if app.last_second != Some(second) {
        app.last_second = Some(second);
        app.dirty = true;
    }
    if app.notice.as_ref().is_some_and(|n| now >= n.until) {
        app.notice = None;
        app.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::app::mode::Mode;
    use crate::app::rows::SortColumn;
    use crate::theme::Theme;
    use kvtop_core::engine::{EngineId, EngineSample};
    use kvtop_core::fleet::{
        Fleet, FleetSettings, QuantileWindow, ScrapeError, ScrapePayload, ScrapeReport, TargetId,
        TargetSpec,
    };

    const T0: Ts = 1_000.0;

    fn sample(kv: f64) -> EngineSample {
        EngineSample {
            id: EngineId {
                model: "org/model-a".into(),
                engine: String::new(),
            },
            kv_usage: Some(kv),
            ..EngineSample::default()
        }
    }

    fn report(target: TargetId, at: Ts, kv: f64) -> ScrapeReport {
        ScrapeReport {
            target,
            at,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![sample(kv)],
                ..ScrapePayload::default()
            }),
        }
    }

    /// An app over targets `name → kv usage`, each scraped once at `T0`.
    fn app_with(engines: &[(&str, f64)]) -> (App, Vec<TargetId>) {
        let mut fleet = Fleet::new(FleetSettings::default());
        let mut ids = Vec::new();
        for (name, kv) in engines {
            let id = fleet.add_target(TargetSpec {
                name: (*name).into(),
                url: format!("http://{name}/metrics"),
            });
            fleet.ingest(report(id, T0, *kv));
            ids.push(id);
        }
        let app = App::new(
            fleet,
            Theme::fallback(),
            "test".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        (app, ids)
    }

    fn key(app: &mut App, code: KeyCode) -> Vec<Command> {
        update(app, Event::Key(KeyEvent::new(code, KeyModifiers::NONE)), T0)
    }

    fn ch(app: &mut App, c: char) -> Vec<Command> {
        key(app, KeyCode::Char(c))
    }

    fn selected_name(app: &App) -> Option<String> {
        let rows = app.rows(T0);
        app.selected_engine(&rows).map(|e| e.name.clone())
    }

    fn row_names(app: &App) -> Vec<String> {
        let engines = app.view_fleet().engines();
        app.rows(T0)
            .iter()
            .filter_map(|&i| engines.get(i))
            .map(|e| e.name.clone())
            .collect()
    }

    #[test]
    fn a_paste_is_text_for_the_filter_never_keys() {
        let (mut app, _) = app_with(&[("alpha", 0.2), ("beta", 0.4)]);
        // Outside the filter prompt a paste does nothing: its `q` and newline are not keys.
        assert!(update(&mut app, Event::Paste("q\n/x".into()), T0).is_empty());
        assert!(!app.should_quit);
        assert_eq!(app.modes.top(), None);
        ch(&mut app, '/');
        assert!(update(&mut app, Event::Paste("alp\nq".into()), T0).is_empty());
        assert!(!app.should_quit);
        assert_eq!(app.filter, "alp q");
        assert_eq!(app.modes.top(), Some(Mode::Filter));
    }

    #[test]
    fn the_filter_is_bounded_so_typing_and_pasting_stay_linear() {
        use crate::app::input::MAX_FILTER_CHARS;
        let (mut app, _) = app_with(&[("alpha", 0.2)]);
        ch(&mut app, '/');
        for _ in 0..1_000 {
            ch(&mut app, 'a');
        }
        assert_eq!(app.filter.chars().count(), MAX_FILTER_CHARS);
        key(&mut app, KeyCode::Esc);
        ch(&mut app, '/');
        let started = std::time::Instant::now();
        update(&mut app, Event::Paste("é".repeat(46 * 1024)), T0);
        assert_eq!(app.filter.chars().count(), MAX_FILTER_CHARS);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn s_cycles_the_sort_column_in_its_natural_direction_and_shift_s_reverses() {
        let (mut app, _) = app_with(&[("a", 0.2)]);
        assert_eq!((app.sort, app.sort_descending), (SortColumn::Name, false));
        ch(&mut app, 's');
        assert_eq!((app.sort, app.sort_descending), (SortColumn::Status, true));
        ch(&mut app, 's');
        assert_eq!((app.sort, app.sort_descending), (SortColumn::Kv, true));
        ch(&mut app, 'S');
        assert_eq!((app.sort, app.sort_descending), (SortColumn::Kv, false));
        assert_eq!(
            app.notice.as_ref().map(|n| n.kind.clone()),
            Some(NoticeKind::Sort {
                column: SortColumn::Kv,
                descending: false
            })
        );
    }

    #[test]
    fn sorting_by_kv_orders_rows_and_keeps_the_selected_engine() {
        let (mut app, _) = app_with(&[("a", 0.2), ("b", 0.9), ("c", 0.5)]);
        assert_eq!(row_names(&app), ["a", "b", "c"]);
        ch(&mut app, 'j');
        ch(&mut app, 'j');
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        ch(&mut app, 's');
        ch(&mut app, 's');
        assert_eq!(app.sort, SortColumn::Kv);
        assert_eq!(row_names(&app), ["b", "c", "a"]);
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        let rows = app.rows(T0);
        assert_eq!(app.selection(&rows), Some(1));
        ch(&mut app, 'S');
        assert_eq!(row_names(&app), ["a", "c", "b"]);
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
    }

    #[test]
    fn the_rows_shown_change_when_the_state_is_settled_not_before() {
        let (mut app, _) = app_with(&[("a", 0.2), ("b", 0.9), ("c", 0.5)]);
        let names = |app: &App| -> Vec<String> {
            let engines = app.view_fleet().engines();
            app.visible_rows()
                .iter()
                .filter_map(|&i| engines.get(i))
                .map(|e| e.name.clone())
                .collect()
        };
        assert_eq!(names(&app), ["a", "b", "c"]);
        app.sort = SortColumn::Kv;
        app.sort_descending = true;
        assert_eq!(
            names(&app),
            ["a", "b", "c"],
            "drawing reads the settled rows"
        );
        settle(&mut app, T0);
        assert_eq!(names(&app), ["b", "c", "a"]);
        // A key settles on its own.
        ch(&mut app, 'S');
        assert_eq!(names(&app), ["a", "c", "b"]);
    }

    #[test]
    fn unknown_values_sort_last_in_both_directions() {
        let (mut app, _) = app_with(&[("a", 0.2), ("b", 0.9)]);
        app.fleet.add_target(TargetSpec {
            name: "0-never".into(),
            url: "http://never/metrics".into(),
        });
        app.sort = SortColumn::Kv;
        app.sort_descending = true;
        assert_eq!(row_names(&app), ["b", "a", "0-never"]);
        app.sort_descending = false;
        assert_eq!(row_names(&app), ["a", "b", "0-never"]);
    }

    #[test]
    fn selection_follows_the_engine_when_rows_appear_before_it() {
        let (mut app, _) = app_with(&[("m", 0.2), ("z", 0.3)]);
        ch(&mut app, 'j');
        assert_eq!(selected_name(&app).as_deref(), Some("z"));
        let id = app.fleet.add_target(TargetSpec {
            name: "a".into(),
            url: "http://a/metrics".into(),
        });
        update(&mut app, Event::Scrape(report(id, T0 + 0.5, 0.1)), T0 + 0.5);
        assert_eq!(row_names(&app), ["a", "m", "z"]);
        assert_eq!(selected_name(&app).as_deref(), Some("z"));
    }

    #[test]
    fn selection_moves_and_stops_at_the_ends() {
        let (mut app, _) = app_with(&[("a", 0.1), ("b", 0.1), ("c", 0.1)]);
        ch(&mut app, 'k');
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
        ch(&mut app, 'G');
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        key(&mut app, KeyCode::Down);
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        key(&mut app, KeyCode::Home);
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
        key(&mut app, KeyCode::PageDown);
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        key(&mut app, KeyCode::PageUp);
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
    }

    #[test]
    fn filter_prompt_edits_live_enter_keeps_and_esc_clears() {
        let (mut app, _) = app_with(&[("vllm-a", 0.1), ("vllm-b", 0.1), ("sglang-c", 0.1)]);
        ch(&mut app, '/');
        assert!(app.filter_editing());
        // Letters bound in the fleet view are text in the prompt.
        for c in "VLLM".chars() {
            ch(&mut app, c);
        }
        assert_eq!(app.filter, "VLLM");
        assert_eq!(row_names(&app), ["vllm-a", "vllm-b"]);
        assert_eq!(
            app.notice.as_ref().map(|n| n.kind.clone()),
            Some(NoticeKind::Filter { shown: 2, total: 3 })
        );
        key(&mut app, KeyCode::Backspace);
        assert_eq!(app.filter, "VLL");
        key(&mut app, KeyCode::Enter);
        assert!(!app.filter_editing());
        assert_eq!(app.filter, "VLL");
        assert_eq!(row_names(&app).len(), 2);
        // Now `j` navigates again instead of typing.
        ch(&mut app, 'j');
        assert_eq!(app.filter, "VLL");
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.filter, "");
        assert_eq!(row_names(&app).len(), 3);
        assert_eq!(
            app.notice.as_ref().map(|n| n.kind.clone()),
            Some(NoticeKind::FilterCleared)
        );
    }

    #[test]
    fn filter_matches_model_and_status_words() {
        let (mut app, _) = app_with(&[("a", 0.1), ("b", 0.1)]);
        app.fleet.add_target(TargetSpec {
            name: "c".into(),
            url: "http://c/metrics".into(),
        });
        app.filter = "model-A".into();
        assert_eq!(row_names(&app), ["a", "b"]);
        app.filter = "down".into();
        assert_eq!(row_names(&app), ["c"]);
        app.filter = "nothing".into();
        assert!(row_names(&app).is_empty());
    }

    #[test]
    fn w_cycles_the_fleet_window() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        assert_eq!(app.fleet.window(), QuantileWindow::M1);
        ch(&mut app, 'w');
        assert_eq!(app.fleet.window(), QuantileWindow::M5);
        ch(&mut app, 'w');
        assert_eq!(app.fleet.window(), QuantileWindow::S15);
        assert_eq!(
            app.notice.as_ref().map(|n| n.kind.clone()),
            Some(NoticeKind::Window(QuantileWindow::S15))
        );
    }

    #[test]
    fn plus_and_minus_zoom_the_chart_range() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        ch(&mut app, '+');
        assert_eq!(app.range.duration(), Duration::from_secs(60));
        ch(&mut app, '-');
        ch(&mut app, '-');
        assert_eq!(app.range.duration(), Duration::from_secs(900));
    }

    #[test]
    fn q_and_ctrl_c_quit_and_shutdown_quits() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        assert_eq!(ch(&mut app, 'q'), vec![Command::Quit]);
        assert!(app.should_quit);

        let (mut app, _) = app_with(&[("a", 0.1)]);
        ch(&mut app, '/');
        assert!(ch(&mut app, 'q').is_empty());
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(
            update(&mut app, Event::Key(ctrl_c), T0),
            vec![Command::Quit]
        );

        let (mut app, _) = app_with(&[("a", 0.1)]);
        assert_eq!(update(&mut app, Event::Shutdown, T0), vec![Command::Quit]);
        assert!(app.should_quit);
    }

    #[test]
    fn help_is_modal_and_closes_with_esc() {
        let (mut app, _) = app_with(&[("a", 0.1), ("b", 0.1)]);
        ch(&mut app, '?');
        assert!(app.help_visible());
        ch(&mut app, 'j');
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
        key(&mut app, KeyCode::Esc);
        assert!(!app.help_visible());
        ch(&mut app, '?');
        ch(&mut app, '?');
        assert!(!app.help_visible());
    }

    #[test]
    fn the_help_turns_its_pages_and_opens_again_at_the_first() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        ch(&mut app, '?');
        key(&mut app, KeyCode::Right);
        key(&mut app, KeyCode::Right);
        assert_eq!(app.help_page, 2);
        key(&mut app, KeyCode::Left);
        assert_eq!(app.help_page, 1);
        // Arrows turn pages only while the help is open.
        assert!(app.help_visible());
        ch(&mut app, 'q');
        assert!(!app.help_visible() && !app.should_quit);
        assert_eq!(app.help_page, 0);
    }

    #[test]
    fn ticks_redraw_once_per_second_and_not_in_between() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        update(&mut app, Event::Tick, T0 + 0.1);
        app.dirty = false;
        update(&mut app, Event::Tick, T0 + 0.6);
        assert!(!app.dirty, "same second, nothing changed");
        update(&mut app, Event::Tick, T0 + 1.05);
        assert!(app.dirty, "the clock's second changed");
    }

    #[test]
    fn a_status_change_on_tick_needs_a_redraw() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        update(&mut app, Event::Tick, T0 + 0.5);
        app.dirty = false;
        // Pretend the clock already showed this second, so only the status can redraw.
        app.last_second = Some((T0 + 5.2).floor() as i64);
        // Interval 1 s: stale from 2 s; the tick flips the row to Stale.
        update(&mut app, Event::Tick, T0 + 5.2);
        assert!(app.dirty);
        app.dirty = false;
        update(&mut app, Event::Tick, T0 + 5.4);
        assert!(!app.dirty, "already stale, same second");
    }

    #[test]
    fn keys_that_change_nothing_do_not_redraw() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        app.dirty = false;
        ch(&mut app, 'z');
        assert!(!app.dirty, "unbound key");
        ch(&mut app, 'k');
        ch(&mut app, 'k');
        app.dirty = false;
        ch(&mut app, 'k');
        assert!(!app.dirty, "already on the first row");
        key(&mut app, KeyCode::Esc);
        assert!(!app.dirty, "no filter to clear");
        update(
            &mut app,
            Event::Resize {
                width: 80,
                height: 24,
            },
            T0,
        );
        assert!(app.dirty);
    }

    #[test]
    fn a_pending_redraw_survives_a_key_that_changes_nothing() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        app.dirty = true;
        ch(&mut app, 'k');
        assert!(app.dirty);
    }

    #[test]
    fn notices_expire_on_tick() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        ch(&mut app, 'w');
        assert!(app.notice.is_some());
        update(&mut app, Event::Tick, T0 + 1.0);
        assert!(app.notice.is_some());
        app.dirty = false;
        update(
            &mut app,
            Event::Tick,
            T0 + 1.0 + crate::app::state::NOTICE_SECS,
        );
        assert!(app.notice.is_none());
        assert!(app.dirty);
    }

    #[test]
    fn freeze_keeps_drawing_the_snapshot_while_ingestion_continues() {
        let (mut app, ids) = app_with(&[("a", 0.1)]);
        ch(&mut app, 'f');
        assert!(app.is_frozen());
        app.dirty = false;
        update(
            &mut app,
            Event::Scrape(report(ids[0], T0 + 1.0, 0.7)),
            T0 + 1.0,
        );
        assert!(!app.dirty, "a frozen view does not change");
        let kv = |f: &Fleet| f.engines().first().and_then(|e| e.signals.kv_usage);
        assert_eq!(kv(&app.fleet), Some(0.7));
        assert_eq!(kv(app.view_fleet()), Some(0.1));
        assert_eq!(app.view_now(T0 + 30.0), T0);

        // A failing scrape while frozen does not show either.
        update(
            &mut app,
            Event::Scrape(ScrapeReport {
                target: ids[0],
                at: T0 + 2.0,
                took: 0.01,
                outcome: Err(ScrapeError::Refused),
            }),
            T0 + 2.0,
        );
        assert!(app.view_fleet().targets()[0].last_error.is_none());

        ch(&mut app, 'f');
        assert!(!app.is_frozen());
        assert!(app.dirty);
        assert_eq!(kv(app.view_fleet()), Some(0.7));
        assert_eq!(app.view_now(T0 + 30.0), T0 + 30.0);
    }

    #[test]
    fn window_change_while_frozen_applies_to_both_fleets() {
        let (mut app, _) = app_with(&[("a", 0.1)]);
        ch(&mut app, 'f');
        ch(&mut app, 'w');
        assert_eq!(app.fleet.window(), QuantileWindow::M5);
        assert_eq!(app.view_fleet().window(), QuantileWindow::M5);
    }

    #[test]
    fn the_first_scrape_selects_the_first_row() {
        let (mut app, id) = crate::app::test_fleet::one_target_app();
        update(&mut app, Event::Scrape(report(id, T0, 0.3)), T0);
        assert_eq!(app.selected.as_ref().map(|k| k.target), Some(id));
        assert!(app.dirty);
    }
}
