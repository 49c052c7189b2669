//! Engines whose signals were derived elsewhere (a Prometheus server's `rate()` and
//! `histogram_quantile()`), folded into the fleet next to scraped ones.
//!
//! A source (one Prometheus) yields *members*: one scrape target per pod (or per `instance`
//! when the series carry no pod label), created the first time the pod appears, so each engine
//! row has the same per-target status, error and name rules as a directly scraped one:
//! - an answer that names the pod makes its rows Up with the signals as derived;
//! - an answer without the pod records "not in Prometheus' answer" against it (Stale, then
//!   Down), and a pod absent for [`FORGET_SECS`] is forgotten (rollouts replace pods);
//! - a failed answer (Prometheus down, HTTP error, every query failing) is recorded against
//!   every member, with Prometheus' own error text;
//! - queries that failed while others answered (partial data) leave their signals unknown and
//!   are recorded as the last error of every member, without making it fail.
//!
//! While a source has no member, one placeholder target named after it stands for it, so a
//! Prometheus that is down at start-up shows as a Down row with its error.

use std::collections::{BTreeMap, BTreeSet};

use super::{Fleet, ScrapePayload, TargetId, TargetSpec};
use crate::engine::{EngineId, EngineSample, GpuSample};
use crate::fleet::gpus::{GpuOrigin, Placement};
use crate::fleet::{ScrapeError, Signals, Ts};

/// How long a member absent from every answer is kept (shown Stale, then Down), seconds.
pub(crate) const FORGET_SECS: f64 = 600.0;

/// What a member absent from an answer is marked with.
pub(crate) const ABSENT: &str =
    "not in Prometheus' answer (pod gone, or Prometheus cannot scrape it)";

/// Identity of an engine's process in a Prometheus source: its pod (namespace and name), or
/// the scrape `instance` when the series carry no pod label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct InstanceKey {
    pub namespace: String,
    pub pod: String,
    /// Only set when `pod` is empty.
    pub instance: String,
}

impl InstanceKey {
    /// The key of a series with these label values: the pod when there is one (the instance
    /// is then ignored), else the instance.
    pub fn new(namespace: &str, pod: &str, instance: &str) -> InstanceKey {
        if pod.is_empty() {
            InstanceKey {
                namespace: namespace.to_owned(),
                pod: String::new(),
                instance: instance.to_owned(),
            }
        } else {
            InstanceKey {
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                instance: String::new(),
            }
        }
    }

    /// Display name: the pod, else the instance.
    pub fn name(&self) -> &str {
        if self.pod.is_empty() {
            &self.instance
        } else {
            &self.pod
        }
    }

    fn placement(&self, node: Option<String>) -> Placement {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Placement {
            pod: non_empty(&self.pod),
            namespace: non_empty(&self.namespace),
            node,
        }
    }
}

/// One engine as a source derived it.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedEngine {
    pub instance: InstanceKey,
    /// The node the pod runs on, when the source knows it (for the GPU join).
    pub node: Option<String>,
    /// When its newest sample was scraped (the source's own timestamp): its age is the age of
    /// the row's values, a lagging source's lag included. `None`: the time of the answer.
    pub sampled_at: Option<Ts>,
    /// Identity, flavor, gauges and cache config; counters and histograms stay `None` (the
    /// source derived them).
    pub sample: EngineSample,
    pub signals: Signals,
    /// How often its counters went back to zero within the source's window (`resets()`): a
    /// rise between cycles is a process restart. `None` when the source did not say.
    pub counter_resets: Option<f64>,
}

/// One model's latency quantiles as a source computed them over all its engines together: the
/// quantile of the summed bucket rates (as the dashboards do), never an average of the
/// engines' own quantiles. Only quantile signals are set.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSignals {
    pub model: String,
    pub signals: Signals,
}

/// A scrape target's health as the source reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetHealth {
    Up,
    Down,
    /// Not scraped yet.
    Unknown,
}

