//! The story pager (`l`): the selected engine's whole story — every vLLM argument, the raw
//! `cache_config_info` labels, every recent event, every log line kvtop holds — scrollable and
//! searchable, over the whole screen. The text is built afresh from the pod and the engine's
//! latest sample at each draw (see [`App::story_lines`]), so log lines keep arriving while it is
//! open; the pager only keeps where it is and what it searches.

use crossterm::event::{KeyCode, KeyEvent};

use super::keys::Action;
use super::mode::Mode;
use super::state::{App, RowKey};
use kvtop_core::story::{StoryLine, find, story};

/// Lines a page key moves (the views page by the same amount).
pub(crate) const PAGE: usize = 10;

/// Where the pager is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryView {
    /// The engine whose story it is.
    pub row: RowKey,
    /// First line shown; `None`: the end is kept in view as lines arrive (the log's tail).
    pub top: Option<usize>,
    /// The search, as typed.
    pub query: String,
    /// The line of the current match.
    pub matched: Option<usize>,
    /// The search found nothing.
    pub no_match: bool,
}

impl App {
    /// The story of the engine the pager shows (empty when it has left the fleet).
    pub fn story_lines(&self) -> Vec<StoryLine> {
        let Some(view) = &self.story else {
            return Vec::new();
        };
        let fleet = self.view_fleet();
        let Some(engine) = fleet.engines().iter().find(|e| view.row.is(e)) else {
            return Vec::new();
        };
        let cache = engine.latest.as_ref().and_then(|l| l.cache_config.as_ref());
        story(fleet.pod_info(engine.target), cache)
    }
}

impl App {
    /// `vllm-0 (meta-llama/…)`: whose story the pager shows.
    pub fn story_title(&self) -> String {
        let Some(view) = &self.story else {
            return String::new();
        };
        let fleet = self.view_fleet();
        match fleet.engines().iter().find(|e| view.row.is(e)) {
            Some(engine) if engine.id.model.is_empty() => {
                kvtop_core::safe_text::line(&engine.name).into_owned()
            }
            Some(engine) => {
                kvtop_core::safe_text::line(&format!("{} ({})", engine.name, engine.id.model))
                    .into_owned()
            }
            None => "the engine has left the fleet".to_owned(),
        }
    }
}

impl App {
    /// Put `text` on the terminal's clipboard at the next frame (see `crate::clipboard`), or
    /// say why it cannot go; `what` names it in the notice.
    pub(crate) fn copy(&mut self, what: &str, text: String, now: kvtop_core::fleet::Ts) {
        let notice = if !self.clipboard {
            "copying is off ([display] clipboard = false, or a terminal without OSC 52)".to_owned()
        } else if text.is_empty() {
            format!("nothing to copy: no {what}")
        } else {
            self.copy_out = Some(text);
            format!("copied {what} to the clipboard (OSC 52)")
        };
        self.set_notice(super::state::NoticeKind::Copied(notice), now);
    }
}

/// Open the pager on the selected engine, at the end of its log.
pub(super) fn open(app: &mut App) -> bool {
    let rows = app.visible_rows().to_vec();
    let Some(engine) = app.selected_engine(&rows) else {
        return false;
    };
    app.story = Some(StoryView {
        row: RowKey::of(engine),
        top: None,
        query: String::new(),
        matched: None,
        no_match: false,
    });
    app.modes.open(Mode::Story);
    true
}

/// A key of the pager.
pub(super) fn key(app: &mut App, action: Action, now: kvtop_core::fleet::Ts) -> bool {
    let lines = app.story_lines();
    let last = lines.len().saturating_sub(1);
    let Some(view) = app.story.as_mut() else {
        return false;
    };
    let at = view.top.unwrap_or(last);
    match action {
        Action::StoryDown => view.top = (at < last).then_some(at + 1),
        Action::StoryUp => view.top = Some(at.saturating_sub(1)),
        Action::StoryPageDown => view.top = (at + PAGE < last).then_some(at + PAGE),
        Action::StoryPageUp => view.top = Some(at.saturating_sub(PAGE)),
        Action::StoryTop => view.top = Some(0),
        Action::StoryBottom => view.top = None,
        Action::StorySearch => {
            view.query.clear();
            view.matched = None;
            view.no_match = false;
            app.modes.open(Mode::StorySearch);
        }
        Action::StoryNext | Action::StoryPrevious => {
            let forward = action == Action::StoryNext;
            let from = match (view.matched, forward) {
                (Some(m), true) => m + 1,
                (Some(m), false) => m + lines.len().saturating_sub(1),
                (None, _) => at,
            };
            jump(view, &lines, from % lines.len().max(1), forward);
        }
        Action::StoryCopy => {
            // The current match, else the line at the top of the screen (the last line when
            // following the end).
            let line = view.matched.unwrap_or(at);
            let text = lines.get(line).map(|l| l.text.clone()).unwrap_or_default();
            app.copy("the line", text, now);
        }
        Action::CloseStory => {
            app.modes.close(Mode::Story);
            app.story = None;
        }
        _ => return false,
    }
    true
}

