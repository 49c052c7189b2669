//! Health classification and circuit-breaker edges, and the routing explainer's scores for a
//! hand-computed group.

use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::health::{
    BREAKER_OPEN_ABOVE, Breaker, EngineHealth, Health, breaker_close_below, classify,
};
use kvtop_core::rules::input::EngineInput;
use kvtop_core::rules::routing::{PROMPT_SIZES, Skip, explain_routing, seed_score};

#[test]
fn breaker_opens_above_88_and_closes_below_79_2() {
    assert_eq!(BREAKER_OPEN_ABOVE, 0.88);
    assert_eq!(breaker_close_below(), 0.792);
    let up = EngineStatus::Up;
    let closed = Breaker::Closed;
    assert_eq!(closed.step(up, Some(0.88), 1.0), Breaker::Closed);
    let open = closed.step(up, Some(0.8801), 2.0);
    assert_eq!(open, Breaker::Open { since: 2.0 });
    // In the band it stays open, and keeps its opening time.
    assert_eq!(open.step(up, Some(0.85), 3.0), open);
    assert_eq!(open.step(up, Some(0.792), 4.0), open);
    assert_eq!(open.step(up, Some(0.9), 5.0), open);
    assert_eq!(open.step(up, Some(0.7919), 6.0), Breaker::Closed);
    // Unknown usage or an engine that is not up keeps the state.
    assert_eq!(open.step(up, None, 7.0), open);
    assert_eq!(open.step(up, Some(f64::NAN), 7.0), open);
    assert_eq!(open.step(EngineStatus::Stale, Some(0.1), 8.0), open);
    assert_eq!(closed.step(EngineStatus::Down, Some(0.99), 9.0), closed);
}

#[test]
fn health_is_down_degraded_or_healthy() {
    assert_eq!(classify(EngineStatus::Up, Some(0.88)), Health::Healthy);
    assert_eq!(classify(EngineStatus::Up, Some(0.8801)), Health::Degraded);
    assert_eq!(classify(EngineStatus::Up, None), Health::Healthy);
    assert_eq!(classify(EngineStatus::Stale, Some(0.2)), Health::Down);
    assert_eq!(classify(EngineStatus::Down, Some(0.2)), Health::Down);
    let h = EngineHealth::default().step(EngineStatus::Up, Some(0.95), 1.0);
    assert_eq!(h.health, Health::Degraded);
    assert!(h.breaker.is_open());
    let h = h.step(EngineStatus::Up, Some(0.80), 2.0);
    assert_eq!(h.health, Health::Healthy);
    assert!(h.breaker.is_open());
}

struct Engine {
    id: EngineId,
    name: String,
    status: EngineStatus,
    signals: Signals,
}

fn engine(n: u32, kv: f64, capacity: f64, waiting: f64, prefix: Option<f64>) -> Engine {
    Engine {
        id: EngineId {
            model: "llama".into(),
            engine: n.to_string(),
        },
        name: format!("e{n}"),
        status: EngineStatus::Up,
        signals: Signals {
            kv_usage: Some(kv),
            kv_capacity_tokens: Some(capacity),
            waiting: Some(waiting),
            prefix_hit: prefix,
            ..Signals::default()
        },
    }
}

