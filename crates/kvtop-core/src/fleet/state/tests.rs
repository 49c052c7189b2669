//! Fleet behaviour with hand-built samples and hand-computed expectations.

use super::*;
use crate::engine::{CacheConfig, Histogram};
use crate::fleet::{QuantileWindow, Series};

const INF: f64 = f64::INFINITY;
/// Bounds of the test TTFT histogram.
const BOUNDS: [f64; 5] = [0.1, 0.5, 1.0, 5.0, INF];

fn settings(interval: f64) -> FleetSettings {
    FleetSettings {
        interval,
        ..FleetSettings::default()
    }
}

fn spec(name: &str) -> TargetSpec {
    TargetSpec {
        name: name.into(),
        url: format!("http://{name}:8000/metrics"),
    }
}

fn engine(model: &str, engine: &str) -> EngineSample {
    EngineSample {
        id: EngineId {
            model: model.into(),
            engine: engine.into(),
        },
        ..EngineSample::default()
    }
}

fn hist(bounds: &[f64], counts: &[f64]) -> Histogram {
    Histogram {
        buckets: bounds
            .iter()
            .zip(counts)
            .map(|(le, count)| Bucket {
                le: *le,
                count: *count,
            })
            .collect(),
        sum: None,
        count: counts.last().copied(),
    }
}

fn ok(target: TargetId, at: Ts, engines: Vec<EngineSample>) -> ScrapeReport {
    ScrapeReport {
        target,
        at,
        took: 0.05,
        outcome: Ok(ScrapePayload {
            engines,
            bytes: 1234,
            ..ScrapePayload::default()
        }),
    }
}

fn failed(target: TargetId, at: Ts, error: ScrapeError) -> ScrapeReport {
    ScrapeReport {
        target,
        at,
        took: 0.5,
        outcome: Err(error),
    }
}

fn with_tokens(total: f64) -> EngineSample {
    EngineSample {
        generation_tokens_total: Some(total),
        ..engine("org/m", "0")
    }
}

fn close(actual: Option<f64>, expected: f64) {
    let a = actual.unwrap_or_else(|| panic!("expected {expected}, got None"));
    assert!((a - expected).abs() < 1e-9, "expected {expected}, got {a}");
}

fn only_row(fleet: &Fleet) -> &EngineState {
    assert_eq!(fleet.engines().len(), 1);
    &fleet.engines()[0]
}

#[test]
fn new_target_is_one_down_placeholder_named_after_it() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let row = only_row(&fleet);
    assert_eq!(row.target, id);
    assert_eq!(row.id, EngineId::default());
    assert_eq!(row.name, "pod-a");
    assert_eq!(row.status, EngineStatus::Down);
    assert!(row.latest.is_none());
    assert_eq!(
        fleet.counts(),
        StatusCounts {
            up: 0,
            stale: 0,
            down: 1
        }
    );
}

