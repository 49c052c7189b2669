//! A rules cycle over a healthy fleet allocates nothing: expressions are compiled once, state
//! lives in vectors sized when the fleet changes, and evidence is only built for findings.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic in a test is its failure

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use kvtop_core::engine::{CacheConfig, EngineId, EngineSample};
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::{EngineInput, GpuSignals, RuleEngine, RuleSet};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: defers to the system allocator; only counts calls made on a counting thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn healthy() -> Signals {
    Signals {
        kv_usage: Some(0.5),
        running: Some(20.0),
        waiting: Some(0.0),
        preemptions_per_s: Some(0.0),
        gen_tps: Some(900.0),
        prompt_tps: Some(3000.0),
        requests_per_s: Some(5.0),
        prefix_hit: Some(0.9),
        ttft_p50: Some(0.03),
        ttft_p95: Some(0.06),
        ttft_p99: Some(0.09),
        itl_p99: Some(0.04),
        e2e_p95: Some(0.1),
        e2e_p99: Some(0.15),
        cpu_cores: Some(0.7),
        error_ratio: Some(0.0),
        kv_capacity_tokens: Some(100_000.0),
        ..Signals::default()
    }
}

#[test]
fn a_quiet_cycle_allocates_nothing() {
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<EngineId> = (0..40)
        .map(|i| EngineId {
            model: format!("model-{}", i % 4),
            engine: "0".into(),
        })
        .collect();
    let names: Vec<String> = (0..40).map(|i| format!("e{i}")).collect();
    let signals = healthy();
    let sample = EngineSample {
        cache_config: Some(CacheConfig {
            gpu_memory_utilization: Some(0.9),
            enable_prefix_caching: Some(true),
            ..CacheConfig::default()
        }),
        ..EngineSample::default()
    };
    let gpu = GpuSignals {
        util: Some(0.7),
        ..GpuSignals::default()
    };
    let facts = vec![("env.OMP_NUM_THREADS".to_owned(), "8".to_owned())];
    let logs = vec!["INFO all good".to_owned(); 10];
    let inputs: Vec<EngineInput<'_>> = ids
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, (id, name))| {
            EngineInput {
                target: TargetId(i as u32),
                id,
                name,
                status: EngineStatus::Up,
                signals: &signals,
                sample: Some(&sample),
                restarted_at: None,
                gpu: Some(&gpu),
                facts: &facts,
                labels: &[],
                logs: None,
                events: None,
                pod_status: None,
                gen_stall_s: None,
                stalled: false,
                model: None,
            }
            .with_logs(&logs)
        })
        .collect();
    let mut engine = RuleEngine::new(&rules);
    let start = 1.0e9;
    assert!(engine.evaluate(&inputs, start).is_empty());
    assert!(engine.evaluate(&inputs, start + 1.0).is_empty());

    COUNTING.with(|c| c.set(true));
    let quiet = engine.evaluate(&inputs, start + 2.0).is_empty();
    COUNTING.with(|c| c.set(false));
    assert!(quiet);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0);
}
