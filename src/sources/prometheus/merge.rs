//! PURE. The answers of one cycle (or one backfill) merged into one entry per engine.
//!
//! An engine is (pod or instance, `model_name`, `engine`) under the configured label names. It
//! exists when the KV-usage or the `running` answer names it; values of other answers for
//! engines that neither names are dropped (a pod whose scrape fails keeps `rate()` values for
//! a window after its gauges went stale). Per-process values (CPU) go to every engine of the
//! process; `cache_config_info` (which has `engine` but no `model_name`) to every engine of its
//! process with the same `engine` label, or all of them when it has none.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::decode::Answer;
use super::query::{LabelMap, QUANTILE_LABEL, QuerySpec, Shape};
use kvtop_core::engine::{CacheConfig, EngineId, EngineSample, GpuSample};
use kvtop_core::fleet::{DerivedEngine, DerivedSeries, InstanceKey, ModelSignals, Signals, Ts};
use kvtop_core::signals::{FlavorEvidence, SIGNALS, Signal, routes, signal};

/// Write one value into its field.
pub(crate) fn set_slot(signals: &mut Signals, slot: Signal, value: f64) {
    signal(slot).set(signals, value);
}

/// Labels that are never `cache_config_info` fields: series identity and common target labels.
const NOT_CACHE_FIELDS: [&str; 7] = [
    "__name__",
    "job",
    "service",
    "endpoint",
    "container",
    "prometheus",
    "prometheus_replica",
];

/// An engine's identity in answers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct EngineKey {
    instance: InstanceKey,
    model: String,
    engine: String,
}

/// What one series says about who it is, borrowed from the answer.
struct Identity<'s> {
    namespace: &'s str,
    pod: &'s str,
    /// Empty when `pod` is set (the pod identifies the process).
    instance: &'s str,
    model: &'s str,
    engine: &'s str,
    node: Option<&'s str>,
}

impl Identity<'_> {
    fn instance_key(&self) -> InstanceKey {
        InstanceKey::new(self.namespace, self.pod, self.instance)
    }

    fn engine_key(&self) -> EngineKey {
        EngineKey {
            instance: self.instance_key(),
            model: self.model.to_owned(),
            engine: self.engine.to_owned(),
        }
    }

    /// A hash of the engine's identity, to find it without building its key.
    fn engine_hash(&self) -> u64 {
        hash_of(&[
            self.namespace,
            self.pod,
            self.instance,
            self.model,
            self.engine,
        ])
    }

    fn is(&self, key: &EngineKey) -> bool {
        key.instance.namespace == self.namespace
            && key.instance.pod == self.pod
            && key.instance.instance == self.instance
            && key.model == self.model
            && key.engine == self.engine
    }
}

fn identity<'s>(labels: &LabelMap, item: &'s super::decode::Item<'_>) -> Identity<'s> {
    let get = |name: &str| item.label(name).unwrap_or("");
    let pod = get(&labels.pod);
    Identity {
        namespace: get(&labels.namespace),
        pod,
        instance: if pod.is_empty() {
            get(&labels.instance)
        } else {
            ""
        },
        model: get(&labels.model),
        engine: get(&labels.engine),
        node: labels.node.as_deref().and_then(|n| item.label(n)),
    }
}

/// Which report of an engine a series is: its scrape (instance, job) and the replica that
/// stored it. Two jobs scraping one pod, or the two halves of an HA pair, are two reports of
/// one engine: one is taken, never their sum.
fn report_of(labels: &LabelMap, item: &super::decode::Item<'_>) -> String {
    let mut report = String::new();
    write_report(labels, item, &mut report);
    report
}

/// [`report_of`] into `out` (cleared first), without allocating when it has room.
fn write_report(labels: &LabelMap, item: &super::decode::Item<'_>, out: &mut String) {
    out.clear();
    for (i, name) in labels.report_labels().into_iter().enumerate() {
        if i > 0 {
            out.push('\u{1f}');
        }
        out.push_str(item.label(name).unwrap_or(""));
    }
}

fn hash_of(parts: &[&str]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    hasher.finish()
}

/// One report of an engine while the answers of a cycle come in.
#[derive(Debug, Default)]
struct ReportAcc {
    present: bool,
    /// Whether a KV-usage series named it (its names tell the flavor).
    kv_named: bool,
    flavor: FlavorEvidence,
    signals: Signals,
    /// Time of its newest sample.
    sampled_at: Option<f64>,
    /// Counter resets in the window.
    resets: Option<f64>,
}

