//! The rule expression language on arbitrary text: lexer, parser and type/unit checks at both
//! levels, then evaluation and evidence against a small fixed fleet (one engine with most
//! signals known, odd values included, one with nothing known; logs, events, pod state, facts
//! and cache config present on the first only).
//!
//! Besides "never panics", it checks that an error's column lies inside the text (or just
//! past it) and that `not (E)` evaluates to the three-valued negation of `E`.

#![no_main]

use kvtop_core::engine::{CacheConfig, EngineId, EngineSample};
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::expr::{Expr, Level};
use kvtop_core::rules::input::{EngineInput, GpuSignals};
use kvtop_core::rules::truth::Group;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// The fixed fleet every parsed expression is evaluated against.
struct Fixture {
    ids: [EngineId; 2],
    known: Signals,
    unknown: Signals,
    sample: EngineSample,
    gpu: GpuSignals,
    facts: Vec<(String, String)>,
    labels: Vec<(String, String)>,
    logs: Vec<String>,
    events: Vec<String>,
    pod_status: Vec<String>,
}

impl Fixture {
    fn new() -> Self {
        let id = |engine: &str| EngineId {
            model: "m".into(),
            engine: engine.into(),
        };
        let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
            items
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let lines =
            |items: &[&str]| -> Vec<String> { items.iter().map(|s| s.to_string()).collect() };
        Fixture {
            ids: [id("0"), id("1")],
            known: Signals {
                kv_usage: Some(0.93),
                running: Some(0.0),
                waiting: Some(51.0),
                preemptions_per_s: Some(-0.0),
                gen_tps: Some(1e300),
                prompt_tps: Some(f64::MIN_POSITIVE),
                ttft_p95: Some(0.612),
                ttft_p99: Some(f64::INFINITY),
                itl_p95: Some(0.04),
                queue_p95: Some(-1.0),
                error_ratio: Some(0.5),
                kv_capacity_tokens: Some(65536.0),
                xid: Some(79.0),
                ..Signals::default()
            },
            unknown: Signals::default(),
            sample: EngineSample {
                cache_config: Some(CacheConfig {
                    block_size: Some(16),
                    num_gpu_blocks: Some(4096),
                    enable_prefix_caching: Some(true),
                    fields: pairs(&[
                        ("block_size", "16"),
                        ("swap_space", "4"),
                        ("cache_dtype", "auto"),
                    ]),
                    ..CacheConfig::default()
                }),
                ..EngineSample::default()
            },
            gpu: GpuSignals {
                util: Some(1.0),
                temp_c: Some(83.0),
                ..GpuSignals::default()
            },
            facts: pairs(&[
                ("config.max_num_batched_tokens", "16384"),
                ("config.enable_chunked_prefill", "true"),
                ("env.OMP_NUM_THREADS", "not a number"),
                ("pod.restarts", "3"),
            ]),
            labels: pairs(&[("app", "vllm")]),
            logs: lines(&[
                "INFO ok",
                "torch.OutOfMemoryError: CUDA out of memory. Tried",
                "ÉTAT ✓",
            ]),
            events: lines(&["Back-off restarting failed container"]),
            pod_status: lines(&["OOMKilled"]),
        }
    }

    fn inputs(&self) -> [EngineInput<'_>; 2] {
        let [first, second] = &self.ids;
        [
            EngineInput {
                target: TargetId(0),
                id: first,
                name: "e0",
                status: EngineStatus::Up,
                signals: &self.known,
                sample: Some(&self.sample),
                restarted_at: Some(1.0e9),
                gpu: Some(&self.gpu),
                facts: &self.facts,
                labels: &self.labels,
                logs: Some(&self.logs),
                events: Some(&self.events),
                pod_status: Some(&self.pod_status),
            },
            EngineInput {
                target: TargetId(1),
                id: second,
                name: "e1",
                status: EngineStatus::Stale,
                signals: &self.unknown,
                sample: None,
                restarted_at: None,
                gpu: None,
                facts: &[],
                labels: &[],
                logs: None,
                events: None,
                pod_status: None,
            },
        ]
    }
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

/// Group memberships: both engines, one, none, and an index past the end.
const MEMBERS: [&[u32]; 4] = [&[0, 1], &[1], &[], &[0, 7]];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fixture = FIXTURE.get_or_init(Fixture::new);
    let inputs = fixture.inputs();
    for level in [Level::Engine, Level::Group] {
        let expr = match Expr::parse(text, level) {
            Ok(expr) => expr,
            Err(e) => {
                let chars = text.chars().count();
                assert!(e.column >= 1 && e.column <= chars + 1, "{e} in {text:?}");
                let _ = e.to_string();
                continue;
            }
        };
        assert_eq!(expr.text(), text);
        for read in expr.reads() {
            let _ = (read.name(), read.origin(), read.unit());
            let _ = inputs.iter().map(|i| read.available(i)).count();
        }
        let negated = Expr::parse(&format!("not ({text})"), level).ok();
        match level {
            Level::Engine => {
                for input in &inputs {
                    let truth = expr.eval_engine(input);
                    if let Some(negated) = &negated {
                        assert_eq!(negated.eval_engine(input), truth.not(), "{text:?}");
                    }
                    for evidence in expr.evidence_engine(input) {
                        let _ = evidence.describe();
                    }
                }
            }
            Level::Group => {
                for members in MEMBERS {
                    let group = Group {
                        inputs: &inputs,
                        members,
                    };
                    let truth = expr.eval_group(group);
                    if let Some(negated) = &negated {
                        assert_eq!(negated.eval_group(group), truth.not(), "{text:?}");
                    }
                    for evidence in expr.evidence_group(group) {
                        let _ = evidence.describe();
                    }
                }
            }
        }
    }
});
