//! GPU readings as text: one line per GPU (utilization sparkline, memory, temperature, power,
//! SM clock, last XID), shared by the detail pane's GPU section and the node view, and the
//! short summary of the compact detail.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::format;
use super::spark::sparkline;
use crate::app::App;
use crate::theme::Theme;
use kvtop_core::fleet::{EngineState, GpuSeries, GpuState, Signals, Ts};

/// Temperature from which a GPU is drawn as a warning, °C (datacenter GPUs throttle near 85–90).
pub(crate) const TEMP_HOT_C: f64 = 85.0;
/// Utilization below which a busy engine's GPU is drawn dim, 0..1.
pub(crate) const UTIL_LOW: f64 = 0.3;
/// Sparkline cells at most and at least.
const SPARK_MAX: usize = 24;
const SPARK_MIN: usize = 6;

pub(crate) const SECTION_TITLE: &str = "GPUs";
pub(crate) const GPU_LABEL: &str = "GPU";
pub(crate) const XID_LABEL: &str = "XID";
pub(crate) const MEM_LABEL: &str = "mem";

/// "71°C"
pub fn temperature(c: Option<f64>) -> String {
    match c.filter(|v| v.is_finite()) {
        Some(c) => format!("{c:.0}°C"),
        None => format::UNKNOWN.into(),
    }
}

/// "455 W"
pub fn power(w: Option<f64>) -> String {
    match w.filter(|v| v.is_finite()) {
        Some(w) => format!("{w:.0} W"),
        None => format::UNKNOWN.into(),
    }
}

/// "1980 MHz"
pub fn clock(mhz: Option<f64>) -> String {
    match mhz.filter(|v| v.is_finite()) {
        Some(mhz) => format!("{mhz:.0} MHz"),
        None => format::UNKNOWN.into(),
    }
}

/// "72.2/79.6G": framebuffer used of total, GiB.
pub fn framebuffer(gpu: &GpuState) -> String {
    match (
        gpu.sample.fb_used_mib.filter(|v| v.is_finite()),
        gpu.fb_total_mib(),
    ) {
        (Some(used), Some(total)) => format!("{:.1}/{:.1}G", used / 1024.0, total / 1024.0),
        _ => format::UNKNOWN.into(),
    }
}

/// "XID 79" (an error), "XID 0" or "XID –".
pub fn xid(xid: Option<f64>) -> String {
    match xid.filter(|v| v.is_finite()) {
        Some(code) => format!("{XID_LABEL} {code:.0}"),
        None => format!("{XID_LABEL} {}", format::UNKNOWN),
    }
}

fn xid_style(theme: &Theme, xid: Option<f64>) -> Style {
    match xid.filter(|v| v.is_finite()) {
        Some(code) if code != 0.0 => theme.error,
        _ => theme.dim,
    }
}

fn temp_style(theme: &Theme, c: Option<f64>) -> Style {
    match c {
        Some(c) if c >= TEMP_HOT_C => theme.warn,
        _ => theme.base,
    }
}

/// Columns of a GPU line besides the sparkline and the tail.
const FIXED_COLUMNS: usize = 66;
/// Columns kept for the tail (pod or GPU model) before the sparkline grows.
const TAIL_COLUMNS: usize = 20;

/// Cells of the utilization sparkline for a line `width` wide.
pub(crate) fn spark_cells(width: usize) -> usize {
    width
        .saturating_sub(FIXED_COLUMNS + TAIL_COLUMNS)
        .clamp(SPARK_MIN, SPARK_MAX)
}

