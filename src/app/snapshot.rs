//! `e`: the console writes what it has seen as an incident snapshot (Markdown and JSON, the
//! writer `kvtop check -o markdown` uses) into the state directory. The state machine gathers
//! the snapshot and names the files; the event loop adds the actions from the audit log and
//! writes them ([`Command::WriteSnapshot`]).

use std::path::PathBuf;

use super::Command;
use super::state::{App, NoticeKind};
use crate::diagnose::report::snapshot::{Snapshot, excerpts, signal_ranges};
use crate::diagnose::report::{fleet_rows_of, plural};
use kvtop_core::fleet::{EngineStatus, Ts};

/// Directory of the snapshots under the state directory.
pub const SNAPSHOT_DIR: &str = "snapshots";

/// A snapshot to write and its files.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotJob {
    pub snapshot: Snapshot,
    pub markdown: PathBuf,
    pub json: PathBuf,
}

/// Gather the snapshot as of `now` and ask for it to be written; the footer names the file.
pub(super) fn write(app: &mut App, now: Ts) -> Vec<Command> {
    let Some(dir) = app.state_dir.as_ref().map(|d| d.join(SNAPSHOT_DIR)) else {
        app.set_notice(
            NoticeKind::ActionFailed("no state directory: the snapshot is not written".into()),
            now,
        );
        return Vec::new();
    };
    let now = app.view_now(now);
    let stem = format!(
        "kvtop-snapshot-{}",
        kvtop_core::clock::utc_datetime(now).strftime("%Y%m%d-%H%M%S")
    );
    let job = SnapshotJob {
        snapshot: gather(app, now),
        markdown: dir.join(format!("{stem}.md")),
        json: dir.join(format!("{stem}.json")),
    };
    app.set_notice(
        NoticeKind::Action(format!("snapshot: {} (+ .json)", job.markdown.display())),
        now,
    );
    vec![Command::WriteSnapshot(Box::new(job))]
}

/// What the console has seen over the snapshot span ending at `now`.
pub fn gather(app: &App, now: Ts) -> Snapshot {
    let fleet = app.view_fleet();
    let view = app.diag.view();
    let started = now - app.snapshot_span.as_secs_f64();
    let counts = view.incident_counts();
    let verdict = if counts.critical > 0 {
        "critical"
    } else if counts.warning > 0 {
        "warning"
    } else {
        "healthy"
    };
    let rows = fleet_rows_of(fleet);
    let up = rows.iter().filter(|r| r.status == EngineStatus::Up).count();
    let headline = format!(
        "{verdict}: {} critical, {} warning, {} info incidents firing; {} ({up} up), as the console saw them over the last {}",
        counts.critical,
        counts.warning,
        counts.info,
        plural(rows.len(), "engine"),
        kvtop_core::format::span(app.snapshot_span.as_secs_f64())
    );
    let incidents = view.incidents().to_vec();
    let (logs, events) = excerpts(fleet, &app.diag.logs, &incidents);
    Snapshot {
        verdict: verdict.to_owned(),
        headline,
        started,
        ended: now,
        span_title: format!(
            "Over the last {}",
            kvtop_core::format::span(app.snapshot_span.as_secs_f64())
        ),
        fleet: rows,
        findings: view.findings().to_vec(),
        incidents,
        signals: signal_ranges(fleet, started),
        logs,
        events,
        actions: Vec::new(),
    }
}
