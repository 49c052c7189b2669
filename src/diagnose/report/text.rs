//! PURE. The plain-text report: a headline, then each firing finding with its evidence, cause
//! and action, then the pending ones in one line each.

use std::fmt::Write as _;

use super::super::observe::Observation;
use super::{evidence, firing, headline, kind, pending};
use kvtop_core::fleet::TargetState;
use kvtop_core::format::age;
use kvtop_core::rules::Severity;
use kvtop_core::safe_text;

/// The report as text for a terminal or a log. Outside text (names, URLs, errors, labels in
/// evidence) is shown with its control characters visible and cannot start a line of its own.
pub fn render_text(obs: &Observation) -> String {
    let out = report(obs);
    // Everything was made safe field by field; this pass keeps it so if a field is missed.
    safe_text::block(&out, usize::MAX).into_owned()
}

fn report(obs: &Observation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "kvtop check: {}", headline(obs));
    if !obs.any_scraped {
        let _ = writeln!(out, "No target answered a scrape:");
        target_lines(&mut out, obs.fleet.targets().iter());
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
            safe_text::line(f.subject.label()),
            f.title,
            f.rule_id,
            safe_text::line(&f.source)
        );
        for line in evidence(f) {
            let _ = writeln!(out, "  evidence: {}", safe_text::line(&line));
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
                safe_text::line(f.subject.label()),
                f.title,
                f.rule_id,
                safe_text::line(&evidence(f).join("; "))
            );
        }
    }
    super::episodes::text(obs, &mut out);
    super::episodes::actions_text(obs, &mut out);
    // Why a target is down, which the findings about it do not say.
    let mut failing = obs.fleet.targets().iter().filter(|t| t.failing).peekable();
    if failing.peek().is_some() {
        let _ = writeln!(out, "\nNot answering at the end:");
        target_lines(&mut out, failing);
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
                safe_text::line(f.subject.label()),
                f.title,
                f.rule_id,
                age(f.held_for(obs.ended))
            );
        }
    }
    out
}

/// One line per target: its name, URL and why its last scrape failed.
fn target_lines<'a>(out: &mut String, targets: impl Iterator<Item = &'a TargetState>) {
    for target in targets {
        let reason = target
            .last_error
            .as_ref()
            .map_or_else(|| "never tried".to_owned(), |(_, e)| e.to_string());
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            safe_text::line(&target.spec.name),
            safe_text::line(&target.spec.url),
            safe_text::line(&reason)
        );
    }
}
