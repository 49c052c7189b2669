//! PURE. The rules' inputs for one cycle, from the fleet and the recent logs: the one place
//! that turns fleet state into [`EngineInput`]s, for `kvtop check` and the console alike.
//!
//! ```no_run
//! # use kvtop::{diagnose::{TargetLogs, inputs}, fleet::Fleet, rules::RuleEngine};
//! # fn f(fleet: &Fleet, logs: &TargetLogs, engine: &mut RuleEngine, now: f64) {
//! let gpus = inputs::gpu_signals(fleet);
//! let inputs = inputs::engine_inputs(fleet, &gpus, logs);
//! let findings = engine.evaluate(&inputs, now);
//! # }
//! ```

use crate::fleet::{EngineState, Fleet, Signals};
use crate::rules::{EngineInput, GpuSignals};

/// The GPU signals of each engine row of `fleet`, in row order (`None` for engines without
/// GPU data). Kept in a vector the inputs borrow from.
pub fn gpu_signals(fleet: &Fleet) -> Vec<Option<GpuSignals>> {
    fleet.engines().iter().map(|e| gpu_of(&e.signals)).collect()
}

/// The GPU part of an engine's signals in the rules' terms; `None` when no GPU field is known.
pub fn gpu_of(signals: &Signals) -> Option<GpuSignals> {
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
/// engine's GPU signals (`gpus` from [`gpu_signals`] of the same fleet) and the recent log
/// lines of its target when that target has a log stream.
pub fn engine_inputs<'a>(
    fleet: &'a Fleet,
    gpus: &'a [Option<GpuSignals>],
    logs: &'a super::TargetLogs,
) -> Vec<EngineInput<'a>> {
    fleet
        .engines()
        .iter()
        .zip(
            gpus.iter()
                .map(Option::as_ref)
                .chain(std::iter::repeat(None)),
        )
        .filter(|(e, _)| is_engine(fleet, e))
        .map(|(e, gpu)| {
            let input = EngineInput::from_state(e).with_gpu(gpu);
            match logs.get(e.target) {
                Some(lines) => input.with_logs(lines),
                None => input,
            }
        })
        .collect()
}

/// False for the rows of targets that only export GPUs (dcgm-exporters).
pub fn is_engine(fleet: &Fleet, engine: &EngineState) -> bool {
    !fleet.is_gpu_exporter(engine.target)
}
