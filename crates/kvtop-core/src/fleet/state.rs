//! The fleet: targets, the engines they export, and their status.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::gpus::{GpuOrigin, GpuSignals, GpuStore, Placement, PlacementIndex};
use super::names::assign_names;
use super::scraped_signals::{DeriveScratch, derive};
use super::status::status_at;
use super::window::SnapshotWindow;
use super::{History, ScrapeError, Signals, Ts};
use crate::engine::{EngineId, EngineSample, GpuSample};
use crate::kube_model::PodInfo;
use crate::metrics::{Bucket, LineError};

/// Index of a scrape target in the fleet.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct TargetId(pub u32);

/// A configured scrape target.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// Short display name (pod name, host:port, or configured name).
    pub name: String,
    pub url: String,
}

/// What a good scrape yielded, already parsed and mapped (parsing happens in the worker).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScrapePayload {
    pub engines: Vec<EngineSample>,
    pub gpus: Vec<GpuSample>,
    /// Sample lines read.
    pub samples: usize,
    /// Malformed lines skipped, and the first of them.
    pub malformed: usize,
    pub first_error: Option<LineError>,
    /// Body size after decompression.
    pub bytes: usize,
}

/// One scrape's result, sent from a worker to the app loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeReport {
    pub target: TargetId,
    /// When the scrape completed.
    pub at: Ts,
    /// How long it took, seconds.
    pub took: f64,
    pub outcome: Result<ScrapePayload, ScrapeError>,
}

/// Settings the fleet needs (from the resolved config).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FleetSettings {
    /// Scrape interval, seconds.
    pub interval: f64,
    pub window: super::QuantileWindow,
    /// How long an engine stays marked RESTARTED after a counter reset, seconds.
    pub restart_mark_secs: f64,
    /// Full-resolution history span, seconds.
    pub history_full_secs: f64,
    /// Total history span (downsampled beyond the full-resolution part), seconds.
    pub history_total_secs: f64,
    /// Width of one downsampled bucket, seconds.
    pub history_coarse_step: f64,
}

impl Default for FleetSettings {
    fn default() -> Self {
        FleetSettings {
            interval: 1.0,
            window: super::QuantileWindow::M1,
            restart_mark_secs: 120.0,
            history_full_secs: 600.0,
            history_total_secs: 3600.0,
            history_coarse_step: 10.0,
        }
    }
}

/// An engine's (or an engine-less target's) status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EngineStatus {
    /// Last scrape good.
    Up,
    /// Not scraped yet: the first attempt has not ended (the first second after start).
    Pending,
    /// No good scrape for 2 intervals: last values shown with their age.
    Stale,
    /// Never scraped successfully, or gone for long.
    Down,
}

/// Counts of engines per status, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusCounts {
    pub up: usize,
    pub stale: usize,
    pub down: usize,
}

/// One scrape target and the outcome of its scrapes.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub id: TargetId,
    pub spec: TargetSpec,
    /// Completion time of the last scrape attempt, good or bad.
    pub last_attempt: Option<Ts>,
    /// Completion time of the last good scrape.
    pub last_ok: Option<Ts>,
    /// The last failure (kept after a later success, for the detail view).
    pub last_error: Option<(Ts, ScrapeError)>,
    /// True when the most recent attempt failed.
    pub failing: bool,
    /// Duration of the last scrape, seconds.
    pub last_took: Option<f64>,
    /// Body size of the last good scrape.
    pub last_bytes: Option<usize>,
    /// Malformed lines in the last good scrape, and the first of them.
    pub malformed: usize,
    pub first_malformed: Option<LineError>,
    /// GPUs from the last good scrape (a dcgm-exporter target).
    pub gpus: Vec<GpuSample>,
}

