//! The rule engine over recorded signal sequences: every built-in rule fires only after its
//! `for` duration, clears, stays listed as resolved for five minutes and is then dropped;
//! hysteresis, unknown signals, frozen state for engines that are not up, fleet rules, text
//! rules, ordering and re-keying.

use kvtop_core::engine::{CacheConfig, EngineId, EngineSample};
use kvtop_core::fleet::{EngineStatus, Signals, TargetId, Ts};
use kvtop_core::rules::eval::RuleEngine;
use kvtop_core::rules::file::RuleSet;
use kvtop_core::rules::finding::{Finding, FindingState, Subject};
use kvtop_core::rules::health::{Breaker, Health};
use kvtop_core::rules::incident::{Explains, fold};
use kvtop_core::rules::input::{EngineInput, GpuSignals};
use kvtop_core::rules::model::{Per, Severity};

const T0: Ts = 1_000_000.0;

/// One engine's owned inputs.
#[derive(Clone, Default)]
struct Engine {
    target: u32,
    id: EngineId,
    name: String,
    status: Option<EngineStatus>,
    signals: Signals,
    sample: Option<EngineSample>,
    gpu: Option<GpuSignals>,
    facts: Vec<(String, String)>,
    labels: Vec<(String, String)>,
    logs: Option<Vec<String>>,
    events: Option<Vec<String>>,
    pod_status: Option<Vec<String>>,
    gen_stall_s: Option<f64>,
}

impl Engine {
    fn new(target: u32, model: &str) -> Self {
        Engine {
            target,
            id: EngineId {
                model: model.into(),
                engine: "0".into(),
            },
            name: format!("pod-{target}"),
            ..Engine::default()
        }
    }

    fn input(&self) -> EngineInput<'_> {
        EngineInput {
            target: TargetId(self.target),
            id: &self.id,
            name: &self.name,
            status: self.status.unwrap_or(EngineStatus::Up),
            signals: &self.signals,
            sample: self.sample.as_ref(),
            restarted_at: None,
            gpu: self.gpu.as_ref(),
            facts: &self.facts,
            labels: &self.labels,
            logs: self.logs.as_deref(),
            events: self.events.as_deref(),
            pod_status: self.pod_status.as_deref(),
            gen_stall_s: self.gen_stall_s,
            stalled: false,
            model: None,
        }
    }

    fn cache(&mut self) -> &mut CacheConfig {
        self.sample
            .get_or_insert_with(EngineSample::default)
            .cache_config
            .get_or_insert_with(CacheConfig::default)
    }

    fn gpu(&mut self) -> &mut GpuSignals {
        self.gpu.get_or_insert_with(GpuSignals::default)
    }

    fn fact(&mut self, key: &str, value: &str) {
        self.facts.retain(|(k, _)| k != key);
        self.facts.push((key.into(), value.into()));
    }
}

fn builtin() -> RuleSet {
    RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"))
}

fn run(engine: &mut RuleEngine, engines: &[Engine], now: Ts) -> Vec<Finding> {
    let inputs: Vec<EngineInput<'_>> = engines.iter().map(Engine::input).collect();
    engine.evaluate(&inputs, now).to_vec()
}

fn of<'f>(findings: &'f [Finding], rule: &str) -> Vec<&'f Finding> {
    findings.iter().filter(|f| &*f.rule_id == rule).collect()
}

fn one<'f>(findings: &'f [Finding], rule: &str) -> &'f Finding {
    let matching = of(findings, rule);
    assert_eq!(matching.len(), 1, "{rule}: {matching:#?}");
    matching[0]
}

type Set = fn(&mut Engine);

