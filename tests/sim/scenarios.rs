//! Each fault scenario end to end: the simulator in-process, the real scrape workers over
//! HTTP, the fleet, the rules (the built-in table) and the finding the scenario exists for —
//! and no critical finding it does not explain.
//!
//! Time: the simulator runs 25× faster than the wall clock and the observation runs on the
//! simulator's clock (scrape reports re-stamped, see `diagnose::observe`), so rates, windows
//! and `for` durations are honest simulated seconds: a scrape every 200 ms of wall time is one
//! every 5 simulated seconds. The only rules changed are the two prefix-cache rules, whose
//! 15-minute `for` is shortened to 2 minutes (a user-file override, as a user could write) so
//! the test stays short.

use std::time::Duration;

use kvtop::diagnose::observe::{Progress, Quiet, observe};
use kvtop::diagnose::plan::DurationPlan;
use kvtop::diagnose::{Clock, Observation, ObserveSettings, ObserveTarget};
use kvtop::sources::ScrapeSettings;
use kvtop_core::fleet::FleetSettings;
use kvtop_core::fleet::Ts;
use kvtop_core::rules::{Finding, FindingState, RuleSet, Severity};
use kvtop_sim::{Baseline, Scenario, SimConfig};

const TIME_SCALE: f64 = 25.0;
const INTERVAL: Duration = Duration::from_millis(200);

/// The built-in rules with the prefix rules' `for` shortened (see the module docs).
fn rules() -> RuleSet {
    RuleSet::with_user_text(
        "test-rules.toml",
        "[[rule]]\nid = \"prefix-hit-low\"\nfor = \"2m\"\n\n\
         [[rule]]\nid = \"prefix-hit-very-low\"\nfor = \"2m\"\n",
    )
    .expect("rules")
}

async fn observe_scenario(
    scenario: &str,
    engines: usize,
    seconds: f64,
) -> (Observation, Vec<String>) {
    observe_scenario_with(scenario, engines, seconds, &rules(), &mut Quiet).await
}

