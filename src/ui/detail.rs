//! The detail pane of the selected engine: charts over the chosen time range and key facts
//! (full mode), or one line of sparklines and one of facts (compact mode).

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Widget};

use super::fleet_table::kv_level;
use super::spark::sparkline;
use super::{findings, format, gpu, text};
use crate::app::App;
use crate::theme::Theme;
use kvtop_core::engine::EngineFlavor;
use kvtop_core::fleet::{DerivedSourceState, EngineState, Series, Signals, TargetState, Ts};

/// Width of the facts column in full mode on wide and on medium panes.
const FACTS_WIDE: u16 = 40;
const FACTS_MEDIUM: u16 = 30;
/// Fewest rows for one chart (two borders, two rows of plot).
const CHART_MIN_ROWS: u16 = 4;
/// Width of the label column of the facts.
const FACT_LABEL: usize = 11;
/// Rows kept above the GPU section for facts and charts; with fewer, the section shrinks to
/// its one-line summary, then goes.
const ROWS_ABOVE_GPUS: u16 = 8;
/// Sparkline cells in compact mode, at most and at least.
const SPARK_MAX: usize = 20;
const SPARK_MIN: usize = 8;
/// Width every compact value is padded to, so the line does not shift as values change.
const SPARK_VALUE: usize = 5;
/// Width of the pod panel beside the charts, and the charts' minimum width beside it.
const POD_WIDE: u16 = 56;
const CHARTS_BESIDE_POD: u16 = 48;

/// How a value of a chart is written.
type Fmt = fn(Option<f64>) -> String;

/// One chart of the full detail pane.
struct ChartSpec {
    title: &'static str,
    /// Series, their value label in the title (empty for single-series charts) and style.
    series: &'static [(Series, &'static str, SeriesStyle)],
    /// Fixed top of the y axis (KV usage is 0..1); otherwise from the data.
    ceiling: Option<f64>,
    fmt: Fmt,
}

/// Which theme slot a series is drawn with.
#[derive(Clone, Copy)]
enum SeriesStyle {
    Slot(usize),
    /// The KV level of the current value.
    KvLevel,
}

/// Charts in order of importance: the first ones are kept when room runs out.
const CHARTS: [ChartSpec; 5] = [
    ChartSpec {
        title: text::CHART_KV,
        series: &[(Series::KvUsage, "", SeriesStyle::KvLevel)],
        ceiling: Some(1.0),
        fmt: format::percent,
    },
    ChartSpec {
        title: text::CHART_TTFT,
        series: &[
            (Series::TtftP50, text::LABEL_P50, SeriesStyle::Slot(0)),
            (Series::TtftP95, text::LABEL_P95, SeriesStyle::Slot(1)),
            (Series::TtftP99, text::LABEL_P99, SeriesStyle::Slot(2)),
        ],
        ceiling: None,
        fmt: format::latency,
    },
    ChartSpec {
        title: text::CHART_QUEUE,
        series: &[
            (Series::Running, text::LABEL_RUNNING, SeriesStyle::Slot(0)),
            (Series::Waiting, text::LABEL_WAITING, SeriesStyle::Slot(1)),
        ],
        ceiling: None,
        fmt: format::count,
    },
    ChartSpec {
        title: text::CHART_GEN_TPS,
        series: &[(Series::GenTps, "", SeriesStyle::Slot(3))],
        ceiling: None,
        fmt: format::si,
    },
    ChartSpec {
        title: text::CHART_ITL,
        series: &[(Series::ItlP95, "", SeriesStyle::Slot(1))],
        ceiling: None,
        fmt: format::latency,
    },
];

/// One sparkline of the compact detail.
struct SparkSpec {
    label: &'static str,
    series: Series,
    ceiling: Option<f64>,
    fmt: Fmt,
}

const SPARKS: [SparkSpec; 5] = [
    SparkSpec {
        label: text::SPARK_KV,
        series: Series::KvUsage,
        ceiling: Some(1.0),
        fmt: format::percent,
    },
    SparkSpec {
        label: text::SPARK_TTFT,
        series: Series::TtftP95,
        ceiling: None,
        fmt: format::latency,
    },
    SparkSpec {
        label: text::SPARK_WAITING,
        series: Series::Waiting,
        ceiling: None,
        fmt: format::count,
    },
    SparkSpec {
        label: text::SPARK_GEN_TPS,
        series: Series::GenTps,
        ceiling: None,
        fmt: format::si,
    },
    SparkSpec {
        label: text::SPARK_ITL,
        series: Series::ItlP95,
        ceiling: None,
        fmt: format::latency,
    },
];