/// One engine while the answers of a cycle come in: its reports, by report key.
#[derive(Debug, Default)]
struct EngineAcc {
    node: Option<String>,
    reports: BTreeMap<String, ReportAcc>,
}

impl EngineAcc {
    /// The report taken for the engine: of those naming it in the KV-usage or `running`
    /// answer, the one with the newest sample (the first by key on a tie). Signals it lacks
    /// are taken from the other reports, in key order; nothing is ever summed.
    fn settle(self) -> Option<Settled> {
        let EngineAcc { node, mut reports } = self;
        let chosen = reports
            .iter()
            .filter(|(_, r)| r.present)
            .max_by(|a, b| {
                let t = |r: &ReportAcc| r.sampled_at.unwrap_or(f64::NEG_INFINITY);
                t(a.1).total_cmp(&t(b.1)).then_with(|| b.0.cmp(a.0))
            })
            .map(|(report, _)| report.clone())?;
        let first = reports.remove(&chosen)?;
        let mut signals = first.signals;
        let mut flavor = first.kv_named.then_some(first.flavor);
        for other in reports.values() {
            for def in &SIGNALS {
                if (def.get)(&signals).is_none() {
                    if let Some(value) = (def.get)(&other.signals) {
                        def.set(&mut signals, value);
                    }
                }
            }
            if flavor.is_none() && other.kv_named {
                flavor = Some(other.flavor);
            }
        }
        Some(Settled {
            report: chosen,
            node,
            flavor: flavor.unwrap_or(first.flavor),
            signals,
            sampled_at: first.sampled_at,
            resets: first.resets,
        })
    }
}

/// An engine's values once its report is chosen.
struct Settled {
    report: String,
    node: Option<String>,
    flavor: FlavorEvidence,
    signals: Signals,
    sampled_at: Option<f64>,
    resets: Option<f64>,
}

/// Per-process values of one report.
type ProcessValues = Vec<(String, Signal, f64)>;

/// The answers of one cycle, merged per engine.
#[derive(Debug)]
pub struct CycleMerge<'l> {
    labels: &'l LabelMap,
    engines: Vec<(EngineKey, EngineAcc)>,
    /// Identity hash → positions in `engines`.
    engine_index: HashMap<u64, Vec<usize>>,
    process: HashMap<InstanceKey, ProcessValues>,
    caches: HashMap<InstanceKey, Vec<(String, CacheConfig)>>,
    gpus: Option<Vec<GpuSample>>,
    /// Identity hash of a GPU → positions in `gpus`.
    gpu_index: HashMap<u64, Vec<usize>>,
    /// The jobs whose series name engines.
    jobs: BTreeSet<String>,
    /// Each model's quantiles over its merged histograms.
    models: BTreeMap<String, Signals>,
    /// Reused buffer for the report key of a series.
    report_key: String,
}

impl<'l> CycleMerge<'l> {
    pub fn new(labels: &'l LabelMap) -> Self {
        CycleMerge {
            labels,
            engines: Vec::new(),
            engine_index: HashMap::new(),
            process: HashMap::new(),
            caches: HashMap::new(),
            gpus: None,
            gpu_index: HashMap::new(),
            jobs: BTreeSet::new(),
            models: BTreeMap::new(),
            report_key: String::new(),
        }
    }

    /// The scrape jobs whose series named engines so far.
    pub fn engine_jobs(&self) -> &BTreeSet<String> {
        &self.jobs
    }

    fn note_job(&mut self, item: &super::decode::Item<'_>) {
        if let Some(job) = item.label(&self.labels.job) {
            if !self.jobs.contains(job) {
                self.jobs.insert(job.to_owned());
            }
        }
    }

