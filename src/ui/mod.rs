//! Drawing: `draw(frame, &App, now)`; views and widgets.
//!
//! Layout of the fleet view, top to bottom: a one-line header, the fleet table, the strip of
//! the fleet's incidents (one line each, worst first; it grows into the table rows the engines
//! leave empty), the detail pane of the selected engine, a
//! one-line footer. Tall terminals (≥ 40 rows) give the table ~55 % and the detail charts the
//! rest; shorter ones give the table nearly everything and the detail a compact three-line
//! summary, unless the operator asked for the larger detail (Enter/Tab). The diagnostics and
//! routing views take the whole body between header and footer.

pub mod action_progress;
pub mod actions;
pub mod cells;
pub mod deployments;
pub mod detail;
pub mod diag_text;
pub mod diagnostics;
pub mod findings;
pub mod fleet_table;
pub mod footer;
pub use kvtop_core::format;
pub mod gpu;
pub mod header;
pub mod help;
pub mod line;
pub mod nodes;
pub mod overlay;
pub mod pod;
pub mod routing;
mod signal_facts;
pub mod spark;
pub mod story;
pub mod text;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use crate::app::{App, View};
use kvtop_core::fleet::Ts;

/// Rows from which the detail pane shows charts without being asked to.
pub(crate) const TALL_HEIGHT: u16 = 40;
/// Rows of the compact detail pane.
const COMPACT_DETAIL_ROWS: u16 = 3;
/// Share of the body the table gets on tall terminals, percent.
const TABLE_SHARE_TALL: u16 = 55;
/// Share of the body the table keeps when the detail is expanded on a short terminal, percent.
const TABLE_SHARE_EXPANDED: u16 = 30;
/// The fewest rows the table is given (its header plus three engines).
const TABLE_MIN_ROWS: u16 = 4;
/// Rows of the findings strip, at least.
const FINDINGS_ROWS: u16 = 1;

/// How much room the detail pane has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailMode {
    /// Three lines: a title, sparklines, key facts.
    Compact,
    /// Facts and charts.
    Full,
}

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub table: Rect,
    /// The fleet's incidents, worst first: one line, or more where the table has room.
    pub findings: Rect,
    pub detail: Rect,
    pub detail_mode: DetailMode,
    pub footer: Rect,
}

/// Split the screen. `area` must be at least `text::MIN_WIDTH` × `text::MIN_HEIGHT`.
pub fn layout(area: Rect, detail_expanded: bool) -> Areas {
    layout_fitted(area, detail_expanded, usize::MAX, 1)
}

/// [`layout`], with the findings strip grown to `strip_lines` lines (one per incident) as far
/// as the table has rows it does not need: it needs `table_lines` (header and engine rows).
/// The strip never takes a row the table's engines would use, nor the detail's.
pub fn layout_fitted(
    area: Rect,
    detail_expanded: bool,
    table_lines: usize,
    strip_lines: usize,
) -> Areas {
    let base = layout_with_strip(area, detail_expanded, FINDINGS_ROWS);
    let spare = usize::from(base.table.height).saturating_sub(table_lines);
    let wanted = strip_lines.saturating_sub(usize::from(FINDINGS_ROWS));
    let extra = u16::try_from(wanted.min(spare)).unwrap_or(0);
    if extra == 0 {
        return base;
    }
    Areas {
        table: Rect {
            height: base.table.height - extra,
            ..base.table
        },
        findings: Rect {
            y: base.findings.y - extra,
            height: base.findings.height + extra,
            ..base.findings
        },
        ..base
    }
}

fn layout_with_strip(area: Rect, detail_expanded: bool, strip_rows: u16) -> Areas {
    let row = |y: u16, height: u16| Rect::new(area.x, y, area.width, height);
    let body_height = area.height.saturating_sub(2 + strip_rows);
    let (table_height, detail_mode) = if area.height >= TALL_HEIGHT {
        (body_height * TABLE_SHARE_TALL / 100, DetailMode::Full)
    } else if detail_expanded {
        let h = (body_height * TABLE_SHARE_EXPANDED / 100).max(TABLE_MIN_ROWS);
        (h.min(body_height), DetailMode::Full)
    } else {
        (
            body_height.saturating_sub(COMPACT_DETAIL_ROWS),
            DetailMode::Compact,
        )
    };
    let body_y = area.y + 1;
    let findings_y = body_y + table_height;
    Areas {
        header: row(area.y, 1.min(area.height)),
        table: row(body_y, table_height),
        findings: row(findings_y, strip_rows.min(area.height.saturating_sub(2))),
        detail: row(findings_y + strip_rows, body_height - table_height),
        detail_mode,
        footer: row(area.y + area.height.saturating_sub(1), 1.min(area.height)),
    }
}

/// Draw the whole console as of `now` (the clock); data is drawn as of `app.view_now(now)`,
/// its rows as `update` last settled them. Drawing only reads the state.
pub fn draw(frame: &mut Frame, app: &App, now: Ts) {
    let area = frame.area();
    draw_into(frame.buffer_mut(), area, app, now);
}

