//! Keys of the views: moving through the one shown (engines, findings, lines), and switching
//! between them.

use super::diagnostics::FindingKey;
use super::incident_rows::diag_rows;
use super::keys::Action;
use super::state::{App, NoticeKind, RowKey, View};
use kvtop_core::fleet::Ts;
use kvtop_core::rules::{FindingState, Subject};

/// Switch views (or, from the diagnostics view, jump to a finding's engine); true if the
/// screen changed.
pub(super) fn switch_key(app: &mut App, action: Action, now: Ts) -> bool {
    match action {
        Action::OpenDiagnostics => open_diagnostics(app),
        Action::OpenRouting => switch(app, View::Routing),
        Action::ShowFleet => switch(app, View::Fleet),
        Action::JumpToEngine => app.view == View::Diagnostics && jump_to_engine(app, now),
        Action::CursorToFinding => app.view == View::Diagnostics && cursor_to_finding(app, now),
        Action::ToggleNodes => {
            app.view = match app.view {
                View::Nodes => View::Fleet,
                View::Fleet | View::Diagnostics | View::Routing => View::Nodes,
            };
            true
        }
        _ => false,
    }
}

/// Move through the view shown by a line, a page, or to an end: the selected engine, the
/// selected finding, or the first line of the routing or node view. True if it moved.
pub(super) fn navigate(app: &mut App, action: Action) -> bool {
    match app.view {
        View::Fleet => move_selection(app, action),
        View::Diagnostics => move_finding(app, action),
        View::Routing => scroll_routing(app, action),
        View::Nodes => scroll_nodes(app, action),
    }
}

/// Where a movement key goes from `pos` in a list whose last position is `last`.
fn moved(action: Action, pos: usize, last: usize, page: usize) -> usize {
    match action {
        Action::SelectDown => (pos + 1).min(last),
        Action::SelectUp => pos.saturating_sub(1),
        Action::SelectFirst => 0,
        Action::PageDown => (pos + page).min(last),
        Action::PageUp => pos.saturating_sub(page),
        _ => last,
    }
}

fn switch(app: &mut App, view: View) -> bool {
    let changed = app.view != view;
    app.view = view;
    changed
}

/// Show the findings; coming from the fleet, start on the selected engine's worst finding
/// when one of its findings fires (the operator picked that row), else on the head of the
/// worst firing incident (the first line of the findings strip): with a healthy row selected
/// the criticals are never out of view.
fn open_diagnostics(app: &mut App) -> bool {
    if app.view == View::Fleet {
        let view = app.diag.view();
        let engine = app.selected_engine(app.visible_rows()).map(RowKey::of);
        let own = engine.as_ref().and_then(|key| {
            view.findings_for(key)
                .find(|f| f.state == FindingState::Firing)
                .map(FindingKey::of)
        });
        let worst = view
            .incidents()
            .iter()
            .find(|i| i.is_firing())
            .map(|i| FindingKey::of(&i.head));
        let first = own
            .or(worst)
            .or_else(|| engine.and_then(|key| view.findings_for(&key).next().map(FindingKey::of)));
        if first.is_some() {
            app.diag.selected = first;
        }
    }
    switch(app, View::Diagnostics)
}

/// Move the engine selection through the rows as shown.
fn move_selection(app: &mut App, action: Action) -> bool {
    let rows = app.visible_rows();
    let Some(pos) = app.selection(rows) else {
        return false;
    };
    let target = moved(action, pos, rows.len().saturating_sub(1), app.page_size());
    let key = rows
        .get(target)
        .and_then(|&i| app.view_fleet().engines().get(i))
        .map(RowKey::of);
    let changed = key.is_some() && key != app.selected;
    if key.is_some() {
        app.selected = key;
    }
    changed
}

/// Move the selection through the rows of the diagnostics list (incidents and their symptoms).
fn move_finding(app: &mut App, action: Action) -> bool {
    let view = app.diag.view();
    let rows = diag_rows(view);
    let last = rows.len().saturating_sub(1);
    let page = app.diag.list_height().max(1);
    let pos = app.diag.selected_row(view, &rows).unwrap_or(0);
    let key = rows
        .get(moved(action, pos, last, page))
        .and_then(|row| view.findings().get(row.finding))
        .map(FindingKey::of);
    let changed = key.is_some() && key != app.diag.selected;
    if key.is_some() {
        app.diag.selected = key;
    }
    changed
}

/// Scroll the routing view.
fn scroll_routing(app: &mut App, action: Action) -> bool {
    let (lines, height) = app.diag.routing_extent();
    let last = lines.saturating_sub(height);
    let at = app.diag.routing_offset.min(last);
    let to = moved(action, at, last, height.max(1));
    let changed = to != app.diag.routing_offset;
    app.diag.routing_offset = to;
    changed
}