/// One of the source's scrape targets that exports (or should export) engine metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTarget {
    pub instance: InstanceKey,
    pub node: Option<String>,
    pub health: TargetHealth,
    /// The source's own error for its last scrape of the target.
    pub last_error: Option<String>,
    /// Its scrape interval, seconds, when the source says.
    pub scrape_interval: Option<f64>,
}

/// A query of a cycle that failed while others answered.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryFailure {
    /// The signal the query was for (`ttft`, `kv_usage`, ...).
    pub signal: String,
    pub error: ScrapeError,
}

/// What one cycle of a source yielded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DerivedPayload {
    pub engines: Vec<DerivedEngine>,
    /// GPUs, when the source was asked for them and answered; `None` keeps the GPUs it
    /// reported before (until they expire).
    pub gpus: Option<Vec<GpuSample>>,
    /// Queries sent this cycle.
    pub queries: usize,
    pub failures: Vec<QueryFailure>,
    /// Response bytes of the cycle.
    pub bytes: usize,
    /// The source's engine targets, when it lists them (`/api/v1/targets`): each has a row
    /// from the first answer on, and a row leaves only when its target does.
    pub targets: Option<Vec<SourceTarget>>,
    /// The window the source computed rates and quantiles over, seconds.
    pub window_secs: Option<f64>,
    /// Each model's quantiles over its engines' merged histograms.
    pub models: Vec<ModelSignals>,
}

/// One cycle's result, sent from the source's worker to the app loop.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedReport {
    /// The source's URL (without credentials).
    pub source: String,
    /// When the cycle completed.
    pub at: Ts,
    /// How long it took, seconds.
    pub took: f64,
    pub outcome: Result<DerivedPayload, ScrapeError>,
}

/// The past signals of one engine, oldest first, from a range query.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedSeries {
    pub instance: InstanceKey,
    pub node: Option<String>,
    pub id: EngineId,
    pub points: Vec<(Ts, Signals)>,
}

/// History read from a source at start-up, so charts are full at once.
#[derive(Debug, Clone, PartialEq)]
pub struct BackfillReport {
    pub source: String,
    pub series: Vec<DerivedSeries>,
    /// Why some or all of the history could not be read (shown with the source).
    pub failure: Option<String>,
}

/// What a source's worker sends to the app loop.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceReport {
    /// One cycle of instant queries.
    Cycle(DerivedReport),
    /// The history read at start-up.
    Backfill(BackfillReport),
}

/// What the console shows about a source itself.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedSourceState {
    /// URL (without credentials).
    pub url: String,
    pub last_attempt: Option<Ts>,
    pub last_ok: Option<Ts>,
    /// The last failure of a whole cycle (kept after a later success).
    pub last_error: Option<(Ts, ScrapeError)>,
    /// True when the most recent cycle failed as a whole.
    pub failing: bool,
    /// Queries of the last cycle, and those that failed while others answered.
    pub queries: usize,
    pub failures: Vec<QueryFailure>,
    /// Duration and response bytes of the last cycle.
    pub last_took: Option<f64>,
    pub last_bytes: Option<usize>,
    /// Pods (or instances) currently known.
    pub members: usize,
    /// History points read at start-up.
    pub backfilled_points: usize,
    /// Why the start-up history could not be read, when it could not.
    pub backfill_error: Option<String>,
    /// The window of its last answer's rates and quantiles, seconds.
    pub window_secs: Option<f64>,
}

impl DerivedSourceState {
    fn new(url: &str) -> Self {
        DerivedSourceState {
            url: url.to_owned(),
            last_attempt: None,
            last_ok: None,
            last_error: None,
            failing: false,
            queries: 0,
            failures: Vec::new(),
            last_took: None,
            last_bytes: None,
            members: 0,
            backfilled_points: 0,
            backfill_error: None,
            window_secs: None,
        }
    }
}

/// A member: the target standing for one pod, and when the pod was last in an answer (or
/// first seen in the backfill).
#[derive(Debug, Clone, Copy)]
struct Member {
    target: TargetId,
    last_seen: Ts,
}