fn series_style(theme: &Theme, style: SeriesStyle, signals: &Signals) -> Style {
    match style {
        SeriesStyle::Slot(i) => theme.series.get(i).copied().unwrap_or(theme.base),
        SeriesStyle::KvLevel => signals
            .kv_usage
            .filter(|u| u.is_finite())
            .map_or(theme.bar_low, |u| kv_level(theme, u).0),
    }
}

/// The pane's title: `name · model · vLLM V1 #0 · last 5m`.
fn title<'a>(engine: &EngineState, app: &App) -> Line<'a> {
    let theme = &app.theme;
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(engine.name.clone(), theme.title),
    ];
    if !engine.id.model.is_empty() {
        spans.push(Span::styled(format!(" · {}", engine.id.model), theme.base));
    }
    if let Some(sample) = &engine.latest {
        spans.push(Span::styled(
            format!(" · {}", engine_label(sample.flavor, &engine.id.engine)),
            theme.dim,
        ));
    }
    spans.push(Span::styled(
        format!(" · {} ", text::range(app.range.secs())),
        theme.dim,
    ));
    Line::from(spans)
}

/// `vLLM V1 #0`, or the flavor alone when the exporter has no engine label.
fn engine_label(flavor: EngineFlavor, engine: &str) -> String {
    let flavor = match flavor {
        EngineFlavor::VllmV0 => text::FLAVOR_V0,
        EngineFlavor::VllmV1 => text::FLAVOR_V1,
        EngineFlavor::SGLang => text::FLAVOR_SGLANG,
        EngineFlavor::Unknown => text::FLAVOR_UNKNOWN,
    };
    if engine.is_empty() {
        flavor.to_string()
    } else {
        format!("{flavor} #{engine}")
    }
}

/// The pane's top border with the engine's title; returns the area below it. A block sets its
/// style on every cell it is given, and this one's style is empty: drawn on its one row, it
/// leaves the same cells for far less work.
fn pane_block(buf: &mut Buffer, area: Rect, app: &App, engine: Option<&EngineState>) -> Rect {
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(app.theme.border);
    let block = match engine {
        Some(e) => block.title(title(e, app)),
        None => block,
    };
    let inner = block.inner(area);
    block.render(
        Rect {
            height: area.height.min(1),
            ..area
        },
        buf,
    );
    inner
}

fn no_selection(buf: &mut Buffer, area: Rect, theme: &Theme) {
    Paragraph::new(Line::styled(text::NO_SELECTION, theme.dim))
        .alignment(Alignment::Center)
        .render(area, buf);
}

/// Full mode: facts on the left, charts in a grid on the right.
pub(crate) fn render_full(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    engine: Option<&EngineState>,
    now: Ts,
) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let inner = pane_block(buf, area, app, engine);
    let Some(engine) = engine else {
        no_selection(buf, inner, &app.theme);
        return;
    };
    let now = app.view_now(now);
    let (inner, gpu_area) = split_gpu_section(inner, gpu::section_rows(app, engine));
    if gpu_area.height > 0 {
        gpu::render_section(buf, gpu_area, app, engine, now);
    }
    let target = app.view_fleet().target(engine.target);
    let facts_width = if inner.width >= 120 {
        FACTS_WIDE
    } else if inner.width >= 70 {
        FACTS_MEDIUM
    } else {
        0
    };
    let [facts_area, charts_area] =
        Layout::horizontal([Constraint::Length(facts_width), Constraint::Fill(1)]).areas(inner);
    if facts_width > 0 {
        let source = app.view_fleet().source_of(engine.target);
        let mut lines = findings::fact_lines(app, engine, facts_area.width, now);
        lines.extend(facts(
            engine,
            target,
            source,
            &app.theme,
            now,
            facts_area.width,
        ));
        Paragraph::new(lines).render(facts_area, buf);
    }
    let charts_area = match app.view_fleet().pod_info(engine.target) {
        Some(pod) => {
            let route = app.kube.routes.get(&engine.target).copied();
            let (charts_rect, pod_rect) = if charts_area.width >= POD_WIDE + CHARTS_BESIDE_POD {
                let [c, p] =
                    Layout::horizontal([Constraint::Fill(1), Constraint::Length(POD_WIDE)])
                        .areas(charts_area);
                (c, p)
            } else if charts_area.height >= 4 * CHART_MIN_ROWS {
                let [c, p] = Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)])
                    .areas(charts_area);
                (c, p)
            } else {
                // Too little room for both: the pod says more than a squeezed chart.
                (Rect::default(), charts_area)
            };
            super::pod::render_panel(buf, pod_rect, &app.theme, pod, route, now);
            charts_rect
        }
        None => charts_area,
    };
    charts(buf, charts_area, app, engine, now);
}

