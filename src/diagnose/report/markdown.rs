//! PURE. The Markdown incident snapshot, to paste into a ticket: headline, fleet table,
//! firing findings with their evidence, pending ones, each engine's range of values over the
//! span, the incidents, log and event excerpts and the actions taken. `kvtop check -o
//! markdown` and the console's snapshot (`e`) both write it.

use std::fmt::Write as _;

use super::super::observe::Observation;
use super::snapshot::{Range, Snapshot, cell, code, markdown_sections};
use super::{evidence, firing, kind, pending, utc};
use kvtop_core::format::{age, count, latency, percent, si};
use kvtop_core::rules::{Finding, Severity};
use kvtop_core::safe_text;

/// The snapshot of an observation as Markdown (the writer the console's snapshot uses too).
pub fn render_markdown(obs: &Observation) -> String {
    let mut out = markdown(&Snapshot::of_observation(obs));
    super::episodes::markdown(obs, &mut out);
    super::episodes::actions_markdown(obs, &mut out);
    out
}

/// A snapshot as Markdown: headline, fleet table, firing and pending findings with their
/// evidence, each engine's range of values over the span, then the incidents, excerpts and
/// actions taken.
pub fn markdown(s: &Snapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# kvtop incident snapshot: {}",
        s.verdict.to_uppercase()
    );
    let _ = writeln!(
        out,
        "\n{}, from {} to {}.",
        safe_text::line(&s.headline),
        utc(s.started),
        utc(s.ended)
    );

    let _ = writeln!(out, "\n## Fleet\n");
    let _ = writeln!(
        out,
        "| Engine | Model | Status | KV | Running | Waiting | TTFT p95 | Gen tok/s |"
    );
    let _ = writeln!(out, "|---|---|---|--:|--:|--:|--:|--:|");
    for row in &s.fleet {
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
    let firing = firing(&s.findings);
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
            format!(", firing since {} ({})", utc(at), age(s.ended - at))
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
    let pending = pending(&s.findings);
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
                age(f.held_for(s.ended))
            );
        }
    }

    let _ = writeln!(out, "\n## {}\n", s.span_title);
    let _ = writeln!(
        out,
        "| Engine | KV min | KV max | TTFT p95 max | Waiting max | Gen tok/s min | Gen tok/s max | KV last | Waiting last | TTFT p95 last | Gen tok/s last |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for r in &s.signals {
        let v = |range: Option<Range>, pick: fn(&Range) -> f64| range.as_ref().map(pick);
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            code(&r.engine),
            percent(v(r.kv_usage, |r| r.min)),
            percent(v(r.kv_usage, |r| r.max)),
            latency(v(r.ttft_p95, |r| r.max)),
            count(v(r.waiting, |r| r.max)),
            si(v(r.gen_tps, |r| r.min)),
            si(v(r.gen_tps, |r| r.max)),
            percent(v(r.kv_usage, |r| r.last)),
            count(v(r.waiting, |r| r.last)),
            latency(v(r.ttft_p95, |r| r.last)),
            si(v(r.gen_tps, |r| r.last))
        );
    }
    markdown_sections(s, &mut out);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table() {
        assert_eq!(cell("a|b\nc"), "a\\|b\\\\x0ac");
        assert_eq!(code("a`b|c\u{1b}"), "a'b\\|c\\x1b");
    }
}
