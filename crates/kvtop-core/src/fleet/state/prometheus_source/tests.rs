//! Derived ingestion and the GPU join, with hand-built reports.

use super::*;
use crate::fleet::{
    EngineStatus, FleetSettings, QuantileWindow, ScrapeReport, Series, StatusCounts,
};

const PROM: &str = "http://prom:9090";

fn fleet() -> Fleet {
    Fleet::new(FleetSettings {
        interval: 1.0,
        ..FleetSettings::default()
    })
}

fn derived(pod: &str, engine: &str, kv: f64) -> DerivedEngine {
    let id = EngineId {
        model: "org/m".into(),
        engine: engine.into(),
    };
    DerivedEngine {
        instance: InstanceKey::new("llm", pod, "10.0.0.1:8000"),
        node: None,
        sampled_at: None,
        sample: EngineSample {
            id,
            kv_usage: Some(kv),
            ..EngineSample::default()
        },
        signals: Signals {
            kv_usage: Some(kv),
            gen_tps: Some(100.0),
            ..Signals::default()
        },
        counter_resets: None,
    }
}

fn answer(at: Ts, engines: Vec<DerivedEngine>) -> DerivedReport {
    DerivedReport {
        source: PROM.into(),
        at,
        took: 0.04,
        outcome: Ok(DerivedPayload {
            engines,
            queries: 16,
            bytes: 5000,
            ..DerivedPayload::default()
        }),
    }
}

fn names(fleet: &Fleet) -> Vec<&str> {
    fleet.engines().iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn a_source_shows_as_one_down_row_until_it_names_pods() {
    let mut fleet = fleet();
    fleet.add_source(PROM, "prometheus");
    assert_eq!(names(&fleet), ["prometheus"]);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Down);
    fleet.ingest_derived(DerivedReport {
        source: PROM.into(),
        at: 100.0,
        took: 0.5,
        outcome: Err(ScrapeError::Refused),
    });
    let target = fleet.engines()[0].target;
    assert_eq!(
        fleet.target(target).and_then(|t| t.last_error.clone()),
        Some((100.0, ScrapeError::Refused))
    );
    let state = fleet.sources().next().cloned();
    assert!(state.is_some_and(|s| s.failing));
}

#[test]
fn each_pod_becomes_a_target_with_its_engines_as_rows() {
    let mut fleet = fleet();
    fleet.add_source(PROM, "prometheus");
    fleet.ingest_derived(answer(
        100.0,
        vec![
            derived("vllm-b", "0", 0.5),
            derived("vllm-a", "1", 0.2),
            derived("vllm-a", "0", 0.1),
        ],
    ));
    // The placeholder gave way; pods are created in order, vllm-a has two engines.
    assert_eq!(names(&fleet), ["vllm-a/0", "vllm-a/1", "vllm-b"]);
    assert!(fleet.engines().iter().all(|r| r.status == EngineStatus::Up));
    let b = &fleet.engines()[2];
    assert_eq!(b.signals.kv_usage, Some(0.5));
    assert_eq!(b.signals.gen_tps, Some(100.0));
    assert_eq!(b.history.last(Series::KvUsage), Some((100.0, 0.5)));
    assert_eq!(
        fleet.placement(b.target),
        Placement {
            pod: Some("vllm-b".into()),
            namespace: Some("llm".into()),
            node: None
        }
    );
    let state = fleet.sources().next().cloned();
    assert_eq!(state.as_ref().map(|s| s.members), Some(2));
    assert_eq!(state.as_ref().map(|s| s.queries), Some(16));
    assert_eq!(
        fleet.counts(),
        StatusCounts {
            up: 3,
            stale: 0,
            down: 0
        }
    );
}

