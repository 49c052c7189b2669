//! Fleet-building pieces shared by the render and diagnostics benchmarks.

use std::time::Duration;

use kvtop::app::App;
use kvtop::theme::Theme;
use kvtop_core::engine::Histogram;
use kvtop_core::fleet::{Fleet, FleetSettings, TargetId, TargetSpec, Ts};
use kvtop_core::metrics::Bucket;

/// Engines in the benchmark fleets.
pub const ENGINES: usize = 1000;
/// Scrapes of history before the timed part.
pub const STEPS: usize = 120;
/// Time of the first scrape.
pub const START: Ts = 1.8e9;
/// Bucket bounds of the synthetic TTFT and ITL histograms.
pub const BOUNDS: [f64; 6] = [0.05, 0.1, 0.25, 0.5, 1.0, f64::INFINITY];

/// A cumulative histogram after `n` scrapes, each adding `per_step` observations per bucket.
pub fn histogram(per_step: [f64; 6], n: f64) -> Histogram {
    let mut cumulative = 0.0;
    let buckets = BOUNDS
        .iter()
        .zip(per_step)
        .map(|(le, c)| {
            cumulative += c * n;
            Bucket {
                le: *le,
                count: cumulative,
            }
        })
        .collect();
    Histogram {
        buckets,
        sum: None,
        count: Some(cumulative),
    }
}

/// A fleet of `n` targets at distinct addresses, with their ids in order.
pub fn fleet_of(n: usize) -> (Fleet, Vec<TargetId>) {
    let mut fleet = Fleet::new(FleetSettings::default());
    let ids = (0..n)
        .map(|i| {
            fleet.add_target(TargetSpec {
                name: format!("vllm-{i:04}"),
                url: format!("http://10.0.{}.{}:8000/metrics", i / 250, i % 250),
            })
        })
        .collect();
    (fleet, ids)
}

/// The console over `fleet` (`n` targets), at a 1 s interval with a 5-minute chart range.
pub fn console(fleet: Fleet, n: usize) -> App {
    App::new(
        fleet,
        Theme::fallback(),
        format!("{n} targets"),
        Duration::from_secs(1),
        Duration::from_secs(300),
    )
}