/// One source's bookkeeping inside the fleet.
#[derive(Debug, Clone)]
pub(crate) struct DerivedSource {
    state: DerivedSourceState,
    /// Display name of the placeholder target.
    name: String,
    members: BTreeMap<InstanceKey, Member>,
    /// Every target of the source (members and placeholder).
    targets: BTreeSet<TargetId>,
    placeholder: Option<TargetId>,
    /// How often each member is scraped, as the source says, seconds.
    scrape_intervals: BTreeMap<TargetId, f64>,
    /// Each member's newest sample time, and the step between its last two (its scrape
    /// interval as observed).
    sampled: BTreeMap<TargetId, (Ts, Option<f64>)>,
    /// Members the source listed as targets at least once: they leave when it stops listing
    /// them. Members only ever known from series (data without targets: remote-written,
    /// backfilled, federated) are forgotten after [`FORGET_SECS`] instead.
    listed: BTreeSet<TargetId>,
    /// The models' merged quantiles of the last cycle.
    models: Vec<ModelSignals>,
}

impl DerivedSource {
    /// Whether `target` stands for this source or one of its pods.
    pub(crate) fn owns(&self, target: TargetId) -> bool {
        self.targets.contains(&target)
    }

    /// The interval the rows of `target` are judged by: `interval`, or the last cycle's
    /// duration if longer, plus the target's scrape interval when known (a sample is up to one
    /// scrape interval old before the next one arrives).
    fn interval(&self, interval: f64, target: TargetId) -> f64 {
        let polled = self
            .state
            .last_took
            .filter(|took| took.is_finite())
            .map_or(interval, |took| interval.max(took));
        polled + self.scrape_interval(target).unwrap_or(0.0)
    }

    /// How often `target` is scraped: as the source says, else as its samples show.
    fn scrape_interval(&self, target: TargetId) -> Option<f64> {
        self.scrape_intervals
            .get(&target)
            .copied()
            .or_else(|| self.sampled.get(&target).and_then(|(_, step)| *step))
    }
}

impl DerivedSource {
    /// Drop a member's bookkeeping (not its target).
    fn forget(&mut self, key: &InstanceKey, target: TargetId) {
        self.members.remove(key);
        self.targets.remove(&target);
        self.scrape_intervals.remove(&target);
        self.sampled.remove(&target);
        self.listed.remove(&target);
        self.state.members = self.members.len();
    }

    /// Note a member's newest sample time; two different ones tell its scrape interval.
    fn observe_sample(&mut self, target: TargetId, sampled_at: Ts) {
        let entry = self.sampled.entry(target).or_insert((sampled_at, None));
        let step = sampled_at - entry.0;
        if step > 0.0 && step.is_finite() {
            *entry = (sampled_at, Some(step));
        }
    }
}

