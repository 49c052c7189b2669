//! GPUs seen by the fleet, their recent history, and their join to the engines' pods.
//!
//! GPUs come from dcgm-exporter targets (a target whose payload has GPUs but no engines) or
//! from a Prometheus source. Each GPU is identified by (host, index, UUID) and remembers which
//! source reported it last; a source's report replaces the set of GPUs it reported before.
//!
//! Join: a GPU belongs to the scrape target (pod) named by its Kubernetes mapping (`pod`, or
//! `exported_pod` behind a Prometheus that renamed it) — among targets with that pod name, one
//! in the same namespace is preferred, a target of unknown namespace matches any. A GPU with no
//! pod mapping belongs to the only target placed on its node (`Hostname`), if exactly one is.
//! Every engine of a target gets the GPU signals of all the target's GPUs (a pod's engines share
//! its GPUs; which engine index drives which GPU is not exported).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::{Signals, TargetId, Ts};
use crate::engine::GpuSample;

/// Identity of one GPU: host, index on the host, UUID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GpuKey {
    pub hostname: String,
    pub gpu: String,
    pub uuid: String,
}

impl GpuKey {
    /// The key of a sample.
    pub fn of(sample: &GpuSample) -> GpuKey {
        GpuKey {
            hostname: sample.hostname.clone(),
            gpu: sample.gpu.clone(),
            uuid: sample.uuid.clone(),
        }
    }
}

impl Ord for GpuKey {
    /// By host, then GPU index numerically (`2` before `10`), then UUID.
    fn cmp(&self, other: &Self) -> Ordering {
        let index = |k: &GpuKey| k.gpu.parse::<u64>().ok();
        self.hostname
            .cmp(&other.hostname)
            .then_with(|| match (index(self), index(other)) {
                (Some(a), Some(b)) => a.cmp(&b),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            })
            .then_with(|| self.gpu.cmp(&other.gpu))
            .then_with(|| self.uuid.cmp(&other.uuid))
    }
}

impl PartialOrd for GpuKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Which source reported a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuOrigin {
    /// A dcgm-exporter scrape target.
    Target(TargetId),
    /// A Prometheus source, by its URL.
    Derived(String),
}

/// Where a target's process runs, for the GPU join. By default a target's pod is its name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    pub pod: Option<String>,
    pub namespace: Option<String>,
    pub node: Option<String>,
}

/// A GPU value kept in the per-GPU history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSeries {
    /// Utilization, 0..1.
    Util,
    /// Framebuffer in use, 0..1.
    Mem,
    /// Temperature, °C.
    Temp,
    /// Power draw, W.
    Power,
}

impl GpuSeries {
    const COUNT: usize = 4;

    fn index(self) -> usize {
        match self {
            GpuSeries::Util => 0,
            GpuSeries::Mem => 1,
            GpuSeries::Temp => 2,
            GpuSeries::Power => 3,
        }
    }
}

/// One GPU: its latest reading, where it came from, its history and the target it is joined to.
#[derive(Debug, Clone)]
pub struct GpuState {
    pub key: GpuKey,
    pub origin: GpuOrigin,
    pub sample: GpuSample,
    /// Time of the latest reading.
    pub last_ok: Ts,
    /// The scrape target (pod) this GPU is joined to.
    pub target: Option<TargetId>,
    history: VecDeque<(Ts, [f32; GpuSeries::COUNT])>,
}

impl GpuState {
    /// Utilization, 0..1.
    pub fn util(&self) -> Option<f64> {
        finite(self.sample.util_pct).map(|pct| pct / 100.0)
    }

    /// Framebuffer total, MiB: used + free + reserved (reserved counts as 0 when not exported).
    pub fn fb_total_mib(&self) -> Option<f64> {
        let used = finite(self.sample.fb_used_mib)?;
        let free = finite(self.sample.fb_free_mib)?;
        Some(used + free + finite(self.sample.fb_reserved_mib).unwrap_or(0.0))
    }

    /// Framebuffer in use, 0..1 of the total.
    pub fn mem(&self) -> Option<f64> {
        let used = finite(self.sample.fb_used_mib)?;
        let total = self.fb_total_mib().filter(|t| *t > 0.0)?;
        Some(used / total)
    }

