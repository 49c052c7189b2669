//! PURE. The fleet table and the per-engine history over an observation.

use super::super::inputs::is_engine;
use super::super::observe::Observation;
use kvtop_core::fleet::{EngineStatus, Series};

/// One engine's current values, for the fleet table.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRow {
    pub name: String,
    pub model: String,
    pub status: EngineStatus,
    pub kv_usage: Option<f64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub ttft_p95: Option<f64>,
    pub gen_tps: Option<f64>,
    /// True while the engine is marked RESTARTED (a counter reset was seen).
    pub restarted: bool,
}

/// One engine's values over the observation (from its history; `None` when never known).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSummary {
    pub name: String,
    pub kv_usage: Option<(f64, f64)>,
    pub ttft_p95_max: Option<f64>,
    pub waiting_max: Option<f64>,
    pub gen_tps: Option<(f64, f64)>,
    /// Points in the observation.
    pub points: usize,
}

/// The fleet table: every engine row (GPU exporters left out), in fleet order.
pub fn fleet_rows(obs: &Observation) -> Vec<FleetRow> {
    fleet_rows_of(&obs.fleet)
}

/// The fleet table of `fleet`: every engine row (GPU exporters left out), in fleet order.
pub fn fleet_rows_of(fleet: &kvtop_core::fleet::Fleet) -> Vec<FleetRow> {
    fleet
        .engines()
        .iter()
        .filter(|e| is_engine(fleet, e))
        .map(|e| FleetRow {
            name: e.name.clone(),
            model: e.id.model.clone(),
            status: e.status,
            kv_usage: e.signals.kv_usage,
            running: e.signals.running,
            waiting: e.signals.waiting,
            ttft_p95: e.signals.ttft_p95,
            gen_tps: e.signals.gen_tps,
            restarted: e.restarted_at.is_some(),
        })
        .collect()
}

/// Each engine's range of values since the observation started.
pub fn summaries(obs: &Observation) -> Vec<EngineSummary> {
    obs.fleet
        .engines()
        .iter()
        .filter(|e| is_engine(&obs.fleet, e))
        .map(|e| {
            let points = |series| e.history.points(series, obs.started);
            let kv = points(Series::KvUsage);
            EngineSummary {
                name: e.name.clone(),
                kv_usage: range(&kv),
                ttft_p95_max: range(&points(Series::TtftP95)).map(|(_, hi)| hi),
                waiting_max: range(&points(Series::Waiting)).map(|(_, hi)| hi),
                gen_tps: range(&points(Series::GenTps)),
                points: kv.len(),
            }
        })
        .collect()
}

/// Lowest and highest known value of `(time, value)` points.
fn range(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    points
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_skip_unknown_points() {
        assert_eq!(range(&[]), None);
        assert_eq!(range(&[(0.0, f64::NAN)]), None);
        assert_eq!(
            range(&[(0.0, 0.4), (1.0, f64::NAN), (2.0, 0.9), (3.0, 0.2)]),
            Some((0.2, 0.9))
        );
    }
}
