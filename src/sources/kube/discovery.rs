//! Discovery and pod state: per watched context, four loops that list what they need and send
//! only what changed.
//!
//! - pods (every `poll_interval`, 2 s by default): the engine pods, as [`PodInfo`], diffed by
//!   resource version; a failed list keeps the pods known so far. With the default selectors
//!   the namespace's pods are listed once and recognised by labels, image or command
//!   ([`Recognizer`]); the user's own selectors are listed one by one and narrow the search.
//!   What each round searched and found is sent when it changes ([`KubeUpdate::Searched`]);
//! - events (every 5 s): the namespace's pod events, grouped per discovered pod;
//! - logs (every 5 s, and every second for the pod the detail view follows): new lines of each
//!   pod's vLLM container, read with `sinceTime`, and the previous container's last lines after
//!   a restart;
//! - workloads (every 5 s): the Deployments owning discovered pods, with their HPA and PDB.
//!
//! Polling rather than watching keeps the load predictable and the code simple: a list with
//! `resourceVersion=0` is served from the API server's cache.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event as K8sEvent, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, LogParams};
use tokio::sync::watch;

use crate::sources::Outbox;
use tokio::task::JoinHandle;

use super::client::ClusterClient;
use super::error::{ApiCall, KubeError, KubeErrorKind};
use super::routing::attach_routing;
use super::update::KubeUpdate;
use crate::config::KubernetesConfig;
use kvtop_core::kube_model::{
    ContextSearch, ConvertOptions, DeploymentSummary, EndpointDefaults, LabelSelector, PodInfo,
    PodKey, PodPhase, PodRouting, Recognizer, ScaledObject, SearchOutcome, attach_scaled_objects,
    pod_info, summarize,
};

/// Period of the events, logs and workloads loops.
const SLOW_POLL: Duration = Duration::from_secs(5);
/// How often the pods' events and logs are read.
pub const TEXT_POLL: Duration = SLOW_POLL;
/// Period at which the followed pod's log is read.
const FOLLOW_POLL: Duration = Duration::from_secs(1);
/// Log reads in flight at once per context.
const LOG_CONCURRENCY: usize = 4;
/// Lines of the previous container read after a restart.
const PREVIOUS_LINES: i64 = 20;
/// Marks lines from the container that ran before the current one.
pub const PREVIOUS_PREFIX: &str = "[previous] ";

/// What the loops of one context know about its pods.
#[derive(Debug, Clone)]
struct Known {
    namespace: String,
    name: String,
    container: Option<String>,
    restarts: u32,
    /// The container has started at least once (its log can be read).
    started: bool,
    deployment: Option<String>,
}

type KnownPods = Arc<Mutex<BTreeMap<PodKey, Known>>>;

fn lock(known: &KnownPods) -> MutexGuard<'_, BTreeMap<PodKey, Known>> {
    known.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running discovery. Dropping it stops every loop.
pub struct Discovery {
    tasks: Vec<JoinHandle<()>>,
    follow: watch::Sender<Option<PodKey>>,
}

impl Discovery {
    /// Start the loops of every cluster, sending updates to `events`.
    pub fn start(
        clusters: &[ClusterClient],
        settings: &KubernetesConfig,
        events: Outbox<KubeUpdate>,
    ) -> Discovery {
        let (follow, follow_rx) = watch::channel(None);
        let mut tasks = Vec::new();
        for cluster in clusters {
            let known: KnownPods = Arc::default();
            let ctx = Ctx {
                cluster: cluster.clone(),
                settings: Arc::new(settings.clone()),
                events: events.clone(),
                known,
            };
            tasks.push(tokio::spawn(pods_loop(ctx.clone())));
            if settings.event_lines > 0 {
                tasks.push(tokio::spawn(events_loop(ctx.clone())));
            }
            if settings.log_lines > 0 {
                tasks.push(tokio::spawn(logs_loop(ctx.clone(), follow_rx.clone())));
            }
            tasks.push(tokio::spawn(workloads_loop(ctx)));
        }
        Discovery { tasks, follow }
    }