#[test]
fn a_target_is_pending_not_down_until_its_first_scrape_ends() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    // Time alone does not make it DOWN (issue 17): pending, counted nowhere yet.
    fleet.tick(1_000.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    fleet.tick(1_100.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    assert_eq!(fleet.counts(), StatusCounts::default());
    // A failed first scrape does, at once.
    fleet.ingest(failed(id, 1_100.5, ScrapeError::Refused));
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    fleet.tick(1_101.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    assert_eq!(fleet.counts().down, 1);
}

/// A pod on its first start (created, or running and loading its model, not ready) refuses
/// scrapes for minutes after every rollout, drain or scale-up: Pending, not Down, until it is
/// ready or answers; once it has failed (a restart, a crash loop), never answering is Down.
#[test]
fn a_pod_on_its_first_start_is_pending_until_ready_not_down() {
    use crate::kube_model::{PodInfo, PodPhase};
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let mut pod = PodInfo::for_test("prod", "pod-a");
    pod.phase = PodPhase::Pending;
    pod.ready = false;
    pod.waiting_reason = Some("ContainerCreating".into());
    // The rules may run before any tick: the row is Pending as soon as the pod is known.
    fleet.set_pod_info(id, pod.clone());
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    fleet.ingest(failed(id, 1_000.0, ScrapeError::Refused));
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    pod.phase = PodPhase::Running;
    pod.waiting_reason = None;
    fleet.set_pod_info(id, pod.clone());
    fleet.tick(1_200.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    assert_eq!(fleet.counts().down, 0);
    // Ready but refusing: the engine is down.
    pod.ready = true;
    fleet.set_pod_info(id, pod.clone());
    fleet.tick(1_201.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    // Not ready again after a restart: still down (it failed; it is not starting).
    pod.ready = false;
    pod.restarts = 1;
    fleet.set_pod_info(id, pod.clone());
    fleet.ingest(failed(id, 1_202.0, ScrapeError::Refused));
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    // A crash-looping pod is not starting either.
    pod.restarts = 0;
    pod.waiting_reason = Some("CrashLoopBackOff".into());
    assert!(!pod.starting());
    // Such a pod, not scraped yet, is Down already: Kubernetes says it fails.
    let other = fleet.add_target(spec("pod-b"));
    fleet.set_pod_info(other, pod);
    fleet.tick(1_203.0);
    let row = fleet.engines().iter().find(|r| r.target == other);
    assert_eq!(row.map(|r| r.status), Some(EngineStatus::Down));
}

/// A pod being deleted (a drain's eviction, a rollout) stops answering as its engine shuts
/// down: Pending while it goes, never Stale or Down, so no "Engine not answering" for it.
#[test]
fn a_pod_being_deleted_that_stops_answering_is_pending_not_stale() {
    use crate::kube_model::PodInfo;
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let mut pod = PodInfo::for_test("prod", "pod-a");
    fleet.set_pod_info(id, pod.clone());
    fleet.ingest(ok(id, 1_000.0, vec![engine("org/m", "0")]));
    assert_eq!(only_row(&fleet).status, EngineStatus::Up);
    pod.terminating = true;
    pod.ready = false;
    fleet.set_pod_info(id, pod);
    fleet.ingest(failed(id, 1_001.0, ScrapeError::Refused));
    assert_eq!(
        only_row(&fleet).status,
        EngineStatus::Up,
        "answered 1 s ago"
    );
    fleet.tick(1_003.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    fleet.tick(1_100.0);
    assert_eq!(only_row(&fleet).status, EngineStatus::Pending);
    assert_eq!(fleet.counts(), StatusCounts::default());
}

#[test]
fn never_succeeded_target_is_down_at_once_with_its_error() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(failed(id, 1000.0, ScrapeError::Refused));
    let target = fleet.target(id).unwrap_or_else(|| panic!("target gone"));
    assert!(target.failing);
    assert_eq!(target.last_error, Some((1000.0, ScrapeError::Refused)));
    assert_eq!(target.last_attempt, Some(1000.0));
    assert_eq!(target.last_ok, None);
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    assert!(!fleet.tick(1001.0));
}

#[test]
fn placeholder_is_replaced_by_the_engines_of_the_first_good_scrape() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(
        id,
        1000.0,
        vec![engine("org/m", "1"), engine("org/m", "0")],
    ));
    let rows = fleet.engines();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].id.engine, "0");
    assert_eq!(rows[1].id.engine, "1");
    assert_eq!(rows[0].name, "pod-a/0");
    assert_eq!(rows[1].name, "pod-a/1");
    assert!(rows.iter().all(|r| r.status == EngineStatus::Up));
    assert!(rows.iter().all(|r| r.last_ok == Some(1000.0)));
    let target = fleet.target(id).unwrap_or_else(|| panic!("target gone"));
    assert_eq!(target.last_ok, Some(1000.0));
    assert_eq!(target.last_bytes, Some(1234));
    assert!(!target.failing);
}

#[test]
fn good_scrape_without_engines_keeps_an_up_placeholder_with_unknown_values() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![]));
    let row = only_row(&fleet);
    assert_eq!(row.status, EngineStatus::Up);
    assert_eq!(row.id, EngineId::default());
    assert_eq!(row.signals, Signals::default());
    // Engines that later stop exporting give way to the placeholder again.
    fleet.ingest(ok(id, 1001.0, vec![engine("org/m", "0")]));
    assert_eq!(only_row(&fleet).id.model, "org/m");
    fleet.ingest(ok(id, 1002.0, vec![]));
    let row = only_row(&fleet);
    assert_eq!(row.id, EngineId::default());
    assert_eq!(row.name, "pod-a");
    assert_eq!(row.status, EngineStatus::Up);
    assert!(row.latest.is_none());
}

