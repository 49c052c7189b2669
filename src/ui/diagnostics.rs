//! The diagnostics view (`x`): every finding, most urgent first (firing, pending, then resolved
//! ones greyed for five minutes; each by severity, then age), and below the list the selected
//! finding in full: its state, each comparison with current values and thresholds, the likely
//! cause, what to do, what kvtop can do, and the table row it comes from.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::findings::{line_style, severity_span, severity_style, since_cell};
use super::{diag_text as text, format};
use crate::app::{App, DiagRow, DiagRowKind, diag_rows};
use crate::theme::Theme;
use kvtop_core::fleet::Ts;
use kvtop_core::rules::{Evidence, Finding, FindingState, Incident, IncidentState, Symptom, Truth};

/// Share of the body the list gets, percent, and the fewest rows it gets (header + 3).
const LIST_SHARE: u16 = 40;
const LIST_MIN_ROWS: u16 = 4;
/// Widths of the list's fixed columns.
const SEVERITY_WIDTH: usize = 4;
const SINCE_WIDTH: usize = 18;
const SOURCE_WIDTH: usize = 28;
/// Subject column width: narrow and wide terminals.
const SUBJECT_NARROW: usize = 18;
const SUBJECT_WIDE: usize = 26;
/// From this width the list shows the source column and the wider subject.
const WIDE: u16 = 120;
/// Width of the detail's label column.
const LABEL_WIDTH: usize = 10;

/// Draw the view into the body area (between header and footer) as of `now`.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let view = app.diag.view();
    let findings = view.findings();
    let now = app.view_now(now);
    let list_height = (area.height * LIST_SHARE / 100)
        .max(LIST_MIN_ROWS)
        .min(area.height);
    let list_area = Rect {
        height: list_height,
        ..area
    };
    let detail_area = Rect {
        y: area.y + list_height,
        height: area.height - list_height,
        ..area
    };
    let rows = usize::from(list_height.saturating_sub(1));
    app.diag.set_list_height(rows);
    if findings.is_empty() {
        let at = view
            .evaluated_at()
            .map(|t| format::clock(t, app.utc_offset_secs));
        let c = app.view_fleet().counts();
        let engines = c.up + c.stale + c.down;
        let message = text::no_findings(view.rule_count(), engines, at.as_deref());
        super::cells::put_line(
            buf,
            area.x + 1,
            area.y,
            &Line::styled(message, app.theme.dim),
            area.width.saturating_sub(1),
        );
        return;
    }
    let rows = diag_rows(view);
    let selected = app.diag.selected_row(view, &rows).unwrap_or(0);
    list(buf, list_area, app, &rows, selected, now);
    if let Some(finding) = app.diag.selected_finding(view) {
        detail(buf, detail_area, app, finding, now);
    }
}

/// Column widths of the list: (subject, title, source); source 0 when not shown.
fn list_columns(width: u16) -> (usize, usize, usize) {
    let wide = width >= WIDE;
    let subject = if wide { SUBJECT_WIDE } else { SUBJECT_NARROW };
    let source = if wide { SOURCE_WIDTH } else { 0 };
    let gaps = if wide { 4 } else { 3 };
    let fixed = 1 + SEVERITY_WIDTH + subject + SINCE_WIDTH + source + 2 * gaps;
    let title = usize::from(width).saturating_sub(fixed);
    (subject, title, source)
}

