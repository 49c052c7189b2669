//! PURE. The rules' inputs for one cycle, from the fleet and the recent logs: the one place
//! that turns fleet state into [`EngineInput`]s, for `kvtop check` and the console alike.
//!
//! ```no_run
//! # use kvtop::diagnose::{TargetLogs, inputs};
//! # use kvtop_core::{fleet::Fleet, rules::RuleEngine};
//! # fn f(fleet: &Fleet, logs: &TargetLogs, engine: &mut RuleEngine, now: f64) {
//! let parts = inputs::FleetParts::of(fleet);
//! let inputs = inputs::engine_inputs(fleet, &parts, logs);
//! let findings = engine.evaluate(&inputs, now);
//! # }
//! ```

use kvtop_core::fleet::{EngineState, Fleet, ModelSignals, Signals};
use kvtop_core::rules::{EngineInput, GpuSignals, Rule};

/// The GPU signals of each engine row of `fleet`, in row order (`None` for engines without
/// GPU data), into `out` (cleared first; a caller that evaluates every cycle reuses it). The
/// inputs borrow from it.
fn gpu_signals(fleet: &Fleet, out: &mut Vec<Option<GpuSignals>>) {
    out.clear();
    out.extend(fleet.engines().iter().map(|e| gpu_of(&e.signals)));
}

/// What the inputs of one cycle take from the fleet as a whole, computed once per cycle: each
/// engine's GPU signals (in row order) and each model's latency quantiles over its engines'
/// merged histograms (what `merged()` in a rule reads, sorted by model). The inputs borrow
/// from it; a caller that evaluates every cycle keeps one and refreshes it.
#[derive(Debug, Clone)]
pub struct FleetParts {
    gpus: Vec<Option<GpuSignals>>,
    models: Vec<ModelSignals>,
    /// Whether [`refresh`](Self::refresh) merges the models' histograms. Merging them is most
    /// of a cycle's cost on a small fleet, and a headless run whose rules never read
    /// `merged()` has no use for them (the console's grouped table does: it always merges).
    merge_models: bool,
}

impl Default for FleetParts {
    fn default() -> Self {
        FleetParts {
            gpus: Vec::new(),
            models: Vec::new(),
            merge_models: true,
        }
    }
}

impl FleetParts {
    pub fn of(fleet: &Fleet) -> Self {
        let mut parts = FleetParts::default();
        parts.refresh(fleet);
        parts
    }

    /// Empty parts for evaluating `rules` only: the models' merged quantiles are computed
    /// when one of them reads `merged()`, else left unknown (nothing else reads them).
    pub fn for_rules<'r>(rules: impl IntoIterator<Item = &'r Rule>) -> Self {
        FleetParts {
            merge_models: rules.into_iter().any(Rule::reads_merged),
            ..FleetParts::default()
        }
    }

    pub fn refresh(&mut self, fleet: &Fleet) {
        self.refresh_merging(fleet, self.merge_models);
    }

    /// [`refresh`](Self::refresh), merging the models' histograms only if `merge`.
    pub fn refresh_merging(&mut self, fleet: &Fleet, merge: bool) {
        gpu_signals(fleet, &mut self.gpus);
        if merge {
            self.models = fleet.model_quantiles();
            self.models.sort_by(|a, b| a.model.cmp(&b.model));
        }
    }

    /// A model's latency quantiles over its up engines' merged histograms, as of the cycle.
    pub fn model(&self, model: &str) -> Option<&Signals> {
        self.models
            .binary_search_by(|m| m.model.as_str().cmp(model))
            .ok()
            .and_then(|at| self.models.get(at))
            .map(|m| &m.signals)
    }
}

/// The GPU part of an engine's signals in the rules' terms; `None` when no GPU field is known.
pub(crate) fn gpu_of(signals: &Signals) -> Option<GpuSignals> {
    let gpu = GpuSignals {
        util: signals.gpu_util,
        mem: signals.gpu_mem,
        temp_c: signals.gpu_temp,
        power_w: signals.gpu_power,
        xid: signals.xid,
    };
    (gpu != GpuSignals::default()).then_some(gpu)
}

/// One input per engine row, GPU exporters left out (their rows are not engines), with the
/// engine's GPU signals and its model's merged quantiles (`parts` of the same fleet), the
/// recent log lines
/// of its target when that target has a log stream, and for a pod discovered in Kubernetes
/// what its pod says (facts such as vLLM arguments and env, labels, status, events, logs).
///
/// This is the one place where the rules learn about an engine: the console, the routing view
/// and `kvtop check` all build their inputs here.
pub fn engine_inputs<'a>(
    fleet: &'a Fleet,
    parts: &'a FleetParts,
    logs: &'a super::TargetLogs,
) -> Vec<EngineInput<'a>> {
    fleet
        .engines()
        .iter()
        .zip(
            parts
                .gpus
                .iter()
                .map(Option::as_ref)
                .chain(std::iter::repeat(None)),
        )
        .filter(|(e, _)| is_engine(fleet, e))
        .map(|(e, gpu)| {
            let input = EngineInput::from_state(e)
                .with_gpu(gpu)
                .with_model(parts.model(&e.id.model));
            let input = match logs.get(e.target) {
                Some(lines) => input.with_logs(lines),
                None => input,
            };
            // An engine discovered in Kubernetes: its pod's facts, labels, state reasons,
            // events and log lines.
            kvtop_core::rules::with_pod(input, fleet.pod_info(e.target))
        })
        .collect()
}

