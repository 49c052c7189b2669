//! The key map: one table of (keys, context, action, description). `update` dispatches through it
//! and the help overlay is generated from it, so the two can never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// The fleet view with no prompt or overlay open.
    Fleet,
    /// The diagnostics, routing or GPU node view. Keys not bound here act as in the fleet
    /// view (quit, help, moving, freeze, the quantile window, switching views); moving keys
    /// move through the view shown.
    Views,
    /// The filter prompt is being edited.
    Filter,
    /// The help overlay is open.
    Help,
    /// Everywhere, before the context's own bindings.
    Anywhere,
    /// The fleet and diagnostics views when the selected engine is a discovered Kubernetes pod
    /// whose context allows changes. Absent in read-only mode: neither in effect nor in help.
    Pod,
    /// The action menu (`a`) is open.
    ActionMenu,
    /// The plan screen of an action is open.
    ActionPlan,
    /// The progress panel of the running (or last) action is shown.
    ActionProgress,
    /// The story pager of an engine is open.
    Story,
    /// The story pager's search is being typed.
    StorySearch,
}

impl Context {
    /// Contexts in the order the help overlay lists them from the views. The help's own keys
    /// (close, turn the page) are on its bottom line rather than in a section of their own.
    pub(crate) const HELP_ORDER: [Context; 5] = [
        Context::Fleet,
        Context::Pod,
        Context::Views,
        Context::Filter,
        Context::Anywhere,
    ];
    /// Contexts the help overlay lists when opened over an action's menu, plan or progress.
    pub(crate) const ACTION_HELP_ORDER: [Context; 4] = [
        Context::ActionMenu,
        Context::ActionPlan,
        Context::ActionProgress,
        Context::Anywhere,
    ];

    /// The contexts of the action menu, the plan screen and the progress panel.
    pub(crate) fn is_action_modal(self) -> bool {
        matches!(
            self,
            Context::ActionMenu | Context::ActionPlan | Context::ActionProgress
        )
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    ToggleHelp,
    CloseHelp,
    /// The help's next (or previous) page, where its columns do not all fit.
    HelpNextPage,
    HelpPreviousPage,
    SelectDown,
    SelectUp,
    SelectFirst,
    SelectLast,
    PageDown,
    PageUp,
    CycleSort,
    ReverseSort,
    OpenFilter,
    /// A printable character typed into the filter prompt.
    FilterInput,
    FilterBackspace,
    KeepFilter,
    ClearFilter,
    CycleWindow,
    /// Show the fleet table's next set of value columns.
    CycleColumns,
    ZoomIn,
    ZoomOut,
    ToggleFreeze,
    /// Pause or resume a replay's clock.
    TogglePause,
    /// Move the time cursor back or forward: a small step, or a large one with the shifted
    /// key (`{`, `}`).
    CursorBack,
    CursorForward,
    /// Put the time cursor where the selected finding started.
    CursorToFinding,
    ToggleDetail,
    /// Open or close the Deployments view (Kubernetes).
    ToggleDeployments,
    /// Show the diagnostics view (findings with evidence).
    OpenDiagnostics,
    /// Show the routing explainer.
    OpenRouting,
    /// Back to the fleet view.
    ShowFleet,
    /// Select the selected finding's engine in the fleet view.
    JumpToEngine,
    /// Switch between the fleet and the GPU node view.
    ToggleNodes,
    /// Open the action menu of the selected engine's pod.
    OpenActionMenu,
    /// Straight to the plan screen: drain the selected engine's pod.
    PlanDrainPod,
    /// Straight to the plan screen: restart the selected engine's pod.
    PlanRestartPod,
    MenuDown,
    MenuUp,
    /// Open the plan screen of the menu's selected entry.
    MenuChoose,
    MenuClose,
    /// Move the plan screen's focus to the next / previous button.
    PlanFocusNext,
    PlanFocusPrev,
    /// Press the focused button.
    PlanActivate,
    /// Close the plan screen; nothing is sent.
    PlanCancel,
    /// Switch the plan between a real and a server-side dry run.
    PlanToggleDryRun,
    /// Copy the plan (its calls and guards) to the clipboard (OSC 52).
    PlanCopy,
    /// Override the plan's failed guards that may be overridden (a gesture of its own: typing
    /// the name only confirms).
    PlanToggleOverride,
    /// Switch what a drain does when its wait ends with requests in flight: stop or evict.
    PlanToggleOnTimeout,
    PlanScrollDown,
    PlanScrollUp,
    /// A character of the target's name typed to confirm.
    PlanInput,
    PlanBackspace,
    /// Hide the progress panel (the action goes on) or close it once finished.
    HideProgress,
    /// Acknowledge the incident (the selected one, or the strip's worst), or take it back.
    AckIncident,
    /// Snooze the incident 15m, then 1h, 4h, then lift the snooze.
    SnoozeIncident,
    /// Copy the selected incident to the clipboard (OSC 52).
    CopyIncident,
    /// Group the fleet table by model, a summary line per model, or not.
    ToggleModelGroups,
    /// Write what the console has seen (signals, incidents, logs, actions) to the state
    /// directory as Markdown and JSON.
    WriteSnapshot,
    /// Open the selected engine's story: arguments, cache config, events, the whole log.
    OpenStory,
    StoryDown,
    StoryUp,
    StoryPageDown,
    StoryPageUp,
    StoryTop,
    /// To the end, following new log lines.
    StoryBottom,
    StorySearch,
    StoryNext,
    StoryPrevious,
    /// Copy the current match (or the top line) to the clipboard (OSC 52).
    StoryCopy,
    CloseStory,
    /// A character of the story search.
    StorySearchInput,
    StorySearchBackspace,
    /// Keep the search and go back to paging.
    StorySearchKeep,
    StorySearchCancel,
}

/// One key of a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A key pressed without Ctrl or Alt (Shift is part of the character).
    Plain(KeyCode),
    /// Ctrl + a character.
    Ctrl(char),
    /// Any printable character without Ctrl or Alt.
    AnyChar,
}

