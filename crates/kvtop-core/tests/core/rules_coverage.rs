//! Every row of the troubleshooting tables T1–T4, their pitfalls and monitoring lists, and the
//! published alert thresholds is encoded by a built-in rule (`source`) or listed as
//! `[[unobservable]]` with a reason.
//!
//! The ids are written here from the reference document (troubleshooting.md and the alert
//! section of metrics.md), not from the rules file. Numbered lists without ids in the document
//! are numbered in the order it gives them: T1.Mn / T2.Mn / T3.Mn the monitoring items, T2.Pn
//! the T2 pitfalls, T2.B the T2 circuit breaker, T4.Dn the dashboard panels, T4.Hn the HPA
//! targets, T4.K1 the PodDisruptionBudget, T4.K2 the probes; A.vllm.n, A.llmd.n and A.dash.n
//! the published alert rules and dashboard thresholds.

use kvtop_core::rules::file::RuleSet;

const ROWS: &[&str] = &[
    // T1 table and pitfalls.
    "T1.1",
    "T1.2",
    "T1.3",
    "T1.4",
    "T1.5",
    "T1.P1",
    "T1.P2",
    "T1.P3",
    "T1.P4",
    // T1 monitoring: KV > 0.9 for 5 min; prefix hits > 80%; TTFT P50/P95/P99 and TPOT;
    // P95 TTFT < 100 ms; killed backend seen within 2 s.
    "T1.M1",
    "T1.M2",
    "T1.M3",
    "T1.M4",
    "T1.M5",
    // T2 table, pitfalls (OOM, NCCL system error, vocab sizes, silent TTFT climb, device
    // driver), circuit breaker.
    "T2.1",
    "T2.2",
    "T2.3",
    "T2.4",
    "T2.5",
    "T2.P1",
    "T2.P2",
    "T2.P3",
    "T2.P4",
    "T2.P5",
    "T2.B",
    // T2 monitoring: KV 85%; running > 200; rejected > 5/min; GPU power; KV > 88% for 60 s.
    "T2.M1",
    "T2.M2",
    "T2.M3",
    "T2.M4",
    "T2.M5",
    // T3 table.
    "T3.1",
    "T3.2",
    "T3.3",
    "T3.4",
    "T3.5",
    "T3.6",
    // T3 monitoring: KV > 90%; waiting > 50; spec acceptance < 20%; response-cache hit
    // < 20%; P99 request duration > 200 ms.
    "T3.M1",
    "T3.M2",
    "T3.M3",
    "T3.M4",
    "T3.M5",
    // T4 troubleshooting: OOM, slow generation, NCCL errors.
    "T4.1",
    "T4.2",
    "T4.3",
    // T4 dashboard panels: throughput, cache usage (80/95), latency P99, batch size, GPU
    // memory used/total, GPU utilization.
    "T4.D1",
    "T4.D2",
    "T4.D3",
    "T4.D4",
    "T4.D5",
    "T4.D6",
    // T4 HPA targets (cache 80%, pending 50, P99 10 s), PDB minAvailable 2, probes.
    "T4.H1",
    "T4.H2",
    "T4.H3",
    "T4.K1",
    "T4.K2",
    // vLLM example PrometheusRule: e2e p99 > 120s; TTFT p99 > 30s; ITL p99 > 1s; KV > 0.95;
    // waiting > 50; preemptions > 1/s; replica down.
    "A.vllm.1",
    "A.vllm.2",
    "A.vllm.3",
    "A.vllm.4",
    "A.vllm.5",
    "A.vllm.6",
    "A.vllm.7",
    // llm-d: KV > 0.90; waiting > 50; preemptions > 1/s; prefix hit < 0.30; GPU util < 30;
    // TTFT p99 > 10s warn; > 30s crit; error ratio > 5%; decode KV > 0.95; no healthy backends.
    "A.llmd.1",
    "A.llmd.2",
    "A.llmd.3",
    "A.llmd.4",
    "A.llmd.5",
    "A.llmd.6",
    "A.llmd.7",
    "A.llmd.8",
    "A.llmd.9",
    "A.llmd.10",
    // vLLM dashboards: KV 0.9/0.98; 5xx ratio 0.001/0.01; preemption 0.001/s / 1/s; SLO
    // attainment < 0.9.
    "A.dash.1",
    "A.dash.2",
    "A.dash.3",
    "A.dash.4",
    // metrics.md, DCGM: DCGM_FI_DEV_XID_ERRORS (last XID); the GPU issue asks XID ≠ 0 to suggest
    // cordoning the node.
    "DCGM.XID",
    // Kubernetes: a container's last termination reason OOMKilled (exit code 137).
    "K8S.OOMKilled",
    // Ray: ray.exceptions.RayActorError in an engine's log (a worker of a multi-GPU engine died).
    "RAY.ActorError",
];

