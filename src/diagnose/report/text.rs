//! PURE. The plain-text report: a headline, then each firing finding with its evidence, cause
//! and action, then the pending ones in one line each.

use std::fmt::Write as _;

use super::super::observe::Observation;
use super::{evidence, firing, headline, kind, pending};
use kvtop_core::format::age;
use kvtop_core::rules::Severity;

/// The report as text for a terminal or a log.
pub fn render_text(obs: &Observation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "kvtop check: {}", headline(obs));
    if !obs.any_scraped {
        let _ = writeln!(out, "No target answered a scrape:");
        for target in obs.fleet.targets() {
            let reason = target
                .last_error
                .as_ref()
                .map_or_else(|| "never tried".to_owned(), |(_, e)| e.to_string());
            let _ = writeln!(out, "  {}  {}  {reason}", target.spec.name, target.spec.url);
        }
        return out;
    }
    let firing = firing(&obs.findings);
    let (info, loud): (Vec<_>, Vec<_>) = firing
        .into_iter()
        .partition(|f| f.severity == Severity::Info);
    for f in loud {
        let _ = writeln!(
            out,
            "\n{:<8} {} {}: {}  [{}; {}]",
            f.severity.name().to_uppercase(),
            kind(&f.subject),
            f.subject.label(),
            f.title,
            f.rule_id,
            f.source
        );
        for line in evidence(f) {
            let _ = writeln!(out, "  evidence: {line}");
        }
        let _ = writeln!(out, "  cause:    {}", f.cause);
        let _ = writeln!(out, "  action:   {}", f.action);
        let held = f.fired_at.map_or(0.0, |at| obs.ended - at);
        let _ = writeln!(out, "  firing for {}", age(held));
    }
    if !info.is_empty() {
        let _ = writeln!(out, "\nInfo:");
        for f in info {
            let _ = writeln!(
                out,
                "  {} {}: {} [{}] ({})",
                kind(&f.subject),
                f.subject.label(),
                f.title,
                f.rule_id,
                evidence(f).join("; ")
            );
        }
    }
    let pending = pending(&obs.findings);
    if !pending.is_empty() {
        let _ = writeln!(
            out,
            "\nPending (the condition holds, not yet for the rule's `for`):"
        );
        for f in pending {
            let _ = writeln!(
                out,
                "  {:<8} {} {}: {} [{}] for {}",
                f.severity.name(),
                kind(&f.subject),
                f.subject.label(),
                f.title,
                f.rule_id,
                age(f.held_for(obs.ended))
            );
        }
    }
    out
}
