//! PURE. The Markdown incident snapshot, to paste into a ticket: headline, fleet table,
//! firing findings with their evidence, pending ones, and each engine's range of values over
//! the observation.

use std::fmt::Write as _;

use super::super::observe::Observation;
use super::{evidence, firing, fleet_rows, headline, kind, pending, summaries, utc};
use kvtop_core::format::{age, count, latency, percent, si};
use kvtop_core::rules::{Finding, Severity};

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
        cell(&headline(obs)),
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
            cell(&row.name),
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
            cell(f.subject.label())
        );
        for line in evidence(f) {
            let _ = writeln!(out, "- Evidence: `{}`", line.replace('`', "'"));
        }
        let _ = writeln!(out, "- Cause: {}", f.cause);
        let _ = writeln!(out, "- Action: {}", f.action);
        let since = f.fired_at.map_or_else(String::new, |at| {
            format!(", firing since {} ({})", utc(at), age(obs.ended - at))
        });
        let _ = writeln!(out, "- Rule `{}` ({}){since}\n", f.rule_id, f.source);
    }
    if !info.is_empty() {
        let _ = writeln!(out, "Info:\n");
        for f in info {
            let _ = writeln!(
                out,
                "- {} on {} `{}`: `{}` (`{}`)",
                cell(&f.title),
                subject_kind(f),
                cell(f.subject.label()),
                evidence(f).join("; ").replace('`', "'"),
                f.rule_id
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
                f.rule_id,
                cell(f.subject.label()),
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
            cell(&s.name),
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

/// Text safe inside a table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