/// Per-engine rules over numbers: how to make each one hold (hot) and not hold (cold).
const ENGINE_CASES: &[(&str, Set, Set)] = &[
    (
        "ttft-kv-thrash",
        |e| {
            e.signals.ttft_p95 = Some(0.6);
            e.signals.kv_usage = Some(0.95);
        },
        |e| {
            e.signals.ttft_p95 = Some(0.3);
            e.signals.kv_usage = Some(0.95);
        },
    ),
    (
        "ttft-high",
        |e| {
            e.signals.ttft_p95 = Some(0.6);
            e.signals.kv_usage = Some(0.5);
        },
        |e| {
            e.signals.ttft_p95 = Some(0.3);
            e.signals.kv_usage = Some(0.5);
        },
    ),
    (
        "batch-tokens-low",
        |e| {
            e.signals.kv_usage = Some(0.3);
            e.signals.waiting = Some(5.0);
        },
        |e| {
            e.signals.kv_usage = Some(0.3);
            e.signals.waiting = Some(0.0);
        },
    ),
    (
        "chunked-prefill-batch-big",
        |e| {
            e.fact("config.enable_chunked_prefill", "true");
            e.fact("config.max_num_batched_tokens", "16384");
        },
        |e| {
            e.fact("config.enable_chunked_prefill", "true");
            e.fact("config.max_num_batched_tokens", "8192");
        },
    ),
    (
        "stuck-requests",
        |e| {
            e.signals.running = Some(5.0);
            e.signals.gen_tps = Some(0.0);
        },
        |e| {
            e.signals.running = Some(5.0);
            e.signals.gen_tps = Some(120.0);
        },
    ),
    (
        "cpu-high",
        |e| e.signals.cpu_cores = Some(2.5),
        |e| e.signals.cpu_cores = Some(0.5),
    ),
    (
        "omp-threads-high",
        |e| e.fact("env.OMP_NUM_THREADS", "32"),
        |e| e.fact("env.OMP_NUM_THREADS", "8"),
    ),
    (
        "kv-high",
        |e| e.signals.kv_usage = Some(0.92),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "prefix-hit-low",
        |e| e.signals.prefix_hit = Some(0.5),
        |e| e.signals.prefix_hit = Some(0.9),
    ),
    (
        "prefix-hit-very-low",
        |e| e.signals.prefix_hit = Some(0.2),
        |e| e.signals.prefix_hit = Some(0.9),
    ),
    (
        "ttft-target",
        |e| e.signals.ttft_p95 = Some(0.2),
        |e| e.signals.ttft_p95 = Some(0.05),
    ),
    (
        "engine-unreachable",
        |e| e.status = Some(EngineStatus::Stale),
        |e| e.status = Some(EngineStatus::Up),
    ),
    (
        "ttft-fragmentation",
        |e| {
            e.signals.ttft_p95 = Some(0.3);
            e.signals.kv_usage = Some(0.8);
        },
        |e| {
            e.signals.ttft_p95 = Some(0.1);
            e.signals.kv_usage = Some(0.8);
        },
    ),
    (
        "kv-breaker",
        |e| e.signals.kv_usage = Some(0.89),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "prefill-bottleneck",
        |e| {
            e.signals.cpu_cores = Some(2.0);
            e.gpu().util = Some(0.1);
        },
        |e| {
            e.signals.cpu_cores = Some(0.5);
            e.gpu().util = Some(0.1);
        },
    ),
    (
        "kv-fragmentation-long",
        |e| e.signals.kv_usage = Some(0.75),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "prefix-caching-off",
        |e| e.cache().enable_prefix_caching = Some(false),
        |e| e.cache().enable_prefix_caching = Some(true),
    ),
    (
        "kv-elevated",
        |e| e.signals.kv_usage = Some(0.86),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "running-high",
        |e| e.signals.running = Some(201.0),
        |e| e.signals.running = Some(200.0),
    ),
    (
        "gpu-mem-util-high",
        |e| e.cache().gpu_memory_utilization = Some(0.95),
        |e| e.cache().gpu_memory_utilization = Some(0.92),
    ),
    (
        "spec-acceptance-low",
        |e| e.signals.spec_acceptance = Some(0.12),
        |e| e.signals.spec_acceptance = Some(0.6),
    ),
    (
        "batch-full-queueing",
        |e| {
            e.fact("config.max_num_seqs", "256");
            e.signals.running = Some(256.0);
            e.signals.waiting = Some(3.0);
        },
        |e| {
            e.fact("config.max_num_seqs", "256");
            e.signals.running = Some(200.0);
            e.signals.waiting = Some(3.0);
        },
    ),
    (
        "gpu-idle-with-queue",
        |e| {
            e.gpu().util = Some(0.1);
            e.signals.waiting = Some(3.0);
        },
        |e| {
            e.gpu().util = Some(0.5);
            e.signals.waiting = Some(3.0);
        },
    ),
    (
        "gpu-hot",
        |e| e.gpu().temp_c = Some(91.0),
        |e| e.gpu().temp_c = Some(70.0),
    ),
    (
        "gpu-xid",
        |e| e.gpu().xid = Some(79.0),
        |e| e.gpu().xid = Some(0.0),
    ),
    (
        "queue-deep",
        |e| e.signals.waiting = Some(51.0),
        |e| e.signals.waiting = Some(50.0),
    ),
    (
        "itl-p99-slo",
        |e| e.signals.itl_p99 = Some(0.3),
        |e| e.signals.itl_p99 = Some(0.1),
    ),
    (
        "kv-critical",
        |e| e.signals.kv_usage = Some(0.96),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "kv-full",
        |e| e.signals.kv_usage = Some(0.99),
        |e| e.signals.kv_usage = Some(0.5),
    ),
    (
        "e2e-p99-high",
        |e| e.signals.e2e_p99 = Some(130.0),
        |e| e.signals.e2e_p99 = Some(10.0),
    ),
    (
        "ttft-p99-critical",
        |e| e.signals.ttft_p99 = Some(31.0),
        |e| e.signals.ttft_p99 = Some(1.0),
    ),
    (
        "ttft-p99-high",
        |e| e.signals.ttft_p99 = Some(11.0),
        |e| e.signals.ttft_p99 = Some(1.0),
    ),
    (
        "itl-p99-high",
        |e| e.signals.itl_p99 = Some(1.5),
        |e| e.signals.itl_p99 = Some(0.05),
    ),
    (
        "preemptions-high",
        |e| e.signals.preemptions_per_s = Some(2.0),
        |e| e.signals.preemptions_per_s = Some(0.0),
    ),
    (
        "preemptions",
        |e| e.signals.preemptions_per_s = Some(0.01),
        |e| e.signals.preemptions_per_s = Some(0.0),
    ),
    (
        "gpu-underused",
        |e| e.gpu().util = Some(0.1),
        |e| e.gpu().util = Some(0.5),
    ),
    (
        "error-ratio-critical",
        |e| e.signals.error_ratio = Some(0.06),
        |e| e.signals.error_ratio = Some(0.0),
    ),
    (
        "error-ratio-high",
        |e| e.signals.error_ratio = Some(0.02),
        |e| e.signals.error_ratio = Some(0.0),
    ),
    (
        "engine-down",
        |e| e.status = Some(EngineStatus::Down),
        |e| e.status = Some(EngineStatus::Up),
    ),
];