#[test]
fn a_pod_missing_from_an_answer_goes_stale_then_is_forgotten() {
    let mut fleet = fleet();
    fleet.ingest_derived(answer(
        100.0,
        vec![derived("a", "0", 0.5), derived("b", "0", 0.5)],
    ));
    fleet.ingest_derived(answer(101.0, vec![derived("a", "0", 0.6)]));
    fleet.ingest_derived(answer(102.0, vec![derived("a", "0", 0.6)]));
    let b = fleet
        .engines()
        .iter()
        .find(|r| r.name == "b")
        .cloned()
        .unwrap_or_else(|| panic!("b kept"));
    // Last seen at 100: Stale from 102 (two intervals).
    assert_eq!(b.status, EngineStatus::Stale);
    let target = fleet.target(b.target).cloned();
    assert!(target.as_ref().is_some_and(|t| t.failing));
    assert_eq!(
        target.and_then(|t| t.last_error),
        Some((102.0, ScrapeError::Other(ABSENT.into())))
    );
    fleet.tick(100.0 + FORGET_SECS + 1.0);
    assert_eq!(names(&fleet), ["a"]);
}

#[test]
fn a_failed_cycle_fails_every_member_and_keeps_their_values() {
    let mut fleet = fleet();
    fleet.ingest_derived(answer(100.0, vec![derived("a", "0", 0.5)]));
    let error = ScrapeError::Http {
        status: 400,
        reason: Some("bad_data: parse error at char 4".into()),
    };
    fleet.ingest_derived(DerivedReport {
        source: PROM.into(),
        at: 103.0,
        took: 0.01,
        outcome: Err(error.clone()),
    });
    let row = &fleet.engines()[0];
    assert_eq!(row.status, EngineStatus::Stale);
    assert_eq!(row.signals.kv_usage, Some(0.5));
    let target = fleet.target(row.target).cloned();
    assert_eq!(target.and_then(|t| t.last_error), Some((103.0, error)));
}

#[test]
fn partial_answers_are_recorded_without_failing_the_pod() {
    let mut fleet = fleet();
    let mut report = answer(100.0, vec![derived("a", "0", 0.5)]);
    if let Ok(payload) = &mut report.outcome {
        payload.failures.push(QueryFailure {
            signal: "ttft".into(),
            error: ScrapeError::Http {
                status: 422,
                reason: Some("execution: query timed out".into()),
            },
        });
    }
    fleet.ingest_derived(report);
    let row = &fleet.engines()[0];
    assert_eq!(row.status, EngineStatus::Up);
    let target = fleet.target(row.target).cloned();
    assert!(target.as_ref().is_some_and(|t| !t.failing));
    let message = target
        .and_then(|t| t.last_error)
        .map(|(_, e)| e.to_string())
        .unwrap_or_default();
    assert_eq!(message, "ttft query: HTTP 422 execution: query timed out");
}

#[test]
fn backfill_fills_history_before_the_first_answer() {
    let mut fleet = fleet();
    fleet.add_source(PROM, "prometheus");
    let point = |t: f64, kv: f64| {
        (
            t,
            Signals {
                kv_usage: Some(kv),
                ..Signals::default()
            },
        )
    };
    fleet.backfill(BackfillReport {
        source: PROM.into(),
        series: vec![DerivedSeries {
            instance: InstanceKey::new("llm", "a", ""),
            node: None,
            id: EngineId {
                model: "org/m".into(),
                engine: "0".into(),
            },
            points: vec![point(10.0, 0.1), point(20.0, 0.2), point(30.0, 0.3)],
        }],
        failure: None,
    });
    assert_eq!(names(&fleet), ["a"]);
    let row = &fleet.engines()[0];
    assert_eq!(row.status, EngineStatus::Down);
    let kv: Vec<(f64, f64)> = row
        .history
        .points(Series::KvUsage, 0.0)
        .iter()
        .map(|(t, v)| (*t, (v * 10.0).round() / 10.0))
        .collect();
    assert_eq!(kv, [(10.0, 0.1), (20.0, 0.2), (30.0, 0.3)]);
    // The live answer continues the same row.
    fleet.ingest_derived(answer(31.0, vec![derived("a", "0", 0.4)]));
    assert_eq!(fleet.engines().len(), 1);
    assert_eq!(fleet.engines()[0].history.len(), 4);
    assert_eq!(fleet.sources().next().map(|s| s.backfilled_points), Some(3));
}

