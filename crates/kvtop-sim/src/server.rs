//! HTTP side of the simulator: every engine and every node's dcgm-exporter gets its own
//! listener on 127.0.0.1, like pods. Models advance lazily to "now" when scraped (no background
//! ticker, so an idle simulator costs no CPU); an engine's server task only wakes by itself when
//! its pod is due to crash or restart, to close or reopen the listener.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use flate2::Compression;
use flate2::write::GzEncoder;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::dcgm::{self, GpuView, PodRef};
use super::exposition;
use super::fleet::{CONTAINER, NAMESPACE, NodeSpec};
use super::gpu::GpuModel;
use super::pod::SimPod;

/// Content type of the Prometheus text format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Maps wall-clock time to simulated time (seconds since the Unix epoch).
#[derive(Debug)]
pub(crate) struct SimClock {
    wall_start: Instant,
    sim_start: f64,
    time_scale: f64,
}

impl SimClock {
    /// A clock that starts at the current wall time and runs `time_scale` times faster.
    pub(crate) fn start(time_scale: f64) -> Self {
        let sim_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Self {
            wall_start: Instant::now(),
            sim_start,
            time_scale,
        }
    }

    pub(crate) fn sim_start(&self) -> f64 {
        self.sim_start
    }

    /// Simulated seconds per wall-clock second.
    pub(crate) fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// Current simulated time.
    pub(crate) fn now(&self) -> f64 {
        self.sim_start + self.wall_start.elapsed().as_secs_f64() * self.time_scale
    }

    /// The simulated time at wall-clock Unix time `wall` (the clock started at wall time
    /// `sim_start`).
    pub(crate) fn sim_time_at(&self, wall: f64) -> f64 {
        self.sim_start + (wall - self.sim_start) * self.time_scale
    }

    /// Wall-clock time until simulated time `at` (zero when it has passed).
    pub(crate) fn wall_until(&self, at: f64) -> Duration {
        let wall = (at - self.now()) / self.time_scale;
        if wall.is_finite() && wall > 0.0 {
            Duration::from_secs_f64(wall)
        } else {
            Duration::ZERO
        }
    }
}

/// Whether a pod serves, and when it will change by itself: what its server task follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PodPhase {
    pub serving: bool,
    pub next_transition: Option<f64>,
}

impl PodPhase {
    fn of(pod: &SimPod) -> Self {
        PodPhase {
            serving: pod.serving,
            next_transition: pod.next_transition(),
        }
    }
}

/// A pod and the buffer its metrics are rendered into.
struct PodCell {
    pod: SimPod,
    body: String,
}

/// One engine endpoint's shared state.
pub(crate) struct EngineSite {
    cell: Mutex<PodCell>,
    clock: Arc<SimClock>,
    /// The pod's phase after its last change, for the server task.
    phase: watch::Sender<PodPhase>,
}

impl EngineSite {
    pub(crate) fn new(pod: SimPod, clock: Arc<SimClock>) -> Self {
        let (phase, _) = watch::channel(PodPhase::of(&pod));
        Self {
            cell: Mutex::new(PodCell {
                pod,
                body: String::with_capacity(64 * 1024),
            }),
            clock,
            phase,
        }
    }

    /// Run `f` on the pod (to inject a fault; the simulated Kubernetes API restarts, drains and
    /// reads engines), then tell the server task if the pod started or stopped serving.
    pub(crate) fn with_pod<R>(&self, f: impl FnOnce(&mut SimPod) -> R) -> R {
        let mut cell = self.lock();
        let result = f(&mut cell.pod);
        self.publish(&cell.pod);
        result
    }

    /// Run `f` on the pod advanced to the current simulated time.
    pub(crate) fn with_pod_now<R>(&self, f: impl FnOnce(&mut SimPod) -> R) -> R {
        let now = self.clock.now();
        self.with_pod(|pod| {
            pod.advance_to(now);
            f(pod)
        })
    }

    fn publish(&self, pod: &SimPod) {
        let phase = PodPhase::of(pod);
        self.phase.send_if_modified(|current| {
            let changed = *current != phase;
            *current = phase;
            changed
        });
    }

