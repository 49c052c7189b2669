//! The state machine: one event in, state changed, commands out. No I/O, no clock.

use crossterm::event::{KeyCode, KeyEvent};

use super::keys::{Action, lookup};
use super::state::{App, Frozen, NoticeKind};
use super::{Command, Event};
use crate::fleet::Ts;

/// Apply one event to the state at time `now`; sets `app.dirty` when the screen may change.
pub fn update(app: &mut App, event: Event, now: Ts) -> Vec<Command> {
    match event {
        Event::Scrape(report) => {
            app.fleet.ingest(report);
            if !app.is_frozen() {
                app.dirty = true;
                if app.selected.is_none() {
                    let rows = app.rows(now);
                    app.select_position(&rows, 0);
                }
            }
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
    }
}

/// Time-driven changes: fleet status, the clock's second (and with it every age shown), the
/// expiry of a notice.
fn on_tick(app: &mut App, now: Ts) {
    let changed = app.fleet.tick(now);
    if changed && !app.is_frozen() {
        app.dirty = true;
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

fn on_key(app: &mut App, key: &KeyEvent, now: Ts) -> Vec<Command> {
    let Some(action) = lookup(app.context(), key) else {
        return Vec::new();
    };
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
        Action::SelectDown => move_selection(app, now, |pos, last, _| (pos + 1).min(last)),
        Action::SelectUp => move_selection(app, now, |pos, _, _| pos.saturating_sub(1)),
        Action::SelectFirst => move_selection(app, now, |_, _, _| 0),
        Action::SelectLast => move_selection(app, now, |_, last, _| last),
        Action::PageDown => move_selection(app, now, |pos, last, page| (pos + page).min(last)),
        Action::PageUp => move_selection(app, now, |pos, _, page| pos.saturating_sub(page)),
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
    let total = app.view_fleet().engines().len();
    app.set_notice(NoticeKind::Filter { shown, total }, now);
}
