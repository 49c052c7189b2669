//! `kvtop rules list --explain`: the signal catalogue and, for a live fleet, the signals each
//! rule reads that engines do not provide.

use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{EngineStatus, Signals, TargetId};
use kvtop_core::rules::explain::{MissingSignal, coverage, signal_catalogue};
use kvtop_core::rules::file::RuleSet;
use kvtop_core::rules::input::EngineInput;
use kvtop_core::rules::signals::Origin;
use kvtop_core::rules::units::Unit;

#[test]
fn catalogue_lists_named_signals_namespaces_and_text_sources() {
    let catalogue = signal_catalogue();
    let find = |name: &str| {
        catalogue
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
    };
    assert_eq!(find("kv_usage").unit, Some(Unit::Ratio));
    assert_eq!(find("ttft_p95").unit, Some(Unit::Seconds));
    assert_eq!(find("gpu_util").origin, Origin::Gpu);
    assert_eq!(find("cache.enable_prefix_caching").unit, Some(Unit::Flag));
    assert_eq!(find("config.*").origin, Origin::Pod);
    assert!(find("env.*").description.contains("OMP_NUM_THREADS"));
    assert_eq!(find("log ~ \"text\"").origin, Origin::Text);
    for required in [
        "running",
        "waiting",
        "ttft_p50",
        "ttft_p99",
        "itl_p50",
        "itl_p95",
        "itl_p99",
        "e2e_p95",
        "e2e_p99",
        "queue_p95",
        "gen_tps",
        "prompt_tps",
        "requests_per_s",
        "preemptions_per_s",
        "prefix_hit",
        "spec_acceptance",
        "cpu_cores",
        "error_ratio",
        "kv_capacity_tokens",
        "cache.gpu_memory_utilization",
        "gpu_mem",
        "gpu_temp",
        "gpu_power",
        "xid",
        "up",
        "down",
        "restarted",
    ] {
        find(required);
    }
    assert!(catalogue.iter().all(|s| !s.description.is_empty()));
}

#[test]
fn coverage_names_signals_engines_do_not_export() {
    let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<EngineId> = (0..2)
        .map(|i| EngineId {
            model: "m".into(),
            engine: i.to_string(),
        })
        .collect();
    // e0 exports KV usage and TTFT; e1 only KV usage. Neither has GPU data or logs.
    let signals = [
        Signals {
            kv_usage: Some(0.5),
            ttft_p95: Some(0.1),
            ..Signals::default()
        },
        Signals {
            kv_usage: Some(0.5),
            ..Signals::default()
        },
    ];
    let names = ["e0", "e1"];
    let inputs: Vec<EngineInput<'_>> = (0..2)
        .map(|i| EngineInput {
            target: TargetId(i as u32),
            id: &ids[i],
            name: names[i],
            status: EngineStatus::Up,
            signals: &signals[i],
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
        })
        .collect();
    let report = coverage(&rules, &inputs);
    let of = |id: &str| {
        report
            .iter()
            .find(|c| c.rule_id == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    assert_eq!(of("kv-high").missing, []);
    assert_eq!(of("kv-high").engines, 2);
    assert_eq!(
        of("ttft-kv-thrash").missing,
        [MissingSignal {
            signal: "ttft_p95".into(),
            engines: 1,
            example: "e1".into(),
        }]
    );
    let gpu = &of("gpu-underused").missing;
    assert_eq!((gpu[0].signal.as_str(), gpu[0].engines), ("gpu_util", 2));
    let oom = &of("cuda-oom").missing;
    let missing: Vec<&str> = oom.iter().map(|m| m.signal.as_str()).collect();
    assert_eq!(missing, ["log", "event"]);
    // Status signals are always there.
    assert_eq!(of("engine-unreachable").missing, []);
}