    /// Read this pod's log every second (the detail view shows it); `None` stops.
    pub fn follow(&self, key: Option<PodKey>) {
        self.follow.send_replace(key);
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What every loop of a context shares.
#[derive(Clone)]
struct Ctx {
    cluster: ClusterClient,
    settings: Arc<KubernetesConfig>,
    events: Outbox<KubeUpdate>,
    known: KnownPods,
}

impl Ctx {
    fn context(&self) -> &str {
        &self.cluster.context
    }

    /// The namespace to list in; `None` for all namespaces.
    fn namespace(&self) -> Option<&str> {
        if self.settings.all_namespaces {
            None
        } else {
            Some(
                self.settings
                    .namespace
                    .as_deref()
                    .unwrap_or(&self.cluster.default_namespace),
            )
        }
    }

    fn call(&self, verb: &str, resource: &str, namespace: Option<&str>) -> ApiCall {
        ApiCall::new(verb, resource)
            .namespace(namespace)
            .context(self.context())
    }

    async fn send(&self, update: KubeUpdate) -> bool {
        self.events.send(update).await
    }

    /// Namespaces of the known pods.
    fn namespaces(&self) -> BTreeSet<String> {
        lock(&self.known)
            .values()
            .map(|k| k.namespace.clone())
            .collect()
    }
}

/// Reports a task's problems once, and its recovery once.
struct ProblemState {
    task: &'static str,
    last: Option<KubeError>,
}

impl ProblemState {
    fn new(task: &'static str) -> Self {
        ProblemState { task, last: None }
    }

    async fn report(&mut self, ctx: &Ctx, error: Option<KubeError>) -> bool {
        if self.last == error {
            return true;
        }
        self.last = error.clone();
        ctx.send(KubeUpdate::Problem {
            context: ctx.context().to_owned(),
            task: self.task,
            error,
        })
        .await
    }
}

/// A list served from the API server's cache (`resourceVersion=0`).
fn cached_list() -> ListParams {
    ListParams::default().match_any()
}

async fn pods_loop(ctx: Ctx) {
    // The routes change without the pod changing: they are part of what was sent.
    let mut seen: HashMap<PodKey, (String, Option<PodRouting>)> = HashMap::new();
    let mut problem = ProblemState::new("pods");
    let mut routing_problem = ProblemState::new("routing");
    let mut synced = false;
    let endpoint = EndpointDefaults {
        port: ctx.settings.metrics_port,
        path: ctx.settings.metrics_path.clone(),
    };
    let recognizer = recognizer(&ctx.settings);
    let mut searched: Option<ContextSearch> = None;
    let mut ticker = tokio::time::interval(ctx.settings.poll_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let pods = match list_pods(&ctx).await {
            Ok(pods) => pods,
            Err(err) => {
                let outcome = search_outcome(&err);
                if !problem.report(&ctx, Some(err)).await
                    || !report_search(&ctx, &mut searched, outcome).await
                {
                    return;
                }
                continue;
            }
        };
        if !problem.report(&ctx, None).await {
            return;
        }
        let looked_at = pods.len();
        let pods: Vec<Pod> = pods
            .into_iter()
            .filter(|p| recognizer.recognize(p).is_some())
            .collect();
        let outcome = SearchOutcome::Listed {
            pods: looked_at,
            engines: pods.len(),
        };
        let options = ConvertOptions {
            context: ctx.context(),
            endpoint: &endpoint,
            routing_label: ctx.settings.routing_label.as_deref(),
            event_lines: ctx.settings.event_lines,
            log_lines: ctx.settings.log_lines,
        };
        let mut infos: Vec<PodInfo> = pods.iter().filter_map(|p| pod_info(p, &options)).collect();
        if ctx.settings.routing_label.is_none() {
            let client = &ctx.cluster.client;
            let failure =
                attach_routing(client, ctx.context(), ctx.settings.api_timeout, &mut infos).await;
            if !routing_problem.report(&ctx, failure).await {
                return;
            }
        }
        let mut changed = Vec::new();
        let mut current: HashMap<PodKey, (String, Option<PodRouting>)> =
            HashMap::with_capacity(infos.len());
        {
            let mut known = lock(&ctx.known);
            known.clear();
            for info in infos {
                known.insert(
                    info.key.clone(),
                    Known {
                        namespace: info.key.namespace.clone(),
                        name: info.key.name.clone(),
                        container: info.container.clone(),
                        restarts: info.restarts,
                        started: info.phase == PodPhase::Running || info.last_termination.is_some(),
                        deployment: info.owner.as_ref().and_then(|o| o.deployment.clone()),
                    },
                );
                let version = (info.resource_version.clone(), info.routing.clone());
                let differs = seen.get(&info.key) != Some(&version);
                current.insert(info.key.clone(), version);
                if differs {
                    changed.push(info);
                }
            }
        }
        let gone: Vec<PodKey> = seen
            .keys()
            .filter(|k| !current.contains_key(*k))
            .cloned()
            .collect();
        seen = current;
        if !(changed.is_empty() && gone.is_empty() && synced) {
            synced = true;
            let update = KubeUpdate::Pods {
                context: ctx.context().to_owned(),
                changed,
                gone,
            };
            if !ctx.send(update).await {
                return;
            }
        }
        if !report_search(&ctx, &mut searched, outcome).await {
            return;
        }
    }
}

/// How pods are recognised with these settings (selectors that do not parse were refused
/// when the configuration was read).
pub fn recognizer(settings: &KubernetesConfig) -> Recognizer {
    Recognizer {
        selectors: settings
            .selectors
            .iter()
            .filter_map(|s| LabelSelector::parse(s).ok())
            .collect(),
        by_workload: settings.recognizes_workloads(),
    }
}

/// Send what this round searched when it differs from the last round.
async fn report_search(
    ctx: &Ctx,
    last: &mut Option<ContextSearch>,
    outcome: SearchOutcome,
) -> bool {
    let search = ContextSearch {
        context: ctx.context().to_owned(),
        namespace: ctx.namespace().map(str::to_owned),
        selectors: ctx.settings.selectors.clone(),
        by_workload: ctx.settings.recognizes_workloads(),
        outcome,
    };
    if last.as_ref() == Some(&search) {
        return true;
    }
    *last = Some(search.clone());
    ctx.send(KubeUpdate::Searched(search)).await
}

/// A failed pod list as a search outcome: refused, unreachable, or another failure.
fn search_outcome(err: &KubeError) -> SearchOutcome {
    match &err.kind {
        KubeErrorKind::Api {
            code: 403, message, ..
        } => SearchOutcome::Forbidden(message.clone()),
        KubeErrorKind::Timeout { after } => {
            SearchOutcome::Unreachable(format!("no answer within {after:?}"))
        }
        KubeErrorKind::Unreachable(why) => SearchOutcome::Unreachable(why.to_string()),
        KubeErrorKind::ConnectionLost(why) => SearchOutcome::Unreachable(why.clone()),
        _ => SearchOutcome::Failed(err.to_string()),
    }
}

/// The pods to recognise engines among, each once: every pod of the namespace with the default
/// selectors (one list), else the pods matching any of the user's selectors.
async fn list_pods(ctx: &Ctx) -> Result<Vec<Pod>, KubeError> {
    let namespace = ctx.namespace();
    let api: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(ctx.cluster.client.clone(), ns),
        None => Api::all(ctx.cluster.client.clone()),
    };
    let call = ctx.call("list", "pods", namespace);
    if ctx.settings.recognizes_workloads() {
        return Ok(call
            .run(ctx.settings.api_timeout, api.list(&cached_list()))
            .await?
            .items);
    }
    let mut by_uid: BTreeMap<String, Pod> = BTreeMap::new();
    for selector in &ctx.settings.selectors {
        let params = cached_list().labels(selector);
        let list = call
            .run(ctx.settings.api_timeout, api.list(&params))
            .await?;
        for pod in list.items {
            let uid = pod.metadata.uid.clone().unwrap_or_else(|| {
                format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or(""),
                    pod.metadata.name.as_deref().unwrap_or("")
                )
            });
            by_uid.insert(uid, pod);
        }
    }
    Ok(by_uid.into_values().collect())
}