    /// Points of one series at or after `since`, oldest first; unknown values skipped.
    pub fn points(&self, series: GpuSeries, since: Ts) -> Vec<(f64, f64)> {
        let column = series.index();
        self.history
            .iter()
            .filter(|(t, _)| *t >= since)
            .filter_map(|(t, row)| {
                let v = row.get(column).copied()?;
                (!v.is_nan()).then_some((*t, f64::from(v)))
            })
            .collect()
    }

    fn record(&mut self, at: Ts, capacity: usize) {
        if self.history.back().is_some_and(|(t, _)| at < *t) {
            return;
        }
        let value = |v: Option<f64>| v.map_or(f32::NAN, |v| v as f32);
        let row = [
            value(self.util()),
            value(self.mem()),
            value(finite(self.sample.temp_c)),
            value(finite(self.sample.power_w)),
        ];
        let capacity = capacity.max(1);
        while self.history.len() >= capacity {
            self.history.pop_front();
        }
        // Grown by doubling, but never past the points kept: 600 points in a ring doubled to
        // 1,024 slots would hold 10 KB a GPU it never uses.
        if self.history.len() == self.history.capacity() {
            let room = self.history.len().saturating_mul(2).max(16).min(capacity);
            self.history
                .reserve_exact(room.saturating_sub(self.history.len()));
        }
        self.history.push_back((at, row));
    }

    /// This GPU as its history had it at `t`: the readings of the newest point at or before
    /// `t` (memory as a share of the framebuffer total read now, which does not change), and no
    /// history of its own; `None` when its history holds nothing that old.
    fn as_of(&self, t: Ts) -> Option<GpuState> {
        let newer = self.history.partition_point(|(at, _)| *at <= t);
        let (at, row) = self.history.get(newer.checked_sub(1)?)?;
        let value = |series: GpuSeries| {
            row.get(series.index())
                .filter(|v| !v.is_nan())
                .map(|v| f64::from(*v))
        };
        let mut sample = self.sample.clone();
        sample.util_pct = value(GpuSeries::Util).map(|u| u * 100.0);
        sample.temp_c = value(GpuSeries::Temp);
        sample.power_w = value(GpuSeries::Power);
        let reserved = finite(sample.fb_reserved_mib).unwrap_or(0.0);
        match (value(GpuSeries::Mem), self.fb_total_mib()) {
            (Some(share), Some(total)) => {
                sample.fb_used_mib = Some(share * total);
                sample.fb_free_mib = Some(total - share * total - reserved);
            }
            _ => {
                sample.fb_used_mib = None;
                sample.fb_free_mib = None;
            }
        }
        Some(GpuState {
            key: self.key.clone(),
            origin: self.origin.clone(),
            sample,
            last_ok: *at,
            target: self.target,
            history: VecDeque::new(),
        })
    }

    fn heap_bytes(&self) -> usize {
        self.history.capacity() * size_of::<(Ts, [f32; GpuSeries::COUNT])>()
            + self.key.hostname.capacity()
            + self.key.gpu.capacity()
            + self.key.uuid.capacity()
    }
}

/// GPU signals of one engine: the highest value over the GPUs joined to its pod.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GpuSignals {
    pub util: Option<f64>,
    pub mem: Option<f64>,
    pub temp: Option<f64>,
    pub power: Option<f64>,
    pub xid: Option<f64>,
}

impl GpuSignals {
    /// The highest value of each field over `gpus`; a field unknown on every GPU stays unknown.
    pub(crate) fn from_gpus<'a>(gpus: impl IntoIterator<Item = &'a GpuState>) -> GpuSignals {
        let mut out = GpuSignals::default();
        for gpu in gpus {
            out.util = max_known(out.util, gpu.util());
            out.mem = max_known(out.mem, gpu.mem());
            out.temp = max_known(out.temp, gpu.sample.temp_c);
            out.power = max_known(out.power, gpu.sample.power_w);
            out.xid = max_known(out.xid, gpu.sample.xid);
        }
        out
    }

    /// The GPU fields of a set of signals.
    pub fn of(signals: &Signals) -> GpuSignals {
        GpuSignals {
            util: signals.gpu_util,
            mem: signals.gpu_mem,
            temp: signals.gpu_temp,
            power: signals.gpu_power,
            xid: signals.xid,
        }
    }

    /// Write these values into the GPU fields of `signals`.
    pub fn apply_to(&self, signals: &mut Signals) {
        signals.gpu_util = self.util;
        signals.gpu_mem = self.mem;
        signals.gpu_temp = self.temp;
        signals.gpu_power = self.power;
        signals.xid = self.xid;
    }
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