#[test]
fn engines_missing_from_a_good_scrape_are_removed_and_others_keep_their_state() {
    let mut fleet = Fleet::new(settings(1.0));
    let a = fleet.add_target(spec("pod-a"));
    let b = fleet.add_target(spec("pod-b"));
    fleet.ingest(ok(b, 999.0, vec![engine("org/x", "")]));
    let mut e0 = with_tokens(0.0);
    let mut e1 = with_tokens(0.0);
    e1.id.engine = "1".into();
    fleet.ingest(ok(a, 1000.0, vec![e0.clone(), e1]));
    assert_eq!(fleet.engines().len(), 3);
    e0.generation_tokens_total = Some(600.0);
    fleet.ingest(ok(a, 1060.0, vec![e0]));
    let rows = fleet.engines();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].target, rows[0].name.as_str()), (a, "pod-a"));
    assert_eq!((rows[1].target, rows[1].name.as_str()), (b, "pod-b"));
    // Engine 0 kept its snapshots: 600 tokens over 60 s.
    close(rows[0].signals.gen_tps, 10.0);
}

#[test]
fn remove_target_drops_its_rows() {
    let mut fleet = Fleet::new(settings(1.0));
    let a = fleet.add_target(spec("pod-a"));
    let b = fleet.add_target(spec("pod-b"));
    fleet.ingest(ok(a, 1000.0, vec![engine("m", "0"), engine("m", "1")]));
    fleet.remove_target(a);
    assert_eq!(fleet.targets().len(), 1);
    assert!(fleet.target(a).is_none());
    assert_eq!(only_row(&fleet).target, b);
    // A late report for the removed target is ignored.
    fleet.ingest(ok(a, 1001.0, vec![engine("m", "0")]));
    assert_eq!(only_row(&fleet).target, b);
}

#[test]
fn display_names_follow_what_varies_inside_a_target() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("node-3"));
    fleet.ingest(ok(
        id,
        1000.0,
        vec![
            engine("meta-llama/Llama-3.1-8B", "0"),
            engine("Qwen/Qwen3-0.6B", "0"),
        ],
    ));
    let names: Vec<&str> = fleet.engines().iter().map(|r| r.name.as_str()).collect();
    // Rows are ordered by engine id; "Qwen/…" sorts before "meta-llama/…".
    assert_eq!(names, ["node-3:Qwen3-0.6B", "node-3:Llama-3.1-8B"]);
}

#[test]
fn rate_over_one_minute_sums_the_pieces_around_a_reset() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    // Every second: 10 tokens/s; the process restarts at t=92 and reports 5 tokens there.
    let value = |t: u32| {
        if t < 92 {
            10.0 * f64::from(t)
        } else {
            10.0 * f64::from(t - 92) + 5.0
        }
    };
    for t in 0..=140 {
        fleet.ingest(ok(id, f64::from(t), vec![with_tokens(value(t))]));
    }
    let row = only_row(&fleet);
    // Window [80, 140]: 80->91 = 110, reset at 92 counts 5, 92->140 = 480: 595 over 60 s.
    // (The snapshot at 92 left the dense span and was thinned; the sum survives.)
    close(row.signals.gen_tps, 595.0 / 60.0);
    assert_eq!(row.restarted_at, Some(92.0));
}

