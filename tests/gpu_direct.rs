//! GPUs from the simulator's dcgm-exporters scraped directly (as `kvtop demo` does): the
//! exporters are recognised as GPU exporters, not engines, and each engine gets the signals of
//! the GPU its pod holds.

use std::time::Duration;

use kvtop::fleet::{EngineStatus, Fleet, FleetSettings, TargetSpec};
use kvtop::sim::{SimConfig, SimVersion};
use kvtop::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcgm_exporters_feed_the_engines_gpu_signals() {
    let sim = kvtop::sim::start(SimConfig {
        engines: 4,
        version: SimVersion::V1,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let settings = ScrapeSettings {
        interval: Duration::from_millis(300),
        timeout: Duration::from_millis(250),
        body_limit: 8 * 1024 * 1024,
        user_agent: "kvtop-test".into(),
    };
    let mut fleet = Fleet::new(FleetSettings {
        interval: 0.3,
        ..FleetSettings::default()
    });
    let targets: Vec<ScrapeTarget> = sim
        .engines
        .iter()
        .chain(&sim.dcgm)
        .map(|e| ScrapeTarget {
            id: fleet.add_target(TargetSpec {
                name: e.name.clone(),
                url: e.url.clone(),
            }),
            url: e.url.clone(),
            bearer_token: None,
        })
        .collect();
    let exporter = targets.last().map(|t| t.id).expect("an exporter");
    let (tx, mut rx) = mpsc::channel(256);
    let client = build_client(&settings).expect("client");
    let _scrapers = Scrapers::start(client, settings, targets, tx);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let done = |fleet: &Fleet| {
        fleet.is_gpu_exporter(exporter)
            && fleet
                .engines()
                .iter()
                .filter(|r| r.status == EngineStatus::Up && !fleet.is_gpu_exporter(r.target))
                .all(|r| r.signals.gpu_util.is_some())
            && fleet.counts().up == 3
    };
    while !done(&fleet) {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(kvtop::app::Event::Scrape(report))) => fleet.ingest(report),
            Ok(_) => {}
            Err(_) => panic!("GPU signals never arrived: {:#?}", fleet.engines()),
        }
    }
    // One node of 8 GPUs; four pods hold one each (the down engine's pod too).
    assert_eq!(sim.dcgm.len(), 1);
    assert_eq!(fleet.gpu_count(), 8);
    // The exporter is no engine: 3 serving engines Up, the down one Down, nothing else.
    let counts = fleet.counts();
    assert_eq!((counts.up, counts.down), (3, 1));
    for (row, endpoint) in fleet.engines().iter().zip(&sim.engines) {
        assert_eq!(row.name, endpoint.name);
        let gpus: Vec<&str> = fleet
            .gpus_of(row.target)
            .map(|g| g.key.gpu.as_str())
            .collect();
        let index = endpoint.gpu.map(|g| g.to_string()).unwrap_or_default();
        assert_eq!(gpus, [index.as_str()], "{}", row.name);
    }
    let serving = &fleet.engines()[1];
    let mem = serving.signals.gpu_mem.expect("memory share");
    assert!((0.85..0.95).contains(&mem), "{mem}");
    assert!(serving.signals.gpu_temp.is_some());
    assert!(serving.signals.gpu_power.is_some());
    sim.shutdown().await;
}