    fn lock(&self) -> MutexGuard<'_, PodCell> {
        // A panic while holding the lock cannot leave the model half-written in a way that
        // matters more than losing the endpoint, so keep serving.
        self.cell.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a node's GPU readings come from.
pub(crate) enum GpuSource {
    /// The GPU a pod runs on.
    Pod(Arc<EngineSite>),
    /// A GPU no pod holds.
    Idle(Mutex<GpuModel>),
}

/// One dcgm-exporter endpoint's shared state.
pub(crate) struct NodeSite {
    node: NodeSpec,
    gpus: Vec<GpuSource>,
    body: Mutex<String>,
    clock: Arc<SimClock>,
}

impl NodeSite {
    pub(crate) fn new(node: NodeSpec, gpus: Vec<GpuSource>, clock: Arc<SimClock>) -> Self {
        Self {
            node,
            gpus,
            body: Mutex::new(String::with_capacity(16 * 1024)),
            clock,
        }
    }
}

/// Routes of a vLLM engine: `/metrics`, `/health`, `/v1/models`.
pub(crate) fn engine_router(site: Arc<EngineSite>) -> Router {
    Router::new()
        .route("/metrics", get(engine_metrics))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/v1/models", get(engine_models))
        .with_state(site)
}

/// Routes of a dcgm-exporter: `/metrics`, `/health`.
pub(crate) fn dcgm_router(site: Arc<NodeSite>) -> Router {
    Router::new()
        .route("/metrics", get(node_metrics))
        .route("/health", get(|| async { StatusCode::OK }))
        .with_state(site)
}

async fn engine_metrics(State(site): State<Arc<EngineSite>>, headers: HeaderMap) -> Response {
    let now = site.clock.now();
    let body = {
        let mut cell = site.lock();
        let PodCell { pod, body } = &mut *cell;
        pod.advance_to(now);
        site.publish(pod);
        if !pod.serving {
            // The process died a moment ago; the listener is closing.
            None
        } else {
            exposition::render(body, &pod.engine, pod.spec.model.id);
            Some(body.as_bytes().to_vec())
        }
    };
    match body {
        Some(body) => metrics_response(body, accepts_gzip(&headers)),
        None => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

async fn engine_models(State(site): State<Arc<EngineSite>>) -> Response {
    let (id, max_model_len, created) = {
        let cell = site.lock();
        let spec = &cell.pod.spec;
        (
            spec.model.id,
            spec.params.max_model_len,
            cell.pod.engine.started_at(),
        )
    };
    let json = serde_json::json!({
        "object": "list",
        "data": [{
            "id": id,
            "object": "model",
            "created": created.floor() as i64,
            "owned_by": "vllm",
            "root": id,
            "parent": null,
            "max_model_len": max_model_len,
        }]
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json.to_string(),
    )
        .into_response()
}

async fn node_metrics(State(site): State<Arc<NodeSite>>, headers: HeaderMap) -> Response {
    let now = site.clock.now();
    // Read every GPU first (one lock at a time), then render.
    let readings: Vec<(GpuModel, Option<String>)> = site
        .gpus
        .iter()
        .map(|source| match source {
            GpuSource::Pod(engine) => {
                let mut cell = engine.lock();
                cell.pod.advance_to(now);
                engine.publish(&cell.pod);
                (cell.pod.gpu.clone(), Some(cell.pod.spec.pod.clone()))
            }
            GpuSource::Idle(gpu) => {
                let mut gpu = gpu.lock().unwrap_or_else(|e| e.into_inner());
                gpu.advance_to(now, 0.0, 0.0);
                (gpu.clone(), None)
            }
        })
        .collect();
    let views: Vec<GpuView<'_>> = site
        .node
        .gpus
        .iter()
        .zip(&readings)
        .map(|(slot, (gpu, pod))| GpuView {
            index: slot.index,
            uuid: &slot.uuid,
            pci_bus_id: &slot.pci_bus_id,
            hostname: &site.node.name,
            pod: pod.as_deref().map(|pod| PodRef {
                pod,
                namespace: NAMESPACE,
                container: CONTAINER,
            }),
            gpu,
        })
        .collect();
    let body = {
        let mut body = site.body.lock().unwrap_or_else(|e| e.into_inner());
        dcgm::render(&mut body, &views);
        body.as_bytes().to_vec()
    };
    metrics_response(body, accepts_gzip(&headers))
}

/// A metrics response, gzip-compressed when the client accepts it.
fn metrics_response(body: Vec<u8>, gzip: bool) -> Response {
    let content_type = (
        header::CONTENT_TYPE,
        HeaderValue::from_static(METRICS_CONTENT_TYPE),
    );
    if gzip {
        if let Some(compressed) = gzip_bytes(&body) {
            let encoding = (header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            return ([content_type, encoding], compressed).into_response();
        }
    }
    ([content_type], body).into_response()
}

fn gzip_bytes(body: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 6), Compression::fast());
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// True when `Accept-Encoding` lists gzip (or `*`) with a non-zero quality.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let wanted = coding.eq_ignore_ascii_case("gzip") || coding == "*";
            let quality = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            wanted && quality > 0.0
        })
}

/// Serve an engine on `port` while its pod serves, until `shutdown` turns true: the listener
/// closes when the pod stops serving (connections are refused, as with a dead pod) and is
/// bound again to the same port when it serves again. `listener` is the port already bound
/// at start, if the pod served then.
pub(crate) fn spawn_engine_server(
    site: Arc<EngineSite>,
    port: u16,
    mut listener: Option<TcpListener>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<std::io::Result<()>> {
    tokio::spawn(async move {
        let mut phase = site.phase.subscribe();
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let now = *phase.borrow_and_update();
            if now.serving {
                let bound = match listener.take() {
                    Some(l) => l,
                    None => match bind_again(port, &mut shutdown).await? {
                        Some(l) => l,
                        None => return Ok(()),
                    },
                };
                let (watched, mut stop) = (Arc::clone(&site), shutdown.clone());
                let mut changes = phase.clone();
                axum::serve(bound, engine_router(Arc::clone(&site)))
                    .with_graceful_shutdown(async move {
                        serve_while_up(&watched, &mut changes, &mut stop).await;
                    })
                    .await?;
            } else {
                tokio::select! {
                    _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
                    changed = phase.changed() => if changed.is_err() { return Ok(()) },
                    _ = sleep_until(&site.clock, now.next_transition) => {
                        site.with_pod_now(|_| ());
                    }
                }
            }
        }
    })
}

/// Returns when the pod stops serving or the simulator stops; wakes the pod when it is due to
/// crash, so the listener closes on time even if nobody scrapes.
async fn serve_while_up(
    site: &EngineSite,
    phase: &mut watch::Receiver<PodPhase>,
    shutdown: &mut watch::Receiver<bool>,
) {
    loop {
        let now = *phase.borrow_and_update();
        if !now.serving {
            return;
        }
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            changed = phase.changed() => if changed.is_err() { return },
            _ = sleep_until(&site.clock, now.next_transition) => {
                site.with_pod_now(|_| ());
            }
        }
    }
}

