//! PURE. What `kvtop check` prints: the verdict (status and exit code), and the observation
//! rendered as text, k8sgpt-style JSON or a Markdown incident snapshot.
//!
//! Only firing findings are problems; pending ones (their condition holds, but not yet for
//! the rule's `for`) are mentioned apart, resolved ones are left out. Info findings are listed
//! but do not make a fleet unhealthy.

mod episodes;
mod json;
mod markdown;
pub mod snapshot;
mod summary;
mod text;

pub use json::render_json;
pub use markdown::{markdown, render_markdown};
pub use snapshot::Snapshot;
pub use summary::{EngineSummary, FleetRow, fleet_rows, fleet_rows_of, summaries};
pub use text::render_text;

use super::observe::Observation;
use kvtop_core::rules::{Finding, FindingState, Severity, Subject};

/// Exit codes of `kvtop check`.
pub mod exit {
    pub(crate) const HEALTHY: u8 = 0;
    pub const WARNING: u8 = 1;
    pub(crate) const CRITICAL: u8 = 2;
    pub(crate) const NO_DATA: u8 = 3;
}

/// The outcome of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No warning or critical finding fires (info findings may).
    Healthy,
    Warning,
    Critical,
    /// No target answered a single scrape.
    NoData,
}

impl Verdict {
    /// The verdict of an observation.
    pub fn of(obs: &Observation) -> Verdict {
        if !obs.any_scraped {
            return Verdict::NoData;
        }
        // Of a replay, what fired during the window counts, resolved or not: a postmortem's
        // verdict is the incident's.
        let severities: Vec<Severity> = firing(&obs.findings)
            .iter()
            .map(|f| f.severity)
            .chain(obs.episodes.iter().flatten().map(|e| e.severity))
            .collect();
        if severities.contains(&Severity::Critical) {
            Verdict::Critical
        } else if severities.contains(&Severity::Warning) {
            Verdict::Warning
        } else {
            Verdict::Healthy
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Healthy => exit::HEALTHY,
            Verdict::Warning => exit::WARNING,
            Verdict::Critical => exit::CRITICAL,
            Verdict::NoData => exit::NO_DATA,
        }
    }

    /// One word for people.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Healthy => "healthy",
            Verdict::Warning => "warning",
            Verdict::Critical => "critical",
            Verdict::NoData => "no data",
        }
    }
}

/// Output formats of `kvtop check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// Render an observation in `format`.
pub fn render(obs: &Observation, format: Format) -> String {
    match format {
        Format::Text => render_text(obs),
        Format::Json => render_json(obs),
        Format::Markdown => render_markdown(obs),
    }
}

/// Firing findings, in the rule engine's order (severity first).
pub fn firing(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.state == FindingState::Firing)
        .collect()
}

/// Pending findings.
pub fn pending(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.state == FindingState::Pending)
        .collect()
}

/// k8sgpt-like kind of a finding's subject.
pub fn kind(subject: &Subject) -> &'static str {
    match subject {
        Subject::Engine { .. } => "Engine",
        Subject::Model(_) => "ModelGroup",
        Subject::Fleet => "Fleet",
    }
}

/// The evidence of a finding that holds (the comparisons that make it fire), as text; all of
/// it when none holds alone (an `or` over unknowns).
pub fn evidence(finding: &Finding) -> Vec<String> {
    let holding: Vec<String> = finding
        .evidence
        .iter()
        .filter(|e| e.holds == kvtop_core::rules::Truth::True)
        .map(|e| e.describe())
        .collect();
    if holding.is_empty() {
        finding.evidence.iter().map(|e| e.describe()).collect()
    } else {
        holding
    }
}

/// How long the observation lasted, in its own clock and on the wall, for a header line:
/// `3m02s` or `3m02s simulated (30× faster: 6s)`.
pub(crate) fn observed_for(obs: &Observation) -> String {
    let secs = obs.ended - obs.started;
    let shown = kvtop_core::format::age(secs);
    if (obs.time_scale - 1.0).abs() < f64::EPSILON {
        shown
    } else {
        let wall = super::observe::wall_time(secs, obs.time_scale);
        format!(
            "{shown} simulated ({}× faster: {})",
            trim_number(obs.time_scale),
            kvtop_core::format::age(wall.as_secs_f64())
        )
    }
}

fn trim_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

pub use kvtop_core::clock::utc;

