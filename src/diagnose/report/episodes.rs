//! PURE. What fired during a replayed window, in each report format: the rule, its subject,
//! and when it started to hold, fired and resolved; and what the recorded console's user did
//! meanwhile (each action's confirmation and end).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::super::episodes::Episode;
use super::super::observe::Observation;
use super::snapshot::{cell, code};
use super::{kind, utc};
use kvtop_core::fleet::Ts;
use kvtop_core::format::age;
use kvtop_core::recording::ActionNote;
use kvtop_core::safe_text;

pub(super) fn json(e: &Episode) -> Value {
    json!({
        "kind": kind(&e.subject),
        "name": e.subject.label(),
        "severity": e.severity.name(),
        "rule": e.rule_id.as_ref(),
        "title": e.title.as_ref(),
        "since": e.since,
        "firing_since": e.fired_at,
        "resolved_at": e.resolved_at,
    })
}

/// `resolved 03:17:40 after 5m`, or `still firing at the end`.
fn outcome(e: &Episode) -> String {
    match e.resolved_at {
        Some(at) => format!("resolved {} after {}", utc(at), age(at - e.fired_at)),
        None => "still firing at the end".to_owned(),
    }
}

/// The text report's section, when the observation is a replay and something fired.
pub(super) fn text(obs: &Observation, out: &mut String) {
    let Some(episodes) = obs.episodes.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    let _ = writeln!(out, "\nFired during the window:");
    for e in episodes {
        let _ = writeln!(
            out,
            "  {:<8} {} {}: {} [{}] fired {}, {}",
            e.severity.name(),
            kind(&e.subject),
            safe_text::line(e.subject.label()),
            e.title,
            e.rule_id,
            utc(e.fired_at),
            outcome(e)
        );
    }
}

/// The Markdown report's section, when the observation is a replay.
pub(super) fn markdown(obs: &Observation, out: &mut String) {
    let Some(episodes) = &obs.episodes else {
        return;
    };
    let _ = writeln!(out, "\n## Fired during the window\n");
    if episodes.is_empty() {
        let _ = writeln!(out, "Nothing fired.");
        return;
    }
    let _ = writeln!(
        out,
        "| Severity | Rule | Subject | Held since | Fired | Outcome |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for e in episodes {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} `{}` | {} | {} | {} |",
            e.severity.name(),
            code(&e.rule_id),
            kind(&e.subject),
            code(e.subject.label()),
            utc(e.since),
            utc(e.fired_at),
            cell(&outcome(e))
        );
    }
}

/// An action's start or end for the JSON report: the note's fields and its time.
pub(super) fn action_json((at, note): &(Ts, ActionNote)) -> Value {
    let mut value = serde_json::to_value(note).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.insert("at".to_owned(), json!(at));
    }
    value
}

/// `prod llm/vllm-0`: where an action ran.
fn action_place(note: &ActionNote) -> String {
    match &note.namespace {
        Some(namespace) => format!("{} {namespace}/{}", note.context, note.target),
        None => format!("{} node {}", note.context, note.target),
    }
}

/// The text report's section, when the recording holds actions in the window.
pub(super) fn actions_text(obs: &Observation, out: &mut String) {
    if obs.actions.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nActions during the window:");
    for (at, note) in &obs.actions {
        let _ = writeln!(
            out,
            "  {} {}: {}",
            utc(*at),
            safe_text::line(&action_place(note)),
            safe_text::line(&note.summary())
        );
    }
}

/// The Markdown report's section, when the recording holds actions in the window.
pub(super) fn actions_markdown(obs: &Observation, out: &mut String) {
    if obs.actions.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Actions during the window\n");
    let _ = writeln!(out, "| Time | Where | What |");
    let _ = writeln!(out, "|---|---|---|");
    for (at, note) in &obs.actions {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} |",
            utc(*at),
            code(&action_place(note)),
            cell(&note.summary())
        );
    }
}
