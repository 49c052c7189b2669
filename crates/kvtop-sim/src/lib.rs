//! The simulated fleet: vLLM engines and DCGM exporters served over real HTTP on 127.0.0.1.
//!
//! [`start`] lays out the fleet ([`fleet::plan`]), gives every engine and every node's
//! dcgm-exporter its own listener, and returns a [`SimHandle`] listing the endpoints. The
//! traffic model ([`model`]), GPU physics ([`gpu`]), pods with their logs and lifecycle
//! ([`pod`], [`logs`]) and renderers ([`exposition`], [`dcgm`]) are pure; [`server`],
//! [`control`] and [`schedule`] do I/O. Models advance lazily when scraped (or when their log
//! is read), by simulated time that runs `time_scale` times faster than the wall clock.
//!
//! # Scenarios
//! Each engine is in one [`Scenario`] (`kvtop sim --scenario NAME@ENGINE[+DELAY]`): the
//! composition of [`SimConfig::baseline`], then [`SimConfig::scenarios`] and the entries of
//! [`SimConfig::schedule`] due at the start, then the later schedule entries as their time
//! comes; [`SimHandle::set_scenario`] changes one at any time. [`Scenario::rule`] names the
//! rule each diagnostics scenario triggers; [`schedule::demo_story`] is the demo's script.
//!
//! # Logs
//! Every pod writes vLLM's log lines ([`logs`]); read them with [`SimHandle::log_tail`] /
//! [`SimHandle::log_since`], or from another task through a [`SimControl`] clone
//! ([`SimHandle::control`]).

pub mod buckets;
pub mod control;
pub mod dcgm;
pub mod exposition;
pub mod fleet;
pub mod format;
pub mod gpu;
pub mod histogram;
pub mod kube;
pub mod logs;
pub mod model;
pub mod params;
pub mod pod;
pub mod sampling;
pub mod scenario_params;
pub mod schedule;
mod server;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use buckets::SimVersion;
pub use control::SimControl;
pub use fleet::{EngineRef, Scenario, ScenarioAssignment};
pub use logs::LogLine;
pub use pod::PodLifecycle;
pub use schedule::{TimedScenario, demo_story};

use gpu::GpuModel;
use pod::SimPod;
use server::{EngineSite, GpuSource, NodeSite, SimClock};

/// How to run the simulated fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Number of vLLM engines (pods).
    pub engines: usize,
    /// Engine `i` listens on `port_base + i` and node `n`'s dcgm-exporter on
    /// `port_base + engines + n`; `None` uses ephemeral ports.
    pub port_base: Option<u16>,
    /// Metrics dialect of every engine.
    pub version: SimVersion,
    /// Seed of every random choice (names, traffic); the same seed gives the same fleet.
    pub seed: u64,
    /// Simulated seconds per wall-clock second.
    pub time_scale: f64,
    /// GPUs per node (one engine per GPU).
    pub gpus_per_node: usize,
    /// Scenarios for given engines, over the baseline composition.
    pub scenarios: Vec<ScenarioAssignment>,
    /// What every engine does before `scenarios` and `schedule` apply.
    pub baseline: Baseline,
    /// Scenarios that start later (or at once, with a zero delay).
    pub schedule: Vec<TimedScenario>,
}

/// The fleet's composition before any assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Baseline {
    /// From three engines: engine 0 under KV pressure, the last one down, the others healthy
    /// (`fleet::scenario_for`).
    #[default]
    Mixed,
    /// Every engine healthy.
    Healthy,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            engines: 10,
            port_base: None,
            version: SimVersion::V1,
            seed: 1,
            time_scale: 1.0,
            gpus_per_node: 8,
            scenarios: Vec::new(),
            baseline: Baseline::Mixed,
            schedule: Vec::new(),
        }
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the simulated fleet needs at least one engine")]
    NoEngines,
    #[error("time scale must be a finite number above zero, got {0}")]
    InvalidTimeScale(f64),
    #[error("ports {base}..{base}+{count} do not fit below 65536")]
    PortRange { base: u16, count: usize },
    #[error(
        "cannot open {endpoints} listeners: the open-file limit is too low (raise it with `ulimit -n`): {source}"
    )]
    FileLimit {
        endpoints: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("scenario: {0}")]
    Scenario(String),
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
}