fn list(buf: &mut Buffer, area: Rect, app: &App, rows: &[DiagRow], selected: usize, now: Ts) {
    let theme = &app.theme;
    let (subject_w, title_w, source_w) = list_columns(area.width);
    let mut header = format!(
        " {}  {}  {}  {}",
        format::left(text::LIST_SEVERITY, SEVERITY_WIDTH),
        format::left(text::LIST_SUBJECT, subject_w),
        format::left(text::LIST_TITLE, title_w),
        format::right(text::LIST_SINCE, SINCE_WIDTH),
    );
    if source_w > 0 {
        header.push_str(&format!("  {}", format::left(text::LIST_SOURCE, source_w)));
    }
    let header_area = Rect { height: 1, ..area };
    super::cells::fill_style(buf, header_area, theme.table_header);
    super::cells::put_line(buf, area.x, area.y, &Line::raw(header), area.width);

    let height = usize::from(area.height.saturating_sub(1));
    if height == 0 {
        return;
    }
    // Keep the selection in view without remembering a scroll position.
    let offset = (selected + 1).saturating_sub(height);
    let below = rows.len().saturating_sub(offset + height);
    if let Some(marks) = scroll_marks(offset, below) {
        // At the right end of the FINDING column's header, which is mostly blank.
        let title_end = 1 + SEVERITY_WIDTH + 2 + subject_w + 2 + title_w;
        let width = marks.chars().count();
        if width + 1 + text::LIST_TITLE.chars().count() < title_w {
            let x = area.x + u16::try_from(title_end - width).unwrap_or(0);
            super::cells::put_line(
                buf,
                x,
                area.y,
                &Line::styled(marks, theme.dim),
                width as u16,
            );
        }
    }
    let view = app.diag.view();
    let columns = Columns {
        subject: subject_w,
        title: title_w,
        source: source_w,
    };
    for (line_no, (index, row)) in rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .enumerate()
    {
        let Some(finding) = view.findings().get(row.finding) else {
            continue;
        };
        let y = area.y + 1 + u16::try_from(line_no).unwrap_or(u16::MAX);
        let rect = Rect::new(area.x, y, area.width, 1);
        if index == selected {
            super::cells::fill_style(buf, rect, theme.selected);
        }
        let spans = match row.kind {
            DiagRowKind::Incident { incident } => match view.incidents().get(incident) {
                Some(incident) => {
                    let silence = app
                        .diag
                        .silences
                        .of(incident)
                        .map(|s| match s.remaining(now) {
                            Some(left) => text::snoozed(left),
                            None => text::ACKED.to_owned(),
                        });
                    incident_row(theme, incident, finding, silence, &columns, now)
                }
                None => continue,
            },
            DiagRowKind::Symptom { incident, symptom } => {
                let symptom = view
                    .incidents()
                    .get(incident)
                    .and_then(|i| Some((i, i.symptoms.get(symptom)?)));
                match symptom {
                    Some((incident, symptom)) => {
                        symptom_row(theme, incident, symptom, finding, &columns, now)
                    }
                    None => continue,
                }
            }
            DiagRowKind::Loose => finding_row(theme, finding, &columns, now),
        };
        super::cells::put_line(buf, rect.x, rect.y, &Line::from(spans), rect.width);
    }
}

/// Widths of the list's variable columns.
struct Columns {
    subject: usize,
    title: usize,
    /// 0 when the source column is not shown.
    source: usize,
}

/// The since cell and the source cell closing a row.
fn row_tail(
    theme: &Theme,
    since: String,
    since_style: Style,
    source: &str,
    columns: &Columns,
) -> Vec<Span<'static>> {
    let mut spans = vec![
        Span::raw("  "),
        Span::styled(format::right(&since, SINCE_WIDTH), since_style),
    ];
    if columns.source > 0 {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(
            format::left(source, columns.source),
            theme.dim,
        ));
    }
    spans
}

/// An incident's line: `CRIT  vllm-hot  KV above 95% +3  firing 1m39s`.
fn incident_row(
    theme: &Theme,
    incident: &Incident,
    head: &Finding,
    silence: Option<String>,
    columns: &Columns,
    now: Ts,
) -> Vec<Span<'static>> {
    let firing = incident.is_firing();
    let style = if firing { theme.base } else { theme.dim };
    let word_style = if firing {
        severity_style(theme, incident.severity)
    } else {
        theme.dim
    };
    let folded = incident.members.len().saturating_sub(1);
    let title = if folded > 0 {
        format!("{} {}", incident.head.title, text::symptoms(folded))
    } else {
        incident.head.title.to_string()
    };
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(
            format::left(text::severity_word(incident.severity), SEVERITY_WIDTH),
            word_style,
        ),
        Span::raw("  "),
        Span::styled(
            format::left_middle(&incident.place(), columns.subject),
            style,
        ),
        Span::raw("  "),
    ];
    // The acknowledgement or snooze closes the title column, where it is not cut.
    match silence {
        Some(mark) => {
            let mark = format!(" {mark}");
            let room = columns.title.saturating_sub(mark.chars().count());
            spans.push(Span::styled(format::left(&title, room), style));
            spans.push(Span::styled(mark, theme.key));
        }
        None => spans.push(Span::styled(format::left(&title, columns.title), style)),
    }
    let since = match incident.state {
        IncidentState::Firing => text::firing_for(incident.duration(now)),
        IncidentState::Resolved { at } => text::resolved_ago(now - at),
    };
    spans.extend(row_tail(theme, since, style, &head.source, columns));
    spans
}

