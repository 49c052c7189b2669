//! The console's state machine: `update(&mut App, Event, now) -> Vec<Command>`; the event loop
//! that feeds it lives in `run`.

pub mod diagnostics;
pub mod keys;
pub mod kube;
pub mod rows;
pub mod run;
pub mod state;
pub mod update;
mod views;

pub use diagnostics::{Diagnostics, EngineMarks, FindingKey, RulesView};
pub use keys::{Action, Binding, Context, KEYMAP, Key};
pub use rows::{SortColumn, visible_rows};
pub use state::{
    App, ChartRange, Frozen, NodesExtent, Notice, NoticeKind, RowKey, TableScroll, View,
};
pub use update::update;

use crate::fleet::{ScrapeReport, SourceReport, TargetId, Ts};
use crate::kube_model::PodKey;
use crate::sources::kube::{KubeUpdate, PodScrape};

/// Everything that can happen to the console.
#[derive(Debug, Clone)]
pub enum Event {
    /// A worker finished a scrape.
    Scrape(ScrapeReport),
    /// A source (Prometheus) worker finished a cycle or its start-up backfill.
    Source(SourceReport),
    /// A key was pressed.
    Key(crossterm::event::KeyEvent),
    /// New log lines `(written at, text)` per target, for the rules that match text.
    Logs(Vec<(crate::fleet::TargetId, Vec<(Ts, String)>)>),
    /// The terminal was resized.
    Resize { width: u16, height: u16 },
    /// Periodic clock tick (status ages, staleness).
    Tick,
    /// SIGTERM / SIGHUP / Ctrl-C outside raw mode: leave now.
    Shutdown,
    /// The Kubernetes source learned something (pods, events, logs, Deployments, problems).
    Kube(KubeUpdate),
}

/// What the state machine asks the event loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Quit,
    /// Start scraping a discovered pod (the fleet already has its target).
    ScrapePod(PodScrape),
    /// Stop scraping a target the fleet removed.
    StopScrape(TargetId),
    /// Read this pod's log often: the detail view shows it (`None`: no pod selected).
    FollowLogs(Option<PodKey>),
}

/// Time used by `update` and `draw`.
pub type Now = Ts;
