//! A small Kubernetes API server for the simulated fleet, on 127.0.0.1, that the real
//! `kube::Client` talks to.
//!
//! Each simulated engine is a pod in namespace `llm`, owned by a ReplicaSet of its model's
//! Deployment (`vllm-llama-8b`, `vllm-qwen-7b`). Pod labels: `app.kubernetes.io/name=vllm`,
//! `app.kubernetes.io/component=serving-engine`, `model=llama-8b`, `pod-template-hash=…` and the
//! routing label `kvtop.dev/serving=true`, which each model's Service selects on. The pod IP is
//! 127.0.0.1 and the engine's port is the container port named `http`; the vLLM arguments are in
//! the container spec. The down engine's pod crash-loops on a CUDA OOM with
//! `--enable-chunked-prefill --max-num-batched-tokens 16384`; the first healthy engine runs with
//! `OMP_NUM_THREADS=32`; the pressured engine's last container was OOMKilled.
//!
//! Mutations act on the simulation: removing the routing label stops new requests to the engine
//! (its arrival rate goes to 0 and it drains); deleting or evicting a pod stops its engine and
//! the ReplicaSet starts a replacement (new name) that restarts it with fresh counters; a changed
//! `kubectl.kubernetes.io/restartedAt` template annotation rolls the Deployment one pod at a
//! time; `spec.unschedulable` cordons a node (replacements on it stay Pending). A serving pod's
//! container is its engine's process: `pods/log` serves the engine's own lines
//! ([`crate::logs`]), and an engine that crashes (the `oom-crashloop` scenario) restarts
//! the pod's container (restart count, last state, `previous=true` log). Evictions honour
//! each Deployment's PDB (`minAvailable: 2`, else 429); HPAs (`min = max = replicas`, one GPU
//! per engine) report average `vllm:num_requests_waiting` against 50.
//!
//! Every request is recorded and can be made to fail ([`FaultRule`]); RBAC denials
//! ([`Denial`]) answer 403 and make SelfSubjectAccessReviews say no.
//!
//! It speaks Kubernetes the way the real kubectl expects (the tests drive kubectl 1.27–1.33):
//! discovery from one catalog ([`kinds`]), request bodies in JSON or protobuf ([`wire`]),
//! server-side tables ([`table`]), watches from a change journal in which every write gets a
//! new resource version ([`watch`]), EndpointSlices, `deployments/scale`, and the access, rules
//! and identity reviews.

pub mod cluster;
mod discovery;
pub mod engines;
pub mod faults;
pub mod kinds;
pub mod lifecycle;
pub mod objects;
pub mod patch;
mod routes;
pub mod status;
mod table;
mod watch;
mod wire;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub use cluster::{ClusterConfig, Denial, ModelRouting};
pub use faults::{Fault, FaultRule, RecordedRequest};
pub use lifecycle::Timings;

use super::{SimError, SimHandle};
use cluster::Cluster;
use engines::EngineLink;
use faults::Control;
use routes::Shared;

/// How to run the simulated API.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeSimConfig {
    pub cluster: ClusterConfig,
    /// Port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// Wall-clock period of the controllers (they also run before every request).
    pub tick: Duration,
}

impl Default for KubeSimConfig {
    fn default() -> Self {
        KubeSimConfig {
            cluster: ClusterConfig::default(),
            port: 0,
            tick: Duration::from_millis(500),
        }
    }
}

