//! Every user-facing string of the findings (table badges, header counts, the findings strip,
//! the diagnostics view) and of the routing view.

use super::format;
use kvtop_core::rules::routing::Skip;
use kvtop_core::rules::{FindingCounts, Health, Severity, Suggest};

// Fleet table.
pub(crate) const COL_BADGE: &str = "";
pub(crate) const COL_HEALTH: &str = "HEALTH";

/// The badge of an engine's worst firing finding: readable without colour.
pub fn badge(severity: Option<Severity>) -> &'static str {
    match severity {
        Some(Severity::Critical) => "!!",
        Some(Severity::Warning) => "!",
        Some(Severity::Info) => "·",
        None => "",
    }
}

/// The word of a severity in lists: four letters, upper case.
pub(crate) fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "CRIT",
        Severity::Warning => "WARN",
        Severity::Info => "INFO",
    }
}

/// The health cell: `healthy`, `degraded`, `down`, with `·open` while the circuit breaker is
/// open (requests rejected).
pub(crate) fn health_cell(health: Health, breaker_open: bool) -> String {
    if breaker_open {
        format!("{}{BREAKER_OPEN_MARK}", health.name())
    } else {
        health.name().to_string()
    }
}

/// Suffix of a health cell while the breaker is open.
pub(crate) const BREAKER_OPEN_MARK: &str = "·open";

// Header.
/// The header's finding counts as (number, word, severity), firing findings only, zeros left
/// out; empty when nothing fires.
pub(crate) fn header_counts(c: FindingCounts) -> Vec<(String, &'static str, Severity)> {
    [
        (c.critical, "crit", Severity::Critical),
        (c.warning, "warn", Severity::Warning),
        (c.info, "info", Severity::Info),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, word, severity)| (n.to_string(), word, severity))
    .collect()
}
pub(crate) const NO_FINDINGS_HEADER: &str = "no findings";

// Findings strip (fleet view) and detail pane.
/// "no findings · 61 rules over 10 engines"
pub(crate) fn strip_quiet(rules: usize, engines: usize) -> String {
    format!("no findings · {rules} rules over {engines} engines")
}
/// The findings strip before the rules first ran.
/// The strip when every incident is acknowledged or snoozed.
pub(crate) fn strip_all_silenced(n: usize) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} incident{s} acknowledged or snoozed · x lists them")
}

/// Marks an acknowledged incident in the diagnostics list.
pub(crate) const ACKED: &str = "acked";

/// Marks a snoozed incident with the snooze left: `zz 14m59s`.
pub(crate) fn snoozed(left_secs: f64) -> String {
    format!("zz {}", kvtop_core::format::age(left_secs))
}

pub(crate) const STRIP_NOT_RUN: &str = "rules not evaluated yet";
/// "+3 more"
pub fn more(n: usize) -> String {
    format!("+{n} more")
}
/// The hint after the strip's findings.
pub(crate) const STRIP_HINT: &str = "x: all findings";
/// " (pending)" after a finding not firing yet.
pub(crate) const PENDING_MARK: &str = "pending";
pub(crate) const FACT_FINDINGS: &str = "findings";
pub(crate) const FACT_HEALTH: &str = "health";
pub(crate) const ENGINE_QUIET: &str = "none";

/// "2 findings:" before the selected engine's findings in the compact detail.
pub(crate) fn engine_findings(n: usize) -> String {
    if n == 1 {
        "1 finding:".to_string()
    } else {
        format!("{n} findings:")
    }
}

/// "degraded, breaker open 5m39s" (how long it has been open), "healthy, breaker closed"
pub(crate) fn health_fact(health: Health, open_for: Option<f64>) -> String {
    match open_for {
        Some(secs) => format!("{health}, breaker open {}", format::age(secs)),
        None => format!("{health}, breaker closed"),
    }
}

// Diagnostics view.
pub(crate) const LIST_SEVERITY: &str = "SEV";
pub(crate) const LIST_SUBJECT: &str = "ENGINE / GROUP";
pub(crate) const LIST_TITLE: &str = "FINDING";
pub(crate) const LIST_SINCE: &str = "SINCE";
/// Leads a symptom folded under its incident in the diagnostics list.
pub(crate) const SYMPTOM_MARK: &str = "└ ";
pub(crate) const LIST_SOURCE: &str = "SOURCE";
pub(crate) const LABEL_STATE: &str = "state";
pub(crate) const LABEL_EVIDENCE: &str = "evidence";
pub(crate) const LABEL_CAUSE: &str = "cause";
pub(crate) const LABEL_ACTION: &str = "action";
pub(crate) const LABEL_KVTOP: &str = "kvtop";
pub(crate) const LABEL_SOURCE: &str = "source";
pub(crate) const HOLDS_TRUE: &str = "✓";
pub(crate) const HOLDS_FALSE: &str = "✗";
pub(crate) const HOLDS_UNKNOWN: &str = "?";
pub(crate) const NO_EVIDENCE: &str = "no comparison recorded";
pub(crate) const NO_SUGGESTION: &str = "nothing kvtop can do for you here";

/// "no findings: 61 rules over 10 engines, last run 12:03:04"
pub(crate) fn no_findings(rules: usize, engines: usize, at: Option<&str>) -> String {
    match at {
        Some(clock) => {
            format!("no findings: {rules} rules over {engines} engines, last run {clock}")
        }
        None => format!("no findings: {rules} rules, not run yet"),
    }
}

