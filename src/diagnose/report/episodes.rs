//! PURE. What fired during a replayed window, in each report format: the rule, its subject,
//! and when it started to hold, fired and resolved.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::super::episodes::Episode;
use super::super::observe::Observation;
use super::snapshot::{cell, code};
use super::{kind, utc};
use kvtop_core::format::age;
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
