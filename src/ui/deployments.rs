//! The Deployments view (`d`): each Deployment owning discovered pods, its ready/desired
//! replicas, its HorizontalPodAutoscaler (current→desired, min–max, metric current/target,
//! scaling limit) and PodDisruptionBudget (rule, disruptions allowed), the KEDA ScaledObject
//! scaling it when there is one, and the Kubernetes problems of the moment. Drawn over the table and the detail pane.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::format;
use crate::app::App;
use crate::theme::Theme;
use kvtop_core::kube_model::{DeploymentSummary, ScaledObjectSummary};

const TITLE: &str = " Deployments ";
const CLOSE_HINT: &str = " d/Esc close ";
const OFF: &str =
    "Kubernetes discovery is off: start kvtop with --kube (or [kubernetes] enabled = true).";
const NONE_YET: &str = "no Deployment owns a discovered pod (yet)";
const PROBLEMS: &str = "problems";
const COL_NAME: &str = "DEPLOYMENT";
const COL_READY: &str = "READY";
const COL_HPA: &str = "HPA cur→want [min–max]";
const COL_METRIC: &str = "METRIC now/target";
const COL_PDB: &str = "PDB";
const NO_HPA: &str = "no HPA";
const NO_PDB: &str = "no PDB";
/// The HPA wants more replicas than its maximum (`TooManyReplicas`), or fewer than its minimum.
const AT_MAX: &str = "at max";
const AT_MIN: &str = "at min";

/// A KEDA ScaledObject's line and its states.
const KEDA: &str = "KEDA";
const KEDA_ACTIVE: &str = "active";
const KEDA_IDLE: &str = "idle";
const KEDA_PAUSED: &str = "paused";
const KEDA_FALLBACK: &str = "fallback (triggers failing)";
const KEDA_NOT_READY: &str = "not ready";

/// Column widths besides the name (which takes the rest).
const READY_W: usize = 9;
const HPA_W: usize = 22;
const METRIC_W: usize = 34;
const PDB_W: usize = 28;

/// Draw the view over `area`.
pub fn render(buf: &mut Buffer, area: Rect, app: &App) {
    if area.width < 20 || area.height < 3 {
        return;
    }
    let theme = &app.theme;
    Clear.render(area, buf);
    let block = Block::bordered()
        .border_style(theme.border)
        .style(theme.base)
        .title(Line::styled(TITLE, theme.title))
        .title_bottom(Line::styled(CLOSE_HINT, theme.dim).right_aligned());
    let inner = block.inner(area);
    block.render(area, buf);
    let width = usize::from(inner.width);
    let mut lines = Vec::new();
    if !app.kube.enabled {
        lines.push(Line::styled(OFF, theme.dim));
    } else if app.kube.deployments.is_empty() {
        lines.push(Line::styled(NONE_YET, theme.dim));
    } else {
        let show_context = app.kube.show_context;
        lines.push(header(width, theme));
        for d in &app.kube.deployments {
            lines.push(row(d, width, show_context, theme));
            if let Some(so) = &d.scaled_object {
                lines.push(keda_line(so, width, theme));
            }
        }
    }
    if !app.kube.problems.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(PROBLEMS, theme.title));
        for text in app.kube.problems.values() {
            lines.push(Line::styled(format::truncate(text, width), theme.error));
        }
    }
    Paragraph::new(lines).render(inner, buf);
}

/// What the fixed columns leave for the name, and which fixed columns fit.
fn layout(width: usize) -> (usize, [bool; 3]) {
    let fixed = [HPA_W, METRIC_W, PDB_W];
    let mut shown = [true; 3];
    let used = |shown: &[bool; 3]| {
        READY_W
            + 1
            + fixed
                .iter()
                .zip(shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| w + 1)
                .sum::<usize>()
    };
    // Drop the metric first, then the HPA, keeping the PDB (it guards drains).
    for drop in [1, 0, 2] {
        if used(&shown) + 16 <= width {
            break;
        }
        if let Some(s) = shown.get_mut(drop) {
            *s = false;
        }
    }
    (width.saturating_sub(used(&shown)), shown)
}

fn header(width: usize, theme: &Theme) -> Line<'static> {
    let (name_w, shown) = layout(width);
    let mut text = format!(
        "{} {}",
        format::left(COL_NAME, name_w),
        format::left(COL_READY, READY_W)
    );
    for ((label, w), on) in [(COL_HPA, HPA_W), (COL_METRIC, METRIC_W), (COL_PDB, PDB_W)]
        .into_iter()
        .zip(shown)
    {
        if on {
            text.push(' ');
            text.push_str(&format::left(label, w));
        }
    }
    Line::styled(text, theme.table_header)
}

