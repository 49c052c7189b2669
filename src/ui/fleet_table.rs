//! The fleet table: one row per engine, columns dropped by priority on narrow terminals, only
//! the visible slice built.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{diag_text, findings, format, text};
use crate::app::{App, RowKey, RulesView, SortColumn, group_starts};
use crate::theme::Theme;
use kvtop_core::fleet::RowStatus;
use kvtop_core::fleet::{EngineState, ModelSummary, TargetState, Ts, summarize, summarize_with};
use kvtop_core::kube_model::PodInfo;
use kvtop_core::signals::{Signal, Unit};

/// KV usage from which the bar uses `bar_mid`.
pub(crate) const KV_MID: f64 = 0.75;
/// KV usage from which the bar uses `bar_high`.
pub(crate) const KV_HIGH: f64 = 0.9;
/// Cells of the KV bar.
const BAR_CELLS: usize = 5;
/// The name column's share of the flexible space when the model column is shown, percent.
const NAME_SHARE: u16 = 55;

/// A table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The worst firing finding's badge (`!!`, `!`, `·`).
    Badge,
    Name,
    Model,
    Status,
    /// Health and circuit breaker from the rules.
    Health,
    Kv,
    Running,
    Waiting,
    Ttft,
    Itl,
    GenTps,
    Prefix,
    Preempt,
    Age,
    /// GPU utilization (DCGM), the busiest of the engine's GPUs.
    GpuUtil,
    /// GPU framebuffer in use (DCGM), the fullest of the engine's GPUs.
    GpuMem,
    /// A catalog signal of a chosen column set (see `app::ColumnSets`).
    Signal(Signal),
}

#[derive(Clone, Copy)]
struct Spec {
    column: Column,
    header: &'static str,
    /// Width, or minimum width for the flexible Name and Model columns.
    width: u16,
    /// 0 is kept longest; the highest number is dropped first.
    priority: u8,
    right_aligned: bool,
    sort: SortColumn,
}

const fn spec(
    column: Column,
    header: &'static str,
    width: u16,
    priority: u8,
    right_aligned: bool,
    sort: SortColumn,
) -> Spec {
    Spec {
        column,
        header,
        width,
        priority,
        right_aligned,
        sort,
    }
}

/// Columns in display order. The badge is never dropped; the health column shows from about
/// 94 columns on, before the model, age, prefix, preemption and GPU columns.
const SPECS: [Spec; 16] = [
    spec(
        Column::Badge,
        diag_text::COL_BADGE,
        findings::BADGE_WIDTH,
        0,
        false,
        SortColumn::Name,
    ),
    spec(Column::Name, text::COL_NAME, 16, 0, false, SortColumn::Name),
    spec(
        Column::Model,
        text::COL_MODEL,
        12,
        9,
        false,
        SortColumn::Name,
    ),
    spec(
        Column::Status,
        text::COL_STATUS,
        14,
        1,
        false,
        SortColumn::Status,
    ),
    spec(
        Column::Health,
        diag_text::COL_HEALTH,
        findings::HEALTH_WIDTH,
        8,
        false,
        SortColumn::Status,
    ),
    spec(Column::Kv, text::COL_KV, 11, 2, false, SortColumn::Kv),
    spec(
        Column::Running,
        text::COL_RUNNING,
        5,
        5,
        true,
        SortColumn::Running,
    ),
    spec(
        Column::Waiting,
        text::COL_WAITING,
        5,
        4,
        true,
        SortColumn::Waiting,
    ),
    spec(
        Column::Ttft,
        text::COL_TTFT,
        7,
        3,
        true,
        SortColumn::TtftP95,
    ),
    spec(Column::Itl, text::COL_ITL, 6, 6, true, SortColumn::ItlP95),
    spec(
        Column::GenTps,
        text::COL_GEN_TPS,
        6,
        7,
        true,
        SortColumn::GenTps,
    ),
    spec(
        Column::Prefix,
        text::COL_PREFIX,
        5,
        11,
        true,
        SortColumn::PrefixHit,
    ),
    spec(
        Column::Preempt,
        text::COL_PREEMPT,
        6,
        12,
        true,
        SortColumn::Preemptions,
    ),
    spec(Column::Age, text::COL_AGE, 6, 10, true, SortColumn::Age),
    // GPU columns come last and go first: wide terminals only.
    spec(
        Column::GpuUtil,
        text::COL_GPU_UTIL,
        4,
        13,
        true,
        SortColumn::GpuUtil,
    ),
    spec(
        Column::GpuMem,
        text::COL_GPU_MEM,
        4,
        14,
        true,
        SortColumn::GpuMem,
    ),
];

