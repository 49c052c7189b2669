//! The console's state: the fleet it shows and everything the operator chose about how to show it.

use std::cell::Cell;
use std::time::Duration;

use super::actions::ActionsView;
use super::diagnostics::Diagnostics;
use super::keys::Context;
use super::kube::KubeView;
use super::mode::{Mode, Modes};
use super::rows::{SortColumn, visible_rows};
use super::view_model::ViewModel;
use crate::theme::Theme;
use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{EngineState, Fleet, QuantileWindow, TargetId, Ts};

/// How long a transient notice stays in the footer, seconds.
pub(crate) const NOTICE_SECS: f64 = 4.0;
/// How long a start-up problem stays in the footer, seconds.
pub(crate) const PROBLEM_SECS: f64 = 30.0;

/// Rows PgUp/PgDn move before the table was ever drawn.
const DEFAULT_PAGE: usize = 10;

/// The views the console can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    #[default]
    Fleet,
    /// The rules' findings with their evidence (`x`).
    Diagnostics,
    /// How two routers would score the engines of each model (`r`).
    Routing,
    /// GPUs per node (`n`).
    Nodes,
}

/// Identity of a table row, stable across re-sorting and rows appearing or disappearing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RowKey {
    pub target: TargetId,
    pub id: EngineId,
}

impl RowKey {
    /// The key of an engine row.
    pub fn of(engine: &EngineState) -> RowKey {
        RowKey {
            target: engine.target,
            id: engine.id.clone(),
        }
    }

    /// Whether `engine` is the row this key names.
    pub fn is(&self, engine: &EngineState) -> bool {
        self.target == engine.target && self.id == engine.id
    }
}

/// The time span the detail charts show, zoomed with `+`/`-` through [`ChartRange::LEVELS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChartRange(Duration);

impl ChartRange {
    /// Zoom levels: 1m, 5m, 15m, 1h.
    pub(crate) const LEVELS: [Duration; 4] = [
        Duration::from_secs(60),
        Duration::from_secs(300),
        Duration::from_secs(900),
        Duration::from_secs(3600),
    ];
    /// Shortest range accepted from the configuration.
    pub(crate) const MIN: Duration = Duration::from_secs(10);

    /// A range from the configuration; anything shorter than [`ChartRange::MIN`] becomes `MIN`.
    pub fn new(range: Duration) -> ChartRange {
        ChartRange(range.max(Self::MIN))
    }

    /// The span as a duration.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// The span in seconds.
    pub(crate) fn secs(self) -> f64 {
        self.0.as_secs_f64()
    }

    /// The next shorter zoom level, or the same range when none is shorter.
    pub(crate) fn zoom_in(self) -> ChartRange {
        Self::LEVELS
            .iter()
            .rev()
            .find(|l| **l < self.0)
            .map_or(self, |l| ChartRange(*l))
    }

    /// The next longer zoom level, or the same range when none is longer.
    pub(crate) fn zoom_out(self) -> ChartRange {
        Self::LEVELS
            .iter()
            .find(|l| **l > self.0)
            .map_or(self, |l| ChartRange(*l))
    }
}

/// The instant the view is frozen at; ingestion continues into `App::fleet`.
#[derive(Debug, Clone)]
pub struct Frozen {
    /// When the view was frozen: ages and charts are drawn as of this time.
    pub at: Ts,
    /// The fleet's rows, targets and GPUs as they were at `at`, without histories: charts
    /// read the live histories up to `at` (see `App::history_points`).
    pub fleet: Fleet,
    /// The time cursor put the view at `at`, rebuilt from the histories and the findings'
    /// timeline; `false` for a view frozen as it was (`f`).
    pub past: bool,
}

/// What a transient footer notice reports (the text is in `ui::text`).
#[derive(Debug, Clone, PartialEq)]
pub enum NoticeKind {
    Filter {
        shown: usize,
        total: usize,
    },
    FilterCleared,
    Sort {
        column: SortColumn,
        descending: bool,
    },
    Window(QuantileWindow),
    Range(ChartRange),
    Frozen,
    Unfrozen,
    /// The time cursor cannot go further back: the retained past starts this many seconds
    /// ago.
    CursorAtStart {
        ago: f64,
    },
    /// A replay reached the end of its recording.
    ReplayEnded,
    /// A problem worked around at start-up (a broken config file, a theme that did not load).
    Problem(String),
    /// About an action: it is done, or something the operator must know.
    Action(String),
    /// An action failed, or was refused.
    ActionFailed(String),
    /// What a copy did (or why it could not).
    Copied(String),
}