/// One engine row: the latest sample, derived signals, history and status.
#[derive(Debug, Clone)]
pub struct EngineState {
    pub target: TargetId,
    /// Empty `EngineId` for the placeholder row of a target that never yielded an engine.
    pub id: EngineId,
    /// Display name: the target's name, plus `:model` (short) and/or `/engine` when a target
    /// exports several models and/or engines.
    pub name: String,
    pub status: EngineStatus,
    /// Set when a counter went backwards (process restart); shown for `restart_mark_secs`.
    pub restarted_at: Option<Ts>,
    /// Scrape time of `latest`.
    pub last_ok: Option<Ts>,
    pub latest: Option<EngineSample>,
    pub signals: Signals,
    pub history: History,
    /// The recent raw snapshots its rates and windowed quantiles are derived from.
    pub(crate) window: SnapshotWindow,
    /// Counter resets within the window as a Prometheus source last counted them.
    pub(crate) counter_resets: Option<f64>,
}

impl EngineState {
    /// Seconds since the engine's generated-token counter last moved, as of its newest scrape
    /// (0 when it moved since the scrape before); `None` before two scrapes that export it, or
    /// for rows whose signals come from a Prometheus source.
    pub fn generation_stalled_for(&self) -> Option<f64> {
        self.window
            .unchanged_for(super::window::Counter::GenerationTokens)
    }
}

/// The whole fleet.
///
/// Invariants: `targets` is sorted by id; `engines` is sorted by target, then engine id, and
/// every target has at least one row (a placeholder until its first good scrape yields
/// engines).
#[derive(Debug, Clone)]
pub struct Fleet {
    settings: FleetSettings,
    next_target: u32,
    targets: Vec<TargetState>,
    engines: Vec<EngineState>,
    /// Buffers reused by every derivation of signals.
    scratch: DeriveScratch,
    /// Kubernetes pod of a target discovered in a cluster.
    pods: BTreeMap<TargetId, PodInfo>,
    /// GPUs from dcgm-exporter targets and Prometheus sources (see `fleet::gpus`).
    gpus: GpuStore,
    /// Where targets run, when known better than "the pod named like the target".
    placements: BTreeMap<TargetId, Placement>,
    /// Targets whose last good scrape had GPUs but no engines: their rows are not engines.
    gpu_exporters: BTreeSet<TargetId>,
    /// Prometheus sources and the targets (pods) they yielded.
    sources: Vec<DerivedSource>,
    /// Where targets run, indexed; rebuilt when `join_dirty`.
    placement_index: PlacementIndex,
    /// Targets or placements changed since GPUs were last joined.
    join_dirty: bool,
}

impl Fleet {
    pub fn new(settings: FleetSettings) -> Self {
        Fleet {
            settings,
            next_target: 0,
            targets: Vec::new(),
            engines: Vec::new(),
            scratch: DeriveScratch::default(),
            pods: BTreeMap::new(),
            gpus: GpuStore::new(gpu_history_points(&settings)),
            placements: BTreeMap::new(),
            gpu_exporters: BTreeSet::new(),
            sources: Vec::new(),
            placement_index: PlacementIndex::default(),
            join_dirty: false,
        }
    }
    pub fn settings(&self) -> &FleetSettings {
        &self.settings
    }
    /// Add a scrape target; it shows as one placeholder row until it is scraped: Pending from
    /// the next [`Fleet::tick`] until its first scrape ends, Down if that fails.
    pub fn add_target(&mut self, spec: TargetSpec) -> TargetId {
        let id = TargetId(self.next_target);
        self.insert_target(id, spec);
        id
    }

    /// Make the scraped targets exactly `targets`, with their ids (a replay re-creates the
    /// targets a recording names): missing ones are added, others removed, renamed ones
    /// updated. The targets of a Prometheus source are its own (its answers add and remove
    /// them) and stay.
    pub fn set_targets(&mut self, targets: &[(TargetId, TargetSpec)]) {
        let gone: Vec<TargetId> = self
            .targets
            .iter()
            .map(|t| t.id)
            .filter(|id| !targets.iter().any(|(wanted, _)| wanted == id))
            .filter(|id| self.source_of(*id).is_none())
            .collect();
        for id in gone {
            self.remove_target(id);
        }
        for (id, spec) in targets {
            match self.target_index(*id).and_then(|i| self.targets.get_mut(i)) {
                Some(target) => target.spec = spec.clone(),
                None => self.insert_target(*id, spec.clone()),
            }
        }
    }