async fn events_loop(ctx: Ctx) {
    let mut sent: HashMap<PodKey, Vec<String>> = HashMap::new();
    let mut problem = ProblemState::new("events");
    let mut ticker = tokio::time::interval(SLOW_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let mut grouped: HashMap<PodKey, Vec<(f64, String)>> = HashMap::new();
        let mut failure = None;
        for ns in ctx.namespaces() {
            let api: Api<K8sEvent> = Api::namespaced(ctx.cluster.client.clone(), &ns);
            let params = cached_list().fields("involvedObject.kind=Pod");
            let call = ctx.call("list", "events", Some(&ns));
            match call.run(ctx.settings.api_timeout, api.list(&params)).await {
                Ok(list) => {
                    for event in list.items {
                        let Some(name) = event.involved_object.name.clone() else {
                            continue;
                        };
                        let key = PodKey {
                            context: ctx.context().to_owned(),
                            namespace: ns.clone(),
                            name,
                        };
                        grouped.entry(key).or_default().push(event_line(&event));
                    }
                }
                Err(err) => failure = Some(err),
            }
        }
        let failed = failure.is_some();
        if !problem.report(&ctx, failure).await {
            return;
        }
        if failed {
            continue;
        }
        let known: Vec<PodKey> = lock(&ctx.known).keys().cloned().collect();
        sent.retain(|key, _| known.contains(key));
        for key in known {
            let mut lines = grouped.remove(&key).unwrap_or_default();
            lines.sort_by(|a, b| a.0.total_cmp(&b.0));
            let skip = lines.len().saturating_sub(ctx.settings.event_lines);
            let messages: Vec<String> = lines.into_iter().skip(skip).map(|(_, l)| l).collect();
            if sent.get(&key) == Some(&messages) {
                continue;
            }
            sent.insert(key.clone(), messages.clone());
            if !ctx.send(KubeUpdate::Events { key, messages }).await {
                return;
            }
        }
    }
}

