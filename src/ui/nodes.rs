//! The node view (`n`): every GPU the fleet knows, grouped by node, one line each with its
//! utilization sparkline, memory, temperature, power, clock, last XID and the pod holding it;
//! each node headed by where its readings come from (its dcgm-exporter, or Prometheus) and how
//! fresh they are.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{format, gpu, text};
use crate::app::{App, NodesExtent};
use crate::theme::Theme;
use kvtop_core::fleet::{Fleet, GpuOrigin, GpuState, Ts};

pub(crate) const COLUMNS: &str = "GPU    UTIL";
pub(crate) const COLUMNS_REST: &str = "MEM                    TEMP  POWER    SM CLK  XID     POD";
pub(crate) const NO_GPUS: &str =
    "no GPUs yet: add dcgm-exporter endpoints as targets, or read them through --prometheus";
pub(crate) const VIA_PROMETHEUS: &str = "via Prometheus";
pub(crate) const UNPLACED: &str = "no pod";
/// After the pod of a GPU whose pod is not among the watched engines.
pub(crate) const NOT_WATCHED: &str = "(not watched)";

/// Draw the view in `area` (between header and footer), scrolled to `app.nodes_offset`.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let theme = &app.theme;
    let fleet = app.view_fleet();
    let now = app.view_now(now);
    let width = usize::from(area.width);
    let lines = lines(fleet, theme, (now - app.range.secs(), now), width, now);
    if lines.is_empty() {
        super::cells::put_line(
            buf,
            area.x,
            area.y,
            &Line::styled(format!(" {NO_GPUS}"), theme.dim),
            area.width,
        );
        app.nodes_extent.set(NodesExtent::default());
        return;
    }
    // The column heading stays on top; the rest scrolls.
    let header = column_header(theme, width);
    super::cells::fill_style(buf, Rect { height: 1, ..area }, theme.table_header);
    super::cells::put_line(buf, area.x, area.y, &header, area.width);
    let height = usize::from(area.height.saturating_sub(1));
    let offset = app.nodes_offset.min(lines.len().saturating_sub(height));
    app.nodes_extent.set(NodesExtent {
        lines: lines.len(),
        height,
    });
    for (row, line) in (1..area.height).zip(lines.iter().skip(offset)) {
        super::cells::put_line(buf, area.x, area.y + row, line, area.width);
    }
}

/// The column names, aligned with [`gpu::gpu_line`] at `width`.
fn column_header(theme: &Theme, width: usize) -> Line<'static> {
    let spark = gpu::spark_cells(width);
    Line::styled(
        format!("{COLUMNS}{}{COLUMNS_REST}", " ".repeat(spark + 3)),
        theme.table_header,
    )
}

/// Every line of the view: per node a heading and its GPUs.
fn lines(
    fleet: &Fleet,
    theme: &Theme,
    span: (Ts, Ts),
    width: usize,
    now: Ts,
) -> Vec<Line<'static>> {
    let gpus: Vec<&GpuState> = fleet.gpus().collect();
    let mut out = Vec::with_capacity(gpus.len() * 9 / 8 + 1);
    for node in gpus.chunk_by(|a, b| a.key.hostname == b.key.hostname) {
        let Some(first) = node.first() else {
            continue;
        };
        out.push(node_heading(fleet, node, first, theme, now));
        for g in node {
            let tail = match (g.target.and_then(|t| fleet.target(t)), &g.sample.pod) {
                (Some(target), _) => target.spec.name.clone(),
                (None, Some(pod)) => format!("{pod} {NOT_WATCHED}"),
                (None, None) => UNPLACED.to_string(),
            };
            out.push(gpu::gpu_line(g, &g.key.gpu, &tail, theme, span, width));
        }
    }
    out
}

/// `gpu-node-00 · 8 × NVIDIA H100 80GB HBM3 · dcgm-exporter-x7k2p 0s` (or its error).
fn node_heading(
    fleet: &Fleet,
    node: &[&GpuState],
    first: &GpuState,
    theme: &Theme,
    now: Ts,
) -> Line<'static> {
    let host = if first.key.hostname.is_empty() {
        format::UNKNOWN.to_string()
    } else {
        first.key.hostname.clone()
    };
    let mut spans = vec![
        Span::styled(host, theme.title),
        Span::styled(
            format!(" · {} × {}", node.len(), model_of(node)),
            theme.base,
        ),
    ];
    let newest = node
        .iter()
        .map(|g| g.last_ok)
        .fold(f64::NEG_INFINITY, f64::max);
    match &first.origin {
        GpuOrigin::Target(id) => match fleet.target(*id) {
            Some(target) => {
                spans.push(Span::styled(format!(" · {}", target.spec.name), theme.dim));
                match target.last_error.as_ref().filter(|_| target.failing) {
                    Some((at, error)) => spans.push(Span::styled(
                        format!(" {} {}", error.short(), text::ago(now - at)),
                        theme.error,
                    )),
                    None => spans.push(Span::styled(
                        format!(" {}", format::age(now - newest)),
                        theme.dim,
                    )),
                }
            }
            None => spans.push(Span::styled(
                format!(" {}", format::age(now - newest)),
                theme.dim,
            )),
        },
        GpuOrigin::Derived(_) => spans.push(Span::styled(
            format!(" · {VIA_PROMETHEUS} {}", format::age(now - newest)),
            theme.dim,
        )),
    }
    Line::from(spans)
}

