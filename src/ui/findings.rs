//! Findings on the fleet screen: the severity badge and health cell of a table row, the
//! findings strip above the detail pane, and the selected engine's findings in the detail pane.
//! Severity is always written out (`!!`, `CRIT`), never shown by colour alone.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{diag_text as text, format};
use crate::app::{App, EngineMarks, RowKey};
use crate::theme::Theme;
use kvtop_core::fleet::{EngineState, Ts};
use kvtop_core::rules::{Breaker, EngineHealth, Finding, FindingState, Health, Incident, Severity};

/// Columns of the badge cell.
pub(crate) const BADGE_WIDTH: u16 = 2;
/// Columns of the health cell (`degraded·open`).
pub(crate) const HEALTH_WIDTH: u16 = 13;
/// Findings of the selected engine listed in the full detail pane, at most.
const DETAIL_FINDINGS: usize = 4;
/// Width of the label column of the detail facts (as in the detail pane).
const FACT_LABEL: usize = 11;

/// The style of a severity.
pub(crate) fn severity_style(theme: &Theme, severity: Severity) -> Style {
    match severity {
        Severity::Critical => theme.crit,
        Severity::Warning => theme.warn,
        Severity::Info => theme.info,
    }
}

/// The badge cell of a table row, `width` columns.
pub(crate) fn badge_cell(theme: &Theme, marks: EngineMarks, width: usize) -> Span<'static> {
    let text = format::left(text::badge(marks.worst), width);
    match marks.worst {
        Some(severity) => Span::styled(text, severity_style(theme, severity)),
        None => Span::styled(text, theme.base),
    }
}

/// The health cell of a table row: `(text, style)`; unknown until the rules have run.
pub(crate) fn health_cell(
    theme: &Theme,
    health: Option<EngineHealth>,
    width: usize,
) -> Span<'static> {
    let Some(h) = health else {
        return Span::styled(format::left(format::UNKNOWN, width), theme.dim);
    };
    let text = text::health_cell(h.health, h.breaker.is_open());
    Span::styled(format::left(&text, width), health_style(theme, h.health))
}

fn health_style(theme: &Theme, health: Health) -> Style {
    match health {
        Health::Healthy => theme.ok,
        Health::Degraded => theme.warn,
        Health::Stuck | Health::Down => theme.down,
        Health::Pending => theme.dim,
    }
}

/// "firing 2m10s", "pending 20s", "resolved 2m ago" as of `now`.
pub(crate) fn since_cell(finding: &Finding, now: Ts) -> String {
    match finding.state {
        FindingState::Firing => text::firing_for(now - finding.fired_at.unwrap_or(finding.since)),
        FindingState::Pending => text::pending_for(now - finding.since),
        FindingState::Resolved { at } => text::resolved_ago(now - at),
    }
}

/// The style of a whole finding line: resolved ones are greyed.
pub(crate) fn line_style(theme: &Theme, finding: &Finding) -> Style {
    match finding.state {
        FindingState::Resolved { .. } => theme.dim,
        _ => theme.base,
    }
}

/// The severity word of a finding, styled (dim when resolved, not bold while pending).
pub(crate) fn severity_span(theme: &Theme, finding: &Finding) -> Span<'static> {
    let word = text::severity_word(finding.severity);
    let style = match finding.state {
        FindingState::Firing => severity_style(theme, finding.severity),
        FindingState::Pending => {
            severity_style(theme, finding.severity).remove_modifier(Modifier::BOLD)
        }
        FindingState::Resolved { .. } => theme.dim,
    };
    Span::styled(word, style)
}

/// One finding, short: `CRIT Engine down · vllm-f`.
fn short_finding(theme: &Theme, finding: &Finding, with_subject: bool) -> Vec<Span<'static>> {
    let mut spans = vec![
        severity_span(theme, finding),
        Span::styled(format!(" {}", finding.title), theme.base),
    ];
    if with_subject {
        spans.push(Span::styled(
            format!(" · {}", finding.subject.label()),
            theme.dim,
        ));
    }
    if finding.state == FindingState::Pending {
        spans.push(Span::styled(
            format!(" ({})", text::PENDING_MARK),
            theme.dim,
        ));
    }
    spans
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(Span::width).sum()
}