/// `Warning BackOff: Back-off restarting failed container … (×12)`, and when it last happened.
fn event_line(event: &K8sEvent) -> (f64, String) {
    let at = event
        .last_timestamp
        .as_ref()
        .or(event.first_timestamp.as_ref())
        .map(kvtop_core::kube_model::convert::ts)
        .or_else(|| {
            event
                .event_time
                .as_ref()
                .map(|t| t.0.as_millisecond() as f64 / 1000.0)
        })
        .unwrap_or(0.0);
    let mut line = format!(
        "{} {}: {}",
        event.type_.as_deref().unwrap_or("Normal"),
        event.reason.as_deref().unwrap_or(""),
        event.message.as_deref().unwrap_or("").trim()
    );
    if let Some(count) = event.count.filter(|c| *c > 1) {
        line.push_str(&format!(" (×{count})"));
    }
    (at, line)
}

/// Where the log reading of one pod stands.
#[derive(Debug, Clone, Default)]
struct LogCursor {
    /// Time of the newest line read.
    last: Option<k8s_openapi::jiff::Timestamp>,
    restarts: u32,
}

async fn logs_loop(ctx: Ctx, mut follow: watch::Receiver<Option<PodKey>>) {
    let mut cursors: HashMap<PodKey, LogCursor> = HashMap::new();
    let mut problem = ProblemState::new("logs");
    let mut sweep = tokio::time::interval(SLOW_POLL);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut fast = tokio::time::interval(FOLLOW_POLL);
    fast.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let targets: Vec<(PodKey, Known)> = tokio::select! {
            _ = sweep.tick() => lock(&ctx.known)
                .iter()
                .filter(|(_, k)| k.started)
                .map(|(key, k)| (key.clone(), k.clone()))
                .collect(),
            _ = fast.tick() => {
                let followed = follow.borrow_and_update().clone();
                match followed.filter(|k| k.context == ctx.context()) {
                    Some(key) => lock(&ctx.known)
                        .get(&key)
                        .filter(|k| k.started)
                        .map(|k| vec![(key.clone(), k.clone())])
                        .unwrap_or_default(),
                    None => Vec::new(),
                }
            }
        };
        {
            // Forget pods that went away.
            let known = lock(&ctx.known);
            cursors.retain(|key, _| known.contains_key(key));
        }
        if targets.is_empty() {
            continue;
        }
        let jobs = targets.into_iter().map(|(key, known)| {
            let cursor = cursors.get(&key).cloned();
            let ctx = ctx.clone();
            async move {
                let result = read_log(&ctx, &known, cursor).await;
                (key, result)
            }
        });
        let results: Vec<_> = futures_util::stream::iter(jobs)
            .buffer_unordered(LOG_CONCURRENCY)
            .collect()
            .await;
        let mut failure = None;
        for (key, result) in results {
            match result {
                Ok((lines, cursor)) => {
                    cursors.insert(key.clone(), cursor);
                    if !lines.is_empty() && !ctx.send(KubeUpdate::Logs { key, lines }).await {
                        return;
                    }
                }
                // A container that is not running yet has no log: not a problem.
                Err(err) if err.code() == Some(400) => {}
                // The pod is gone (evicted, deleted) before the next listing noticed: stop
                // reading it now rather than report `404 not found` each second until then.
                // A pod of that name listed again is read again.
                Err(err) if err.is_not_found() => {
                    lock(&ctx.known).remove(&key);
                    cursors.remove(&key);
                }
                Err(err) => failure = Some(err),
            }
        }
        if !problem.report(&ctx, failure).await {
            return;
        }
    }
}

