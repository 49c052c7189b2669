//! PURE. The incident snapshot both `kvtop check -o markdown` and the console (`e`) write:
//! what was observed (the fleet, the findings, each engine's signals over the span), the
//! incidents with their evidence and timeline, log and event excerpts, and the actions taken.
//! [`Snapshot`] holds it; [`markdown`] and [`json`] render it. Outside text is escaped as
//! `kvtop_core::safe_text` says (Markdown mode for text, code spans with no backtick or pipe).

use std::fmt::Write as _;

use super::super::TargetLogs;
use super::super::observe::Observation;
use super::{FleetRow, evidence, kind, utc};
use kvtop_core::fleet::{Fleet, Series, Ts};
use kvtop_core::format::age;
use kvtop_core::rules::{
    Explains, Finding, FindingState, Incident, IncidentState, RuleSet, Severity, Subject, fold,
};
use kvtop_core::safe_text;

/// Lowest, highest and last known value of a signal over the span.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub last: f64,
}

/// One engine's signals over the span.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SignalRanges {
    pub engine: String,
    pub kv_usage: Option<Range>,
    pub waiting: Option<Range>,
    pub ttft_p95: Option<Range>,
    pub gen_tps: Option<Range>,
}

/// Recent lines of one engine's log or events.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Excerpt {
    pub engine: String,
    pub lines: Vec<String>,
}

/// Everything a snapshot says.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// `critical`, `warning`, `healthy`, `no data`.
    pub verdict: String,
    pub headline: String,
    pub started: Ts,
    pub ended: Ts,
    /// Heading of the signal ranges: `Over the observation`, `Over the last 15m`.
    pub span_title: String,
    pub fleet: Vec<FleetRow>,
    /// The last cycle's findings.
    pub findings: Vec<Finding>,
    /// Those folded into incidents, firing ones first.
    pub incidents: Vec<Incident>,
    pub signals: Vec<SignalRanges>,
    pub logs: Vec<Excerpt>,
    pub events: Vec<Excerpt>,
    /// The actions taken over the span, one line each (from the audit log).
    pub actions: Vec<String>,
}

impl Snapshot {
    /// The snapshot of a `kvtop check` observation (no action is taken by a check; the
    /// incidents fold with the built-in rules' `explains`).
    pub fn of_observation(obs: &Observation) -> Snapshot {
        let explains = RuleSet::builtin()
            .map(|rules| Explains::of(rules.rules()))
            .unwrap_or_default();
        let incidents = fold(&obs.findings, &explains, |_| None);
        let (logs, events) = excerpts(&obs.fleet, &obs.logs, &incidents);
        Snapshot {
            verdict: super::Verdict::of(obs).word().to_owned(),
            headline: super::headline(obs),
            started: obs.started,
            ended: obs.ended,
            span_title: "Over the observation".to_owned(),
            fleet: super::fleet_rows(obs),
            findings: obs.findings.clone(),
            incidents,
            signals: signal_ranges(&obs.fleet, obs.started),
            logs,
            events,
            actions: Vec::new(),
        }
    }
}

/// The last lines of the log and of the events of each engine a firing incident touches:
/// from its pod when it is one, else from the log stream the rules read.
pub fn excerpts(
    fleet: &Fleet,
    logs: &TargetLogs,
    incidents: &[Incident],
) -> (Vec<Excerpt>, Vec<Excerpt>) {
    let mut log_out = Vec::new();
    let mut event_out = Vec::new();
    let mut seen: Vec<&Subject> = Vec::new();
    let tail = |lines: &[String]| -> Vec<String> {
        let from = lines.len().saturating_sub(EXCERPT_LINES);
        lines.get(from..).unwrap_or_default().to_vec()
    };
    for subject in incidents
        .iter()
        .filter(|i| i.is_firing())
        .flat_map(|i| i.engines.iter())
    {
        let Subject::Engine { target, name, .. } = subject.as_ref() else {
            continue;
        };
        if seen.contains(&subject.as_ref()) {
            continue;
        }
        seen.push(subject.as_ref());
        let pod = fleet.pod_info(*target);
        let log = match pod {
            Some(pod) => tail(pod.logs.lines()),
            None => logs.get(*target).map(tail).unwrap_or_default(),
        };
        if !log.is_empty() {
            log_out.push(Excerpt {
                engine: name.clone(),
                lines: log,
            });
        }
        let events = pod.map(|p| tail(p.events.lines())).unwrap_or_default();
        if !events.is_empty() {
            event_out.push(Excerpt {
                engine: name.clone(),
                lines: events,
            });
        }
    }
    (log_out, event_out)
}

