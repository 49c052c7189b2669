//! The story pager over the whole body: every line of the engine's story wrapped to the width
//! (never cut), the current search match highlighted, and a status line saying where it is and
//! which keys page and search.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::diagnostics::wrap;
use crate::app::story::StoryView;
use crate::app::{App, Mode};
use crate::theme::Theme;
use kvtop_core::story::{StoryKind, StoryLine};

/// Draw the pager of `view` in `area`.
pub(crate) fn render(buf: &mut Buffer, area: Rect, app: &App, view: &StoryView) {
    if area.width < 10 || area.height < 4 {
        return;
    }
    let theme = &app.theme;
    Clear.render(area, buf);
    let title = format!(" story · {} ", app.story_title());
    let block = Block::new()
        .borders(Borders::ALL)
        .border_style(theme.border)
        .title(Line::styled(title, theme.title));
    let inner = block.inner(area);
    block.render(area, buf);
    let lines = app.story_lines();
    let width = usize::from(inner.width);
    let rows = usize::from(inner.height.saturating_sub(1));
    let wrapped: Vec<(usize, Vec<String>)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i, wrap(&l.text, width.max(1))))
        .collect();
    let first = first_shown(&wrapped, view.top, rows);
    let mut shown: Vec<Line<'static>> = Vec::new();
    for (index, parts) in wrapped.iter().skip(first) {
        let Some(line) = lines.get(*index) else {
            break;
        };
        let style = style_of(line, theme);
        let style = if view.matched == Some(*index) {
            style.add_modifier(Modifier::REVERSED)
        } else {
            style
        };
        for part in parts {
            if shown.len() >= rows {
                break;
            }
            shown.push(Line::styled(part.clone(), style));
        }
        if shown.len() >= rows {
            break;
        }
    }
    Paragraph::new(shown).render(
        Rect {
            height: inner.height.saturating_sub(1),
            ..inner
        },
        buf,
    );
    let status = Rect {
        y: inner.bottom().saturating_sub(1),
        height: 1,
        ..inner
    };
    Paragraph::new(status_line(app, view, first, lines.len())).render(status, buf);
}

/// The first logical line to show: `top`, or, following the end, the one from which the last
/// `rows` wrapped rows fill the screen.
fn first_shown(wrapped: &[(usize, Vec<String>)], top: Option<usize>, rows: usize) -> usize {
    if let Some(top) = top {
        return top.min(wrapped.len().saturating_sub(1));
    }
    let mut used = 0;
    let mut first = wrapped.len();
    for (index, parts) in wrapped.iter().rev() {
        if used + parts.len() > rows {
            break;
        }
        used += parts.len();
        first = *index;
    }
    first.min(wrapped.len().saturating_sub(1))
}

fn style_of(line: &StoryLine, theme: &Theme) -> ratatui::style::Style {
    match line.kind {
        StoryKind::Heading => theme.title.add_modifier(Modifier::BOLD),
        StoryKind::Missing => theme.dim,
        StoryKind::Event if line.text.starts_with("Warning") => theme.warn,
        StoryKind::Log if looks_bad(&line.text) => theme.error,
        _ => theme.base,
    }
}

fn looks_bad(text: &str) -> bool {
    ["ERROR", "CRITICAL", "Traceback", "Error:", "out of memory"]
        .iter()
        .any(|w| text.contains(w))
}

fn status_line(app: &App, view: &StoryView, first: usize, total: usize) -> Line<'static> {
    let theme = &app.theme;
    let place = match view.top {
        None => format!("end of {total} lines, following"),
        Some(_) => format!("line {} of {total}", first + 1),
    };
    let mut spans = vec![Span::styled(place, theme.dim)];
    if app.modes.top() == Some(Mode::StorySearch) {
        spans.push(Span::styled(format!("  /{}▏", view.query), theme.base));
        if view.no_match {
            spans.push(Span::styled("  no match", theme.warn));
        }
        spans.push(Span::styled("  Enter keep · Esc drop", theme.dim));
    } else {
        if !view.query.is_empty() {
            let found = if view.no_match { "no match" } else { "n/N" };
            spans.push(Span::styled(
                format!("  /{} {found}", view.query),
                theme.base,
            ));
        }
        spans.push(Span::styled(
            "  j/k PgUp/PgDn g/G  / search  Esc close",
            theme.dim,
        ));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use crate::app::story::tests::{T0, app_with_log, press};
    use crossterm::event::KeyCode;

    #[test]
    fn the_pager_covers_the_body_and_wraps_long_lines_at_80_columns() {
        let mut app = app_with_log(3);
        if let Some(pod) = app.fleet.pod_info_mut(app.fleet.engines()[0].target) {
            pod.logs.push(format!("ERROR {} finale", "x".repeat(150)));
        }
        press(&mut app, KeyCode::Char('l'));
        let area = ratatui::layout::Rect::new(0, 0, 80, 24);
        let mut buf = ratatui::buffer::Buffer::empty(area);
        super::super::draw_into(&mut buf, area, &app, T0);
        let rows: Vec<String> = (0..24)
            .map(|y| (0..80).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect();
        let screen = rows.join("\n");
        assert!(screen.contains("story · vllm-0"), "{screen}");
        assert!(
            screen.contains("finale"),
            "the long line is wrapped, not cut:\n{screen}"
        );
        assert!(screen.contains("end of "), "{screen}");
        press(&mut app, KeyCode::Char('g'));
        let mut buf = ratatui::buffer::Buffer::empty(area);
        super::super::draw_into(&mut buf, area, &app, T0);
        let top: String = (0..24)
            .map(|y| (0..80).map(|x| buf[(x, y)].symbol()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(top.contains("--max-num-seqs 256"), "{top}");
        assert!(top.contains("line 1 of"), "{top}");
    }
}