/// The GPU model of a node, or the first one when they differ.
fn model_of(node: &[&GpuState]) -> String {
    node.iter()
        .map(|g| g.sample.model_name.as_str())
        .find(|m| !m.is_empty())
        .unwrap_or(format::UNKNOWN)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtop_core::engine::GpuSample;
    use kvtop_core::fleet::{FleetSettings, ScrapePayload, ScrapeReport, TargetSpec};

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn fleet_with_one_gpu() -> Fleet {
        let mut fleet = Fleet::new(FleetSettings::default());
        let exporter = fleet.add_target(TargetSpec {
            name: "dcgm-exporter-abc".into(),
            url: "http://127.0.0.1:9400/metrics".into(),
        });
        fleet.ingest(ScrapeReport {
            target: exporter,
            at: 100.0,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                gpus: vec![GpuSample {
                    gpu: "3".into(),
                    uuid: "GPU-x".into(),
                    model_name: "NVIDIA H100 80GB HBM3".into(),
                    hostname: "gpu-node-07".into(),
                    util_pct: Some(87.0),
                    fb_used_mib: Some(73_939.0),
                    fb_free_mib: Some(7_101.0),
                    fb_reserved_mib: Some(519.0),
                    temp_c: Some(88.0),
                    power_w: Some(612.4),
                    sm_clock_mhz: Some(1980.0),
                    xid: Some(79.0),
                    ..GpuSample::default()
                }],
                ..ScrapePayload::default()
            }),
        });
        fleet
    }

    #[test]
    fn a_node_heading_then_its_gpu_with_every_reading() {
        let fleet = fleet_with_one_gpu();
        let theme = Theme::fallback_mono();
        let lines = lines(&fleet, &theme, (0.0, 100.0), 100, 101.0);
        let texts: Vec<String> = lines.iter().map(text).collect();
        assert_eq!(texts.len(), 2);
        assert_eq!(
            texts[0],
            "gpu-node-07 · 1 × NVIDIA H100 80GB HBM3 · dcgm-exporter-abc 1s"
        );
        let gpu = &texts[1];
        // 73939 / (73939 + 7101 + 519) = 0.9066 → 91 %; 73939 MiB = 72.2 GiB of 79.6.
        for part in [
            "3 ",
            " 87%",
            "91%",
            "72.2/79.6G",
            "88°C",
            "612 W",
            "1980 MHz",
            "XID 79",
            "no pod",
        ] {
            assert!(gpu.contains(part), "{part:?} missing in {gpu:?}");
        }
    }

    #[test]
    fn a_gpu_held_by_a_pod_kvtop_does_not_watch_names_it() {
        let mut fleet = Fleet::new(FleetSettings::default());
        let exporter = fleet.add_target(TargetSpec {
            name: "dcgm".into(),
            url: "http://127.0.0.1:9400/metrics".into(),
        });
        fleet.ingest(ScrapeReport {
            target: exporter,
            at: 100.0,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                gpus: vec![GpuSample {
                    gpu: "0".into(),
                    hostname: "n".into(),
                    pod: Some("vllm-elsewhere".into()),
                    util_pct: Some(10.0),
                    ..GpuSample::default()
                }],
                ..ScrapePayload::default()
            }),
        });
        let theme = Theme::fallback_mono();
        let lines = lines(&fleet, &theme, (0.0, 100.0), 100, 100.0);
        let gpu = lines.get(1).map(text).unwrap_or_default();
        assert!(gpu.ends_with("vllm-elsewhere (not watched)"), "{gpu}");
    }

    #[test]
    fn the_column_heading_lines_up_with_the_values() {
        let fleet = fleet_with_one_gpu();
        let theme = Theme::fallback_mono();
        for width in [80, 100, 160] {
            let header = text(&column_header(&theme, width));
            let gpu = text(&lines(&fleet, &theme, (0.0, 100.0), width, 101.0)[1]);
            let column =
                |s: &str, needle: &str| s.find(needle).map(|byte| s[..byte].chars().count());
            let end = |s: &str, needle: &str| column(s, needle).map(|c| c + needle.chars().count());
            assert_eq!(column(&header, "UTIL"), Some(7), "{header}");
            assert_eq!(
                column(&header, "MEM"),
                column(&gpu, "mem"),
                "{header}\n{gpu}"
            );
            assert_eq!(end(&header, "TEMP"), end(&gpu, "°C"), "{header}\n{gpu}");
            assert_eq!(end(&header, "POWER"), end(&gpu, " W"), "{header}\n{gpu}");
            assert_eq!(end(&header, "SM CLK"), end(&gpu, "MHz"), "{header}\n{gpu}");
            assert_eq!(
                column(&header, "XID"),
                column(&gpu, "XID"),
                "{header}\n{gpu}"
            );
            assert_eq!(
                column(&header, "POD"),
                column(&gpu, "no pod"),
                "{header}\n{gpu}"
            );
        }
    }
}
