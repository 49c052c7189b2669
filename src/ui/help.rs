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

/// The help lines of one context, `(keys, description)`: a binding without a description of
/// its own shares the line of the one before it (`s S  sort: next / reverse`), so
/// pairs of opposite keys take one line and the overlay fits 80×24.
fn help_lines(ctx: Context) -> Vec<(String, &'static str)> {
    let mut lines: Vec<(String, &'static str)> = Vec::new();
    for b in KEYMAP.iter().filter(|b| b.context == ctx) {
        match lines.last_mut() {
            Some((keys, _)) if b.description.is_empty() => {
                keys.push(' ');
                keys.push_str(&binding_label(b));
            }
            _ => lines.push((binding_label(b), b.description)),
        }
    }
    lines
}

/// The overlay's sections: a heading and its help lines, for each of `contexts`.
pub(crate) fn sections(theme: &Theme, contexts: &[Context]) -> Vec<Vec<Line<'static>>> {
    let all: Vec<(Context, Vec<(String, &'static str)>)> = contexts
        .iter()
        .map(|ctx| (*ctx, help_lines(*ctx)))
        .collect();
    let key_width = all
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|(keys, _)| keys.chars().count()))
        .max()
        .unwrap_or(0);
    all.into_iter()
        .map(|(ctx, help)| {
            let mut lines = vec![Line::styled(text::context_heading(ctx), theme.title)];
            lines.extend(help.into_iter().map(|(keys, description)| {
                Line::from(vec![
                    Span::styled(format!("{keys:<w$}", w = key_width + KEY_GAP), theme.key),
                    Span::styled(description, theme.base),
                ])
            }));
            lines
        })
        .filter(|lines| lines.len() > 1)
        .collect()
}