async fn observe_scenario_with(
    scenario: &str,
    engines: usize,
    seconds: f64,
    rules: &RuleSet,
    progress: &mut dyn Progress,
) -> (Observation, Vec<String>) {
    let sim = kvtop_sim::start(SimConfig {
        engines,
        time_scale: TIME_SCALE,
        seed: 21,
        baseline: Baseline::Healthy,
        schedule: vec![scenario.parse().expect("valid scenario")],
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let mut targets: Vec<ObserveTarget> = sim
        .engines
        .iter()
        .enumerate()
        .map(|(i, e)| ObserveTarget {
            name: e.name.clone(),
            url: e.url.clone(),
            bearer_token: None,
            sim_engine: Some(i),
        })
        .collect();
    targets.extend(sim.dcgm.iter().map(|d| ObserveTarget {
        name: d.name.clone(),
        url: d.url.clone(),
        bearer_token: None,
        sim_engine: None,
    }));
    let settings = ObserveSettings {
        scrape: ScrapeSettings {
            interval: INTERVAL,
            timeout: Duration::from_secs(2),
            body_limit: 8 << 20,
            user_agent: "kvtop-test".into(),
            limits: Default::default(),
        },
        fleet: FleetSettings::default(),
        duration: Some(seconds),
        auto_cap: 300.0,
        record: None,
    };
    let obs = observe(
        &targets,
        rules,
        &settings,
        Clock::Sim(sim.control()),
        progress,
    )
    .await
    .expect("observation");
    let names = sim.engines.iter().map(|e| e.name.clone()).collect();
    sim.shutdown().await;
    (obs, names)
}

fn describe(obs: &Observation) -> String {
    obs.findings
        .iter()
        .map(|f| {
            format!(
                "{:?} {:?} {} on {} [{}]",
                f.state,
                f.severity,
                f.rule_id,
                f.subject.label(),
                f.evidence
                    .iter()
                    .map(|e| e.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run `NAME@0` on a fleet of `engines` for `seconds` (simulated), then check that the
/// scenario's rule fires for engine 0 (or its model group) and that every firing critical
/// finding is that rule.
async fn scenario_fires_its_rule_alone(scenario: Scenario, engines: usize, seconds: f64) {
    let rule = scenario.rule().expect("a diagnostics scenario");
    let (obs, names) = observe_scenario(&format!("{}@0", scenario.name()), engines, seconds).await;
    let seen = describe(&obs);
    let subject = if scenario == Scenario::EmptyWorkerTrap {
        // A model-group rule: engine 0 serves the first model.
        obs.fleet
            .engines()
            .iter()
            .find(|e| e.name == names[0])
            .map(|e| e.id.model.clone())
            .expect("engine 0 in the fleet")
    } else {
        names[0].clone()
    };
    assert!(
        obs.findings.iter().any(|f| f.rule_id.as_ref() == rule
            && f.state == FindingState::Firing
            && f.subject.label() == subject),
        "{scenario:?}: {rule} does not fire on {subject}:\n{seen}"
    );
    let unrelated: Vec<&str> = obs
        .findings
        .iter()
        .filter(|f| f.state == FindingState::Firing && f.severity == Severity::Critical)
        .map(|f| f.rule_id.as_ref())
        .filter(|id| *id != rule)
        .collect();
    assert!(
        unrelated.is_empty(),
        "{scenario:?}: unrelated critical findings {unrelated:?}:\n{seen}"
    );
}

// Durations: a 1-minute `for` needs the 1-minute window filled, then the minute itself, plus a
// margin: 150 s. queue-deep holds for 3 minutes: 270 s; the prefix rules (2 minutes here): 210 s.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_thrash() {
    scenario_fires_its_rule_alone(Scenario::KvThrash, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_throughput() {
    scenario_fires_its_rule_alone(Scenario::LowThroughput, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_requests() {
    scenario_fires_its_rule_alone(Scenario::StuckRequests, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_crashloop() {
    scenario_fires_its_rule_alone(Scenario::OomCrashloop, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn high_cpu() {
    scenario_fires_its_rule_alone(Scenario::HighCpu, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_decode_poor() {
    scenario_fires_its_rule_alone(Scenario::SpecDecodePoor, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_miss() {
    scenario_fires_its_rule_alone(Scenario::PrefixMiss, 3, 210.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn circuit_open() {
    scenario_fires_its_rule_alone(Scenario::CircuitOpen, 3, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_worker_trap() {
    // Three engines per model: the trap on engine 0, engines 2 and 4 idle.
    scenario_fires_its_rule_alone(Scenario::EmptyWorkerTrap, 6, 240.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_buildup() {
    scenario_fires_its_rule_alone(Scenario::QueueBuildup, 3, 270.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_fleet_raises_no_warning_and_no_critical() {
    let (obs, _) = observe_scenario("healthy@0", 4, 150.0).await;
    let loud: Vec<String> = obs
        .findings
        .iter()
        .filter(|f| f.state == FindingState::Firing && f.severity != Severity::Info)
        .map(|f| format!("{} on {}", f.rule_id, f.subject.label()))
        .collect();
    assert!(loud.is_empty(), "{loud:?}\n{}", describe(&obs));
    // The log feed reached the rules: every engine has recent lines.
    for e in obs
        .fleet
        .engines()
        .iter()
        .filter(|e| !obs.fleet.is_gpu_exporter(e.target))
    {
        assert!(
            obs.logs.get(e.target).is_some_and(|l| !l.is_empty()),
            "no log lines for {}",
            e.name
        );
    }
}

/// Every finding that was ever pending or firing during an observation, by cycle.
#[derive(Default)]
struct EverySeen {
    seen: Vec<String>,
}

impl Progress for EverySeen {
    fn planned(&mut self, _: f64, _: Option<&DurationPlan>, _: f64) {}

    fn evaluated(&mut self, at: Ts, findings: &[Finding]) {
        for f in findings {
            let line = format!("{:?} {} on {}", f.state, f.rule_id, f.subject.label());
            if !self.seen.iter().any(|s| s.ends_with(&line)) {
                self.seen.push(format!("at {at:.0}: {line}"));
            }
        }
    }
}

/// Silence when healthy: ten simulated minutes of a healthy fleet of six engines (the
/// built-in rules, unchanged) raise no finding of any severity, not even a firing info one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_fleet_fires_no_finding_in_ten_minutes() {
    let builtin = RuleSet::builtin().expect("rules");
    let mut every = EverySeen::default();
    let (obs, _) = observe_scenario_with("healthy@0", 6, 600.0, &builtin, &mut every).await;
    assert!(obs.ended - obs.started >= 600.0, "observed ten minutes");
    let fired: Vec<&String> = every
        .seen
        .iter()
        .filter(|s| !s.contains("Pending"))
        .collect();
    assert!(fired.is_empty(), "{fired:#?}");
}
