//! The fleet's GPUs: ingestion from dcgm-exporter targets and sources, the join to targets
//! (pods), and the GPU signals written into the joined engines' rows.

use std::collections::BTreeSet;

use super::{Fleet, TargetId};
use crate::engine::GpuSample;
use crate::fleet::Ts;
use crate::fleet::gpus::{GpuOrigin, GpuState, Placement, PlacementIndex};
use crate::fleet::status::down_after;

impl Fleet {
    /// Every GPU, by host and index.
    pub fn gpus(&self) -> impl Iterator<Item = &GpuState> {
        self.gpus.iter()
    }

    /// Number of GPUs known.
    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// The GPUs joined to a target (the pod its engines run in).
    pub fn gpus_of(&self, target: TargetId) -> impl Iterator<Item = &GpuState> {
        self.gpus.of_target(target)
    }

    /// Whether a target is a GPU exporter: its last good scrape had GPUs and no engine. Its row
    /// is a placeholder, not an engine: tables of engines leave it out.
    pub fn is_gpu_exporter(&self, target: TargetId) -> bool {
        self.gpu_exporters.contains(&target)
    }

    /// Where a target runs: as set, else the pod named like the target.
    pub fn placement(&self, target: TargetId) -> Placement {
        self.placements
            .get(&target)
            .cloned()
            .unwrap_or_else(|| Placement {
                pod: self.target(target).map(|t| t.spec.name.clone()),
                namespace: None,
                node: None,
            })
    }

    /// Say where a target runs (e.g. from Kubernetes discovery); GPUs are joined again.
    pub(crate) fn set_placement(&mut self, target: TargetId, placement: Placement) {
        self.placements.insert(target, placement);
        self.join_dirty = true;
    }

    /// Replace the GPUs `origin` reported by `gpus`, read at `at`, and update the GPU signals
    /// of the engines they join.
    pub(super) fn ingest_gpus(&mut self, origin: GpuOrigin, at: Ts, gpus: Vec<GpuSample>) {
        if gpus.is_empty() && !self.gpus.has_origin(&origin) {
            return;
        }
        let mut affected = self.rejoin_if_dirty();
        affected.extend(self.gpus.replace(&origin, at, gpus, &self.placement_index));
        self.refresh_gpu_signals(affected);
    }

    /// Forget the GPUs a removed target reported.
    pub(super) fn forget_target_gpus(&mut self, id: TargetId) {
        let affected = self.gpus.forget_origin(&GpuOrigin::Target(id));
        self.refresh_gpu_signals(affected);
    }

    /// Join again if targets changed, and forget GPUs not reported for as long as a row takes
    /// to go Down. True if any engine's GPU signals changed.
    pub(super) fn tick_gpus(&mut self, now: Ts) -> bool {
        let mut affected = self.rejoin_if_dirty();
        affected.extend(self.gpus.expire(now - down_after(self.settings.interval)));
        let changed = !affected.is_empty();
        self.refresh_gpu_signals(affected);
        changed
    }

    fn rejoin_if_dirty(&mut self) -> BTreeSet<TargetId> {
        if !self.join_dirty {
            return BTreeSet::new();
        }
        self.join_dirty = false;
        let placements: Vec<(TargetId, Placement)> = self
            .targets
            .iter()
            .map(|t| (t.id, self.placement(t.id)))
            .collect();
        self.placement_index = PlacementIndex::new(placements.iter().map(|(id, p)| (*id, p)));
        self.gpus.rejoin(&self.placement_index)
    }

    /// Write the current GPU signals into every row of `targets`.
    fn refresh_gpu_signals(&mut self, targets: BTreeSet<TargetId>) {
        for target in targets {
            let signals = self.gpus.signals_of(target);
            let rows = self.rows_of(target);
            if let Some(rows) = self.engines.get_mut(rows) {
                for row in rows {
                    signals.apply_to(&mut row.signals);
                }
            }
        }
    }
}