/// Split off the bottom rows of `inner` for a GPU section that wants `wanted` rows: all of
/// them when [`ROWS_ABOVE_GPUS`] remain above, else its summary line, else none.
fn split_gpu_section(inner: Rect, wanted: u16) -> (Rect, Rect) {
    let rows = if wanted == 0 {
        0
    } else if inner.height >= wanted + ROWS_ABOVE_GPUS {
        wanted
    } else if inner.height > ROWS_ABOVE_GPUS {
        1
    } else {
        0
    };
    let above = Rect {
        height: inner.height - rows,
        ..inner
    };
    let below = Rect {
        y: inner.y + above.height,
        height: rows,
        ..inner
    };
    (above, below)
}

/// The grid of charts: 3, 2 or 1 per row by width; the least important are left out when
/// there are not enough rows for all.
fn charts(buf: &mut Buffer, area: Rect, app: &App, engine: &EngineState, now: Ts) {
    let per_row: usize = if area.width >= 96 {
        3
    } else if area.width >= 48 {
        2
    } else {
        1
    };
    let mut count = CHARTS.len();
    let rows_for = |n: usize| n.div_ceil(per_row);
    while count > 0 && rows_for(count) * usize::from(CHART_MIN_ROWS) > usize::from(area.height) {
        count -= 1;
    }
    if count == 0 {
        return;
    }
    let rows = rows_for(count);
    let row_areas = Layout::vertical(vec![Constraint::Fill(1); rows]).split(area);
    let mut specs = CHARTS.iter().take(count);
    for row_area in row_areas.iter() {
        let in_row: Vec<&ChartSpec> = specs.by_ref().take(per_row).collect();
        let cells = Layout::horizontal(vec![Constraint::Fill(1); in_row.len()]).split(*row_area);
        for (spec, cell) in in_row.into_iter().zip(cells.iter()) {
            chart(buf, *cell, app, engine, spec, now);
        }
    }
}

fn chart(buf: &mut Buffer, area: Rect, app: &App, engine: &EngineState, spec: &ChartSpec, now: Ts) {
    let theme = &app.theme;
    let signals = &engine.signals;
    let mut title = vec![Span::styled(format!(" {}", spec.title), theme.title)];
    for (series, label, style) in spec.series {
        let style = series_style(theme, *style, signals);
        let value = (spec.fmt)(series.value(signals));
        let text = if label.is_empty() {
            format!(" {value}")
        } else {
            format!(" {label} {value}")
        };
        title.push(Span::styled(text, style));
    }
    title.push(Span::raw(" "));
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Line::from(title));
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.width == 0 || inner.height == 0 {
        return;
    }

    let (end, cursor) = app.chart_end(engine, app.range.secs(), now);
    let (from, to) = time_span(end, app.range.secs(), usize::from(inner.width));
    let data: Vec<Vec<(f64, f64)>> = spec
        .series
        .iter()
        .map(|(series, _, _)| app.history_points(engine, *series, from))
        .collect();
    let top = spec.ceiling.unwrap_or_else(|| {
        let max = data
            .iter()
            .flatten()
            .map(|p| p.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        nice_ceiling(max)
    });
    if data.iter().all(Vec::is_empty) {
        let y = inner.y + inner.height.saturating_sub(1) / 2;
        Paragraph::new(Line::styled(text::NO_DATA_YET, theme.dim))
            .alignment(Alignment::Center)
            .render(
                Rect {
                    y,
                    height: 1,
                    ..inner
                },
                buf,
            );
        return;
    }
    let cursor_line: Vec<(f64, f64)> =
        cursor.map_or_else(Vec::new, |at| vec![(at, 0.0), (at, top)]);
    let mut datasets: Vec<Dataset<'_>> = data
        .iter()
        .zip(spec.series.iter())
        .map(|(points, (_, _, style))| {
            let graph = if points.len() == 1 {
                GraphType::Scatter
            } else {
                GraphType::Line
            };
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(graph)
                .style(series_style(theme, *style, signals))
                .data(points)
        })
        .collect();
    if !cursor_line.is_empty() {
        // The time cursor: a vertical line at the instant the view shows.
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(theme.info)
                .data(&cursor_line),
        );
    }
    let y_labels = vec![
        Span::styled((spec.fmt)(Some(0.0)), theme.dim),
        Span::styled((spec.fmt)(Some(top)), theme.dim),
    ];
    Chart::new(datasets)
        .x_axis(Axis::default().bounds([from, to]))
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(y_labels)
                .style(theme.border),
        )
        .legend_position(None)
        .render(inner, buf);
}

