//! The `?` overlay, generated from the key map (`app::keys::KEYMAP`), never written by hand.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::text;
use crate::app::keys::{Action, Context, KEYMAP, binding_label};
use crate::theme::Theme;

/// Columns between the key and its description, and between two columns of sections.
const KEY_GAP: usize = 2;
const COLUMN_GAP: u16 = 3;

/// The overlay's sections: a heading and one line per binding, for each of `contexts`.
pub(crate) fn sections(theme: &Theme, contexts: &[Context]) -> Vec<Vec<Line<'static>>> {
    let key_width = KEYMAP
        .iter()
        .map(|b| binding_label(b).chars().count())
        .max()
        .unwrap_or(0);
    contexts
        .iter()
        .map(|ctx| {
            let mut lines = vec![Line::styled(text::context_heading(*ctx), theme.title)];
            lines.extend(KEYMAP.iter().filter(|b| b.context == *ctx).map(|b| {
                Line::from(vec![
                    Span::styled(
                        format!("{:<w$}", binding_label(b), w = key_width + KEY_GAP),
                        theme.key,
                    ),
                    Span::styled(b.description, theme.base),
                ])
            }));
            lines
        })
        .filter(|lines| lines.len() > 1)
        .collect()
}

/// Split sections into columns no taller than `height` (one blank line between sections);
/// a section taller than `height` gets a column of its own and is clipped.
fn columns(sections: Vec<Vec<Line<'static>>>, height: usize) -> Vec<Vec<Line<'static>>> {
    let mut out: Vec<Vec<Line<'static>>> = vec![Vec::new()];
    for section in sections {
        let Some(current) = out.last_mut() else { break };
        let needed = section.len() + usize::from(!current.is_empty());
        if !current.is_empty() && current.len() + needed > height {
            out.push(Vec::new());
        } else if !current.is_empty() {
            current.push(Line::raw(""));
        }
        // A section taller than the screen goes on in the next column rather than being cut.
        for line in section {
            if out.last().is_some_and(|c| c.len() >= height.max(1)) {
                out.push(Vec::new());
            }
            if let Some(current) = out.last_mut() {
                current.push(line);
            }
        }
    }
    out
}

/// The keys that close the help, from the key map.
fn close_hint() -> String {
    let keys = KEYMAP
        .iter()
        .find(|b| b.context == Context::Help && b.action == Action::CloseHelp)
        .map(binding_label)
        .unwrap_or_default();
    text::help_close_hint(&keys)
}

fn width_of(lines: &[Line<'_>]) -> u16 {
    let w = lines.iter().map(Line::width).max().unwrap_or(0);
    u16::try_from(w).unwrap_or(u16::MAX)
}

/// Draw the overlay centred in `area`, listing the keys of `contexts` (see
/// [`crate::app::App::help_contexts`]), and `note` last under its own heading.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    theme: &Theme,
    contexts: &[Context],
    note: Option<&str>,
) {
    if area.width < 4 || area.height < 3 {
        return;
    }
    let max_inner_height = usize::from(area.height - 2);
    let mut sections = sections(theme, contexts);
    if let Some(note) = note {
        sections.push(vec![
            Line::styled(text::HELP_NOTE_HEADING, theme.title),
            // Cut to the screen (a wide terminal shows the whole command).
            Line::styled(
                kvtop_core::format::truncate(note, usize::from(area.width).saturating_sub(6)),
                theme.base,
            ),
        ]);
    }
    let one_column_height: usize =
        sections.iter().map(Vec::len).sum::<usize>() + sections.len().saturating_sub(1);
    let cols = if one_column_height <= max_inner_height {
        columns(sections, usize::MAX)
    } else {
        columns(sections, max_inner_height)
    };
    let widths: Vec<u16> = cols.iter().map(|c| width_of(c)).collect();
    let inner_width = widths.iter().sum::<u16>()
        + COLUMN_GAP * u16::try_from(widths.len().saturating_sub(1)).unwrap_or(0)
        + 2;
    let inner_height = cols.iter().map(Vec::len).max().unwrap_or(0);
    let height = u16::try_from(inner_height + 2).unwrap_or(u16::MAX);
    let inner = super::overlay::overlay(
        buf,
        area,
        (inner_width + 2, height),
        theme,
        Line::styled(text::HELP_TITLE, theme.title),
        Line::styled(close_hint(), theme.dim),
    );
    let mut x = inner.x + 1;
    for (lines, w) in cols.into_iter().zip(widths) {
        if x >= inner.right() {
            break;
        }
        let rect = Rect::new(x, inner.y, w.min(inner.right() - x), inner.height);
        Paragraph::new(lines).render(rect, buf);
        x = x.saturating_add(w + COLUMN_GAP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn every_binding_appears_once_under_its_context() {
        let theme = Theme::fallback_mono();
        let all: Vec<Context> = Context::HELP_ORDER
            .into_iter()
            .chain(Context::ACTION_HELP_ORDER)
            .collect();
        let sections = sections(&theme, &all);
        assert_eq!(sections.len(), all.len());
        for (ctx, section) in all.iter().zip(&sections) {
            let lines = text_of(section);
            assert_eq!(
                lines.first().map(String::as_str),
                Some(text::context_heading(*ctx))
            );
            let bindings: Vec<_> = KEYMAP.iter().filter(|b| b.context == *ctx).collect();
            assert_eq!(lines.len(), bindings.len() + 1);
            for b in bindings {
                let hits = lines
                    .iter()
                    .filter(|l| l.starts_with(&binding_label(b)) && l.ends_with(b.description))
                    .count();
                assert_eq!(hits, 1, "{:?}", b.action);
            }
        }
    }

    #[test]
    fn sections_flow_into_a_second_column_when_too_tall() {
        let theme = Theme::fallback_mono();
        // Fleet: heading + 23 bindings = 24 lines; the 22 rows of an 80×24 screen take 22 of
        // them and its last two go on in a second column, where the pod's actions (4), the
        // other views (3), Filter (5) and Help (2) follow with a blank line between sections
        // (2 + 1 + 17); Anywhere (2) starts a third.
        let screen = columns(sections(&theme, &Context::HELP_ORDER), 22);
        let heights: Vec<usize> = screen.iter().map(Vec::len).collect();
        assert_eq!(heights, [22, 20, 2]);
        let tall = columns(sections(&theme, &Context::HELP_ORDER), usize::MAX);
        assert_eq!(tall.len(), 1);
        // Over the plan screen: the menu (6) and the plan screen (14, with Ctrl-O override,
        // Ctrl-E on timeout and Ctrl-Y copy) with a blank line between them take 21 of the 22
        // rows; progress (4, with q quit) and Anywhere (2) start a second column.
        let modal = columns(sections(&theme, &Context::ACTION_HELP_ORDER), 22);
        let heights: Vec<usize> = modal.iter().map(Vec::len).collect();
        assert_eq!(heights, [21, 7]);
    }
}