fn spec_of(column: Column) -> Spec {
    match column {
        Column::Signal(signal) => signal_spec(signal, 0),
        _ => *SPECS
            .iter()
            .find(|s| s.column == column)
            .unwrap_or(&SPECS[1]),
    }
}

/// The standard columns a set of signal columns takes the place of.
const REPLACED: [Column; 7] = [
    Column::Running,
    Column::Waiting,
    Column::Ttft,
    Column::Itl,
    Column::GenTps,
    Column::Prefix,
    Column::Preempt,
];

/// The column of a catalog signal, kept as long as the standard column with the same
/// `priority`.
fn signal_spec(signal: Signal, priority: u8) -> Spec {
    let def = kvtop_core::signals::signal(signal);
    let header = def.column.unwrap_or(def.name);
    let width = u16::try_from(header.chars().count())
        .unwrap_or(u16::MAX)
        .max(SIGNAL_WIDTH);
    spec(
        Column::Signal(signal),
        header,
        width,
        priority,
        true,
        SortColumn::Name,
    )
}

/// Priorities of the signal columns in order: those of the standard value columns they
/// replace, most important first; columns past these go before the GPU columns.
const SIGNAL_PRIORITIES: [u8; 7] = [3, 4, 5, 6, 7, 11, 12];

/// Width of a signal column: the longest value any unit is written in (`1.25s`, `12.3k`).
const SIGNAL_WIDTH: u16 = 6;

/// The specs of the columns a set shows: the standard ones, or the signal columns in place of
/// the standard value columns (the first kept longest, as TTFT95 is).
fn specs(signals: Option<&[Signal]>) -> Vec<Spec> {
    let Some(signals) = signals else {
        return SPECS.to_vec();
    };
    let mut specs = Vec::with_capacity(SPECS.len() + signals.len());
    for s in SPECS.iter() {
        if s.column == Column::Running {
            specs.extend(signals.iter().enumerate().map(|(i, signal)| {
                let priority = SIGNAL_PRIORITIES
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| u8::try_from(i).map_or(u8::MAX, |i| i.saturating_add(8)));
                signal_spec(*signal, priority)
            }));
        }
        if !REPLACED.contains(&s.column) {
            specs.push(*s);
        }
    }
    specs
}

/// The standard columns shown at `width` and their widths (see [`columns_of`]).
pub fn columns(width: u16) -> Vec<(Column, u16)> {
    columns_of(width, None)
}

/// The columns shown at `width` and their widths, of the standard set or of a set of signal
/// columns: least important columns are dropped until the rest fit; Name (and Model) share
/// the space left.
pub fn columns_of(width: u16, signals: Option<&[Signal]>) -> Vec<(Column, u16)> {
    let all = specs(signals);
    let mut shown: Vec<&Spec> = all.iter().collect();
    let needed = |cols: &[&Spec]| -> u16 {
        let widths: u16 = cols.iter().map(|s| s.width).sum();
        widths + u16::try_from(cols.len().saturating_sub(1)).unwrap_or(u16::MAX)
    };
    while needed(&shown) > width {
        let drop = shown
            .iter()
            .enumerate()
            .filter(|(_, s)| s.priority > 0)
            .max_by_key(|(_, s)| s.priority)
            .map(|(i, _)| i);
        match drop {
            Some(i) => {
                shown.remove(i);
            }
            None => break,
        }
    }
    let spare = width.saturating_sub(needed(&shown));
    let has_model = shown.iter().any(|s| s.column == Column::Model);
    let name_extra = if has_model {
        spare * NAME_SHARE / 100
    } else {
        spare
    };
    shown
        .iter()
        .map(|s| {
            let w = match s.column {
                Column::Name => s.width + name_extra,
                Column::Model => s.width + spare - name_extra,
                _ => s.width,
            };
            (s.column, w)
        })
        .collect()
}

/// The level style of a KV usage and, for themes without colour, its text marker.
pub(crate) fn kv_level(theme: &Theme, usage: f64) -> (Style, &'static str) {
    let (style, mark) = if usage >= KV_HIGH {
        (theme.bar_high, text::LEVEL_HIGH_MARK)
    } else if usage >= KV_MID {
        (theme.bar_mid, text::LEVEL_MID_MARK)
    } else {
        (theme.bar_low, "")
    };
    (style, if theme.monochrome { mark } else { "" })
}