/// The running simulated API. Dropping it stops the server; [`KubeSimHandle::shutdown`] also
/// waits for it.
pub struct KubeSimHandle {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Namespace of the simulated workloads.
    pub namespace: String,
    shared: Arc<Shared>,
    control: Arc<Control>,
    stop: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for KubeSimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeSimHandle")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Start the simulated API for a running simulated fleet.
pub async fn start(sim: &SimHandle, cfg: KubeSimConfig) -> Result<KubeSimHandle, SimError> {
    let engines = EngineLink::new(sim.control.sites().to_vec(), Arc::clone(&sim.clock));
    let now = engines.now();
    let seed = sim.plan.engines.first().map_or(0, |e| e.seed);
    let namespace = cfg.cluster.namespace.clone();
    let cluster = Cluster::new(
        &sim.plan,
        &sim.engine_ports,
        sim.version,
        cfg.cluster,
        seed,
        now,
    );
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, cfg.port)))
        .await
        .map_err(|source| SimError::Bind {
            port: cfg.port,
            source,
        })?;
    let port = listener.local_addr().map_or(0, |a| a.port());
    let (stop, stop_rx) = signal::channel(false);
    let http = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| SimError::Bind {
            port,
            source: std::io::Error::other(e),
        })?;
    let (changes, _) = signal::channel(0);
    let shared = Arc::new(Shared {
        cluster: Mutex::new(cluster),
        engines,
        http,
        stop: stop_rx.clone(),
        changes,
    });
    let control = Arc::new(Control::default());
    let app = routes::router(Arc::clone(&shared)).layer(axum::middleware::from_fn_with_state(
        Arc::clone(&control),
        faults::record_and_inject,
    ));

    let mut server_stop = stop_rx.clone();
    let server = tokio::spawn(async move {
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = server_stop.wait_for(|s| *s).await;
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "simulated Kubernetes API stopped with an error");
        }
    });
    let ticker_shared = Arc::clone(&shared);
    let mut ticker_stop = stop_rx;
    let period = cfg.tick.max(Duration::from_millis(10));
    let ticker = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(period) => ticker_shared.with_cluster(|_, _| ()),
                _ = ticker_stop.wait_for(|s| *s) => break,
            }
        }
    });
    Ok(KubeSimHandle {
        url: format!("http://127.0.0.1:{port}"),
        namespace,
        shared,
        control,
        stop,
        tasks: vec![server, ticker],
    })
}

impl KubeSimHandle {
    /// A `kube::Config` for this API: its URL, the workloads' namespace as default, no
    /// credentials, short timeouts, and no automatic retries (kube-rs retries 429/503/504 by
    /// default, which would hide a PodDisruptionBudget's refusal).
    pub fn client_config(&self) -> Result<kube::Config, String> {
        let uri = self
            .url
            .parse::<axum::http::Uri>()
            .map_err(|e| format!("{}: {e}", self.url))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = self.namespace.clone();
        config.connect_timeout = Some(Duration::from_secs(5));
        config.read_timeout = Some(Duration::from_secs(30));
        config.default_retry = false;
        Ok(config)
    }

    /// A kubeconfig with one context named `context` for this API (JSON, which is valid YAML).
    pub fn kubeconfig_yaml(&self, context: &str) -> String {
        kubeconfig_for(&self.url, &self.namespace, context)
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.control.requests()
    }

    /// Make matching requests fail from now on.
    pub fn inject(&self, rule: FaultRule) {
        self.control.inject(rule);
    }

    pub fn clear_faults(&self) {
        self.control.clear_faults();
    }

    /// Deny a verb on a resource (403 and a negative access review) from now on.
    pub fn deny(&self, denial: Denial) {
        self.shared.with_cluster(|c, _| c.deny(denial));
    }

    pub fn clear_denials(&self) {
        self.shared.with_cluster(|c, _| c.clear_denials());
    }

    /// Advertise `ip` as the pod IP of `engine`'s pods from now on (e.g. `127.0.0.2`, where
    /// nothing listens: the pod network is unreachable but the API server's proxy still works).
    pub fn set_pod_ip(&self, engine: usize, ip: &str) {
        self.shared.with_cluster(|c, _| c.set_pod_ip(engine, ip));
    }

    /// Names of `engine`'s current pods (a replaced pod's successor appears at once).
    pub fn pods_of(&self, engine: usize) -> Vec<String> {
        self.shared.with_cluster(|c, _| c.pods_of(engine))
    }

    /// The stored object of pod `name`, as the API serves it (`None`: no such pod).
    pub fn pod_object(&self, name: &str) -> Option<serde_json::Value> {
        self.shared.with_cluster(|c, _| c.pod_object(name))
    }

    /// The arrival rate an engine currently gets (0 once it is out of routing).
    pub fn arrival_rate(&self, engine: usize) -> Option<f64> {
        self.shared.engines.arrival_rate(engine)
    }

    /// When the engine's current process started (simulated time), `None` while stopped.
    pub fn engine_started_at(&self, engine: usize) -> Option<f64> {
        self.shared.engines.started_at(engine)
    }

    /// Add a line to a pod's current log, timestamped now (tests plant text this way).
    pub fn append_log(&self, pod: &str, line: &str) -> bool {
        self.shared
            .with_cluster(|c, now| c.append_log(pod, now, line))
    }

    /// Stop the server and wait for it.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for KubeSimHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// A kubeconfig naming one cluster at `url` as context `context`, default namespace
/// `namespace`, without credentials. JSON is valid YAML, so kubectl and kube-rs read it as is.
pub(crate) fn kubeconfig_for(url: &str, namespace: &str, context: &str) -> String {
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {}
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}