/// A transient footer notice and when it expires.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub kind: NoticeKind,
    pub until: Ts,
}

/// Where the table was scrolled to and how many rows it showed, as of the last draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableScroll {
    pub offset: usize,
    pub height: usize,
}

/// How long the node view was and how many of its lines fitted, as of the last draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodesExtent {
    pub lines: usize,
    pub height: usize,
}

/// The console's state. `update` changes it; `ui::draw` reads it.
#[derive(Debug)]
pub struct App {
    pub fleet: Fleet,
    pub theme: Theme,
    /// What is being watched, for the header ("3 targets", "demo (8 simulated engines)").
    pub source: String,
    /// A line the help overlay ends with (the demo's: how to reach its cluster with kubectl).
    pub help_note: Option<String>,
    /// Which page of the help is shown when its columns do not all fit (taken modulo the
    /// pages when drawn); back to the first when the help closes.
    pub help_page: usize,
    /// Scrape interval, for the header.
    pub interval: Duration,
    pub view: View,
    /// The selected row; `None` until there is a row to select.
    pub selected: Option<RowKey>,
    pub sort: SortColumn,
    pub sort_descending: bool,
    /// The fleet table groups its rows by model, a summary line heading each group (`m`).
    pub group_by_model: bool,
    /// Where snapshots (`e`) go, under `snapshots/` (`None`: nowhere to write).
    pub state_dir: Option<std::path::PathBuf>,
    /// How far back a snapshot reaches.
    pub snapshot_span: Duration,
    /// The fleet table's value columns (`c` cycles the sets).
    pub columns: super::ColumnSets,
    pub filter: String,
    /// The prompts and overlays open over the view; the top one has the keys.
    pub modes: Modes,
    pub range: ChartRange,
    pub frozen: Option<Frozen>,
    /// Give the detail pane (charts) more room than the table on short terminals.
    pub detail_expanded: bool,
    pub notice: Option<Notice>,
    /// The troubleshooting rules, their findings, and the diagnostics view's selection.
    pub diag: Diagnostics,
    /// The screen needs redrawing. The event loop clears it after drawing.
    pub dirty: bool,
    pub should_quit: bool,
    /// Offset of the header clock from UTC, seconds (0 = UTC, labelled as such).
    pub utc_offset_secs: i32,
    /// Second of the last tick, to redraw once per second for the clock and ages.
    pub(crate) last_second: Option<i64>,
    /// Written by the table view while drawing (it takes `&App`), read by paging.
    pub(crate) scroll: Cell<TableScroll>,
    /// Kubernetes discovery: pods' targets, Deployments, problems (disabled by default).
    pub kube: KubeView,
    /// First line of the node view shown.
    pub nodes_offset: usize,
    /// Lines of the node view and rows it had, as of the last draw (for scrolling).
    pub(crate) nodes_extent: Cell<NodesExtent>,
    /// Kubernetes actions: the menu, the plan screen, the running action.
    pub actions: ActionsView,
    /// The story pager, while it is open (`l`).
    pub story: Option<super::story::StoryView>,
    /// Copies may go to the terminal's clipboard (OSC 52): the setting and the terminal allow it.
    pub clipboard: bool,
    /// Text copied since the last frame, for the draw loop to send (see `crate::clipboard`).
    pub copy_out: Option<String>,
    /// What the header shows of a recording in progress (`--record`).
    pub recording: Option<std::sync::Arc<crate::record::RecordStats>>,
    /// The clock of a replay, which `p` pauses (`None`: live).
    pub replay: Option<std::sync::Arc<dyn super::replay_control::ReplayControl>>,
    /// The rows as settled after the last batch of events (see `update::settle`).
    pub(crate) view_model: ViewModel,
}

