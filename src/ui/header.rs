//! The one-line header: name, what is watched, interval, quantile window, engine counts,
//! the FROZEN marker and the clock.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::Span;

use super::findings::severity_style;
use super::line::{self, GAP, Segment};
use super::{diag_text, format, text};
use crate::app::App;
use kvtop_core::fleet::Ts;

/// Narrowest the source description is cut to before it is dropped.
const SOURCE_MIN: usize = 12;

/// Draw the header as of `now` (the clock; a frozen view's data time is shown beside FROZEN).
pub fn render(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    let theme = &app.theme;
    let fleet = app.view_fleet();

    let title = Segment::left(
        0,
        vec![Span::styled(format!(" {} ", text::APP_NAME), theme.header)],
    );

    let mut clock = vec![Span::styled(
        format::clock(now, app.utc_offset_secs),
        theme.base,
    )];
    if app.utc_offset_secs == 0 {
        clock.push(Span::styled(format!(" {}", text::UTC), theme.dim));
    }
    let clock = Segment::right(0, clock);

    let mut counts = Vec::new();
    let styles = [theme.ok, theme.stale, theme.down];
    for (i, ((number, word), style)) in text::counts(fleet.counts())
        .into_iter()
        .zip(styles)
        .enumerate()
    {
        if i > 0 {
            counts.push(Span::raw(" "));
        }
        let style = if number == "0" { theme.dim } else { style };
        counts.push(Span::styled(number, style.add_modifier(Modifier::BOLD)));
        counts.push(Span::styled(format!(" {word}"), style));
    }
    let counts = Segment::right(1, counts);
    let findings = findings_counts(app);

    let frozen = app.frozen.as_ref().map(|frozen| {
        let clock = format::clock(frozen.at, app.utc_offset_secs);
        if frozen.past {
            // The time cursor: the instant shown and how far back it is, in the info colour
            // so it is not read as the freeze (or as a warning).
            let badge = theme.info.add_modifier(Modifier::REVERSED | Modifier::BOLD);
            return Segment::right(
                0,
                vec![
                    Span::styled(format!(" {} ", text::cursor_at(&clock)), badge),
                    Span::styled(
                        format!(" {}", text::cursor_ago(now - frozen.at)),
                        theme.info,
                    ),
                ],
            );
        }
        let badge = theme.warn.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        let at = text::frozen_at(&clock);
        Segment::right(
            0,
            vec![
                Span::styled(format!(" {} ", text::FROZEN), badge),
                Span::styled(format!(" {at}"), theme.warn),
            ],
        )
    });

    let recording = app.recording.as_ref().map(|stats| {
        let mut spans = vec![Span::styled(
            format!(" {} ", text::RECORDING),
            theme.crit.add_modifier(Modifier::BOLD),
        )];
        let lost = stats.dropped();
        if lost > 0 || stats.failure().is_some() {
            spans.push(Span::styled(text::recording_lost(lost), theme.warn));
        }
        Segment::right(1, spans)
    });

    // A replay says so however narrow the screen (its source, which names it, is the first
    // thing dropped), and whether its clock runs.
    let replay = app.replay.as_ref().map(|replay| {
        let badge = theme.info.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        let word = if replay.paused() {
            text::PAUSED
        } else {
            text::REPLAY
        };
        Segment::right(0, vec![Span::styled(format!(" {word} "), badge)])
    });

    let window = Segment::left(
        2,
        vec![Span::styled(
            text::window(&fleet.window_label()),
            theme.base,
        )],
    );

    // The source takes what the title, window, counts, marker and clock leave: cut, then
    // dropped.
    let reserved: usize = [
        Some(&title),
        Some(&window),
        findings.as_ref(),
        Some(&counts),
        Some(&clock),
        frozen.as_ref(),
        replay.as_ref(),
        recording.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|s| s.width() + GAP)
    .sum();
    let room = usize::from(area.width).saturating_sub(reserved);

    let mut segments = vec![title];
    if room >= SOURCE_MIN {
        let source = format::truncate(&app.source, room);
        segments.push(Segment::left(
            3,
            vec![Span::styled(
                source,
                theme.base.add_modifier(Modifier::BOLD),
            )],
        ));
    }
    segments.push(window);
    segments.push(Segment::left(
        4,
        vec![Span::styled(
            text::interval(app.interval.as_secs_f64()),
            theme.dim,
        )],
    ));
    segments.extend(frozen);
    segments.extend(replay);
    segments.extend(recording);
    segments.extend(findings);
    segments.push(counts);
    segments.push(clock);
    line::render(buf, area, segments);
}

/// Firing incidents by severity, `2 crit 3 warn`, each in its severity's style; `no findings`
/// when nothing fires; nothing before the rules first ran.
fn findings_counts(app: &App) -> Option<Segment<'static>> {
    let theme = &app.theme;
    let view = app.diag.view();
    view.evaluated_at()?;
    let counts = diag_text::header_counts(view.incident_counts());
    if counts.is_empty() {
        return Some(Segment::right(
            1,
            vec![Span::styled(diag_text::NO_FINDINGS_HEADER, theme.dim)],
        ));
    }
    let mut spans = Vec::new();
    for (i, (number, word, severity)) in counts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        let style = severity_style(theme, severity);
        spans.push(Span::styled(number, style.add_modifier(Modifier::BOLD)));
        spans.push(Span::styled(format!(" {word}"), style));
    }
    Some(Segment::right(1, spans))
}