#[test]
fn changing_the_window_keeps_derived_signals() {
    let mut fleet = fleet();
    fleet.ingest_derived(answer(100.0, vec![derived("a", "0", 0.5)]));
    fleet.set_window(QuantileWindow::M5);
    assert_eq!(fleet.engines()[0].signals.gen_tps, Some(100.0));
}

fn dcgm_gpu(pod: Option<&str>, index: &str, util: f64, temp: f64, xid: f64) -> GpuSample {
    GpuSample {
        gpu: index.into(),
        uuid: format!("GPU-{index}"),
        hostname: "node-1".into(),
        pod: pod.map(str::to_owned),
        namespace: pod.map(|_| "llm".to_owned()),
        util_pct: Some(util),
        fb_used_mib: Some(75.0),
        fb_free_mib: Some(25.0),
        temp_c: Some(temp),
        power_w: Some(400.0),
        xid: Some(xid),
        ..GpuSample::default()
    }
}

fn dcgm_report(target: TargetId, at: Ts, gpus: Vec<GpuSample>) -> ScrapeReport {
    ScrapeReport {
        target,
        at,
        took: 0.01,
        outcome: Ok(ScrapePayload {
            gpus,
            ..ScrapePayload::default()
        }),
    }
}

fn engine_report(target: TargetId, at: Ts) -> ScrapeReport {
    ScrapeReport {
        target,
        at,
        took: 0.01,
        outcome: Ok(ScrapePayload {
            engines: vec![EngineSample {
                id: EngineId {
                    model: "org/m".into(),
                    engine: "0".into(),
                },
                kv_usage: Some(0.3),
                ..EngineSample::default()
            }],
            ..ScrapePayload::default()
        }),
    }
}

#[test]
fn a_dcgm_exporter_target_feeds_the_gpu_signals_of_the_pod_it_names() {
    let mut fleet = fleet();
    let engine = fleet.add_target(TargetSpec {
        name: "vllm-0".into(),
        url: "http://127.0.0.1:1/metrics".into(),
    });
    let exporter = fleet.add_target(TargetSpec {
        name: "dcgm-exporter-x".into(),
        url: "http://127.0.0.1:2/metrics".into(),
    });
    fleet.ingest(engine_report(engine, 100.0));
    fleet.ingest(dcgm_report(
        exporter,
        100.2,
        vec![
            dcgm_gpu(Some("vllm-0"), "0", 40.0, 60.0, 0.0),
            dcgm_gpu(Some("vllm-0"), "1", 90.0, 85.0, 79.0),
            dcgm_gpu(None, "2", 0.0, 30.0, 0.0),
        ],
    ));
    assert!(fleet.is_gpu_exporter(exporter));
    assert!(!fleet.is_gpu_exporter(engine));
    assert_eq!(fleet.gpu_count(), 3);
    assert_eq!(fleet.gpus_of(engine).count(), 2);
    // The exporter's placeholder row is not an engine.
    assert_eq!(fleet.counts().up, 1);
    let signals = fleet.engines()[0].signals;
    assert_eq!(signals.gpu_util, Some(0.9));
    assert_eq!(signals.gpu_mem, Some(0.75));
    assert_eq!(signals.gpu_temp, Some(85.0));
    assert_eq!(signals.gpu_power, Some(400.0));
    assert_eq!(signals.xid, Some(79.0));
    // A later engine scrape derives its signals again and keeps the GPU ones.
    fleet.ingest(engine_report(engine, 101.0));
    assert_eq!(fleet.engines()[0].signals.gpu_util, Some(0.9));
    // GPUs not reported for as long as a row takes to go Down are forgotten.
    fleet.tick(100.2 + 61.0);
    assert_eq!(fleet.gpu_count(), 0);
    assert_eq!(fleet.engines()[0].signals.gpu_util, None);
}

