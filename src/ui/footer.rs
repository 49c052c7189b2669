//! The one-line footer: the filter prompt while it is edited, else a transient notice or the
//! most useful keys, and on the right the sort, filter and chart range in force.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::Span;

use super::line::{self, Segment};
use super::text;
use crate::app::keys::{Action, Context, first_key, key_label};
use crate::app::{App, NoticeKind, View};
use crate::theme::Theme;
use kvtop_core::fleet::Ts;

/// Draw the footer.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, now: Ts) {
    let theme = &app.theme;
    let shown = app.visible_rows().len();
    let total = app.engine_rows();
    let mut segments = Vec::new();

    if app.filter_editing() {
        segments.push(Segment::left(
            0,
            vec![
                Span::styled(text::FILTER_PROMPT, theme.key),
                Span::styled(app.filter.clone(), theme.base),
                Span::styled(" ", theme.base.add_modifier(Modifier::REVERSED)),
            ],
        ));
        segments.push(Segment::left(
            1,
            vec![Span::styled(text::shown_of(shown, total), theme.dim)],
        ));
        segments.extend(hints(theme, Context::Filter, &text::FILTER_HINTS, 2, true));
    } else {
        // A running action whose panel is hidden stays in sight.
        if let Some(run) = app.actions.running().filter(|_| !app.progress_visible()) {
            segments.push(Segment::left(
                0,
                vec![Span::styled(
                    run.status_line(),
                    theme.info.add_modifier(Modifier::BOLD),
                )],
            ));
        }
        match app.notice.as_ref().filter(|n| now < n.until) {
            Some(notice) => segments.push(Segment::left(
                0,
                vec![Span::styled(
                    text::notice(&notice.kind),
                    match notice.kind {
                        NoticeKind::Problem(_) => theme.warn,
                        NoticeKind::ActionFailed(_) => theme.error,
                        _ => theme.info,
                    },
                )],
            )),
            None => segments.extend(match app.view {
                View::Fleet | View::Nodes => {
                    let mut fleet = hints(theme, Context::Fleet, &text::FOOTER_HINTS, 2, false);
                    if app.pod_actions_offered() {
                        let pod = hints(theme, Context::Pod, &text::POD_HINTS, 3, false);
                        let at = fleet.len().min(1);
                        fleet.splice(at..at, pod);
                    }
                    fleet
                }
                View::Diagnostics => {
                    let mut diag = hints(theme, Context::Views, &text::DIAGNOSTICS_HINTS, 2, false);
                    if app.pod_actions_offered() {
                        let pod = hints(theme, Context::Pod, &text::POD_HINTS, 3, false);
                        let at = diag.len().min(1);
                        diag.splice(at..at, pod);
                    }
                    diag
                }
                View::Routing => hints(theme, Context::Views, &text::ROUTING_HINTS, 2, false),
            }),
        }
        if !app.filter.is_empty() {
            segments.push(Segment::right(
                1,
                vec![Span::styled(
                    format!(
                        "{} {}",
                        text::filter_state(&app.filter),
                        text::shown_of(shown, total)
                    ),
                    theme.warn,
                )],
            ));
        }
    }
    let sort_notice_shown = !app.filter_editing()
        && app
            .notice
            .as_ref()
            .is_some_and(|n| now < n.until && matches!(n.kind, NoticeKind::Sort { .. }));
    if !sort_notice_shown {
        segments.push(Segment::right(
            20,
            vec![Span::styled(
                text::sort_state(app.sort, app.sort_descending),
                theme.dim,
            )],
        ));
    }
    segments.push(Segment::right(
        21,
        vec![Span::styled(text::range(app.range.secs()), theme.dim)],
    ));
    line::render(buf, area, segments);
}

/// `? help  / filter  …` from the key map; later hints are dropped first.
fn hints<'a>(
    theme: &Theme,
    context: Context,
    hints: &[(Action, &'a str)],
    first_priority: u8,
    right: bool,
) -> Vec<Segment<'a>> {
    hints
        .iter()
        .zip(first_priority..)
        .filter_map(|((action, word), priority)| {
            let key = first_key(context, *action)?;
            let spans = vec![
                Span::styled(key_label(key), theme.key),
                Span::styled(format!(" {word}"), theme.dim),
            ];
            Some(if right {
                Segment::right(priority, spans)
            } else {
                Segment::left(priority, spans)
            })
        })
        .collect()
}
