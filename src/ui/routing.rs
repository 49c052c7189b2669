//! The routing explainer (`r`): for each model group, how the seed router's fit score and the
//! Gateway API Inference Extension scorer rank the engines for prompts of 512, 2048 and 8192
//! tokens, and which engine each would pick (see `rules::routing`).

use std::collections::HashMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::diagnostics::wrap;
use super::{diag_text as text, format};
use crate::app::App;
use crate::diagnose::{
    TargetLogs,
    inputs::{FleetParts, engine_inputs},
};
use crate::theme::Theme;
use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{EngineState, TargetId};
use kvtop_core::rules::routing::{EngineRouting, GroupRouting};
use kvtop_core::rules::{Health, PROMPT_SIZES, explain_routing};

const HEALTH_WIDTH: usize = 8;
const KV_WIDTH: usize = 5;
const WAIT_WIDTH: usize = 5;
/// A score or skip reason (`0.95`, `no room`), then a space and the pick mark: a cell is
/// `SCORE_WIDTH + 2` columns.
const SCORE_WIDTH: usize = 7;
/// An Inference Extension part (queue, kv, prefix) on wide terminals.
const PART_WIDTH: usize = 6;
/// Narrowest and widest engine column.
const ENGINE_MIN: usize = 12;
const ENGINE_MAX: usize = 40;
/// From this width the Inference Extension's parts are shown too.
const WIDE: u16 = 120;

/// Draw the view into the body area. Only the lines in view are built: with a thousand
/// engines the view is long.
pub fn render(buf: &mut Buffer, area: Rect, app: &App) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let fleet = app.view_fleet();
    // The explainer reads no GPU signal, no model quantile and no log line.
    let no_logs = TargetLogs::default();
    let no_parts = FleetParts::default();
    // Engines the rules judge stuck are left out by both routers.
    let view = app.diag.view();
    let inputs: Vec<_> = engine_inputs(fleet, &no_parts, &no_logs)
        .into_iter()
        .map(|input| {
            let key = crate::app::RowKey {
                target: input.target,
                id: input.id.clone(),
            };
            let stuck = view.health(&key).map(|h| h.health) == Some(Health::Stuck);
            input.with_stalled(stuck)
        })
        .collect();
    let groups = explain_routing(&inputs, &PROMPT_SIZES);
    let legend = wrap(
        text::ROUTING_LEGEND,
        usize::from(area.width).saturating_sub(2),
    );
    let rows = layout(&legend, &groups);
    let height = usize::from(area.height);
    app.diag.set_routing_extent(rows.len(), height);
    let offset = app
        .diag
        .routing_offset
        .min(rows.len().saturating_sub(height));
    let visible = rows.iter().skip(offset).take(height);
    let states: HashMap<(TargetId, &EngineId), &EngineState> = fleet
        .engines()
        .iter()
        .map(|e| ((e.target, &e.id), e))
        .collect();
    let (engine_w, wide) = columns(area.width);
    let theme = &app.theme;
    for (row, spec) in visible.enumerate() {
        let line = match *spec {
            Row::Legend(i) => legend
                .get(i)
                .map(|part| Line::styled(format!(" {part}"), theme.dim)),
            Row::Blank => Some(Line::raw("")),
            Row::Empty => Some(Line::styled(format!(" {}", text::ROUTING_EMPTY), theme.dim)),
            Row::Title(g) => groups.get(g).map(|group| {
                Line::styled(
                    format!(" {}", text::group_title(&group.model, group.engines.len())),
                    theme.title,
                )
            }),
            Row::Header(g) => groups
                .get(g)
                .map(|group| header(theme, group, engine_w, wide)),
            Row::Engine(g, i) => groups.get(g).and_then(|group| {
                let engine = group.engines.get(i)?;
                let state = states.get(&(engine.target, &engine.id)).copied();
                Some(row_line(app, group, i, engine, state, engine_w, wide))
            }),
            Row::Picks(g) => groups.get(g).map(|group| picks(theme, group)),
        };
        if let Some(line) = line {
            let y = area.y + u16::try_from(row).unwrap_or(u16::MAX);
            super::cells::put_line(buf, area.x, y, &line, area.width);
        }
    }
}

/// One line of the view.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Row {
    /// Line `i` of the wrapped legend.
    Legend(usize),
    Blank,
    /// No group to show.
    Empty,
    /// A group's title, header, engine `i`, and picks.
    Title(usize),
    Header(usize),
    Engine(usize, usize),
    Picks(usize),
}

/// The lines of the view, in order.
fn layout(legend: &[String], groups: &[GroupRouting]) -> Vec<Row> {
    let mut rows: Vec<Row> = (0..legend.len()).map(Row::Legend).collect();
    if groups.is_empty() {
        rows.extend([Row::Blank, Row::Empty]);
    }
    for (g, group) in groups.iter().enumerate() {
        rows.extend([Row::Blank, Row::Title(g), Row::Header(g)]);
        rows.extend((0..group.engines.len()).map(|i| Row::Engine(g, i)));
        rows.push(Row::Picks(g));
    }
    rows
}