/// Sleep until simulated time `at` (a millisecond past it), or forever for `None`.
async fn sleep_until(clock: &SimClock, at: Option<f64>) {
    match at {
        Some(at) => tokio::time::sleep(clock.wall_until(at) + Duration::from_millis(1)).await,
        None => std::future::pending().await,
    }
}

/// Bind `port` again after the listener was closed: retried for a while in case the old
/// socket lingers. `None` when the simulator stops meanwhile.
async fn bind_again(
    port: u16,
    shutdown: &mut watch::Receiver<bool>,
) -> std::io::Result<Option<TcpListener>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut attempts = 0;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(Some(listener)),
            Err(err) if attempts >= 50 => return Err(err),
            Err(err) => {
                attempts += 1;
                tracing::debug!(port, error = %err, "simulated engine cannot listen yet");
            }
        }
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return Ok(None),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}

/// Serve `router` on `listener` until `shutdown` turns true.
pub(crate) fn spawn_server(
    listener: TcpListener,
    router: Router,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<std::io::Result<()>> {
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                // An error means the sender is gone: stop as well.
                let _ = shutdown.wait_for(|stop| *stop).await;
            })
            .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn accept_encoding_is_read_like_http_says() {
        assert!(accepts_gzip(&with("gzip")));
        assert!(accepts_gzip(&with("br, GZIP;q=0.5")));
        assert!(accepts_gzip(&with("*")));
        assert!(!accepts_gzip(&with("gzip;q=0")));
        assert!(!accepts_gzip(&with("identity")));
        assert!(!accepts_gzip(&with("deflate, br")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read as _;
        let body = b"vllm:num_requests_running{engine=\"0\"} 3.0\n".repeat(100);
        let packed = gzip_bytes(&body).unwrap_or_default();
        assert!(packed.len() < body.len() / 4);
        let mut unpacked = Vec::new();
        let read = flate2::read::GzDecoder::new(packed.as_slice()).read_to_end(&mut unpacked);
        assert!(read.is_ok());
        assert_eq!(unpacked, body);
    }
}