/// A symptom under its incident, indented: `└ WARN Engine not answering ×2`; the engine is
/// named when the incident spans several.
fn symptom_row(
    theme: &Theme,
    incident: &Incident,
    symptom: &Symptom,
    finding: &Finding,
    columns: &Columns,
    now: Ts,
) -> Vec<Span<'static>> {
    let style = line_style(theme, finding);
    let word = text::severity_word(symptom.severity);
    let title = match symptom.count {
        0 | 1 => symptom.title.to_string(),
        n => format!("{} ×{n}", symptom.title),
    };
    let lead_w = text::SYMPTOM_MARK.chars().count() + word.chars().count() + 1;
    let title_w = columns.title.saturating_sub(lead_w);
    let engine = if incident.engines.len() > 1 {
        finding.subject.label()
    } else {
        ""
    };
    let mut spans = vec![
        Span::raw(" "),
        Span::raw(" ".repeat(SEVERITY_WIDTH)),
        Span::raw("  "),
        Span::styled(format::left_middle(engine, columns.subject), theme.dim),
        Span::raw("  "),
        Span::styled(text::SYMPTOM_MARK, theme.dim),
        severity_span(theme, finding),
        Span::raw(" "),
        Span::styled(format::left(&title, title_w), style),
    ];
    spans.extend(row_tail(
        theme,
        since_cell(finding, now),
        theme.dim,
        &finding.source,
        columns,
    ));
    spans
}

/// A finding no incident holds (pending, or resolved beside firing ones).
fn finding_row(theme: &Theme, finding: &Finding, columns: &Columns, now: Ts) -> Vec<Span<'static>> {
    let style = line_style(theme, finding);
    let mut spans = vec![
        Span::raw(" "),
        severity_span(theme, finding),
        Span::raw("  "),
        Span::styled(
            format::left_middle(finding.subject.label(), columns.subject),
            style,
        ),
        Span::raw("  "),
        Span::styled(format::left(&finding.title, columns.title), style),
    ];
    let since_style = if finding.state == FindingState::Firing {
        theme.base
    } else {
        theme.dim
    };
    spans.extend(row_tail(
        theme,
        since_cell(finding, now),
        since_style,
        &finding.source,
        columns,
    ));
    spans
}

/// The selected finding in full.
fn detail(buf: &mut Buffer, area: Rect, app: &App, finding: &Finding, now: Ts) {
    if area.height == 0 {
        return;
    }
    let theme = &app.theme;
    let title = text::finding_title(finding.severity, &finding.title, finding.subject.label());
    let title_style = match finding.state {
        FindingState::Resolved { .. } => theme.dim,
        _ => severity_style(theme, finding.severity),
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(theme.border)
        .title(Line::styled(title, title_style));
    let inner = block.inner(area);
    block.render(area, buf);
    let value_width = usize::from(inner.width).saturating_sub(LABEL_WIDTH + 2);
    let lines = detail_lines(app, finding, now, value_width);
    Paragraph::new(lines).render(inner, buf);
}

/// Lines of the detail: a label column, then values wrapped to `width`.
fn detail_lines(app: &App, finding: &Finding, now: Ts, width: usize) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    let mut labelled = |label: &str, spans: Vec<Span<'static>>| {
        let mut all = vec![Span::styled(format!(" {label:<LABEL_WIDTH$} "), theme.dim)];
        all.extend(spans);
        lines.push(Line::from(all));
    };

    let since_clock = format::clock(finding.since, app.utc_offset_secs);
    let state = text::state_line(
        &since_cell(finding, now),
        finding.held_for(now),
        &since_clock,
    );
    let state_style = line_style(theme, finding);
    for (i, part) in wrap(&state, width).into_iter().enumerate() {
        let label = if i == 0 { text::LABEL_STATE } else { "" };
        labelled(label, vec![Span::styled(part, state_style)]);
    }
    if finding.frozen {
        for part in wrap(text::FROZEN_NOTE, width) {
            labelled("", vec![Span::styled(part, theme.warn)]);
        }
    }

    if finding.evidence.is_empty() {
        labelled(
            text::LABEL_EVIDENCE,
            vec![Span::styled(text::NO_EVIDENCE, theme.dim)],
        );
    }
    for (i, evidence) in finding.evidence.iter().enumerate() {
        let (mark, style) = evidence_mark(theme, evidence);
        let described = evidence.describe();
        for (j, part) in wrap(&described, width.saturating_sub(2))
            .into_iter()
            .enumerate()
        {
            let label = if i == 0 && j == 0 {
                text::LABEL_EVIDENCE
            } else {
                ""
            };
            let lead = if j == 0 {
                Span::styled(format!("{mark} "), style)
            } else {
                Span::raw("  ")
            };
            labelled(label, vec![lead, Span::styled(part, style)]);
        }
    }

    let mut paragraph = |label: &str, body: &str, style: Style| {
        for (i, part) in wrap(body, width).into_iter().enumerate() {
            let label = if i == 0 { label } else { "" };
            labelled(label, vec![Span::styled(part, style)]);
        }
    };
    paragraph(text::LABEL_CAUSE, &finding.cause, theme.base);
    paragraph(text::LABEL_ACTION, &finding.action, theme.base);
    match finding.suggest {
        Some(suggest) => paragraph(text::LABEL_KVTOP, &text::suggestion(suggest), theme.key),
        None => paragraph(text::LABEL_KVTOP, text::NO_SUGGESTION, theme.dim),
    }
    paragraph(
        text::LABEL_SOURCE,
        &text::source_line(&finding.source, &finding.rule_id),
        theme.dim,
    );
    lines
}