#[test]
fn prometheus_gpus_join_pods_of_the_same_source_by_pod_and_namespace() {
    let mut fleet = fleet();
    let mut report = answer(100.0, vec![derived("vllm-0", "0", 0.5)]);
    if let Ok(payload) = &mut report.outcome {
        payload.gpus = Some(vec![dcgm_gpu(Some("vllm-0"), "0", 30.0, 50.0, 48.0)]);
    }
    fleet.ingest_derived(report);
    let row = &fleet.engines()[0];
    assert_eq!(row.signals.gpu_util, Some(0.3));
    assert_eq!(row.signals.xid, Some(48.0));
    // The next answer without GPUs (DCGM query failed) keeps the last ones.
    fleet.ingest_derived(answer(101.0, vec![derived("vllm-0", "0", 0.5)]));
    assert_eq!(fleet.engines()[0].signals.gpu_util, Some(0.3));
}

#[test]
fn a_slow_source_stretches_the_staleness_of_its_rows() {
    let mut fleet = fleet();
    let mut slow = answer(100.0, vec![derived("a", "0", 0.5)]);
    slow.took = 3.5;
    fleet.ingest_derived(slow);
    // Interval 1 s, but cycles take 3.5 s: Stale only from 2 × 3.5 s.
    fleet.tick(106.0);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Up);
    fleet.tick(107.0);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Stale);
}

#[test]
fn engines_scraped_directly_take_gpus_read_through_prometheus() {
    let mut fleet = fleet();
    let engine = fleet.add_target(TargetSpec {
        name: "vllm-0".into(),
        url: "http://10.0.0.1:8000/metrics".into(),
    });
    fleet.add_source(PROM, "prometheus");
    fleet.ingest(engine_report(engine, 100.0));
    fleet.ingest_derived(DerivedReport {
        source: PROM.into(),
        at: 100.5,
        took: 0.02,
        outcome: Ok(DerivedPayload {
            gpus: Some(vec![dcgm_gpu(Some("vllm-0"), "0", 64.0, 70.0, 0.0)]),
            queries: 1,
            ..DerivedPayload::default()
        }),
    });
    let row = fleet
        .engines()
        .iter()
        .find(|r| r.target == engine)
        .cloned()
        .unwrap_or_else(|| panic!("engine row"));
    assert_eq!(row.signals.gpu_util, Some(0.64));
    // The source's row stands for a GPU exporter: not an engine.
    assert_eq!(fleet.counts().up, 1);
    let source_row = fleet.engines().iter().find(|r| r.target != engine).cloned();
    assert!(source_row.is_some_and(|r| fleet.is_gpu_exporter(r.target)));
}

fn listed(pod: &str, health: TargetHealth, error: Option<&str>) -> SourceTarget {
    SourceTarget {
        instance: InstanceKey::new("llm", pod, ""),
        node: None,
        health,
        last_error: error.map(str::to_owned),
        scrape_interval: Some(1.0),
    }
}

fn with_targets(at: Ts, engines: Vec<DerivedEngine>, targets: Vec<SourceTarget>) -> DerivedReport {
    let mut report = answer(at, engines);
    if let Ok(payload) = &mut report.outcome {
        payload.targets = Some(targets);
    }
    report
}

fn error_of<'f>(fleet: &'f Fleet, name: &str) -> Option<&'f ScrapeError> {
    let row = fleet.engines().iter().find(|r| r.name == name)?;
    fleet
        .target(row.target)?
        .last_error
        .as_ref()
        .map(|(_, e)| e)
}