/// A horizontal bar of `cells` characters for a 0..1 value, in eighths of a cell.
pub fn bar(value: f64, cells: usize) -> String {
    const PARTIAL: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = (value.clamp(0.0, 1.0) * (cells * 8) as f64).round() as usize;
    let full = eighths / 8;
    let mut s = "█".repeat(full);
    if full < cells {
        s.push(PARTIAL.get(eighths % 8).copied().unwrap_or(' '));
        s.push_str(&" ".repeat(cells - full - 1));
    }
    s
}

/// Draw the table header and the visible slice of `rows` (indices into the view fleet's
/// engines, in display order) with the row at position `selected` highlighted and in view.
pub fn render(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    rows: &[usize],
    selected: Option<usize>,
    now: Ts,
) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = &app.theme;
    let cols = columns_of(area.width, app.columns.current().signals.as_deref());
    header_row(buf, Rect { height: 1, ..area }, app, &cols);

    let body = Rect {
        y: area.y + 1,
        height: area.height - 1,
        ..area
    };
    if body.height == 0 {
        return;
    }
    if rows.is_empty() {
        let explanation = app.kube.empty_explanation();
        let lines = if !app.filter.trim().is_empty() {
            vec![text::no_match(app.filter.trim())]
        } else if app.fleet.targets().is_empty() && !explanation.is_empty() {
            // Text from the API: control characters shown as `�`; long lines wrap, their
            // continuations indented.
            let room = usize::from(body.width).saturating_sub(3);
            explanation
                .iter()
                .flat_map(|line| {
                    let line = kvtop_core::format::printable(line);
                    super::diagnostics::wrap(&line, room)
                        .into_iter()
                        .enumerate()
                        .map(|(i, part)| if i == 0 { part } else { format!("  {part}") })
                        .collect::<Vec<_>>()
                })
                .collect()
        } else {
            vec![text::NO_ENGINES.to_string()]
        };
        for (y, message) in (body.y..body.y + body.height).zip(lines) {
            super::cells::put_line(
                buf,
                body.x,
                y,
                &Line::styled(format!(" {message}"), theme.dim),
                body.width,
            );
        }
        return;
    }

    let fleet = app.view_fleet();
    let view_now = app.view_now(now);
    let restart_mark = fleet.settings().restart_mark_secs;
    let height = usize::from(body.height);
    let lines = table_lines(app, rows);
    let selected_line = selected
        .and_then(|pos| lines.iter().position(|l| *l == TableLine::Engine(pos)))
        .unwrap_or(0);
    let offset = app.scroll_to(selected_line, lines.len(), height);
    let engines = fleet.engines();
    let rules = app.diag.view();
    for (line_no, line) in lines.iter().skip(offset).take(height).enumerate() {
        let y = body.y + u16::try_from(line_no).unwrap_or(u16::MAX);
        let rect = Rect::new(body.x, y, body.width, 1);
        let (pos, index) = match *line {
            TableLine::Engine(pos) => match rows.get(pos) {
                Some(&index) => (pos, index),
                None => continue,
            },
            TableLine::Group { start, end } => {
                let members = rows
                    .get(start..end)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|&i| engines.get(i));
                let model = rows
                    .get(start)
                    .and_then(|&i| engines.get(i))
                    .map(|e| e.id.model.as_str())
                    .unwrap_or_default();
                // The cycle's merged quantiles, when the group holds all of the model's
                // engines (no filter hides some): merging the histograms again on every
                // frame would repeat the cycle's work.
                let whole_model =
                    end - start == engines.iter().filter(|e| e.id.model == model).count();
                let summary = match rules.model_quantiles(model) {
                    Some(quantiles) if whole_model => summarize_with(members, *quantiles),
                    _ => summarize(
                        members,
                        fleet.window_secs(),
                        fleet.source_model_signals(model),
                    ),
                };
                let line = group_line(model, &summary, &cols, theme);
                super::cells::put_line(buf, rect.x, rect.y, &line, rect.width);
                continue;
            }
        };
        let Some(engine) = engines.get(index) else {
            continue;
        };
        let is_selected = selected == Some(pos);
        if is_selected {
            super::cells::fill_style(buf, rect, theme.selected);
        }
        let target = fleet.target(engine.target);
        let pod = fleet.pod_info(engine.target);
        let status = RowStatus::of(engine, view_now, restart_mark);
        let line = row_line(engine, target, pod, status, &cols, theme, rules, view_now);
        super::cells::put_line(buf, rect.x, rect.y, &line, rect.width);
    }
}