impl Key {
    /// Whether a key event is this key.
    pub fn matches(self, event: &KeyEvent) -> bool {
        let ctrl_or_alt = event
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match self {
            // Shift is already part of the character (`G`), so it is not compared.
            Key::Plain(code) => !ctrl_or_alt && code == event.code,
            Key::Ctrl(c) => {
                event.modifiers.contains(KeyModifiers::CONTROL)
                    && matches!(event.code, KeyCode::Char(e) if e.eq_ignore_ascii_case(&c))
            }
            Key::AnyChar => {
                !ctrl_or_alt && matches!(event.code, KeyCode::Char(c) if !c.is_control())
            }
        }
    }
}

/// One row of the key map.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    pub context: Context,
    pub action: Action,
    /// Shown in the help overlay.
    pub description: &'static str,
}

const fn plain(c: char) -> Key {
    Key::Plain(KeyCode::Char(c))
}

const fn bind(
    keys: &'static [Key],
    context: Context,
    action: Action,
    description: &'static str,
) -> Binding {
    Binding {
        keys,
        context,
        action,
        description,
    }
}

/// The key map. Within a context the first matching row wins; `Anywhere` rows are tried first.
pub const KEYMAP: &[Binding] = &[
    bind(&[Key::Ctrl('c')], Context::Anywhere, Action::Quit, "quit"),
    // Fleet view.
    bind(&[plain('q')], Context::Fleet, Action::Quit, "quit"),
    bind(
        &[plain('?')],
        Context::Fleet,
        Action::ToggleHelp,
        "this help",
    ),
    bind(
        &[plain('j'), Key::Plain(KeyCode::Down)],
        Context::Fleet,
        Action::SelectDown,
        "next / previous engine",
    ),
    bind(
        &[plain('k'), Key::Plain(KeyCode::Up)],
        Context::Fleet,
        Action::SelectUp,
        "",
    ),
    bind(
        &[plain('g'), Key::Plain(KeyCode::Home)],
        Context::Fleet,
        Action::SelectFirst,
        "first engine",
    ),
    bind(
        &[plain('G'), Key::Plain(KeyCode::End)],
        Context::Fleet,
        Action::SelectLast,
        "last engine",
    ),
    bind(
        &[Key::Plain(KeyCode::PageDown)],
        Context::Fleet,
        Action::PageDown,
        "page down / up",
    ),
    bind(
        &[Key::Plain(KeyCode::PageUp)],
        Context::Fleet,
        Action::PageUp,
        "",
    ),
    bind(
        &[plain('s')],
        Context::Fleet,
        Action::CycleSort,
        "sort: next / reverse",
    ),
    bind(&[plain('S')], Context::Fleet, Action::ReverseSort, ""),
    bind(
        &[plain('/')],
        Context::Fleet,
        Action::OpenFilter,
        "filter rows",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc)],
        Context::Fleet,
        Action::ClearFilter,
        "clear the filter",
    ),
    bind(
        &[plain('w')],
        Context::Fleet,
        Action::CycleWindow,
        "quantile window 15s/1m/5m",
    ),
    bind(
        &[plain('c')],
        Context::Fleet,
        Action::CycleColumns,
        "next set of columns",
    ),
    bind(
        &[plain('+'), plain('=')],
        Context::Fleet,
        Action::ZoomIn,
        "chart zoom in / out",
    ),
    bind(&[plain('-')], Context::Fleet, Action::ZoomOut, ""),
    bind(
        &[plain('f')],
        Context::Fleet,
        Action::ToggleFreeze,
        "freeze / unfreeze",
    ),
    bind(
        &[plain('p')],
        Context::Fleet,
        Action::TogglePause,
        "pause / resume a replay",
    ),
    bind(
        &[plain('['), plain('{')],
        Context::Fleet,
        Action::CursorBack,
        "time cursor −/+ 10s, 1m",
    ),
    bind(
        &[plain(']'), plain('}')],
        Context::Fleet,
        Action::CursorForward,
        "",
    ),
    bind(
        &[Key::Plain(KeyCode::Enter), Key::Plain(KeyCode::Tab)],
        Context::Fleet,
        Action::ToggleDetail,
        "larger detail pane",
    ),
    bind(
        &[plain('d')],
        Context::Fleet,
        Action::ToggleDeployments,
        "Deployments, HPAs, PDBs",
    ),
    bind(
        &[plain('m')],
        Context::Fleet,
        Action::ToggleModelGroups,
        "group by model",
    ),
    bind(
        &[plain('e')],
        Context::Fleet,
        Action::WriteSnapshot,
        "write a snapshot file",
    ),
    bind(
        &[plain('l')],
        Context::Fleet,
        Action::OpenStory,
        "story: args, events, log",
    ),
    // The story pager.
    bind(
        &[plain('j'), Key::Plain(KeyCode::Down)],
        Context::Story,
        Action::StoryDown,
        "scroll down",
    ),
    bind(
        &[plain('k'), Key::Plain(KeyCode::Up)],
        Context::Story,
        Action::StoryUp,
        "scroll up",
    ),
    bind(
        &[Key::Plain(KeyCode::PageDown), plain(' ')],
        Context::Story,
        Action::StoryPageDown,
        "page down",
    ),
    bind(
        &[Key::Plain(KeyCode::PageUp), plain('b')],
        Context::Story,
        Action::StoryPageUp,
        "page up",
    ),
    bind(
        &[plain('g'), Key::Plain(KeyCode::Home)],
        Context::Story,
        Action::StoryTop,
        "top",
    ),
    bind(
        &[plain('G'), Key::Plain(KeyCode::End)],
        Context::Story,
        Action::StoryBottom,
        "end, following new lines",
    ),
    bind(&[plain('/')], Context::Story, Action::StorySearch, "search"),
    bind(
        &[plain('?')],
        Context::Story,
        Action::ToggleHelp,
        "this help",
    ),
    bind(
        &[plain('y')],
        Context::Story,
        Action::StoryCopy,
        "copy the line (OSC 52)",
    ),
    bind(
        &[plain('n')],
        Context::Story,
        Action::StoryNext,
        "next match",
    ),
    bind(
        &[plain('N')],
        Context::Story,
        Action::StoryPrevious,
        "previous match",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc), plain('q'), plain('l')],
        Context::Story,
        Action::CloseStory,
        "close",
    ),
    bind(
        &[Key::Plain(KeyCode::Enter)],
        Context::StorySearch,
        Action::StorySearchKeep,
        "keep the search",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc)],
        Context::StorySearch,
        Action::StorySearchCancel,
        "drop the search",
    ),
    bind(
        &[Key::Plain(KeyCode::Backspace)],
        Context::StorySearch,
        Action::StorySearchBackspace,
        "delete a character",
    ),
    bind(
        &[Key::AnyChar],
        Context::StorySearch,
        Action::StorySearchInput,
        "text to find",
    ),
    bind(
        &[plain('x')],
        Context::Fleet,
        Action::OpenDiagnostics,
        "findings and evidence",
    ),
    bind(
        &[plain('r')],
        Context::Fleet,
        Action::OpenRouting,
        "routing explainer",
    ),
    bind(
        &[plain('n')],
        Context::Fleet,
        Action::ToggleNodes,
        "GPUs per node",
    ),
    // On a Kubernetes pod, in the fleet and diagnostics views.
    bind(
        &[plain('a')],
        Context::Pod,
        Action::OpenActionMenu,
        "actions (drain, restart…)",
    ),
    bind(
        &[plain('D')],
        Context::Pod,
        Action::PlanDrainPod,
        "drain pod (plan first)",
    ),
    bind(
        &[plain('R')],
        Context::Pod,
        Action::PlanRestartPod,
        "restart pod (plan first)",
    ),
    // Diagnostics, routing and node views (other keys as in the fleet view).
    bind(
        &[Key::Plain(KeyCode::Enter)],
        Context::Views,
        Action::JumpToEngine,
        "show the finding's engine",
    ),
    bind(
        &[plain('t')],
        Context::Views,
        Action::CursorToFinding,
        "time cursor to its start",
    ),
    bind(
        &[Key::Plain(KeyCode::Tab), Key::Plain(KeyCode::Esc)],
        Context::Views,
        Action::ShowFleet,
        "back to the fleet",
    ),
    bind(
        &[plain('A')],
        Context::Views,
        Action::AckIncident,
        "ack / un-ack incident",
    ),
    bind(
        &[plain('z')],
        Context::Views,
        Action::SnoozeIncident,
        "snooze 15m/1h/4h/off",
    ),
    bind(
        &[plain('y')],
        Context::Views,
        Action::CopyIncident,
        "copy incident (OSC 52)",
    ),
    // Filter prompt.
    bind(
        &[Key::Plain(KeyCode::Enter)],
        Context::Filter,
        Action::KeepFilter,
        "keep the filter",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc)],
        Context::Filter,
        Action::ClearFilter,
        "clear the filter",
    ),
    bind(
        &[Key::Plain(KeyCode::Backspace)],
        Context::Filter,
        Action::FilterBackspace,
        "delete a character",
    ),
    bind(
        &[Key::AnyChar],
        Context::Filter,
        Action::FilterInput,
        "name, model or status",
    ),
    // Action menu.
    bind(
        &[plain('j'), Key::Plain(KeyCode::Down)],
        Context::ActionMenu,
        Action::MenuDown,
        "next action",
    ),
    bind(
        &[plain('k'), Key::Plain(KeyCode::Up)],
        Context::ActionMenu,
        Action::MenuUp,
        "previous action",
    ),
    bind(
        &[Key::Plain(KeyCode::Enter)],
        Context::ActionMenu,
        Action::MenuChoose,
        "plan the action",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc), plain('a'), plain('q')],
        Context::ActionMenu,
        Action::MenuClose,
        "close the menu",
    ),
    bind(
        &[plain('?')],
        Context::ActionMenu,
        Action::ToggleHelp,
        "these keys",
    ),
    // Plan screen.
    bind(
        &[Key::Plain(KeyCode::Tab), Key::Plain(KeyCode::Right)],
        Context::ActionPlan,
        Action::PlanFocusNext,
        "next button",
    ),
    bind(
        &[Key::Plain(KeyCode::Left)],
        Context::ActionPlan,
        Action::PlanFocusPrev,
        "previous button",
    ),
    bind(
        &[Key::Plain(KeyCode::Enter)],
        Context::ActionPlan,
        Action::PlanActivate,
        "press the focused button",
    ),
    bind(
        &[Key::Plain(KeyCode::Esc)],
        Context::ActionPlan,
        Action::PlanCancel,
        "cancel: nothing is sent",
    ),
    bind(
        &[Key::Ctrl('d')],
        Context::ActionPlan,
        Action::PlanToggleDryRun,
        "server-side dry run on/off",
    ),
    bind(
        &[Key::Ctrl('y')],
        Context::ActionPlan,
        Action::PlanCopy,
        "copy the plan (OSC 52)",
    ),
    bind(
        &[Key::Ctrl('o')],
        Context::ActionPlan,
        Action::PlanToggleOverride,
        "override guards on/off",
    ),
    bind(
        &[Key::Ctrl('e')],
        Context::ActionPlan,
        Action::PlanToggleOnTimeout,
        "at timeout: stop / evict",
    ),
    bind(
        &[Key::Plain(KeyCode::Down), Key::Plain(KeyCode::PageDown)],
        Context::ActionPlan,
        Action::PlanScrollDown,
        "scroll the plan",
    ),
    bind(
        &[Key::Plain(KeyCode::Up), Key::Plain(KeyCode::PageUp)],
        Context::ActionPlan,
        Action::PlanScrollUp,
        "scroll back",
    ),
    bind(
        &[plain('?')],
        Context::ActionPlan,
        Action::ToggleHelp,
        "these keys",
    ),
    bind(
        &[Key::Plain(KeyCode::Backspace)],
        Context::ActionPlan,
        Action::PlanBackspace,
        "delete a character",
    ),
    bind(
        &[Key::AnyChar],
        Context::ActionPlan,
        Action::PlanInput,
        "type the target's name",
    ),
    // Progress panel. `q` quits as the footer under it says (as Ctrl-C does; a running action
    // is interrupted and audited).
    bind(&[plain('q')], Context::ActionProgress, Action::Quit, "quit"),
    bind(
        &[Key::Plain(KeyCode::Esc), Key::Plain(KeyCode::Enter)],
        Context::ActionProgress,
        Action::HideProgress,
        "hide (the action goes on)",
    ),
    bind(
        &[plain('?')],
        Context::ActionProgress,
        Action::ToggleHelp,
        "these keys",
    ),
    // Help overlay.
    bind(
        &[plain('?'), Key::Plain(KeyCode::Esc), plain('q')],
        Context::Help,
        Action::CloseHelp,
        "close the help",
    ),
    bind(
        &[Key::Plain(KeyCode::Right)],
        Context::Help,
        Action::HelpNextPage,
        "next / previous page of keys",
    ),
    bind(
        &[Key::Plain(KeyCode::Left)],
        Context::Help,
        Action::HelpPreviousPage,
        "",
    ),
];