/// Per-engine text rules: the source and a line from the reference that must match.
const TEXT_CASES: &[(&str, &str, &str)] = &[
    (
        "cuda-oom",
        "log",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ),
    (
        "nccl-cuda-error",
        "log",
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1270, unhandled cuda error",
    ),
    (
        "nccl-system-error",
        "log",
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.18.1",
    ),
    ("nccl-error", "log", "NCCL error: remote process exited"),
    (
        "kv-eviction-log",
        "log",
        "Evicting 128 blocks from worker-3",
    ),
    (
        "ray-actor-sigkill",
        "log",
        "ray.exceptions.RayActorError: The actor died because of a SIGKILL signal",
    ),
    (
        "driver-mismatch",
        "event",
        "Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]",
    ),
    ("crash-loop", "pod_status", "CrashLoopBackOff"),
    (
        "ray-actor-error",
        "log",
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
    ),
    (
        "tokenizer-vocab-mismatch",
        "log",
        "ValueError: The tokenizer and model have different vocab sizes",
    ),
    (
        "spec-tokenizer-mismatch",
        "log",
        "ValueError: Speculative decoding requires draft model to have same tokenizer as target model.",
    ),
    (
        "probe-failing",
        "event",
        "Readiness probe failed: Get \"http://10.0.0.7:8000/v1/models\": connection refused",
    ),
];

/// Rules over a log line and pod facts together, checked on their own.
const MIXED_RULES: &[&str] = &["oom-chunked-prefill", "oom-killed"];

/// Per-model rules, checked in `model_rules_*` tests.
const MODEL_RULES: &[&str] = &[
    "empty-worker-trap",
    "kv-hpa-target",
    "queue-hpa-target",
    "pdb-min-available",
    "no-engine-up",
    "no-routed-engine",
];

#[test]
fn every_builtin_rule_has_a_case_here() {
    let rules = builtin();
    for rule in rules.rules() {
        let id = rule.id.as_str();
        let listed = ENGINE_CASES.iter().any(|(r, _, _)| *r == id)
            || TEXT_CASES.iter().any(|(r, _, _)| *r == id)
            || MIXED_RULES.contains(&id)
            || MODEL_RULES.contains(&id);
        assert!(listed, "rule {id} has no test case");
    }
    for id in ENGINE_CASES
        .iter()
        .map(|c| c.0)
        .chain(TEXT_CASES.iter().map(|c| c.0))
        .chain(MIXED_RULES.iter().copied())
        .chain(MODEL_RULES.iter().copied())
    {
        assert!(rules.get(id).is_some(), "case for unknown rule {id}");
    }
}

/// Drive one engine through cold → hot → (for) → firing → cold → resolved → dropped.
fn lifecycle(rule_id: &str, hot: &dyn Fn(&mut Engine), cold: &dyn Fn(&mut Engine)) {
    let rules = builtin();
    let rule = rules.get(rule_id).unwrap_or_else(|| panic!("{rule_id}"));
    let hold = rule.for_secs;
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    cold(&mut e);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0);
    assert!(of(&findings, rule_id).is_empty(), "{rule_id} cold at start");

    let start = T0 + 1.0;
    hot(&mut e);
    let findings = run(&mut engine, std::slice::from_ref(&e), start);
    let f = one(&findings, rule_id);
    assert_eq!(f.since, start, "{rule_id}");
    if hold > 0.0 {
        assert_eq!(
            f.state,
            FindingState::Pending,
            "{rule_id} right after it holds"
        );
        let findings = run(&mut engine, std::slice::from_ref(&e), start + hold - 1.0);
        assert_eq!(
            one(&findings, rule_id).state,
            FindingState::Pending,
            "{rule_id} one second before its for = {hold}s"
        );
    }
    let fired = start + hold;
    let findings = run(&mut engine, std::slice::from_ref(&e), fired);
    let f = one(&findings, rule_id);
    assert_eq!(
        f.state,
        FindingState::Firing,
        "{rule_id} after for = {hold}s"
    );
    assert_eq!((f.since, f.fired_at), (start, Some(fired)), "{rule_id}");
    assert!(!f.evidence.is_empty(), "{rule_id} evidence");
    assert!(!f.frozen, "{rule_id}");

    // A rule with keep_firing_for keeps firing that long after its condition clears.
    let keep = rule.keep_firing_for;
    cold(&mut e);
    if keep > 0.0 {
        let findings = run(&mut engine, std::slice::from_ref(&e), fired + 1.0);
        assert_eq!(
            one(&findings, rule_id).state,
            FindingState::Firing,
            "{rule_id} held for keep_firing_for = {keep}s"
        );
    }
    let cleared = fired + 1.0 + keep;
    let findings = run(&mut engine, std::slice::from_ref(&e), cleared);
    let f = one(&findings, rule_id);
    assert_eq!(f.state, FindingState::Resolved { at: cleared }, "{rule_id}");
    assert_eq!(f.resolved_ago(cleared + 60.0), Some(60.0));

    let findings = run(&mut engine, std::slice::from_ref(&e), cleared + 299.0);
    assert_eq!(
        one(&findings, rule_id).state,
        FindingState::Resolved { at: cleared },
        "{rule_id} still listed 299 s after it resolved"
    );
    let findings = run(&mut engine, std::slice::from_ref(&e), cleared + 300.0);
    assert!(
        of(&findings, rule_id).is_empty(),
        "{rule_id} dropped 300 s after it resolved"
    );
}

#[test]
fn every_engine_rule_waits_for_its_duration_then_fires_clears_and_expires() {
    for (id, hot, cold) in ENGINE_CASES {
        lifecycle(id, hot, cold);
    }
}

#[test]
fn every_text_rule_matches_its_reference_line_and_clears_when_it_ages_out() {
    for (id, source, line) in TEXT_CASES {
        let set = |lines: Vec<String>| {
            move |e: &mut Engine| match *source {
                "log" => e.logs = Some(lines.clone()),
                "event" => e.events = Some(lines.clone()),
                "pod_status" => e.pod_status = Some(lines.clone()),
                other => panic!("{other}"),
            }
        };
        let hot = set(vec!["INFO: unrelated".into(), (*line).to_owned()]);
        let cold = set(vec!["INFO: unrelated".into()]);
        lifecycle(id, &hot, &cold);
    }
}