    /// Add a target with a given id, keeping the targets sorted by id.
    fn insert_target(&mut self, id: TargetId, spec: TargetSpec) {
        self.next_target = self.next_target.max(id.0.saturating_add(1));
        let placeholder = self.new_row(id, EngineId::default(), spec.name.clone());
        let at = self.targets.partition_point(|t| t.id < id);
        self.targets.insert(
            at,
            TargetState {
                id,
                spec,
                last_attempt: None,
                last_ok: None,
                last_error: None,
                failing: false,
                last_took: None,
                last_bytes: None,
                malformed: 0,
                first_malformed: None,
                gpus: Vec::new(),
            },
        );
        let at = self.rows_of(id).end;
        self.engines.insert(at, placeholder);
        self.join_dirty = true;
    }
    /// The fleet as its histories had it at `t`, for the time cursor: like
    /// [`without_history`](Self::without_history), with each engine's signals, last good scrape
    /// and status those of its history's point in effect at `t` (a downsampled bucket's means
    /// beyond the full-resolution span; signals history does not keep are unknown), GPUs as
    /// theirs had them, and the engines (and targets) first seen after `t` left out. What
    /// history does not keep (pods, targets' errors, the exported configuration) is as now.
    pub fn as_of(&self, t: Ts) -> Fleet {
        let mut past = self.without_history();
        past.gpus = self.gpus.as_of(t);
        let interval = self.settings.interval;
        let mut kept = Vec::with_capacity(past.engines.len());
        for (row, live) in past.engines.drain(..).zip(&self.engines) {
            if live.history.oldest_time().is_some_and(|oldest| oldest > t) {
                continue;
            }
            let mut row = row;
            row.window = SnapshotWindow::new();
            row.restarted_at = row.restarted_at.filter(|at| *at <= t);
            if let Some((at, signals)) = live.history.at(t) {
                row.signals = signals;
                row.last_ok = Some(at);
                row.status = status_at(Some(at), t, interval);
            }
            past.gpus.signals_of(row.target).apply_to(&mut row.signals);
            kept.push(row);
        }
        past.engines = kept;
        let engines = &past.engines;
        past.targets
            .retain(|target| engines.iter().any(|row| row.target == target.id));
        past
    }