impl App {
    /// A console over `fleet`: sorted by name, nothing selected yet, charts over `range`
    /// (see [`ChartRange::new`]), the clock in UTC, and a first draw pending.
    pub fn new(
        fleet: Fleet,
        theme: Theme,
        source: String,
        interval: Duration,
        range: Duration,
    ) -> App {
        let view_model = ViewModel::initial(&fleet);
        let retention = fleet.settings().history_total_secs;
        App {
            fleet,
            theme,
            source,
            help_note: None,
            help_page: 0,
            interval,
            view: View::Fleet,
            selected: None,
            sort: SortColumn::default(),
            sort_descending: SortColumn::default().natural_descending(),
            group_by_model: false,
            state_dir: None,
            snapshot_span: Duration::from_secs(15 * 60),
            columns: super::ColumnSets::default(),
            filter: String::new(),
            modes: Modes::default(),
            range: ChartRange::new(range),
            frozen: None,
            detail_expanded: false,
            notice: None,
            diag: Diagnostics::builtin().with_retention(retention),
            dirty: true,
            should_quit: false,
            utc_offset_secs: 0,
            last_second: None,
            scroll: Cell::new(TableScroll::default()),
            kube: KubeView::default(),
            nodes_offset: 0,
            nodes_extent: Cell::new(NodesExtent::default()),
            actions: ActionsView::default(),
            story: None,
            clipboard: false,
            copy_out: None,
            recording: None,
            replay: None,
            view_model,
        }
    }

    /// Whether the view shows a frozen snapshot.
    pub(crate) fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// The fleet the view shows: the frozen snapshot, or the live fleet.
    pub(crate) fn view_fleet(&self) -> &Fleet {
        self.frozen.as_ref().map_or(&self.fleet, |f| &f.fleet)
    }

    /// The time the view is drawn as of: the freeze time, or `now`.
    pub(crate) fn view_now(&self, now: Ts) -> Ts {
        self.frozen.as_ref().map_or(now, |f| f.at)
    }

    /// The visible rows (indices into `view_fleet().engines()`) as settled after the last
    /// event: what the table shows and the keys move through.
    pub fn visible_rows(&self) -> &[usize] {
        self.view_model.rows()
    }

    /// Engine rows the filter chooses from, as settled after the last event.
    pub(crate) fn engine_rows(&self) -> usize {
        self.view_model.engines()
    }

    /// Recompute the visible rows as of `now` (see [`App::visible_rows`]).
    pub(crate) fn settle_rows(&mut self, now: Ts) {
        let mut view_model = ViewModel::compute(
            self.view_fleet(),
            &self.filter,
            self.sort,
            self.sort_descending,
            self.view_now(now),
        );
        if self.group_by_model {
            view_model.group_by_model(self.view_fleet());
        }
        self.view_model = view_model;
    }

    /// The visible rows computed afresh from the state as it is now, filtered and sorted.
    pub fn rows(&self, now: Ts) -> Vec<usize> {
        let mut rows = visible_rows(
            self.view_fleet(),
            &self.filter,
            self.sort,
            self.sort_descending,
            self.view_now(now),
        );
        if self.group_by_model {
            super::view_model::group_rows(self.view_fleet(), &mut rows);
        }
        rows
    }

    /// Position in `rows` of the selected engine; the first row when the selection is not
    /// among them; `None` when there are no rows.
    pub fn selection(&self, rows: &[usize]) -> Option<usize> {
        if rows.is_empty() {
            return None;
        }
        let engines = self.view_fleet().engines();
        let found = self.selected.as_ref().and_then(|key| {
            rows.iter()
                .position(|&i| engines.get(i).is_some_and(|e| key.is(e)))
        });
        Some(found.unwrap_or(0))
    }

    /// The selected engine as drawn (see [`App::selection`]).
    pub fn selected_engine(&self, rows: &[usize]) -> Option<&EngineState> {
        let pos = self.selection(rows)?;
        let index = *rows.get(pos)?;
        self.view_fleet().engines().get(index)
    }

    /// Select the row at `pos` of `rows` (clamped).
    pub fn select_position(&mut self, rows: &[usize], pos: usize) {
        let pos = pos.min(rows.len().saturating_sub(1));
        let key = rows
            .get(pos)
            .and_then(|&i| self.view_fleet().engines().get(i))
            .map(RowKey::of);
        if key.is_some() {
            self.selected = key;
        }
    }

