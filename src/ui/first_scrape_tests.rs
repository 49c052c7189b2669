//! The console before its first scrape ends (issue 17): a target not yet scraped is PENDING,
//! never DOWN, and no `Engine down` finding appears until a scrape has failed.

use std::time::Duration;

use crate::app::{App, Event, update};
use crate::theme::Theme;
use kvtop_core::fleet::{Fleet, FleetSettings, ScrapeError, ScrapeReport, TargetSpec, Ts};

const T0: Ts = 1_000.0;

fn screen_text(app: &App, now: Ts) -> String {
    let area = ratatui::layout::Rect::new(0, 0, 120, 24);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    super::draw_into(&mut buf, area, app, now);
    super::buffer_text(&buf)
}

#[test]
fn an_engine_not_yet_scraped_is_pending_and_no_finding_calls_it_down() {
    let mut fleet = Fleet::new(FleetSettings::default());
    let id = fleet.add_target(TargetSpec {
        name: "vllm-a".into(),
        url: "http://vllm-a/metrics".into(),
    });
    let mut app = App::new(
        fleet,
        Theme::fallback_mono(),
        "test".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    update(&mut app, Event::Tick, T0);
    update(&mut app, Event::Tick, T0 + 1.0);
    let text = screen_text(&app, T0 + 1.0);
    assert!(text.contains("PENDING"), "{text}");
    assert!(!text.contains("DOWN"), "{text}");
    assert!(!text.contains("Engine down"), "{text}");
    // Its first scrape fails: now it is down, and the finding says so.
    let failed = ScrapeReport {
        target: id,
        at: T0 + 1.5,
        took: 0.01,
        outcome: Err(ScrapeError::Refused),
    };
    update(&mut app, Event::Scrape(failed), T0 + 1.5);
    update(&mut app, Event::Tick, T0 + 2.0);
    let text = screen_text(&app, T0 + 2.0);
    assert!(text.contains("DOWN"), "{text}");
    assert!(text.contains("Engine down"), "{text}");
}