/// A line of the table body: an engine (its position in the rows) or, when grouped by model,
/// the summary line heading the rows `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableLine {
    Engine(usize),
    Group { start: usize, end: usize },
}

/// The body's lines: the rows, each model group headed by its summary when grouped.
fn table_lines(app: &App, rows: &[usize]) -> Vec<TableLine> {
    if !app.group_by_model {
        return (0..rows.len()).map(TableLine::Engine).collect();
    }
    let starts = group_starts(app.view_fleet(), rows);
    let mut lines = Vec::with_capacity(rows.len() + starts.len());
    for (n, &(start, _)) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(rows.len(), |&(next, _)| next);
        lines.push(TableLine::Group { start, end });
        lines.extend((start..end).map(TableLine::Engine));
    }
    lines
}

/// Lines the model groups' summaries add to the table (0 when not grouped).
pub(crate) fn group_lines(app: &App, rows: &[usize]) -> usize {
    if app.group_by_model {
        group_starts(app.view_fleet(), rows).len()
    } else {
        0
    }
}

/// A model group's summary line: the model, engines up of all, mean KV usage, requests
/// running and waiting, generated tokens per second, and the latency quantiles of the merged
/// histograms.
fn group_line(
    model: &str,
    summary: &ModelSummary,
    cols: &[(Column, u16)],
    theme: &Theme,
) -> Line<'static> {
    let style = theme.title;
    let mut spans = Vec::with_capacity(cols.len() * 2);
    let up = text::group_up(summary.up, summary.engines);
    let mut iter = cols.iter().enumerate().peekable();
    while let Some((i, &(column, width))) = iter.next() {
        let width = usize::from(width);
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        let cell = match column {
            Column::Name => {
                let name = if model.is_empty() {
                    text::GROUP_NO_MODEL
                } else {
                    format::short_model(model)
                };
                // The model's name runs on over the model and status columns, the count of
                // engines up closing them.
                let mut room = width;
                while let Some((_, &(next, w))) =
                    iter.next_if(|(_, (c, _))| matches!(c, Column::Model | Column::Status))
                {
                    let _ = next;
                    room += 1 + usize::from(w);
                }
                let name_room = room.saturating_sub(up.chars().count() + 1);
                let name = format::truncate(&format!("{}{name}", text::GROUP_MARK), name_room);
                format!("{} {up}", format::left(&name, name_room))
            }
            Column::Status => format::left(&up, width),
            Column::Kv => {
                let (bar_span, pct_span) =
                    kv_cells(summary.kv_usage, theme, style, RowStatus::Up, width);
                spans.push(bar_span);
                spans.push(pct_span);
                continue;
            }
            Column::Running => format::right(&format::count(summary.running), width),
            Column::Waiting => format::right(&format::count(summary.waiting), width),
            Column::Ttft => format::right(&format::latency(summary.ttft_p95), width),
            Column::Itl => format::right(&format::latency(summary.quantiles.itl_p95), width),
            Column::GenTps => format::right(&format::si(summary.gen_tps), width),
            // Latency quantiles over the model's merged histograms; the other signals have no
            // model-wide value here.
            Column::Signal(signal)
                if matches!(
                    kvtop_core::signals::signal(signal).derivation,
                    kvtop_core::signals::Derivation::Quantile(..)
                ) =>
            {
                format::right(&signal_value(signal, &summary.quantiles), width)
            }
            _ => " ".repeat(width),
        };
        spans.push(Span::styled(cell, style));
    }
    Line::from(spans)
}

fn header_row(buf: &mut Buffer, area: Rect, app: &App, cols: &[(Column, u16)]) {
    let theme = &app.theme;
    super::cells::fill_style(buf, area, theme.table_header);
    let mut spans = Vec::with_capacity(cols.len() * 2);
    for (i, (column, width)) in cols.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        let spec = spec_of(*column);
        let sorted = spec.sort == app.sort
            && !matches!(
                column,
                Column::Model | Column::Badge | Column::Health | Column::Signal(_)
            );
        let label = if sorted {
            let arrow = if app.sort_descending {
                text::SORT_DOWN
            } else {
                text::SORT_UP
            };
            format!("{}{arrow}", spec.header)
        } else {
            spec.header.to_string()
        };
        let cell = if spec.right_aligned {
            format::right(&label, usize::from(*width))
        } else {
            format::left(&label, usize::from(*width))
        };
        spans.push(Span::raw(cell));
    }
    super::cells::put_line(buf, area.x, area.y, &Line::from(spans), area.width);
}