/// [`draw`] into a buffer area (used by `draw` and by benchmarks).
pub fn draw_into(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    let area = area.intersection(buf.area);
    cells::fill_style(buf, area, app.theme.base);
    if area.width < text::MIN_WIDTH || area.height < text::MIN_HEIGHT {
        too_small(buf, area, app);
        return;
    }
    let rows = app.visible_rows();
    let areas = match app.view {
        // The strip takes the table rows its engines leave free, one per incident.
        View::Fleet => layout_fitted(
            area,
            app.detail_expanded,
            rows.len() + 1 + fleet_table::group_lines(app, rows),
            findings::strip_lines_wanted(app),
        ),
        _ => layout(area, app.detail_expanded),
    };
    let selected = app.selection(rows);

    header::render(buf, areas.header, app, now);
    match app.view {
        View::Fleet => {
            fleet_table::render(buf, areas.table, app, rows, selected, now);
            findings::render_strip(buf, areas.findings, app, now);
            let engine = app.selected_engine(rows);
            match areas.detail_mode {
                DetailMode::Full => detail::render_full(buf, areas.detail, app, engine, now),
                DetailMode::Compact => {
                    detail::render_compact(buf, areas.detail, app, engine, now);
                }
            }
        }
        View::Diagnostics => diagnostics::render(buf, body(area, &areas), app, now),
        View::Routing => routing::render(buf, body(area, &areas), app),
        View::Nodes => nodes::render(buf, body(area, &areas), app, now),
    }
    footer::render(buf, areas.footer, app, now);
    if app.kube.deployments_open {
        let body = Rect::new(
            area.x,
            areas.table.y,
            area.width,
            areas.footer.y.saturating_sub(areas.table.y),
        );
        deployments::render(buf, body, app);
    }
    if let Some(run) = app.actions.run.as_ref().filter(|_| app.progress_visible()) {
        action_progress::render(buf, area, app, run, now);
    }
    if let Some(menu) = &app.actions.menu {
        actions::render_menu(buf, area, app, menu);
    }
    if let Some(screen) = &app.actions.plan {
        actions::render_plan(buf, area, app, screen);
    }
    if let Some(view) = &app.story {
        story::render(buf, body(area, &areas), app, view);
    }
    if app.help_visible() {
        help::render(
            buf,
            area,
            &app.theme,
            &app.help_contexts(),
            app.help_note.as_deref(),
            app.help_page,
        );
    }
}

/// Everything between header and footer, for the views that take the whole body.
fn body(area: Rect, areas: &Areas) -> Rect {
    let top = areas.header.bottom();
    Rect::new(area.x, top, area.width, areas.footer.y.saturating_sub(top))
}

fn too_small(buf: &mut Buffer, area: Rect, app: &App) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let lines = vec![
        Line::styled(text::TOO_SMALL, app.theme.warn),
        Line::styled(
            text::too_small_detail(area.width, area.height),
            app.theme.dim,
        ),
    ];
    let top = area.height.saturating_sub(2) / 2;
    let inner = Rect::new(area.x, area.y + top, area.width, area.height - top);
    Paragraph::new(lines)
        .alignment(Alignment::Center)
        .render(inner, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_terminal_gives_the_table_most_rows() {
        let a = layout(Rect::new(0, 0, 80, 24), false);
        assert_eq!(a.header, Rect::new(0, 0, 80, 1));
        assert_eq!(a.table, Rect::new(0, 1, 80, 18));
        assert_eq!(a.findings, Rect::new(0, 19, 80, 1));
        assert_eq!(a.detail, Rect::new(0, 20, 80, 3));
        assert_eq!(a.detail_mode, DetailMode::Compact);
        assert_eq!(a.footer, Rect::new(0, 23, 80, 1));
    }

    #[test]
    fn expanded_detail_on_a_short_terminal() {
        let a = layout(Rect::new(0, 0, 80, 24), true);
        assert_eq!(a.table.height, 6);
        assert_eq!(a.findings, Rect::new(0, 7, 80, 1));
        assert_eq!(a.detail, Rect::new(0, 8, 80, 15));
        assert_eq!(a.detail_mode, DetailMode::Full);
    }

    #[test]
    fn tall_terminal_splits_table_and_charts() {
        let a = layout(Rect::new(0, 0, 160, 48), false);
        assert_eq!(a.table, Rect::new(0, 1, 160, 24));
        assert_eq!(a.findings, Rect::new(0, 25, 160, 1));
        assert_eq!(a.detail, Rect::new(0, 26, 160, 21));
        assert_eq!(a.detail_mode, DetailMode::Full);
        assert_eq!(a.footer.y, 47);
    }

    #[test]
    fn the_strip_grows_into_the_rows_the_table_does_not_need() {
        let area = Rect::new(0, 0, 80, 24);
        // 8 engines and the header need 9 of the table's 18 rows; 12 incidents get 1 + 9 lines.
        let a = layout_fitted(area, false, 9, 12);
        assert_eq!(a.table, Rect::new(0, 1, 80, 9));
        assert_eq!(a.findings, Rect::new(0, 10, 80, 10));
        assert_eq!(a.detail, layout(area, false).detail);
        // Three incidents: three lines.
        assert_eq!(layout_fitted(area, false, 9, 3).findings.height, 3);
        // A full table keeps its rows: one line.
        assert_eq!(layout_fitted(area, false, 40, 12).findings.height, 1);
        assert_eq!(layout_fitted(area, false, 9, 0), layout(area, false));
    }

    #[test]
    fn the_smallest_supported_terminal_still_has_every_part() {
        let a = layout(Rect::new(0, 0, text::MIN_WIDTH, text::MIN_HEIGHT), false);
        assert!(a.table.height >= TABLE_MIN_ROWS);
        assert_eq!(a.detail.height, COMPACT_DETAIL_ROWS);
        assert_eq!(a.detail.bottom(), a.footer.y);
    }
}

/// The text of every row of `buf`, rows joined by newlines (for tests that read a screen).
#[cfg(test)]
pub(crate) fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    (area.top()..area.bottom())
        .map(|y| {
            (area.left()..area.right())
                .map(|x| buf.cell((x, y)).map_or(" ", |c| c.symbol()))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod action_screen_tests;
#[cfg(test)]
mod first_scrape_tests;
#[cfg(test)]
mod wide_text_tests;