fn max_known(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, finite(b)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Where targets run, indexed for the join.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlacementIndex {
    /// Pod name → (namespace, target).
    pods: HashMap<String, Vec<(Option<String>, TargetId)>>,
    /// Node name → targets placed on it.
    nodes: HashMap<String, Vec<TargetId>>,
}

impl PlacementIndex {
    pub(crate) fn new<'a>(placements: impl IntoIterator<Item = (TargetId, &'a Placement)>) -> Self {
        let mut index = PlacementIndex::default();
        for (target, placement) in placements {
            if let Some(pod) = placement.pod.as_ref().filter(|p| !p.is_empty()) {
                index
                    .pods
                    .entry(pod.clone())
                    .or_default()
                    .push((placement.namespace.clone(), target));
            }
            if let Some(node) = placement.node.as_ref().filter(|n| !n.is_empty()) {
                index.nodes.entry(node.clone()).or_default().push(target);
            }
        }
        index
    }

    /// The target a GPU belongs to (see the module docs).
    pub(crate) fn join(&self, gpu: &GpuSample) -> Option<TargetId> {
        if let Some(pod) = gpu.pod.as_deref().filter(|p| !p.is_empty()) {
            let candidates = self.pods.get(pod)?;
            let namespace = gpu.namespace.as_deref();
            let exact = candidates
                .iter()
                .find(|(ns, _)| namespace.is_some() && ns.as_deref() == namespace);
            let loose = || {
                candidates
                    .iter()
                    .find(|(ns, _)| ns.is_none() || namespace.is_none())
            };
            return exact.or_else(loose).map(|(_, target)| *target);
        }
        match self.nodes.get(gpu.hostname.as_str())?.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }
}

/// Every GPU the fleet knows, sorted by key, with an index by joined target.
#[derive(Debug, Clone, Default)]
pub(crate) struct GpuStore {
    gpus: BTreeMap<GpuKey, GpuState>,
    by_target: BTreeMap<TargetId, BTreeSet<GpuKey>>,
    by_origin: BTreeMap<GpuOrigin, BTreeSet<GpuKey>>,
    /// Points kept per GPU.
    history_points: usize,
}

impl GpuStore {
    pub(crate) fn new(history_points: usize) -> Self {
        GpuStore {
            history_points: history_points.max(1),
            ..GpuStore::default()
        }
    }

