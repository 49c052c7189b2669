//! The action overlays: the menu of a pod's actions (`a`) with the RBAC preflight's verdicts,
//! and the plan screen: the exact API calls, the guards, the typed confirmation and the
//! [Cancel] [Run] buttons, Cancel focused until the operator moves it. Levels are marked in
//! words (`ok`, `REFUSED`, `denied`) and the focus with brackets, so `mono` reads the same.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::diagnostics::wrap;
use super::format::truncate;
use super::overlay::overlay;
use crate::actions::{ActionKind, OnTimeout};
use crate::app::App;
use crate::app::action_update::{RunGate, run_gate};
use crate::app::actions::{ActionMenu, EntryAccess, PlanButton, PlanScreen, PlanState};
use crate::app::keys::{Action, Context, first_key, key_label};
use crate::theme::Theme;

/// Widest the overlays get.
const MAX_WIDTH: u16 = 100;
pub(crate) const MENU_TITLE: &str = "Actions on";
pub(crate) const CHECKING: &str = "checking access…";
pub(crate) const DENIED: &str = "denied";
pub(crate) const STEPS_HEADING: &str = "API calls, in order";
pub(crate) const GUARDS_HEADING: &str = "Guards";
pub(crate) const GUARD_OK: &str = "ok     ";
pub(crate) const GUARD_REFUSED: &str = "REFUSED";
pub(crate) const DRY_RUN: &str = "DRY RUN";
pub(crate) const LOADING: &str = "reading the cluster and reviewing access…";
pub(crate) const TYPE_NAME: &str = "type the name to confirm:";
pub(crate) const MORE_BELOW: &str = "↓ more";

/// `Enter plan · Esc close`, from the key map.
fn hint_line(theme: &Theme, context: Context, hints: &[(Action, &str)]) -> Line<'static> {
    let mut spans = Vec::new();
    for (action, word) in hints {
        let Some(key) = first_key(context, *action) else {
            continue;
        };
        if !spans.is_empty() {
            spans.push(Span::styled(" · ", theme.dim));
        }
        spans.push(Span::styled(key_label(key), theme.key));
        spans.push(Span::styled(format!(" {word}"), theme.dim));
    }
    Line::from(spans)
}

/// Draw the action menu over `area`.
pub(crate) fn render_menu(buf: &mut Buffer, area: Rect, app: &App, menu: &ActionMenu) {
    let theme = &app.theme;
    let width = area.width.saturating_sub(4).min(72);
    let text_width = usize::from(width.saturating_sub(4));
    let mut lines: Vec<Line> = Vec::new();
    for (i, entry) in menu.entries.iter().enumerate() {
        let selected = i == menu.selected;
        let marker = if selected { "> " } else { "  " };
        let (suffix, style) = match &entry.access {
            EntryAccess::Denied(_) => (format!("  ({DENIED})"), theme.dim),
            EntryAccess::Checking => (String::new(), theme.base),
            EntryAccess::Allowed => (String::new(), theme.base),
            EntryAccess::Unknown(_) => ("  (access unknown)".to_owned(), theme.base),
        };
        let label = truncate(
            &entry.request.label(),
            text_width.saturating_sub(2 + suffix.chars().count()),
        );
        let style = if selected {
            style.patch(theme.selected).add_modifier(Modifier::BOLD)
        } else {
            style
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{marker}{label}"), style),
            Span::styled(suffix, theme.warn),
        ]));
    }
    lines.push(Line::raw(""));
    if menu
        .entries
        .iter()
        .any(|e| e.access == EntryAccess::Checking)
    {
        lines.push(Line::styled(CHECKING, theme.dim));
    }
    let why = menu
        .entries
        .get(menu.selected)
        .and_then(|e| match &e.access {
            EntryAccess::Denied(why) | EntryAccess::Unknown(why) => Some(why),
            _ => None,
        });
    if let Some(why) = why {
        for l in wrap(why, text_width) {
            lines.push(Line::styled(l, theme.warn));
        }
    }
    for note in &menu.notes {
        for l in wrap(note, text_width) {
            lines.push(Line::styled(l, theme.dim));
        }
    }
    let title = Line::styled(format!(" {MENU_TITLE} {} ", menu.subject), theme.title);
    let bottom = hint_line(
        theme,
        Context::ActionMenu,
        &[
            (Action::MenuChoose, "plan"),
            (Action::MenuDown, "move"),
            (Action::MenuClose, "close"),
        ],
    );
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let inner = overlay(
        buf,
        area,
        (width.min(MAX_WIDTH), height),
        theme,
        title,
        bottom,
    );
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    Paragraph::new(lines).render(inner, buf);
}

