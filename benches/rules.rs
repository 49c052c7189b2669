//! One rules cycle over a 1,000-engine fleet: every built-in rule (per-engine, per-model and
//! text rules) evaluated for every engine, including building the per-engine inputs.
//!
//! The fleet: 1,000 engines over 10 models, every signal exported, cache config and pod facts
//! present. Values vary per engine (short requests: the T3 rule "P99 request over 200ms" would
//! otherwise fire on every engine). Variants: a quiet fleet (no finding); an incident, where one engine in
//! ten is unhealthy (KV at 95%, a deep queue, slow TTFT) so findings are pending and firing in
//! steady state; and the incident with 20 recent log lines and 5 events per engine (what the
//! Kubernetes work will supply), none of them matching, one engine in ten getting a new line
//! each cycle. The engine is warmed up for a few
//! cycles first; each timed iteration is the next cycle, one second later.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use kvtop_core::engine::{CacheConfig, EngineId, EngineSample};
use kvtop_core::fleet::{EngineStatus, Signals, TargetId, Ts};
use kvtop_core::rules::{EngineInput, GpuSignals, RuleEngine, RuleSet};

const ENGINES: usize = 1000;
const MODELS: usize = 10;
const START: Ts = 1.8e9;
/// Cycles timed for the CPU-time figure.
const CPU_CYCLES: u32 = 200;

/// CPU time consumed by this thread, seconds.
fn thread_cpu_secs() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

struct Engine {
    id: EngineId,
    name: String,
    signals: Signals,
    sample: EngineSample,
    gpu: GpuSignals,
    facts: Vec<(String, String)>,
    logs: Vec<String>,
    events: Vec<String>,
}

fn fleet(with_text: bool, with_sick: bool) -> Vec<Engine> {
    (0..ENGINES)
        .map(|i| {
            let x = (i % 97) as f64 / 97.0;
            let sick = with_sick && i % 10 == 0;
            let signals = Signals {
                kv_usage: Some(if sick { 0.95 } else { 0.3 + 0.4 * x }),
                running: Some(20.0 + 30.0 * x),
                waiting: Some(if sick { 60.0 } else { 0.0 }),
                swapped: None,
                preemptions_per_s: Some(0.0),
                gen_tps: Some(800.0 + 400.0 * x),
                prompt_tps: Some(3000.0 + 1000.0 * x),
                requests_per_s: Some(5.0 + x),
                prefix_hit: Some(0.85),
                ttft_p50: Some(0.04),
                ttft_p95: Some(if sick { 0.7 } else { 0.08 }),
                ttft_p99: Some(0.15),
                itl_p50: Some(0.02),
                itl_p95: Some(0.03),
                itl_p99: Some(0.05),
                e2e_p95: Some(0.12),
                e2e_p99: Some(0.18),
                queue_p95: Some(0.01),
                spec_acceptance: None,
                cpu_cores: Some(0.8),
                error_ratio: Some(0.0),
                kv_capacity_tokens: Some(120_000.0),
                ..Signals::default()
            };
            let sample = EngineSample {
                cache_config: Some(CacheConfig {
                    block_size: Some(16),
                    num_gpu_blocks: Some(7500),
                    gpu_memory_utilization: Some(0.9),
                    enable_prefix_caching: Some(true),
                    ..CacheConfig::default()
                }),
                ..EngineSample::default()
            };
            let logs = if with_text {
                (0..20)
                    .map(|n| {
                        format!(
                            "INFO 11-02 03:{:02}:{:02} [loggers.py:123] Engine 000: Avg prompt throughput: 3021.4 tokens/s, Running: 31 reqs, Waiting: 0 reqs",
                            n, i % 60
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let events = if with_text {
                (0..5)
                    .map(|n| format!("Pulled container image \"vllm/vllm-openai:v0.11.0\" ({n})"))
                    .collect()
            } else {
                Vec::new()
            };
            Engine {
                id: EngineId {
                    model: format!("org/model-{}", i % MODELS),
                    engine: "0".into(),
                },
                name: format!("vllm-{i}"),
                signals,
                sample,
                gpu: GpuSignals {
                    util: Some(0.7),
                    mem: Some(0.9),
                    temp_c: Some(65.0),
                    power_w: Some(350.0),
                    xid: Some(0.0),
                },
                facts: vec![
                    ("env.OMP_NUM_THREADS".into(), "8".into()),
                    ("config.max_num_seqs".into(), "256".into()),
                    ("config.max_num_batched_tokens".into(), "8192".into()),
                    ("config.enable_chunked_prefill".into(), "true".into()),
                ],
                logs,
                events,
            }
        })
        .collect()
}

/// One engine in ten gets a new log line per cycle (the oldest one leaves the window).
fn new_lines(engines: &mut [Engine], now: Ts) {
    let turn = (now as usize) % 10;
    for engine in engines.iter_mut().skip(turn).step_by(10) {
        if engine.logs.is_empty() {
            continue;
        }
        engine.logs.remove(0);
        engine.logs.push(format!(
            "INFO [loggers.py:123] Engine 000: Avg generation throughput: {now:.0} tokens/s"
        ));
    }
}

fn inputs<'a>(fleet: &'a [Engine], with_text: bool) -> Vec<EngineInput<'a>> {
    fleet
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let input = EngineInput {
                target: TargetId(i as u32),
                id: &e.id,
                name: &e.name,
                status: EngineStatus::Up,
                signals: &e.signals,
                sample: Some(&e.sample),
                restarted_at: None,
                gpu: Some(&e.gpu),
                facts: &e.facts,
                labels: &[],
                logs: None,
                events: None,
                pod_status: None,
                gen_stall_s: None,
                stalled: false,
                model: None,
            };
            if with_text {
                input.with_logs(&e.logs).with_events(&e.events)
            } else {
                input
            }
        })
        .collect()
}