/// As many items as fit in `width` columns, two spaces apart, then `+N more` and `tail` if
/// they fit.
fn fit_items(
    theme: &Theme,
    items: Vec<Vec<Span<'static>>>,
    tail: Option<&'static str>,
    width: usize,
) -> Line<'static> {
    const GAP: &str = "  ";
    let total = items.len();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut shown = 0;
    for (i, item) in items.into_iter().enumerate() {
        let w = spans_width(&item) + if i > 0 { GAP.len() } else { 0 };
        let left = total - i - 1;
        let reserve = if left > 0 {
            GAP.len() + text::more(left).chars().count()
        } else {
            0
        };
        if used + w + reserve > width && shown > 0 {
            break;
        }
        if i > 0 {
            spans.push(Span::raw(GAP));
        }
        spans.extend(item);
        used += w;
        shown += 1;
    }
    if shown < total {
        let more = format!("{GAP}{}", text::more(total - shown));
        used += more.chars().count();
        spans.push(Span::styled(more, theme.dim));
    }
    if let Some(tail) = tail {
        let tail = format!("{GAP}{tail}");
        if used + tail.chars().count() <= width {
            spans.push(Span::styled(tail, theme.key));
        }
    }
    Line::from(spans)
}

/// Most lines the strip asks for, whatever the room (more incidents end in `+N more`).
const STRIP_LINES_MAX: usize = 16;
/// Width of the cause column of a strip line (rule titles are at most 32 characters).
const STRIP_TITLE_MAX: usize = 32;
/// Columns the place keeps before the cause column shrinks (`vllm-qwen…s2-gdd2m +5`).
const STRIP_PLACE_MIN: usize = 20;
/// Width of the time column of a strip line (`lasted 3m40s`, `+3 more · x`).
const STRIP_TIME_WIDTH: usize = 12;

/// How many lines the strip would use: one per incident (firing and recently resolved), at
/// least one for its quiet or not-yet-run line.
pub(crate) fn strip_lines_wanted(app: &App) -> usize {
    app.diag.strip_incidents().len().clamp(1, STRIP_LINES_MAX)
}

/// The findings strip of the fleet view: one line per incident, worst first (severity, where,
/// the cause, `+N` findings folded under it, how long); resolved ones greyed with how long
/// they lasted. When they do not all fit the last line says how many more.
pub(crate) fn render_strip(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let theme = &app.theme;
    let view = app.diag.view();
    let now = app.view_now(now);
    // A column free at both ends, as the table's rows.
    let width = usize::from(area.width.saturating_sub(2));
    let incidents = app.diag.strip_incidents();
    let silenced = view.incidents().len() - incidents.len();
    let quiet = if view.evaluated_at().is_none() {
        Some(Line::styled(text::STRIP_NOT_RUN, theme.dim))
    } else if incidents.is_empty() && silenced > 0 {
        Some(Line::styled(text::strip_all_silenced(silenced), theme.dim))
    } else if incidents.is_empty() {
        let c = app.view_fleet().counts();
        let engines = c.up + c.stale + c.down;
        Some(Line::styled(
            text::strip_quiet(view.rule_count(), engines),
            theme.dim,
        ))
    } else {
        None
    };
    if let Some(line) = quiet {
        super::cells::put_line(buf, area.x + 1, area.y, &line, area.width.saturating_sub(1));
        return;
    }
    let rows = usize::from(area.height);
    let shown = incidents.len().min(rows);
    for (row, incident) in incidents.iter().take(shown).enumerate() {
        // The last line says how many did not fit, in place of its time.
        let more = (row + 1 == shown && shown < incidents.len())
            .then(|| text::strip_more(incidents.len() - shown));
        let line = incident_line(theme, incident, width, now, more);
        let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
        super::cells::put_line(buf, area.x + 1, y, &line, area.width.saturating_sub(1));
    }
}