/// The plan's title: `drain pod NAME · context CTX · DRY RUN`.
fn plan_title(screen: &PlanScreen, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!(
            " {} · context {} ",
            screen.request.label(),
            screen.request.context
        ),
        theme.title,
    )];
    if screen.dry_run {
        spans.push(Span::styled(
            format!("{DRY_RUN} "),
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    Line::from(spans)
}

/// Numbered steps and guards, wrapped to `width` with a hanging indent.
fn plan_body(screen: &PlanScreen, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let plan = match &screen.plan {
        PlanState::Loading => return vec![Line::styled(LOADING, theme.dim)],
        PlanState::Failed(why) => {
            return wrap(why, width)
                .into_iter()
                .map(|l| Line::styled(l, theme.error))
                .collect();
        }
        PlanState::Ready(plan) => plan,
    };
    if let Some(ns) = &plan.namespace {
        lines.push(Line::styled(format!("namespace {ns}"), theme.dim));
    }
    lines.push(Line::styled(STEPS_HEADING, theme.title));
    for (i, text) in plan.step_texts().iter().enumerate() {
        let number = format!("{:>2}. ", i + 1);
        let indent = number.chars().count();
        for (j, part) in wrap(text, width.saturating_sub(indent))
            .into_iter()
            .enumerate()
        {
            let lead = if j == 0 {
                number.clone()
            } else {
                " ".repeat(indent)
            };
            lines.push(Line::from(vec![
                Span::styled(lead, theme.dim),
                Span::styled(part, theme.base),
            ]));
        }
    }
    lines.push(Line::styled(GUARDS_HEADING, theme.title));
    for guard in &plan.guards {
        let (mark, style) = if guard.passed {
            (GUARD_OK, theme.ok)
        } else {
            (GUARD_REFUSED, theme.crit.add_modifier(Modifier::BOLD))
        };
        let text = if !guard.passed && guard.overridable {
            let state = if screen.overriding {
                "overridden"
            } else {
                "Ctrl-O overrides it"
            };
            format!("{}: {} ({state})", guard.name, guard.reason)
        } else {
            format!("{}: {}", guard.name, guard.reason)
        };
        let indent = mark.chars().count() + 1;
        for (j, part) in wrap(&text, width.saturating_sub(indent))
            .into_iter()
            .enumerate()
        {
            let lead = if j == 0 {
                Span::styled(format!("{mark} "), style)
            } else {
                Span::raw(" ".repeat(indent))
            };
            lines.push(Line::from(vec![lead, Span::styled(part, theme.base)]));
        }
    }
    lines
}

/// The fixed lines under the body: the typed name, why Run is off, the buttons.
fn plan_controls(screen: &PlanScreen, app: &App, width: usize) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let gate = run_gate(screen, app);
    let mut lines = Vec::new();
    let wants_name = matches!(&screen.plan, PlanState::Ready(p) if p.requires_typed_name);
    if wants_name {
        lines.push(Line::from(vec![
            Span::styled(format!("{TYPE_NAME} "), theme.key),
            Span::styled(
                screen.typed.clone(),
                theme.base.add_modifier(Modifier::BOLD),
            ),
            Span::styled(" ", theme.base.add_modifier(Modifier::REVERSED)),
        ]));
    }
    let reason = match &gate {
        RunGate::Ready => None,
        RunGate::NotReady(_) => Some("Run waits for the plan".to_owned()),
        RunGate::Refused(reasons) => Some(format!("Run is refused: {}", reasons.join("; "))),
        RunGate::Blocked(why) => Some(format!("Run is off: {why}")),
        RunGate::NeedsName => Some(match &screen.plan {
            PlanState::Ready(plan) => format!("type {} to enable Run", plan.target),
            _ => "type the name to enable Run".to_owned(),
        }),
        RunGate::NeedsOverride(_) => {
            Some("a guard refuses: Ctrl-O overrides it, then type the name".to_owned())
        }
    };
    if screen.request.kind == ActionKind::DrainPod {
        let then = match screen.on_timeout {
            OnTimeout::Stop => "restore routing and stop",
            OnTimeout::Evict => "evict anyway",
        };
        lines.push(Line::styled(
            format!("still busy after the wait: {then} (Ctrl-E)"),
            theme.dim,
        ));
    }
    let message = screen.message.clone().or(reason);
    if let Some(message) = message {
        for l in wrap(&message, width).into_iter().take(3) {
            lines.push(Line::styled(l, theme.warn));
        }
    }
    let run_label = if screen.dry_run { "Dry run" } else { "Run" };
    let enabled = gate == RunGate::Ready;
    let button = |label: &str, focused: bool, enabled: bool| -> Span<'static> {
        let text = if focused {
            format!("[>{label}<]")
        } else {
            format!("[ {label} ]")
        };
        let mut style: Style = if enabled { theme.base } else { theme.dim };
        if focused {
            style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        }
        Span::styled(text, style)
    };
    let mut buttons = vec![
        button("Cancel", screen.focus == PlanButton::Cancel, true),
        Span::raw("   "),
        button(run_label, screen.focus == PlanButton::Run, enabled),
    ];
    if !enabled {
        buttons.push(Span::styled(" (off)", theme.dim));
    }
    lines.push(Line::from(buttons).centered());
    lines
}