/// Scroll the node view (within what was last drawn).
fn scroll_nodes(app: &mut App, action: Action) -> bool {
    let extent = app.nodes_extent.get();
    let last = extent.lines.saturating_sub(extent.height);
    let before = app.nodes_offset.min(last);
    let after = moved(action, before, last, extent.height.max(1));
    app.nodes_offset = after;
    after != before
}

/// Select the selected finding's engine (for a model's finding, its first engine) in the fleet
/// view, clearing a filter that hides it.
/// Put the time cursor where the selected finding's condition started to hold, keeping it
/// selected.
fn cursor_to_finding(app: &mut App, now: Ts) -> bool {
    let findings = app.diag.view().findings();
    let Some(finding) = app.diag.selection(findings).and_then(|i| findings.get(i)) else {
        return false;
    };
    let (key, since) = (FindingKey::of(finding), finding.since);
    app.move_cursor(since, now);
    app.diag.selected = Some(key);
    true
}

fn jump_to_engine(app: &mut App, now: Ts) -> bool {
    let view = app.diag.view();
    let Some(finding) = app.diag.selected_finding(view) else {
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
        !app.visible_rows()
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::app::diagnostics::Diagnostics;
    use crate::app::{Event, update};
    use crate::theme::Theme;
    use kvtop_core::engine::{EngineId, EngineSample};
    use kvtop_core::fleet::{Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetSpec};
    use kvtop_core::rules::{FindingState, RuleSet};

    const T0: Ts = 50_000.0;

    /// Two rules: an engine rule (KV above 90 % for 10 s, critical) and a model rule (any engine
    /// of the model above 50 %, info).
    const RULES: &str = r#"
[[rule]]
id = "kv"
title = "KV full"
severity = "critical"
when = "kv_usage > 90%"
for = "10s"
cause = "c"
action = "a"
source = "test"

[[rule]]
id = "model-kv"
title = "Model KV high"
severity = "info"
per = "model"
when = "max(kv_usage) > 50%"
cause = "c"
action = "a"
source = "test"
"#;

    fn report(target: kvtop_core::fleet::TargetId, at: Ts, kv: f64) -> ScrapeReport {
        ScrapeReport {
            target,
            at,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![EngineSample {
                    id: EngineId {
                        model: "org/m".into(),
                        engine: String::new(),
                    },
                    kv_usage: Some(kv),
                    ..EngineSample::default()
                }],
                ..ScrapePayload::default()
            }),
        }
    }

    /// Engines a (KV 20 %), b (KV 95 %), c (KV 30 %), scraped at T0 and T0 + 11 s with the
    /// rules evaluated after each: b's KV finding fires, the model's is firing too.
    fn app() -> App {
        let mut fleet = Fleet::new(FleetSettings::default());
        let mut targets = Vec::new();
        for name in ["a", "b", "c"] {
            targets.push(fleet.add_target(TargetSpec {
                name: name.into(),
                url: format!("http://{name}/metrics"),
            }));
        }
        let mut app = App::new(
            fleet,
            Theme::fallback(),
            "test".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        let rules = match RuleSet::from_texts(&[("test.toml", RULES)]) {
            Ok(rules) => rules,
            Err(err) => panic!("test rules: {err}"),
        };
        app.diag = Diagnostics::new(&rules);
        for at in [T0, T0 + 11.0] {
            for (target, kv) in targets.iter().zip([0.2, 0.95, 0.3]) {
                update(&mut app, Event::Scrape(report(*target, at, kv)), at);
            }
            update(&mut app, Event::Tick, at);
        }
        app
    }

    fn key(app: &mut App, code: KeyCode) {
        update(
            app,
            Event::Key(KeyEvent::new(code, KeyModifiers::NONE)),
            T0 + 11.0,
        );
    }

    fn selected_name(app: &App) -> Option<String> {
        let rows = app.rows(T0 + 11.0);
        app.selected_engine(&rows).map(|e| e.name.clone())
    }

    fn selected_finding(app: &App) -> Option<String> {
        let findings = app.diag.view().findings();
        let i = app.diag.selection(findings)?;
        findings.get(i).map(|f| f.rule_id.to_string())
    }

    #[test]
    fn the_rules_fired_as_the_tests_expect() {
        let app = app();
        let firing: Vec<(String, String)> = app
            .diag
            .view()
            .findings()
            .iter()
            .filter(|f| f.state == FindingState::Firing)
            .map(|f| (f.rule_id.to_string(), f.subject.label().to_string()))
            .collect();
        assert_eq!(
            firing,
            [
                ("kv".to_string(), "b".to_string()),
                ("model-kv".to_string(), "org/m".to_string())
            ]
        );
    }

    #[test]
    fn x_opens_the_findings_and_tab_or_esc_go_back() {
        let mut app = app();
        key(&mut app, KeyCode::Char('x'));
        assert_eq!(app.view, View::Diagnostics);
        assert_eq!(app.context(), crate::app::Context::Views);
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.view, View::Fleet);
        key(&mut app, KeyCode::Char('x'));
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.view, View::Fleet);
        key(&mut app, KeyCode::Char('r'));
        assert_eq!(app.view, View::Routing);
        key(&mut app, KeyCode::Char('x'));
        assert_eq!(app.view, View::Diagnostics);
        key(&mut app, KeyCode::Char('r'));
        assert_eq!(app.view, View::Routing);
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.view, View::Fleet);
    }

    #[test]
    fn fleet_keys_still_work_in_the_views() {
        let mut app = app();
        key(&mut app, KeyCode::Char('x'));
        key(&mut app, KeyCode::Char('?'));
        assert!(app.help_visible());
        key(&mut app, KeyCode::Esc);
        assert!(!app.help_visible());
        assert_eq!(app.view, View::Diagnostics, "Esc closed the help only");
        key(&mut app, KeyCode::Char('f'));
        assert!(app.is_frozen());
        let commands = update(
            &mut app,
            Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)),
            T0 + 11.0,
        );
        assert_eq!(commands, vec![crate::app::Command::Quit]);
    }

    #[test]
    fn j_and_k_move_through_findings_not_engines() {
        let mut app = app();
        key(&mut app, KeyCode::Char('x'));
        assert_eq!(selected_finding(&app).as_deref(), Some("kv"));
        let engine = selected_name(&app);
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_finding(&app).as_deref(), Some("model-kv"));
        assert_eq!(selected_name(&app), engine, "the fleet selection stays");
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_finding(&app).as_deref(), Some("model-kv"), "last");
        key(&mut app, KeyCode::Char('k'));
        assert_eq!(selected_finding(&app).as_deref(), Some("kv"));
    }

    #[test]
    fn enter_selects_the_finding_s_engine_in_the_fleet() {
        let mut app = app();
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
        key(&mut app, KeyCode::Char('x'));
        assert_eq!(selected_finding(&app).as_deref(), Some("kv"));
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.view, View::Fleet);
        assert_eq!(selected_name(&app).as_deref(), Some("b"));
    }

    #[test]
    fn enter_on_a_model_finding_selects_its_first_engine() {
        let mut app = app();
        key(&mut app, KeyCode::Char('j'));
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_name(&app).as_deref(), Some("c"));
        key(&mut app, KeyCode::Char('x'));
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_finding(&app).as_deref(), Some("model-kv"));
        key(&mut app, KeyCode::Enter);
        assert_eq!(selected_name(&app).as_deref(), Some("a"));
    }

    #[test]
    fn enter_clears_a_filter_that_hides_the_engine() {
        let mut app = app();
        app.filter = "a".into();
        key(&mut app, KeyCode::Char('x'));
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.filter, "");
        assert_eq!(selected_name(&app).as_deref(), Some("b"));
        assert_eq!(
            app.notice.as_ref().map(|n| n.kind.clone()),
            Some(NoticeKind::FilterCleared)
        );
    }

    #[test]
    fn opening_the_findings_on_an_engine_in_trouble_starts_at_its_finding() {
        let mut app = app();
        key(&mut app, KeyCode::Char('x'));
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_finding(&app).as_deref(), Some("model-kv"));
        key(&mut app, KeyCode::Tab);
        // Select engine b, which has the KV finding, and open the findings again.
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(selected_name(&app).as_deref(), Some("b"));
        key(&mut app, KeyCode::Char('x'));
        assert_eq!(selected_finding(&app).as_deref(), Some("kv"));
    }

    #[test]
    fn enter_does_nothing_in_the_routing_view_and_keys_scroll_it() {
        let mut app = app();
        key(&mut app, KeyCode::Char('r'));
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.view, View::Routing);
        // As if drawn: 30 lines in a 10-row body.
        app.diag.set_routing_extent(30, 10);
        key(&mut app, KeyCode::Char('j'));
        assert_eq!(app.diag.routing_offset, 1);
        key(&mut app, KeyCode::PageDown);
        assert_eq!(app.diag.routing_offset, 11);
        key(&mut app, KeyCode::End);
        assert_eq!(app.diag.routing_offset, 20);
        key(&mut app, KeyCode::Char('k'));
        assert_eq!(app.diag.routing_offset, 19);
        key(&mut app, KeyCode::Home);
        assert_eq!(app.diag.routing_offset, 0);
        assert_eq!(
            selected_name(&app).as_deref(),
            Some("a"),
            "the fleet selection stays"
        );
    }
}