/// One simulated HTTP endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct SimEndpoint {
    /// Pod name (`vllm-llama-8b-6d4f9-x7k2p`, `dcgm-exporter-x7k2p`).
    pub name: String,
    /// `http://127.0.0.1:PORT/metrics`.
    pub url: String,
    /// Node the pod runs on.
    pub node: String,
    /// GPU index on the node, for an engine.
    pub gpu: Option<u32>,
    /// Served model id for an engine; GPU model for a dcgm-exporter.
    pub model: String,
    /// True when the endpoint refuses connections.
    pub down: bool,
    /// What the simulation does with this endpoint (`Healthy` for dcgm-exporters).
    pub scenario: Scenario,
}

/// A running simulator. Dropping it stops the servers in the background; [`SimHandle::shutdown`]
/// stops them and waits until every port is released.
pub struct SimHandle {
    /// vLLM engines, in index order.
    pub engines: Vec<SimEndpoint>,
    /// dcgm-exporters, one per node.
    pub dcgm: Vec<SimEndpoint>,
    /// The engines, for scenarios applied while running and for their logs.
    control: SimControl,
    clock: Arc<SimClock>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<std::io::Result<()>>>,
    /// The layout and engine ports, for the simulated Kubernetes API.
    plan: fleet::FleetPlan,
    version: SimVersion,
    engine_ports: Vec<u16>,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle")
            .field("engines", &self.engines)
            .field("dcgm", &self.dcgm)
            .finish_non_exhaustive()
    }
}

impl SimHandle {
    /// Current simulated time, seconds since the Unix epoch.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Change engine `index`'s arrival rate (requests per simulated second) from now on, e.g.
    /// to overload it while the fleet runs. The engine is first brought up to the current
    /// simulated time, so the new rate applies from now, not retroactively. False when there
    /// is no engine `index`.
    pub fn set_arrival_rate(&self, index: usize, rate: f64) -> bool {
        self.control.set_arrival_rate(index, rate)
    }

    /// Simulated seconds per wall-clock second.
    pub fn time_scale(&self) -> f64 {
        self.clock.time_scale()
    }

    /// The simulated time at wall-clock Unix time `wall`.
    pub fn sim_time_at(&self, wall: f64) -> f64 {
        self.clock.sim_time_at(wall)
    }

    /// A handle on the running engines for other tasks: scenarios, lifecycles, logs.
    pub fn control(&self) -> SimControl {
        self.control.clone()
    }

    /// Apply the GPU side of `scenario` to a running engine's GPU (fault and XID; `healthy`
    /// clears them), leaving its traffic as it is.
    pub fn apply_gpu_scenario(
        &self,
        engine: &EngineRef,
        scenario: Scenario,
    ) -> Result<(), SimError> {
        self.control.apply_gpu_scenario(engine, scenario)
    }

    /// Switch a running engine to `scenario` now (traffic, engine, GPU and lifecycle).
    pub fn set_scenario(&self, engine: &EngineRef, scenario: Scenario) -> Result<(), SimError> {
        self.control.set_scenario(engine, scenario)
    }

    /// The last `n` log lines of engine `engine` (an index into `engines`), oldest first.
    pub fn log_tail(&self, engine: usize, n: usize) -> Vec<LogLine> {
        self.control.log_tail(engine, n)
    }

    /// Engine `engine`'s log lines from `cursor` on (start with 0) and the next cursor.
    pub fn log_since(&self, engine: usize, cursor: u64) -> (Vec<LogLine>, u64) {
        self.control.log_since(engine, cursor)
    }