    /// A copy of the fleet without the engines' histories (each is [`History::none`]), for a
    /// view frozen at an instant: it keeps what the rows, targets, windows and GPUs were then,
    /// and reads its charts from the live histories up to that instant instead of copying them
    /// (the histories are most of the fleet's memory).
    pub fn without_history(&self) -> Fleet {
        let engines = self
            .engines
            .iter()
            .map(|row| EngineState {
                target: row.target,
                id: row.id.clone(),
                name: row.name.clone(),
                status: row.status,
                restarted_at: row.restarted_at,
                last_ok: row.last_ok,
                latest: row.latest.clone(),
                signals: row.signals,
                history: History::none(),
                window: row.window.clone(),
                counter_resets: row.counter_resets,
            })
            .collect();
        Fleet {
            settings: self.settings,
            next_target: self.next_target,
            targets: self.targets.clone(),
            engines,
            scratch: DeriveScratch::default(),
            pods: self.pods.clone(),
            gpus: self.gpus.clone(),
            placements: self.placements.clone(),
            gpu_exporters: self.gpu_exporters.clone(),
            sources: self.sources.clone(),
            placement_index: self.placement_index.clone(),
            join_dirty: self.join_dirty,
        }
    }
    /// Remove a target and its rows.
    pub fn remove_target(&mut self, id: TargetId) {
        let Some(index) = self.target_index(id) else {
            return;
        };
        self.targets.remove(index);
        self.pods.remove(&id);
        let rows = self.rows_of(id);
        self.engines.drain(rows);
        self.placements.remove(&id);
        self.gpu_exporters.remove(&id);
        self.forget_target_gpus(id);
        self.join_dirty = true;
    }
    /// Attach (or replace) the Kubernetes pod behind a target; ignored for an unknown target.
    pub fn set_pod_info(&mut self, id: TargetId, pod: PodInfo) {
        if self.target_index(id).is_some() {
            // A pod not scraped yet, or on its first start, is Pending at once, not from the
            // next tick: the rules may run before it (see `scrape_status`), and a placeholder
            // judged Down then raises "Engine down" for every pod discovered.
            // One Kubernetes already calls failing (a crash loop) stays Down.
            let unscraped = self.target(id).is_some_and(|t| t.last_attempt.is_none());
            if pod.starting() || (unscraped && stage_of(&pod) != PodStage::Failing) {
                let rows = self.rows_of(id);
                for row in self.engines.get_mut(rows).into_iter().flatten() {
                    if row.last_ok.is_none() {
                        row.status = EngineStatus::Pending;
                    }
                }
            }
            self.pods.insert(id, pod);
        }
    }
    /// The Kubernetes pod behind a target, when it was discovered in a cluster.
    pub fn pod_info(&self, id: TargetId) -> Option<&PodInfo> {
        self.pods.get(&id)
    }
    pub fn pod_info_mut(&mut self, id: TargetId) -> Option<&mut PodInfo> {
        self.pods.get_mut(&id)
    }
    pub fn targets(&self) -> &[TargetState] {
        &self.targets
    }
    pub fn target(&self, id: TargetId) -> Option<&TargetState> {
        self.targets.get(self.target_index(id)?)
    }
    /// Every engine row, in a stable order (by target, then engine id).
    pub fn engines(&self) -> &[EngineState] {
        &self.engines
    }
    /// Fold one scrape result into the fleet.
    ///
    /// A good scrape replaces the target's rows by the engines it exported (keeping the state of
    /// engines seen before), records a snapshot per engine, derives its signals and appends them
    /// to its history. A failed scrape only updates the target and applies the status rules at
    /// the scrape's time; the rows keep their last values. Reports for unknown targets are
    /// ignored.
    pub fn ingest(&mut self, report: ScrapeReport) {
        let Some(index) = self.target_index(report.target) else {
            return;
        };
        match report.outcome {
            Ok(payload) => self.ingest_payload(index, report.at, report.took, payload),
            Err(error) => self.ingest_failure(index, report.at, report.took, error),
        }
    }
    /// Advance time-driven status (STALE/DOWN, RESTARTED expiry). Returns true if anything changed.
    pub fn tick(&mut self, now: Ts) -> bool {
        if now.is_nan() {
            return false;
        }
        let mut changed = self.tick_sources(now);
        changed |= self.tick_gpus(now);
        let rules: Vec<(f64, bool, PodStage)> = self
            .engines
            .iter()
            .map(|row| {
                (
                    self.row_interval(row.target),
                    self.attempted(row.target),
                    self.pod_stage(row.target),
                )
            })
            .collect();
        for (row, (interval, attempted, stage)) in self.engines.iter_mut().zip(rules) {
            let status = if attempted {
                scrape_status(row.last_ok, now, interval, stage)
            } else if stage == PodStage::Failing {
                // Not scraped yet, but Kubernetes says it fails: down, as it will be.
                EngineStatus::Down
            } else {
                EngineStatus::Pending
            };
            if status != row.status {
                row.status = status;
                changed = true;
            }
            if row
                .restarted_at
                .is_some_and(|at| now - at >= self.settings.restart_mark_secs)
            {
                row.restarted_at = None;
                changed = true;
            }
        }
        changed
    }
    pub fn window(&self) -> super::QuantileWindow {
        self.settings.window
    }
    /// The window rates and quantiles are computed over, seconds: the chosen one, or longer
    /// when samples are too sparse for it (four scrape intervals, see
    /// [`crate::signals::promql::window_for_interval`]), the longest of every source's.
    pub fn window_secs(&self) -> f64 {
        self.sources()
            .filter_map(|s| s.window_secs)
            .filter(|w| w.is_finite())
            .fold(self.direct_window_secs(), f64::max)
    }
    /// The window in effect as the header names it: `1m`, or `2m` when stretched to four
    /// scrape intervals.
    pub fn window_label(&self) -> String {
        let secs = self.window_secs();
        if secs <= self.settings.window.secs() {
            self.settings.window.label().to_owned()
        } else if secs % 60.0 == 0.0 {
            format!("{}m", (secs / 60.0) as u64)
        } else {
            format!("{}s", secs.ceil() as u64)
        }
    }
    /// The window of directly scraped engines at the scrape interval.
    fn direct_window_secs(&self) -> f64 {
        crate::signals::promql::window_for_interval(
            self.settings.window,
            Some(self.settings.interval),
        )
    }
    /// Change the quantile window and recompute current signals.
    pub fn set_window(&mut self, window: super::QuantileWindow) {
        self.settings.window = window;
        let secs = self.direct_window_secs();
        for row in &mut self.engines {
            // Rows of a Prometheus source are derived by Prometheus over the new window from
            // its next answer on.
            if self.sources.iter().any(|s| s.owns(row.target)) {
                continue;
            }
            if let Some(latest) = &row.latest {
                let gpu = GpuSignals::of(&row.signals);
                row.signals = derive(latest, &row.window, secs, &mut self.scratch);
                gpu.apply_to(&mut row.signals);
            }
        }
    }
    pub fn counts(&self) -> StatusCounts {
        let mut counts = StatusCounts::default();
        for row in &self.engines {
            if self.gpu_exporters.contains(&row.target) {
                continue;
            }
            match row.status {
                EngineStatus::Up => counts.up += 1,
                EngineStatus::Stale => counts.stale += 1,
                EngineStatus::Down => counts.down += 1,
                // A second at most: counted once it is scraped.
                EngineStatus::Pending => {}
            }
        }
        counts
    }

