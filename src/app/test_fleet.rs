//! Fleets and scrapes for the state machine's tests.

use std::time::Duration;

use super::state::App;
use crate::theme::Theme;
use kvtop_core::engine::{EngineId, EngineSample};
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapePayload, ScrapeReport, TargetId, TargetSpec, Ts,
};

/// An engine rule: KV usage above 90 % for 10 s is critical.
pub(crate) const KV_RULE: &str = r#"
[[rule]]
id = "kv"
title = "KV full"
severity = "critical"
when = "kv_usage > 90%"
for = "10s"
cause = "c"
action = "a"
source = "test"
"#;

/// A good scrape of `target` at `at`: one engine of `model` with KV usage `kv`.
pub(crate) fn kv_report(target: TargetId, at: Ts, model: &str, kv: f64) -> ScrapeReport {
    ScrapeReport {
        target,
        at,
        took: 0.01,
        outcome: Ok(ScrapePayload {
            engines: vec![EngineSample {
                id: EngineId {
                    model: model.into(),
                    engine: String::new(),
                },
                kv_usage: Some(kv),
                ..EngineSample::default()
            }],
            ..ScrapePayload::default()
        }),
    }
}

/// A console over one target `a`, scraped every second, charts of 5 minutes.
pub(crate) fn one_target_app() -> (App, TargetId) {
    let mut fleet = Fleet::new(FleetSettings::default());
    let target = fleet.add_target(TargetSpec {
        name: "a".into(),
        url: "http://a/metrics".into(),
    });
    let app = App::new(
        fleet,
        Theme::fallback(),
        "test".into(),
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    (app, target)
}
