//! PURE. One simulated vLLM pod: the engine process and the GPU it runs on, advanced together,
//! its log, and its life: crashes, restarts and scenario changes at given times.
//!
//! Time only moves through [`SimPod::advance_to`], which plays the pod's events in order (a
//! throughput line every stats interval, a crash, a restart) so that lines carry the values of
//! their own moment however rarely the pod is looked at.

use super::buckets::SimVersion;
use super::fleet::{EngineSpec, Scenario, engine_params, params_sampler};
use super::gpu::{GpuModel, GpuSpec};
use super::logs::{self, PodLog, SpecLine, StatsLine};
use super::model::{EngineCounters, EngineModel};

/// In the `oom-crashloop` scenario: the first crash comes this long after the scenario starts,
/// seconds.
pub(crate) const OOM_FIRST_CRASH_S: f64 = 20.0;
/// ...each restarted engine serves this long before it runs out of memory again...
pub(crate) const OOM_UP_S: f64 = 45.0;
/// ...and its endpoint refuses connections this long after each crash.
pub(crate) const OOM_DOWN_S: f64 = 8.0;
/// How long a normal start takes before the API server answers (the start-up lines span it).
const STARTUP_S: f64 = logs::STARTUP_S;

/// How the last container instance ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerExit {
    /// When the process that exited had started.
    pub started: f64,
    /// Simulated time of the exit.
    pub at: f64,
    /// Kubernetes' termination reason (`Error` for a process that exited non-zero).
    pub reason: &'static str,
    pub exit_code: i32,
    /// What killed it, for a human.
    pub message: String,
}

/// What a pod's container looks like from outside (for a Kubernetes API).
#[derive(Debug, Clone, PartialEq)]
pub struct PodLifecycle {
    pub scenario: Scenario,
    /// True while the engine process serves.
    pub serving: bool,
    /// Container restarts since the simulator started.
    pub restarts: u32,
    /// When the current process started (or the last one, while down).
    pub started_at: f64,
    pub last_exit: Option<ContainerExit>,
    /// While down after a crash: when the next start is due.
    pub restart_at: Option<f64>,
}

/// Counters at the previous throughput line.
#[derive(Debug, Clone, Copy)]
struct StatsMark {
    at: f64,
    counters: EngineCounters,
    line: Option<StatsLine>,
}

/// A vLLM pod: engine model plus GPU physics, its log and its lifecycle.
#[derive(Debug, Clone)]
pub(crate) struct SimPod {
    pub spec: EngineSpec,
    pub engine: EngineModel,
    pub gpu: GpuModel,
    /// False while the process is not running (the endpoint refuses connections).
    pub serving: bool,
    log: PodLog,
    restarts: u32,
    last_exit: Option<ContainerExit>,
    next_crash_at: Option<f64>,
    restart_at: Option<f64>,
    next_stats_at: f64,
    mark: StatsMark,
}

impl SimPod {
    /// The pod as composed, its process ready at `now` (start-up lines before it).
    pub fn new(spec: EngineSpec, gpu: GpuSpec, now: f64) -> Self {
        let engine = EngineModel::new(spec.params.clone(), spec.seed, now);
        let mark = StatsMark {
            at: now,
            counters: *engine.counters(),
            line: None,
        };
        let mut pod = Self {
            spec,
            engine,
            gpu: GpuModel::new(gpu, now),
            serving: false,
            log: PodLog::default(),
            restarts: 0,
            last_exit: None,
            next_crash_at: None,
            restart_at: None,
            next_stats_at: now,
            mark,
        };
        pod.apply_gpu_scenario(pod.spec.scenario);
        if pod.spec.scenario != Scenario::Down {
            pod.start(now - STARTUP_S, now, false, OOM_FIRST_CRASH_S);
        }
        pod
    }

    /// The GPU side of a scenario: its fault and XID (a scenario without either clears them).
    pub fn apply_gpu_scenario(&mut self, scenario: Scenario) {
        self.gpu.set_fault(scenario.gpu_fault());
        self.gpu.set_xid(scenario.xid());
    }