    /// Approximate bytes held by the fleet state (rows, histories, snapshot windows, latest
    /// samples' histograms), for diagnostics and capacity checks.
    pub fn memory_bytes(&self) -> usize {
        let rows: usize = self
            .engines
            .iter()
            .map(|row| {
                row.history.memory_bytes() - size_of::<History>()
                    + row.name.capacity()
                    + row.latest.as_ref().map_or(0, sample_heap_bytes)
                    + row.window.memory_bytes()
            })
            .sum();
        self.gpus.heap_bytes()
            + size_of::<Self>()
            + self.engines.capacity() * size_of::<EngineState>()
            + self.targets.capacity() * size_of::<TargetState>()
            + rows
    }

    /// Whether a scrape of target `id` has ended. A Prometheus source's rows have their own
    /// rules (see `prometheus_source`): counted as attempted, as before.
    fn attempted(&self, id: TargetId) -> bool {
        self.source_of(id).is_some() || self.target(id).is_none_or(|t| t.last_attempt.is_some())
    }

    fn target_index(&self, id: TargetId) -> Option<usize> {
        self.targets.binary_search_by_key(&id, |t| t.id).ok()
    }

    /// Index range of a target's rows in `engines`.
    fn rows_of(&self, id: TargetId) -> Range<usize> {
        self.engines.partition_point(|r| r.target < id)
            ..self.engines.partition_point(|r| r.target <= id)
    }

    fn new_row(&self, target: TargetId, id: EngineId, name: String) -> EngineState {
        EngineState {
            target,
            id,
            name,
            status: EngineStatus::Down,
            restarted_at: None,
            last_ok: None,
            latest: None,
            signals: Signals::default(),
            history: History::new(&self.settings),
            window: SnapshotWindow::new(),
            counter_resets: None,
        }
    }