#[test]
fn text_rules_keep_firing_for_a_crashed_engine() {
    // A crashed engine is not scraped, but its log still says why.
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.status = Some(EngineStatus::Down);
    e.logs = Some(vec![
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB".into(),
    ]);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0);
    let f = one(&findings, "cuda-oom");
    assert_eq!(f.state, FindingState::Firing);
    assert!(!f.frozen);
    assert_eq!(f.evidence.len(), 2);
    assert_eq!(
        f.evidence[0].line.as_deref(),
        e.logs.as_ref().map(|l| l[0].as_str())
    );
    // No event stream: that half of the `or` is unknown, the log half decides.
    assert_eq!(
        f.evidence[1].describe(),
        "event ~ \"CUDA out of memory\": no event available"
    );
}

/// The built-in rules with `rule_id`'s keep_firing_for off, for tests of when its condition
/// holds cycle by cycle.
fn without_hold_down(rule_id: &str) -> RuleSet {
    let user = format!("[[rule]]\nid = \"{rule_id}\"\nkeep_firing_for = \"0s\"\n");
    RuleSet::with_user_text("test.toml", &user).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn text_matches_follow_changing_lines_across_cycles_and_engines() {
    let rules = without_hold_down("cuda-oom");
    let mut engine = RuleEngine::new(&rules);
    let mut a = Engine::new(0, "");
    let mut b = Engine::new(1, "");
    let filler = "x".repeat(18);
    let oom = "CUDA out of memory".to_owned();
    let at = |engine: &mut RuleEngine, a: &Engine, b: &Engine, t: Ts| {
        let findings = run(engine, &[a.clone(), b.clone()], t);
        let firing = |e: &Engine| {
            findings.iter().any(|f| {
                &*f.rule_id == "cuda-oom"
                    && f.state == FindingState::Firing
                    && f.subject.is_engine(TargetId(e.target), &e.id)
            })
        };
        (firing(a), firing(b))
    };
    a.logs = Some(vec![filler.clone()]);
    b.logs = Some(vec![oom.clone()]);
    b.events = Some(vec![]);
    assert_eq!(at(&mut engine, &a, &b, T0), (false, true));
    // Same length, new content: `a` now matches, in another case; `b` matches by its event.
    a.logs = Some(vec![oom.to_uppercase()]);
    b.logs = Some(vec![filler.clone()]);
    b.events = Some(vec![format!("Warning: {oom}")]);
    assert_eq!(at(&mut engine, &a, &b, T0 + 1.0), (true, true));
    // Unchanged lines keep their answers.
    assert_eq!(at(&mut engine, &a, &b, T0 + 2.0), (true, true));
    a.logs = Some(vec!["y".repeat(18)]);
    b.events = Some(vec![]);
    assert_eq!(at(&mut engine, &a, &b, T0 + 3.0), (false, false));
}

#[test]
fn oom_with_chunked_prefill_needs_the_log_line_and_the_pod_spec() {
    let rules = without_hold_down("oom-chunked-prefill");
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.logs = Some(vec![
        "torch.cuda.OutOfMemoryError: CUDA out of memory.".into(),
    ]);
    // Without pod facts the config half is unknown: no finding.
    let findings = run(&mut engine, std::slice::from_ref(&e), T0);
    assert!(of(&findings, "oom-chunked-prefill").is_empty());
    e.fact("config.enable_chunked_prefill", "True");
    e.fact("config.max_num_batched_tokens", "16384");
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 1.0);
    assert_eq!(
        one(&findings, "oom-chunked-prefill").state,
        FindingState::Firing
    );
    e.fact("config.max_num_batched_tokens", "8192");
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 2.0);
    assert_eq!(
        one(&findings, "oom-chunked-prefill").state,
        FindingState::Resolved { at: T0 + 2.0 }
    );
}

#[test]
fn oom_killed_fires_while_the_killed_pod_is_not_ready() {
    let rules = without_hold_down("oom-killed");
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.status = Some(EngineStatus::Down);
    // As the Kubernetes view derives them: phase, waiting reason, last termination, NotReady.
    e.pod_status = Some(vec![
        "Running".into(),
        "CrashLoopBackOff".into(),
        "OOMKilled".into(),
        "NotReady".into(),
    ]);
    // Without the pod's readiness the rule cannot tell: no finding.
    let findings = run(&mut engine, std::slice::from_ref(&e), T0);
    assert!(of(&findings, "oom-killed").is_empty());
    e.fact("pod.ready", "false");
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 1.0);
    assert_eq!(one(&findings, "oom-killed").state, FindingState::Firing);
    // Ready again: lastState still says OOMKilled, but the pod recovered.
    e.fact("pod.ready", "true");
    e.status = Some(EngineStatus::Up);
    e.pod_status = Some(vec!["Running".into(), "OOMKilled".into()]);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 2.0);
    assert_eq!(
        one(&findings, "oom-killed").state,
        FindingState::Resolved { at: T0 + 2.0 }
    );
}

#[test]
fn host_oom_and_ray_deaths_head_the_crash_they_cause() {
    let rules = builtin();
    let explains = Explains::of(rules.rules());
    for symptom in [
        "crash-loop",
        "engine-down",
        "engine-unreachable",
        "probe-failing",
    ] {
        assert!(explains.explains("oom-killed", symptom), "{symptom}");
        assert!(explains.explains("ray-actor-error", symptom), "{symptom}");
    }
    assert!(explains.explains("ray-actor-sigkill", "ray-actor-error"));
    // A crash-looping, OOMKilled pod is one incident headed by the kill.
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.status = Some(EngineStatus::Down);
    e.pod_status = Some(vec![
        "Running".into(),
        "CrashLoopBackOff".into(),
        "OOMKilled".into(),
        "NotReady".into(),
    ]);
    e.fact("pod.ready", "false");
    let findings = run(&mut engine, std::slice::from_ref(&e), T0);
    let incidents = fold(&findings, &explains, |_| None);
    let firing: Vec<_> = incidents.iter().filter(|i| i.is_firing()).collect();
    assert_eq!(firing.len(), 1, "{firing:#?}");
    assert_eq!(&*firing[0].head.rule_id, "oom-killed");
    assert!(
        firing[0]
            .symptoms
            .iter()
            .any(|s| &*s.rule_id == "crash-loop"),
        "{:#?}",
        firing[0].symptoms
    );
}

