//! PURE. What each diagnostics scenario does to an engine: its traffic and the engine knobs
//! that make one troubleshooting rule fire (see `config/rules.toml`) without tipping the
//! engine into an unrelated critical condition.
//!
//! Scenarios that must hold the KV cache at a given level use a fixed pool of clients
//! (`max_in_flight`) sending long prompts: the cache then holds about
//! `clients × (prompt + output / 2)` tokens, whatever the engine's speed, so the level is set
//! by arithmetic rather than by a race between arrivals and service. Prompt lengths scale with
//! the engine's cache so every model lands at the same level.

use super::fleet::Scenario;
use super::params::{EngineParams, SpecDecode, TrafficProfile};

/// KV blocks the prompt lengths below are written for (an 8B model on one 80 GB GPU).
const REFERENCE_BLOCKS: f64 = 27_000.0;
/// Arrival rate of a client pool: high enough that a finished request is replaced at once.
const POOL_ARRIVALS_PER_S: f64 = 60.0;
/// Prompt (before scaling) and output of the long-context client pools, tokens.
const POOL_PROMPT: f64 = 3_000.0;
const POOL_OUTPUT: f64 = 800.0;

/// Engine parameters for `scenario`, from `base` (healthy traffic on the engine's cache).
/// Scenarios without special parameters return `base` unchanged.
pub fn shape(base: EngineParams, scenario: Scenario) -> EngineParams {
    let scale = f64::from(base.num_gpu_blocks) / REFERENCE_BLOCKS;
    let mut p = base;
    match scenario {
        Scenario::KvThrash => {
            // A fragmented cache: the last 5.5 % cannot be allocated, so usage sits around
            // 93-94.5 %: above the rule's 90 % with room for the dips preemptions cause, below
            // the critical 95 %. The pool wants 15 % more than fits, so requests queue and
            // running ones get preempted.
            p.usable_kv_share = 0.945;
            p.traffic = pool(&p, scale, 0.945 * 1.15);
        }
        Scenario::CircuitOpen => {
            // The pool fills 92 % of the cache, above the breaker's 88 %; no more than 95 % can
            // be allocated, so the level never crosses the critical 95 %.
            p.usable_kv_share = 0.95;
            p.traffic = pool(&p, scale, 0.92);
        }
        Scenario::EmptyWorkerTrap => {
            // The router's favourite: ~70 % of its cache in use while its peers idle.
            p.traffic = pool(&p, scale, 0.70);
        }
        Scenario::QueueBuildup => {
            // A surge on an engine started with --max-num-seqs 128: 128 run, ~75 wait.
            p.max_num_seqs = 128;
            p.traffic = TrafficProfile {
                arrival_rate: POOL_ARRIVALS_PER_S,
                prompt_median: 1_600.0 * scale,
                prompt_sigma: 0.2,
                output_median: 300.0,
                output_sigma: 0.2,
                max_in_flight: 128 + 75,
                ..p.traffic
            };
        }
        Scenario::LowThroughput => {
            // Started with --max-num-seqs 8 --max-num-batched-tokens 512: a dozen requests
            // always wait while the cache is nearly empty.
            p.max_num_seqs = 8;
            p.max_num_batched_tokens = 512;
            p.traffic = TrafficProfile {
                arrival_rate: POOL_ARRIVALS_PER_S,
                max_in_flight: 8 + 12,
                ..p.traffic
            };
        }
        Scenario::StuckRequests => p.stalled = true,
        Scenario::HighCpu => {
            // OMP_NUM_THREADS=32: idle threads spin on more than two cores.
            p.perf.idle_cpu = 2.4;
        }
        Scenario::SpecDecodePoor => {
            // Five draft tokens per step, 12 % accepted; drafting makes each step slower.
            p.spec_decode = Some(SpecDecode {
                num_speculative_tokens: 5,
                acceptance: 0.12,
            });
            p.perf.step_overhead_s *= 1.4;
        }
        Scenario::PrefixMiss => p.traffic.prefix_hit_ratio = 0.06,
        Scenario::Idle => {
            // A dozen requests a minute. No client cancels: with so few requests one abort
            // would be a double-digit error ratio.
            p.traffic = TrafficProfile {
                arrival_rate: 0.2,
                prompt_median: 500.0,
                output_median: 150.0,
                abort_share: 0.0,
                ..p.traffic
            };
        }
        Scenario::OomCrashloop
        | Scenario::Healthy
        | Scenario::KvPressure
        | Scenario::Down
        | Scenario::GpuThermal
        | Scenario::GpuXid(_)
        | Scenario::GpuLowUtil => {}
    }
    p
}