    fn ingest_payload(&mut self, index: usize, at: Ts, took: f64, payload: ScrapePayload) {
        let Some(target) = self.targets.get_mut(index) else {
            return;
        };
        target.last_attempt = Some(at);
        target.last_ok = Some(at);
        target.failing = false;
        target.last_took = Some(took);
        target.last_bytes = Some(payload.bytes);
        target.malformed = payload.malformed;
        target.first_malformed = payload.first_error;
        target.gpus = payload.gpus;
        let id = target.id;
        let gpus = target.gpus.clone();
        if payload.engines.is_empty() && !gpus.is_empty() {
            self.gpu_exporters.insert(id);
        } else if !payload.engines.is_empty() {
            self.gpu_exporters.remove(&id);
        }
        self.ingest_gpus(GpuOrigin::Target(id), at, gpus);

        let mut samples = payload.engines;
        samples.sort_by(|a, b| a.id.cmp(&b.id));
        // One row per engine id: a duplicate id in one payload keeps its first sample.
        samples.dedup_by(|later, first| later.id == first.id);

        let rows = self.rows_of(id);
        if samples.is_empty() {
            self.show_placeholder(index, rows, at);
            return;
        }
        let unchanged = rows.len() == samples.len()
            && self.engines.get(rows.clone()).is_some_and(|current| {
                current
                    .iter()
                    .zip(&samples)
                    .all(|(row, sample)| row.id == sample.id)
            });
        if !unchanged {
            self.replace_rows(index, rows.clone(), samples.iter().map(|s| &s.id));
        }
        let range = rows.start..rows.start + samples.len();

        let secs = self.direct_window_secs();
        let gpu = self.gpus.signals_of(id);
        let Some(rows) = self.engines.get_mut(range) else {
            return;
        };
        for (row, sample) in rows.iter_mut().zip(samples) {
            if row.window.record(at, &sample) {
                row.restarted_at = Some(at);
            }
            row.signals = derive(&sample, &row.window, secs, &mut self.scratch);
            gpu.apply_to(&mut row.signals);
            row.latest = Some(sample);
            row.last_ok = Some(at);
            row.status = EngineStatus::Up;
            row.history.push(at, &row.signals);
        }
    }

    /// A good scrape without engine metrics: one Up placeholder row with unknown values.
    fn show_placeholder(&mut self, index: usize, rows: Range<usize>, at: Ts) {
        let is_placeholder =
            |row: &EngineState| row.latest.is_none() && row.id == EngineId::default();
        if !(rows.len() == 1 && self.engines.get(rows.start).is_some_and(is_placeholder)) {
            self.replace_rows(index, rows.clone(), std::iter::once(&EngineId::default()));
        }
        let gpu = self
            .targets
            .get(index)
            .map(|t| self.gpus.signals_of(t.id))
            .unwrap_or_default();
        if let Some(row) = self.engines.get_mut(rows.start) {
            row.last_ok = Some(at);
            row.status = EngineStatus::Up;
            row.latest = None;
            row.signals = Signals::default();
            gpu.apply_to(&mut row.signals);
        }
    }

