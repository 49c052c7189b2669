//! The console's state machine: `update(&mut App, Event, now) -> Vec<Command>`; the event loop
//! that feeds it lives in `run`.
//!
//! `update` folds an event in (`update::step`: keys go to the handler of the mode on top of
//! `App::modes`, see `mode` and `input`) and then settles the state (`update::settle`): the
//! rules run over new data, the visible rows are computed once, the selection and the
//! followed log catch up. Drawing (`ui::draw`, over `&App`) only reads what was settled.

pub mod action_update;
pub mod actions;
pub mod columns;
pub mod diagnostics;
mod freeze;
pub mod incident_keys;
pub mod incident_rows;
mod incident_text;
mod input;
pub mod keys;
pub mod kube;
pub mod mode;
pub mod replay_control;
pub mod rows;
pub mod run;
pub mod run_notes;
pub mod snapshot;
pub mod state;
pub mod story;
#[cfg(test)]
pub(crate) mod test_fleet;
pub mod update;
pub mod view_model;
mod views;

pub use columns::{ColumnSet, ColumnSets};
pub use diagnostics::{Diagnostics, EngineMarks, FindingKey, RulesView};
pub use incident_rows::{DiagRow, DiagRowKind, diag_rows};
pub use keys::{Action, Binding, Context, KEYMAP, Key};
pub use mode::{Mode, Modes};
pub use rows::{SortColumn, visible_rows};
pub use state::{
    App, ChartRange, Frozen, NodesExtent, Notice, NoticeKind, RowKey, TableScroll, View,
};
pub use update::{settle, step, update};
pub use view_model::group_starts;

use crate::actions::Plan;
use crate::sources::kube::{KubeUpdate, PodScrape};
pub use actions::{ActionRequest, ActionUpdate, ActionsView, EntryChecks};
use kvtop_core::fleet::{ScrapeReport, SourceReport, TargetId, Ts};
use kvtop_core::kube_model::PodKey;

/// Everything that can happen to the console.
#[derive(Debug, Clone)]
pub enum Event {
    /// A worker finished a scrape.
    Scrape(ScrapeReport),
    /// A source (Prometheus) worker finished a cycle or its start-up backfill.
    Source(SourceReport),
    /// A key was pressed.
    Key(crossterm::event::KeyEvent),
    /// Text was pasted (bracketed paste): text for the filter prompt, never keys.
    Paste(String),
    /// New log lines `(written at, text)` per target, for the rules that match text.
    Logs(Vec<(kvtop_core::fleet::TargetId, Vec<(Ts, String)>)>),
    /// The terminal was resized.
    Resize { width: u16, height: u16 },
    /// Periodic clock tick (status ages, staleness).
    Tick,
    /// SIGTERM / SIGHUP / Ctrl-C outside raw mode: leave now.
    Shutdown,
    /// The Kubernetes source learned something (pods, events, logs, Deployments, problems).
    Kube(KubeUpdate),
    /// The action executor answered: access reviews, a plan, a run's progress or end.
    Action(ActionUpdate),
    /// Something a worker was asked to do failed; the footer says what.
    Problem(String),
    /// A replay's targets changed (`kvtop replay`): the fleet scrapes exactly these.
    ReplayTargets(Vec<(TargetId, kvtop_core::fleet::TargetSpec)>),
    /// A replay's Kubernetes update (`kvtop replay`), folded in as the recorded console did.
    ReplayKube(kvtop_core::recording::KubeChange),
    /// A replay's recorded rules cycle (`kvtop replay`): the rules run at this instant.
    ReplayCycle(Ts),
    /// A replay's action start or end (`kvtop replay`), told as the recorded console told it.
    ReplayAction(kvtop_core::recording::ActionNote),
    /// A replay reached the end of its recording (with what stopped it early, if anything).
    ReplayEnded(Option<String>),
    /// A replay jumping forward starts from what the records built up to a later point (the
    /// records after it follow).
    ReplayRestore(Box<replay_control::ReplayState>),
}

impl From<ScrapeReport> for Event {
    fn from(report: ScrapeReport) -> Self {
        Event::Scrape(report)
    }
}

impl From<SourceReport> for Event {
    fn from(report: SourceReport) -> Self {
        Event::Source(report)
    }
}

#[cfg(feature = "demo")]
impl From<crate::diagnose::FreshLogLines> for Event {
    fn from(lines: crate::diagnose::FreshLogLines) -> Self {
        Event::Logs(lines.0)
    }
}

impl From<KubeUpdate> for Event {
    fn from(update: KubeUpdate) -> Self {
        Event::Kube(update)
    }
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
    /// Review (SelfSubjectAccessReview) the requests of a menu's entries; answered with
    /// [`ActionUpdate::Access`] per entry.
    ReviewAccess {
        menu: u64,
        context: String,
        checks: Vec<EntryChecks>,
    },
    /// Read the cluster and plan an action, with its access reviewed; answered with
    /// [`ActionUpdate::Planned`].
    PlanAction {
        id: u64,
        request: Box<ActionRequest>,
        dry_run: bool,
        /// What a drain does when its wait ends with requests in flight.
        on_timeout: crate::actions::OnTimeout,
    },
    /// Run a plan the operator confirmed; answered with [`ActionUpdate::Progress`] events,
    /// then [`ActionUpdate::Finished`] once its audit line is written.
    RunAction {
        id: u64,
        plan: Box<Plan>,
        request: Box<ActionRequest>,
        /// The operator overrode the plan's failed guards that allow it.
        overridden: bool,
    },
    /// Record an attempt a guard refused in the audit log.
    AuditRefused {
        plan: Box<Plan>,
        reason: String,
    },
    /// Record an acknowledgement or snooze of an incident in the audit log.
    AuditIncident(Box<incident_keys::IncidentNote>),
    /// Write an incident snapshot (with the actions of the audit log over its span).
    WriteSnapshot(Box<snapshot::SnapshotJob>),
}