/// One engine row as a line of padded cells.
#[allow(clippy::too_many_arguments)]
fn row_line(
    engine: &EngineState,
    target: Option<&TargetState>,
    pod: Option<&PodInfo>,
    status: RowStatus,
    cols: &[(Column, u16)],
    theme: &Theme,
    rules: &RulesView,
    now: Ts,
) -> Line<'static> {
    let key = RowKey::of(engine);
    let mut spans = Vec::with_capacity(cols.len() * 2);
    let values_style = if status == RowStatus::Stale {
        theme.dim
    } else {
        theme.base
    };
    let mut iter = cols.iter().peekable();
    let mut first = true;
    while let Some(&(column, width)) = iter.next() {
        let width = usize::from(width);
        if !first {
            spans.push(Span::raw(" "));
        }
        first = false;
        let is_value = !matches!(
            column,
            Column::Badge | Column::Name | Column::Model | Column::Status | Column::Health
        );
        if matches!(status, RowStatus::Down | RowStatus::Pending) && is_value {
            // The reason takes the place of every value column (not scraped yet: `no data`,
            // after the pod's own state when it has one).
            let rest: usize = width
                + iter
                    .by_ref()
                    .map(|&(_, w)| usize::from(w) + 1)
                    .sum::<usize>();
            let reason = target
                .and_then(|t| t.last_error.as_ref())
                .map_or_else(|| text::DOWN_NO_ERROR.to_string(), |(_, e)| e.short());
            // A pod's own state explains a down engine best (CrashLoop↻4 · refused).
            let reason = match pod.and_then(|p| super::pod::marker(p, theme)) {
                Some((marker, _)) => format!("{marker} · {reason}"),
                None => reason,
            };
            let style = if status == RowStatus::Down {
                theme.down
            } else {
                theme.dim
            };
            spans.push(Span::styled(format::left(&reason, rest), style));
            break;
        }
        let s = &engine.signals;
        let (cell, style): (String, Style) = match column {
            Column::Badge => {
                spans.push(findings::badge_cell(theme, rules.marks(&key), width));
                continue;
            }
            Column::Health => {
                spans.push(findings::health_cell(theme, rules.health(&key), width));
                continue;
            }
            Column::Name => (format::left_middle(&engine.name, width), theme.base),
            Column::Model => (
                format::left(format::short_model(&engine.id.model), width),
                values_style,
            ),
            Column::Status => status_cell(engine, target, pod, status, theme, now, width),
            Column::Kv => {
                let (bar_span, pct_span) = kv_cells(s.kv_usage, theme, values_style, status, width);
                spans.push(bar_span);
                spans.push(pct_span);
                continue;
            }
            Column::Running => (
                format::right(&format::count(s.running), width),
                values_style,
            ),
            Column::Waiting => (
                format::right(&format::count(s.waiting), width),
                values_style,
            ),
            Column::Ttft => (
                format::right(&format::latency(s.ttft_p95), width),
                values_style,
            ),
            Column::Itl => (
                format::right(&format::latency(s.itl_p95), width),
                values_style,
            ),
            Column::GenTps => (format::right(&format::si(s.gen_tps), width), values_style),
            Column::Prefix => (
                format::right(&format::percent(s.prefix_hit), width),
                values_style,
            ),
            Column::Preempt => (
                format::right(&format::per_minute(s.preemptions_per_s), width),
                values_style,
            ),
            Column::Age => (
                format::right(
                    &engine
                        .last_ok
                        .map_or_else(|| format::UNKNOWN.to_string(), |t| format::age(now - t)),
                    width,
                ),
                values_style,
            ),
            Column::GpuUtil => (
                format::right(&format::percent(s.gpu_util), width),
                values_style,
            ),
            Column::GpuMem => (
                format::right(&format::percent(s.gpu_mem), width),
                values_style,
            ),
            Column::Signal(signal) => {
                (format::right(&signal_value(signal, s), width), values_style)
            }
        };
        spans.push(Span::styled(cell, style));
    }
    Line::from(spans)
}

