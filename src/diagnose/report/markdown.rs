//! PURE. The Markdown incident snapshot, to paste into a ticket: headline, fleet table,
//! firing findings with their evidence, pending ones, and each engine's range of values over
//! the observation.

use std::fmt::Write as _;

use super::super::observe::Observation;
use super::{evidence, firing, fleet_rows, headline, kind, pending, summaries, utc};
use kvtop_core::format::{age, count, latency, percent, si};
use kvtop_core::rules::{Finding, Severity};
use kvtop_core::safe_text;

/// The snapshot as Markdown.
pub fn render_markdown(obs: &Observation) -> String {
    let mut out = String::new();
    let verdict = super::Verdict::of(obs);
    let _ = writeln!(
        out,
        "# kvtop incident snapshot: {}",
        verdict.word().to_uppercase()
    );
    let _ = writeln!(
        out,
        "\n{}, from {} to {}.",
        safe_text::line(&headline(obs)),
        utc(obs.started),
        utc(obs.ended)
    );

    let _ = writeln!(out, "\n## Fleet\n");
    let _ = writeln!(
        out,
        "| Engine | Model | Status | KV | Running | Waiting | TTFT p95 | Gen tok/s |"
    );
    let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|");
    for row in fleet_rows(obs) {
        let status = if row.restarted {
            format!("{} (restarted)", row.status.word())
        } else {
            row.status.word().to_owned()
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            code(&row.name),
            cell(&row.model),
            status,
            percent(row.kv_usage),
            count(row.running),
            count(row.waiting),
            latency(row.ttft_p95),
            si(row.gen_tps)
        );
    }

    let _ = writeln!(out, "\n## Findings\n");
    let firing = firing(&obs.findings);
    if firing.is_empty() {
        let _ = writeln!(out, "No finding fires.");
    }
    let (info, loud): (Vec<_>, Vec<_>) = firing
        .into_iter()
        .partition(|f| f.severity == Severity::Info);
    for f in loud {
        let _ = writeln!(
            out,
            "### {}: {} on {} `{}`\n",
            f.severity.name().to_uppercase(),
            cell(&f.title),
            subject_kind(f),
            code(f.subject.label())
        );
        for line in evidence(f) {
            let _ = writeln!(out, "- Evidence: `{}`", code(&line));
        }
        let _ = writeln!(out, "- Cause: {}", safe_text::line(&f.cause));
        let _ = writeln!(out, "- Action: {}", safe_text::line(&f.action));
        let since = f.fired_at.map_or_else(String::new, |at| {
            format!(", firing since {} ({})", utc(at), age(obs.ended - at))
        });
        let _ = writeln!(
            out,
            "- Rule `{}` ({}){since}\n",
            code(&f.rule_id),
            cell(&f.source)
        );
    }
    if !info.is_empty() {
        let _ = writeln!(out, "Info:\n");
        for f in info {
            let _ = writeln!(
                out,
                "- {} on {} `{}`: `{}` (`{}`)",
                cell(&f.title),
                subject_kind(f),
                code(f.subject.label()),
                code(&evidence(f).join("; ")),
                code(&f.rule_id)
            );
        }
        let _ = writeln!(out);
    }
    let pending = pending(&obs.findings);
    if !pending.is_empty() {
        let _ = writeln!(
            out,
            "Pending (the condition holds, not yet for the rule's `for`):\n"
        );
        for f in pending {
            let _ = writeln!(
                out,
                "- {} `{}` on `{}` for {}",
                f.severity.name(),
                code(&f.rule_id),
                code(f.subject.label()),
                age(f.held_for(obs.ended))
            );
        }
    }

    let _ = writeln!(out, "\n## Over the observation\n");
    let _ = writeln!(
        out,
        "| Engine | KV min | KV max | TTFT p95 max | Waiting max | Gen tok/s min | Gen tok/s max |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|");
    for s in summaries(obs) {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            code(&s.name),
            percent(s.kv_usage.map(|r| r.0)),
            percent(s.kv_usage.map(|r| r.1)),
            latency(s.ttft_p95_max),
            count(s.waiting_max),
            si(s.gen_tps.map(|r| r.0)),
            si(s.gen_tps.map(|r| r.1))
        );
    }
    out
}

/// What a finding is about, in a sentence.
fn subject_kind(f: &Finding) -> &'static str {
    match kind(&f.subject) {
        "Engine" => "engine",
        "ModelGroup" => "model",
        _ => "the fleet",
    }
}

/// Outside text as Markdown text (a table cell, a heading): control characters visible,
/// links, HTML, emphasis and pipes escaped.
fn cell(text: &str) -> String {
    safe_text::markdown(text)
}

/// Outside text inside a code span: control characters visible, no backtick to close the
/// span, pipes escaped for the tables it may sit in.
fn code(text: &str) -> String {
    safe_text::line(text).replace('`', "'").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b\\\\x0ac");
        assert_eq!(code("a`b|c\u{1b}"), "a'b\\|c\\x1b");
    }
}
