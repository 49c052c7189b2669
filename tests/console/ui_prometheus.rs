//! What the console shows of a Prometheus source: its placeholder row while it is down, the
//! engines it names, the cost of its cycle and a partial answer's error in the detail pane.

use crate::common;
use std::time::Duration;

use kvtop::app::App;
use kvtop::theme::Theme;
use kvtop_core::engine::{EngineFlavor, EngineId, EngineSample};
use kvtop_core::fleet::{
    DerivedEngine, DerivedPayload, DerivedReport, Fleet, FleetSettings, InstanceKey, QueryFailure,
    ScrapeError, Signals, SourceReport, Ts,
};

const NOW: Ts = 1_704_110_584.0;
const PROM: &str = "http://10.0.0.9:9090";

fn app(fleet: Fleet) -> App {
    App::new(
        fleet,
        Theme::fallback(),
        "prometheus 10.0.0.9:9090".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    )
}

fn engine(pod: &str, kv: f64) -> DerivedEngine {
    let id = EngineId {
        model: "meta-llama/Llama-3.1-8B-Instruct".into(),
        engine: "0".into(),
    };
    DerivedEngine {
        instance: InstanceKey::new("llm", pod, ""),
        node: None,
        sampled_at: None,
        sample: EngineSample {
            id,
            flavor: EngineFlavor::VllmV1,
            kv_usage: Some(kv),
            ..EngineSample::default()
        },
        signals: Signals {
            kv_usage: Some(kv),
            running: Some(7.0),
            gen_tps: Some(1234.0),
            ttft_p95: Some(0.35),
            ..Signals::default()
        },
        counter_resets: None,
    }
}

#[test]
fn a_prometheus_down_at_start_up_is_a_down_row_with_its_reason() {
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.add_source(PROM, "prometheus 10.0.0.9:9090");
    fleet.ingest_source(SourceReport::Cycle(DerivedReport {
        source: PROM.into(),
        at: NOW - 0.5,
        took: 0.001,
        outcome: Err(ScrapeError::Refused),
    }));
    let screen = render(&app(fleet), 100, 30);
    // The name is cut in the middle to fit the name cell, after the severity badge.
    let row = screen
        .lines()
        .find(|l| l.get(3..).is_some_and(|r| r.starts_with("prometheus …")))
        .unwrap_or_default();
    assert!(row.contains("DOWN"), "{screen}");
    assert!(row.contains("refused"), "{screen}");
}

#[test]
fn engines_read_through_prometheus_show_the_cycle_and_a_partial_answer() {
    let mut fleet = Fleet::new(FleetSettings::default());
    fleet.add_source(PROM, "prometheus 10.0.0.9:9090");
    fleet.ingest_source(SourceReport::Cycle(DerivedReport {
        source: PROM.into(),
        at: NOW - 0.5,
        took: 0.34,
        outcome: Ok(DerivedPayload {
            engines: vec![engine("vllm-a", 0.5), engine("vllm-b", 0.97)],
            gpus: None,
            queries: 17,
            failures: vec![QueryFailure {
                signal: "itl".into(),
                error: ScrapeError::Http {
                    status: 422,
                    reason: Some("execution: query timed out in expression evaluation".into()),
                },
            }],
            bytes: 7 * 1024 * 1024,
            targets: None,
            window_secs: None,
            models: Vec::new(),
        }),
    }));
    let screen = render(&app(fleet), 160, 48);
    // The source's placeholder row gave way to the engines it named.
    assert!(
        !screen.lines().any(|l| l
            .get(3..)
            .is_some_and(|r| r.starts_with("prometheus 10.0.0.9"))),
        "{screen}"
    );
    assert!(screen.contains("2 up 0 stale 0 down"), "{screen}");
    let b = screen
        .lines()
        .find(|l| l.get(3..).is_some_and(|r| r.starts_with("vllm-b")))
        .unwrap_or_default();
    assert!(b.contains("97%"), "{b}");
    assert!(b.contains("1.23k"), "{b}");
    assert!(
        screen.contains("prometheus  17 queries, 1 failed, 340ms"),
        "{screen}"
    );
    assert!(screen.contains("itl query: HTTP 422 executi"), "{screen}");
}

fn render(app: &App, width: u16, height: u16) -> String {
    common::screen::text(app, width, height, NOW)
}