/// The since cell of a finding.
pub(crate) fn firing_for(secs: f64) -> String {
    format!("firing {}", format::age(secs))
}
/// "pending 20s"
pub(crate) fn pending_for(secs: f64) -> String {
    format!("pending {}", format::age(secs))
}
/// "resolved 2m ago"
pub(crate) fn resolved_ago(secs: f64) -> String {
    format!("resolved {} ago", format::age(secs))
}
/// An incident's time in the strip: "12m" while it fires (since its first finding fired),
/// "lasted 3m10s" once it resolved.
pub(crate) fn incident_time(firing: bool, secs: f64) -> String {
    if firing {
        format::age(secs)
    } else {
        format!("lasted {}", format::age(secs))
    }
}
/// "+4" after an incident's cause: the findings folded under it.
pub(crate) fn symptoms(n: usize) -> String {
    format!("+{n}")
}
/// The end of the strip's last line when incidents do not all fit: "+3 more · x".
pub(crate) fn strip_more(n: usize) -> String {
    format!("{} · x", more(n))
}

/// The detail's state line: "firing 2m10s · condition held 3m10s, since 12:01:04".
pub(crate) fn state_line(since_cell: &str, held_secs: f64, since_clock: &str) -> String {
    format!(
        "{since_cell} · condition held {}, since {since_clock}",
        format::age(held_secs)
    )
}
/// Added to the state line of a frozen finding.
pub(crate) const FROZEN_NOTE: &str =
    "engine not answering: values as last seen, neither updated nor cleared";

/// "drain: take the engine out of routing, wait for it to empty, delete the pod"
pub(crate) fn suggestion(suggest: Suggest) -> String {
    let what = match suggest {
        Suggest::Drain => "take the pod out of routing, wait for it to empty, then delete it",
        Suggest::Restart => "delete the pod (or rollout-restart its deployment)",
        Suggest::Cordon => "mark the pod's node unschedulable",
    };
    format!("{}: {what}", suggest.name())
}

/// "T1.1 · rule ttft-kv-thrash"
pub(crate) fn source_line(source: &str, rule_id: &str) -> String {
    format!("{source} · rule {rule_id}")
}

/// The detail pane's title: " CRIT · High TTFT, KV cache full · vllm-a-0 ".
pub(crate) fn finding_title(severity: Severity, title: &str, subject: &str) -> String {
    format!(" {} · {title} · {subject} ", severity_word(severity))
}

// Routing view.
/// First line of the routing view.
pub(crate) const ROUTING_LEGEND: &str = "512 / 2048 / 8192: the seed router's fit score for a prompt of that many tokens (free KV share; engines without room for it skipped) · IE: the Inference Extension scorer, queue×2 + KV×2 (+ prefix×3) · ◀ each router's pick";
pub(crate) const ROUTING_EMPTY: &str = "no engine with a model name yet";
pub(crate) const R_ENGINE: &str = "ENGINE";
pub(crate) const R_HEALTH: &str = "HEALTH";
pub(crate) const R_KV: &str = "KV";
pub(crate) const R_WAIT: &str = "WAIT";
pub(crate) const R_IE: &str = "IE";
pub(crate) const R_IE_QUEUE: &str = "queue";
pub(crate) const R_IE_KV: &str = "kv";
pub(crate) const R_IE_PREFIX: &str = "prefix";
pub(crate) const PICK_MARK: &str = "◀";

/// Column header of the seed router's score for a prompt size: "2048".
pub(crate) fn prompt_header(tokens: u32) -> String {
    tokens.to_string()
}

/// "meta-llama/Llama-3.1-8B-Instruct · 4 engines"
pub(crate) fn group_title(model: &str, engines: usize) -> String {
    if engines == 1 {
        format!("{model} · 1 engine")
    } else {
        format!("{model} · {engines} engines")
    }
}

/// A router's pick for a summary line: the engine's name, or "none".
pub(crate) fn pick_name(name: Option<&str>) -> String {
    name.unwrap_or("none").to_string()
}

/// "picks: seed 512 → a · 2048 → a · 8192 → b · IE → a", or "picks: seed → a (every size)
/// · IE → a" when the seed router picks the same engine for every prompt size.
pub(crate) fn picks_line(seed: &[(u32, String)], ie: &str) -> String {
    if let Some((_, first)) = seed.first() {
        if seed.len() > 1 && seed.iter().all(|(_, name)| name == first) {
            return format!("picks: seed → {first} (every size) · IE → {ie}");
        }
    }
    let seed: Vec<String> = seed
        .iter()
        .enumerate()
        .map(|(i, (tokens, name))| {
            if i == 0 {
                format!("seed {tokens} → {name}")
            } else {
                format!("{tokens} → {name}")
            }
        })
        .collect();
    format!("picks: {} · IE → {ie}", seed.join(" · "))
}

/// Why a router skips an engine, for a score cell.
pub fn skip(skip: Skip) -> &'static str {
    match skip {
        Skip::Unhealthy => "down",
        Skip::Stuck => "stuck",
        Skip::Unrouted => "unrouted",
        Skip::UnknownKv => "kv –",
        Skip::UnknownCapacity => "cap –",
        Skip::UnknownQueue => "queue –",
        Skip::BudgetTooSmall { .. } => "no room",
    }
}

/// A score for a cell: two decimals.
pub(crate) fn score(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        format::UNKNOWN.to_string()
    }
}