    /// Stop every server and wait until they have released their ports.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            if let Ok(Err(e)) = task.await {
                tracing::warn!(error = %e, "simulated endpoint stopped with an error");
            }
        }
    }

    /// One line per endpoint: name, model, node, URL, and a note for the unusual ones.
    pub fn describe(&self) -> Vec<String> {
        let all = self.engines.iter().chain(&self.dcgm);
        let name_w = all.clone().map(|e| e.name.len()).max().unwrap_or(0);
        let model_w = all.clone().map(|e| e.model.len()).max().unwrap_or(0);
        let place = |e: &SimEndpoint| match e.gpu {
            Some(gpu) => format!("{}/gpu{gpu}", e.node),
            None => e.node.clone(),
        };
        let place_w = all.clone().map(|e| place(e).len()).max().unwrap_or(0);
        all.map(|e| {
            let line = format!(
                "{:name_w$}  {:model_w$}  {:place_w$}  {}",
                e.name,
                e.model,
                place(e),
                e.url
            );
            match e.scenario.note() {
                Some(note) => format!("{line}  ({note})"),
                None => line,
            }
        })
        .collect()
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Start the simulated fleet on 127.0.0.1.
pub async fn start(cfg: SimConfig) -> Result<SimHandle, SimError> {
    if cfg.engines == 0 {
        return Err(SimError::NoEngines);
    }
    if !(cfg.time_scale.is_finite() && cfg.time_scale > 0.0) {
        return Err(SimError::InvalidTimeScale(cfg.time_scale));
    }
    let mut plan = fleet::plan(cfg.engines, cfg.gpus_per_node, cfg.version, cfg.seed);
    if cfg.baseline == Baseline::Healthy {
        for index in 0..plan.engines.len() {
            let healthy = plan
                .engines
                .get(index)
                .is_some_and(|e| e.scenario == Scenario::Healthy);
            if !healthy {
                fleet::apply_scenario(
                    &mut plan,
                    &EngineRef::Index(index),
                    Scenario::Healthy,
                    cfg.version,
                )
                .map_err(SimError::Scenario)?;
            }
        }
    }
    let (at_start, later): (Vec<&TimedScenario>, Vec<&TimedScenario>) =
        cfg.schedule.iter().partition(|t| t.after_s <= 0.0);
    let initial = cfg
        .scenarios
        .iter()
        .chain(at_start.iter().map(|t| &t.assignment));
    for assignment in initial {
        fleet::apply_scenario(
            &mut plan,
            &assignment.engine,
            assignment.scenario,
            cfg.version,
        )
        .map_err(SimError::Scenario)?;
    }
    for timed in &later {
        if timed.assignment.engine.resolve(&plan).is_none() {
            return Err(SimError::Scenario(format!(
                "{timed}: the fleet has no such engine ({} engines)",
                plan.engines.len()
            )));
        }
    }
    let endpoint_count = plan.engines.len() + plan.nodes.len();
    if let Some(base) = cfg.port_base {
        if usize::from(base) + endpoint_count > usize::from(u16::MAX) + 1 || base == 0 {
            return Err(SimError::PortRange {
                base,
                count: endpoint_count,
            });
        }
    }
    let port_of = |offset: usize| cfg.port_base.map_or(0, |b| b + offset as u16);

    let clock = Arc::new(SimClock::start(cfg.time_scale));
    let (stop, stop_rx) = watch::channel(false);
    let mut tasks = Vec::with_capacity(endpoint_count);
    let mut engines = Vec::with_capacity(plan.engines.len());
    let mut sites: Vec<Arc<EngineSite>> = Vec::with_capacity(plan.engines.len());
    let mut engine_ports = Vec::with_capacity(plan.engines.len());

    for spec in &plan.engines {
        let node = plan.nodes.get(spec.node);
        let node_name = node.map(|n| n.name.clone()).unwrap_or_default();
        let gpu_spec = node.map_or(gpu::H100_SXM, |n| n.gpu.clone());
        let pod = SimPod::new(spec.clone(), gpu_spec, clock.sim_start());
        let serving = pod.serving;
        let site = Arc::new(EngineSite::new(pod, Arc::clone(&clock)));
        let (port, listener) = if serving {
            let listener = bind(port_of(spec.index), endpoint_count).await?;
            (local_port(&listener), Some(listener))
        } else {
            (refused_port(port_of(spec.index))?, None)
        };
        tasks.push(server::spawn_engine_server(
            Arc::clone(&site),
            port,
            listener,
            stop_rx.clone(),
        ));
        sites.push(Arc::clone(&site));
        engine_ports.push(port);
        engines.push(SimEndpoint {
            name: spec.pod.clone(),
            url: metrics_url(port),
            node: node_name,
            gpu: Some(spec.gpu),
            model: spec.model.id.to_owned(),
            down: !serving,
            scenario: spec.scenario,
        });
    }

    let mut dcgm = Vec::with_capacity(plan.nodes.len());
    for node in &plan.nodes {
        let gpus = node
            .gpus
            .iter()
            .map(|slot| match slot.engine.and_then(|i| sites.get(i)) {
                Some(site) => GpuSource::Pod(Arc::clone(site)),
                None => GpuSource::Idle(Mutex::new(GpuModel::new(
                    node.gpu.clone(),
                    clock.sim_start(),
                ))),
            })
            .collect();
        let listener = bind(port_of(plan.engines.len() + node.index), endpoint_count).await?;
        let port = local_port(&listener);
        let site = Arc::new(NodeSite::new(node.clone(), gpus, Arc::clone(&clock)));
        tasks.push(server::spawn_server(
            listener,
            server::dcgm_router(site),
            stop_rx.clone(),
        ));
        dcgm.push(SimEndpoint {
            name: node.exporter_pod.clone(),
            url: metrics_url(port),
            node: node.name.clone(),
            gpu: None,
            model: node.gpu.name.to_owned(),
            down: false,
            scenario: Scenario::Healthy,
        });
    }

    let names = engines.iter().map(|e| e.name.clone()).collect();
    let control = SimControl::new(sites, names, Arc::clone(&clock));
    if !later.is_empty() {
        let schedule = later.into_iter().cloned().collect();
        tasks.push(schedule::spawn_director(
            control.clone(),
            schedule,
            stop_rx.clone(),
        ));
    }
    Ok(SimHandle {
        engines,
        dcgm,
        control,
        clock,
        stop,
        tasks,
        plan,
        version: cfg.version,
        engine_ports,
    })
}

fn metrics_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/metrics")
}