/// False for the rows of targets that only export GPUs (dcgm-exporters).
pub(crate) fn is_engine(fleet: &Fleet, engine: &EngineState) -> bool {
    !fleet.is_gpu_exporter(engine.target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::TargetLogs;
    use kvtop_core::engine::{EngineId, EngineSample};
    use kvtop_core::fleet::{FleetSettings, ScrapeError, ScrapePayload, ScrapeReport, TargetSpec};

    const T0: f64 = 1_800_000_000.0;

    fn fleet_with_an_engine_and_a_refused_target() -> Fleet {
        let mut fleet = Fleet::new(FleetSettings::default());
        let a = fleet.add_target(TargetSpec {
            name: "a".into(),
            url: "http://a/metrics".into(),
        });
        let b = fleet.add_target(TargetSpec {
            name: "b".into(),
            url: "http://b/metrics".into(),
        });
        fleet.ingest(ScrapeReport {
            target: a,
            at: T0,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![EngineSample {
                    id: EngineId {
                        model: "m".into(),
                        engine: "0".into(),
                    },
                    kv_usage: Some(0.5),
                    ..EngineSample::default()
                }],
                ..ScrapePayload::default()
            }),
        });
        fleet.ingest(ScrapeReport {
            target: b,
            at: T0,
            took: 0.01,
            outcome: Err(ScrapeError::Refused),
        });
        fleet
    }

    #[test]
    fn inputs_cover_every_row_with_their_gpu_signals_and_logs() {
        let fleet = fleet_with_an_engine_and_a_refused_target();
        let parts = FleetParts {
            gpus: vec![None, Some(GpuSignals::default())],
            ..FleetParts::default()
        };
        let mut logs = TargetLogs::default();
        let a = fleet.targets()[0].id;
        logs.open(a);
        logs.extend(
            a,
            [(
                T0,
                "torch.cuda.OutOfMemoryError: CUDA out of memory".to_string(),
            )],
        );
        let inputs = engine_inputs(&fleet, &parts, &logs);
        assert_eq!(inputs.len(), 2);
        assert_eq!(inputs[0].signals.kv_usage, Some(0.5));
        assert!(inputs[0].gpu.is_none());
        assert_eq!(inputs[0].logs.map(<[String]>::len), Some(1));
        assert_eq!(inputs[1].status, kvtop_core::fleet::EngineStatus::Down);
        assert_eq!(inputs[1].gpu, Some(&GpuSignals::default()));
        assert!(inputs[1].logs.is_none());
        // Rows past the end of the GPU buffer have no GPU signals.
        assert!(
            engine_inputs(&fleet, &FleetParts::default(), &logs)
                .iter()
                .all(|i| i.gpu.is_none())
        );
    }

    #[test]
    fn the_models_are_merged_only_when_a_rule_reads_them() {
        let fleet = fleet_with_an_engine_and_a_refused_target();
        // The console's parts always merge (its grouped table shows the figures).
        assert!(FleetParts::of(&fleet).model("m").is_some());
        let builtin = kvtop_core::rules::RuleSet::builtin().expect("built-in rules");
        let mut parts = FleetParts::for_rules(builtin.rules());
        parts.refresh(&fleet);
        assert!(parts.model("m").is_none());
        assert_eq!(parts.gpus.len(), 2);
        let user = kvtop_core::rules::RuleSet::with_user_text(
            "rules.toml",
            r#"[[rule]]
id = "model-slo"
title = "Model TTFT p99 above its SLO"
severity = "warning"
per = "model"
when = "merged(ttft_p99) > 1s"
cause = "test"
action = "test"
source = "test"
"#,
        )
        .expect("rules");
        let mut parts = FleetParts::for_rules(user.rules());
        parts.refresh(&fleet);
        assert!(parts.model("m").is_some());
    }

    #[test]
    fn gpu_signals_come_from_the_engine_s_signals() {
        assert_eq!(gpu_of(&Signals::default()), None);
        let signals = Signals {
            gpu_util: Some(0.2),
            gpu_temp: Some(71.0),
            xid: Some(0.0),
            ..Signals::default()
        };
        assert_eq!(
            gpu_of(&signals),
            Some(GpuSignals {
                util: Some(0.2),
                mem: None,
                temp_c: Some(71.0),
                power_w: None,
                xid: Some(0.0)
            })
        );
        let fleet = fleet_with_an_engine_and_a_refused_target();
        let mut out = vec![Some(GpuSignals::default()); 5];
        gpu_signals(&fleet, &mut out);
        assert_eq!(out, vec![None, None]);
    }
}