/// New lines of a pod's container since `cursor` (the last `log_lines` the first time), and
/// after a restart the previous container's last lines (marked [`PREVIOUS_PREFIX`]).
async fn read_log(
    ctx: &Ctx,
    known: &Known,
    cursor: Option<LogCursor>,
) -> Result<(Vec<String>, LogCursor), KubeError> {
    let api: Api<Pod> = Api::namespaced(ctx.cluster.client.clone(), &known.namespace);
    let call = ctx
        .call("read the log of", "pods/log", Some(&known.namespace))
        .name(&known.name);
    let mut lines = Vec::new();
    let restarted = cursor.as_ref().is_some_and(|c| known.restarts > c.restarts);
    if restarted || (cursor.is_none() && known.restarts > 0) {
        let params = LogParams {
            container: known.container.clone(),
            previous: true,
            tail_lines: Some(PREVIOUS_LINES),
            ..LogParams::default()
        };
        // The previous container's log may be gone already; that is not worth a problem.
        if let Ok(text) = call
            .run(ctx.settings.api_timeout, api.logs(&known.name, &params))
            .await
        {
            lines.extend(text.lines().map(|l| format!("{PREVIOUS_PREFIX}{l}")));
        }
    }
    let last = cursor.as_ref().and_then(|c| c.last);
    let params = LogParams {
        container: known.container.clone(),
        timestamps: true,
        tail_lines: if last.is_none() {
            i64::try_from(ctx.settings.log_lines).ok()
        } else {
            None
        },
        since_time: last,
        ..LogParams::default()
    };
    let text = call
        .run(ctx.settings.api_timeout, api.logs(&known.name, &params))
        .await?;
    let mut newest = last;
    for raw in text.lines() {
        let (stamp, line) = raw.split_once(' ').unwrap_or((raw, ""));
        let at = stamp.parse::<k8s_openapi::jiff::Timestamp>().ok();
        if let (Some(at), Some(last)) = (at, last) {
            if at <= last {
                continue;
            }
        }
        if at.is_some() {
            newest = newest.max(at);
        }
        lines.push(if at.is_some() { line } else { raw }.to_owned());
    }
    Ok((
        lines,
        LogCursor {
            last: newest,
            restarts: known.restarts,
        },
    ))
}