/// The context's own bindings and the ones it falls back to, in lookup order: `Anywhere`
/// first, then the context, then (for the diagnostics and routing views) the fleet view's, then
/// with `pod_actions` the pod's actions.
fn lookup_chain(context: Context, pod_actions: bool) -> impl Iterator<Item = Context> {
    let fallback = (context == Context::Views).then_some(Context::Fleet);
    let pod =
        (pod_actions && matches!(context, Context::Fleet | Context::Views)).then_some(Context::Pod);
    [Some(Context::Anywhere), Some(context), fallback, pod]
        .into_iter()
        .flatten()
}

#[cfg(test)]
/// The action a key event triggers in `context`, if any, without the pod's actions. Key
/// releases trigger nothing.
pub(crate) fn lookup(context: Context, event: &KeyEvent) -> Option<Action> {
    lookup_with(context, event, false)
}

/// [`lookup`]; with `pod_actions` the [`Context::Pod`] bindings are in effect too.
pub(crate) fn lookup_with(context: Context, event: &KeyEvent, pod_actions: bool) -> Option<Action> {
    if event.kind == KeyEventKind::Release {
        return None;
    }
    lookup_chain(context, pod_actions).find_map(|ctx| {
        KEYMAP
            .iter()
            .filter(|b| b.context == ctx)
            .find(|b| b.keys.iter().any(|k| k.matches(event)))
            .map(|b| b.action)
    })
}