#[test]
fn a_target_prometheus_cannot_scrape_is_a_down_row_with_its_error_from_the_first_answer() {
    let mut fleet = fleet();
    fleet.add_source(PROM, "prometheus");
    let refused = "Get \"http://10.0.0.9:8000/metrics\": dial tcp: connection refused";
    fleet.ingest_derived(with_targets(
        100.0,
        vec![derived("a", "0", 0.5)],
        vec![
            listed("a", TargetHealth::Up, None),
            listed("dead", TargetHealth::Down, Some(refused)),
            listed("new", TargetHealth::Unknown, None),
        ],
    ));
    assert_eq!(names(&fleet), ["a", "dead", "new"]);
    let status = |name: &str| {
        fleet
            .engines()
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.status)
    };
    assert_eq!(status("a"), Some(EngineStatus::Up));
    assert_eq!(status("dead"), Some(EngineStatus::Down));
    assert_eq!(
        error_of(&fleet, "dead"),
        Some(&ScrapeError::Other(format!(
            "Prometheus cannot scrape it: {refused}"
        )))
    );
    assert_eq!(
        error_of(&fleet, "new"),
        Some(&ScrapeError::Other("not scraped by Prometheus yet".into()))
    );
    assert_eq!(
        fleet.counts(),
        StatusCounts {
            up: 1,
            stale: 0,
            down: 2
        }
    );
}

#[test]
fn an_engine_whose_target_stays_listed_is_kept_and_leaves_when_the_target_does() {
    let mut fleet = fleet();
    fleet.ingest_derived(with_targets(
        100.0,
        vec![derived("a", "0", 0.5), derived("b", "0", 0.5)],
        vec![
            listed("a", TargetHealth::Up, None),
            listed("b", TargetHealth::Up, None),
        ],
    ));
    // b dies; Prometheus keeps listing it as down, far beyond the ten minutes an unlisted
    // member is kept.
    let mut at = 100.0;
    while at < 100.0 + 2.0 * FORGET_SECS {
        at += 30.0;
        fleet.ingest_derived(with_targets(
            at,
            vec![derived("a", "0", 0.5)],
            vec![
                listed("a", TargetHealth::Up, None),
                listed("b", TargetHealth::Down, Some("context deadline exceeded")),
            ],
        ));
        fleet.tick(at);
    }
    assert_eq!(names(&fleet), ["a", "b"]);
    let b = fleet
        .engines()
        .iter()
        .find(|r| r.name == "b")
        .map(|r| r.status);
    assert_eq!(b, Some(EngineStatus::Down));
    // Prometheus drops the target: so does kvtop.
    fleet.ingest_derived(with_targets(
        at + 1.0,
        vec![derived("a", "0", 0.5)],
        vec![listed("a", TargetHealth::Up, None)],
    ));
    assert_eq!(names(&fleet), ["a"]);
}

#[test]
fn a_rows_age_is_its_samples_age_so_a_lagging_source_shows_its_lag() {
    let mut fleet = fleet();
    let mut lagging = derived("a", "0", 0.5);
    lagging.sampled_at = Some(70.0);
    fleet.ingest_derived(with_targets(
        100.0,
        vec![lagging],
        vec![listed("a", TargetHealth::Up, None)],
    ));
    let row = &fleet.engines()[0];
    assert_eq!(row.last_ok, Some(70.0));
    // 30 s behind at a 1 s scrape interval and a 1 s poll: not fresh.
    assert_eq!(row.status, EngineStatus::Stale);

    // A fresh sample within one scrape interval plus the poll interval is Up.
    let mut fresh = derived("a", "0", 0.5);
    fresh.sampled_at = Some(100.5);
    fleet.ingest_derived(with_targets(
        101.0,
        vec![fresh],
        vec![listed("a", TargetHealth::Up, None)],
    ));
    assert_eq!(fleet.engines()[0].status, EngineStatus::Up);
    assert_eq!(fleet.engines()[0].last_ok, Some(100.5));
}