/// One GPU as a line: `label`, utilization sparkline over `[from, to]` and value, memory (share
/// and GiB), temperature, power, SM clock, last XID, then `tail` (its pod or host).
pub(crate) fn gpu_line(
    gpu: &GpuState,
    label: &str,
    tail: &str,
    theme: &Theme,
    span: (Ts, Ts),
    width: usize,
) -> Line<'static> {
    let cells = spark_cells(width);
    let points = gpu.points(GpuSeries::Util, span.0);
    let util = gpu.util();
    let util_style = match util {
        Some(u) if u < UTIL_LOW => theme.dim,
        _ => theme.series.get(3).copied().unwrap_or(theme.base),
    };
    let s = &gpu.sample;
    Line::from(vec![
        Span::styled(format!("{} ", format::left(label, 6)), theme.dim),
        Span::styled(
            sparkline(&points, span.0, span.1, cells, Some(1.0)),
            util_style,
        ),
        Span::styled(
            format!(" {}", format::right(&format::percent(util), 4)),
            theme.base,
        ),
        Span::styled(format!("  {MEM_LABEL} "), theme.dim),
        Span::styled(
            format!(
                "{} {}",
                format::right(&format::percent(gpu.mem()), 4),
                format::right(&framebuffer(gpu), 11)
            ),
            theme.base,
        ),
        Span::styled(
            format!("  {}", format::right(&temperature(s.temp_c), 5)),
            temp_style(theme, s.temp_c),
        ),
        Span::styled(
            format!("  {}", format::right(&power(s.power_w), 5)),
            theme.base,
        ),
        Span::styled(
            format!("  {}", format::right(&clock(s.sm_clock_mhz), 8)),
            theme.dim,
        ),
        Span::styled(
            format!("  {}", format::left(&xid(s.xid), 6)),
            xid_style(theme, s.xid),
        ),
        Span::styled(format!("  {tail}"), theme.dim),
    ])
}

/// Rows the detail pane's GPU section needs for `engine`: a title and one line per GPU; 0 when
/// the engine has no GPU.
pub(crate) fn section_rows(app: &App, engine: &EngineState) -> u16 {
    let count = app.view_fleet().gpus_of(engine.target).count();
    if count == 0 {
        0
    } else {
        u16::try_from(count + 1).unwrap_or(u16::MAX)
    }
}

/// The detail pane's GPU section: a title line, then one line per GPU of the engine's pod.
pub(crate) fn render_section(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    engine: &EngineState,
    now: Ts,
) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = &app.theme;
    let fleet = app.view_fleet();
    let title = Line::from(vec![
        Span::styled(format!(" {SECTION_TITLE} "), theme.title),
        Span::styled(
            format!("{} ", summary(&engine.signals).unwrap_or_default()),
            theme.dim,
        ),
    ]);
    super::cells::put_line(buf, area.x, area.y, &title, area.width);
    let span = (now - app.range.secs(), now);
    let width = usize::from(area.width);
    for (row, gpu) in (1..area.height).zip(fleet.gpus_of(engine.target)) {
        let label = format!("{GPU_LABEL} {}", gpu.key.gpu);
        let tail = format!(
            "{} · {}",
            short_host(&gpu.key.hostname),
            gpu.sample.model_name
        );
        let line = gpu_line(gpu, &label, &tail, theme, span, width);
        super::cells::put_line(buf, area.x, area.y + row, &line, area.width);
    }
}

/// A host name without its domain.
fn short_host(host: &str) -> &str {
    host.split('.').next().unwrap_or(host)
}

/// "GPU 87% · mem 90% · 71°C · 455 W · XID 79" (the busiest/hottest of the engine's GPUs);
/// `None` when the engine has no GPU signal.
pub fn summary(s: &Signals) -> Option<String> {
    let any = [s.gpu_util, s.gpu_mem, s.gpu_temp, s.gpu_power, s.xid]
        .iter()
        .any(Option::is_some);
    any.then(|| {
        format!(
            "{} · {MEM_LABEL} {} · {} · {} · {}",
            format::percent(s.gpu_util),
            format::percent(s.gpu_mem),
            temperature(s.gpu_temp),
            power(s.gpu_power),
            xid(s.xid)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_written_with_units_and_unknown_as_a_dash() {
        assert_eq!(temperature(Some(71.4)), "71°C");
        assert_eq!(power(Some(455.5)), "456 W");
        assert_eq!(clock(Some(1980.0)), "1980 MHz");
        assert_eq!(xid(Some(79.0)), "XID 79");
        assert_eq!(xid(None), "XID –");
        assert_eq!(temperature(Some(f64::NAN)), "–");
    }

    #[test]
    fn the_summary_names_the_worst_gpu_values() {
        let s = Signals {
            gpu_util: Some(0.87),
            gpu_mem: Some(0.9),
            gpu_temp: Some(71.0),
            gpu_power: Some(455.0),
            xid: Some(0.0),
            ..Signals::default()
        };
        assert_eq!(
            summary(&s).as_deref(),
            Some("87% · mem 90% · 71°C · 455 W · XID 0")
        );
        assert_eq!(summary(&Signals::default()), None);
    }

    #[test]
    fn sparklines_grow_with_the_line_within_bounds() {
        assert_eq!(spark_cells(60), SPARK_MIN);
        assert_eq!(spark_cells(100), 14);
        assert_eq!(spark_cells(200), SPARK_MAX);
    }
}
