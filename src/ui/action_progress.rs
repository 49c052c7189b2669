//! The progress panel of the running (or last) action: each step marked done (`✓`), under way
//! (`▶`), failed (`✗`) or pending (`·`); during a drain's wait, the engine's running + waiting
//! from the first reading to the latest, the time waited against the limit, and the fleet
//! row's own running/waiting; then the result or the API's error.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::diagnostics::wrap;
use super::format::truncate;
use crate::app::App;
use crate::app::actions::{ActionRun, RunOutcome};
use crate::app::keys::{Action, Context, first_key, key_label};
use kvtop_core::fleet::Ts;

pub(crate) const MARK_DONE: &str = "✓";
pub(crate) const MARK_NOW: &str = "▶";
pub(crate) const MARK_FAILED: &str = "✗";
pub(crate) const MARK_PENDING: &str = "·";
pub(crate) const IN_FLIGHT: &str = "running + waiting:";
pub(crate) const UNKNOWN: &str = "–";

fn count(value: Option<f64>) -> String {
    value.map_or_else(|| UNKNOWN.to_owned(), |v| format!("{v:.0}"))
}

fn step_mark(run: &ActionRun, index: usize) -> &'static str {
    if !run.plan.units.is_empty() {
        return unit_step_mark(run, index);
    }
    match &run.outcome {
        Some(RunOutcome::Done(_)) => MARK_DONE,
        Some(RunOutcome::Failed(f)) if index < f.step => MARK_DONE,
        Some(RunOutcome::Failed(f)) if index == f.step => MARK_FAILED,
        Some(RunOutcome::Failed(_)) => MARK_PENDING,
        None => match run.step {
            Some(step) if index < step => MARK_DONE,
            Some(step) if index == step => MARK_NOW,
            _ => MARK_PENDING,
        },
    }
}

/// A node drain's step: its pods run side by side, so a step is done once a later step of the
/// same pod has started (or the run ended well), and failed when the result names it.
fn unit_step_mark(run: &ActionRun, index: usize) -> &'static str {
    if !run.steps_started.contains(&index) {
        return match &run.outcome {
            Some(RunOutcome::Done(_)) => MARK_DONE,
            _ => MARK_PENDING,
        };
    }
    let steps = &run.plan.steps;
    let unit = steps.get(index).and_then(|s| s.unit);
    // The node's own steps run before any pod's: any later start means they are done.
    let followed = run.steps_started.iter().any(|&later| {
        later > index && (unit.is_none() || steps.get(later).and_then(|s| s.unit) == unit)
    });
    match &run.outcome {
        _ if followed => MARK_DONE,
        None => MARK_NOW,
        Some(RunOutcome::Done(_)) => MARK_DONE,
        Some(RunOutcome::Failed(f)) => {
            let named = unit.and_then(|u| run.plan.units.get(u)).is_some_and(|u| {
                f.message.contains(&format!(
                    "{}: NOT drained: step {} failed",
                    u.name(),
                    index + 1
                ))
            });
            if named || (unit.is_none() && index == f.step) {
                MARK_FAILED
            } else {
                MARK_DONE
            }
        }
    }
}

/// The panel's lines, wrapped to `width`.
pub fn lines(app: &App, run: &ActionRun, width: usize, now: Ts) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    for (i, text) in run.plan.step_texts().iter().enumerate() {
        let mark = step_mark(run, i);
        let style = match mark {
            MARK_NOW => theme.info.add_modifier(Modifier::BOLD),
            MARK_FAILED => theme.crit.add_modifier(Modifier::BOLD),
            MARK_DONE => theme.ok,
            _ => theme.dim,
        };
        let lead = format!("{mark} {:>2}. ", i + 1);
        lines.push(Line::from(vec![
            Span::styled(lead.clone(), style),
            Span::styled(
                truncate(text, width.saturating_sub(lead.chars().count())),
                theme.base,
            ),
        ]));
    }
    let node_drain = !run.plan.units.is_empty();
    if node_drain {
        // Several engines wait side by side: one line each, never one figure mixing them.
        for (pod, first, last) in &run.pod_readings {
            let text = format!("{IN_FLIGHT} {} → {} · {pod}", count(*first), count(*last));
            lines.push(Line::styled(
                truncate(&text, width),
                theme.base.add_modifier(Modifier::BOLD),
            ));
        }
    } else if run.readings > 0 || run.wait_timeout().is_some() {
        let mut text = format!(
            "{IN_FLIGHT} {} → {}",
            count(run.in_flight_first),
            count(run.in_flight_last)
        );
        if let (Some(limit), true) = (run.wait_timeout(), run.running()) {
            let waited = (now - run.step_started).max(0.0);
            text.push_str(&format!(" · waited {waited:.0}s of {limit:.0}s"));
        }
        lines.push(Line::styled(text, theme.base.add_modifier(Modifier::BOLD)));
    }
    if let Some(row) = run.row.filter(|_| !node_drain) {
        let engines = app.fleet.engines();
        let mine: Vec<_> = engines.iter().filter(|e| e.target == row).collect();
        if !mine.is_empty() {
            let sum = |f: fn(&kvtop_core::fleet::EngineState) -> Option<f64>| {
                mine.iter().filter_map(|e| f(e)).reduce(|a, b| a + b)
            };
            lines.push(Line::styled(
                format!(
                    "fleet row: running {} · waiting {}",
                    count(sum(|e| e.signals.running)),
                    count(sum(|e| e.signals.waiting))
                ),
                theme.dim,
            ));
        }
    }
    for note in &run.notes {
        for l in wrap(note, width) {
            lines.push(Line::styled(l, theme.dim));
        }
    }
    let elapsed = (now - run.started).max(0.0);
    match &run.outcome {
        None => lines.push(Line::styled(
            format!("under way for {elapsed:.0}s"),
            theme.dim,
        )),
        Some(RunOutcome::Done(done)) => {
            let what = if run.plan.dry_run {
                "dry run done: nothing was changed"
            } else {
                "done"
            };
            lines.push(Line::styled(what, theme.ok.add_modifier(Modifier::BOLD)));
            for line in done {
                for l in wrap(line, width) {
                    lines.push(Line::styled(l, theme.dim));
                }
            }
        }
        Some(RunOutcome::Failed(failure)) => {
            for l in wrap(&failure.message, width) {
                lines.push(Line::styled(l, theme.error.add_modifier(Modifier::BOLD)));
            }
        }
    }
    lines
}