#[test]
fn derived_rates_and_ratios_from_counters() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let at = |requests: [f64; 3], prefix: [f64; 2], drafts: [f64; 2], cpu: f64, preempt: f64| {
        EngineSample {
            request_success_total: vec![
                ("stop".into(), requests[0]),
                ("length".into(), requests[1]),
                ("abort".into(), requests[2]),
            ],
            prefix_queries_total: Some(prefix[0]),
            prefix_hits_total: Some(prefix[1]),
            spec_draft_tokens_total: Some(drafts[0]),
            spec_accepted_tokens_total: Some(drafts[1]),
            process_cpu_seconds_total: Some(cpu),
            preemptions_total: Some(preempt),
            prompt_tokens_total: Some(cpu * 1000.0),
            kv_usage: Some(0.42),
            running: Some(7.0),
            waiting: Some(2.0),
            cache_config: Some(CacheConfig {
                block_size: Some(16),
                num_gpu_blocks: Some(1000),
                ..CacheConfig::default()
            }),
            ..engine("org/m", "0")
        }
    };
    fleet.ingest(ok(
        id,
        1000.0,
        vec![at(
            [100.0, 20.0, 5.0],
            [1000.0, 500.0],
            [100.0, 50.0],
            10.0,
            3.0,
        )],
    ));
    fleet.ingest(ok(
        id,
        1060.0,
        vec![at(
            [160.0, 35.0, 10.0],
            [3000.0, 1300.0],
            [400.0, 230.0],
            40.0,
            9.0,
        )],
    ));
    let s = only_row(&fleet).signals;
    // Finished 205 - 125 = 80 over 60 s; 5 of them aborted.
    close(s.requests_per_s, 80.0 / 60.0);
    close(s.error_ratio, 5.0 / 80.0);
    // Prefix: 800 hits of 2000 queries. Spec: 180 accepted of 300 drafted.
    close(s.prefix_hit, 0.4);
    close(s.spec_acceptance, 0.6);
    // 30 CPU seconds over 60 s; 6 preemptions over 60 s; 30,000 prompt tokens over 60 s.
    close(s.cpu_cores, 0.5);
    close(s.preemptions_per_s, 0.1);
    close(s.prompt_tps, 500.0);
    assert_eq!(s.kv_usage, Some(0.42));
    assert_eq!(s.running, Some(7.0));
    assert_eq!(s.waiting, Some(2.0));
    assert_eq!(s.kv_capacity_tokens, Some(16_000.0));
    // Not exported: unknown, never 0.
    assert_eq!(s.swapped, None);
    assert_eq!(s.gen_tps, None);
    assert_eq!(s.ttft_p50, None);
}

#[test]
fn first_scrape_has_gauges_but_no_rates_and_v0_gauges_fill_in() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let sample = EngineSample {
        kv_usage: Some(0.9),
        swapped: Some(1.0),
        prefix_hit_rate_gauge: Some(0.7),
        spec_acceptance_gauge: Some(0.55),
        generation_tokens_total: Some(100.0),
        ..engine("org/m", "")
    };
    fleet.ingest(ok(id, 1000.0, vec![sample]));
    let s = only_row(&fleet).signals;
    assert_eq!(s.kv_usage, Some(0.9));
    assert_eq!(s.swapped, Some(1.0));
    assert_eq!(s.prefix_hit, Some(0.7));
    assert_eq!(s.spec_acceptance, Some(0.55));
    assert_eq!(s.gen_tps, None);
}

/// Cumulative TTFT counts at the window's start, and the same plus 100 observations in it:
/// 10 ≤ 0.1, 40 in (0.1, 0.5], 30 in (0.5, 1], 20 in (1, 5].
const LIFETIME_BASE: [f64; 5] = [100.0, 150.0, 160.0, 170.0, 170.0];
const LIFETIME_NOW: [f64; 5] = [110.0, 200.0, 240.0, 270.0, 270.0];

fn with_ttft(counts: &[f64]) -> EngineSample {
    EngineSample {
        ttft: Some(hist(&BOUNDS, counts)),
        ..engine("org/m", "0")
    }
}