    /// Switch to `scenario` at `now` (after advancing to it): traffic and engine knobs change
    /// in the running process, the GPU gets the scenario's fault, `down` stops the process and
    /// leaving `down` starts it again; `oom-crashloop` arms the first crash.
    pub fn set_scenario(&mut self, scenario: Scenario, now: f64) {
        self.advance_to(now);
        let version = self.engine.params().version;
        let params = engine_params(
            self.spec.model,
            self.gpu.spec(),
            scenario,
            version,
            &mut params_sampler(self.spec.seed),
        );
        self.engine.set_params(params.clone());
        self.spec.params = params;
        self.spec.scenario = scenario;
        self.apply_gpu_scenario(scenario);
        if scenario == Scenario::Down {
            if self.serving {
                self.log_lines(now, SHUTDOWN);
            }
            self.serving = false;
            self.restart_at = None;
        } else if self.serving {
            self.next_crash_at =
                (scenario == Scenario::OomCrashloop).then_some(now + OOM_FIRST_CRASH_S);
        } else if self.restart_at.is_none() {
            // A pod that was down starts now (a crashed one keeps its pending restart).
            self.restart_at = Some(now);
            self.advance_to(now);
        }
    }

    /// Advance engine, GPU and log to `now`, playing every event due on the way. Earlier
    /// times are ignored.
    pub(crate) fn advance_to(&mut self, now: f64) {
        while let Some((at, event)) = self.next_event().filter(|(at, _)| *at <= now) {
            self.advance_parts(at);
            match event {
                Event::Stats => self.write_stats(at),
                Event::Crash => self.crash(at),
                Event::Restart => self.start(at - OOM_DOWN_S + 1.0, at, true, OOM_UP_S),
            }
        }
        self.advance_parts(now);
    }

    /// When the pod next starts or stops serving by itself (a crash or a restart), if ever.
    pub(crate) fn next_transition(&self) -> Option<f64> {
        if self.serving {
            self.next_crash_at
        } else {
            self.restart_at
        }
    }

    /// Stop the process at `now` (a pod deleted): it writes its shutdown lines and no longer
    /// serves until started again; a pending restart is cancelled.
    pub fn stop(&mut self, now: f64) {
        self.advance_to(now);
        if self.serving {
            self.log_lines(now, SHUTDOWN);
        }
        self.serving = false;
        self.restart_at = None;
        self.next_crash_at = None;
    }

    /// A new process that started at `starting_at` and serves from `ready_at` (at most
    /// `now`), told at `now`: counters and state start from zero at `ready_at`, its start-up
    /// lines span the two times. A process still serving is shut down first.
    pub(crate) fn start_process(&mut self, starting_at: f64, ready_at: f64, now: f64) {
        let ready_at = ready_at.min(now);
        let starting_at = starting_at.min(ready_at);
        self.advance_to(now);
        if self.serving {
            self.log_lines(now, SHUTDOWN);
        }
        self.start(starting_at, ready_at, true, OOM_UP_S);
        self.advance_to(now);
    }

    /// The pod's log.
    pub fn log(&self) -> &PodLog {
        &self.log
    }

    /// The container's state as a Kubernetes API would show it.
    pub fn lifecycle(&self) -> PodLifecycle {
        PodLifecycle {
            scenario: self.spec.scenario,
            serving: self.serving,
            restarts: self.restarts,
            started_at: self.engine.started_at(),
            last_exit: self.last_exit.clone(),
            restart_at: if self.serving { None } else { self.restart_at },
        }
    }

    // ---- events -------------------------------------------------------------------------

    fn next_event(&self) -> Option<(f64, Event)> {
        if self.serving {
            let stats = (self.next_stats_at, Event::Stats);
            match self.next_crash_at {
                Some(crash) if crash < stats.0 => Some((crash, Event::Crash)),
                _ => Some(stats),
            }
        } else {
            self.restart_at.map(|at| (at, Event::Restart))
        }
    }