    /// Fold the answer of one query in.
    pub fn add(&mut self, spec: &QuerySpec, answer: &Answer<'_>) {
        for item in &answer.series {
            match &spec.shape {
                Shape::Dcgm => {
                    let gpus = self.gpus.get_or_insert_with(Vec::new);
                    add_dcgm(gpus, &mut self.gpu_index, self.labels, item);
                }
                Shape::CacheConfig => {
                    let id = identity(self.labels, item);
                    let config = cache_config(self.labels, item);
                    self.caches
                        .entry(id.instance_key())
                        .or_default()
                        .push((id.engine.to_owned(), config));
                }
                Shape::Process(slot) => {
                    if let Some(value) = item.sample() {
                        let id = identity(self.labels, item);
                        let report = report_of(self.labels, item);
                        self.process
                            .entry(id.instance_key())
                            .or_default()
                            .push((report, *slot, value));
                    }
                }
                Shape::KvRaw => {
                    self.note_job(item);
                    let Some(acc) = self.entry(item) else {
                        continue;
                    };
                    acc.present = true;
                    acc.kv_named = true;
                    add_flavor_evidence(item, &mut acc.flavor);
                    if let Some(value) = item.sample() {
                        let max = acc.signals.kv_usage.map_or(value, |v| v.max(value));
                        acc.signals.kv_usage = Some(max);
                    }
                }
                Shape::Engine(slot) => {
                    if *slot == Signal::Running {
                        self.note_job(item);
                    }
                    let value = item.sample();
                    let Some(acc) = self.entry(item) else {
                        continue;
                    };
                    if *slot == Signal::Running {
                        acc.present = true;
                    }
                    if let Some(value) = value {
                        set_slot(&mut acc.signals, *slot, value);
                    }
                }
                Shape::Quantiles(slots) => {
                    let slot = item
                        .label(QUANTILE_LABEL)
                        .and_then(|q| slots.iter().find(|(name, _)| *name == q))
                        .map(|(_, slot)| *slot);
                    if let (Some(slot), Some(value)) = (slot, item.sample()) {
                        self.set_engine_value(item, slot, value);
                    }
                }
                Shape::Sampled => {
                    if let Some(value) = item.sample().filter(|v| v.is_finite()) {
                        if let Some(acc) = self.entry(item) {
                            acc.sampled_at = Some(acc.sampled_at.map_or(value, |t| t.max(value)));
                        }
                    }
                }
                Shape::Resets => {
                    if let Some(value) = item.sample().filter(|v| v.is_finite()) {
                        if let Some(acc) = self.entry(item) {
                            acc.resets = Some(acc.resets.map_or(value, |r| r.max(value)));
                        }
                    }
                }
                Shape::ModelQuantiles => {
                    let def = item
                        .label(QUANTILE_LABEL)
                        .and_then(|name| SIGNALS.iter().find(|d| d.name == name));
                    let model = item.label(&self.labels.model).unwrap_or("");
                    if let (Some(def), Some(value)) = (def, item.sample()) {
                        self.set_model_value(model, def.id, value);
                    }
                }
                // Derived by the past-window reader, which sets the values it derives.
                Shape::BucketRates { .. } => {}
            }
        }
    }

    /// One signal of the report of an engine that `item` (any series carrying the report's
    /// labels) names.
    pub fn set_engine_value(&mut self, item: &super::decode::Item<'_>, slot: Signal, value: f64) {
        if let Some(acc) = self.entry(item) {
            set_slot(&mut acc.signals, slot, value);
        }
    }

    /// One signal of a model over its engines' merged histograms; a value without a model, or
    /// not finite, is none.
    pub fn set_model_value(&mut self, model: &str, slot: Signal, value: f64) {
        if !model.is_empty() && value.is_finite() {
            let signals = self.models.entry(model.to_owned()).or_default();
            set_slot(signals, slot, value);
        }
    }

    /// Each model's quantiles over its engines' merged histograms, by model name.
    pub fn models(&self) -> Vec<ModelSignals> {
        self.models
            .iter()
            .map(|(model, signals)| ModelSignals {
                model: model.clone(),
                signals: *signals,
            })
            .collect()
    }

    /// The engines that exist, sorted by identity, and the GPUs if DCGM was read.
    pub fn finish(self) -> (Vec<DerivedEngine>, Option<Vec<GpuSample>>) {
        let CycleMerge {
            mut engines,
            process,
            caches,
            gpus,
            ..
        } = self;
        engines.sort_by(|a, b| a.0.cmp(&b.0));
        let derived = engines
            .into_iter()
            .filter_map(|(key, acc)| {
                let Settled {
                    report: chosen,
                    node,
                    flavor,
                    mut signals,
                    sampled_at,
                    resets,
                } = acc.settle()?;
                let values = process.get(&key.instance).into_iter().flatten();
                let (mine, others): (Vec<_>, Vec<_>) =
                    values.partition(|(report, _, _)| *report == chosen);
                for (_, slot, value) in others.into_iter().chain(mine) {
                    // The chosen report's own values come last, so they win.
                    set_slot(&mut signals, *slot, *value);
                }
                let cache_config = agreed_cache_config(
                    caches
                        .get(&key.instance)
                        .into_iter()
                        .flatten()
                        .filter(|(engine, _)| engine.is_empty() || *engine == key.engine)
                        .map(|(_, config)| config),
                );
                signals.kv_capacity_tokens = cache_config
                    .as_ref()
                    .and_then(CacheConfig::kv_capacity_tokens)
                    .map(|tokens| tokens as f64);
                let sample = EngineSample {
                    id: EngineId {
                        model: key.model,
                        engine: key.engine,
                    },
                    flavor: flavor.flavor(),
                    kv_usage: signals.kv_usage,
                    running: signals.running,
                    waiting: signals.waiting,
                    swapped: signals.swapped,
                    cache_config,
                    ..EngineSample::default()
                };
                Some(DerivedEngine {
                    instance: key.instance,
                    node,
                    sampled_at,
                    sample,
                    signals,
                    counter_resets: resets,
                })
            })
            .collect();
        (derived, gpus)
    }