/// The KEDA ScaledObject under its Deployment: `  KEDA NAME [min–max] active · TRIGGER · → HPA`.
fn keda_line(so: &ScaledObjectSummary, width: usize, theme: &Theme) -> Line<'static> {
    let state = match (so.paused, so.fallback, so.active, so.ready) {
        (Some(Some(n)), ..) => (format!("{KEDA_PAUSED} at {n}"), theme.warn),
        (Some(None), ..) => (KEDA_PAUSED.to_owned(), theme.warn),
        (None, true, ..) => (KEDA_FALLBACK.to_owned(), theme.error),
        (None, false, _, Some(false)) => (KEDA_NOT_READY.to_owned(), theme.error),
        (None, false, Some(true), _) => (KEDA_ACTIVE.to_owned(), theme.base),
        (None, false, Some(false), _) => (KEDA_IDLE.to_owned(), theme.dim),
        (None, false, None, _) => (format::UNKNOWN.to_string(), theme.dim),
    };
    let mut rest = vec![format!("[{}–{}]", so.min, so.max)];
    rest.extend(so.triggers.iter().cloned());
    if let Some(hpa) = &so.hpa {
        rest.push(format!("→ {hpa}"));
    }
    let head = format!("  {KEDA} {} ", so.name);
    let tail = format!(" · {}", rest.join(" · "));
    let room = width.saturating_sub(head.chars().count() + state.0.chars().count());
    Line::from(vec![
        Span::styled(format::truncate(&head, width), theme.dim),
        Span::styled(state.0, state.1),
        Span::styled(format::truncate(&tail, room), theme.base),
    ])
}

fn row(d: &DeploymentSummary, width: usize, show_context: bool, theme: &Theme) -> Line<'static> {
    let (name_w, shown) = layout(width);
    let qualified = if show_context {
        format!("{}/{}/{}", d.context, d.namespace, d.name)
    } else {
        format!("{}/{}", d.namespace, d.name)
    };
    // Where the column is narrow (80 columns), the Deployment's own name before its namespace.
    let name = if qualified.chars().count() <= name_w {
        qualified
    } else {
        d.name.clone()
    };
    let mut ready = format!("{}/{}", d.ready, d.desired);
    if d.rolling_out {
        ready.push_str(&format!(" ⟳{}", d.updated));
    }
    let ready_style = if d.ready < d.desired {
        theme.warn
    } else {
        theme.ok
    };
    let mut spans = vec![
        Span::styled(format::left_middle(&name, name_w), theme.base),
        Span::raw(" "),
        Span::styled(format::left(&ready, READY_W), ready_style),
    ];
    let (hpa, metric, hpa_style) = match &d.hpa {
        Some(h) => {
            let current = h
                .current
                .map_or_else(|| format::UNKNOWN.to_string(), |c| c.to_string());
            let mut text = format!("{current}→{} [{}–{}]", h.desired, h.min, h.max);
            if let Some(limit) = &h.limited {
                let short = match limit.as_str() {
                    "TooManyReplicas" => AT_MAX,
                    "TooFewReplicas" => AT_MIN,
                    other => other,
                };
                text.push_str(&format!(" {short}"));
            }
            let style = if h.limited.is_some() {
                theme.warn
            } else {
                theme.base
            };
            (text, h.metrics.join(", "), style)
        }
        None => (NO_HPA.to_owned(), String::new(), theme.dim),
    };
    let (pdb, pdb_style): (String, Style) = match &d.pdb {
        Some(p) => {
            let style = if p.disruptions_allowed <= 0 {
                theme.warn
            } else {
                theme.base
            };
            (
                format!("{} · allows {}", p.rule, p.disruptions_allowed),
                style,
            )
        }
        None => (NO_PDB.to_owned(), theme.dim),
    };
    for ((text, w, style), on) in [
        (hpa, HPA_W, hpa_style),
        (metric, METRIC_W, theme.base),
        (pdb, PDB_W, pdb_style),
    ]
    .into_iter()
    .zip(shown)
    {
        if on {
            spans.push(Span::raw(" "));
            spans.push(Span::styled(format::left(&text, w), style));
        }
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_views_drop_the_metric_then_the_hpa_and_keep_the_pdb() {
        assert_eq!(layout(200).1, [true, true, true]);
        assert_eq!(layout(90).1, [true, false, true]);
        assert_eq!(layout(60).1, [false, false, true]);
        let (name, _) = layout(200);
        assert_eq!(
            name,
            200 - (READY_W + 1 + HPA_W + 1 + METRIC_W + 1 + PDB_W + 1)
        );
    }

    #[test]
    fn a_narrow_name_column_drops_the_namespace_before_cutting_the_name() {
        let d = DeploymentSummary {
            context: "kvtop-sim".into(),
            namespace: "llm".into(),
            name: "vllm-llama-8b".into(),
            desired: 4,
            ready: 4,
            updated: 4,
            available: 4,
            rolling_out: false,
            hpa: None,
            pdb: None,
            scaled_object: None,
        };
        let theme = Theme::fallback_mono();
        let text = |width: usize| -> String {
            row(&d, width, false, &theme)
                .spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect()
        };
        // 78 columns (an 80-column terminal) leave 16 for the name: `llm/vllm-llama-8b` is 17.
        assert_eq!(layout(78).0, 16);
        assert!(text(78).starts_with("vllm-llama-8b    4/4"), "{}", text(78));
        assert!(text(120).starts_with("llm/vllm-llama-8b "), "{}", text(120));
    }
}