#[test]
fn windowed_quantiles_come_from_bucket_deltas_not_lifetime_counts() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_ttft(&LIFETIME_BASE)]));
    fleet.ingest(ok(id, 1060.0, vec![with_ttft(&LIFETIME_NOW)]));
    let s = only_row(&fleet).signals;
    // Deltas 10, 50, 80, 100, 100. p50: rank 50 -> (0.1, 0.5]: 0.1 + 0.4 * 40/40 = 0.5.
    // p95: rank 95 -> (1, 5]: 1 + 4 * 15/20 = 4. p99: 1 + 4 * 19/20 = 4.8.
    // (The lifetime p50 would be 0.1 + 0.4 * 25/90 ≈ 0.211.)
    close(s.ttft_p50, 0.5);
    close(s.ttft_p95, 4.0);
    close(s.ttft_p99, 4.8);
    let deltas: Vec<Bucket> = BOUNDS
        .iter()
        .zip(LIFETIME_BASE.iter().zip(LIFETIME_NOW))
        .map(|(le, (base, now))| Bucket {
            le: *le,
            count: now - base,
        })
        .collect();
    assert_eq!(
        s.ttft_p95,
        crate::metrics::histogram_quantile(0.95, &deltas)
    );
    // Histograms not exported stay unknown.
    assert_eq!(s.itl_p50, None);
    assert_eq!(s.e2e_p95, None);
    assert_eq!(s.queue_p95, None);
}

#[test]
fn no_traffic_in_the_window_leaves_quantiles_unknown() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let idle = EngineSample {
        generation_tokens_total: Some(5000.0),
        request_success_total: vec![("stop".into(), 40.0), ("abort".into(), 1.0)],
        ..with_ttft(&LIFETIME_NOW)
    };
    fleet.ingest(ok(id, 1000.0, vec![idle.clone()]));
    fleet.ingest(ok(id, 1030.0, vec![idle]));
    let s = only_row(&fleet).signals;
    assert_eq!(s.ttft_p50, None);
    assert_eq!(s.ttft_p99, None);
    // Zero traffic is a known zero rate; a ratio over nothing finished is unknown.
    assert_eq!(s.gen_tps, Some(0.0));
    assert_eq!(s.requests_per_s, Some(0.0));
    assert_eq!(s.error_ratio, None);
}

#[test]
fn quantiles_use_only_snapshots_after_a_histogram_reset() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(
        id,
        1000.0,
        vec![with_ttft(&[500.0, 600.0, 700.0, 800.0, 800.0])],
    ));
    // Restart: counts fall to the base, then grow by the 100 observations above.
    fleet.ingest(ok(id, 1030.0, vec![with_ttft(&LIFETIME_BASE)]));
    fleet.ingest(ok(id, 1060.0, vec![with_ttft(&LIFETIME_NOW)]));
    let row = only_row(&fleet);
    assert_eq!(row.restarted_at, Some(1030.0));
    close(row.signals.ttft_p50, 0.5);
    close(row.signals.ttft_p95, 4.0);
}

#[test]
fn quantiles_use_only_snapshots_after_a_bucket_layout_change() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    let old_layout = EngineSample {
        ttft: Some(hist(&[1.0, 10.0, INF], &[1.0, 2.0, 3.0])),
        ..engine("org/m", "0")
    };
    fleet.ingest(ok(id, 1000.0, vec![old_layout]));
    fleet.ingest(ok(id, 1030.0, vec![with_ttft(&LIFETIME_BASE)]));
    assert_eq!(only_row(&fleet).signals.ttft_p50, None);
    fleet.ingest(ok(id, 1060.0, vec![with_ttft(&LIFETIME_NOW)]));
    close(only_row(&fleet).signals.ttft_p50, 0.5);
    assert_eq!(only_row(&fleet).restarted_at, None);
}

#[test]
fn set_window_recomputes_every_row() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_tokens(0.0)]));
    fleet.ingest(ok(id, 1045.0, vec![with_tokens(900.0)]));
    fleet.ingest(ok(id, 1060.0, vec![with_tokens(1500.0)]));
    // 1m: 1500 over 60 s.
    close(only_row(&fleet).signals.gen_tps, 25.0);
    fleet.set_window(QuantileWindow::S15);
    assert_eq!(fleet.window(), QuantileWindow::S15);
    // 15s: base 1045, 600 over 15 s.
    close(only_row(&fleet).signals.gen_tps, 40.0);
    fleet.set_window(QuantileWindow::M5);
    // 5m: longer than the data, so from the oldest snapshot: 1500 over 60 s.
    close(only_row(&fleet).signals.gen_tps, 25.0);
    // The next scrape derives with the chosen window too: base 1000, 1800 over 75 s.
    fleet.ingest(ok(id, 1075.0, vec![with_tokens(1800.0)]));
    close(only_row(&fleet).signals.gen_tps, 24.0);
}