/// KV capacity in tokens: the derived signal, else computed from the latest cache config.
fn kv_capacity(engine: &EngineState) -> Option<u64> {
    engine
        .signals
        .kv_capacity_tokens
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.round() as u64)
        .or_else(|| {
            engine
                .latest
                .as_ref()
                .and_then(|l| l.cache_config.as_ref())
                .and_then(|c| c.kv_capacity_tokens())
        })
}

/// The time span `[from, to]` of a chart `cells` wide showing `range` seconds up to `now`. The
/// end is rounded up to a whole cell's worth of time, so that between two such steps the
/// drawn history stays put and only new points change cells: fewer bytes to the terminal.
fn time_span(now: Ts, range: f64, cells: usize) -> (Ts, Ts) {
    let step = range / cells.max(1) as f64;
    let to = if step > 0.0 && (now / step).is_finite() {
        (now / step).ceil() * step
    } else {
        now
    };
    (to - range, to)
}

/// A round top for a y axis at or above `max` (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10ⁿ), so
/// the axis label reads well; 1 when there is nothing above zero.
fn nice_ceiling(max: f64) -> f64 {
    const STEPS: [f64; 10] = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0];
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    STEPS
        .iter()
        .map(|s| s * magnitude)
        .find(|top| *top >= max * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// The facts column: labelled values, the last scrape and the last error.
fn facts<'a>(
    engine: &EngineState,
    target: Option<&TargetState>,
    source: Option<&DerivedSourceState>,
    theme: &Theme,
    now: Ts,
    width: u16,
) -> Vec<Line<'a>> {
    let s = &engine.signals;
    let value_width = usize::from(width).saturating_sub(FACT_LABEL + 1);
    let fact = |label: &str, value: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{label:<FACT_LABEL$} "), theme.dim),
            Span::styled(format::truncate(&value, value_width), style),
        ])
    };
    let model = if engine.id.model.is_empty() {
        text::NO_MODEL.to_string()
    } else {
        engine.id.model.clone()
    };
    let engine_kind = engine.latest.as_ref().map_or_else(
        || format::UNKNOWN.to_string(),
        |l| engine_label(l.flavor, &engine.id.engine),
    );
    let capacity = kv_capacity(engine);
    let error_lines: Vec<Line<'a>> = target
        .and_then(|t| t.last_error.as_ref())
        .map(|(at, error)| {
            vec![
                fact(
                    text::FACT_LAST_ERROR,
                    format!("{} · {}", error.short(), text::ago(now - at)),
                    theme.error,
                ),
                fact("", error.to_string(), theme.error),
            ]
        })
        .unwrap_or_default();
    // A failing target's error is the first thing to read; an old one comes last.
    let failing = target.is_some_and(|t| t.failing);
    let mut lines = Vec::new();
    if failing {
        lines.extend(error_lines.iter().cloned());
    }
    lines.extend([
        fact(text::FACT_MODEL, model, theme.base),
        fact(text::FACT_ENGINE, engine_kind, theme.base),
        fact(
            text::FACT_KV_CAPACITY,
            capacity.map_or_else(|| format::UNKNOWN.to_string(), text::tokens),
            theme.base,
        ),
        fact(text::FACT_PREFIX, format::percent(s.prefix_hit), theme.base),
        fact(
            text::FACT_SPEC,
            format::percent(s.spec_acceptance),
            theme.base,
        ),
        fact(
            text::FACT_ERRORS,
            format::percent(s.error_ratio),
            theme.base,
        ),
        fact(text::FACT_CPU, text::cores(s.cpu_cores), theme.base),
    ]);
    if let Some(s) = source {
        // Read through Prometheus: the cost of the whole cycle, not of this engine.
        let style = if s.failures.is_empty() {
            theme.base
        } else {
            theme.warn
        };
        lines.push(fact(
            text::FACT_SOURCE,
            text::source_cost(s.queries, s.failures.len(), s.last_took, s.last_bytes),
            style,
        ));
        if let Some(error) = &s.backfill_error {
            lines.push(fact(text::FACT_BACKFILL, error.clone(), theme.warn));
        }
    } else if let Some(t) = target {
        lines.push(fact(
            text::FACT_SCRAPE,
            text::scrape_cost(t.last_took, t.last_bytes),
            theme.base,
        ));
    }
    if let Some(t) = target.filter(|_| source.is_none()) {
        let first = t.first_malformed.as_ref().map(|e| (e.line, e.reason));
        let malformed_style = if t.malformed > 0 {
            theme.warn
        } else {
            theme.base
        };
        lines.push(fact(
            text::FACT_MALFORMED,
            text::malformed(t.malformed, first),
            malformed_style,
        ));
    }
    if let Some(at) = engine.restarted_at {
        lines.push(fact(text::FACT_RESTARTED, text::ago(now - at), theme.warn));
    }
    if !failing {
        lines.extend(error_lines);
    }
    // The dashboards' signals last: what is wrong with the engine or its source comes first
    // when the pane is short.
    lines.extend(
        super::signal_facts::facts(s)
            .into_iter()
            .map(|(label, value)| fact(label, value, theme.base)),
    );
    lines
}

