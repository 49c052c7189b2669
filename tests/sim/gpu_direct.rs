//! GPUs from the simulator's dcgm-exporters scraped directly (as `kvtop demo` does): the
//! exporters are recognised as GPU exporters, not engines, and each engine gets the signals of
//! the GPU its pod holds.

use std::time::Duration;

use kvtop::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use kvtop_core::fleet::{EngineStatus, Fleet, FleetSettings, TargetSpec};
use kvtop_sim::{SimConfig, SimVersion};
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcgm_exporters_feed_the_engines_gpu_signals() {
    let sim = kvtop_sim::start(SimConfig {
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
        limits: Default::default(),
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
    let _scrapers = Scrapers::start(client, settings, targets, kvtop::sources::Outbox::new(tx));

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

/// The simulator's DCGM body read with kvtop's own parser.
async fn gpus_of(url: &str) -> Vec<kvtop_core::engine::GpuSample> {
    let settings = ScrapeSettings {
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        body_limit: 8 * 1024 * 1024,
        user_agent: "kvtop-test".into(),
        limits: Default::default(),
    };
    let client = build_client(&settings).expect("client");
    let target = ScrapeTarget {
        id: kvtop_core::fleet::TargetId(0),
        url: url.to_owned(),
        bearer_token: None,
    };
    kvtop::sources::scrape_once(&client, &target, &settings)
        .await
        .expect("DCGM scrape")
        .gpus
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_fault_scenarios_show_in_the_dcgm_exporter() {
    use kvtop_sim::{EngineRef, Scenario};
    // 600× time: the faulty GPU's temperature settles within a second of wall time.
    let sim = kvtop_sim::start(SimConfig {
        engines: 4,
        time_scale: 600.0,
        scenarios: vec![
            "gpu-low-util@0".parse().expect("valid"),
            "gpu-thermal@1".parse().expect("valid"),
            "xid:48@2".parse().expect("valid"),
        ],
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let url = sim
        .dcgm
        .first()
        .map(|d| d.url.clone())
        .expect("an exporter");
    let _ = gpus_of(&url).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let gpus = gpus_of(&url).await;
    let gpu = |i: usize| gpus.get(i).cloned().expect("GPU");
    assert!(gpu(0).util_pct.is_some_and(|u| u <= 12.0), "{:?}", gpu(0));
    // Cooling failed: at the 690 W cap, heading for 95 °C, throttled to 1410 MHz.
    assert_eq!(gpu(1).power_w, Some(690.0));
    assert!(gpu(1).temp_c.is_some_and(|t| t >= 90.0), "{:?}", gpu(1));
    assert_eq!(gpu(1).sm_clock_mhz, Some(1410.0));
    assert_eq!(gpu(2).xid, Some(48.0));
    assert_eq!(gpu(3).xid, Some(0.0));
    // While running: XID 79 on engine 3 (by name), and engine 2's XID cleared.
    let name = sim
        .engines
        .get(3)
        .map(|e| e.name.clone())
        .expect("engine 3");
    sim.apply_gpu_scenario(&EngineRef::Name(name), Scenario::GpuXid(79))
        .expect("engine 3 exists");
    sim.apply_gpu_scenario(&EngineRef::Index(2), Scenario::Healthy)
        .expect("engine 2 exists");
    assert!(
        sim.apply_gpu_scenario(&EngineRef::Index(7), Scenario::Healthy)
            .is_err()
    );
    let gpus = gpus_of(&url).await;
    assert_eq!(gpus.get(3).and_then(|g| g.xid), Some(79.0));
    assert_eq!(gpus.get(2).and_then(|g| g.xid), Some(0.0));
    sim.shutdown().await;
}