#[test]
fn breaker_rule_stays_on_in_the_hysteresis_band() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    let mut at = |kv: f64, t: Ts, e: &mut Engine| {
        e.signals.kv_usage = Some(kv);
        run(&mut engine, std::slice::from_ref(e), t)
    };
    at(0.9, T0, &mut e);
    let findings = at(0.9, T0 + 60.0, &mut e);
    assert_eq!(one(&findings, "kv-breaker").state, FindingState::Firing);
    // Back under 88% but not under 79.2%: still firing.
    for (i, kv) in [0.85, 0.80, 0.792].into_iter().enumerate() {
        let findings = at(kv, T0 + 61.0 + i as f64, &mut e);
        assert_eq!(
            one(&findings, "kv-breaker").state,
            FindingState::Firing,
            "kv {kv}"
        );
    }
    let findings = at(0.7919, T0 + 70.0, &mut e);
    let f = one(&findings, "kv-breaker");
    assert_eq!(f.state, FindingState::Resolved { at: T0 + 70.0 });
    // Evidence shows both the condition and the clearing condition.
    let lines: Vec<String> = f.evidence.iter().map(|e| e.describe()).collect();
    assert_eq!(
        lines,
        ["kv_usage = 79.2% > 88%", "kv_usage = 79.2% < 79.2%"]
    );
    assert_eq!(f.evidence[1].holds, kvtop_core::rules::truth::Truth::True);
}

#[test]
fn pending_falls_back_to_idle_when_the_condition_stops_holding() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.signals.kv_usage = Some(0.95);
    run(&mut engine, std::slice::from_ref(&e), T0);
    e.signals.kv_usage = Some(0.5);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 100.0);
    assert!(of(&findings, "kv-high").is_empty());
    // A new episode starts its own clock.
    e.signals.kv_usage = Some(0.95);
    run(&mut engine, std::slice::from_ref(&e), T0 + 200.0);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 400.0);
    assert_eq!(one(&findings, "kv-high").state, FindingState::Pending);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 500.0);
    assert_eq!(one(&findings, "kv-high").state, FindingState::Firing);
}

#[test]
fn unknown_signals_never_fire_and_resolve_a_firing_rule() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    // No model name: no model group, so only per-engine rules apply.
    let mut e = Engine::new(0, "");
    // Nothing exported: no rule may fire, however long.
    for step in 0..5 {
        let findings = run(
            &mut engine,
            std::slice::from_ref(&e),
            T0 + 3600.0 * f64::from(step),
        );
        assert!(findings.is_empty(), "{findings:#?}");
    }
    // Firing, then the signal disappears from an engine that is up: the condition no longer
    // holds, so the finding resolves (as a Prometheus alert does when its series vanishes).
    e.signals.kv_usage = Some(0.99);
    run(&mut engine, std::slice::from_ref(&e), T0 + 20_000.0);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 20_300.0);
    assert_eq!(one(&findings, "kv-high").state, FindingState::Firing);
    e.signals.kv_usage = None;
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 20_400.0);
    let f = one(&findings, "kv-high");
    assert_eq!(f.state, FindingState::Resolved { at: T0 + 20_400.0 });
    assert_eq!(f.evidence[0].describe(), "kv_usage = – > 90%");
}

#[test]
fn hysteresis_needs_positive_evidence_to_clear() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "");
    e.signals.kv_usage = Some(0.95);
    run(&mut engine, std::slice::from_ref(&e), T0);
    run(&mut engine, std::slice::from_ref(&e), T0 + 60.0);
    // With clear_when, an unknown value is not a recovery: kv-breaker stays firing.
    e.signals.kv_usage = None;
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 61.0);
    assert_eq!(one(&findings, "kv-breaker").state, FindingState::Firing);
}

#[test]
fn stale_engines_freeze_instead_of_flipping() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut a = Engine::new(0, "m");
    a.signals.kv_usage = Some(0.99);
    run(&mut engine, std::slice::from_ref(&a), T0);
    let findings = run(&mut engine, std::slice::from_ref(&a), T0 + 300.0);
    assert_eq!(one(&findings, "kv-high").state, FindingState::Firing);
    let evidence = one(&findings, "kv-high").evidence.clone();

    // Stale with the last values still in Signals: kv-high neither clears nor updates.
    a.status = Some(EngineStatus::Stale);
    a.signals.kv_usage = Some(0.1);
    let findings = run(&mut engine, std::slice::from_ref(&a), T0 + 310.0);
    let f = one(&findings, "kv-high");
    assert_eq!(f.state, FindingState::Firing);
    assert!(f.frozen);
    assert_eq!(f.evidence, evidence);
    // A status rule is not frozen: the engine is not answering.
    assert_eq!(
        one(&findings, "engine-unreachable").state,
        FindingState::Firing
    );

    // A stale engine whose last values look bad does not start anything.
    let mut b = Engine::new(1, "m");
    b.status = Some(EngineStatus::Stale);
    b.signals.kv_usage = Some(0.99);
    b.signals.waiting = Some(500.0);
    let mut fresh = RuleEngine::new(&rules);
    for step in 0..4 {
        let findings = run(
            &mut fresh,
            std::slice::from_ref(&b),
            T0 + 600.0 * f64::from(step),
        );
        assert!(of(&findings, "kv-high").is_empty());
        assert!(of(&findings, "queue-deep").is_empty());
    }

    // Back up with a low value: now it clears.
    a.status = Some(EngineStatus::Up);
    let findings = run(&mut engine, std::slice::from_ref(&a), T0 + 320.0);
    assert_eq!(
        one(&findings, "kv-high").state,
        FindingState::Resolved { at: T0 + 320.0 }
    );
}