async fn bind(port: u16, endpoints: usize) -> Result<TcpListener, SimError> {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .map_err(|source| bind_error(port, endpoints, source))
}

fn bind_error(port: u16, endpoints: usize, source: std::io::Error) -> SimError {
    if source.raw_os_error() == Some(libc::EMFILE) {
        SimError::FileLimit { endpoints, source }
    } else {
        SimError::Bind { port, source }
    }
}

fn local_port(listener: &TcpListener) -> u16 {
    listener.local_addr().map_or(0, |a| a.port())
}

/// A port nothing listens on: the given one, or for 0 an ephemeral port bound and released.
fn refused_port(port: u16) -> Result<u16, SimError> {
    if port != 0 {
        return Ok(port);
    }
    let probe = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(|source| SimError::Bind { port, source })?;
    // Released at once: connecting to it is refused, as with a pod that is not serving.
    let port = probe.local_addr().map_or(0, |a| a.port());
    drop(probe);
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_file_descriptors_is_named_as_such() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert!(matches!(
            bind_error(8000, 1125, emfile),
            SimError::FileLimit {
                endpoints: 1125,
                ..
            }
        ));
        let in_use = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        assert!(matches!(
            bind_error(8000, 3, in_use),
            SimError::Bind { port: 8000, .. }
        ));
    }

    #[test]
    fn default_config_is_a_small_v1_fleet_in_real_time() {
        let cfg = SimConfig::default();
        assert_eq!(cfg.version, SimVersion::V1);
        assert_eq!(cfg.time_scale, 1.0);
        assert_eq!(cfg.gpus_per_node, 8);
        assert!(
            cfg.engines >= 3,
            "the default shows the pressured and the down engine"
        );
        assert_eq!(cfg.port_base, None);
    }
}