/// The one-line headline: verdict, counts of firing findings by severity, pending, and how
/// long what was observed.
pub(crate) fn headline(obs: &Observation) -> String {
    let verdict = Verdict::of(obs);
    let firing = firing(&obs.findings);
    let count = |s: Severity| firing.iter().filter(|f| f.severity == s).count();
    let rows = fleet_rows(obs);
    let up = rows
        .iter()
        .filter(|r| r.status == kvtop_core::fleet::EngineStatus::Up)
        .count();
    format!(
        "{}: {} critical, {} warning, {} info firing, {} pending; {} ({} up) observed for {}",
        verdict.word(),
        count(Severity::Critical),
        count(Severity::Warning),
        count(Severity::Info),
        pending(&obs.findings).len(),
        plural(rows.len(), "engine"),
        up,
        observed_for(obs)
    )
}

/// `1 engine`, `3 engines`.
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::diagnose::TargetLogs;
    use kvtop_core::fleet::{Fleet, FleetSettings};

    fn finding(rule: &str, severity: Severity, state: FindingState) -> Finding {
        Finding {
            rule_id: Arc::from(rule),
            title: Arc::from("A title"),
            severity,
            subject: Arc::new(Subject::Model("m".into())),
            since: 100.0,
            fired_at: (state == FindingState::Firing).then_some(160.0),
            state,
            evidence: Vec::new(),
            cause: Arc::from("a cause"),
            action: Arc::from("an action"),
            suggest: None,
            source: Arc::from("T0.0"),
            frozen: false,
        }
    }

    fn observation(findings: Vec<Finding>, any_scraped: bool) -> Observation {
        Observation {
            fleet: Fleet::new(FleetSettings::default()),
            findings,
            logs: TargetLogs::default(),
            started: 0.0,
            ended: 200.0,
            interval: 1.0,
            time_scale: 1.0,
            plan: None,
            cycles: 200,
            any_scraped,
            episodes: None,
            actions: Vec::new(),
        }
    }

    #[test]
    fn the_verdict_is_the_worst_firing_severity_and_info_is_healthy() {
        use FindingState::{Firing, Pending};
        let cases = [
            (vec![], true, Verdict::Healthy, 0),
            (
                vec![finding("i", Severity::Info, Firing)],
                true,
                Verdict::Healthy,
                0,
            ),
            (
                vec![finding("w", Severity::Warning, Firing)],
                true,
                Verdict::Warning,
                1,
            ),
            // A pending critical is not (yet) a problem.
            (
                vec![
                    finding("c", Severity::Critical, Pending),
                    finding("w", Severity::Warning, Firing),
                ],
                true,
                Verdict::Warning,
                1,
            ),
            (
                vec![finding("c", Severity::Critical, Firing)],
                true,
                Verdict::Critical,
                2,
            ),
            (
                vec![finding("c", Severity::Critical, Firing)],
                false,
                Verdict::NoData,
                3,
            ),
        ];
        for (findings, scraped, verdict, code) in cases {
            let obs = observation(findings, scraped);
            assert_eq!(Verdict::of(&obs), verdict);
            assert_eq!(Verdict::of(&obs).exit_code(), code);
        }
    }

    #[test]
    fn json_counts_warning_and_critical_as_problems() {
        use FindingState::{Firing, Pending};
        let obs = observation(
            vec![
                finding("c", Severity::Critical, Firing),
                finding("i", Severity::Info, Firing),
                finding("w", Severity::Warning, Pending),
            ],
            true,
        );
        let doc: serde_json::Value = serde_json::from_str(&render_json(&obs)).expect("valid JSON");
        assert_eq!(doc["status"], "ProblemDetected");
        assert_eq!(doc["problems"], 1);
        assert_eq!(doc["results"].as_array().map(Vec::len), Some(2));
        assert_eq!(doc["results"][0]["kind"], "ModelGroup");
        assert_eq!(doc["results"][0]["name"], "m");
        assert_eq!(doc["results"][0]["error"][0]["text"], "A title");
        assert_eq!(doc["results"][0]["firing_since"], 160.0);
        assert_eq!(doc["pending"][0]["rule"], "w");
        assert_eq!(doc["observed"]["seconds"], 200.0);
        let healthy = observation(vec![finding("i", Severity::Info, Firing)], true);
        let doc: serde_json::Value =
            serde_json::from_str(&render_json(&healthy)).expect("valid JSON");
        assert_eq!(
            (doc["status"].as_str(), doc["problems"].as_u64()),
            (Some("OK"), Some(0))
        );
        assert_eq!(utc(1_723_457_732.0), "2024-08-12 10:15:32Z");
    }
}