#[test]
fn pending_time_does_not_count_while_frozen_but_resumes() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.signals.kv_usage = Some(0.95);
    run(&mut engine, std::slice::from_ref(&e), T0);
    e.status = Some(EngineStatus::Stale);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 400.0);
    let f = one(&findings, "kv-high");
    assert_eq!((f.state, f.frozen), (FindingState::Pending, true));
    // Up again, still above 90%: it has held since T0 as far as kvtop can tell.
    e.status = Some(EngineStatus::Up);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 401.0);
    let f = one(&findings, "kv-high");
    assert_eq!((f.state, f.since), (FindingState::Firing, T0));
}

fn group(kvs: &[Option<f64>]) -> Vec<Engine> {
    kvs.iter()
        .enumerate()
        .map(|(i, kv)| {
            let mut e = Engine::new(i as u32, "meta-llama/Llama-3.1-8B");
            e.signals.kv_usage = *kv;
            e
        })
        .collect()
}

#[test]
fn model_rules_no_routed_engine_needs_known_routing() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut engines = group(&[Some(0.5), Some(0.5)]);
    // Routing unknown (no Kubernetes): silent.
    run(&mut engine, &engines, T0);
    assert!(of(&run(&mut engine, &engines, T0 + 61.0), "no-routed-engine").is_empty());
    engines[0].fact("pod.routed", "false");
    engines[1].fact("pod.routed", "true");
    run(&mut engine, &engines, T0 + 62.0);
    assert!(of(&run(&mut engine, &engines, T0 + 130.0), "no-routed-engine").is_empty());
    engines[1].fact("pod.routed", "false");
    run(&mut engine, &engines, T0 + 131.0);
    let findings = run(&mut engine, &engines, T0 + 200.0);
    let f = one(&findings, "no-routed-engine");
    assert_eq!(f.state, FindingState::Firing);
    assert_eq!(*f.subject, Subject::Model("meta-llama/Llama-3.1-8B".into()));
    assert!(
        of(&findings, "no-engine-up").is_empty(),
        "the engines are up"
    );
}

#[test]
fn model_rules_no_engine_up_and_pdb() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut engines = group(&[Some(0.5), Some(0.5)]);
    engines.push(Engine::new(9, "other"));
    let findings = run(&mut engine, &engines, T0);
    assert!(of(&findings, "no-engine-up").is_empty());
    // "other" has one engine up: fewer than the PDB's minAvailable 2 (pending for 1m).
    let pdb = one(&findings, "pdb-min-available");
    assert_eq!(*pdb.subject, Subject::Model("other".into()));
    assert_eq!(pdb.state, FindingState::Pending);

    for e in engines.iter_mut().take(2) {
        e.status = Some(EngineStatus::Down);
    }
    run(&mut engine, &engines, T0 + 1.0);
    let findings = run(&mut engine, &engines, T0 + 61.0);
    let f = one(&findings, "no-engine-up");
    assert_eq!(f.state, FindingState::Firing);
    assert_eq!(*f.subject, Subject::Model("meta-llama/Llama-3.1-8B".into()));
    assert_eq!(f.subject.label(), "meta-llama/Llama-3.1-8B");
    assert_eq!(f.evidence[0].describe(), "count(up == 1) = 0 == 0");
    assert_eq!(of(&findings, "pdb-min-available").len(), 2);
}

#[test]
fn model_rules_hpa_targets_use_group_averages() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    // avg(0.9, 0.75) = 0.825 > 80%; the third engine's KV is unknown and left out.
    let mut engines = group(&[Some(0.9), Some(0.75), None]);
    for (e, w) in engines.iter_mut().zip([60.0, 50.0, 0.0]) {
        e.signals.waiting = Some(w);
    }
    run(&mut engine, &engines, T0);
    let findings = run(&mut engine, &engines, T0 + 60.0);
    assert_eq!(one(&findings, "kv-hpa-target").state, FindingState::Firing);
    // avg(60, 50, 0) = 36.7: under 50.
    assert!(of(&findings, "queue-hpa-target").is_empty());
    let kv = one(&findings, "kv-hpa-target");
    assert_eq!(kv.evidence[0].describe(), "avg(kv_usage) = 82.5% > 80%");
}

#[test]
fn model_rules_empty_worker_trap() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut engines = group(&[Some(0.95), Some(0.3), Some(0.35)]);
    // One engine takes 4000 of 5000 prompt tokens/s: 0.8 of the model's prefill.
    for (e, tps) in engines.iter_mut().zip([4000.0, 500.0, 500.0]) {
        e.signals.prompt_tps = Some(tps);
    }
    run(&mut engine, &engines, T0);
    let findings = run(&mut engine, &engines, T0 + 60.0);
    let f = one(&findings, "empty-worker-trap");
    assert_eq!(f.state, FindingState::Firing);
    let lines: Vec<String> = f.evidence.iter().map(|e| e.describe()).collect();
    assert_eq!(
        lines,
        [
            "count(up == 1) = 3 >= 3",
            "max(kv_usage) - min(kv_usage) = 65% > 50%",
            "max(prompt_tps) = 4000 tok/s > 0.5 * sum(prompt_tps) (2500 tok/s)",
        ]
    );
    // Load spread evenly: clears.
    for e in &mut engines {
        e.signals.prompt_tps = Some(1000.0);
    }
    let findings = run(&mut engine, &engines, T0 + 61.0);
    assert_eq!(
        one(&findings, "empty-worker-trap").state,
        FindingState::Resolved { at: T0 + 61.0 }
    );
}