/// Lines of each log or event excerpt kept.
pub const EXCERPT_LINES: usize = 8;

/// Each engine's signal ranges from `since` on.
pub fn signal_ranges(fleet: &Fleet, since: Ts) -> Vec<SignalRanges> {
    fleet
        .engines()
        .iter()
        .filter(|e| super::super::inputs::is_engine(fleet, e))
        .map(|e| {
            let range = |series| range_of(&e.history.points(series, since));
            SignalRanges {
                engine: e.name.clone(),
                kv_usage: range(Series::KvUsage),
                waiting: range(Series::Waiting),
                ttft_p95: range(Series::TtftP95),
                gen_tps: range(Series::GenTps),
            }
        })
        .collect()
}

fn range_of(points: &[(f64, f64)]) -> Option<Range> {
    let known: Vec<f64> = points
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite())
        .collect();
    let last = *known.last()?;
    Some(Range {
        min: known.iter().copied().fold(f64::INFINITY, f64::min),
        max: known.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        last,
    })
}

/// Outside text as Markdown text: control characters visible, links, HTML, emphasis and pipes
/// escaped.
pub(crate) fn cell(text: &str) -> String {
    safe_text::markdown(text)
}

/// Outside text inside a code span: control characters visible, no backtick to close the
/// span, pipes escaped for the tables it may sit in.
pub(crate) fn code(text: &str) -> String {
    safe_text::line(text).replace('`', "'").replace('|', "\\|")
}

/// The incidents, excerpts and actions sections, in Markdown (what a snapshot adds to the
/// observation's fleet table, findings and signal ranges).
pub fn markdown_sections(s: &Snapshot, out: &mut String) {
    if !s.incidents.is_empty() {
        let _ = writeln!(out, "\n## Incidents\n");
        for i in &s.incidents {
            incident_markdown(i, s.ended, out);
        }
    }
    for (title, excerpts) in [("Log excerpts", &s.logs), ("Events", &s.events)] {
        if excerpts.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## {title}\n");
        for e in excerpts {
            let _ = writeln!(out, "`{}`:\n", code(&e.engine));
            for line in &e.lines {
                let _ = writeln!(out, "    {}", safe_text::line(line));
            }
            let _ = writeln!(out);
        }
    }
    let _ = writeln!(out, "\n## Actions taken\n");
    if s.actions.is_empty() {
        let _ = writeln!(out, "None recorded in the audit log over this span.");
    }
    for a in &s.actions {
        let _ = writeln!(out, "- {}", cell(a));
    }
}

fn incident_markdown(i: &Incident, now: Ts, out: &mut String) {
    let state = match i.state {
        IncidentState::Firing => format!("firing for {}", age(i.duration(now))),
        IncidentState::Resolved { at } => {
            format!("resolved at {}, lasted {}", utc(at), age(i.duration(now)))
        }
    };
    let _ = writeln!(
        out,
        "### {}: {} on `{}`\n",
        i.severity.name().to_uppercase(),
        cell(&i.head.title),
        code(&i.place())
    );
    let _ = writeln!(out, "- Timeline: first fired {}, {state}", utc(i.since));
    if i.engines.len() > 1 {
        let names: Vec<String> = i.engines.iter().map(|e| code(e.label())).collect();
        let _ = writeln!(out, "- Engines: `{}`", names.join("`, `"));
    }
    for line in evidence(&i.head) {
        let _ = writeln!(out, "- Evidence: `{}`", code(&line));
    }
    for sym in &i.symptoms {
        let times = if sym.count > 1 {
            format!(" ×{}", sym.count)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "- Symptom: {} {}{times} (`{}`)",
            sym.severity.name(),
            cell(&sym.title),
            code(&sym.rule_id)
        );
    }
    let _ = writeln!(out, "- Cause: {}", safe_text::line(&i.head.cause));
    let _ = writeln!(out, "- Action: {}", safe_text::line(&i.head.action));
    let _ = writeln!(
        out,
        "- Rule `{}` ({})\n",
        code(&i.head.rule_id),
        cell(&i.head.source)
    );
}