/// How a key is written in the help overlay and the footer.
pub(crate) fn key_label(key: Key) -> String {
    match key {
        Key::Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
        Key::AnyChar => "a-z…".to_string(),
        Key::Plain(code) => match code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Down => "↓".to_string(),
            KeyCode::Up => "↑".to_string(),
            KeyCode::Left => "←".to_string(),
            KeyCode::Right => "→".to_string(),
            KeyCode::Home => "Home".to_string(),
            KeyCode::End => "End".to_string(),
            KeyCode::PageUp => "PgUp".to_string(),
            KeyCode::PageDown => "PgDn".to_string(),
            KeyCode::Enter => "Enter".to_string(),
            KeyCode::Tab => "Tab".to_string(),
            KeyCode::Esc => "Esc".to_string(),
            KeyCode::Backspace => "Bksp".to_string(),
            KeyCode::BackTab => "S-Tab".to_string(),
            other => format!("{other:?}"),
        },
    }
}

/// The keys of a binding, as shown in the help: `j ↓`.
pub(crate) fn binding_label(binding: &Binding) -> String {
    binding
        .keys
        .iter()
        .map(|k| key_label(*k))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first key bound to `action` in `context`, else in the contexts it falls back to (the
/// context's own key first: `q` rather than Ctrl-C), for hints such as the footer's.
pub(crate) fn first_key(context: Context, action: Action) -> Option<Key> {
    let fallback = (context == Context::Views).then_some(Context::Fleet);
    [Some(context), fallback, Some(Context::Anywhere)]
        .into_iter()
        .flatten()
        .find_map(|ctx| {
            KEYMAP
                .iter()
                .find(|b| b.context == ctx && b.action == action)
                .and_then(|b| b.keys.first().copied())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn q_quits_with_the_progress_panel_up() {
        assert_eq!(
            lookup(Context::ActionProgress, &press(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
    }

    #[test]
    fn letters_dispatch_in_fleet_context() {
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Char('s'))),
            Some(Action::CycleSort)
        );
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Down)),
            Some(Action::SelectDown)
        );
        assert_eq!(lookup(Context::Fleet, &press(KeyCode::Char('z'))), None);
    }

    #[test]
    fn shifted_letters_match_with_or_without_the_shift_flag() {
        let with_shift = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(
            lookup(Context::Fleet, &with_shift),
            Some(Action::SelectLast)
        );
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Char('S'))),
            Some(Action::ReverseSort)
        );
    }

    #[test]
    fn ctrl_c_quits_everywhere_but_plain_c_is_text_in_the_prompt() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for ctx in Context::HELP_ORDER {
            assert_eq!(lookup(ctx, &ctrl_c), Some(Action::Quit), "{ctx:?}");
        }
        assert_eq!(
            lookup(Context::Filter, &press(KeyCode::Char('c'))),
            Some(Action::FilterInput)
        );
        assert_eq!(
            lookup(Context::Filter, &press(KeyCode::Char('q'))),
            Some(Action::FilterInput)
        );
    }

    #[test]
    fn esc_means_the_context_s_own_thing() {
        assert_eq!(
            lookup(Context::Filter, &press(KeyCode::Esc)),
            Some(Action::ClearFilter)
        );
        assert_eq!(
            lookup(Context::Help, &press(KeyCode::Esc)),
            Some(Action::CloseHelp)
        );
        assert_eq!(lookup(Context::Help, &press(KeyCode::Char('j'))), None);
    }

    #[test]
    fn the_views_fall_back_to_fleet_keys_but_keep_their_own() {
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Char('f'))),
            Some(Action::ToggleFreeze)
        );
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Enter)),
            Some(Action::JumpToEngine)
        );
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Esc)),
            Some(Action::ShowFleet)
        );
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Tab)),
            Some(Action::ShowFleet)
        );
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Char('x'))),
            Some(Action::OpenDiagnostics)
        );
        assert_eq!(
            lookup(Context::Views, &press(KeyCode::Char('r'))),
            Some(Action::OpenRouting)
        );
        // The fleet keeps Enter and Esc for itself; the help does not fall back.
        assert_eq!(
            lookup(Context::Fleet, &press(KeyCode::Enter)),
            Some(Action::ToggleDetail)
        );
        assert_eq!(lookup(Context::Help, &press(KeyCode::Char('x'))), None);
        assert_eq!(
            first_key(Context::Views, Action::Quit),
            Some(Key::Plain(KeyCode::Char('q')))
        );
    }

    #[test]
    fn pod_actions_exist_only_when_offered() {
        let a = press(KeyCode::Char('a'));
        let d = press(KeyCode::Char('D'));
        assert_eq!(lookup(Context::Fleet, &a), None);
        assert_eq!(lookup_with(Context::Fleet, &a, false), None);
        assert_eq!(lookup_with(Context::Views, &d, false), None);
        assert_eq!(
            lookup_with(Context::Fleet, &a, true),
            Some(Action::OpenActionMenu)
        );
        assert_eq!(
            lookup_with(Context::Views, &d, true),
            Some(Action::PlanDrainPod)
        );
        assert_eq!(
            lookup_with(Context::Fleet, &press(KeyCode::Char('R')), true),
            Some(Action::PlanRestartPod)
        );
        // The filter prompt and the help never see them.
        assert_eq!(
            lookup_with(Context::Filter, &a, true),
            Some(Action::FilterInput)
        );
        assert_eq!(lookup_with(Context::Help, &d, true), None);
    }

    #[test]
    fn the_plan_screen_types_letters_but_keeps_its_keys() {
        assert_eq!(
            lookup(Context::ActionPlan, &press(KeyCode::Char('q'))),
            Some(Action::PlanInput)
        );
        assert_eq!(
            lookup(Context::ActionPlan, &press(KeyCode::Enter)),
            Some(Action::PlanActivate)
        );
        assert_eq!(
            lookup(Context::ActionPlan, &press(KeyCode::Esc)),
            Some(Action::PlanCancel)
        );
        let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(
            lookup(Context::ActionPlan, &ctrl_d),
            Some(Action::PlanToggleDryRun)
        );
        assert_eq!(
            lookup(Context::ActionMenu, &press(KeyCode::Char('x'))),
            None,
            "the menu is modal"
        );
    }

    #[test]
    fn releases_do_nothing() {
        let release = KeyEvent::new_with_kind(
            KeyCode::Char('q'),
            KeyModifiers::NONE,
            KeyEventKind::Release,
        );
        assert_eq!(lookup(Context::Fleet, &release), None);
    }

    #[test]
    fn every_action_but_input_has_a_visible_key_and_a_description() {
        for (i, b) in KEYMAP.iter().enumerate() {
            assert!(!b.keys.is_empty(), "{:?} has no key", b.action);
            // A binding without a description shares the help line of the one before it (its
            // opposite, same context), whose description says both.
            let shares = i
                .checked_sub(1)
                .and_then(|p| KEYMAP.get(p))
                .is_some_and(|p| p.context == b.context && !p.description.is_empty());
            assert!(
                !b.description.is_empty() || shares,
                "{:?} has no description",
                b.action
            );
        }
        assert_eq!(binding_label(&KEYMAP[3]), "j ↓");
        assert_eq!(key_label(Key::Ctrl('c')), "Ctrl-C");
    }

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        for (i, a) in KEYMAP.iter().enumerate() {
            for b in KEYMAP.iter().skip(i + 1).filter(|b| b.context == a.context) {
                for k in a.keys {
                    assert!(
                        !b.keys.contains(k) || *k == Key::AnyChar,
                        "{k:?} bound twice in {:?}",
                        a.context
                    );
                }
            }
        }
    }
}