#[test]
fn stale_after_two_intervals_then_down_after_the_long_threshold() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_tokens(1.0)]));
    assert!(!fleet.tick(1001.5));
    assert_eq!(only_row(&fleet).status, EngineStatus::Up);
    assert!(fleet.tick(1002.0));
    assert_eq!(only_row(&fleet).status, EngineStatus::Stale);
    assert_eq!(fleet.counts().stale, 1);
    // Still stale at exactly max(60 s, 30 × 1 s) = 60 s; down beyond.
    assert!(!fleet.tick(1060.0));
    assert!(fleet.tick(1060.5));
    let row = only_row(&fleet);
    assert_eq!(row.status, EngineStatus::Down);
    // Last values stay, with the time they were taken.
    assert_eq!(row.last_ok, Some(1000.0));
    assert!(row.latest.is_some());
    // A good scrape brings it back.
    fleet.ingest(ok(id, 1070.0, vec![with_tokens(2.0)]));
    assert_eq!(only_row(&fleet).status, EngineStatus::Up);
}

#[test]
fn failures_keep_last_values_and_status_follows_the_age_of_the_last_good_scrape() {
    let mut fleet = Fleet::new(settings(5.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_tokens(1.0)]));
    fleet.ingest(failed(id, 1005.0, ScrapeError::Timeout { after_ms: 5000 }));
    let target = fleet.target(id).unwrap_or_else(|| panic!("target gone"));
    assert!(target.failing);
    assert_eq!(target.last_ok, Some(1000.0));
    // 5 s old with a 5 s interval: still Up; 10 s: Stale; beyond 150 s: Down.
    assert_eq!(only_row(&fleet).status, EngineStatus::Up);
    fleet.ingest(failed(id, 1010.0, ScrapeError::Refused));
    assert_eq!(only_row(&fleet).status, EngineStatus::Stale);
    fleet.ingest(failed(id, 1151.0, ScrapeError::Refused));
    assert_eq!(only_row(&fleet).status, EngineStatus::Down);
    assert_eq!(
        only_row(&fleet)
            .latest
            .as_ref()
            .and_then(|s| s.generation_tokens_total),
        Some(1.0)
    );
    fleet.ingest(ok(id, 1155.0, vec![with_tokens(2.0)]));
    let target = fleet.target(id).unwrap_or_else(|| panic!("target gone"));
    assert!(!target.failing);
    assert_eq!(target.last_error, Some((1151.0, ScrapeError::Refused)));
}

#[test]
fn restart_mark_expires_after_its_duration() {
    let mut fleet = Fleet::new(FleetSettings {
        restart_mark_secs: 120.0,
        ..settings(10.0)
    });
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_tokens(500.0)]));
    fleet.ingest(ok(id, 1010.0, vec![with_tokens(3.0)]));
    assert_eq!(only_row(&fleet).restarted_at, Some(1010.0));
    for t in 2..=12 {
        let tokens = 3.0 + f64::from(t);
        fleet.ingest(ok(
            id,
            1000.0 + 10.0 * f64::from(t),
            vec![with_tokens(tokens)],
        ));
    }
    assert!(!fleet.tick(1129.0));
    assert_eq!(only_row(&fleet).restarted_at, Some(1010.0));
    assert!(fleet.tick(1130.0));
    assert_eq!(only_row(&fleet).restarted_at, None);
}

#[test]
fn signals_are_pushed_into_the_history() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    for (t, kv) in [(1000.0, 0.25), (1001.0, 0.5)] {
        let sample = EngineSample {
            kv_usage: Some(kv),
            ..engine("m", "")
        };
        fleet.ingest(ok(id, t, vec![sample]));
    }
    let history = &only_row(&fleet).history;
    assert_eq!(
        history.points(Series::KvUsage, 0.0),
        vec![(1000.0, 0.25), (1001.0, 0.5)]
    );
    assert_eq!(history.last(Series::GenTps), None);
}

