//! Observe a fleet for a while and evaluate the rules: the engine of `kvtop check`, also used by
//! the scenario tests. The real scrape workers feed a [`Fleet`]; every scrape interval the
//! fleet ticks, the simulator's logs (if any) are polled and the rules evaluate.
//!
//! # Clocks
//! With real targets everything runs on the wall clock. With the simulator in-process
//! ([`Clock::Sim`]), scrape reports are re-stamped with the simulator's clock before the fleet
//! sees them, and the fleet, the rules and the observation length all use that clock. The
//! simulator may run `time_scale` times faster than the wall clock; rates, windows and `for`
//! durations are then in simulated seconds, so a finding is exactly what the same fleet
//! would show at real speed — only the wall time spent waiting shrinks: an observation of
//! `duration` takes `duration / time_scale` of wall time. A scrape every `interval` of wall
//! time is one every `interval × time_scale` simulated seconds; callers keep the simulated
//! interval as configured by scraping `time_scale` times as often ([`sim_wall_interval`]),
//! down to [`MIN_WALL_INTERVAL`], beyond which windows hold fewer, coarser points.

use std::time::Duration;

use tokio::sync::mpsc;

use super::TargetLogs;
#[cfg(feature = "demo")]
use super::feed::SimLogPoller;
use super::inputs;
use super::kube_feed::KubeFeed;
use super::plan::{self, DurationPlan};
use crate::config::KubernetesConfig;
use crate::sources::kube::discovery::TEXT_POLL;
use crate::sources::kube::{ClusterClient, KubeUpdate};
use crate::sources::prometheus::{PollSettings, Poller, PromClient, QueryPlan};
use crate::sources::{Outbox, ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{
    Fleet, FleetSettings, ScrapeReport, SourceReport, TargetId, TargetSpec, Ts,
};
use kvtop_core::recording::Record;
use kvtop_core::rules::{Finding, RuleEngine, RuleSet};
#[cfg(feature = "demo")]
use kvtop_sim::SimControl;

/// One endpoint to observe.
#[derive(Debug, Clone)]
pub struct ObserveTarget {
    pub name: String,
    pub url: String,
    pub bearer_token: Option<String>,
    /// The simulated engine behind it (its index), whose log feeds the rules.
    pub sim_engine: Option<usize>,
}

/// Which clock the observation runs on.
#[derive(Debug, Clone)]
pub enum Clock {
    Wall,
    /// The in-process simulator's clock (see the module docs).
    #[cfg(feature = "demo")]
    Sim(SimControl),
}

impl Clock {
    fn now(&self) -> Ts {
        match self {
            Clock::Wall => unix_now(),
            #[cfg(feature = "demo")]
            Clock::Sim(control) => control.now(),
        }
    }

    /// Observation seconds per wall-clock second.
    pub fn scale(&self) -> f64 {
        match self {
            Clock::Wall => 1.0,
            #[cfg(feature = "demo")]
            Clock::Sim(control) => control.time_scale(),
        }
    }

    fn restamp(&self, wall: Ts) -> Ts {
        match self {
            Clock::Wall => wall,
            #[cfg(feature = "demo")]
            Clock::Sim(control) => control.sim_time_at(wall),
        }
    }
}

/// How to observe.
#[derive(Debug, Clone)]
pub struct ObserveSettings {
    /// Scrape settings; the interval and timeout are wall-clock.
    pub scrape: ScrapeSettings,
    /// Fleet settings; the interval is replaced by the scrape interval on the observation
    /// clock.
    pub fleet: FleetSettings,
    /// How long to observe on the observation clock; `None` chooses it from the rules that
    /// can fire ([`plan::auto_duration`]) once every target has been tried (two more
    /// intervals when none answered).
    pub duration: Option<f64>,
    /// Upper bound of an automatic duration, seconds.
    pub auto_cap: f64,
    /// Record what the observation ingests to this file (`--record`).
    pub record: Option<std::path::PathBuf>,
}

/// What an observation saw.
#[derive(Debug)]
pub struct Observation {
    pub fleet: Fleet,
    /// The findings of the last cycle.
    pub findings: Vec<Finding>,
    /// Recent log lines the rules read, per target.
    pub logs: TargetLogs,
    /// Observation clock at the first and the last evaluation.
    pub started: Ts,
    pub ended: Ts,
    /// Scrape interval on the observation clock, seconds.
    pub interval: f64,
    /// Observation seconds per wall-clock second.
    pub time_scale: f64,
    /// The automatic duration's reasoning, when the duration was automatic.
    pub plan: Option<DurationPlan>,
    /// Rules cycles evaluated.
    pub cycles: u32,
    /// True when at least one scrape succeeded.
    pub any_scraped: bool,
    /// Of a replay: what fired during the window reported (`None` for a live observation).
    pub episodes: Option<Vec<super::episodes::Episode>>,
    /// Of a recording's replay: the actions the recorded console ran during the window, each
    /// start and end with its time.
    pub actions: Vec<(Ts, kvtop_core::recording::ActionNote)>,
}

/// Why an observation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("cannot create the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error("nothing to observe: no targets")]
    NoTargets,
    /// Kubernetes discovery found no engine: what was searched and why nothing matched.
    #[error("{}", .0.join("\n  "))]
    NothingFound(Vec<String>),
    #[error("{0}")]
    Record(#[from] crate::record::StartError),
}

/// What an observation tells its caller while it runs.
pub trait Progress {
    /// The length was decided (automatically or as given), in observation seconds.
    fn planned(&mut self, secs: f64, plan: Option<&DurationPlan>, time_scale: f64);

    /// The rules ran at `at` (observation clock) and found `findings` (every cycle, so a
    /// finding that came and went before the end is seen too).
    fn evaluated(&mut self, _at: Ts, _findings: &[Finding]) {}
}

/// Progress that tells nobody.
pub struct Quiet;

impl Progress for Quiet {
    fn planned(&mut self, _: f64, _: Option<&DurationPlan>, _: f64) {}
}

/// Observe `targets` with `rules`, then return the fleet and the findings of the last cycle.
pub async fn observe(
    targets: &[ObserveTarget],
    rules: &RuleSet,
    settings: &ObserveSettings,
    clock: Clock,
    progress: &mut dyn Progress,
) -> Result<Observation, ObserveError> {
    if targets.is_empty() {
        return Err(ObserveError::NoTargets);
    }
    let mut fleet = Fleet::new(FleetSettings {
        interval: settings.scrape.interval.as_secs_f64() * clock.scale(),
        ..settings.fleet
    });
    let ids: Vec<TargetId> = targets
        .iter()
        .map(|t| {
            fleet.add_target(TargetSpec {
                name: t.name.clone(),
                url: t.url.clone(),
            })
        })
        .collect();
    let sim_streams: Vec<(usize, TargetId)> = targets
        .iter()
        .zip(&ids)
        .filter_map(|(t, id)| t.sim_engine.map(|i| (i, *id)))
        .collect();
    let client = build_client(&settings.scrape)?;
    let (tx, rx) = mpsc::channel::<ScrapeReport>(SCRAPE_QUEUE);
    let scrape_targets = targets
        .iter()
        .zip(&ids)
        .map(|(t, id)| ScrapeTarget {
            id: *id,
            url: t.url.clone(),
            bearer_token: t.bearer_token.clone(),
        })
        .collect();
    let scrapers = Scrapers::start(
        client,
        settings.scrape.clone(),
        scrape_targets,
        Outbox::new(tx),
    );
    let recorder = match &settings.record {
        Some(path) => Some(start_recording(path, &fleet, &clock, "check")?),
        None => None,
    };
    let sources = Sources {
        scrapes: rx,
        kube: None,
        sim_streams,
        hold_secs: 0.0,
        derived: None,
        recorder,
    };
    let observation = run(fleet, sources, rules, settings, clock, progress).await;
    drop(scrapers);
    Ok(observation)
}

/// Observe the engine pods discovered in `clusters` (as the console discovers and scrapes
/// them) with `rules`. The observation starts once every context finished its first
/// discovery round, and lasts at least until the pods' events and logs were read once.
pub async fn observe_pods(
    clusters: &[ClusterClient],
    kube: &KubernetesConfig,
    rules: &RuleSet,
    settings: &ObserveSettings,
    progress: &mut dyn Progress,
) -> Result<Observation, ObserveError> {
    if clusters.is_empty() {
        return Err(ObserveError::NoTargets);
    }
    let mut fleet = Fleet::new(FleetSettings {
        interval: settings.scrape.interval.as_secs_f64(),
        ..settings.fleet
    });
    let client = build_client(&settings.scrape)?;
    let (tx, rx) = mpsc::channel::<ScrapeReport>(SCRAPE_QUEUE);
    let mut feed = KubeFeed::start(
        clusters,
        kube,
        client,
        settings.scrape.clone(),
        Outbox::new(tx),
    );
    // A round is one pod list per namespace, each bounded by the API timeout.
    let first_round = kube.api_timeout * 2 + kube.poll_interval;
    feed.first_round(&mut fleet, first_round)
        .await
        .map_err(ObserveError::NothingFound)?;
    let recorder = match &settings.record {
        Some(path) => {
            let mut recorder = start_recording(path, &fleet, &Clock::Wall, "check --kube")?;
            // The pods the first round found, before anything scraped from them.
            recorder.record_kube(&fleet, Clock::Wall.now(), Vec::new(), Vec::new);
            Some(recorder)
        }
        None => None,
    };
    let sources = Sources {
        scrapes: rx,
        kube: Some(feed),
        sim_streams: Vec::new(),
        // Events and logs are read every few seconds: wait for one reading at least.
        hold_secs: (TEXT_POLL + kube.api_timeout).as_secs_f64(),
        derived: None,
        recorder,
    };
    Ok(run(fleet, sources, rules, settings, Clock::Wall, progress).await)
}

/// Scrape reports queued before the observation folds them in.
const SCRAPE_QUEUE: usize = 8192;

/// Where an observation's data comes from.
struct Sources {
    scrapes: mpsc::Receiver<ScrapeReport>,
    /// Discovered pods and what discovery learns about them.
    kube: Option<KubeFeed>,
    /// Simulated engines whose logs feed the rules, and their targets.
    sim_streams: Vec<(usize, TargetId)>,
    /// The observation lasts at least this long, seconds on the observation clock.
    hold_secs: f64,
    /// What a Prometheus source's worker reports.
    derived: Option<mpsc::Receiver<SourceReport>>,
    /// Where what is ingested is recorded (`--record`).
    recorder: Option<crate::record::Recorder>,
}

/// Start recording an observation of `fleet` to `path`.
fn start_recording(
    path: &std::path::Path,
    fleet: &Fleet,
    clock: &Clock,
    source: &str,
) -> Result<crate::record::Recorder, crate::record::StartError> {
    let now = clock.now();
    let header = crate::record::header_for(fleet, source, now);
    let mut recorder =
        crate::record::Recorder::start(path, header, crate::record::Rotation::default())?;
    // The targets first: every scrape recorded after them has its target in a replay.
    recorder.observe(fleet, None, now);
    Ok(recorder)
}

/// The next report of a Prometheus source; never, without one.
async fn next_derived(derived: &mut Option<mpsc::Receiver<SourceReport>>) -> Option<SourceReport> {
    match derived {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Observe the fleet as a Prometheus server reads it (`client`, `plan`), with `rules`: the
/// engines it scrapes or fails to scrape, as the console shows them.
pub async fn observe_prometheus(
    client: PromClient,
    plan: QueryPlan,
    poll: PollSettings,
    rules: &RuleSet,
    settings: &ObserveSettings,
    progress: &mut dyn Progress,
) -> Result<Observation, ObserveError> {
    let mut fleet = Fleet::new(FleetSettings {
        interval: settings.scrape.interval.as_secs_f64(),
        ..settings.fleet
    });
    fleet.add_source(client.url(), client.url());
    let recorder = match &settings.record {
        Some(path) => Some(start_recording(
            path,
            &fleet,
            &Clock::Wall,
            &format!("check --prometheus {}", client.url()),
        )?),
        None => None,
    };
    let (scrape_tx, scrapes) = mpsc::channel::<ScrapeReport>(1);
    drop(scrape_tx);
    let (tx, rx) = mpsc::channel::<SourceReport>(SCRAPE_QUEUE);
    let (_window_tx, window) = tokio::sync::watch::channel(plan.window());
    let poller = Poller::start(client, plan, poll, Outbox::new(tx), window);
    let sources = Sources {
        scrapes,
        kube: None,
        sim_streams: Vec::new(),
        hold_secs: 0.0,
        derived: Some(rx),
        recorder,
    };
    let observation = run(fleet, sources, rules, settings, Clock::Wall, progress).await;
    drop(poller);
    Ok(observation)
}

/// The next Kubernetes update; never, without Kubernetes.
async fn next_update(kube: &mut Option<KubeFeed>) -> Option<KubeUpdate> {
    match kube {
        Some(feed) => feed.next().await,
        None => std::future::pending().await,
    }
}

/// Run the observation: fold scrapes (and Kubernetes updates) into `fleet`, evaluate the rules
/// every interval, stop when the length (given or planned) has passed.
async fn run(
    mut fleet: Fleet,
    sources: Sources,
    rules: &RuleSet,
    settings: &ObserveSettings,
    clock: Clock,
    progress: &mut dyn Progress,
) -> Observation {
    let Sources {
        scrapes: mut rx,
        mut kube,
        sim_streams,
        hold_secs,
        mut derived,
        mut recorder,
    } = sources;
    let scale = clock.scale();
    let interval = settings.scrape.interval.as_secs_f64() * scale;
    #[cfg(feature = "demo")]
    let mut poller = match &clock {
        Clock::Sim(control) => Some(SimLogPoller::new(control.clone(), sim_streams)),
        Clock::Wall => None,
    };
    #[cfg(not(feature = "demo"))]
    drop(sim_streams);
    let mut engine = RuleEngine::new(rules);
    let mut parts = inputs::FleetParts::for_rules(rules.rules());
    #[cfg_attr(not(feature = "demo"), allow(unused_mut))]
    let mut logs = TargetLogs::default();
    let mut ticker = tokio::time::interval(settings.scrape.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    // Until every target has been tried (or two intervals passed), nothing is evaluated: a
    // target not scraped yet is not a target that is down.
    let tried_by = clock.now() + 2.0 * interval;
    let hold_until = clock.now() + hold_secs;
    let mut length = settings.duration;
    let mut plan_made: Option<DurationPlan> = None;
    let mut started: Option<Ts> = None;
    let mut cycles = 0u32;
    let (findings, ended) = loop {
        tokio::select! {
            Some(mut report) = rx.recv() => {
                report.at = clock.restamp(report.at);
                if let Some(recorder) = recorder.as_mut() {
                    recorder.record_scrape(&report);
                }
                fleet.ingest(report);
                continue;
            }
            Some(report) = next_derived(&mut derived) => {
                if let Some(recorder) = recorder.as_mut() {
                    recorder.record_source(clock.now(), &report);
                }
                fleet.ingest_source(report);
                continue;
            }
            Some(update) = next_update(&mut kube) => {
                if let Some(feed) = kube.as_mut() {
                    let recorded = recorder.is_some().then(|| update.clone());
                    feed.apply(&mut fleet, update);
                    if let (Some(recorder), Some(update)) = (recorder.as_mut(), recorded) {
                        let change = crate::record::change_of(update, &fleet, feed.pods());
                        recorder.record_kube(&fleet, clock.now(), vec![change], Vec::new);
                    }
                }
                continue;
            }
            _ = ticker.tick() => {}
        }
        let now = clock.now();
        fleet.tick(now);
        let all_tried = fleet.targets().iter().all(|t| t.last_attempt.is_some());
        if !all_tried && now < tried_by {
            continue;
        }
        #[cfg(feature = "demo")]
        if let Some(poller) = poller.as_mut() {
            let fresh = poller.collect();
            if let Some(recorder) = recorder.as_mut() {
                recorder.record(&Record::Logs {
                    at: now,
                    lines: fresh.clone(),
                });
            }
            for (target, lines) in fresh {
                logs.extend(target, lines);
            }
            logs.prune(now);
        }
        if let Some(recorder) = recorder.as_mut() {
            recorder.observe(&fleet, Some(now), now);
            recorder.flush();
        }
        parts.refresh(&fleet);
        let cycle_inputs = inputs::engine_inputs(&fleet, &parts, &logs);
        let start = *started.get_or_insert(now);
        if length.is_none() {
            let answered = fleet.targets().iter().any(|t| t.last_ok.is_some());
            let auto = if answered {
                plan::auto_duration(rules, &cycle_inputs, interval, settings.auto_cap)
            } else {
                // Nothing answered the first round: two more tries, not minutes of waiting.
                DurationPlan {
                    secs: 2.0 * interval,
                    longest: None,
                    beyond: Vec::new(),
                }
            };
            length = Some(auto.secs);
            plan_made = Some(auto);
        }
        if cycles == 0 {
            progress.planned(length.unwrap_or(0.0), plan_made.as_ref(), scale);
        }
        let findings = engine.evaluate(&cycle_inputs, now);
        progress.evaluated(now, findings);
        cycles += 1;
        if now - start >= length.unwrap_or(0.0) && now >= hold_until {
            break (findings.to_vec(), now);
        }
    };
    drop(kube);
    if let Some(mut recorder) = recorder {
        recorder.finish();
    }
    let any_scraped = fleet.targets().iter().any(|t| t.last_ok.is_some());
    Observation {
        fleet,
        findings,
        logs,
        started: started.unwrap_or(ended),
        ended,
        interval,
        time_scale: scale,
        plan: plan_made,
        cycles,
        any_scraped,
        episodes: None,
        actions: Vec::new(),
    }
}

/// Shortest wall-clock scrape interval used against a fast simulator.
pub(crate) const MIN_WALL_INTERVAL: Duration = Duration::from_millis(100);

/// The wall-clock scrape interval that scrapes a simulator running at `time_scale` every
/// `interval` of simulated time, but never more often than [`MIN_WALL_INTERVAL`] (nor less
/// often than `interval`).
pub(crate) fn sim_wall_interval(interval: Duration, time_scale: f64) -> Duration {
    if !(time_scale.is_finite() && time_scale > 1.0) {
        return interval;
    }
    interval
        .div_f64(time_scale)
        .max(MIN_WALL_INTERVAL)
        .min(interval)
}

/// The wall-clock time an observation of `secs` takes at `time_scale`.
pub(crate) fn wall_time(secs: f64, time_scale: f64) -> Duration {
    let wall = secs / time_scale;
    if wall.is_finite() && wall > 0.0 {
        Duration::from_secs_f64(wall)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_simulator_is_scraped_more_often_down_to_a_floor() {
        let second = Duration::from_secs(1);
        assert_eq!(sim_wall_interval(second, 1.0), second);
        assert_eq!(sim_wall_interval(second, 4.0), Duration::from_millis(250));
        assert_eq!(sim_wall_interval(second, 30.0), MIN_WALL_INTERVAL);
        assert_eq!(sim_wall_interval(second, 0.5), second);
        assert_eq!(sim_wall_interval(second, f64::NAN), second);
        assert_eq!(wall_time(300.0, 30.0), Duration::from_secs(10));
        assert_eq!(wall_time(f64::NAN, 30.0), Duration::ZERO);
    }
}