/// Prometheus' error for a target, kept readable: one line, bounded in length.
fn target_error(text: &str) -> String {
    const MAX_CHARS: usize = 300;
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > MAX_CHARS {
        let cut: String = one_line.chars().take(MAX_CHARS).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// What a target of the source that has no engine in the answer is marked with.
fn target_failure(targets: &[&SourceTarget]) -> ScrapeError {
    let down = targets.iter().find(|t| t.health == TargetHealth::Down);
    let text = match down {
        Some(t) => match t.last_error.as_deref().filter(|e| !e.trim().is_empty()) {
            Some(error) => format!("Prometheus cannot scrape it: {}", target_error(error)),
            None => "Prometheus cannot scrape it (up == 0)".to_owned(),
        },
        None if targets.iter().all(|t| t.health == TargetHealth::Unknown) => {
            "not scraped by Prometheus yet".to_owned()
        }
        None => "scraped by Prometheus, but no engine series in its answer".to_owned(),
    };
    ScrapeError::Other(text)
}

impl Fleet {
    /// Register a Prometheus source: until its first answer naming pods it shows as one row
    /// named `name` (Down until it answers). Registering the same URL again does nothing.
    pub fn add_source(&mut self, url: &str, name: &str) {
        if self.source_index(url).is_none() {
            self.register_source(url, name);
        }
    }

    /// The sources, as registered.
    pub fn sources(&self) -> impl Iterator<Item = &DerivedSourceState> {
        self.sources.iter().map(|s| &s.state)
    }

    /// A model's quantiles over its engines' merged histograms, as the first source that
    /// computed them answered last.
    pub fn source_model_signals(&self, model: &str) -> Option<&Signals> {
        self.sources
            .iter()
            .flat_map(|s| &s.models)
            .find(|m| m.model == model)
            .map(|m| &m.signals)
    }

    /// The source a target stands for or belongs to, if any.
    pub fn source_of(&self, target: TargetId) -> Option<&DerivedSourceState> {
        self.sources
            .iter()
            .find(|s| s.owns(target))
            .map(|s| &s.state)
    }

    /// Fold a source's report into the fleet.
    pub fn ingest_source(&mut self, report: SourceReport) {
        match report {
            SourceReport::Cycle(cycle) => self.ingest_derived(cycle),
            SourceReport::Backfill(backfill) => self.backfill(backfill),
        }
    }

    /// Fold one cycle of a source into the fleet (see the module docs). Reports of an unknown
    /// source register it.
    pub(crate) fn ingest_derived(&mut self, report: DerivedReport) {
        let source = self
            .source_index(&report.source)
            .unwrap_or_else(|| self.register_source(&report.source, &report.source));
        let (at, took) = (report.at, report.took);
        if let Some(s) = self.sources.get_mut(source) {
            s.state.last_attempt = Some(at);
            s.state.last_took = Some(took);
        }
        match report.outcome {
            Ok(payload) => self.ingest_derived_payload(source, &report.source, at, took, payload),
            Err(error) => {
                let Some(s) = self.sources.get_mut(source) else {
                    return;
                };
                s.state.failing = true;
                s.state.last_error = Some((at, error.clone()));
                let targets: Vec<TargetId> = s.targets.iter().copied().collect();
                for target in targets {
                    if let Some(index) = self.target_index(target) {
                        self.ingest_failure(index, at, took, error.clone());
                    }
                }
            }
        }
    }

    /// Fill the history of a source's engines from the past (rows are created as needed and
    /// stay Down until the first live answer). Points older than a row's newest are ignored.
    pub fn backfill(&mut self, report: BackfillReport) {
        let source = self
            .source_index(&report.source)
            .unwrap_or_else(|| self.register_source(&report.source, &report.source));
        let mut series = report.series;
        series.sort_by(|a, b| a.instance.cmp(&b.instance).then_with(|| a.id.cmp(&b.id)));
        let mut points = 0;
        let mut iter = series.into_iter().peekable();
        while let Some(first) = iter.next() {
            let key = first.instance.clone();
            let mut group = vec![first];
            while let Some(next) = iter.next_if(|s| s.instance == key) {
                group.push(next);
            }
            let newest = group
                .iter()
                .filter_map(|s| s.points.last().map(|(t, _)| *t))
                .fold(f64::NEG_INFINITY, f64::max);
            let node = group.iter().find_map(|s| s.node.clone());
            let target = self.member(source, &report.source, &key, node, newest);
            points += self.backfill_target(target, group);
        }
        self.settle_placeholder(source, &report.source);
        if let Some(s) = self.sources.get_mut(source) {
            s.state.backfilled_points += points;
            s.state.backfill_error = report.failure;
        }
    }

    /// Forget members absent for [`FORGET_SECS`]; true if rows went away.
    pub(super) fn tick_sources(&mut self, now: Ts) -> bool {
        let mut changed = false;
        for source in 0..self.sources.len() {
            let Some(s) = self.sources.get_mut(source) else {
                continue;
            };
            let old: Vec<(InstanceKey, TargetId)> = s
                .members
                .iter()
                .filter(|(_, m)| now - m.last_seen > FORGET_SECS)
                .map(|(k, m)| (k.clone(), m.target))
                .collect();
            if old.is_empty() {
                continue;
            }
            for (key, target) in &old {
                s.forget(key, *target);
            }
            s.state.members = s.members.len();
            let url = s.state.url.clone();
            for (_, target) in old {
                self.remove_target(target);
                changed = true;
            }
            self.settle_placeholder(source, &url);
        }
        changed
    }

    /// The interval a target's rows are judged by (Up, Stale, Down): the scrape interval, or
    /// for a source's targets the time its last cycle took when that was longer (a slow
    /// Prometheus stretches its cycles; its rows must not blink Stale in between).
    pub(super) fn row_interval(&self, target: TargetId) -> f64 {
        self.sources
            .iter()
            .find(|s| s.owns(target))
            .map_or(self.settings.interval, |s| {
                s.interval(self.settings.interval, target)
            })
    }

    fn source_index(&self, url: &str) -> Option<usize> {
        self.sources.iter().position(|s| s.state.url == url)
    }

    fn register_source(&mut self, url: &str, name: &str) -> usize {
        self.sources.push(DerivedSource {
            state: DerivedSourceState::new(url),
            name: name.to_owned(),
            members: BTreeMap::new(),
            targets: BTreeSet::new(),
            placeholder: None,
            scrape_intervals: BTreeMap::new(),
            sampled: BTreeMap::new(),
            listed: BTreeSet::new(),
            models: Vec::new(),
        });
        let index = self.sources.len() - 1;
        self.settle_placeholder(index, url);
        index
    }

    /// The target of the member `key` of source `source`, created if new; marks it seen at `at`.
    fn member(
        &mut self,
        source: usize,
        url: &str,
        key: &InstanceKey,
        node: Option<String>,
        at: Ts,
    ) -> TargetId {
        if let Some(member) = self
            .sources
            .get_mut(source)
            .and_then(|s| s.members.get_mut(key))
        {
            if at.is_finite() {
                member.last_seen = member.last_seen.max(at);
            }
            let target = member.target;
            let placement = key.placement(node);
            if placement.node.is_some() && self.placements.get(&target) != Some(&placement) {
                self.set_placement(target, placement);
            }
            return target;
        }
        let target = self.add_target(TargetSpec {
            name: key.name().to_owned(),
            url: url.to_owned(),
        });
        self.set_placement(target, key.placement(node));
        if let Some(s) = self.sources.get_mut(source) {
            s.members.insert(
                key.clone(),
                Member {
                    target,
                    last_seen: if at.is_finite() { at } else { 0.0 },
                },
            );
            s.targets.insert(target);
            s.state.members = s.members.len();
        }
        target
    }

    /// The placeholder exists exactly while the source has no member.
    fn settle_placeholder(&mut self, source: usize, url: &str) {
        let Some(s) = self.sources.get(source) else {
            return;
        };
        match (s.members.is_empty(), s.placeholder) {
            (true, None) => {
                let name = s.name.clone();
                let target = self.add_target(TargetSpec {
                    name,
                    url: url.to_owned(),
                });
                // The source itself runs no engine: it joins no GPU.
                self.set_placement(target, Placement::default());
                if let Some(s) = self.sources.get_mut(source) {
                    s.placeholder = Some(target);
                    s.targets.insert(target);
                }
            }
            (false, Some(target)) => {
                if let Some(s) = self.sources.get_mut(source) {
                    s.placeholder = None;
                    s.targets.remove(&target);
                }
                self.remove_target(target);
            }
            _ => {}
        }
    }

    fn ingest_derived_payload(
        &mut self,
        source: usize,
        url: &str,
        at: Ts,
        took: f64,
        payload: DerivedPayload,
    ) {
        if let Some(s) = self.sources.get_mut(source) {
            s.state.last_ok = Some(at);
            s.state.failing = false;
            s.state.window_secs = payload.window_secs.or(s.state.window_secs);
            s.state.queries = payload.queries;
            s.state.failures = payload.failures.clone();
            s.state.last_bytes = Some(payload.bytes);
            s.models = payload.models;
        }
        let mut engines = payload.engines;
        engines.sort_by(|a, b| {
            a.instance
                .cmp(&b.instance)
                .then_with(|| a.sample.id.cmp(&b.sample.id))
        });
        // One row per engine: a duplicate keeps its first reading.
        engines.dedup_by(|later, first| {
            later.instance == first.instance && later.sample.id == first.sample.id
        });
        let partial = payload.failures.first().map(|f| {
            let more = match payload.failures.len() {
                1 => String::new(),
                n => format!(" (and {} more of {} queries)", n - 1, payload.queries),
            };
            ScrapeError::Other(format!("{} query: {}{more}", f.signal, f.error))
        });

        // Every listed target is a member (created on first sight) scraped as often as the
        // source says.
        let mut listed: BTreeMap<InstanceKey, Vec<&SourceTarget>> = BTreeMap::new();
        for target in payload.targets.iter().flatten() {
            listed
                .entry(target.instance.clone())
                .or_default()
                .push(target);
        }
        for (key, targets) in &listed {
            let node = targets.iter().find_map(|t| t.node.clone());
            let target = self.member(source, url, key, node, at);
            let told = targets
                .iter()
                .filter_map(|t| t.scrape_interval)
                .filter(|i| i.is_finite() && *i > 0.0)
                .fold(None, |max: Option<f64>, i| {
                    Some(max.map_or(i, |m| m.max(i)))
                });
            if let Some(s) = self.sources.get_mut(source) {
                s.listed.insert(target);
                if let Some(interval) = told {
                    s.scrape_intervals.insert(target, interval);
                }
            }
        }

        let mut seen = BTreeSet::new();
        let mut iter = engines.into_iter().peekable();
        while let Some(first) = iter.next() {
            let key = first.instance.clone();
            let mut group = vec![first];
            while let Some(next) = iter.next_if(|e| e.instance == key) {
                group.push(next);
            }
            let node = group.iter().find_map(|e| e.node.clone());
            let target = self.member(source, url, &key, node, at);
            self.ingest_member(source, target, at, took, group, partial.clone());
            seen.insert(key);
        }

        // Targets the source lists but whose engines are not in the answer: down, not scraped
        // yet, or scraped without engine series. Each has a row, with the source's words.
        for (key, targets) in &listed {
            if seen.contains(key) {
                continue;
            }
            let Some(target) = self
                .sources
                .get(source)
                .and_then(|s| s.members.get(key))
                .map(|m| m.target)
            else {
                continue;
            };
            if let Some(index) = self.target_index(target) {
                self.ingest_failure(index, at, took, target_failure(targets));
            }
        }

        let absent: Vec<(InstanceKey, TargetId, bool)> = self
            .sources
            .get(source)
            .map(|s| {
                s.members
                    .iter()
                    .filter(|(key, _)| !seen.contains(*key) && !listed.contains_key(*key))
                    .map(|(key, m)| (key.clone(), m.target, s.listed.contains(&m.target)))
                    .collect()
            })
            .unwrap_or_default();
        for (key, target, was_listed) in absent {
            if payload.targets.is_some() && was_listed {
                // The source no longer scrapes it: the row leaves with its target.
                if let Some(s) = self.sources.get_mut(source) {
                    s.forget(&key, target);
                }
                self.remove_target(target);
            } else if let Some(index) = self.target_index(target) {
                self.ingest_failure(index, at, took, ScrapeError::Other(ABSENT.to_owned()));
            }
        }

        self.settle_placeholder(source, url);
        let placeholder = self.sources.get(source).and_then(|s| s.placeholder);
        if let Some(index) = placeholder.and_then(|t| self.target_index(t)) {
            // A good answer without engines: the source row is Up with unknown values, or,
            // when the source reads GPUs only, a GPU exporter's (kept out of engine tables).
            self.ingest_payload(index, at, took, ScrapePayload::default());
            if let (Some(error), Some(t)) = (partial, self.targets.get_mut(index)) {
                t.last_error = Some((at, error));
            }
            if let Some(target) = placeholder {
                if payload.gpus.as_ref().is_some_and(|g| !g.is_empty()) {
                    self.gpu_exporters.insert(target);
                } else {
                    self.gpu_exporters.remove(&target);
                }
            }
        }
        if let Some(gpus) = payload.gpus {
            self.ingest_gpus(GpuOrigin::Derived(url.to_owned()), at, gpus);
        }
    }

    /// Rows of one member from one answer: like a good scrape, with the signals as derived.
    fn ingest_member(
        &mut self,
        source: usize,
        target: TargetId,
        at: Ts,
        took: f64,
        engines: Vec<DerivedEngine>,
        partial: Option<ScrapeError>,
    ) {
        let Some(index) = self.target_index(target) else {
            return;
        };
        // The age of what the source answered: its newest sample's, never in the future.
        let sampled_at = engines
            .iter()
            .filter_map(|e| e.sampled_at)
            .filter(|t| t.is_finite())
            .fold(None, |max: Option<Ts>, t| Some(max.map_or(t, |m| m.max(t))))
            .map(|t| t.min(at));
        if let (Some(sampled), Some(s)) = (sampled_at, self.sources.get_mut(source)) {
            s.observe_sample(target, sampled);
        }
        let last_ok = sampled_at.unwrap_or(at);
        let interval = self.row_interval(target);
        if let Some(t) = self.targets.get_mut(index) {
            t.last_attempt = Some(at);
            t.last_ok = Some(last_ok);
            t.failing = false;
            t.last_took = Some(took);
            t.last_bytes = None;
            t.malformed = 0;
            t.first_malformed = None;
            if let Some(error) = partial {
                t.last_error = Some((at, error));
            }
        }
        let rows = self.rows_of(target);
        let unchanged = rows.len() == engines.len()
            && self.engines.get(rows.clone()).is_some_and(|current| {
                current
                    .iter()
                    .zip(&engines)
                    .all(|(row, e)| row.id == e.sample.id)
            });
        if !unchanged {
            self.replace_rows(index, rows.clone(), engines.iter().map(|e| &e.sample.id));
        }
        let range = rows.start..rows.start + engines.len();
        let gpu = self.gpus.signals_of(target);
        let Some(rows) = self.engines.get_mut(range) else {
            return;
        };
        for (row, engine) in rows.iter_mut().zip(engines) {
            // More resets in the window than last cycle: the process started again since.
            if let Some(resets) = engine.counter_resets.filter(|r| r.is_finite()) {
                if resets > row.counter_resets.unwrap_or(0.0) {
                    row.restarted_at = Some(at);
                }
                row.counter_resets = Some(resets);
            }
            row.signals = engine.signals;
            gpu.apply_to(&mut row.signals);
            row.latest = Some(engine.sample);
            row.last_ok = Some(last_ok);
            row.status = super::status_at(Some(last_ok), at, interval);
            row.history.push(at, &row.signals);
        }
    }

    /// Past points of one member's engines; returns the points pushed.
    fn backfill_target(&mut self, target: TargetId, series: Vec<DerivedSeries>) -> usize {
        let Some(index) = self.target_index(target) else {
            return 0;
        };
        let rows = self.rows_of(target);
        let mut ids: Vec<EngineId> = self
            .engines
            .get(rows.clone())
            .unwrap_or_default()
            .iter()
            .filter(|row| !(row.latest.is_none() && row.id == EngineId::default()))
            .map(|row| row.id.clone())
            .collect();
        ids.extend(series.iter().map(|s| s.id.clone()));
        ids.sort();
        ids.dedup();
        let unchanged = rows.len() == ids.len()
            && self
                .engines
                .get(rows.clone())
                .is_some_and(|current| current.iter().zip(&ids).all(|(row, id)| row.id == *id));
        if !unchanged {
            self.replace_rows(index, rows.clone(), ids.iter());
        }
        let rows = self.rows_of(target);
        let mut pushed = 0;
        for s in series {
            let Some(row) = self
                .engines
                .get_mut(rows.clone())
                .and_then(|rows| rows.iter_mut().find(|r| r.id == s.id))
            else {
                continue;
            };
            for (t, signals) in &s.points {
                row.history.push(*t, signals);
                pushed += 1;
            }
        }
        pushed
    }
}

#[cfg(test)]
mod tests;