/// A signal's value as its unit is written (`–` while unknown).
fn signal_value(signal: Signal, signals: &kvtop_core::fleet::Signals) -> String {
    let def = kvtop_core::signals::signal(signal);
    let value = (def.get)(signals);
    match def.unit {
        Unit::Seconds => format::latency(value),
        Unit::Ratio => format::percent(value),
        Unit::Count => format::count(value),
        _ => format::si(value),
    }
}

fn status_cell(
    engine: &EngineState,
    target: Option<&TargetState>,
    pod: Option<&PodInfo>,
    status: RowStatus,
    theme: &Theme,
    now: Ts,
    width: usize,
) -> (String, Style) {
    let word = status.word();
    // A Kubernetes pod's own state (CrashLoop, OOMKilled, NotReady, restarts) says more than
    // the scrape's.
    // (A down row tells it in its reason instead.)
    if let Some((marker, marker_style)) = pod.and_then(|p| super::pod::marker(p, theme)) {
        let style = match status {
            RowStatus::Up | RowStatus::Restarted => Some(marker_style),
            RowStatus::Stale => Some(theme.stale),
            RowStatus::Down | RowStatus::Pending => None,
        };
        if let Some(style) = style {
            return (format::left(&format!("{word} {marker}"), width), style);
        }
    }
    let (label, style) = match status {
        RowStatus::Up => (word.to_string(), theme.ok),
        RowStatus::Restarted => (word.to_string(), theme.warn),
        // A stale row says why while its target keeps failing (the age is in the AGE column
        // and the detail pane); otherwise how old its values are.
        RowStatus::Stale => match (
            target
                .filter(|t| t.failing)
                .and_then(|t| t.last_error.as_ref()),
            engine.last_ok,
        ) {
            (Some((_, err)), _) => (format!("{word} {}", err.short()), theme.stale),
            (None, Some(t)) => (format!("{word} {}", format::age(now - t)), theme.stale),
            (None, None) => (word.to_string(), theme.stale),
        },
        RowStatus::Down => (word.to_string(), theme.down),
        RowStatus::Pending => (word.to_string(), theme.dim),
    };
    (format::left(&label, width), style)
}