/// A key of the search prompt: the pager jumps to the first match as the query is typed.
pub(super) fn search_key(app: &mut App, action: Action, key: &KeyEvent) -> bool {
    let lines = app.story_lines();
    let Some(view) = app.story.as_mut() else {
        app.modes.close(Mode::StorySearch);
        return true;
    };
    match action {
        Action::StorySearchInput => {
            let KeyCode::Char(c) = key.code else {
                return false;
            };
            view.query.push(c);
        }
        Action::StorySearchBackspace => {
            view.query.pop();
        }
        Action::StorySearchKeep => {
            app.modes.close(Mode::StorySearch);
            return true;
        }
        Action::StorySearchCancel => {
            view.query.clear();
            view.matched = None;
            view.no_match = false;
            app.modes.close(Mode::StorySearch);
            return true;
        }
        _ => return false,
    }
    let from = view.top.unwrap_or(0);
    jump(view, &lines, from, true);
    true
}

/// Move to the match of the query at or after `from` (before, backwards), a few lines of
/// context above it.
fn jump(view: &mut StoryView, lines: &[StoryLine], from: usize, forward: bool) {
    view.matched = find(lines, &view.query, from, forward);
    view.no_match = view.matched.is_none() && !view.query.trim().is_empty();
    if let Some(m) = view.matched {
        view.top = Some(m.saturating_sub(2));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::app::{Event, update};
    use crate::theme::Theme;
    use crossterm::event::KeyModifiers;
    use kvtop_core::engine::EngineSample;
    use kvtop_core::fleet::{Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetSpec, Ts};
    use kvtop_core::kube_model::{LineRing, PodInfo};
    use std::time::Duration;

    pub(crate) const T0: Ts = 1_000.0;

    pub(crate) fn press(app: &mut App, code: KeyCode) {
        update(app, Event::Key(KeyEvent::new(code, KeyModifiers::NONE)), T0);
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
    }

    /// A console with one engine, scraped once, whose pod's log has `lines` lines.
    pub(crate) fn app_with_log(lines: usize) -> App {
        let mut fleet = Fleet::new(FleetSettings::default());
        let id = fleet.add_target(TargetSpec {
            name: "vllm-0".into(),
            url: "http://vllm-0/metrics".into(),
        });
        let mut pod = PodInfo::for_test("prod", "vllm-0");
        pod.logs = LineRing::new(lines);
        for i in 0..lines {
            pod.logs.push(format!("line {i}"));
        }
        pod.args.flags = vec![("max_num_seqs".into(), "256".into())];
        fleet.set_pod_info(id, pod);
        fleet.ingest(ScrapeReport {
            target: id,
            at: T0,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![EngineSample {
                    kv_usage: Some(0.5),
                    ..EngineSample::default()
                }],
                ..ScrapePayload::default()
            }),
        });
        let mut app = App::new(
            fleet,
            Theme::fallback(),
            "test".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        crate::app::settle(&mut app, T0);
        app
    }

    #[test]
    fn it_opens_at_the_tail_scrolls_and_closes() {
        let mut app = app_with_log(50);
        press(&mut app, KeyCode::Char('l'));
        assert!(app.modes.is_open(Mode::Story));
        assert_eq!(
            app.story.as_ref().map(|s| s.top),
            Some(None),
            "following the tail"
        );
        assert!(app.story_lines().iter().any(|l| l.text == "line 49"));
        press(&mut app, KeyCode::Char('g'));
        assert_eq!(app.story.as_ref().and_then(|s| s.top), Some(0));
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::PageDown);
        assert_eq!(app.story.as_ref().and_then(|s| s.top), Some(1 + PAGE));
        press(&mut app, KeyCode::Char('G'));
        assert_eq!(app.story.as_ref().map(|s| s.top), Some(None));
        press(&mut app, KeyCode::Esc);
        assert!(app.story.is_none() && !app.modes.is_open(Mode::Story));
    }

    #[test]
    fn search_jumps_as_it_is_typed_and_n_finds_the_next() {
        let mut app = app_with_log(50);
        press(&mut app, KeyCode::Char('l'));
        press(&mut app, KeyCode::Char('g'));
        press(&mut app, KeyCode::Char('/'));
        assert!(app.modes.is_open(Mode::StorySearch));
        typed(&mut app, "line 4");
        let lines = app.story_lines();
        let first = app.story.as_ref().and_then(|s| s.matched);
        assert!(
            first.is_some_and(|m| lines[m].text == "line 4"),
            "{first:?}"
        );
        press(&mut app, KeyCode::Enter);
        assert!(!app.modes.is_open(Mode::StorySearch));
        press(&mut app, KeyCode::Char('n'));
        let next = app.story.as_ref().and_then(|s| s.matched);
        assert!(next.is_some_and(|m| lines[m].text == "line 40"), "{next:?}");
        press(&mut app, KeyCode::Char('N'));
        assert_eq!(app.story.as_ref().and_then(|s| s.matched), first);
        press(&mut app, KeyCode::Char('/'));
        typed(&mut app, "nowhere");
        assert!(app.story.as_ref().is_some_and(|s| s.no_match));
        press(&mut app, KeyCode::Esc);
        assert!(app.story.as_ref().is_some_and(|s| s.query.is_empty()));
        assert!(
            app.modes.is_open(Mode::Story),
            "Esc leaves the search, not the pager"
        );
    }
}