/// Draw the plan screen over `area`.
pub(crate) fn render_plan(buf: &mut Buffer, area: Rect, app: &App, screen: &PlanScreen) {
    let theme = &app.theme;
    let width = area.width.saturating_sub(2).min(MAX_WIDTH);
    let text_width = usize::from(width.saturating_sub(4));
    let body = plan_body(screen, theme, text_width);
    let controls = plan_controls(screen, app, text_width);
    let wanted = body.len() + 1 + controls.len() + 2;
    let height = u16::try_from(wanted)
        .unwrap_or(u16::MAX)
        .min(area.height.saturating_sub(2));
    let bottom = hint_line(
        theme,
        Context::ActionPlan,
        &[
            (Action::PlanFocusNext, "focus"),
            (Action::PlanActivate, "press"),
            (Action::PlanCancel, "cancel"),
            (Action::PlanToggleDryRun, "dry run"),
        ],
    );
    let inner = overlay(
        buf,
        area,
        (width.min(MAX_WIDTH), height),
        theme,
        plan_title(screen, theme),
        bottom,
    );
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let controls_height = u16::try_from(controls.len())
        .unwrap_or(u16::MAX)
        .min(inner.height);
    let body_height = usize::from(inner.height - controls_height).saturating_sub(1);
    let last_start = body.len().saturating_sub(body_height);
    let start = screen.scroll.min(last_start);
    let more = start < last_start;
    let mut shown: Vec<Line> = body.into_iter().skip(start).take(body_height).collect();
    if more && body_height > 0 {
        shown.pop();
        shown.push(Line::styled(MORE_BELOW, theme.dim));
    }
    Paragraph::new(shown).render(
        Rect::new(
            inner.x,
            inner.y,
            inner.width,
            inner.height - controls_height,
        ),
        buf,
    );
    Paragraph::new(controls).render(
        Rect::new(
            inner.x,
            inner.bottom() - controls_height,
            inner.width,
            controls_height,
        ),
        buf,
    );
}