#[derive(serde::Serialize)]
struct JsonSnapshot<'a> {
    verdict: &'a str,
    headline: String,
    from: String,
    to: String,
    incidents: Vec<JsonIncident>,
    findings: Vec<JsonFinding>,
    signals: &'a [SignalRanges],
    logs: &'a [Excerpt],
    events: &'a [Excerpt],
    actions: &'a [String],
}

#[derive(serde::Serialize)]
struct JsonIncident {
    severity: &'static str,
    rule: String,
    title: String,
    place: String,
    state: &'static str,
    first_fired: String,
    resolved: Option<String>,
    engines: Vec<String>,
    evidence: Vec<String>,
    symptoms: Vec<JsonSymptom>,
    cause: String,
    action: String,
}

#[derive(serde::Serialize)]
struct JsonSymptom {
    rule: String,
    title: String,
    severity: &'static str,
    engines: usize,
}

#[derive(serde::Serialize)]
struct JsonFinding {
    rule: String,
    kind: &'static str,
    subject: String,
    severity: &'static str,
    state: &'static str,
    since: String,
    evidence: Vec<String>,
}

fn severity_name(s: Severity) -> &'static str {
    s.name()
}

/// The snapshot as JSON (one object; outside text as JSON strings, which escape controls).
pub fn json(s: &Snapshot) -> String {
    let doc = JsonSnapshot {
        verdict: &s.verdict,
        headline: s.headline.clone(),
        from: utc(s.started),
        to: utc(s.ended),
        incidents: s
            .incidents
            .iter()
            .map(|i| JsonIncident {
                severity: severity_name(i.severity),
                rule: i.head.rule_id.to_string(),
                title: i.head.title.to_string(),
                place: i.place(),
                state: if i.is_firing() { "firing" } else { "resolved" },
                first_fired: utc(i.since),
                resolved: match i.state {
                    IncidentState::Resolved { at } => Some(utc(at)),
                    IncidentState::Firing => None,
                },
                engines: i.engines.iter().map(|e| e.label().to_owned()).collect(),
                evidence: evidence(&i.head),
                symptoms: i
                    .symptoms
                    .iter()
                    .map(|s| JsonSymptom {
                        rule: s.rule_id.to_string(),
                        title: s.title.to_string(),
                        severity: severity_name(s.severity),
                        engines: s.count,
                    })
                    .collect(),
                cause: i.head.cause.to_string(),
                action: i.head.action.to_string(),
            })
            .collect(),
        findings: s
            .findings
            .iter()
            .map(|f| JsonFinding {
                rule: f.rule_id.to_string(),
                kind: kind(&f.subject),
                subject: f.subject.label().to_owned(),
                severity: severity_name(f.severity),
                state: match f.state {
                    FindingState::Firing => "firing",
                    FindingState::Pending => "pending",
                    FindingState::Resolved { .. } => "resolved",
                },
                since: utc(f.since),
                evidence: evidence(f),
            })
            .collect(),
        signals: &s.signals,
        logs: &s.logs,
        events: &s.events,
        actions: &s.actions,
    };
    let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_owned());
    safe_text::json(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_min_max_and_the_last_known_value() {
        assert_eq!(range_of(&[]), None);
        assert_eq!(
            range_of(&[(0.0, 0.4), (1.0, 0.9), (2.0, f64::NAN), (3.0, 0.2)]),
            Some(Range {
                min: 0.2,
                max: 0.9,
                last: 0.2
            })
        );
    }

    #[test]
    fn the_sections_escape_outside_text_and_say_when_no_action_was_taken() {
        let snapshot = Snapshot {
            verdict: "healthy".into(),
            headline: String::new(),
            started: 0.0,
            ended: 60.0,
            span_title: "Over the observation".into(),
            fleet: Vec::new(),
            findings: Vec::new(),
            incidents: Vec::new(),
            signals: Vec::new(),
            logs: vec![Excerpt {
                engine: "a`b|c".into(),
                lines: vec!["\u{1b}]0;pwned\u{7}".into()],
            }],
            events: Vec::new(),
            actions: vec!["drain [x](http://evil) by <b>".into()],
        };
        let mut out = String::new();
        markdown_sections(&snapshot, &mut out);
        assert!(out.contains("`a'b\\|c`"), "{out}");
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(!out.contains("[x](http"), "{out}");
        let json = json(&snapshot);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(value["actions"][0], "drain [x](http://evil) by <b>");
    }
}