fn cycle(c: &mut Criterion) {
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    for (label, with_text, with_sick) in [
        ("quiet, metrics", false, false),
        ("incident, metrics", false, true),
        ("incident, metrics+logs", true, true),
    ] {
        let mut engines = fleet(with_text, with_sick);
        let mut engine = RuleEngine::new(&rules);
        let mut now = START;
        for _ in 0..5 {
            engine.evaluate(&inputs(&engines, with_text), now);
            now += 1.0;
        }
        let findings = engine.evaluate(&inputs(&engines, with_text), now);
        let mut by_rule: Vec<(&str, usize)> = Vec::new();
        for finding in findings {
            match by_rule.iter_mut().find(|(id, _)| *id == &*finding.rule_id) {
                Some((_, n)) => *n += 1,
                None => by_rule.push((&finding.rule_id, 1)),
            }
        }
        eprintln!(
            "rules cycle ({label}): {} rules, {ENGINES} engines, {} findings in steady state: {by_rule:?}",
            rules.rules().len(),
            findings.len()
        );
        // The machine these run on is shared: also report thread CPU time per cycle, which
        // other processes' load inflates far less than wall time.
        let cpu_start = thread_cpu_secs();
        for _ in 0..CPU_CYCLES {
            now += 1.0;
            new_lines(&mut engines, now);
            black_box(engine.evaluate(&inputs(&engines, with_text), now).len());
        }
        if let (Some(start), Some(end)) = (cpu_start, thread_cpu_secs()) {
            eprintln!(
                "rules cycle ({label}): {:.3} ms thread CPU time per cycle over {CPU_CYCLES} cycles",
                (end - start) * 1000.0 / f64::from(CPU_CYCLES)
            );
        }
        c.bench_function(&format!("rules cycle, 1000 engines, {label}"), |b| {
            b.iter(|| {
                now += 1.0;
                new_lines(&mut engines, now);
                let inputs = inputs(&engines, with_text);
                black_box(engine.evaluate(&inputs, now).len())
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = cycle
}
criterion_main!(benches);