    /// The GPUs as their histories had them at `t` (see [`GpuState::as_of`]); GPUs first read
    /// after `t` are left out.
    pub(crate) fn as_of(&self, t: Ts) -> GpuStore {
        let mut past = GpuStore {
            history_points: self.history_points,
            ..GpuStore::default()
        };
        for gpu in self.gpus.values().filter_map(|gpu| gpu.as_of(t)) {
            if let Some(target) = gpu.target {
                past.by_target
                    .entry(target)
                    .or_default()
                    .insert(gpu.key.clone());
            }
            past.by_origin
                .entry(gpu.origin.clone())
                .or_default()
                .insert(gpu.key.clone());
            past.gpus.insert(gpu.key.clone(), gpu);
        }
        past
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &GpuState> {
        self.gpus.values()
    }

    pub(crate) fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Whether `origin` reported any GPU that is still known.
    pub(crate) fn has_origin(&self, origin: &GpuOrigin) -> bool {
        self.by_origin.contains_key(origin)
    }

    /// GPUs joined to `target`, in key order.
    pub(crate) fn of_target(&self, target: TargetId) -> impl Iterator<Item = &GpuState> {
        self.by_target
            .get(&target)
            .into_iter()
            .flatten()
            .filter_map(|key| self.gpus.get(key))
    }

    /// GPU signals of the engines of `target`.
    pub(crate) fn signals_of(&self, target: TargetId) -> GpuSignals {
        GpuSignals::from_gpus(self.of_target(target))
    }

    /// Replace the GPUs `origin` reported before by `samples` read at `at`, joining each with
    /// `join`. Returns the targets whose GPUs changed (joined before or after).
    pub(crate) fn replace(
        &mut self,
        origin: &GpuOrigin,
        at: Ts,
        samples: Vec<GpuSample>,
        index: &PlacementIndex,
    ) -> BTreeSet<TargetId> {
        let mut affected = BTreeSet::new();
        let keys: Vec<GpuKey> = samples.iter().map(GpuKey::of).collect();
        let reported: BTreeSet<&GpuKey> = keys.iter().collect();
        let gone: Vec<GpuKey> = self
            .by_origin
            .get(origin)
            .into_iter()
            .flatten()
            .filter(|key| !reported.contains(key))
            .cloned()
            .collect();
        for key in gone {
            self.remove(&key, &mut affected);
        }
        for (key, sample) in keys.into_iter().zip(samples) {
            let target = index.join(&sample);
            let known = self.gpus.contains_key(&key);
            if !known {
                self.gpus.insert(
                    key.clone(),
                    GpuState {
                        key: key.clone(),
                        origin: origin.clone(),
                        sample: GpuSample::default(),
                        last_ok: at,
                        target: None,
                        history: VecDeque::new(),
                    },
                );
            }
            let Some(gpu) = self.gpus.get_mut(&key) else {
                continue;
            };
            // A GPU known from the same origin is already filed under it: the usual scrape.
            let refile = !known || gpu.origin != *origin;
            let previous_origin =
                refile.then(|| std::mem::replace(&mut gpu.origin, origin.clone()));
            gpu.sample = sample;
            gpu.last_ok = at;
            gpu.record(at, self.history_points);
            let before = gpu.target;
            gpu.target = target;
            if let Some(previous_origin) = previous_origin {
                self.move_origin(&key, Some(&previous_origin), Some(origin));
            }
            self.move_join(&key, before, target);
            affected.extend(before);
            affected.extend(target);
        }
        affected
    }

    /// Join every GPU again (targets or placements changed). Returns the targets whose GPUs
    /// changed.
    pub(crate) fn rejoin(&mut self, index: &PlacementIndex) -> BTreeSet<TargetId> {
        let mut affected = BTreeSet::new();
        let mut moves = Vec::new();
        for (key, gpu) in &mut self.gpus {
            let target = index.join(&gpu.sample);
            if target != gpu.target {
                moves.push((key.clone(), gpu.target, target));
                gpu.target = target;
            }
        }
        for (key, before, after) in moves {
            self.move_join(&key, before, after);
            affected.extend(before);
            affected.extend(after);
        }
        affected
    }

    /// Forget GPUs whose latest reading is older than `before`. Returns the targets whose GPUs
    /// changed.
    pub(crate) fn expire(&mut self, before: Ts) -> BTreeSet<TargetId> {
        let mut affected = BTreeSet::new();
        let old: Vec<GpuKey> = self
            .gpus
            .iter()
            .filter(|(_, gpu)| gpu.last_ok < before)
            .map(|(key, _)| key.clone())
            .collect();
        for key in old {
            self.remove(&key, &mut affected);
        }
        affected
    }

    /// Forget the GPUs of a source (a removed target).
    pub(crate) fn forget_origin(&mut self, origin: &GpuOrigin) -> BTreeSet<TargetId> {
        let mut affected = BTreeSet::new();
        let keys: Vec<GpuKey> = self
            .by_origin
            .get(origin)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        for key in keys {
            self.remove(&key, &mut affected);
        }
        affected
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.gpus
            .values()
            .map(|g| g.heap_bytes() + size_of::<GpuState>())
            .sum()
    }

    fn remove(&mut self, key: &GpuKey, affected: &mut BTreeSet<TargetId>) {
        if let Some(gpu) = self.gpus.remove(key) {
            self.move_origin(key, Some(&gpu.origin), None);
            self.move_join(key, gpu.target, None);
            affected.extend(gpu.target);
        }
    }

    fn move_origin(&mut self, key: &GpuKey, before: Option<&GpuOrigin>, after: Option<&GpuOrigin>) {
        if let Some(before) = before {
            if let Some(keys) = self.by_origin.get_mut(before) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_origin.remove(before);
                }
            }
        }
        if let Some(after) = after {
            self.by_origin
                .entry(after.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    fn move_join(&mut self, key: &GpuKey, before: Option<TargetId>, after: Option<TargetId>) {
        if before == after {
            return;
        }
        if let Some(before) = before {
            if let Some(keys) = self.by_target.get_mut(&before) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_target.remove(&before);
                }
            }
        }
        if let Some(after) = after {
            self.by_target.entry(after).or_default().insert(key.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(host: &str, index: &str, pod: Option<&str>, util: f64) -> GpuSample {
        GpuSample {
            gpu: index.into(),
            uuid: format!("GPU-{host}-{index}"),
            hostname: host.into(),
            pod: pod.map(str::to_owned),
            namespace: pod.map(|_| "llm".to_owned()),
            util_pct: Some(util),
            ..GpuSample::default()
        }
    }

    fn placed(pod: &str, namespace: Option<&str>, node: Option<&str>) -> Placement {
        Placement {
            pod: Some(pod.into()),
            namespace: namespace.map(str::to_owned),
            node: node.map(str::to_owned),
        }
    }

    #[test]
    fn keys_sort_by_host_then_numeric_index() {
        let mut keys = [
            GpuKey::of(&gpu("b", "0", None, 0.0)),
            GpuKey::of(&gpu("a", "10", None, 0.0)),
            GpuKey::of(&gpu("a", "2", None, 0.0)),
        ];
        keys.sort();
        let order: Vec<(&str, &str)> = keys
            .iter()
            .map(|k| (k.hostname.as_str(), k.gpu.as_str()))
            .collect();
        assert_eq!(order, [("a", "2"), ("a", "10"), ("b", "0")]);
    }

    #[test]
    fn join_by_pod_prefers_the_same_namespace_and_falls_back_to_the_only_pod_on_the_node() {
        let a = placed("vllm-0", Some("llm"), None);
        let b = placed("vllm-0", Some("other"), None);
        let c = placed("10.0.0.5:8000", None, Some("node-3"));
        let d = placed("vllm-1", None, None);
        let index = PlacementIndex::new([
            (TargetId(0), &b),
            (TargetId(1), &a),
            (TargetId(2), &c),
            (TargetId(3), &d),
        ]);
        // Namespace "llm" picks target 1 although target 0 has the same pod name.
        assert_eq!(
            index.join(&gpu("n", "0", Some("vllm-0"), 0.0)),
            Some(TargetId(1))
        );
        // A target of unknown namespace matches any namespace.
        assert_eq!(
            index.join(&gpu("n", "0", Some("vllm-1"), 0.0)),
            Some(TargetId(3))
        );
        assert_eq!(index.join(&gpu("n", "0", Some("vllm-9"), 0.0)), None);
        // No pod mapping: the only target on node-3.
        assert_eq!(
            index.join(&gpu("node-3", "0", None, 0.0)),
            Some(TargetId(2))
        );
        assert_eq!(index.join(&gpu("node-4", "0", None, 0.0)), None);
    }

    #[test]
    fn a_gpu_s_history_never_takes_more_room_than_the_points_it_keeps() {
        let index = PlacementIndex::new([]);
        let origin = GpuOrigin::Target(TargetId(9));
        let mut store = GpuStore::new(600);
        for t in 0..700 {
            store.replace(
                &origin,
                f64::from(t),
                vec![gpu("n", "0", None, 50.0)],
                &index,
            );
        }
        let held = store.gpus.values().map(|g| g.history.len()).sum::<usize>();
        let room = store
            .gpus
            .values()
            .map(|g| g.history.capacity())
            .sum::<usize>();
        // Doubling alone would have reached 1,024 slots.
        assert_eq!((held, room), (600, 600));
    }

    #[test]
    fn two_targets_on_one_node_do_not_claim_unmapped_gpus() {
        let a = placed("a", None, Some("node"));
        let b = placed("b", None, Some("node"));
        let index = PlacementIndex::new([(TargetId(0), &a), (TargetId(1), &b)]);
        assert_eq!(index.join(&gpu("node", "0", None, 0.0)), None);
    }

    #[test]
    fn a_report_replaces_its_source_s_gpus_and_names_the_targets_that_changed() {
        let p0 = placed("vllm-0", Some("llm"), None);
        let p1 = placed("vllm-1", Some("llm"), None);
        let index = PlacementIndex::new([(TargetId(0), &p0), (TargetId(1), &p1)]);
        let mut store = GpuStore::new(10);
        let origin = GpuOrigin::Target(TargetId(9));
        let affected = store.replace(
            &origin,
            100.0,
            vec![
                gpu("n", "0", Some("vllm-0"), 50.0),
                gpu("n", "1", Some("vllm-0"), 90.0),
                gpu("n", "2", Some("vllm-1"), 10.0),
            ],
            &index,
        );
        assert_eq!(affected, BTreeSet::from([TargetId(0), TargetId(1)]));
        assert_eq!(store.signals_of(TargetId(0)).util, Some(0.9));
        assert_eq!(store.of_target(TargetId(0)).count(), 2);
        // GPU 2 is no longer reported: target 1 loses it.
        let affected = store.replace(
            &origin,
            101.0,
            vec![
                gpu("n", "0", Some("vllm-0"), 40.0),
                gpu("n", "1", Some("vllm-0"), 30.0),
            ],
            &index,
        );
        assert!(affected.contains(&TargetId(1)));
        assert_eq!(store.signals_of(TargetId(1)), GpuSignals::default());
        assert_eq!(store.signals_of(TargetId(0)).util, Some(0.4));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn signals_take_the_highest_value_and_memory_counts_reserved_in_the_total() {
        let mut store = GpuStore::new(10);
        let p = placed("pod", None, None);
        let index = PlacementIndex::new([(TargetId(0), &p)]);
        let a = GpuSample {
            fb_used_mib: Some(60.0),
            fb_free_mib: Some(30.0),
            fb_reserved_mib: Some(10.0),
            temp_c: Some(70.0),
            power_w: Some(300.0),
            xid: Some(0.0),
            ..gpu("n", "0", Some("pod"), 20.0)
        };
        let b = GpuSample {
            fb_used_mib: Some(10.0),
            fb_free_mib: Some(90.0),
            temp_c: Some(81.0),
            power_w: Some(250.0),
            xid: Some(79.0),
            ..gpu("n", "1", Some("pod"), 70.0)
        };
        store.replace(&GpuOrigin::Target(TargetId(5)), 1.0, vec![a, b], &index);
        let s = store.signals_of(TargetId(0));
        // 60 / (60 + 30 + 10) = 0.6 beats 10 / 100.
        assert_eq!(
            s,
            GpuSignals {
                util: Some(0.7),
                mem: Some(0.6),
                temp: Some(81.0),
                power: Some(300.0),
                xid: Some(79.0),
            }
        );
    }

    #[test]
    fn history_is_bounded_and_in_time_order() {
        let mut store = GpuStore::new(3);
        let index = PlacementIndex::default();
        let origin = GpuOrigin::Derived("http://prom:9090".into());
        for (t, util) in [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0)] {
            store.replace(&origin, t, vec![gpu("n", "0", None, util)], &index);
        }
        // An older report does not go back in time.
        store.replace(&origin, 2.5, vec![gpu("n", "0", None, 99.0)], &index);
        let points = store
            .iter()
            .next()
            .map(|g| g.points(GpuSeries::Util, 0.0))
            .unwrap_or_default();
        let rounded: Vec<(f64, f64)> = points
            .iter()
            .map(|(t, v)| (*t, (v * 100.0).round() / 100.0))
            .collect();
        assert_eq!(rounded, [(2.0, 0.2), (3.0, 0.3), (4.0, 0.4)]);
    }

    #[test]
    fn expiry_and_rejoin_report_the_targets_they_touch() {
        let mut store = GpuStore::new(3);
        let origin = GpuOrigin::Target(TargetId(7));
        store.replace(
            &origin,
            10.0,
            vec![gpu("n", "0", Some("late"), 1.0)],
            &PlacementIndex::default(),
        );
        assert_eq!(store.iter().next().and_then(|g| g.target), None);
        let p = placed("late", None, None);
        let index = PlacementIndex::new([(TargetId(3), &p)]);
        assert_eq!(store.rejoin(&index), BTreeSet::from([TargetId(3)]));
        assert_eq!(store.of_target(TargetId(3)).count(), 1);
        assert!(store.expire(5.0).is_empty());
        assert_eq!(store.expire(11.0), BTreeSet::from([TargetId(3)]));
        assert_eq!(store.len(), 0);
        assert_eq!(store.of_target(TargetId(3)).count(), 0);
    }
}
