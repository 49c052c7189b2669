//! Keys: the mode on top of [`App::modes`] picks the part of the key map that applies and the
//! handler that carries the action out.

use crossterm::event::{KeyCode, KeyEvent};

use super::keys::{Action, lookup_with};
use super::mode::Mode;
use super::rows::matching_rows;
use super::state::{App, NoticeKind};
use super::view_model::engine_rows;
use super::{Command, action_update, incident_keys, story, views};
use kvtop_core::fleet::Ts;

/// Longest filter kept, in characters: matching runs over every row at each keystroke, so an
/// unbounded filter (a 92 KB paste) would make typing quadratic.
pub(crate) const MAX_FILTER_CHARS: usize = 256;

/// Pasted text: typed into the filter prompt when it is open (line breaks and other control
/// characters become spaces, the whole paste costs one match of the rows), ignored otherwise.
/// Never read as keys: a pasted `q` or newline does not quit or confirm anything.
pub(super) fn on_paste(app: &mut App, text: &str, now: Ts) {
    if app.modes.top() != Some(Mode::Filter) {
        return;
    }
    let room = MAX_FILTER_CHARS.saturating_sub(app.filter.chars().count());
    let before = app.filter.len();
    app.filter.extend(
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(room),
    );
    if app.filter.len() != before {
        filter_notice(app, now);
        app.dirty = true;
    }
}

/// Apply one key at `now`.
pub(super) fn on_key(app: &mut App, key: &KeyEvent, now: Ts) -> Vec<Command> {
    let Some(action) = lookup_with(app.context(), key, app.pod_actions_offered()) else {
        return Vec::new();
    };
    if action == Action::Quit {
        app.should_quit = true;
        return vec![Command::Quit];
    }
    match app.modes.top() {
        None => browse_key(app, action, key, now),
        Some(Mode::Help) => {
            match action {
                Action::CloseHelp => app.set_help_visible(false),
                Action::HelpNextPage => app.help_page = app.help_page.wrapping_add(1),
                Action::HelpPreviousPage => app.help_page = app.help_page.wrapping_sub(1),
                _ => return Vec::new(),
            }
            app.dirty = true;
            Vec::new()
        }
        Some(Mode::Filter) => {
            app.dirty |= filter_key(app, action, key, now);
            Vec::new()
        }
        Some(Mode::ActionMenu) => action_update::menu_key(app, action, now),
        Some(Mode::ActionPlan) => action_update::plan_key(app, action, key, now),
        Some(Mode::ActionProgress) => action_update::progress_key(app, action),
        Some(Mode::Story) => {
            if action == Action::ToggleHelp {
                app.modes.open(Mode::Help);
                app.dirty = true;
            } else {
                app.dirty |= story::key(app, action, now);
            }
            Vec::new()
        }
        Some(Mode::StorySearch) => {
            app.dirty |= story::search_key(app, action, key);
            Vec::new()
        }
    }
}

/// A key of the view shown, with nothing open over it.
fn browse_key(app: &mut App, action: Action, key: &KeyEvent, now: Ts) -> Vec<Command> {
    if let Some(commands) = action_update::pod_key(app, action, now) {
        return commands;
    }
    if let Some(commands) = incident_keys::key(app, action, now) {
        return commands;
    }
    if action == Action::WriteSnapshot {
        app.dirty = true;
        return super::snapshot::write(app, now);
    }
    let changed = match action {
        Action::ToggleHelp => {
            app.modes.open(Mode::Help);
            true
        }
        Action::SelectDown
        | Action::SelectUp
        | Action::SelectFirst
        | Action::SelectLast
        | Action::PageDown
        | Action::PageUp => views::navigate(app, action),
        Action::OpenDiagnostics
        | Action::OpenRouting
        | Action::ShowFleet
        | Action::JumpToEngine
        | Action::CursorToFinding
        | Action::ToggleNodes => views::switch_key(app, action, now),
        Action::OpenFilter => {
            app.modes.open(Mode::Filter);
            app.notice = None;
            true
        }
        Action::ClearFilter => clear_filter(app, now),
        Action::ToggleDeployments => {
            app.kube.deployments_open = !app.kube.deployments_open;
            true
        }
        Action::OpenStory => story::open(app),
        Action::ToggleDetail => {
            app.detail_expanded = !app.detail_expanded;
            true
        }
        _ => display_key(app, action, key, now),
    };
    app.dirty |= changed;
    Vec::new()
}