/// Compact mode: a title rule, one line of sparklines, one line of facts.
pub(crate) fn render_compact(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    engine: Option<&EngineState>,
    now: Ts,
) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let inner = pane_block(buf, area, app, engine);
    let Some(engine) = engine else {
        no_selection(buf, inner, &app.theme);
        return;
    };
    if inner.height == 0 {
        return;
    }
    let now = app.view_now(now);
    let sparks = spark_line(app, engine, now, usize::from(inner.width));
    super::cells::put_line(buf, inner.x, inner.y, &sparks, inner.width);
    if inner.height >= 2 {
        // The engine's findings, when it has any, matter more than its facts.
        let line =
            findings::compact_line(app, engine, usize::from(inner.width)).unwrap_or_else(|| {
                let fleet = app.view_fleet();
                let target = fleet.target(engine.target);
                let pod = fleet.pod_info(engine.target);
                fact_line(engine, target, pod, &app.theme, now)
            });
        super::cells::put_line(buf, inner.x, inner.y + 1, &line, inner.width);
    }
}

/// `KV ▂▃▅▆▇  82%  TTFT95 ▂▃▅▇ 412ms …`, sparklines as wide as the line allows.
fn spark_line<'a>(app: &App, engine: &EngineState, now: Ts, width: usize) -> Line<'a> {
    let theme = &app.theme;
    let fixed = |n: usize| -> usize {
        SPARKS
            .iter()
            .take(n)
            .map(|s| s.label.chars().count() + 1 + 1 + SPARK_VALUE)
            .sum::<usize>()
            + 2 * n.saturating_sub(1)
    };
    let mut n = SPARKS.len();
    while n > 1 && width.saturating_sub(fixed(n)) / n < SPARK_MIN {
        n -= 1;
    }
    let cells = (width.saturating_sub(fixed(n)) / n.max(1)).clamp(SPARK_MIN, SPARK_MAX);
    // The sparklines end at the time cursor: they have no room to mark it.
    let (from, to) = time_span(now, app.range.secs(), cells);
    let mut spans = Vec::new();
    for (i, spec) in SPARKS.iter().take(n).enumerate() {
        if i > 0 {
            spans.push(Span::raw("  "));
        }
        let points = app.history_points(engine, spec.series, from);
        let style = match spec.series {
            Series::KvUsage => series_style(theme, SeriesStyle::KvLevel, &engine.signals),
            _ => theme.series[1],
        };
        spans.push(Span::styled(format!("{} ", spec.label), theme.dim));
        spans.push(Span::styled(
            sparkline(&points, from, to, cells, spec.ceiling),
            style,
        ));
        let value = (spec.fmt)(spec.series.value(&engine.signals));
        spans.push(Span::styled(
            format!(" {}", format::right(&value, SPARK_VALUE)),
            theme.base,
        ));
    }
    Line::from(spans)
}

