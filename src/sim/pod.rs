//! PURE. One simulated vLLM pod: the engine process and the GPU it runs on, advanced together.

use super::fleet::{EngineSpec, Scenario};
use super::gpu::{GpuModel, GpuSpec};
use super::model::EngineModel;

/// A vLLM pod: engine model plus GPU physics, and whether its process is serving.
#[derive(Debug, Clone)]
pub struct SimPod {
    pub spec: EngineSpec,
    pub engine: EngineModel,
    pub gpu: GpuModel,
    /// False while the process is not running (the endpoint refuses connections).
    pub serving: bool,
}

impl SimPod {
    /// The pod as composed, started at `now`.
    pub fn new(spec: EngineSpec, gpu: GpuSpec, now: f64) -> Self {
        let engine = EngineModel::new(spec.params.clone(), spec.seed, now);
        let serving = spec.scenario != Scenario::Down;
        let mut pod = Self {
            spec,
            engine,
            gpu: GpuModel::new(gpu, now),
            serving,
        };
        pod.apply_gpu_scenario(pod.spec.scenario);
        pod
    }

    /// The GPU side of a scenario: its fault and XID (a scenario without either clears them).
    /// Traffic stays as it is: that part of a scenario is chosen when the pod is created.
    pub fn apply_gpu_scenario(&mut self, scenario: Scenario) {
        self.gpu.set_fault(scenario.gpu_fault());
        self.gpu.set_xid(scenario.xid());
    }

    /// Advance engine and GPU to `now`. A pod that is not serving leaves its GPU idle and empty.
    pub fn advance_to(&mut self, now: f64) {
        if self.serving {
            self.engine.advance_to(now);
            let memory = self.spec.params.gpu_memory_utilization;
            self.gpu.advance_to(now, self.engine.gpu_activity(), memory);
        } else {
            self.gpu.advance_to(now, 0.0, 0.0);
        }
    }

    /// Restart the process at `now`, as after a crash: counters and state start from zero.
    pub fn restart(&mut self, now: f64) {
        self.engine.restart(now);
        self.serving = true;
    }
}