#[test]
fn duplicate_engine_ids_in_one_payload_keep_one_row() {
    let mut fleet = Fleet::new(settings(1.0));
    let id = fleet.add_target(spec("pod-a"));
    fleet.ingest(ok(id, 1000.0, vec![with_tokens(1.0), with_tokens(2.0)]));
    assert_eq!(only_row(&fleet).name, "pod-a");
}

/// A V1 engine with the full set of histograms (bucket counts as in vLLM's V1 layouts).
fn full_engine(t: f64) -> EngineSample {
    let layout = |n: usize| -> Vec<f64> {
        let mut bounds: Vec<f64> = (1..n).map(|i| 0.01 * (1u64 << i) as f64).collect();
        bounds.push(INF);
        bounds
    };
    let counts = |n: usize| -> Vec<f64> { (1..=n).map(|i| t * i as f64).collect() };
    EngineSample {
        kv_usage: Some(0.5),
        generation_tokens_total: Some(100.0 * t),
        prompt_tokens_total: Some(400.0 * t),
        request_success_total: vec![
            ("stop".into(), t),
            ("length".into(), t),
            ("abort".into(), 0.0),
        ],
        ttft: Some(hist(&layout(23), &counts(23))),
        itl: Some(hist(&layout(20), &counts(20))),
        e2e: Some(hist(&layout(22), &counts(22))),
        queue_time: Some(hist(&layout(22), &counts(22))),
        ..engine("org/m", "0")
    }
}

#[test]
fn one_engine_at_steady_state_fits_a_fleet_budget_of_a_thousand() {
    let mut fleet = Fleet::new(FleetSettings::default());
    let empty = fleet.memory_bytes();
    let id = fleet.add_target(spec("pod-a"));
    // An hour and a bit at 1 s: the snapshot window and both history tiers are at capacity
    // (histories grow with the points they hold, up to the settings' hour).
    for t in 0..3700 {
        fleet.ingest(ok(id, f64::from(t), vec![full_engine(f64::from(t))]));
    }
    let per_engine = fleet.memory_bytes() - empty;
    // 1,000 such engines must fit in a few hundred MiB (histories and snapshot windows
    // bounded): budget 300 MiB.
    assert!(
        per_engine * 1000 < 300 << 20,
        "{per_engine} bytes per engine"
    );
    // And it no longer grows.
    for t in 3700..4000 {
        fleet.ingest(ok(id, f64::from(t), vec![full_engine(f64::from(t))]));
    }
    assert!(fleet.memory_bytes() - empty <= per_engine + per_engine / 50);
}

fn with_ttft_of(model: &str, counts: &[f64]) -> EngineSample {
    EngineSample {
        ttft: Some(hist(&BOUNDS, counts)),
        itl: Some(hist(&BOUNDS, counts)),
        ..engine(model, "0")
    }
}

/// Two engines of one model, a minute of TTFT (and ITL) each: A fast (90 of 100 under
/// 0.1 s), B slower (half between 0.5 and 1 s).
fn two_engines_of_one_model() -> Fleet {
    let mut fleet = Fleet::new(settings(1.0));
    let a = fleet.add_target(spec("pod-a"));
    let b = fleet.add_target(spec("pod-b"));
    let zero = [0.0; 5];
    fleet.ingest(ok(a, 1000.0, vec![with_ttft_of("org/m", &zero)]));
    fleet.ingest(ok(b, 1000.0, vec![with_ttft_of("org/m", &zero)]));
    let a_now = [90.0, 99.0, 100.0, 100.0, 100.0];
    let b_now = [0.0, 50.0, 100.0, 100.0, 100.0];
    fleet.ingest(ok(a, 1060.0, vec![with_ttft_of("org/m", &a_now)]));
    fleet.ingest(ok(b, 1060.0, vec![with_ttft_of("org/m", &b_now)]));
    fleet
}