async fn workloads_loop(ctx: Ctx) {
    let mut sent: Option<Vec<DeploymentSummary>> = None;
    let mut problem = ProblemState::new("workloads");
    let mut ticker = tokio::time::interval(SLOW_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let owned: BTreeSet<(String, String)> = lock(&ctx.known)
            .values()
            .filter_map(|k| Some((k.namespace.clone(), k.deployment.clone()?)))
            .collect();
        let mut summaries = Vec::new();
        let mut failure = None;
        for ns in ctx.namespaces() {
            match workloads_in(&ctx, &ns).await {
                Ok((deployments, hpas, pdbs, scaled, partial)) => {
                    let mine: Vec<Deployment> = deployments
                        .into_iter()
                        .filter(|d| {
                            d.metadata
                                .name
                                .as_ref()
                                .is_some_and(|n| owned.contains(&(ns.clone(), n.clone())))
                        })
                        .collect();
                    let mut found = summarize(ctx.context(), &mine, &hpas, &pdbs);
                    attach_scaled_objects(&mut found, &scaled);
                    summaries.extend(found);
                    if partial.is_some() {
                        failure = partial;
                    }
                }
                Err(err) => failure = Some(err),
            }
        }
        if !problem.report(&ctx, failure).await {
            return;
        }
        if sent.as_ref() == Some(&summaries) {
            continue;
        }
        sent = Some(summaries.clone());
        let update = KubeUpdate::Workloads {
            context: ctx.context().to_owned(),
            deployments: summaries,
        };
        if !ctx.send(update).await {
            return;
        }
    }
}

type Workloads = (
    Vec<Deployment>,
    Vec<HorizontalPodAutoscaler>,
    Vec<PodDisruptionBudget>,
    Vec<ScaledObject>,
    Option<KubeError>,
);

/// Deployments, HPAs, PDBs and KEDA ScaledObjects of a namespace. HPAs, PDBs and
/// ScaledObjects that cannot be listed (RBAC) are left out and the error returned beside the
/// rest; a cluster without KEDA (its group answers 404) simply has no ScaledObjects.
async fn workloads_in(ctx: &Ctx, ns: &str) -> Result<Workloads, KubeError> {
    let client = ctx.cluster.client.clone();
    let limit = ctx.settings.api_timeout;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deployments = ctx
        .call("list", "deployments", Some(ns))
        .run(limit, deployments.list(&cached_list()))
        .await?
        .items;
    let mut partial = None;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    let hpas = match ctx
        .call("list", "horizontalpodautoscalers", Some(ns))
        .run(limit, hpas.list(&cached_list()))
        .await
    {
        Ok(list) => list.items,
        Err(err) => {
            partial = Some(err);
            Vec::new()
        }
    };
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client, ns);
    let pdbs = match ctx
        .call("list", "poddisruptionbudgets", Some(ns))
        .run(limit, pdbs.list(&cached_list()))
        .await
    {
        Ok(list) => list.items,
        Err(err) => {
            partial = Some(err);
            Vec::new()
        }
    };
    let scaled = match scaled_objects_in(ctx, ns).await {
        Ok(scaled) => scaled,
        Err(err) => {
            partial = Some(err);
            Vec::new()
        }
    };
    Ok((deployments, hpas, pdbs, scaled, partial))
}

/// The KEDA ScaledObjects of a namespace (none when the CRD is not installed); an object
/// that does not parse is left out.
async fn scaled_objects_in(ctx: &Ctx, ns: &str) -> Result<Vec<ScaledObject>, KubeError> {
    let gvk = kube::api::GroupVersionKind::gvk("keda.sh", "v1alpha1", "ScaledObject");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "scaledobjects");
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(ctx.cluster.client.clone(), ns, &resource);
    let listed = ctx
        .call("list", "scaledobjects.keda.sh", Some(ns))
        .run(ctx.settings.api_timeout, api.list(&cached_list()))
        .await;
    match listed {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|o| ScaledObject::from_json(serde_json::to_value(o).ok()?).ok())
            .collect()),
        Err(err) if matches!(&err.kind, KubeErrorKind::Api { code: 404, .. }) => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}
