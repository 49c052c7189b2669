//! Who has the keyboard: the view shown, or one of the prompts and overlays stacked above it.
//!
//! The stack is the one place that says which overlay takes the keys: the top one does, and
//! closing it hands the keys back to the one below (the help closes back to the plan screen it
//! was opened over, the plan screen back to the view). What an overlay shows lives with its
//! owner (`App::filter`, `ActionsView::menu`, `plan` and `run`); the stack only orders them.

use super::keys::Context;
use super::state::View;

/// A prompt or overlay that takes the keys while it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The filter prompt is being edited.
    Filter,
    /// The action menu of a pod (`a`).
    ActionMenu,
    /// The plan screen of an action.
    ActionPlan,
    /// The progress panel of the running (or last) action.
    ActionProgress,
    /// The story pager of an engine (`l`).
    Story,
    /// The story pager's search prompt.
    StorySearch,
    /// The help overlay, listing the keys of the mode below it.
    Help,
}

impl Mode {
    /// The part of the key map in effect in this mode.
    pub fn context(self) -> Context {
        match self {
            Mode::Filter => Context::Filter,
            Mode::ActionMenu => Context::ActionMenu,
            Mode::ActionPlan => Context::ActionPlan,
            Mode::ActionProgress => Context::ActionProgress,
            Mode::Story => Context::Story,
            Mode::StorySearch => Context::StorySearch,
            Mode::Help => Context::Help,
        }
    }
}

/// The open overlays, bottom first; empty while the view has the keys. Each mode is on the
/// stack at most once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Modes(Vec<Mode>);

impl Modes {
    /// The mode that has the keys, `None` for the view.
    pub fn top(&self) -> Option<Mode> {
        self.0.last().copied()
    }

    /// The mode under the help overlay (the top one when the help is closed).
    pub(crate) fn under_help(&self) -> Option<Mode> {
        self.0.iter().rev().copied().find(|m| *m != Mode::Help)
    }

    /// Whether `mode` is open, on top or under another.
    pub(crate) fn is_open(&self, mode: Mode) -> bool {
        self.0.contains(&mode)
    }

    /// Open `mode` on top (moving it there if it was open below).
    pub fn open(&mut self, mode: Mode) {
        self.0.retain(|m| *m != mode);
        self.0.push(mode);
    }

    /// Close `mode` wherever it is; true if it was open.
    pub fn close(&mut self, mode: Mode) -> bool {
        let before = self.0.len();
        self.0.retain(|m| *m != mode);
        self.0.len() != before
    }

    /// Put `to` where `from` was (on top if `from` was not open): one overlay leads to the next
    /// (the menu to its plan screen, the plan screen to the progress panel).
    pub fn replace(&mut self, from: Mode, to: Mode) {
        self.0.retain(|m| *m != to);
        match self.0.iter_mut().find(|m| **m == from) {
            Some(slot) => *slot = to,
            None => self.0.push(to),
        }
    }

    /// The part of the key map in effect: the top mode's, else the view's.
    pub fn context(&self, view: View) -> Context {
        self.top().map_or_else(|| view_context(view), Mode::context)
    }

    /// The context the help overlay was opened over (or would be).
    pub(crate) fn context_under_help(&self, view: View) -> Context {
        self.under_help()
            .map_or_else(|| view_context(view), Mode::context)
    }
}

/// The keys of a view with nothing open over it.
fn view_context(view: View) -> Context {
    match view {
        View::Fleet => Context::Fleet,
        View::Diagnostics | View::Routing | View::Nodes => Context::Views,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_mode_has_the_keys_and_closing_it_hands_them_back() {
        let mut modes = Modes::default();
        assert_eq!(modes.context(View::Fleet), Context::Fleet);
        assert_eq!(modes.context(View::Nodes), Context::Views);
        modes.open(Mode::ActionPlan);
        modes.open(Mode::Help);
        assert_eq!(modes.context(View::Fleet), Context::Help);
        assert_eq!(modes.context_under_help(View::Fleet), Context::ActionPlan);
        assert!(modes.close(Mode::Help));
        assert!(!modes.close(Mode::Help));
        assert_eq!(modes.context(View::Fleet), Context::ActionPlan);
    }

    #[test]
    fn replacing_keeps_the_place_and_a_mode_is_open_once() {
        let mut modes = Modes::default();
        modes.open(Mode::ActionMenu);
        modes.open(Mode::Help);
        modes.replace(Mode::ActionMenu, Mode::ActionPlan);
        assert_eq!(modes.under_help(), Some(Mode::ActionPlan));
        assert_eq!(modes.top(), Some(Mode::Help));
        modes.open(Mode::ActionPlan);
        assert_eq!(modes, Modes(vec![Mode::Help, Mode::ActionPlan]));
        modes.replace(Mode::Filter, Mode::ActionProgress);
        assert_eq!(modes.top(), Some(Mode::ActionProgress));
        assert!(modes.is_open(Mode::ActionPlan));
    }
}