#[test]
fn findings_are_ordered_firing_first_then_by_severity_and_age() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut a = Engine::new(0, "m");
    let mut b = Engine::new(1, "m");
    a.signals.kv_usage = Some(0.99);
    b.signals.waiting = Some(80.0);
    run(&mut engine, &[a.clone(), b.clone()], T0);
    let findings = run(&mut engine, &[a.clone(), b.clone()], T0 + 400.0);
    let states: Vec<(u8, Severity)> = findings
        .iter()
        .map(|f| (f.state.rank(), f.severity))
        .collect();
    let mut sorted = states.clone();
    sorted.sort_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
    assert_eq!(states, sorted);
    assert_eq!(findings[0].severity, Severity::Critical);
    let counts = engine.counts();
    // kv-full and kv-critical (critical); kv-high, kv-breaker, queue-deep (warning);
    // kv-elevated, kv-hpa-target, queue-hpa-target (info: avg(waiting) is 80, as only `b`
    // exports it); kv-fragmentation-long is pending.
    assert_eq!((counts.critical, counts.warning, counts.info), (2, 3, 3));
    assert_eq!(counts.pending, 1);
    assert_eq!(
        engine
            .findings_for(TargetId(1), &b.id)
            .map(|f| &*f.rule_id)
            .collect::<Vec<_>>(),
        ["queue-deep"]
    );
}

#[test]
fn state_follows_engines_when_the_fleet_changes() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut a = Engine::new(0, "m");
    a.signals.kv_usage = Some(0.95);
    let b = Engine::new(1, "m");
    run(&mut engine, &[a.clone(), b.clone()], T0);
    // A new engine appears before `a`, and `b` goes away: `a` keeps its pending clock.
    let c = Engine::new(2, "m");
    let findings = run(&mut engine, &[c.clone(), a.clone()], T0 + 300.0);
    let f = one(&findings, "kv-high");
    assert_eq!((f.state, f.since), (FindingState::Firing, T0));
    assert!(f.subject.is_engine(TargetId(0), &a.id));
    assert_eq!(f.subject.label(), "pod-0");
}

#[test]
fn scopes_limit_rules_to_models_and_labels() {
    let user = r#"
[[rule]]
id = "llama-queue"
title = "Llama queue"
severity = "warning"
when = "waiting > 5"
source = "local"
scope = { models = ["meta-llama/*"], labels = { tier = "prod" } }
"#;
    let rules = RuleSet::with_user_text("user.toml", user).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = RuleEngine::new(&rules);
    let mut llama = Engine::new(0, "meta-llama/Llama-3.1-8B");
    let mut qwen = Engine::new(1, "Qwen/Qwen2.5-7B");
    let mut llama_dev = Engine::new(2, "meta-llama/Llama-3.1-70B");
    for e in [&mut llama, &mut qwen, &mut llama_dev] {
        e.signals.waiting = Some(9.0);
        e.labels = vec![("tier".into(), "prod".into())];
    }
    llama_dev.labels = vec![("tier".into(), "dev".into())];
    let findings = run(&mut engine, &[llama, qwen, llama_dev], T0);
    let subjects: Vec<&str> = of(&findings, "llama-queue")
        .iter()
        .map(|f| f.subject.label())
        .collect();
    assert_eq!(subjects, ["pod-0"]);
}

#[test]
fn reloading_rules_keeps_the_state_of_unchanged_ones() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    e.signals.kv_usage = Some(0.96);
    run(&mut engine, std::slice::from_ref(&e), T0);
    let user = "[[rule]]\nid = \"kv-critical\"\nfor = \"10m\"\n";
    let changed = RuleSet::with_user_text("user.toml", user).unwrap_or_else(|e| panic!("{e}"));
    engine.set_rules(&changed);
    let findings = run(&mut engine, std::slice::from_ref(&e), T0 + 300.0);
    // kv-high is unchanged: it kept its clock and fires at 5 minutes.
    assert_eq!(one(&findings, "kv-high").state, FindingState::Firing);
    // kv-critical changed: it restarted its clock and now needs 10 minutes.
    let f = one(&findings, "kv-critical");
    assert_eq!((f.state, f.since), (FindingState::Pending, T0 + 300.0));
}

#[test]
fn health_and_breaker_per_engine() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    let mut step = |kv: f64, status: EngineStatus, t: Ts, e: &mut Engine| {
        e.signals.kv_usage = Some(kv);
        e.status = Some(status);
        run(&mut engine, std::slice::from_ref(e), t);
        engine
            .health_of(TargetId(0), &e.id)
            .unwrap_or_else(|| panic!("health of {t}"))
    };
    let h = step(0.88, EngineStatus::Up, T0, &mut e);
    assert_eq!((h.health, h.breaker), (Health::Healthy, Breaker::Closed));
    let h = step(0.881, EngineStatus::Up, T0 + 1.0, &mut e);
    assert_eq!(
        (h.health, h.breaker),
        (Health::Degraded, Breaker::Open { since: T0 + 1.0 })
    );
    let h = step(0.85, EngineStatus::Up, T0 + 2.0, &mut e);
    assert_eq!(h.health, Health::Healthy);
    assert!(h.breaker.is_open());
    // Not up: down, and the breaker keeps its state whatever the stale value says.
    let h = step(0.1, EngineStatus::Stale, T0 + 3.0, &mut e);
    assert_eq!(h.health, Health::Down);
    assert!(h.breaker.is_open());
    let h = step(0.792, EngineStatus::Up, T0 + 4.0, &mut e);
    assert!(h.breaker.is_open());
    let h = step(0.7919, EngineStatus::Up, T0 + 5.0, &mut e);
    assert_eq!(h.breaker, Breaker::Closed);
    assert_eq!(engine.health().len(), 1);
}

