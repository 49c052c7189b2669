//! Keys of the diagnostics and routing views, and switching between views.

use super::diagnostics::FindingKey;
use super::keys::Action;
use super::state::{App, NoticeKind, RowKey, View};
use crate::fleet::Ts;
use crate::rules::Subject;

/// Handle `action` if it switches views or navigates the diagnostics or routing view:
/// `Some(whether the screen changed)`; `None` leaves it to the fleet view's handling.
pub(super) fn on_key(app: &mut App, action: Action, now: Ts) -> Option<bool> {
    match action {
        Action::OpenDiagnostics => Some(open_diagnostics(app, now)),
        Action::OpenRouting => Some(switch(app, View::Routing)),
        Action::ShowFleet => Some(switch(app, View::Fleet)),
        Action::JumpToEngine => Some(app.view == View::Diagnostics && jump_to_engine(app, now)),
        _ => match app.view {
            View::Fleet => None,
            View::Diagnostics => move_finding(app, action),
            View::Routing => scroll_routing(app, action),
        },
    }
}

fn switch(app: &mut App, view: View) -> bool {
    let changed = app.view != view;
    app.view = view;
    changed
}

/// Show the findings; coming from the fleet, start on the selected engine's worst finding.
fn open_diagnostics(app: &mut App, now: Ts) -> bool {
    if app.view == View::Fleet {
        let rows = app.rows(now);
        let engine = app.selected_engine(&rows).map(RowKey::of);
        let first = engine.and_then(|key| {
            app.diag
                .view()
                .findings_for(&key)
                .next()
                .map(FindingKey::of)
        });
        if first.is_some() {
            app.diag.selected = first;
        }
    }
    switch(app, View::Diagnostics)
}

/// Move the finding selection; `None` for actions that are not movements.
fn move_finding(app: &mut App, action: Action) -> Option<bool> {
    let findings = app.diag.view().findings();
    let last = findings.len().saturating_sub(1);
    let page = app.diag.list_height().max(1);
    let pos = app.diag.selection(findings).unwrap_or(0);
    let to = match action {
        Action::SelectDown => (pos + 1).min(last),
        Action::SelectUp => pos.saturating_sub(1),
        Action::SelectFirst => 0,
        Action::SelectLast => last,
        Action::PageDown => (pos + page).min(last),
        Action::PageUp => pos.saturating_sub(page),
        _ => return None,
    };
    let key = findings.get(to).map(FindingKey::of);
    let changed = key.is_some() && key != app.diag.selected;
    if key.is_some() {
        app.diag.selected = key;
    }
    Some(changed)
}

/// Scroll the routing view; `None` for actions that are not movements.
fn scroll_routing(app: &mut App, action: Action) -> Option<bool> {
    let (lines, height) = app.diag.routing_extent();
    let last = lines.saturating_sub(height);
    let page = height.max(1);
    let at = app.diag.routing_offset.min(last);
    let to = match action {
        Action::SelectDown => (at + 1).min(last),
        Action::SelectUp => at.saturating_sub(1),
        Action::SelectFirst => 0,
        Action::SelectLast => last,
        Action::PageDown => (at + page).min(last),
        Action::PageUp => at.saturating_sub(page),
        _ => return None,
    };
    let changed = to != app.diag.routing_offset;
    app.diag.routing_offset = to;
    Some(changed)
}

/// Select the selected finding's engine (for a model's finding, its first engine) in the fleet
/// view, clearing a filter that hides it.
fn jump_to_engine(app: &mut App, now: Ts) -> bool {
    let findings = app.diag.view().findings();
    let Some(finding) = app.diag.selection(findings).and_then(|i| findings.get(i)) else {
        return false;
    };
    let fleet = app.view_fleet();
    let key = match finding.subject.as_ref() {
        Subject::Engine { target, id, .. } => Some(RowKey {
            target: *target,
            id: id.clone(),
        }),
        Subject::Model(model) => fleet
            .engines()
            .iter()
            .find(|e| e.id.model == *model)
            .map(RowKey::of),
        Subject::Fleet => None,
    };
    app.view = View::Fleet;
    let Some(key) = key else {
        return true;
    };
    let hidden = {
        let engines = app.view_fleet().engines();
        !app.rows(now)
            .iter()
            .any(|&i| engines.get(i).is_some_and(|e| key.is(e)))
    };
    if hidden && !app.filter.is_empty() {
        app.filter.clear();
        app.set_notice(NoticeKind::FilterCleared, now);
    }
    app.selected = Some(key);
    true
}