/// The time cursor's small and large steps, seconds.
const CURSOR_STEP: f64 = 10.0;
const CURSOR_FAR_STEP: f64 = 60.0;

/// How the data is shown: the sort, the quantile window, the chart range, the freeze and the
/// time cursor.
fn display_key(app: &mut App, action: Action, key: &KeyEvent, now: Ts) -> bool {
    match action {
        Action::CycleSort => {
            app.sort = app.sort.next();
            app.sort_descending = app.sort.natural_descending();
            sort_notice(app, now);
        }
        Action::ReverseSort => {
            app.sort_descending = !app.sort_descending;
            sort_notice(app, now);
        }
        Action::CycleWindow => {
            let window = app.fleet.window().next();
            app.fleet.set_window(window);
            if let Some(frozen) = app.frozen.as_mut() {
                frozen.fleet.set_window(window);
            }
            app.set_notice(NoticeKind::Window(window), now);
        }
        Action::ZoomIn | Action::ZoomOut => {
            app.range = if action == Action::ZoomIn {
                app.range.zoom_in()
            } else {
                app.range.zoom_out()
            };
            app.set_notice(NoticeKind::Range(app.range), now);
        }
        Action::ToggleFreeze => app.toggle_freeze(now),
        Action::TogglePause => {
            // Only a replay has a clock to pause; live, the key does nothing.
            if let Some(replay) = &app.replay {
                replay.set_paused(!replay.paused());
                app.dirty = true;
            }
        }
        Action::CursorBack | Action::CursorForward => {
            let far = matches!(key.code, KeyCode::Char('{' | '}'));
            let step = if far { CURSOR_FAR_STEP } else { CURSOR_STEP };
            let sign = if action == Action::CursorBack {
                -1.0
            } else {
                1.0
            };
            app.step_cursor(sign * step, now);
        }
        Action::ToggleModelGroups => app.group_by_model = !app.group_by_model,
        Action::CycleColumns => app.columns.next(),
        _ => return false,
    }
    true
}

/// A key of the filter prompt.
fn filter_key(app: &mut App, action: Action, key: &KeyEvent, now: Ts) -> bool {
    match action {
        Action::FilterInput => match key.code {
            KeyCode::Char(c) if app.filter.chars().count() < MAX_FILTER_CHARS => {
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
            app.modes.close(Mode::Filter);
            if app.filter.trim().is_empty() {
                app.filter.clear();
            } else {
                filter_notice(app, now);
            }
            true
        }
        Action::ClearFilter => clear_filter(app, now),
        _ => false,
    }
}

/// Esc in the fleet view or the prompt: close the Deployments panel if it is open (the prompt
/// stays open then), else drop the filter and close the prompt.
fn clear_filter(app: &mut App, now: Ts) -> bool {
    if app.kube.deployments_open {
        app.kube.deployments_open = false;
        return true;
    }
    let had_filter = !app.filter.is_empty();
    let was_editing = app.modes.close(Mode::Filter);
    app.filter.clear();
    if had_filter {
        app.set_notice(NoticeKind::FilterCleared, now);
    }
    had_filter || was_editing
}

fn sort_notice(app: &mut App, now: Ts) {
    let kind = NoticeKind::Sort {
        column: app.sort,
        descending: app.sort_descending,
    };
    app.set_notice(kind, now);
}

/// The notice of how many rows the filter, as just edited, lets through.
fn filter_notice(app: &mut App, now: Ts) {
    let fleet = app.view_fleet();
    let shown = matching_rows(fleet, &app.filter, app.view_now(now));
    let total = engine_rows(fleet);
    app.set_notice(NoticeKind::Filter { shown, total }, now);
}