/// The mark and style of one comparison: ✓ held, ✗ did not, ? unknown.
fn evidence_mark(theme: &Theme, evidence: &Evidence) -> (&'static str, Style) {
    match evidence.holds {
        Truth::True => (text::HOLDS_TRUE, theme.base),
        Truth::False => (text::HOLDS_FALSE, theme.dim),
        Truth::Unknown => (text::HOLDS_UNKNOWN, theme.dim),
    }
}

/// `text` in lines of at most `width` characters, broken at spaces (words longer than a line
/// are cut); at least one line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if current_len > 0 {
                lines.push(std::mem::take(&mut current));
                current_len = 0;
            }
            let rest = word.split_off(width);
            lines.push(word.into_iter().collect());
            word = rest;
        }
        let needed = if current_len == 0 {
            word.len()
        } else {
            current_len + 1 + word.len()
        };
        if needed > width && current_len > 0 {
            lines.push(std::mem::take(&mut current));
            current_len = 0;
        }
        if current_len > 0 {
            current.push(' ');
            current_len += 1;
        }
        current_len += word.len();
        current.extend(word);
    }
    if current_len > 0 || lines.is_empty() {
        lines.push(current);
    }
    lines
}

/// `↑3 ↓12 ` when findings are above or below the rows shown (`None` when all are shown).
fn scroll_marks(above: usize, below: usize) -> Option<String> {
    let mut marks = String::new();
    if above > 0 {
        marks.push_str(&format!("↑{above} "));
    }
    if below > 0 {
        marks.push_str(&format!("↓{below} "));
    }
    (!marks.is_empty()).then_some(marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scroll_marks_count_the_findings_out_of_view() {
        assert_eq!(scroll_marks(0, 0), None);
        assert_eq!(scroll_marks(2, 0).as_deref(), Some("↑2 "));
        assert_eq!(scroll_marks(0, 7).as_deref(), Some("↓7 "));
        assert_eq!(scroll_marks(3, 12).as_deref(), Some("↑3 ↓12 "));
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("a  b", 0), ["a", "b"]);
        assert_eq!(wrap("xy abcdefgh", 4), ["xy", "abcd", "efgh"]);
    }

    #[test]
    fn list_columns_fill_the_width() {
        let (subject, title, source) = list_columns(80);
        assert_eq!((subject, source), (SUBJECT_NARROW, 0));
        assert_eq!(1 + 4 + 2 + subject + 2 + title + 2 + SINCE_WIDTH, 80);
        let (subject, title, source) = list_columns(160);
        assert_eq!((subject, source), (SUBJECT_WIDE, SOURCE_WIDTH));
        assert_eq!(
            1 + 4 + 2 + subject + 2 + title + 2 + SINCE_WIDTH + 2 + source,
            160
        );
    }
}
