//! An incident as a block of plain text for the incident channel (`y` in the diagnostics
//! view): what, where, since when, the symptoms it explains, the evidence, the cause and what
//! to do. Text from outside (engine names, log lines in the evidence) has its control
//! characters replaced: a paste must not carry escapes.

use super::state::App;
use kvtop_core::fleet::Ts;
use kvtop_core::format::{age, clock, printable};
use kvtop_core::rules::{Incident, IncidentState, Truth};

/// The text copied for `incident` as of `now`.
pub(super) fn incident_text(app: &App, incident: &Incident, now: Ts) -> String {
    let head = &incident.head;
    let state = match incident.state {
        IncidentState::Firing => format!("firing {}", age(incident.duration(now))),
        IncidentState::Resolved { at } => format!(
            "resolved {} ago, lasted {}",
            age(now - at),
            age(incident.duration(now))
        ),
    };
    let mut out = vec![format!(
        "[{}] {} · {} ({state}, since {} UTC{})",
        incident.severity.name().to_uppercase(),
        head.title,
        printable(&incident.place()),
        clock(incident.since, 0),
        match app
            .diag
            .silences
            .of(incident)
            .and_then(|s| s.remaining(now))
        {
            Some(left) => format!(", snoozed {} left", age(left)),
            None if app.diag.silences.of(incident).is_some() => ", acknowledged".to_owned(),
            None => String::new(),
        }
    )];
    if incident.engines.len() > 1 {
        let names: Vec<String> = incident
            .engines
            .iter()
            .map(|e| printable(e.label()).into_owned())
            .collect();
        out.push(format!("engines: {}", names.join(", ")));
    }
    if !incident.symptoms.is_empty() {
        out.push("symptoms:".to_owned());
        for s in &incident.symptoms {
            let count = if s.count > 1 {
                format!(" ×{}", s.count)
            } else {
                String::new()
            };
            out.push(format!("  - {} {}{count}", s.severity.name(), s.title));
        }
    }
    if !head.evidence.is_empty() {
        out.push("evidence:".to_owned());
        for e in &head.evidence {
            let mark = match e.holds {
                Truth::True => "✓",
                Truth::False => "✗",
                Truth::Unknown => "?",
            };
            out.push(format!("  {mark} {}", printable(&e.describe())));
        }
    }
    out.push(format!("cause: {}", head.cause));
    out.push(format!("action: {}", head.action));
    out.push(format!("rule: {} ({})", head.rule_id, head.source));
    out.join("\n")
}