    /// Engine and GPU to `now`. A pod that is not serving leaves its GPU idle and empty.
    fn advance_parts(&mut self, now: f64) {
        if self.serving {
            self.engine.advance_to(now);
            let memory = self.spec.params.gpu_memory_utilization;
            self.gpu.advance_to(now, self.engine.gpu_activity(), memory);
        } else {
            self.gpu.advance_to(now, 0.0, 0.0);
        }
    }

    fn version(&self) -> SimVersion {
        self.engine.params().version
    }

    /// A process starts at `starting_at` and serves from `ready_at`; `fresh` wipes the
    /// engine (a restart), else the engine already stands at `ready_at` (the first start). In
    /// a crash loop it runs out of memory `crash_after` seconds after it is ready.
    fn start(&mut self, starting_at: f64, ready_at: f64, fresh: bool, crash_after: f64) {
        if fresh {
            self.engine.restart(ready_at);
            if self.log.cursor() > 0 || self.last_exit.is_some() {
                self.restarts += 1;
            }
        }
        let version = self.version();
        for (at, text) in logs::startup(&self.spec, self.gpu.spec(), version, starting_at, ready_at)
        {
            self.log.push(at, self.restarts, text);
        }
        self.serving = true;
        self.restart_at = None;
        self.next_crash_at =
            (self.spec.scenario == Scenario::OomCrashloop).then_some(ready_at + crash_after);
        self.next_stats_at = ready_at + logs::stats_interval(version);
        self.mark = StatsMark {
            at: ready_at,
            counters: *self.engine.counters(),
            line: None,
        };
    }

    fn crash(&mut self, at: f64) {
        let version = self.version();
        for text in logs::out_of_memory(at, version, self.gpu.spec()) {
            self.log.push(at, self.restarts, text);
        }
        self.serving = false;
        self.last_exit = Some(ContainerExit {
            started: self.engine.started_at(),
            at,
            reason: "Error",
            exit_code: 1,
            message: "torch.cuda.OutOfMemoryError: CUDA out of memory".to_owned(),
        });
        self.restart_at = Some(at + OOM_DOWN_S);
        self.next_crash_at = None;
    }

    fn write_stats(&mut self, at: f64) {
        let version = self.version();
        let c = *self.engine.counters();
        let prev = self.mark.counters;
        let interval = (at - self.mark.at).max(1e-9);
        let per_s = |now: u64, then: u64| now.saturating_sub(then) as f64 / interval;
        let queries = c.prefix_queries.saturating_sub(prev.prefix_queries);
        let line = StatsLine {
            prompt_tps: per_s(c.prompt_tokens, prev.prompt_tokens),
            generation_tps: per_s(c.generation_tokens, prev.generation_tokens),
            running: self.engine.running(),
            waiting: self.engine.waiting(),
            kv_usage: self.engine.kv_usage(),
            prefix_hit: if queries > 0 {
                c.prefix_hits.saturating_sub(prev.prefix_hits) as f64 / queries as f64
            } else {
                0.0
            },
        };
        if let Some(text) = logs::stats(version, at, &line, self.mark.line.as_ref()) {
            self.log.push(at, self.restarts, text);
            if version == SimVersion::V0 && queries > 0 {
                self.log
                    .push(at, self.restarts, logs::prefix_hit_v0(at, line.prefix_hit));
            }
            if let Some(spec) = self.engine.params().spec_decode {
                let drafts = c.spec_drafts.saturating_sub(prev.spec_drafts);
                if drafts > 0 {
                    let figures = SpecLine {
                        drafts,
                        draft_tokens: c.spec_draft_tokens.saturating_sub(prev.spec_draft_tokens),
                        accepted_tokens: c
                            .spec_accepted_tokens
                            .saturating_sub(prev.spec_accepted_tokens),
                        interval_s: interval,
                        num_speculative_tokens: spec.num_speculative_tokens,
                    };
                    self.log
                        .push(at, self.restarts, logs::spec_decode(version, at, &figures));
                }
            }
        }
        self.mark = StatsMark {
            at,
            counters: c,
            line: Some(line),
        };
        self.next_stats_at = at + logs::stats_interval(version);
    }