    /// Replace the rows in `rows` (all of the target at `index`) by one row per id, in order,
    /// carrying over the state of rows whose id is kept, then rename them.
    fn replace_rows<'a>(
        &mut self,
        index: usize,
        rows: Range<usize>,
        ids: impl Iterator<Item = &'a EngineId>,
    ) {
        let Some(target) = self.targets.get(index) else {
            return;
        };
        let (target_id, target_name) = (target.id, target.spec.name.clone());
        let mut old: Vec<Option<EngineState>> =
            self.engines.drain(rows.clone()).map(Some).collect();
        let mut new_rows = Vec::new();
        for id in ids {
            let kept = old
                .iter_mut()
                .find(|slot| slot.as_ref().is_some_and(|row| row.id == *id))
                .and_then(Option::take);
            new_rows
                .push(kept.unwrap_or_else(|| self.new_row(target_id, id.clone(), String::new())));
        }
        let count = new_rows.len();
        let gpu = self.gpus.signals_of(target_id);
        for row in &mut new_rows {
            gpu.apply_to(&mut row.signals);
        }
        self.engines.splice(rows.start..rows.start, new_rows);
        if let Some(renamed) = self.engines.get_mut(rows.start..rows.start + count) {
            assign_names(&target_name, renamed);
        }
    }

    fn ingest_failure(&mut self, index: usize, at: Ts, took: f64, error: ScrapeError) {
        let Some(target) = self.targets.get_mut(index) else {
            return;
        };
        target.last_attempt = Some(at);
        target.failing = true;
        target.last_error = Some((at, error));
        target.last_took = Some(took);
        let id = target.id;
        let rows = self.rows_of(id);
        let interval = self.row_interval(id);
        let stage = self.pod_stage(id);
        if let Some(rows) = self.engines.get_mut(rows) {
            for row in rows {
                row.status = scrape_status(row.last_ok, at, interval, stage);
            }
        }
    }

    /// Where target `id`'s pod is in its life, as far as its scrapes are concerned.
    fn pod_stage(&self, id: TargetId) -> PodStage {
        self.pods.get(&id).map_or(PodStage::Running, stage_of)
    }
}

fn stage_of(pod: &PodInfo) -> PodStage {
    if pod.terminating {
        PodStage::Leaving
    } else if pod.starting() {
        PodStage::Starting
    } else if !pod.ready {
        PodStage::Failing
    } else {
        PodStage::Running
    }
}

/// A pod's stage, for judging its scrapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodStage {
    /// Its first start (see [`PodInfo::starting`]).
    Starting,
    /// Being deleted: an engine shutting down stops answering.
    Leaving,
    /// Not ready after a failure (a restart, a crash loop, an image that will not pull).
    Failing,
    /// Ready, and targets that are no pod.
    Running,
}

/// The status of a row whose scrapes were attempted: as [`status_at`] says, except while the
/// pod comes or goes. After every rollout, drain or scale-up a new pod refuses scrapes until
/// its model is loaded, and an old one stops answering as it shuts down: neither is an
/// outage, so such a row is Pending (neither up nor down) rather than Stale or Down. A pod that
/// answered once, or is ready, is judged like any target until it is deleted.
fn scrape_status(last_ok: Option<Ts>, now: Ts, interval: f64, stage: PodStage) -> EngineStatus {
    let status = status_at(last_ok, now, interval);
    match stage {
        PodStage::Starting if last_ok.is_none() => EngineStatus::Pending,
        PodStage::Leaving if status != EngineStatus::Up => EngineStatus::Pending,
        _ => status,
    }
}

/// Heap bytes of a sample's histograms (the bulk of its size).
fn sample_heap_bytes(sample: &EngineSample) -> usize {
    [&sample.ttft, &sample.itl, &sample.e2e, &sample.queue_time]
        .into_iter()
        .flatten()
        .map(|h| h.buckets.capacity() * size_of::<Bucket>())
        .sum()
}

/// Points of per-GPU history: the full-resolution span at one point per interval.
fn gpu_history_points(settings: &FleetSettings) -> usize {
    let interval = super::status::effective_interval(settings.interval);
    let points = (settings.history_full_secs.max(0.0) / interval).ceil();
    if points.is_finite() {
        (points as usize).clamp(1, MAX_GPU_HISTORY_POINTS)
    } else {
        1
    }
}

/// Bound on the per-GPU history whatever the settings say.
const MAX_GPU_HISTORY_POINTS: usize = 7200;

mod gpu;
mod prometheus_source;

use prometheus_source::DerivedSource;
pub use prometheus_source::{
    BackfillReport, DerivedEngine, DerivedPayload, DerivedReport, DerivedSeries,
    DerivedSourceState, InstanceKey, ModelSignals, QueryFailure, SourceReport, SourceTarget,
    TargetHealth,
};

#[cfg(test)]
mod tests;
