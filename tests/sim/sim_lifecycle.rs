//! Simulated pods that crash, restart and change scenario while the simulator runs, seen over
//! real HTTP on 127.0.0.1, and their logs.

use std::time::Duration;

use kvtop_sim::{Baseline, EngineRef, Scenario, SimConfig, SimHandle, TimedScenario};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("HTTP client")
}

/// `Ok(generation tokens so far)` when the endpoint answers, `Err(true)` when it refuses.
async fn scrape(url: &str) -> Result<f64, bool> {
    match client().get(url).send().await {
        Ok(resp) if resp.status() == 200 => {
            let body = resp.text().await.map_err(|_| false)?;
            body.lines()
                .find(|l| l.starts_with("vllm:generation_tokens_total{"))
                .and_then(|l| l.rsplit_once(' '))
                .and_then(|(_, v)| v.parse().ok())
                .ok_or(false)
        }
        Ok(_) => Err(false),
        Err(err) => Err(err.is_connect()),
    }
}

/// Poll every 20 ms until `done` holds for a scrape result, for at most `limit`.
async fn poll_until(url: &str, limit: Duration, done: impl Fn(&Result<f64, bool>) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if done(&scrape(url).await) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn start(engines: usize, time_scale: f64, schedule: &[&str]) -> SimHandle {
    kvtop_sim::start(SimConfig {
        engines,
        time_scale,
        seed: 11,
        baseline: Baseline::Healthy,
        schedule: schedule.iter().map(|s| s.parse().expect("valid")).collect(),
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_looping_engine_refuses_then_comes_back_with_counters_from_zero() {
    // 20× time: the first crash after 20 simulated seconds is one wall second away, the
    // endpoint then refuses for 8 simulated seconds (0.4 s) before the engine restarts.
    let sim = start(2, 20.0, &["oom-crashloop@0"]).await;
    let url = sim.engines[0].url.clone();
    // Scrape until the endpoint refuses, remembering the last count before the crash.
    let mut before = f64::NAN;
    let mut refused = false;
    for _ in 0..250 {
        match scrape(&url).await {
            Ok(tokens) => before = tokens,
            Err(true) => {
                refused = true;
                break;
            }
            Err(false) => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "the endpoint starts refusing after the crash");
    let life = sim.control().lifecycle(0).expect("engine 0");
    assert!(!life.serving);
    assert!(
        life.last_exit
            .is_some_and(|e| e.message.contains("CUDA out of memory"))
    );
    assert!(
        poll_until(&url, Duration::from_secs(5), |r| r.is_ok()).await,
        "the endpoint answers again"
    );
    let after = scrape(&url).await.unwrap_or(f64::NAN);
    // A fresh process: its counter starts again from zero, below the ~20 simulated seconds
    // of tokens counted before the crash.
    assert!(after < before, "{after} vs {before}");
    assert_eq!(sim.control().lifecycle(0).map(|l| l.restarts), Some(1));
    let log: Vec<String> = sim.log_tail(0, 200).into_iter().map(|l| l.text).collect();
    assert!(log.iter().any(|l| {
        l.contains("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    }));
    assert!(log.last().is_some_and(
        |l| l.contains("Application startup complete") || l.contains("Avg prompt throughput")
    ));
    // The healthy neighbour never stopped.
    assert!(scrape(&sim.engines[1].url).await.is_ok());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_scenarios_apply_while_running_and_logs_page_with_a_cursor() {
    // At 50× time, +10s is a fifth of a wall second.
    let sim = start(3, 50.0, &["down@1+10s", "healthy@1+40s"]).await;
    let url = sim.engines[1].url.clone();
    assert!(scrape(&url).await.is_ok());
    assert!(poll_until(&url, Duration::from_secs(5), |r| *r == Err(true)).await);
    assert_eq!(sim.control().scenario_of(1), Some(Scenario::Down));
    assert!(poll_until(&url, Duration::from_secs(5), |r| r.is_ok()).await);
    assert_eq!(sim.control().scenario_of(1), Some(Scenario::Healthy));

    let (first, cursor) = sim.log_since(0, 0);
    assert!(
        first
            .iter()
            .any(|l| l.text.contains("vLLM API server version"))
    );
    tokio::time::sleep(Duration::from_millis(500)).await; // 25 simulated seconds
    let (more, next) = sim.log_since(0, cursor);
    assert!(next > cursor);
    assert!(more.iter().all(|l| l.seq >= cursor));
    assert!(
        more.iter()
            .any(|l| l.text.contains("Avg generation throughput"))
    );
    // Setting a scenario by pod name at run time.
    let name = sim.engines[2].name.clone();
    sim.set_scenario(&EngineRef::Name(name), Scenario::HighCpu)
        .expect("engine exists");
    assert_eq!(sim.control().scenario_of(2), Some(Scenario::HighCpu));
    assert!(
        sim.set_scenario(&EngineRef::Index(9), Scenario::Healthy)
            .is_err()
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_schedule_naming_a_missing_engine_is_refused_at_start() {
    let timed: TimedScenario = "kv-thrash@7+10s".parse().expect("valid");
    let err = kvtop_sim::start(SimConfig {
        engines: 3,
        schedule: vec![timed],
        ..SimConfig::default()
    })
    .await
    .expect_err("engine 7 does not exist");
    assert!(err.to_string().contains("kv-thrash@7+10s"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_empty_worker_trap_idles_the_other_engines_of_its_model() {
    let sim = start(6, 10.0, &["empty-worker-trap@2"]).await;
    // Engines 0, 2, 4 serve the first model, 1, 3, 5 the second.
    let scenarios: Vec<Option<Scenario>> = (0..6).map(|i| sim.control().scenario_of(i)).collect();
    assert_eq!(
        scenarios,
        [
            Some(Scenario::Idle),
            Some(Scenario::Healthy),
            Some(Scenario::EmptyWorkerTrap),
            Some(Scenario::Healthy),
            Some(Scenario::Idle),
            Some(Scenario::Healthy),
        ]
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_feed_fills_the_recent_lines_of_each_engine_target() {
    use kvtop::app::Event;
    use kvtop::diagnose::{SimLogFeed, SimLogPoller, TargetLogs};
    use kvtop_core::fleet::{Fleet, FleetSettings, TargetSpec};

    let sim = start(3, 20.0, &["oom-crashloop@1"]).await;
    let mut fleet = Fleet::new(FleetSettings::default());
    // Targets added in reverse order: the feed matches them by URL, not by position.
    let ids: Vec<_> = sim
        .engines
        .iter()
        .rev()
        .map(|e| {
            fleet.add_target(TargetSpec {
                name: e.name.clone(),
                url: e.url.clone(),
            })
        })
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let feed = SimLogFeed::start(
        SimLogPoller::matching(sim.control(), &sim.engines, &fleet),
        Duration::from_millis(100),
        kvtop::sources::Outbox::new(tx),
    );
    // 20 simulated seconds: the first crash of engine 1 is due, throughput lines are written.
    let mut logs = TargetLogs::default();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1_300);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        let Event::Logs(batch) = event else {
            panic!("the feed sends only log lines");
        };
        for (target, lines) in batch {
            logs.extend(target, lines);
        }
    }
    for id in &ids {
        let lines = logs.get(*id).expect("every engine target has a stream");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("Application startup complete"))
        );
    }
    // Engine 1 is the second added from the end: ids[1].
    let crashed = logs.get(ids[1]).unwrap_or_default();
    assert!(
        crashed.iter().any(|l| l.contains("CUDA out of memory")),
        "{crashed:?}"
    );
    drop(feed);
    sim.shutdown().await;
}