    /// The report a series belongs to, its engine created on first sight.
    fn entry(&mut self, item: &super::decode::Item<'_>) -> Option<&mut ReportAcc> {
        let id = identity(self.labels, item);
        let positions = self.engine_index.entry(id.engine_hash()).or_default();
        let found = positions
            .iter()
            .copied()
            .find(|&i| self.engines.get(i).is_some_and(|(key, _)| id.is(key)));
        let index = match found {
            Some(index) => index,
            None => {
                self.engines.push((id.engine_key(), EngineAcc::default()));
                let index = self.engines.len() - 1;
                positions.push(index);
                index
            }
        };
        // Most series name a report already seen: found without a new key.
        write_report(self.labels, item, &mut self.report_key);
        let (_, acc) = self.engines.get_mut(index)?;
        if acc.node.is_none() {
            acc.node = id.node.map(str::to_owned);
        }
        if !acc.reports.contains_key(self.report_key.as_str()) {
            acc.reports
                .insert(self.report_key.clone(), ReportAcc::default());
        }
        acc.reports.get_mut(self.report_key.as_str())
    }
}

/// What a KV-usage series tells about its engine's flavor: its name (as the catalog says) and
/// whether it has vLLM V1's `engine` label.
fn add_flavor_evidence(item: &super::decode::Item<'_>, evidence: &mut FlavorEvidence) {
    if let Some(route) = item.label("__name__").and_then(routes::route_of) {
        evidence.name(route.vendor, route.proves);
    }
    if item.label("engine").is_some() {
        evidence.engine_label();
    }
}

/// The configuration of an engine from the series that apply to it: the first, or what
/// several different ones agree on (as a direct scrape resolves it).
fn agreed_cache_config<'c>(
    mut configs: impl Iterator<Item = &'c CacheConfig>,
) -> Option<CacheConfig> {
    let first = configs.next()?;
    let mut fields = first.fields.clone();
    let mut disputed = false;
    for other in configs.filter(|c| c.fields != first.fields) {
        disputed = true;
        kvtop_core::engine::keep_agreed_cache_fields(&mut fields, other.fields.iter());
    }
    if disputed {
        Some(kvtop_core::engine::cache_config_from_fields(fields))
    } else {
        Some(first.clone())
    }
}

fn cache_config(labels: &LabelMap, item: &super::decode::Item<'_>) -> CacheConfig {
    let identity = labels.names();
    let fields = item
        .labels()
        .filter(|(name, _)| !NOT_CACHE_FIELDS.contains(name) && !identity.contains(name))
        .collect();
    kvtop_core::engine::cache_config_from_fields(fields)
}