/// The last error first (it matters most), then capacity, prefix hit, errors, scrape cost.
fn fact_line<'a>(
    engine: &EngineState,
    target: Option<&TargetState>,
    pod: Option<&kvtop_core::kube_model::PodInfo>,
    theme: &Theme,
    now: Ts,
) -> Line<'a> {
    let s = &engine.signals;
    let mut spans = Vec::new();
    if let Some((marker, style)) = pod.and_then(|p| super::pod::marker(p, theme)) {
        spans.push(Span::styled(format!("{marker} · "), style));
    }
    if let Some((at, error)) = target.and_then(|t| t.last_error.as_ref()) {
        spans.push(Span::styled(
            format!("{} {} · ", error.short(), text::ago(now - at)),
            theme.error,
        ));
    }
    let capacity = kv_capacity(engine);
    let mut pairs = vec![(
        text::FACT_KV_CAPACITY,
        capacity.map_or_else(|| format::UNKNOWN.to_string(), text::tokens),
    )];
    if s.gpu_util.is_some() || s.gpu_temp.is_some() || s.xid.is_some() {
        pairs.push((
            gpu::SECTION_TITLE,
            format!(
                "{} {} {}",
                format::percent(s.gpu_util),
                gpu::temperature(s.gpu_temp),
                gpu::xid(s.xid)
            ),
        ));
    }
    pairs.extend([
        (text::FACT_PREFIX, format::percent(s.prefix_hit)),
        (text::FACT_ERRORS, format::percent(s.error_ratio)),
        (
            text::FACT_SCRAPE,
            target.map_or_else(
                || format::UNKNOWN.to_string(),
                |t| text::scrape_cost(t.last_took, t.last_bytes),
            ),
        ),
    ]);
    for (i, (label, value)) in pairs.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.dim));
        }
        spans.push(Span::styled(format!("{label} "), theme.dim));
        spans.push(Span::styled(value, theme.base));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(nice_ceiling(1200.0), 1200.0);
        assert_eq!(nice_ceiling(1320.0), 1500.0);
        assert_eq!(nice_ceiling(2.6), 3.0);
        assert_eq!(nice_ceiling(0.094), 0.1);
        assert_eq!(nice_ceiling(17.0), 20.0);
        assert_eq!(nice_ceiling(9.0), 10.0);
    }

    #[test]
    fn chart_spans_end_on_whole_cells_at_or_after_now() {
        // 300 s over 30 cells: 10 s per cell.
        assert_eq!(time_span(1001.0, 300.0, 30), (710.0, 1010.0));
        assert_eq!(time_span(1009.9, 300.0, 30), (710.0, 1010.0));
        assert_eq!(time_span(1010.0, 300.0, 30), (710.0, 1010.0));
        assert_eq!(time_span(1010.1, 300.0, 30), (720.0, 1020.0));
        assert_eq!(time_span(5.0, 0.0, 0), (5.0, 5.0));
    }

    #[test]
    fn the_gpu_section_takes_the_bottom_rows_while_room_remains() {
        let inner = Rect::new(0, 10, 100, 20);
        // 1 title + 4 GPUs fit under 8 rows of facts and charts.
        assert_eq!(
            split_gpu_section(inner, 5),
            (Rect::new(0, 10, 100, 15), Rect::new(0, 25, 100, 5))
        );
        // 13 rows do not fit: the summary line only.
        assert_eq!(split_gpu_section(inner, 13).1.height, 1);
        assert_eq!(split_gpu_section(Rect::new(0, 0, 100, 8), 5).1.height, 0);
        assert_eq!(split_gpu_section(inner, 0).0, inner);
    }

    #[test]
    fn engine_labels() {
        assert_eq!(engine_label(EngineFlavor::VllmV1, "0"), "vLLM V1 #0");
        assert_eq!(engine_label(EngineFlavor::VllmV0, ""), "vLLM V0");
    }
}