/// Draw the panel over `area`.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, run: &ActionRun, now: Ts) {
    let theme = &app.theme;
    let width = area.width.saturating_sub(2).min(100);
    let text_width = usize::from(width.saturating_sub(4));
    let body = lines(app, run, text_width, now);
    let height = u16::try_from(body.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height.saturating_sub(2));
    let mut title = vec![Span::styled(
        format!(
            " {} {} {} · context {} ",
            run.plan.kind.name(),
            run.plan.kind.target_kind(),
            run.plan.target,
            run.plan.context
        ),
        theme.title,
    )];
    if run.plan.dry_run {
        title.push(Span::styled(
            format!("{} ", super::actions::DRY_RUN),
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    let hint = first_key(Context::ActionProgress, Action::HideProgress)
        .map(|k| {
            let word = if run.running() {
                " hide (the action goes on)"
            } else {
                " close"
            };
            Line::from(vec![
                Span::styled(key_label(k), theme.key),
                Span::styled(word, theme.dim),
            ])
        })
        .unwrap_or_default();
    let inner = super::overlay::overlay(buf, area, (width, height), theme, Line::from(title), hint);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    Paragraph::new(fit(
        body,
        run.plan.step_texts().len(),
        usize::from(inner.height),
    ))
    .render(inner, buf);
}

/// The lines that fit `height`: the steps first (where the action stands), then the newest of
/// the rest, the result last. Retry notes (a PodDisruptionBudget refusing evictions) can pile up
/// by the dozen; they give way, never the steps.
fn fit(body: Vec<Line<'static>>, steps: usize, height: usize) -> Vec<Line<'static>> {
    if body.len() <= height {
        return body;
    }
    // The last line (the result, or how long it has run) keeps its place even then.
    let reserved = usize::from(body.len() > steps && height > 0);
    let steps = steps.min(height - reserved);
    let tail = height - steps;
    let mut kept: Vec<Line<'static>> = Vec::with_capacity(height);
    let skip_to = body.len() - tail;
    for (i, line) in body.into_iter().enumerate() {
        if i < steps || i >= skip_to {
            kept.push(line);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn many_notes_give_way_to_the_steps_and_the_result() {
        let mut body: Vec<Line<'static>> =
            (1..=4).map(|i| Line::from(format!("step {i}"))).collect();
        body.extend((1..=30).map(|i| Line::from(format!("PDB refused, retry {i}"))));
        body.push(Line::from("under way for 31s"));
        let shown = texts(&fit(body.clone(), 4, 8));
        assert_eq!(
            shown,
            [
                "step 1",
                "step 2",
                "step 3",
                "step 4",
                "PDB refused, retry 28",
                "PDB refused, retry 29",
                "PDB refused, retry 30",
                "under way for 31s"
            ]
        );
        assert_eq!(
            texts(&fit(body, 4, 3)),
            ["step 1", "step 2", "under way for 31s"]
        );
    }

    #[test]
    fn a_short_panel_is_shown_whole_and_a_tiny_one_keeps_the_first_steps() {
        let body: Vec<Line<'static>> = (1..=3).map(|i| Line::from(format!("step {i}"))).collect();
        assert_eq!(texts(&fit(body.clone(), 3, 10)).len(), 3);
        assert_eq!(texts(&fit(body, 3, 2)), ["step 1", "step 2"]);
    }
}