#[test]
fn a_long_scrape_interval_keeps_rows_up_between_scrapes() {
    let mut fleet = fleet();
    let mut target = listed("a", TargetHealth::Up, None);
    target.scrape_interval = Some(15.0);
    let mut engine = derived("a", "0", 0.5);
    engine.sampled_at = Some(100.0);
    fleet.ingest_derived(with_targets(114.0, vec![engine], vec![target]));
    assert_eq!(fleet.engines()[0].status, EngineStatus::Up);
    fleet.tick(120.0);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Up);
    // Two scrape intervals and more without a new sample: Stale.
    fleet.tick(133.0);
    assert_eq!(fleet.engines()[0].status, EngineStatus::Stale);
}

#[test]
fn the_window_in_effect_is_the_longest_a_source_used() {
    let mut fleet = fleet();
    assert_eq!(fleet.window_label(), "1m");
    let mut report = answer(100.0, vec![derived("a", "0", 0.5)]);
    if let Ok(payload) = &mut report.outcome {
        payload.window_secs = Some(120.0);
    }
    fleet.ingest_derived(report);
    assert_eq!(fleet.window_secs(), 120.0);
    assert_eq!(fleet.window_label(), "2m");
}

#[test]
fn a_failed_backfill_is_kept_with_the_source() {
    let mut fleet = fleet();
    fleet.add_source(PROM, "prometheus");
    fleet.backfill(BackfillReport {
        source: PROM.into(),
        series: Vec::new(),
        failure: Some("history not read (3 attempts): timed out after 30000 ms".into()),
    });
    let source = fleet.sources().next().map(|s| s.backfill_error.clone());
    assert_eq!(
        source,
        Some(Some(
            "history not read (3 attempts): timed out after 30000 ms".into()
        ))
    );
}

fn cycle_with_resets(at: Ts, resets: Option<f64>) -> DerivedReport {
    let mut engine = derived("vllm-a", "0", 0.5);
    engine.counter_resets = resets;
    DerivedReport {
        source: PROM.into(),
        at,
        took: 0.04,
        outcome: Ok(DerivedPayload {
            engines: vec![engine],
            queries: 16,
            bytes: 5000,
            ..DerivedPayload::default()
        }),
    }
}

#[test]
fn more_counter_resets_than_last_cycle_mark_the_engine_restarted() {
    let mut fleet = fleet();
    fleet.ingest_derived(cycle_with_resets(100.0, Some(0.0)));
    fleet.ingest_derived(cycle_with_resets(101.0, None));
    let row = |fleet: &Fleet| fleet.engines()[0].restarted_at;
    assert_eq!(row(&fleet), None, "no reset, or the source did not say");
    fleet.ingest_derived(cycle_with_resets(102.0, Some(1.0)));
    assert_eq!(row(&fleet), Some(102.0));
    // The same reset still in the window is not a second restart.
    fleet.ingest_derived(cycle_with_resets(103.0, Some(1.0)));
    assert_eq!(row(&fleet), Some(102.0));
    // Out of the window, then a new one.
    fleet.ingest_derived(cycle_with_resets(160.0, Some(0.0)));
    fleet.ingest_derived(cycle_with_resets(170.0, Some(1.0)));
    assert_eq!(row(&fleet), Some(170.0));
}

#[test]
fn a_sources_model_quantiles_are_kept_until_its_next_answer() {
    let mut fleet = fleet();
    let mut report = cycle_with_resets(100.0, None);
    if let Ok(payload) = &mut report.outcome {
        payload.models = vec![ModelSignals {
            model: "org/m".into(),
            signals: Signals {
                e2e_p99: Some(4.5),
                ..Signals::default()
            },
        }];
    }
    fleet.ingest_derived(report);
    assert_eq!(
        fleet.source_model_signals("org/m").and_then(|s| s.e2e_p99),
        Some(4.5)
    );
    assert_eq!(fleet.source_model_signals("other"), None);
    // An answer without them (the query failed) leaves them unknown, not stale.
    fleet.ingest_derived(cycle_with_resets(101.0, None));
    assert_eq!(fleet.source_model_signals("org/m"), None);
}