fn input(e: &Engine) -> EngineInput<'_> {
    EngineInput {
        target: TargetId(e.id.engine.parse().unwrap_or(0)),
        id: &e.id,
        name: &e.name,
        status: e.status,
        signals: &e.signals,
        sample: None,
        restarted_at: None,
        gpu: None,
        facts: &[],
        labels: &[],
        logs: None,
        events: None,
        pod_status: None,
        gen_stall_s: None,
        stalled: false,
        model: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn routing_scores_for_a_three_engine_group() {
    // e1: KV 20% of 10,000 tokens, 4 waiting, prefix hits 50%.
    // e2: KV 50% of 20,000 tokens, 0 waiting, prefix hits 90%.
    // e3: KV 90% of 10,000 tokens, 10 waiting, prefix hits 10%.
    // e4: down.
    let mut down = engine(4, 0.0, 10_000.0, 0.0, Some(1.0));
    down.status = EngineStatus::Down;
    let engines = [
        engine(1, 0.2, 10_000.0, 4.0, Some(0.5)),
        engine(2, 0.5, 20_000.0, 0.0, Some(0.9)),
        engine(3, 0.9, 10_000.0, 10.0, Some(0.1)),
        down,
    ];
    let inputs: Vec<EngineInput<'_>> = engines.iter().map(input).collect();
    let groups = explain_routing(&inputs, &PROMPT_SIZES);
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(g.model, "llama");
    assert_eq!(g.prompts, [512, 2048, 8192]);

    // Seed router. Free tokens: e1 8,000, e2 10,000, e3 1,000.
    // P = 512 (w = 0.8): e1 0.8·0.8 + 0.8·0.2 = 0.8; e2 0.5; e3 0.1 → e1.
    // P = 2048 (w = 0.8): e3 has 1,000 free < 2,048 → skipped; e1 0.8, e2 0.5 → e1.
    // P = 8192 (w = 0.95): e1 has 8,000 < 8,192 → skipped; e2 0.5·0.95 + 0.5·0.05 = 0.5 → e2.
    let seed = |e: usize, p: usize| g.engines[e].seed[p];
    let score = |e: usize, p: usize| seed(e, p).map(|s| s.score).unwrap_or(f64::NAN);
    assert!(close(score(0, 0), 0.8));
    assert!(close(score(1, 0), 0.5));
    assert!(close(score(2, 0), 0.1));
    assert!(
        matches!(seed(2, 1), Err(Skip::BudgetTooSmall { available_tokens }) if close(available_tokens, 1000.0))
    );
    assert!(close(score(0, 1), 0.8));
    assert!(
        matches!(seed(0, 2), Err(Skip::BudgetTooSmall { available_tokens }) if close(available_tokens, 8000.0))
    );
    assert!(close(score(1, 2), 0.5));
    assert_eq!(seed(1, 2).map(|s| s.weight), Ok(0.95));
    assert_eq!(seed(1, 1).map(|s| s.weight), Ok(0.8));
    assert_eq!(seed(3, 0), Err(Skip::Unhealthy));
    assert_eq!(g.seed_picks, [Some(0), Some(0), Some(1)]);

    // Inference Extension: queues 4, 0, 10 → min 0, max 10 → 0.6, 1.0, 0.0.
    // e1 2·0.6 + 2·0.8 + 3·0.5 = 4.3; e2 2·1 + 2·0.5 + 3·0.9 = 5.7; e3 0 + 0.2 + 0.3 = 0.5.
    assert!(g.gie_uses_prefix);
    let gie = |e: usize| g.engines[e].gie.unwrap_or_else(|s| panic!("e{e}: {s:?}"));
    assert!(close(gie(0).queue, 0.6) && close(gie(0).kv, 0.8));
    assert!(close(gie(0).total, 4.3));
    assert!(close(gie(1).total, 5.7));
    assert!(close(gie(2).total, 0.5));
    assert_eq!(g.engines[3].gie, Err(Skip::Unhealthy));
    assert_eq!(g.gie_pick, Some(1));
    assert_eq!(g.engines[3].health, Health::Down);
    assert_eq!(g.engines[2].health, Health::Degraded);
}

#[test]
fn inference_extension_without_prefix_data_or_queue_spread() {
    // Equal queues: every queue score is 1. One engine lacks a prefix ratio: no prefix term.
    let engines = [
        engine(1, 0.3, 1000.0, 2.0, Some(0.9)),
        engine(2, 0.6, 1000.0, 2.0, None),
    ];
    let inputs: Vec<EngineInput<'_>> = engines.iter().map(input).collect();
    let g = &explain_routing(&inputs, &[100])[0];
    assert!(!g.gie_uses_prefix);
    let totals: Vec<f64> = g
        .engines
        .iter()
        .map(|e| e.gie.map(|s| s.total).unwrap_or(f64::NAN))
        .collect();
    // 2·1 + 2·0.7 = 3.4 and 2·1 + 2·0.4 = 2.8.
    assert!(close(totals[0], 3.4) && close(totals[1], 2.8), "{totals:?}");
    assert_eq!(g.gie_pick, Some(0));
}

#[test]
fn engines_out_of_routing_are_never_picked() {
    let engines = [
        engine(1, 0.1, 10_000.0, 0.0, None),
        engine(2, 0.5, 10_000.0, 4.0, None),
    ];
    let unrouted = [("pod.routed".to_owned(), "false".to_owned())];
    let routed = [("pod.routed".to_owned(), "true".to_owned())];
    let inputs = [
        EngineInput {
            facts: &unrouted,
            ..input(&engines[0])
        },
        EngineInput {
            facts: &routed,
            ..input(&engines[1])
        },
    ];
    let g = &explain_routing(&inputs, &[100])[0];
    assert_eq!(g.engines[0].seed[0], Err(Skip::Unrouted));
    assert_eq!(g.engines[0].gie, Err(Skip::Unrouted));
    assert_eq!(g.seed_picks, [Some(1)]);
    assert_eq!(g.gie_pick, Some(1));
}

#[test]
fn seed_router_needs_kv_usage_and_capacity() {
    let mut e = engine(1, 0.5, 1000.0, 0.0, None);
    e.signals.kv_capacity_tokens = None;
    assert_eq!(seed_score(&input(&e), 100), Err(Skip::UnknownCapacity));
    e.signals.kv_usage = None;
    assert_eq!(seed_score(&input(&e), 100), Err(Skip::UnknownKv));
    // Engines without a model name form no group.
    let mut anonymous = engine(2, 0.1, 1000.0, 0.0, None);
    anonymous.id.model.clear();
    assert!(explain_routing(&[input(&anonymous)], &PROMPT_SIZES).is_empty());
}