/// Fold one DCGM series into the GPU list (a GPU is host, index and UUID).
fn add_dcgm(
    gpus: &mut Vec<GpuSample>,
    index: &mut HashMap<u64, Vec<usize>>,
    labels: &LabelMap,
    item: &super::decode::Item<'_>,
) {
    let Some(field) = item
        .label("__name__")
        .and_then(|n| n.strip_prefix("DCGM_FI_DEV_"))
    else {
        return;
    };
    let Some(gpu_index) = item.label("gpu") else {
        return;
    };
    let non_empty = |name: &str| item.label(name).filter(|v| !v.is_empty());
    let hostname = non_empty("Hostname")
        .or_else(|| non_empty("hostname"))
        .or_else(|| labels.node.as_deref().and_then(non_empty))
        .or_else(|| non_empty(&labels.instance))
        .unwrap_or("");
    let uuid = item.label("UUID").unwrap_or("");
    let positions = index
        .entry(hash_of(&[hostname, gpu_index, uuid]))
        .or_default();
    let found = positions.iter().copied().find(|&i| {
        gpus.get(i)
            .is_some_and(|g| g.gpu == gpu_index && g.hostname == hostname && g.uuid == uuid)
    });
    let position = match found {
        Some(position) => position,
        None => {
            // The workload's labels: `exported_*` when Prometheus renamed them (its own
            // `pod`/`namespace` then name the exporter), else `pod`/`namespace`.
            let pod = non_empty("exported_pod")
                .or_else(|| non_empty(&labels.pod))
                .or_else(|| non_empty("pod_name"));
            let namespace = non_empty("exported_namespace")
                .or_else(|| non_empty(&labels.namespace))
                .or_else(|| non_empty("pod_namespace"));
            gpus.push(GpuSample {
                gpu: gpu_index.to_owned(),
                uuid: uuid.to_owned(),
                model_name: item.label("modelName").unwrap_or("").to_owned(),
                hostname: hostname.to_owned(),
                pod: pod.map(str::to_owned),
                namespace: namespace.map(str::to_owned),
                ..GpuSample::default()
            });
            positions.push(gpus.len() - 1);
            gpus.len() - 1
        }
    };
    let Some(gpu) = gpus.get_mut(position) else {
        return;
    };
    let slot = match field {
        "GPU_UTIL" => &mut gpu.util_pct,
        "FB_USED" => &mut gpu.fb_used_mib,
        "FB_FREE" => &mut gpu.fb_free_mib,
        "FB_RESERVED" => &mut gpu.fb_reserved_mib,
        "GPU_TEMP" => &mut gpu.temp_c,
        "POWER_USAGE" => &mut gpu.power_w,
        "SM_CLOCK" => &mut gpu.sm_clock_mhz,
        "XID_ERRORS" => &mut gpu.xid,
        _ => return,
    };
    if let Some(value) = item.sample() {
        *slot = Some(value);
    }
}

/// The answers of a backfill (range queries), merged per engine and time.
#[derive(Debug)]
pub(crate) struct RangeMerge<'l> {
    labels: &'l LabelMap,
    /// Per engine: node, and per report its signals per evaluation time in milliseconds.
    engines: BTreeMap<EngineKey, (Option<String>, ReportPoints)>,
}

/// Per report (see [`report_of`]), signals per evaluation time in milliseconds.
type ReportPoints = BTreeMap<String, BTreeMap<i64, Signals>>;

impl<'l> RangeMerge<'l> {
    pub fn new(labels: &'l LabelMap) -> Self {
        RangeMerge {
            labels,
            engines: BTreeMap::new(),
        }
    }

    /// Fold the answer of one range query in.
    pub fn add(&mut self, spec: &QuerySpec, answer: &Answer<'_>) {
        for item in &answer.series {
            let slot = match &spec.shape {
                Shape::KvRaw => Some(Signal::KvUsage),
                Shape::Engine(slot) => Some(*slot),
                Shape::Quantiles(slots) => item
                    .label(QUANTILE_LABEL)
                    .and_then(|q| slots.iter().find(|(name, _)| *name == q))
                    .map(|(_, slot)| *slot),
                Shape::Process(_)
                | Shape::CacheConfig
                | Shape::Dcgm
                | Shape::Sampled
                | Shape::Resets
                | Shape::ModelQuantiles
                | Shape::BucketRates { .. } => None,
            };
            let Some(slot) = slot else {
                continue;
            };
            let id = identity(self.labels, item);
            let node = id.node.map(str::to_owned);
            let (known_node, reports) = self.engines.entry(id.engine_key()).or_default();
            if known_node.is_none() {
                *known_node = node;
            }
            let points = reports.entry(report_of(self.labels, item)).or_default();
            for (t, value) in item.points() {
                let Some(value) = value else {
                    continue;
                };
                let signals = points.entry(millis(t)).or_default();
                if slot == Signal::KvUsage {
                    let max = signals.kv_usage.map_or(value, |v| v.max(value));
                    signals.kv_usage = Some(max);
                } else {
                    set_slot(signals, slot, value);
                }
            }
        }
    }

    /// One series per engine, points oldest first: of several reports of one engine, the
    /// one with the most points (the first by key on a tie).
    pub fn finish(self) -> Vec<DerivedSeries> {
        self.engines
            .into_iter()
            .filter_map(|(key, (node, reports))| {
                let points = reports
                    .into_iter()
                    .rev()
                    .max_by_key(|(_, points)| points.len())
                    .map(|(_, points)| points)?;
                Some(DerivedSeries {
                    instance: key.instance,
                    node,
                    id: EngineId {
                        model: key.model,
                        engine: key.engine,
                    },
                    points: points
                        .into_iter()
                        .map(|(ms, signals)| (ms as Ts / 1000.0, signals))
                        .collect(),
                })
            })
            .collect()
    }
}

/// Evaluation times to whole milliseconds, so every answer's points line up.
fn millis(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

#[cfg(test)]
mod tests;