/// A pool of clients holding `kv_share` of the engine's cache with long prompts.
fn pool(p: &EngineParams, scale: f64, kv_share: f64) -> TrafficProfile {
    let prompt = POOL_PROMPT * scale;
    // On average a running request holds its prompt and half its output.
    let held_tokens = prompt + POOL_OUTPUT / 2.0;
    let capacity_tokens = f64::from(p.num_gpu_blocks) * f64::from(p.block_size.max(1));
    let clients = (kv_share * capacity_tokens / held_tokens).round().max(1.0) as usize;
    TrafficProfile {
        arrival_rate: POOL_ARRIVALS_PER_S,
        prompt_median: prompt,
        prompt_sigma: 0.1,
        output_median: POOL_OUTPUT,
        output_sigma: 0.1,
        max_in_flight: clients,
        ..p.traffic
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buckets::SimVersion;
    use crate::fleet::{LLAMA_8B, ModelSpec, QWEN_7B, engine_params, params_sampler};
    use crate::gpu::H100_SXM;
    use crate::histogram::SimHistogram;
    use crate::model::EngineModel;
    use kvtop_core::metrics::{Bucket, histogram_quantile};

    const T0: f64 = 1_800_000_000.0;

    /// What a scraper every 5 s would see over minutes 1 to `minutes` of a scenario.
    #[derive(Debug, Default)]
    struct Seen {
        kv: (f64, f64),
        waiting: (usize, usize),
        running: (usize, usize),
        /// Lowest and highest TTFT p95 and highest p99 over 1-minute windows, seconds.
        ttft_p95: (f64, f64),
        ttft_p99_max: f64,
        /// Lowest and highest generation tokens/s and CPU cores over 1-minute windows.
        gen_tps: (f64, f64),
        cpu_cores: (f64, f64),
        preemptions: u64,
        abort_share: f64,
        spec_acceptance: Option<f64>,
        prefix_hit: f64,
    }

    fn buckets(h: &SimHistogram) -> Vec<(f64, u64)> {
        h.bounds()
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(h.cumulative())
            .collect()
    }

    fn window_quantile(q: f64, now: &[(f64, u64)], then: &[(f64, u64)]) -> Option<f64> {
        let delta: Vec<Bucket> = now
            .iter()
            .zip(then)
            .map(|((le, a), (_, b))| Bucket {
                le: *le,
                count: a.saturating_sub(*b) as f64,
            })
            .collect();
        histogram_quantile(q, &delta)
    }

    fn run(model: &ModelSpec, scenario: Scenario, minutes: u32) -> Seen {
        let p = engine_params(
            model,
            &H100_SXM,
            scenario,
            SimVersion::V1,
            &mut params_sampler(7),
        );
        let mut m = EngineModel::new(p, 7, T0);
        m.advance(60.0);
        let mut history = vec![(buckets(&m.histograms().ttft), *m.counters())];
        let mut seen = Seen {
            kv: (1.0, 0.0),
            waiting: (usize::MAX, 0),
            running: (usize::MAX, 0),
            ttft_p95: (f64::INFINITY, 0.0),
            gen_tps: (f64::INFINITY, 0.0),
            cpu_cores: (f64::INFINITY, 0.0),
            ..Seen::default()
        };
        let start = *m.counters();
        for step in 1..=(minutes - 1) * 12 {
            m.advance(5.0);
            let kv = m.kv_usage();
            seen.kv = (seen.kv.0.min(kv), seen.kv.1.max(kv));
            seen.waiting = (
                seen.waiting.0.min(m.waiting()),
                seen.waiting.1.max(m.waiting()),
            );
            seen.running = (
                seen.running.0.min(m.running()),
                seen.running.1.max(m.running()),
            );
            let now = (buckets(&m.histograms().ttft), *m.counters());
            history.push(now.clone());
            if step >= 12 {
                let then = &history[history.len() - 13];
                if let Some(p95) = window_quantile(0.95, &now.0, &then.0) {
                    seen.ttft_p95 = (seen.ttft_p95.0.min(p95), seen.ttft_p95.1.max(p95));
                }
                if let Some(p99) = window_quantile(0.99, &now.0, &then.0) {
                    seen.ttft_p99_max = seen.ttft_p99_max.max(p99);
                }
                let tps = (now.1.generation_tokens - then.1.generation_tokens) as f64 / 60.0;
                seen.gen_tps = (seen.gen_tps.0.min(tps), seen.gen_tps.1.max(tps));
                let cpu = (now.1.cpu_seconds - then.1.cpu_seconds) / 60.0;
                seen.cpu_cores = (seen.cpu_cores.0.min(cpu), seen.cpu_cores.1.max(cpu));
            }
        }
        let end = *m.counters();
        seen.preemptions = end.preemptions - start.preemptions;
        let finished = end.finished_total() - start.finished_total();
        seen.abort_share =
            (end.finished_abort - start.finished_abort) as f64 / finished.max(1) as f64;
        if end.spec_draft_tokens > 0 {
            seen.spec_acceptance =
                Some(end.spec_accepted_tokens as f64 / end.spec_draft_tokens as f64);
        }
        seen.prefix_hit = (end.prefix_hits - start.prefix_hits) as f64
            / (end.prefix_queries - start.prefix_queries).max(1) as f64;
        seen
    }

    /// Both models (their caches differ by 2.4×), so the scaling is exercised.
    fn both(scenario: Scenario, minutes: u32) -> [Seen; 2] {
        [
            run(&LLAMA_8B, scenario, minutes),
            run(&QWEN_7B, scenario, minutes),
        ]
    }

    // Thresholds below are the rules' own (config/rules.toml), each named where it is used.

    #[test]
    fn healthy_traffic_stays_clear_of_every_threshold() {
        for seen in both(Scenario::Healthy, 6) {
            assert_eq!(seen.waiting.1, 0, "{seen:?}");
            assert!(
                seen.kv.1 < 0.75,
                "ttft-fragmentation needs KV > 75%: {seen:?}"
            );
            assert!(
                seen.cpu_cores.1 < 1.0,
                "cpu-high fires above 1 core: {seen:?}"
            );
            assert!(seen.abort_share < 0.01, "error-ratio-high: 1%: {seen:?}");
            assert!(seen.prefix_hit > 0.8, "prefix-hit-low: 80%: {seen:?}");
            assert!(seen.ttft_p95.1 < 0.1, "ttft-target: 100 ms: {seen:?}");
            assert_eq!(seen.preemptions, 0);
        }
    }

    #[test]
    fn kv_thrash_holds_the_cache_between_90_and_95_percent_with_slow_first_tokens() {
        for seen in both(Scenario::KvThrash, 6) {
            // ttft-kv-thrash: p95 > 500 ms and KV > 90%; kv-critical: KV > 95%.
            assert!(seen.kv.0 > 0.90 && seen.kv.1 <= 0.95, "{seen:?}");
            assert!(seen.ttft_p95.0 > 0.5, "{seen:?}");
            // ttft-p99-critical: p99 > 30 s.
            assert!(seen.ttft_p99_max < 30.0, "{seen:?}");
            assert!(seen.preemptions > 0 && seen.waiting.0 > 0, "{seen:?}");
            assert!(
                seen.abort_share < 0.05,
                "error-ratio-critical: 5%: {seen:?}"
            );
        }
    }

    #[test]
    fn circuit_open_keeps_kv_above_the_breaker_and_below_critical_without_queueing() {
        for seen in both(Scenario::CircuitOpen, 6) {
            // kv-breaker: > 88%; kv-critical: > 95%; ttft-kv-thrash: p95 > 500 ms.
            assert!(seen.kv.0 > 0.88 && seen.kv.1 <= 0.95, "{seen:?}");
            assert!(seen.ttft_p95.1 < 0.5, "{seen:?}");
        }
    }

    #[test]
    fn the_trap_engine_holds_most_of_its_cache_and_the_idle_ones_almost_none() {
        for seen in both(Scenario::EmptyWorkerTrap, 4) {
            // A spread over 50 points against idle peers, below the 75% of ttft-fragmentation.
            assert!(seen.kv.0 > 0.6 && seen.kv.1 < 0.75, "{seen:?}");
            assert_eq!(seen.waiting.1, 0, "{seen:?}");
        }
        for seen in both(Scenario::Idle, 4) {
            assert!(seen.kv.1 < 0.05, "{seen:?}");
            assert_eq!(seen.abort_share, 0.0);
        }
    }

    #[test]
    fn queue_buildup_keeps_over_50_waiting_with_the_cache_above_40_percent() {
        for seen in both(Scenario::QueueBuildup, 6) {
            // queue-deep: waiting > 50; batch-tokens-low: KV < 40% with a queue.
            assert!(seen.waiting.0 > 50, "{seen:?}");
            assert!(seen.kv.0 >= 0.40, "{seen:?}");
            // running-high: > 200; ttft-p99-critical: 30 s.
            assert!(seen.running.1 <= 128, "{seen:?}");
            assert!(seen.ttft_p99_max < 30.0, "{seen:?}");
        }
    }

    #[test]
    fn low_throughput_queues_while_the_cache_is_nearly_empty() {
        for seen in both(Scenario::LowThroughput, 4) {
            // batch-tokens-low: KV < 40% and waiting > 0.
            assert!(seen.waiting.0 > 0 && seen.kv.1 < 0.4, "{seen:?}");
            assert!(seen.ttft_p99_max < 30.0, "{seen:?}");
        }
    }

    #[test]
    fn a_stuck_engine_keeps_requests_running_and_produces_no_token() {
        for seen in both(Scenario::StuckRequests, 4) {
            // stuck-requests: running > 0 and gen_tps == 0.
            assert!(seen.running.0 > 0, "{seen:?}");
            assert_eq!(seen.gen_tps.1, 0.0, "{seen:?}");
            assert!(seen.waiting.1 > seen.waiting.0, "the queue grows: {seen:?}");
        }
    }

    #[test]
    fn cpu_spec_decoding_and_prefix_scenarios_move_only_their_signal() {
        for seen in both(Scenario::HighCpu, 3) {
            assert!(seen.cpu_cores.0 > 1.0, "{seen:?}");
            assert_eq!(seen.waiting.1, 0, "{seen:?}");
        }
        for seen in both(Scenario::SpecDecodePoor, 3) {
            // spec-acceptance-low: < 20%; the scenario promises < 15%.
            let acceptance = seen.spec_acceptance.unwrap_or(1.0);
            assert!(acceptance < 0.15, "{seen:?}");
            assert!(seen.cpu_cores.1 < 1.0 && seen.waiting.1 == 0, "{seen:?}");
        }
        for seen in both(Scenario::PrefixMiss, 3) {
            // prefix-hit-very-low: < 30%.
            assert!(seen.prefix_hit < 0.3, "{seen:?}");
            assert!(seen.ttft_p99_max < 10.0 && seen.waiting.1 == 0, "{seen:?}");
        }
        assert_eq!(both(Scenario::Healthy, 2)[0].spec_acceptance, None);
    }
}