/// One incident in `width` columns, its cause in a column of its own, then where it is, then
/// how long (or `more`, on the strip's last line when incidents did not all fit):
/// `CRIT Container crash-looping     · vllm-qwen…62md9 +3      2m10s`.
fn incident_line(
    theme: &Theme,
    incident: &Incident,
    width: usize,
    now: Ts,
    more: Option<String>,
) -> Line<'static> {
    let firing = incident.is_firing();
    let style = if firing { theme.base } else { theme.dim };
    let word = text::severity_word(incident.severity);
    let word_style = if firing {
        severity_style(theme, incident.severity)
    } else {
        theme.dim
    };
    let (tail, tail_style) = match more {
        Some(more) => (more, theme.key),
        None => (text::incident_time(firing, incident.duration(now)), style),
    };
    let folded = incident.members.len().saturating_sub(1);
    let symptoms = if folded > 0 {
        format!(" {}", text::symptoms(folded))
    } else {
        String::new()
    };
    let word_w = word.chars().count();
    let tail_w = STRIP_TIME_WIDTH.max(tail.chars().count());
    let symptoms_w = symptoms.chars().count();
    let title_w = STRIP_TITLE_MAX
        .min(width.saturating_sub(word_w + 1 + 3 + STRIP_PLACE_MIN + 2 + STRIP_TIME_WIDTH));
    let title = format::left(&format::truncate(&incident.head.title, title_w), title_w);
    let fixed = word_w + 1 + title_w + 3 + symptoms_w + 2 + tail_w;
    let place_w = width.saturating_sub(fixed);
    let place = incident.place();
    let place = format::left_middle(&place, place.chars().count().min(place_w));
    let pad = width.saturating_sub(fixed + place.chars().count());
    Line::from(vec![
        Span::styled(word.to_owned(), word_style),
        Span::styled(format!(" {title}"), style),
        Span::styled(" · ", theme.dim),
        Span::styled(place, style),
        Span::styled(symptoms, theme.dim),
        Span::raw(" ".repeat(pad + 2)),
        Span::styled(format::right(&tail, tail_w), tail_style),
    ])
}

/// The selected engine's current (firing and pending) findings.
fn current_findings<'a>(app: &'a App, engine: &'a EngineState) -> Vec<&'a Finding> {
    app.diag
        .view()
        .engine()
        .findings_for(engine.target, &engine.id)
        .filter(|f| !matches!(f.state, FindingState::Resolved { .. }))
        .collect()
}

/// One line of the selected engine's findings for the compact detail pane, or `None` when it
/// has none: `2 findings: CRIT KV cache full  WARN High TTFT …`.
pub(crate) fn compact_line(app: &App, engine: &EngineState, width: usize) -> Option<Line<'static>> {
    let findings = current_findings(app, engine);
    if findings.is_empty() {
        return None;
    }
    let theme = &app.theme;
    let lead = text::engine_findings(findings.len());
    let items = findings
        .iter()
        .map(|f| short_finding(theme, f, false))
        .collect();
    let rest = fit_items(
        theme,
        items,
        Some(text::STRIP_HINT),
        width.saturating_sub(lead.chars().count() + 1),
    );
    let mut spans = vec![Span::styled(format!("{lead} "), theme.title)];
    spans.extend(rest.spans);
    Some(Line::from(spans))
}

/// The facts lines of the selected engine's findings and health for the full detail pane,
/// as of `now` (the view's time).
pub(crate) fn fact_lines(
    app: &App,
    engine: &EngineState,
    width: u16,
    now: Ts,
) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let value_width = usize::from(width).saturating_sub(FACT_LABEL + 1);
    let label = |l: &str| Span::styled(format!("{l:<FACT_LABEL$} "), theme.dim);
    let findings = current_findings(app, engine);
    let mut lines = Vec::new();
    if app.diag.view().evaluated_at().is_none() {
        lines.push(Line::from(vec![
            label(text::FACT_FINDINGS),
            Span::styled(format::UNKNOWN, theme.dim),
        ]));
    } else if findings.is_empty() {
        lines.push(Line::from(vec![
            label(text::FACT_FINDINGS),
            Span::styled(text::ENGINE_QUIET, theme.ok),
        ]));
    }
    for (i, finding) in findings.iter().take(DETAIL_FINDINGS).enumerate() {
        let head = if i == 0 { text::FACT_FINDINGS } else { "" };
        let word = text::severity_word(finding.severity);
        let title = format::truncate(
            &finding.title,
            value_width.saturating_sub(word.chars().count() + 1),
        );
        lines.push(Line::from(vec![
            label(head),
            severity_span(theme, finding),
            Span::styled(format!(" {title}"), line_style(theme, finding)),
        ]));
    }
    if findings.len() > DETAIL_FINDINGS {
        lines.push(Line::from(vec![
            label(""),
            Span::styled(text::more(findings.len() - DETAIL_FINDINGS), theme.dim),
        ]));
    }
    let key = RowKey::of(engine);
    if let Some(health) = app.diag.view().health(&key) {
        let open_for = match health.breaker {
            Breaker::Open { since } => Some(now - since),
            Breaker::Closed => None,
        };
        let value = text::health_fact(health.health, open_for);
        lines.push(Line::from(vec![
            label(text::FACT_HEALTH),
            Span::styled(
                format::truncate(&value, value_width),
                health_style(theme, health.health),
            ),
        ]));
    }
    lines
}