/// Rows the source itself says cannot be observed from metrics.
const UNOBSERVABLE_BY_THE_SOURCE: &[&str] = &["T3.5"];

fn rules() -> RuleSet {
    RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_row_is_a_rule_or_documented_as_unobservable() {
    let rules = rules();
    let mut missing = Vec::new();
    for row in ROWS {
        let as_rule = rules
            .rules()
            .iter()
            .any(|r| r.sources.iter().any(|s| s == row));
        let as_unobservable = rules.unobservable().iter().any(|u| u.id == *row);
        if !as_rule && !as_unobservable {
            missing.push(*row);
        }
        assert!(
            !(as_rule && as_unobservable),
            "{row} is both a rule source and unobservable"
        );
    }
    assert!(
        missing.is_empty(),
        "rows without a rule or reason: {missing:?}"
    );
}

#[test]
fn every_source_and_unobservable_id_is_a_known_row() {
    let rules = rules();
    for rule in rules.rules() {
        for source in &rule.sources {
            assert!(
                ROWS.contains(&source.as_str()),
                "rule {} cites unknown row {source}",
                rule.id
            );
        }
    }
    for entry in rules.unobservable() {
        assert!(
            ROWS.contains(&entry.id.as_str()),
            "unknown row {}",
            entry.id
        );
        assert!(
            entry.reason.len() > 20,
            "{}: give a real reason, not {:?}",
            entry.id,
            entry.reason
        );
    }
}

#[test]
fn rows_the_issue_names_as_metric_log_or_config_rules_are_rules() {
    let rules = rules();
    let covered = |row: &str| {
        rules
            .rules()
            .iter()
            .any(|r| r.sources.iter().any(|s| s == row))
    };
    for row in [
        // Metric rules.
        "T1.1", "T1.2", "T1.5", "T2.1", "T2.3", "T2.5", "T3.3", "T3.6",
        // Log and event rules.
        "T1.3", "T1.P1", "T1.P3", "T1.P4", "T2.P1", "T2.P2", "T2.P3", "T2.P4", "T2.P5", "T3.1",
        "T3.2",
    ] {
        assert!(covered(row), "{row} must be a rule");
    }
    for row in UNOBSERVABLE_BY_THE_SOURCE {
        assert!(!covered(row), "{row}");
    }
}

#[test]
fn configuration_rules_exist_for_cache_config_and_pod_spec() {
    let rules = rules();
    let reads = |id: &str| -> Vec<String> {
        rules
            .get(id)
            .unwrap_or_else(|| panic!("{id}"))
            .when
            .reads()
            .iter()
            .map(|r| r.name().to_owned())
            .collect()
    };
    assert_eq!(reads("gpu-mem-util-high"), ["cache.gpu_memory_utilization"]);
    assert_eq!(reads("prefix-caching-off"), ["cache.enable_prefix_caching"]);
    assert_eq!(reads("omp-threads-high"), ["env.OMP_NUM_THREADS"]);
    assert_eq!(
        reads("chunked-prefill-batch-big"),
        [
            "config.enable_chunked_prefill",
            "config.max_num_batched_tokens"
        ]
    );
}