    /// Which part of the key map applies now.
    pub fn context(&self) -> Context {
        self.modes.context(self.view)
    }

    /// The context the help overlay was opened over (or would be).
    pub(crate) fn context_under_help(&self) -> Context {
        self.modes.context_under_help(self.view)
    }

    /// Whether the filter prompt has the keys.
    pub fn filter_editing(&self) -> bool {
        self.modes.is_open(Mode::Filter)
    }

    /// Whether the help overlay is open.
    pub(crate) fn help_visible(&self) -> bool {
        self.modes.is_open(Mode::Help)
    }

    /// Open or close the help overlay over whatever has the keys.
    pub fn set_help_visible(&mut self, visible: bool) {
        if visible {
            self.modes.open(Mode::Help);
        } else {
            self.modes.close(Mode::Help);
            self.help_page = 0;
        }
    }

    /// Whether the progress panel of an action is shown.
    pub(crate) fn progress_visible(&self) -> bool {
        self.modes.is_open(Mode::ActionProgress) && self.actions.run.is_some()
    }

    /// The contexts the help overlay lists now: the action keys over an action's menu, plan
    /// or progress; else the views' keys, with the pod's actions only when they are offered.
    pub(crate) fn help_contexts(&self) -> Vec<Context> {
        if self.context_under_help().is_action_modal() {
            return Context::ACTION_HELP_ORDER.to_vec();
        }
        if matches!(
            self.context_under_help(),
            Context::Story | Context::StorySearch
        ) {
            return vec![Context::Story, Context::StorySearch, Context::Anywhere];
        }
        let offered = self.pod_actions_offered();
        Context::HELP_ORDER
            .into_iter()
            .filter(|c| offered || *c != Context::Pod)
            .collect()
    }

    /// Show a notice in the footer for [`NOTICE_SECS`] from `now`.
    pub(crate) fn set_notice(&mut self, kind: NoticeKind, now: Ts) {
        self.notice = Some(Notice {
            kind,
            until: now + NOTICE_SECS,
        });
    }

    /// Show a start-up problem in the footer for [`PROBLEM_SECS`] from `now`.
    pub fn warn(&mut self, message: String, now: Ts) {
        tracing::warn!(%message, "start-up problem");
        self.notice = Some(Notice {
            kind: NoticeKind::Problem(message),
            until: now + PROBLEM_SECS,
        });
    }

    /// Rows one PgUp/PgDn moves: the table height as last drawn.
    pub(crate) fn page_size(&self) -> usize {
        match self.scroll.get().height {
            0 => DEFAULT_PAGE,
            h => h,
        }
    }

    /// The first visible row for a table of `height` rows out of `len` with the row at
    /// `selected` in view, keeping the previous offset when the selection is still visible.
    /// Records the result for the next draw and for paging.
    pub(crate) fn scroll_to(&self, selected: usize, len: usize, height: usize) -> usize {
        let previous = self.scroll.get().offset;
        let offset = if height == 0 {
            0
        } else if selected < previous {
            selected
        } else if selected >= previous + height {
            selected + 1 - height
        } else {
            previous
        }
        .min(len.saturating_sub(height));
        self.scroll.set(TableScroll { offset, height });
        offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn zoom_steps_through_levels_and_stops_at_the_ends() {
        let r = ChartRange::new(secs(300));
        assert_eq!(r.zoom_in().duration(), secs(60));
        assert_eq!(r.zoom_in().zoom_in().duration(), secs(60));
        assert_eq!(r.zoom_out().duration(), secs(900));
        assert_eq!(r.zoom_out().zoom_out().zoom_out().duration(), secs(3600));
    }

    #[test]
    fn a_configured_range_between_levels_zooms_to_its_neighbours() {
        let r = ChartRange::new(secs(600));
        assert_eq!(r.zoom_in().duration(), secs(300));
        assert_eq!(r.zoom_out().duration(), secs(900));
        assert_eq!(ChartRange::new(secs(0)).duration(), ChartRange::MIN);
    }
}
