//! GPU rendering: the GPU columns of the fleet table, the GPU section of the detail pane, the
//! compact GPU summary and the node view (`n`), from a hand-built fleet with a dcgm-exporter.

use crate::common;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kvtop::app::{App, Event, View, update};
use kvtop::theme::Theme;
use kvtop_core::engine::{EngineFlavor, EngineId, EngineSample, GpuSample};
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetId, TargetSpec, Ts,
};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// 2024-01-01 12:03:04 UTC.
const NOW: Ts = 1_704_110_584.0;
const INTERVAL: f64 = 2.0;
const STEPS: usize = 60;

fn engine(model: &str, kv: f64) -> EngineSample {
    EngineSample {
        id: EngineId {
            model: model.into(),
            engine: "0".into(),
        },
        flavor: EngineFlavor::VllmV1,
        kv_usage: Some(kv),
        running: Some(4.0),
        waiting: Some(0.0),
        ..EngineSample::default()
    }
}

/// GPU `index` of node `gpu-node-00` at scrape `step`, held by `pod` (if any).
fn gpu(index: u32, pod: Option<&str>, step: usize) -> GpuSample {
    let busy = pod.is_some();
    let wave = (step % 10) as f64 / 10.0;
    GpuSample {
        gpu: index.to_string(),
        uuid: format!("GPU-{index:08x}"),
        model_name: "NVIDIA H100 80GB HBM3".into(),
        hostname: "gpu-node-00".into(),
        pod: pod.map(str::to_owned),
        namespace: pod.map(|_| "llm".to_owned()),
        util_pct: Some(if busy { 50.0 + 40.0 * wave } else { 0.0 }),
        fb_used_mib: Some(if busy { 73_939.0 } else { 0.0 }),
        fb_free_mib: Some(if busy { 7_101.0 } else { 81_040.0 }),
        fb_reserved_mib: Some(519.0),
        temp_c: Some(match index {
            1 => 88.0,
            _ if busy => 64.0,
            _ => 31.0,
        }),
        power_w: Some(if busy { 520.0 } else { 72.0 }),
        sm_clock_mhz: Some(if busy { 1980.0 } else { 345.0 }),
        xid: Some(if index == 1 { 79.0 } else { 0.0 }),
    }
}

/// Three engines (vllm-a, vllm-b, vllm-c) on GPUs 0–2 of one node, GPU 3 idle; GPU 1 hot
/// with XID 79. Two minutes of scrapes every 2 s up to `NOW`.
fn app() -> App {
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL,
        ..FleetSettings::default()
    });
    let pods = ["vllm-a", "vllm-b", "vllm-c"];
    let targets: Vec<TargetId> = pods
        .iter()
        .map(|pod| {
            fleet.add_target(TargetSpec {
                name: (*pod).into(),
                url: format!("http://{pod}:8000/metrics"),
            })
        })
        .collect();
    let exporter = fleet.add_target(TargetSpec {
        name: "dcgm-exporter-x7k2p".into(),
        url: "http://10.0.0.9:9400/metrics".into(),
    });
    for step in 0..STEPS {
        let at = NOW - (STEPS - 1 - step) as f64 * INTERVAL;
        for (i, target) in targets.iter().enumerate() {
            fleet.ingest(ScrapeReport {
                target: *target,
                at,
                took: 0.01,
                outcome: Ok(ScrapePayload {
                    engines: vec![engine(
                        "meta-llama/Llama-3.1-8B-Instruct",
                        0.3 + 0.2 * i as f64,
                    )],
                    bytes: 40_000,
                    ..ScrapePayload::default()
                }),
            });
        }
        fleet.ingest(ScrapeReport {
            target: exporter,
            at,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                gpus: (0..4)
                    .map(|i| gpu(i, pods.get(i as usize).copied(), step))
                    .collect(),
                bytes: 9_000,
                ..ScrapePayload::default()
            }),
        });
    }
    App::new(
        fleet,
        Theme::fallback(),
        "4 targets".into(),
        Duration::from_secs_f64(INTERVAL),
        Duration::from_secs(120),
    )
}

#[test]
fn the_exporter_is_no_engine_row_and_gpu_columns_show_on_wide_terminals() {
    let app = app();
    let screen = render(&app, 160, 48);
    assert!(!screen.contains("dcgm-exporter"), "{screen}");
    assert!(screen.contains("GPU% GMEM"), "{screen}");
    // 73939 / 81559 = 90.7 % → 91 %.
    // After the two-column severity badge and a space.
    let row = screen
        .lines()
        .find(|l| l.get(3..).is_some_and(|r| r.starts_with("vllm-b")))
        .unwrap_or_default();
    assert!(row.ends_with("91%"), "{row}");
    insta::assert_snapshot!("gpu_fleet_at_160x48_with_the_gpu_section", screen);
}

#[test]
fn eighty_columns_keep_the_gpu_columns_out_and_the_compact_detail_sums_up_the_gpu() {
    let mut app = app();
    press(&mut app, 'j'); // vllm-b, on the hot GPU with XID 79
    let screen = render(&app, 80, 24);
    assert!(!screen.contains("GPU%"), "{screen}");
    let facts = screen.lines().nth(22).unwrap_or_default();
    assert!(facts.contains("GPUs"), "{facts}");
    assert!(facts.contains("88°C XID 79"), "{facts}");
}

#[test]
fn n_opens_the_node_view_and_scrolls_within_it() {
    let mut app = app();
    press(&mut app, 'n');
    assert_eq!(app.view, View::Nodes);
    let screen = render(&app, 100, 30);
    insta::assert_snapshot!("gpu_node_view_at_100x30", screen);
    // Five lines (a heading and four GPUs) fit: nothing to scroll.
    press(&mut app, 'j');
    assert_eq!(app.nodes_offset, 0);
    // In a body with room for the heading and three lines, scrolling stops at the last one.
    let area = Rect::new(0, 0, 100, 4);
    kvtop::ui::nodes::render(&mut Buffer::empty(area), area, &app, NOW);
    press(&mut app, 'G');
    assert_eq!(app.nodes_offset, 2);
    press(&mut app, 'j');
    assert_eq!(app.nodes_offset, 2);
    press(&mut app, 'k');
    assert_eq!(app.nodes_offset, 1);
    update(
        &mut app,
        Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
        NOW,
    );
    assert_eq!(app.view, View::Fleet);
}

fn render(app: &App, width: u16, height: u16) -> String {
    common::screen::buffer_text(&common::screen::render(app, width, height, NOW))
}

fn press(app: &mut App, c: char) {
    common::screen::press_char(app, c, NOW);
}