#[test]
fn per_values_are_what_the_rules_declare() {
    let rules = builtin();
    for id in MODEL_RULES {
        assert_eq!(rules.get(id).map(|r| r.per), Some(Per::Model), "{id}");
    }
    for (id, _, _) in ENGINE_CASES {
        assert_eq!(rules.get(id).map(|r| r.per), Some(Per::Engine), "{id}");
    }
}

#[test]
fn a_crash_loop_that_comes_and_goes_is_one_steady_finding() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    let keep = rules.get("crash-loop").expect("crash-loop").keep_firing_for;
    assert!(keep >= 120.0, "held longer than a crash cycle");
    let mut fired_at = None;
    // Back-off and running alternate every 20 s for ten minutes.
    for step in 0..30 {
        let t = T0 + 20.0 * f64::from(step);
        let reason = if step % 2 == 0 {
            "CrashLoopBackOff"
        } else {
            "Running"
        };
        e.pod_status = Some(vec![reason.into()]);
        let findings = run(&mut engine, std::slice::from_ref(&e), t);
        let f = one(&findings, "crash-loop");
        assert_eq!(f.state, FindingState::Firing, "at +{}s", 20 * step);
        fired_at = fired_at.or(f.fired_at);
        assert_eq!(f.fired_at, fired_at, "never fires anew");
    }
    // Running from now on: resolved once it has been clear for keep_firing_for.
    // (the hold-down counts from the first cycle it was clear: the last one above)
    let last = T0 + 20.0 * 29.0;
    e.pod_status = Some(vec!["Running".into()]);
    let findings = run(&mut engine, std::slice::from_ref(&e), last + keep - 1.0);
    assert_eq!(one(&findings, "crash-loop").state, FindingState::Firing);
    let findings = run(&mut engine, std::slice::from_ref(&e), last + keep + 1.0);
    assert!(matches!(
        one(&findings, "crash-loop").state,
        FindingState::Resolved { .. }
    ));
}

#[test]
fn a_stuck_engine_is_critical_within_30s_stuck_in_health_and_gets_no_batch_advice() {
    let rules = builtin();
    let mut engine = RuleEngine::new(&rules);
    let mut e = Engine::new(0, "m");
    // Healthy: tokens come out every scrape.
    e.signals.running = Some(20.0);
    e.signals.waiting = Some(0.0);
    e.signals.kv_usage = Some(0.3);
    e.signals.gen_tps = Some(500.0);
    e.gen_stall_s = Some(0.0);
    run(&mut engine, std::slice::from_ref(&e), T0);
    // The hang: no token from T0 on, requests pile up behind it; the window rate stays > 0.
    let mut fired = None;
    for s in 1..=120 {
        let t = T0 + f64::from(s);
        e.gen_stall_s = Some(f64::from(s));
        e.signals.waiting = Some(f64::from(s) * 10.0);
        let findings = run(&mut engine, std::slice::from_ref(&e), t);
        let stuck = of(&findings, "stuck-requests");
        if fired.is_none() && stuck.iter().any(|f| f.state == FindingState::Firing) {
            fired = Some(f64::from(s));
        }
        for advice in [
            "batch-tokens-low",
            "ttft-high",
            "batch-full-queueing",
            "gpu-idle-with-queue",
        ] {
            let firing = of(&findings, advice)
                .iter()
                .any(|f| f.state == FindingState::Firing);
            assert!(!firing, "{advice} at +{s}s");
        }
    }
    let fired = fired.expect("stuck-requests fired");
    assert!(fired <= 30.0, "fired {fired}s after the hang");
    let health = engine.health_of(TargetId(0), &e.id).expect("health");
    assert_eq!(health.health, Health::Stuck);
    // Tokens again: health comes back as soon as the finding resolves.
    e.gen_stall_s = Some(0.0);
    let rule = rules.get("stuck-requests").expect("rule");
    run(&mut engine, std::slice::from_ref(&e), T0 + 121.0);
    run(
        &mut engine,
        std::slice::from_ref(&e),
        T0 + 122.0 + rule.keep_firing_for,
    );
    let health = engine.health_of(TargetId(0), &e.id).expect("health");
    assert_eq!(health.health, Health::Healthy);
}

/// A PENDING engine (not scraped yet, or a pod still starting or being deleted) is neither up
/// nor down: the built-in rules raise no "Engine down" and no "Engine not answering" for it,
/// and do once it is DOWN.
#[test]
fn a_pending_engine_is_neither_up_nor_down_for_the_rules() {
    use kvtop_core::fleet::{Fleet, FleetSettings, ScrapeError, ScrapeReport, TargetSpec};
    let rules = RuleSet::builtin().expect("built-in rules");
    let mut engine = RuleEngine::new(&rules);
    let mut fleet = Fleet::new(FleetSettings::default());
    let id = fleet.add_target(TargetSpec {
        name: "pod-a".into(),
        url: "http://10.0.0.1:8000/metrics".into(),
    });
    let mut fired = |fleet: &Fleet, now: Ts| -> Vec<String> {
        let inputs: Vec<EngineInput<'_>> = fleet
            .engines()
            .iter()
            .map(EngineInput::from_state)
            .collect();
        engine
            .evaluate(&inputs, now)
            .iter()
            .map(|f| f.rule_id.to_string())
            .collect()
    };
    fleet.tick(1_000.0);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Pending);
    assert_eq!(fired(&fleet, 1_000.0), Vec::<String>::new());
    fleet.ingest(ScrapeReport {
        target: id,
        at: 1_001.0,
        took: 0.01,
        outcome: Err(ScrapeError::Refused),
    });
    assert_eq!(fleet.engines()[0].status, EngineStatus::Down);
    let down = fired(&fleet, 1_001.0);
    assert!(down.iter().any(|id| id == "engine-down"), "{down:?}");
}