#[test]
fn a_models_quantiles_come_from_its_merged_histograms_not_its_engines_quantiles() {
    let fleet = two_engines_of_one_model();
    let rows: Vec<&EngineState> = fleet.engines().iter().collect();
    // Each engine's own p99: A rank 99 of 100 ends (0.1, 0.5] → 0.5; B rank 99 in (0.5, 1]
    // holding 50..100 → 0.5 + 0.5 × 49/50 = 0.99. Their mean would be 0.745.
    close(rows[0].signals.ttft_p99, 0.5);
    close(rows[1].signals.ttft_p99, 0.99);
    // Merged: 90, 149, 200, 200, 200; rank 198 in (0.5, 1] holding 149..200.
    let model = crate::fleet::summarize(rows.iter().copied(), 60.0, None);
    let merged_p99 = 0.5 + 0.5 * (198.0 - 149.0) / 51.0;
    close(model.quantiles.ttft_p99, merged_p99);
    close(model.ttft_p95, 0.5 + 0.5 * (190.0 - 149.0) / 51.0);
    // No TPOT histogram on either engine: the model's TPOT is its merged ITL.
    close(model.quantiles.tpot_p99, merged_p99);
    // Histograms neither engine exports stay unknown.
    assert_eq!(model.quantiles.e2e_p99, None);
    assert_eq!(model.quantiles.kv_usage, None);
}

/// Every quantile signal of the model, each histogram's taken together, is what one quantile
/// over the engines' bucket increases gives on its own (the stand-in's where the histogram is
/// missing, nothing where neither is exported).
#[test]
fn each_of_a_models_quantiles_is_the_quantile_of_its_engines_buckets() {
    use crate::signals::{Derivation, MetricId, SIGNALS, quantile_stand_in};
    let fleet = two_engines_of_one_model();
    let rows: Vec<&EngineState> = fleet.engines().iter().collect();
    let model = crate::fleet::merged_quantiles(&rows, 60.0);
    let deltas = |metric: MetricId| -> Vec<Vec<crate::metrics::Bucket>> {
        let kind = crate::fleet::window::HistogramKind::of(metric).expect("a histogram");
        rows.iter()
            .filter_map(|row| {
                let mut out = Vec::new();
                row.window
                    .bucket_deltas(kind, 60.0, &mut out)
                    .then_some(out)
            })
            .collect()
    };
    let mut checked = 0;
    for def in &SIGNALS {
        let Derivation::Quantile(histogram, q) = def.derivation else {
            continue;
        };
        let q: f64 = q.parse().expect("a number");
        let mut parts = deltas(histogram);
        if parts.is_empty() {
            parts = quantile_stand_in(histogram).map(deltas).unwrap_or_default();
        }
        let parts: Vec<&[crate::metrics::Bucket]> = parts.iter().map(Vec::as_slice).collect();
        let expected = crate::metrics::merged_quantile(q, &parts);
        assert_eq!((def.get)(&model), expected, "{}", def.name);
        checked += usize::from(expected.is_some());
    }
    // TTFT, ITL and TPOT (ITL's) at 0.5, 0.95 and 0.99.
    assert_eq!(checked, 9);
}

#[test]
fn a_sources_model_quantiles_fill_what_the_engines_buckets_do_not_give() {
    let fleet = two_engines_of_one_model();
    let derived = Signals {
        ttft_p99: Some(9.0),
        e2e_p99: Some(12.5),
        ..Signals::default()
    };
    let model = crate::fleet::summarize(fleet.engines(), 60.0, Some(&derived));
    // The engines' own buckets win where they have them; the source fills the rest.
    close(model.quantiles.ttft_p99, 0.5 + 0.5 * (198.0 - 149.0) / 51.0);
    close(model.quantiles.e2e_p99, 12.5);
}

#[test]
fn a_summary_over_the_models_own_quantiles_equals_one_that_merges_them_again() {
    let fleet = two_engines_of_one_model();
    let models = fleet.model_quantiles();
    assert_eq!(models.len(), 1);
    let merged = crate::fleet::summarize(fleet.engines(), fleet.window_secs(), None);
    let given = crate::fleet::summarize_with(fleet.engines(), models[0].signals);
    assert_eq!(given, merged);
    // The counts come from the engines given, the quantiles from what was given.
    let one = crate::fleet::summarize_with(fleet.engines().iter().take(1), Signals::default());
    assert_eq!((one.engines, one.up, one.ttft_p95), (1, 1, None));
}
