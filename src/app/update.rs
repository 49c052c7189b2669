//! The state machine: one event in, state changed, commands out. No I/O, no clock.

use crossterm::event::{KeyCode, KeyEvent};

use super::keys::{Action, lookup_with};
use super::state::{App, Frozen, NoticeKind, View};
use super::{Command, Event};
use kvtop_core::fleet::Ts;

/// Apply one event to the state at time `now`; sets `app.dirty` when the screen may change.
pub fn update(app: &mut App, event: Event, now: Ts) -> Vec<Command> {
    let mut commands = match event {
        Event::Scrape(report) => {
            app.fleet.ingest(report);
            app.diag.mark_stale();
            if !app.is_frozen() {
                app.dirty = true;
                select_first_if_none(app, now);
            }
            Vec::new()
        }
        Event::Source(report) => {
            app.fleet.ingest_source(report);
            if !app.is_frozen() {
                app.dirty = true;
                select_first_if_none(app, now);
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
        Event::Key(key) => on_key(app, &key, now),
        Event::Shutdown => {
            app.should_quit = true;
            vec![Command::Quit]
        }
        Event::Kube(update) => {
            let commands = super::kube::apply(app, update, now);
            select_first_if_none(app, now);
            commands
        }
        Event::Action(update) => super::action_update::apply(app, update, now),
    };
    commands.extend(super::kube::follow_selection(app));
    commands
}

/// Time-driven changes: fleet status, the clock's second (and with it every age shown), the
/// expiry of a notice.
fn on_tick(app: &mut App, now: Ts) {
    select_first_if_none(app, now);
    let changed = app.fleet.tick(now);
    if changed && !app.is_frozen() {
        app.dirty = true;
    }
    // Time alone advances `for` durations and staleness.
    app.evaluate_rules(now);
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

/// Pin the selection to the first row once there is one, so that re-sorting keeps it.
fn select_first_if_none(app: &mut App, now: Ts) {
    if app.selected.is_none() {
        let rows = app.rows(now);
        app.select_position(&rows, 0);
    }
}

fn on_key(app: &mut App, key: &KeyEvent, now: Ts) -> Vec<Command> {
    let Some(action) = lookup_with(app.context(), key, app.pod_actions_offered(now)) else {
        return Vec::new();
    };
    if let Some(commands) = super::action_update::on_key(app, action, key, now) {
        return commands;
    }
    if let Some(changed) = super::views::on_key(app, action, now) {
        app.dirty |= changed;
        return Vec::new();
    }
    let changed = match action {
        Action::Quit => {
            app.should_quit = true;
            return vec![Command::Quit];
        }
        Action::ToggleHelp => {
            app.help_visible = !app.help_visible;
            true
        }
        Action::CloseHelp => {
            app.help_visible = false;
            true
        }
        Action::SelectDown
        | Action::SelectUp
        | Action::SelectFirst
        | Action::SelectLast
        | Action::PageDown
        | Action::PageUp
            if app.view == View::Nodes =>
        {
            scroll_nodes(app, action)
        }
        Action::SelectDown => move_selection(app, now, |pos, last, _| (pos + 1).min(last)),
        Action::SelectUp => move_selection(app, now, |pos, _, _| pos.saturating_sub(1)),
        Action::SelectFirst => move_selection(app, now, |_, _, _| 0),
        Action::SelectLast => move_selection(app, now, |_, last, _| last),
        Action::PageDown => move_selection(app, now, |pos, last, page| (pos + page).min(last)),
        Action::PageUp => move_selection(app, now, |pos, _, page| pos.saturating_sub(page)),
        Action::ToggleNodes => {
            app.view = match app.view {
                View::Nodes => View::Fleet,
                View::Fleet | View::Diagnostics | View::Routing => View::Nodes,
            };
            true
        }
        Action::CycleSort => {
            app.sort = app.sort.next();
            app.sort_descending = app.sort.natural_descending();
            sort_notice(app, now);
            true
        }
        Action::ReverseSort => {
            app.sort_descending = !app.sort_descending;
            sort_notice(app, now);
            true
        }
        Action::OpenFilter => {
            app.filter_editing = true;
            app.notice = None;
            true
        }
        Action::FilterInput => match key.code {
            KeyCode::Char(c) => {
                app.filter.push(c);
                filter_notice(app, now);
                true
            }
            _ => false,
        },
        Action::FilterBackspace => {
            let removed = app.filter.pop().is_some();
            if removed {
                filter_notice(app, now);
            }
            removed
        }
        Action::KeepFilter => {
            app.filter_editing = false;
            if app.filter.trim().is_empty() {
                app.filter.clear();
            } else {
                filter_notice(app, now);
            }
            true
        }
        Action::ClearFilter if app.kube.deployments_open => {
            app.kube.deployments_open = false;
            true
        }
        Action::ToggleDeployments => {
            app.kube.deployments_open = !app.kube.deployments_open;
            true
        }
        Action::ClearFilter => {
            let had_filter = !app.filter.is_empty();
            let was_editing = app.filter_editing;
            app.filter.clear();
            app.filter_editing = false;
            if had_filter {
                app.set_notice(NoticeKind::FilterCleared, now);
            }
            had_filter || was_editing
        }
        Action::CycleWindow => {
            let window = app.fleet.window().next();
            app.fleet.set_window(window);
            if let Some(frozen) = app.frozen.as_mut() {
                frozen.fleet.set_window(window);
            }
            app.set_notice(NoticeKind::Window(window), now);
            true
        }
        Action::ZoomIn => {
            app.range = app.range.zoom_in();
            app.set_notice(NoticeKind::Range(app.range), now);
            true
        }
        Action::ZoomOut => {
            app.range = app.range.zoom_out();
            app.set_notice(NoticeKind::Range(app.range), now);
            true
        }
        Action::ToggleFreeze => {
            let freezing = app.frozen.is_none();
            app.freeze_rules(freezing, now);
            if app.frozen.take().is_some() {
                app.set_notice(NoticeKind::Unfrozen, now);
            } else {
                app.frozen = Some(Frozen {
                    fleet: app.fleet.clone(),
                    at: now,
                });
                app.set_notice(NoticeKind::Frozen, now);
            }
            true
        }
        Action::ToggleDetail => {
            app.detail_expanded = !app.detail_expanded;
            true
        }
        // Switching views is handled by `views::on_key` above, actions by `action_update`.
        Action::OpenDiagnostics
        | Action::OpenRouting
        | Action::ShowFleet
        | Action::JumpToEngine
        | Action::OpenActionMenu
        | Action::PlanDrainPod
        | Action::PlanRestartPod
        | Action::MenuDown
        | Action::MenuUp
        | Action::MenuChoose
        | Action::MenuClose
        | Action::PlanFocusNext
        | Action::PlanFocusPrev
        | Action::PlanActivate
        | Action::PlanCancel
        | Action::PlanToggleDryRun
        | Action::PlanScrollDown
        | Action::PlanScrollUp
        | Action::PlanInput
        | Action::PlanBackspace
        | Action::HideProgress => false,
    };
    app.dirty |= changed;
    Vec::new()
}

/// Move the selection to `to(position, last index, page size)`; true if it moved.
fn move_selection(app: &mut App, now: Ts, to: impl Fn(usize, usize, usize) -> usize) -> bool {
    let rows = app.rows(now);
    let Some(pos) = app.selection(&rows) else {
        return false;
    };
    let before = app.selected.clone();
    let target = to(pos, rows.len().saturating_sub(1), app.page_size());
    app.select_position(&rows, target);
    app.selected != before
}

fn sort_notice(app: &mut App, now: Ts) {
    let kind = NoticeKind::Sort {
        column: app.sort,
        descending: app.sort_descending,
    };
    app.set_notice(kind, now);
}

fn filter_notice(app: &mut App, now: Ts) {
    let shown = app.rows(now).len();
    let fleet = app.view_fleet();
    let total = fleet
        .engines()
        .iter()
        .filter(|e| !fleet.is_gpu_exporter(e.target))
        .count();
    app.set_notice(NoticeKind::Filter { shown, total }, now);
}

/// Scroll the node view by a line, a page, or to an end (within what was last drawn); true if
/// it moved.
fn scroll_nodes(app: &mut App, action: Action) -> bool {
    let extent = app.nodes_extent.get();
    let page = extent.height.max(1);
    let last = extent.lines.saturating_sub(extent.height);
    let before = app.nodes_offset.min(last);
    let after = match action {
        Action::SelectDown => before + 1,
        Action::SelectUp => before.saturating_sub(1),
        Action::PageDown => before + page,
        Action::PageUp => before.saturating_sub(page),
        Action::SelectFirst => 0,
        _ => last,
    }
    .min(last);
    app.nodes_offset = after;
    after != before
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
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
        assert!(app.filter_editing);
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
        assert!(!app.filter_editing);
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
        assert!(app.help_visible);
        ch(&mut app, 'j');
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
        key(&mut app, KeyCode::Esc);
        assert!(!app.help_visible);
        ch(&mut app, '?');
        ch(&mut app, '?');
        assert!(!app.help_visible);
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
        let mut fleet = Fleet::new(FleetSettings::default());
        let id = fleet.add_target(TargetSpec {
            name: "a".into(),
            url: "http://a/metrics".into(),
        });
        let mut app = App::new(
            fleet,
            Theme::fallback(),
            "test".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        update(&mut app, Event::Scrape(report(id, T0, 0.3)), T0);
        assert_eq!(app.selected.as_ref().map(|k| k.target), Some(id));
        assert!(app.dirty);
    }
}
