//! Scenarios at given times: `NAME@ENGINE+DELAY` assignments (`oom-crashloop@3+30s`), the
//! task that applies them while the simulator runs, and the scripted story `kvtop demo` plays.
//!
//! Delays are simulated seconds after the simulator started (at a time scale of 10, `+30s`
//! comes after three wall-clock seconds).

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::control::SimControl;
use super::fleet::{EngineRef, Scenario, ScenarioAssignment};

/// A scenario assignment that takes effect `after_s` simulated seconds after the start (0: from
/// the start, part of the initial composition).
#[derive(Debug, Clone, PartialEq)]
pub struct TimedScenario {
    pub after_s: f64,
    pub assignment: ScenarioAssignment,
}

impl TimedScenario {
    /// `scenario` on engine `engine` after `after_s` seconds.
    pub fn new(after_s: f64, scenario: Scenario, engine: EngineRef) -> Self {
        TimedScenario {
            after_s,
            assignment: ScenarioAssignment { scenario, engine },
        }
    }
}

impl std::str::FromStr for TimedScenario {
    type Err = String;

    /// `NAME@ENGINE` or `NAME@ENGINE+DELAY` (ENGINE an index or a pod name, DELAY e.g. `30s`,
    /// `2m`). Pod names never contain `+`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (assignment, after_s) = match text.rsplit_once('+') {
            Some((head, delay)) if head.contains('@') => {
                let delay = kvtop_core::units::parse_duration(delay)
                    .map_err(|e| format!("{text:?}: the delay after '+': {e}"))?;
                (head, delay.as_secs_f64())
            }
            _ => (text, 0.0),
        };
        Ok(TimedScenario {
            after_s,
            assignment: assignment.parse()?,
        })
    }
}

impl std::fmt::Display for TimedScenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.assignment.scenario.name();
        match &self.assignment.engine {
            EngineRef::Index(i) => write!(f, "{name}@{i}")?,
            EngineRef::Name(n) => write!(f, "{name}@{n}")?,
        }
        if self.after_s > 0.0 {
            write!(f, "+{}s", self.after_s)?;
        }
        Ok(())
    }
}

/// The story `kvtop demo` tells on a fleet of `engines` (engines alternate between two
/// models; the last one is down from the start when there are three or more). With the
/// default 8 engines, findings come in this order (times from the start, the default 1 s
/// scrape interval and 1-minute window):
///
/// | at   | engine | scenario         | first finding (rule, severity)                   |
/// |------|--------|------------------|--------------------------------------------------|
/// | 0 s  | 7      | down             | engine-down, critical, at once                   |
/// | 10 s | 0      | kv-thrash        | kv-breaker ~1m15s, ttft-kv-thrash ~1m30s, warning |
/// | 20 s | 1      | queue-buildup    | ttft-high ~1m25s, queue-deep ~3m20s, warning     |
/// | 30 s | 2      | oom-crashloop    | cuda-oom, critical, at ~50 s, again every ~53 s  |
/// | 40 s | 3      | stuck-requests   | stuck-requests, critical, ~2m45s (the 1-minute   |
/// |      |        |                  | window must hold no token, then the 1-minute `for`) |
/// | 50 s | 4      | high-cpu         | cpu-high, warning, ~1m55s                        |
/// | 60 s | 5      | spec-decode-poor | spec-acceptance-low, warning, ~2m05s             |
///
/// Pending findings show within seconds of each scenario's start. The two models' engines
/// keep a healthy share of traffic, so no model's load converges on one engine (which the
/// empty-worker-trap rule would report). Entries for engines the fleet does not have (or the
/// down one) are left out, so a small demo tells the beginning of the story.
pub fn demo_story(engines: usize) -> Vec<TimedScenario> {
    let mut story = Vec::new();
    let down = (engines >= 3).then(|| engines - 1);
    if let Some(last) = down {
        story.push(TimedScenario::new(
            0.0,
            Scenario::Down,
            EngineRef::Index(last),
        ));
    }
    let script = [
        (10.0, Scenario::KvThrash),
        (20.0, Scenario::QueueBuildup),
        (30.0, Scenario::OomCrashloop),
        (40.0, Scenario::StuckRequests),
        (50.0, Scenario::HighCpu),
        (60.0, Scenario::SpecDecodePoor),
    ];
    for (index, (after_s, scenario)) in script.into_iter().enumerate() {
        if index < engines && Some(index) != down {
            story.push(TimedScenario::new(
                after_s,
                scenario,
                EngineRef::Index(index),
            ));
        }
    }
    story
}

/// Apply each timed scenario when its time comes, until `shutdown` turns true. The entries
/// must have been checked against the fleet (unknown engines are logged and skipped).
pub(crate) fn spawn_director(
    control: SimControl,
    mut schedule: Vec<TimedScenario>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<std::io::Result<()>> {
    schedule.sort_by(|a, b| a.after_s.total_cmp(&b.after_s));
    let start = control.now();
    tokio::spawn(async move {
        for timed in schedule {
            let due = start + timed.after_s;
            let wait = (due - control.now()) / control.time_scale();
            if wait.is_finite() && wait > 0.0 {
                tokio::select! {
                    _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
                    _ = tokio::time::sleep(Duration::from_secs_f64(wait)) => {}
                }
            }
            let ScenarioAssignment { scenario, engine } = &timed.assignment;
            match control.set_scenario(engine, *scenario) {
                Ok(()) => tracing::info!(%timed, "scenario applied"),
                Err(err) => tracing::warn!(%timed, error = %err, "scenario not applied"),
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_assignments_parse_with_an_optional_delay() {
        let t: TimedScenario = "oom-crashloop@3+30s".parse().expect("valid");
        assert_eq!(
            t,
            TimedScenario::new(30.0, Scenario::OomCrashloop, EngineRef::Index(3))
        );
        let t: TimedScenario = "kv-thrash@vllm-llama-8b-abcde-fghjk"
            .parse()
            .expect("valid");
        assert_eq!(t.after_s, 0.0);
        assert_eq!(
            t.assignment.engine,
            EngineRef::Name("vllm-llama-8b-abcde-fghjk".into())
        );
        let t: TimedScenario = "xid:48@2+1m30s".parse().expect("valid");
        assert_eq!(
            (t.after_s, t.assignment.scenario),
            (90.0, Scenario::GpuXid(48))
        );
        assert_eq!(t.to_string(), "xid:48@2+90s");
        assert!("kv-thrash@1+soon".parse::<TimedScenario>().is_err());
        assert!("kv-thrash".parse::<TimedScenario>().is_err());
        assert!("meltdown@1+5s".parse::<TimedScenario>().is_err());
    }

    #[test]
    fn the_demo_story_skips_engines_the_fleet_lacks_and_the_down_one() {
        let full = demo_story(8);
        assert_eq!(full.len(), 7);
        assert_eq!(
            full[0],
            TimedScenario::new(0.0, Scenario::Down, EngineRef::Index(7))
        );
        assert!(
            full.iter()
                .any(|t| t.assignment.scenario == Scenario::OomCrashloop)
        );
        // Four engines: down on 3, the story on 0..2.
        let small = demo_story(4);
        let engines: Vec<String> = small.iter().map(ToString::to_string).collect();
        // Engine 3 is the down one; its story entry (stuck-requests) is left out.
        assert_eq!(
            engines,
            [
                "down@3",
                "kv-thrash@0+10s",
                "queue-buildup@1+20s",
                "oom-crashloop@2+30s"
            ]
        );
        assert_eq!(demo_story(1).len(), 1);
    }
}