    fn log_lines<'a>(&mut self, at: f64, lines: impl IntoIterator<Item = &'a str>) {
        for text in lines {
            self.log.push(at, self.restarts, text.to_owned());
        }
    }
}

/// What uvicorn writes when the server process stops.
const SHUTDOWN: [&str; 2] = [
    "INFO:     Shutting down",
    "INFO:     Finished server process [1]",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Stats,
    Crash,
    Restart,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::plan;
    use crate::gpu::H100_SXM;

    const T0: f64 = 1_800_000_000.0;

    fn pod(scenario: Scenario) -> SimPod {
        let mut fleet = plan(3, 8, SimVersion::V1, 5);
        let mut spec = fleet.engines.remove(1);
        spec.scenario = Scenario::Healthy;
        let mut pod = SimPod::new(spec, H100_SXM, T0);
        if scenario != Scenario::Healthy {
            pod.set_scenario(scenario, T0);
        }
        pod
    }

    fn texts(pod: &SimPod) -> Vec<String> {
        pod.log()
            .tail(usize::MAX)
            .into_iter()
            .map(|l| l.text)
            .collect()
    }

    #[test]
    fn a_new_pod_has_its_startup_in_the_log_before_it_serves() {
        let p = pod(Scenario::Healthy);
        let lines = p.log().tail(usize::MAX);
        assert_eq!(
            lines.last().map(|l| (l.text.as_str(), l.at)),
            Some(("INFO:     Application startup complete.", T0))
        );
        assert!(lines.first().is_some_and(|l| l.at == T0 - 41.0));
        assert!(lines.iter().any(|l| l.text.contains("GPU KV cache size: ")));
        assert!(p.serving);
    }

    #[test]
    fn throughput_lines_come_every_ten_seconds_however_often_the_pod_is_read() {
        let mut once = pod(Scenario::Healthy);
        let mut often = pod(Scenario::Healthy);
        once.advance_to(T0 + 35.0);
        for i in 1..=70 {
            often.advance_to(T0 + f64::from(i) * 0.5);
        }
        let stats = |p: &SimPod| -> Vec<(f64, String)> {
            p.log()
                .tail(usize::MAX)
                .into_iter()
                .filter(|l| l.text.contains("Avg prompt throughput"))
                .map(|l| (l.at, l.text))
                .collect()
        };
        let generation = |text: &str| -> f64 {
            text.split("Avg generation throughput: ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let (a, b) = (stats(&once), stats(&often));
        let times = |v: &[(f64, String)]| v.iter().map(|(at, _)| at - T0).collect::<Vec<_>>();
        assert_eq!(times(&a), [10.0, 20.0, 30.0]);
        assert_eq!(times(&a), times(&b));
        // The model's step bookkeeping differs a hair with the advance pattern, no more.
        for ((_, x), (_, y)) in a.iter().zip(&b) {
            assert!(
                (generation(x) / generation(y) - 1.0).abs() < 0.01,
                "{x}\n{y}"
            );
        }
        assert!(
            a.iter()
                .all(|(_, t)| t.contains("Engine 000: ") && t.contains("Running: "))
        );
    }

    #[test]
    fn a_crash_loop_dies_of_oom_refuses_for_a_while_and_restarts_from_zero() {
        let mut p = pod(Scenario::OomCrashloop);
        assert_eq!(p.next_transition(), Some(T0 + OOM_FIRST_CRASH_S));
        p.advance_to(T0 + 19.0);
        assert!(p.serving);
        assert!(p.engine.counters().generation_tokens > 0);
        p.advance_to(T0 + 21.0);
        assert!(!p.serving);
        let life = p.lifecycle();
        assert_eq!(life.restarts, 0);
        assert_eq!(life.restart_at, Some(T0 + 20.0 + OOM_DOWN_S));
        assert_eq!(
            life.last_exit.as_ref().map(|e| (e.at, e.exit_code)),
            Some((T0 + 20.0, 1))
        );
        assert!(texts(&p).iter().any(|t| t.contains(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        )));
        let ready = T0 + 20.0 + OOM_DOWN_S;
        p.advance_to(ready + 0.5);
        assert!(p.serving);
        assert_eq!(p.lifecycle().restarts, 1);
        assert_eq!(p.engine.started_at(), ready);
        // Counters restarted: half a second of traffic at most.
        assert!(p.engine.counters().finished_total() < 20);
        assert_eq!(p.next_transition(), Some(ready + OOM_UP_S));
        // The new instance's start-up lines lie between the crash and the restart.
        let restarted: Vec<_> = p
            .log()
            .tail(usize::MAX)
            .into_iter()
            .filter(|l| l.container == 1)
            .collect();
        assert!(restarted.iter().all(|l| l.at > T0 + 20.0 && l.at <= ready));
        assert!(
            restarted
                .iter()
                .any(|l| l.text.contains("Application startup complete"))
        );
        p.advance_to(ready + OOM_UP_S + 1.0);
        assert!(!p.serving);
        // Leaving the scenario: the pending restart happens, then no more crashes.
        p.set_scenario(Scenario::Healthy, ready + OOM_UP_S + 2.0);
        p.advance_to(ready + OOM_UP_S + 2.0 * OOM_DOWN_S);
        assert!(p.serving);
        assert_eq!(p.next_transition(), None);
    }

    #[test]
    fn down_stops_the_process_and_leaving_it_starts_a_new_one() {
        let mut p = pod(Scenario::Healthy);
        p.advance_to(T0 + 5.0);
        p.set_scenario(Scenario::Down, T0 + 5.0);
        assert!(!p.serving);
        assert!(texts(&p).iter().any(|t| t == "INFO:     Shutting down"));
        p.advance_to(T0 + 60.0);
        assert!(!p.serving, "a down pod stays down");
        p.set_scenario(Scenario::Healthy, T0 + 60.0);
        assert!(p.serving);
        assert_eq!(p.engine.started_at(), T0 + 60.0);
        assert_eq!(p.lifecycle().restarts, 1);
    }

    #[test]
    fn a_stuck_engine_logs_one_idle_line_then_goes_quiet() {
        let mut p = pod(Scenario::Healthy);
        p.advance_to(T0 + 30.0);
        p.set_scenario(Scenario::StuckRequests, T0 + 30.0);
        p.advance_to(T0 + 120.0);
        let after: Vec<String> = p
            .log()
            .tail(usize::MAX)
            .into_iter()
            .filter(|l| l.at > T0 + 30.0)
            .map(|l| l.text)
            .collect();
        // At +40 s nothing came out during the interval; vLLM logs that line because the one
        // before had tokens, then stays silent (it logs an idle engine at debug level).
        assert_eq!(after.len(), 1, "{after:?}");
        assert!(
            after[0].contains("Avg generation throughput: 0.0 tokens/s"),
            "{after:?}"
        );
        assert!(p.engine.running() > 0);
    }

    #[test]
    fn spec_decoding_adds_its_line_after_the_throughput_line() {
        let mut p = pod(Scenario::SpecDecodePoor);
        p.advance_to(T0 + 21.0);
        let t = texts(&p);
        let spec: Vec<&String> = t
            .iter()
            .filter(|l| l.contains("SpecDecoding metrics"))
            .collect();
        assert_eq!(spec.len(), 2);
        assert!(
            spec.iter()
                .all(|l| l.contains("Avg Draft acceptance rate: 12.0%")),
            "{spec:?}"
        );
    }
}