/// The bar and the percentage (with the level mark of colourless themes), e.g. `███▌ ` and
/// `  71%`, together `width` columns wide.
fn kv_cells(
    usage: Option<f64>,
    theme: &Theme,
    values_style: Style,
    status: RowStatus,
    width: usize,
) -> (Span<'static>, Span<'static>) {
    let pct_width = width.saturating_sub(BAR_CELLS);
    match usage.filter(|u| u.is_finite()) {
        None => (
            Span::styled(" ".repeat(BAR_CELLS), values_style),
            Span::styled(
                format::left(&format!("{:>5}", format::UNKNOWN), pct_width),
                values_style,
            ),
        ),
        Some(u) => {
            let (level, mark) = kv_level(theme, u);
            let stale = status == RowStatus::Stale;
            let bar_style = if stale { theme.dim } else { level };
            let pct_style = if mark.is_empty() || stale {
                values_style
            } else {
                level
            };
            let pct = format!("{:>5}{mark}", format::percent(Some(u)));
            (
                Span::styled(bar(u, BAR_CELLS), bar_style),
                Span::styled(format::left(&pct, pct_width), pct_style),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(cols: &[(Column, u16)]) -> Vec<Column> {
        cols.iter().map(|(c, _)| *c).collect()
    }

    #[test]
    fn eighty_columns_keep_the_core_set() {
        let cols = columns(80);
        assert_eq!(
            names(&cols),
            [
                Column::Badge,
                Column::Name,
                Column::Status,
                Column::Kv,
                Column::Running,
                Column::Waiting,
                Column::Ttft,
                Column::Itl,
                Column::GenTps
            ]
        );
        let used: u16 = cols.iter().map(|(_, w)| w + 1).sum::<u16>() - 1;
        assert_eq!(used, 80);
    }

    #[test]
    fn wide_terminals_show_everything_and_share_the_spare_room() {
        let cols = columns(160);
        assert_eq!(cols.len(), SPECS.len());
        let used: u16 = cols.iter().map(|(_, w)| w + 1).sum::<u16>() - 1;
        assert_eq!(used, 160);
        let name = cols
            .iter()
            .find(|(c, _)| *c == Column::Name)
            .map(|(_, w)| *w);
        let model = cols
            .iter()
            .find(|(c, _)| *c == Column::Model)
            .map(|(_, w)| *w);
        assert!(name > model, "{name:?} {model:?}");
    }

    #[test]
    fn very_narrow_keeps_the_badge_and_the_name() {
        let cols = columns(10);
        assert_eq!(names(&cols), [Column::Badge, Column::Name]);
    }

    #[test]
    fn health_shows_from_94_columns_before_model_and_age() {
        let has = |width: u16, column: Column| names(&columns(width)).contains(&column);
        assert!(!has(93, Column::Health));
        assert!(has(94, Column::Health));
        assert!(has(100, Column::Health));
        assert!(!has(106, Column::Model));
        assert!(has(107, Column::Model));
        assert!(has(60, Column::Badge));
    }

    #[test]
    fn a_set_of_signal_columns_replaces_the_value_columns_and_fits_80_columns() {
        let latency = [
            Signal::TtftP95,
            Signal::TpotP95,
            Signal::PrefillP95,
            Signal::DecodeP95,
            Signal::E2eP95,
            Signal::QueueP95,
        ];
        let cols = columns_of(80, Some(&latency));
        let used: u16 = cols.iter().map(|(_, w)| w + 1).sum::<u16>() - 1;
        assert_eq!(used, 80);
        // Identity, status and KV stay; the first signals are kept, in order.
        assert_eq!(
            names(&cols)[..4],
            [Column::Badge, Column::Name, Column::Status, Column::Kv]
        );
        let shown: Vec<Column> = names(&cols)[4..].to_vec();
        assert!(shown.len() >= 4, "{shown:?}");
        let expected: Vec<Column> = latency
            .iter()
            .take(shown.len())
            .map(|s| Column::Signal(*s))
            .collect();
        assert_eq!(shown, expected);
        assert!(!names(&cols).contains(&Column::Running));
        // Wide: every signal column, and the columns around the value columns.
        let wide = names(&columns_of(200, Some(&latency)));
        for signal in latency {
            assert!(wide.contains(&Column::Signal(signal)), "{signal:?}");
        }
        for kept in [Column::Model, Column::Age, Column::GpuMem, Column::Health] {
            assert!(wide.contains(&kept), "{kept:?}");
        }
        assert_eq!(spec_of(Column::Signal(Signal::TpotP95)).header, "TPOT95");
        // A signal without a header of its own is headed by its name.
        assert_eq!(spec_of(Column::Signal(Signal::TtftP99)).header, "ttft_p99");
    }

    #[test]
    fn signal_cells_are_written_in_their_unit_and_unknown_is_a_dash() {
        let signals = kvtop_core::fleet::Signals {
            tpot_p95: Some(0.031),
            http_5xx_ratio: Some(0.02),
            http_per_s: Some(12.34),
            ..Default::default()
        };
        assert_eq!(signal_value(Signal::TpotP95, &signals), "31ms");
        assert_eq!(signal_value(Signal::Http5xxRatio, &signals), "2%");
        assert_eq!(signal_value(Signal::HttpPerS, &signals), "12");
        assert_eq!(signal_value(Signal::DecodeP95, &signals), "–");
    }

    #[test]
    fn bars_fill_in_eighths() {
        assert_eq!(bar(0.0, 5), "     ");
        assert_eq!(bar(1.0, 5), "█████");
        assert_eq!(bar(0.5, 5), "██▌  ");
        assert_eq!(bar(0.95, 5), "████▊");
        assert_eq!(bar(7.0, 2), "██");
        assert_eq!(bar(f64::NAN, 2).chars().count(), 2);
    }

    #[test]
    fn levels_mark_text_only_without_colour() {
        let colour = Theme::fallback();
        let mono = Theme::fallback_mono();
        assert_eq!(kv_level(&colour, 0.95), (colour.bar_high, ""));
        assert_eq!(kv_level(&colour, 0.8), (colour.bar_mid, ""));
        assert_eq!(kv_level(&colour, 0.5), (colour.bar_low, ""));
        assert_eq!(kv_level(&mono, 0.95).1, "!");
        assert_eq!(kv_level(&mono, 0.75).1, "+");
        assert_eq!(kv_level(&mono, 0.74).1, "");
    }
}
