//! Names with wide (CJK) and zero-width characters in the fleet table (issue 17): every cell
//! is measured in terminal columns, so the columns after a name stay where the header puts
//! them and a frame drawn over another leaves no stale glyph.

use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::{App, Event, update};
use crate::theme::Theme;
use kvtop_core::engine::{EngineId, EngineSample};
use kvtop_core::fleet::{Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetSpec, Ts};

const T0: Ts = 1_000.0;

fn app(models: &[&str]) -> App {
    let mut fleet = Fleet::new(FleetSettings::default());
    for (i, model) in models.iter().enumerate() {
        let id = fleet.add_target(TargetSpec {
            name: format!("engine-{i}"),
            url: format!("http://engine-{i}/metrics"),
        });
        fleet.ingest(ScrapeReport {
            target: id,
            at: T0,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![EngineSample {
                    id: EngineId {
                        model: (*model).into(),
                        engine: String::new(),
                    },
                    kv_usage: Some(0.5),
                    ..EngineSample::default()
                }],
                ..ScrapePayload::default()
            }),
        });
    }
    let mut app = App::new(
        fleet,
        Theme::fallback_mono(),
        "test".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    update(&mut app, Event::Tick, T0);
    app
}

/// The rows of the screen, one string per row, each cell's symbol (a wide character's
/// second cell is empty, so the string's length in characters is not its width).
fn rows(terminal: &Terminal<TestBackend>) -> Vec<String> {
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer.cell((x, y)).map_or(" ", |c| c.symbol()))
                .collect()
        })
        .collect()
}

/// Column (in cells) where `needle` starts on the row containing `row_key`.
fn column_of(terminal: &Terminal<TestBackend>, row_key: &str, needle: &str) -> Option<usize> {
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height).find_map(|y| {
        let cells: Vec<&str> = (0..buffer.area.width)
            .map(|x| buffer.cell((x, y)).map_or(" ", |c| c.symbol()))
            .collect();
        let line: String = cells.concat();
        if !line.contains(row_key) {
            return None;
        }
        (0..cells.len()).find(|&x| cells[x..].concat().starts_with(needle))
    })
}

#[test]
fn wide_and_zero_width_model_names_keep_the_columns_aligned() {
    let mut app = app(&[
        "org/模型-七十亿-指令版-八位量化-长名字",
        "org/m\u{200b}odel\u{301}-7b",
        "org/plain-7b",
    ]);
    let mut terminal = Terminal::new(TestBackend::new(160, 24)).unwrap();
    terminal.draw(|frame| super::draw(frame, &app, T0)).unwrap();
    let header = column_of(&terminal, "NAME", "STATUS").unwrap();
    for row in ["engine-0", "engine-1", "engine-2"] {
        assert_eq!(
            column_of(&terminal, row, "UP"),
            Some(header),
            "{row}:\n{}",
            rows(&terminal).join("\n")
        );
    }
    // Drawn again over the same buffer with the wide name gone: nothing of it remains.
    app.filter = "plain".into();
    app.dirty = true;
    update(&mut app, Event::Tick, T0 + 0.5);
    terminal
        .draw(|frame| super::draw(frame, &app, T0 + 0.5))
        .unwrap();
    let screen = rows(&terminal).join("\n");
    assert!(!screen.contains('模') && !screen.contains('量'), "{screen}");
}