/// Columns no taller than `height`: sections a blank line apart, or, when that takes more
/// columns than sections set close (their headings still stand out), close.
fn layout(sections: Vec<Vec<Line<'static>>>, height: usize) -> Vec<Vec<Line<'static>>> {
    let close = columns(sections.clone(), height, false);
    let spaced = columns(sections, height, true);
    if close.len() < spaced.len() {
        close
    } else {
        spaced
    }
}

/// Split sections into columns no taller than `height` (one blank line between sections when
/// `spaced`); a section taller than `height` goes on in the next column.
fn columns(
    sections: Vec<Vec<Line<'static>>>,
    height: usize,
    spaced: bool,
) -> Vec<Vec<Line<'static>>> {
    let mut out: Vec<Vec<Line<'static>>> = vec![Vec::new()];
    for section in sections {
        let Some(current) = out.last_mut() else { break };
        let gap = spaced && !current.is_empty();
        let needed = section.len() + usize::from(gap);
        if !current.is_empty() && current.len() + needed > height {
            out.push(Vec::new());
        } else if gap {
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

/// The keys of `action` in the help, from the key map.
fn keys_of(action: Action) -> String {
    KEYMAP
        .iter()
        .find(|b| b.context == Context::Help && b.action == action)
        .map(binding_label)
        .unwrap_or_default()
}

/// The overlay's bottom line: the keys that close it, and the page shown when there are more.
fn close_hint(page: usize, pages: usize) -> String {
    let close = keys_of(Action::CloseHelp);
    let next = keys_of(Action::HelpNextPage);
    let page = (pages > 1).then_some((page + 1, pages, next.as_str()));
    text::help_close_hint(&close, page)
}

/// Consecutive columns grouped into pages that fit `width` side by side (a column wider than
/// `width` alone on its page, cut when drawn).
fn pages(widths: &[u16], width: u16) -> Vec<std::ops::Range<usize>> {
    let mut pages = Vec::new();
    let mut start = 0;
    for end in 1..=widths.len() {
        let fits = padded_width(&widths[start..end]) + 2 <= width;
        if !fits && end - 1 > start {
            pages.push(start..end - 1);
            start = end - 1;
        }
    }
    if start < widths.len() {
        pages.push(start..widths.len());
    }
    pages
}

/// Columns of `widths` side by side, with their gaps and a blank column at either side: the
/// overlay's width inside its border.
fn padded_width(widths: &[u16]) -> u16 {
    widths.iter().sum::<u16>()
        + COLUMN_GAP * u16::try_from(widths.len().saturating_sub(1)).unwrap_or(0)
        + 2
}

fn width_of(lines: &[Line<'_>]) -> u16 {
    let w = lines.iter().map(Line::width).max().unwrap_or(0);
    u16::try_from(w).unwrap_or(u16::MAX)
}

/// Draw the overlay centred in `area`, listing the keys of `contexts` (see
/// [`crate::app::App::help_contexts`]), and `note` last under its own heading. Where its
/// columns do not all fit side by side they are shown a page at a time: page `page` (modulo
/// their number), the bottom line saying which and how to turn it.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    theme: &Theme,
    contexts: &[Context],
    note: Option<&str>,
    page: usize,
) {
    if area.width < 4 || area.height < 3 {
        return;
    }
    let max_inner_height = usize::from(area.height - 2);
    let mut sections = sections(theme, contexts);
    let note = note.map(|note| {
        vec![
            Line::styled(text::HELP_NOTE_HEADING, theme.title),
            // Cut to the screen (a wide terminal shows the whole command).
            Line::styled(
                kvtop_core::format::truncate(note, usize::from(area.width).saturating_sub(6)),
                theme.base,
            ),
        ]
    });
    let one_column_height: usize = sections
        .iter()
        .chain(&note)
        .map(|section| section.len() + 1)
        .sum::<usize>()
        .saturating_sub(1);
    let cols = if one_column_height <= max_inner_height {
        sections.extend(note);
        columns(sections, usize::MAX, true)
    } else {
        // The note (a long command) in a column of its own: under the keys it would widen
        // their last column past the screen's half, and so need a page more.
        let mut cols = layout(sections, max_inner_height);
        cols.extend(note);
        cols
    };
    let widths: Vec<u16> = cols.iter().map(|c| width_of(c)).collect();
    let pages = pages(&widths, area.width);
    let page = page % pages.len().max(1);
    let shown = pages.get(page).cloned().unwrap_or(0..cols.len());
    // Every page in a box of the same size, so that turning pages does not move it.
    let inner_width = pages
        .iter()
        .map(|range| padded_width(&widths[range.clone()]))
        .max()
        .unwrap_or(0);
    let inner_height = cols.iter().map(Vec::len).max().unwrap_or(0);
    let height = u16::try_from(inner_height + 2).unwrap_or(u16::MAX);
    let inner = super::overlay::overlay(
        buf,
        area,
        (inner_width + 2, height),
        theme,
        Line::styled(text::HELP_TITLE, theme.title),
        Line::styled(close_hint(page, pages.len()), theme.dim),
    );
    let mut x = inner.x + 1;
    let page_widths = widths.get(shown.clone()).unwrap_or_default();
    for (lines, &w) in cols.into_iter().skip(shown.start).zip(page_widths) {
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
            let described = bindings
                .iter()
                .filter(|b| !b.description.is_empty())
                .count();
            assert_eq!(lines.len(), described + 1);
            // Every binding's keys are on exactly one line: its own, with its description, or
            // the line of the described binding before it.
            let mut line_of_last = None;
            for b in bindings {
                let label = binding_label(b);
                let line = if b.description.is_empty() {
                    line_of_last.expect("a binding sharing a line follows one with its own")
                } else {
                    let hits: Vec<usize> = (1..lines.len())
                        .filter(|&i| {
                            lines[i].starts_with(&label) && lines[i].ends_with(b.description)
                        })
                        .collect();
                    assert_eq!(hits.len(), 1, "{:?}", b.action);
                    hits[0]
                };
                assert!(
                    lines[line].contains(&label),
                    "{:?}: {}",
                    b.action,
                    lines[line]
                );
                line_of_last = Some(line);
            }
        }
    }

    /// With the demo's note the help takes three columns at 80×24: the third (the note) is a
    /// page of its own, which the bottom line offers, rather than being cut off the right edge.
    #[test]
    fn what_does_not_fit_80x24_is_on_a_next_page_never_cut() {
        let theme = Theme::fallback_mono();
        let area = Rect::new(0, 0, 80, 24);
        let note = "kubectl --kubeconfig /tmp/demo.kubeconfig.yaml get pods -n llm";
        let page = |n: usize| {
            let mut buf = Buffer::empty(area);
            render(&mut buf, area, &theme, &Context::HELP_ORDER, Some(note), n);
            super::super::buffer_text(&buf)
        };
        let (first, second) = (page(0), page(1));
        assert!(first.contains("1/2 → more"), "{first}");
        assert!(second.contains("2/2 → more"), "{second}");
        // The keys side by side on the first page, the command on a page of its own.
        assert!(
            first.contains("Fleet") && first.contains("Anywhere"),
            "{first}"
        );
        assert!(
            second.contains(note) && !second.contains("Anywhere"),
            "{second}"
        );
        // Turning past the last page comes back to the first.
        assert_eq!(page(2), first);
        let both = format!("{first}\n{second}");
        for ctx in Context::HELP_ORDER {
            let heading = text::context_heading(ctx);
            assert!(both.contains(heading), "{heading} on no page:\n{both}");
        }
        assert!(
            both.contains(text::HELP_NOTE_HEADING) && both.contains(note),
            "{both}"
        );
        // A screen wide enough for every column has one page and no page hint.
        let wide = Rect::new(0, 0, 200, 24);
        let mut buf = Buffer::empty(wide);
        render(&mut buf, wide, &theme, &Context::HELP_ORDER, Some(note), 0);
        let all = super::super::buffer_text(&buf);
        assert!(all.contains(note) && !all.contains("1/"), "{all}");
    }

    #[test]
    fn the_help_fits_an_80_column_screen_unclipped() {
        let theme = Theme::fallback_mono();
        for order in [&Context::HELP_ORDER[..], &Context::ACTION_HELP_ORDER[..]] {
            let screen = layout(sections(&theme, order), 22);
            let widths: Vec<u16> = screen.iter().map(|c| width_of(c)).collect();
            let inner = padded_width(&widths);
            // Two border columns: anything wider is cut off at the right edge.
            let widest: Vec<String> = screen
                .iter()
                .map(|c| {
                    c.iter()
                        .max_by_key(|l| l.width())
                        .map(|l| l.to_string())
                        .unwrap_or_default()
                })
                .collect();
            assert!(
                inner + 2 <= 80,
                "{inner} columns inside the border: {widest:?}"
            );
        }
    }

    #[test]
    fn sections_flow_into_a_second_column_when_too_tall() {
        let theme = Theme::fallback_mono();
        // Fleet: its heading and 23 help lines (pairs of opposite keys share a line; `p`
        // pauses a replay) take 24 rows, the 22 of an 80×24 screen and two in a second column,
        // where the pod's actions (4), the other views (7: Enter, t, A, z, y, Tab and the
        // heading), Filter (5) and Anywhere (2) follow, set close (a blank line between
        // sections would take a third): 2 + 18 = 20.
        let screen = layout(sections(&theme, &Context::HELP_ORDER), 22);
        let heights: Vec<usize> = screen.iter().map(Vec::len).collect();
        assert_eq!(heights, [22, 20]);
        assert!(screen.iter().flatten().all(|l| l.width() > 0), "close");
        let tall = columns(sections(&theme, &Context::HELP_ORDER), usize::MAX, true);
        assert_eq!(tall.len(), 1);
        // Over the plan screen: the menu (6) and the plan screen (14, with Ctrl-O override,
        // Ctrl-E on timeout and Ctrl-Y copy) with a blank line between them take 21 of the 22
        // rows; progress (4, with q quit) and Anywhere (2) start a second column.
        let modal = layout(sections(&theme, &Context::ACTION_HELP_ORDER), 22);
        let heights: Vec<usize> = modal.iter().map(Vec::len).collect();
        assert_eq!(heights, [21, 7]);
    }
}
