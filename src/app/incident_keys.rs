//! Keys on the diagnostics list's selected incident: acknowledge it (`A`), snooze it (`z`:
//! 15m, 1h, 4h, then lifted) and copy it (`y`). `x` opens the list on the strip's worst
//! incident, so `x A` acknowledges that one. Each acknowledgement and snooze goes to the audit log with the user
//! ([`Command::AuditIncident`]).

use super::Command;
use super::incident_rows::diag_rows;
use super::keys::Action;
use super::state::{App, NoticeKind, View};
pub use crate::actions::incident_audit::IncidentNote;
use kvtop_core::fleet::Ts;
use kvtop_core::format::span;
use kvtop_core::rules::{Hush, Incident, Subject};

/// Snooze lengths `z` steps through, seconds (as Alertmanager silences are usually set).
pub const SNOOZES: [f64; 3] = [15.0 * 60.0, 60.0 * 60.0, 4.0 * 60.0 * 60.0];

/// Carry out an incident key; `None` when `action` is not one.
pub(super) fn key(app: &mut App, action: Action, now: Ts) -> Option<Vec<Command>> {
    if !matches!(
        action,
        Action::AckIncident | Action::SnoozeIncident | Action::CopyIncident
    ) {
        return None;
    }
    let Some(incident) = target(app) else {
        if app.view == View::Diagnostics {
            app.set_notice(NoticeKind::Action("no incident selected".to_owned()), now);
            app.dirty = true;
        }
        return Some(Vec::new());
    };
    app.dirty = true;
    let commands = match action {
        Action::AckIncident => acknowledge(app, &incident, now),
        Action::SnoozeIncident => snooze(app, &incident, now),
        _ => {
            let text = super::incident_text::incident_text(app, &incident, now);
            app.copy("incident", text, now);
            Vec::new()
        }
    };
    Some(commands)
}

/// The incident a key acts on: the selected row's incident in the diagnostics list.
fn target(app: &App) -> Option<Incident> {
    if app.view != View::Diagnostics {
        return None;
    }
    let view = app.diag.view();
    let rows = diag_rows(view);
    let row = rows.get(app.diag.selected_row(view, &rows)?)?;
    view.incidents().get(row.incident()?).cloned()
}

fn acknowledge(app: &mut App, incident: &Incident, now: Ts) -> Vec<Command> {
    let acked = matches!(
        app.diag.silences.of(incident).map(|s| s.hush),
        Some(Hush::Acked)
    );
    let action = if acked {
        app.diag.silences.lift(&incident.key);
        "unacknowledge"
    } else {
        app.diag.silences.silence(incident, Hush::Acked, now);
        "acknowledge"
    };
    let notice = if acked {
        format!("{} back on the strip", incident.head.title)
    } else {
        format!(
            "acknowledged: {} · {} (back if it gets worse)",
            incident.head.title,
            incident.place()
        )
    };
    app.set_notice(NoticeKind::Action(notice), now);
    vec![audit(app, incident, action, None)]
}

fn snooze(app: &mut App, incident: &Incident, now: Ts) -> Vec<Command> {
    let current = app.diag.silences.of(incident).and_then(|s| match s.hush {
        Hush::Snoozed { until } => Some(until - s.at),
        Hush::Acked => None,
    });
    // The next length after the one in force; past the last, the snooze is lifted.
    let next = match current {
        None => SNOOZES.first().copied(),
        Some(length) => SNOOZES
            .iter()
            .position(|s| (s - length).abs() < 1.0)
            .and_then(|at| SNOOZES.get(at + 1))
            .copied(),
    };
    match next {
        Some(length) => {
            let until = now + length;
            app.diag
                .silences
                .silence(incident, Hush::Snoozed { until }, now);
            app.set_notice(
                NoticeKind::Action(format!(
                    "snoozed {} for {} (z: longer)",
                    incident.head.title,
                    span(length)
                )),
                now,
            );
            vec![audit(app, incident, "snooze", Some(until))]
        }
        None => {
            app.diag.silences.lift(&incident.key);
            app.set_notice(
                NoticeKind::Action(format!("{} back on the strip", incident.head.title)),
                now,
            );
            vec![audit(app, incident, "unsnooze", None)]
        }
    }
}

fn audit(app: &App, incident: &Incident, action: &'static str, until: Option<Ts>) -> Command {
    let pod = incident.engines.iter().find_map(|e| match e.as_ref() {
        Subject::Engine { target, .. } => app.fleet.pod_info(*target),
        _ => None,
    });
    Command::AuditIncident(Box::new(IncidentNote {
        action,
        rule_id: incident.head.rule_id.to_string(),
        title: incident.head.title.to_string(),
        place: incident.place(),
        severity: incident.severity.name().to_owned(),
        engines: incident
            .engines
            .iter()
            .map(|e| e.label().to_owned())
            .collect(),
        until,
        context: pod.map(|p| p.key.context.clone()),
        namespace: pod.map(|p| p.key.namespace.clone()),
    }))
}