/// Widths of the columns: (engine, show the Inference Extension parts).
fn columns(width: u16) -> (usize, bool) {
    let wide = width >= WIDE;
    let parts = if wide { 3 * (PART_WIDTH + 2) } else { 0 };
    // A leading space, three two-space gaps, the fixed columns, one score cell per prompt
    // size and one for the Inference Extension.
    let fixed = 1
        + 2 * 3
        + HEALTH_WIDTH
        + KV_WIDTH
        + WAIT_WIDTH
        + (PROMPT_SIZES.len() + 1) * (SCORE_WIDTH + 3)
        + parts;
    let engine = usize::from(width)
        .saturating_sub(fixed)
        .clamp(ENGINE_MIN, ENGINE_MAX);
    (engine, wide)
}

fn header(theme: &Theme, group: &GroupRouting, engine_w: usize, wide: bool) -> Line<'static> {
    let cells = [
        format::left(text::R_ENGINE, engine_w),
        format::left(text::R_HEALTH, HEALTH_WIDTH),
        format::right(text::R_KV, KV_WIDTH),
        format::right(text::R_WAIT, WAIT_WIDTH),
    ];
    let mut line = format!(" {}", cells.join("  "));
    for tokens in &group.prompts {
        let header = text::prompt_header(*tokens);
        line.push_str(&format!(" {}  ", format::right(&header, SCORE_WIDTH)));
    }
    line.push_str(&format!(" {}  ", format::right(text::R_IE, SCORE_WIDTH)));
    if wide {
        for part in [text::R_IE_QUEUE, text::R_IE_KV, text::R_IE_PREFIX] {
            line.push_str(&format!("  {}", format::right(part, PART_WIDTH)));
        }
    }
    Line::styled(line, theme.table_header)
}

/// A score cell, ` 0.95 ◀` (picked), ` 0.95  ` or ` no room  ` (why the router skips the
/// engine), `SCORE_WIDTH + 3` columns with its leading space.
fn score_cell(theme: &Theme, score: Result<f64, &'static str>, picked: bool) -> Span<'static> {
    match score {
        Ok(v) => {
            let mark = if picked { text::PICK_MARK } else { " " };
            let style = if picked {
                theme.ok.add_modifier(ratatui::style::Modifier::BOLD)
            } else {
                theme.base
            };
            Span::styled(
                format!(" {} {mark}", format::right(&text::score(v), SCORE_WIDTH)),
                style,
            )
        }
        Err(why) => Span::styled(format!(" {}  ", format::right(why, SCORE_WIDTH)), theme.dim),
    }
}

fn row_line(
    app: &App,
    group: &GroupRouting,
    index: usize,
    engine: &EngineRouting,
    state: Option<&EngineState>,
    engine_w: usize,
    wide: bool,
) -> Line<'static> {
    let theme = &app.theme;
    let health_style = match engine.health {
        Health::Healthy => theme.ok,
        Health::Degraded => theme.warn,
        Health::Stuck | Health::Down => theme.down,
        Health::Pending => theme.dim,
    };
    let signals = state.map(|s| &s.signals);
    let gap = || Span::raw("  ");
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(format::left_middle(&engine.name, engine_w), theme.base),
        gap(),
        Span::styled(
            format::left(engine.health.name(), HEALTH_WIDTH),
            health_style,
        ),
        gap(),
        Span::styled(
            format::right(&format::percent(signals.and_then(|s| s.kv_usage)), KV_WIDTH),
            theme.base,
        ),
        gap(),
        Span::styled(
            format::right(&format::count(signals.and_then(|s| s.waiting)), WAIT_WIDTH),
            theme.base,
        ),
    ];
    for (k, seed) in engine.seed.iter().enumerate() {
        let picked = group.seed_picks.get(k).copied().flatten() == Some(index);
        let score = seed.map(|s| s.score).map_err(text::skip);
        spans.push(score_cell(theme, score, picked));
    }
    let ie_picked = group.gie_pick == Some(index);
    spans.push(score_cell(
        theme,
        engine.gie.map(|g| g.total).map_err(text::skip),
        ie_picked,
    ));
    if wide {
        let parts: [Option<f64>; 3] = match engine.gie {
            Ok(g) => [Some(g.queue), Some(g.kv), g.prefix],
            Err(_) => [None, None, None],
        };
        for part in parts {
            spans.push(gap());
            let cell = part.map_or_else(|| format::UNKNOWN.to_string(), text::score);
            spans.push(Span::styled(format::right(&cell, PART_WIDTH), theme.dim));
        }
    }
    Line::from(spans)
}

fn picks(theme: &Theme, group: &GroupRouting) -> Line<'static> {
    let name = |pick: Option<usize>| {
        text::pick_name(
            pick.and_then(|i| group.engines.get(i))
                .map(|e| e.name.as_str()),
        )
    };
    let seed: Vec<(u32, String)> = group
        .prompts
        .iter()
        .zip(&group.seed_picks)
        .map(|(tokens, pick)| (*tokens, name(*pick)))
        .collect();
    let style: Style = theme.base;
    Line::styled(
        format!(" {}", text::picks_line(&seed, &name(group.gie_pick))),
        style,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_eighty_and_grow_the_engine_column() {
        let (engine, wide) = columns(80);
        assert!(!wide);
        assert!(engine >= ENGINE_MIN);
        // " name  health  kv  wait" then four score cells of a space, 7 columns, a space and
        // the pick mark.
        let used = 1 + engine + 2 + HEALTH_WIDTH + 2 + KV_WIDTH + 2 + WAIT_WIDTH + 4 * 10;
        assert_eq!(used, 80);
        let (engine_wide, wide) = columns(160);
        assert!(wide);
        assert!(engine_wide > engine);
    }
}
