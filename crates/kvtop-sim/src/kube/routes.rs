//! HTTP routes of the simulated API server, under the real API's paths:
//! `/api/v1/…` (pods and their `log`, `eviction` and `proxy` subresources, events, nodes,
//! services, namespaces), `/apis/apps/v1/…` (deployments, replicasets),
//! `/apis/autoscaling/v2/horizontalpodautoscalers`, `/apis/policy/v1/poddisruptionbudgets` and
//! `/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`. Watches are not served (405):
//! clients list and poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::cluster::{AccessRequest, Cluster, DeleteOptions, Kind, LogQuery};
use super::engines::EngineLink;
use super::patch::PatchKind;
use super::status::{ApiError, json_body, success};
use kvtop_core::kube_model::{FieldSelector, LabelSelector};

/// Wall-clock pause between reads of a followed log.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// What every handler shares.
pub(crate) struct Shared {
    pub cluster: Mutex<Cluster>,
    pub engines: EngineLink,
    pub http: reqwest::Client,
    pub stop: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the cluster brought up to the current simulated time.
    pub(crate) fn with_cluster<R>(&self, f: impl FnOnce(&mut Cluster, f64) -> R) -> R {
        let now = self.engines.now();
        let mut cluster = self.lock();
        cluster.tick(now, &self.engines);
        f(&mut cluster, now)
    }
}

type Params = HashMap<String, String>;
type St = State<Arc<Shared>>;

/// The router of the simulated API.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut r = Router::new()
        .route("/version", get(version))
        .route("/api", get(api_versions))
        .route("/api/v1/namespaces", get(namespaces))
        .route("/api/v1/namespaces/{ns}", get(namespace));
    for (prefix, kind) in [
        ("/api/v1", Kind::Pod),
        ("/api/v1", Kind::Service),
        ("/api/v1", Kind::Event),
        ("/apis/apps/v1", Kind::Deployment),
        ("/apis/apps/v1", Kind::ReplicaSet),
        ("/apis/autoscaling/v2", Kind::Hpa),
        ("/apis/policy/v1", Kind::Pdb),
    ] {
        let plural = kind.plural();
        r = r
            .route(&format!("{prefix}/{plural}"), list_route(kind))
            .route(
                &format!("{prefix}/namespaces/{{ns}}/{plural}"),
                list_route(kind),
            )
            .route(
                &format!("{prefix}/namespaces/{{ns}}/{plural}/{{name}}"),
                object_route(kind),
            );
    }
    r.route("/api/v1/nodes", list_route(Kind::Node))
        .route("/api/v1/nodes/{name}", object_route(Kind::Node))
        .route("/api/v1/namespaces/{ns}/pods/{name}/log", get(pod_log))
        .route("/api/v1/namespaces/{ns}/pods/{name}/eviction", post(evict))
        .route("/api/v1/namespaces/{ns}/pods/{name}/proxy", get(proxy))
        .route(
            "/api/v1/namespaces/{ns}/pods/{name}/proxy/{*rest}",
            get(proxy),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(access_review),
        )
        .fallback(|| async { ApiError::no_route() })
        .with_state(shared)
}

fn list_route(kind: Kind) -> MethodRouter<Arc<Shared>> {
    get(
        move |State(s): St, Path(p): Path<Params>, Query(q): Query<Params>| async move {
            list(&s, kind, &p, &q)
        },
    )
}

fn object_route(kind: Kind) -> MethodRouter<Arc<Shared>> {
    let read = move |State(s): St, Path(p): Path<Params>| async move { get_one(&s, kind, &p) };
    let route = get(read);
    match kind {
        Kind::Pod => {
            route
                .patch(
                    move |State(s): St,
                          Path(p): Path<Params>,
                          Query(q): Query<Params>,
                          headers: HeaderMap,
                          body: Bytes| async move {
                        patch(&s, kind, &p, &q, &headers, &body)
                    },
                )
                .delete(
                    move |State(s): St,
                          Path(p): Path<Params>,
                          Query(q): Query<Params>,
                          body: Bytes| async move { delete_pod(&s, &p, &q, &body) },
                )
        }
        Kind::Node | Kind::Deployment => route.patch(
            move |State(s): St,
                  Path(p): Path<Params>,
                  Query(q): Query<Params>,
                  headers: HeaderMap,
                  body: Bytes| async move { patch(&s, kind, &p, &q, &headers, &body) },
        ),
        _ => route,
    }
}

fn access(verb: &str, kind: Kind, p: &Params, subresource: Option<&str>) -> AccessRequest {
    AccessRequest {
        verb: verb.to_owned(),
        group: kind.group().to_owned(),
        resource: kind.plural().to_owned(),
        subresource: subresource.map(str::to_owned),
        namespace: p.get("ns").cloned(),
        name: p.get("name").cloned(),
    }
}

fn respond(result: Result<Value, ApiError>) -> Response {
    match result {
        Ok(value) => json_body(&value),
        Err(err) => err.into_response(),
    }
}

fn truthy(q: &Params, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| v == "true" || v == "1" || v.is_empty())
}

fn list(s: &Shared, kind: Kind, p: &Params, q: &Params) -> Response {
    let verb = if truthy(q, "watch") { "watch" } else { "list" };
    let result = s.with_cluster(|c, _| {
        c.authorize(&access(verb, kind, p, None))?;
        if verb == "watch" {
            return Err(ApiError::method_not_allowed(
                "watch (the simulated API serves list; poll it)",
            ));
        }
        let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let fields = FieldSelector::parse(q.get("fieldSelector").map_or("", String::as_str))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let limit = q.get("limit").and_then(|l| l.parse().ok());
        c.list(
            kind,
            p.get("ns").map(String::as_str),
            &labels,
            &fields,
            limit,
            q.get("continue").map(String::as_str),
        )
    });
    respond(result)
}

fn get_one(s: &Shared, kind: Kind, p: &Params) -> Response {
    let name = p.get("name").map_or("", String::as_str);
    respond(s.with_cluster(|c, _| {
        c.authorize(&access("get", kind, p, None))?;
        c.get(kind, p.get("ns").map(String::as_str), name)
    }))
}

fn dry_run(q: &Params) -> bool {
    q.get("dryRun").is_some_and(|v| v == "All")
}

fn patch(
    s: &Shared,
    kind: Kind,
    p: &Params,
    q: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(patch_kind) = PatchKind::from_content_type(content_type) else {
        return ApiError::unsupported_media(content_type).into_response();
    };
    let patch: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return ApiError::bad_request(format!("the patch is not JSON: {e}")).into_response();
        }
    };
    let name = p.get("name").map_or("", String::as_str);
    respond(s.with_cluster(|c, now| {
        c.authorize(&access("patch", kind, p, None))?;
        c.patch(
            kind,
            p.get("ns").map(String::as_str),
            name,
            patch_kind,
            &patch,
            dry_run(q),
            now,
            &s.engines,
        )
    }))
}

fn delete_pod(s: &Shared, p: &Params, q: &Params, body: &[u8]) -> Response {
    let options: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let body_dry_run = options["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    let opts = DeleteOptions {
        dry_run: dry_run(q) || body_dry_run,
        uid: options["preconditions"]["uid"].as_str().map(str::to_owned),
        resource_version: options["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        grace_seconds: options["gracePeriodSeconds"]
            .as_i64()
            .or_else(|| q.get("gracePeriodSeconds").and_then(|g| g.parse().ok())),
    };
    let name = p.get("name").map_or("", String::as_str);
    let ns = p.get("ns").map(String::as_str);
    respond(s.with_cluster(|c, now| {
        c.authorize(&access("delete", Kind::Pod, p, None))?;
        c.get(Kind::Pod, ns, name)?;
        c.delete_pod(name, &opts, now, &s.engines)
    }))
}

async fn evict(
    State(s): St,
    Path(p): Path<Params>,
    Query(q): Query<Params>,
    body: Bytes,
) -> Response {
    let eviction: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let body_dry_run = eviction["deleteOptions"]["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    let name = p.get("name").map_or("", String::as_str).to_owned();
    let ns = p.get("ns").cloned();
    let result = s.with_cluster(|c, now| {
        c.authorize(&access("create", Kind::Pod, &p, Some("eviction")))?;
        c.get(Kind::Pod, ns.as_deref(), &name)?;
        c.evict(&name, dry_run(&q) || body_dry_run, now, &s.engines)
    });
    match result {
        Ok(()) => success(201),
        Err(err) => err.into_response(),
    }
}

fn log_query(q: &Params) -> Result<LogQuery, ApiError> {
    let number = |key: &str| -> Result<Option<f64>, ApiError> {
        q.get(key)
            .map(|v| {
                v.parse::<f64>()
                    .map_err(|_| ApiError::bad_request(format!("{key}: {v:?} is not a number")))
            })
            .transpose()
    };
    let since_time = q
        .get("sinceTime")
        .map(|t| {
            t.parse::<k8s_openapi::jiff::Timestamp>()
                .map(|ts| ts.as_millisecond() as f64 / 1000.0)
                .map_err(|_| ApiError::bad_request(format!("sinceTime: {t:?} is not RFC 3339")))
        })
        .transpose()?;
    Ok(LogQuery {
        container: q.get("container").cloned(),
        previous: truthy(q, "previous"),
        tail_lines: number("tailLines")?.map(|n| n.max(0.0) as usize),
        since_seconds: number("sinceSeconds")?,
        since_time,
        timestamps: truthy(q, "timestamps"),
        limit_bytes: number("limitBytes")?.map(|n| n.max(0.0) as usize),
    })
}

async fn pod_log(State(s): St, Path(p): Path<Params>, Query(q): Query<Params>) -> Response {
    let query = match log_query(&q) {
        Ok(query) => query,
        Err(err) => return err.into_response(),
    };
    let name = p.get("name").cloned().unwrap_or_default();
    let ns = p.get("ns").cloned();
    let result = s.with_cluster(|c, now| {
        c.authorize(&access("get", Kind::Pod, &p, Some("log")))?;
        c.get(Kind::Pod, ns.as_deref(), &name)?;
        c.log_entries(&name, &query, now, &s.engines)
    });
    let lines = match result {
        Ok(lines) => lines,
        Err(err) => return err.into_response(),
    };
    let text_plain = (header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    if !truthy(&q, "follow") {
        let mut body = String::new();
        for (_, line) in &lines {
            body.push_str(line);
            body.push('\n');
        }
        return ([text_plain], body).into_response();
    }
    let first: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    let last = lines.last().map_or(f64::NEG_INFINITY, |(at, _)| *at);
    let follow = Follow {
        shared: s,
        name,
        query: LogQuery {
            tail_lines: None,
            ..query
        },
        last,
        first: Some(first),
    };
    let stream = futures_util::stream::unfold(follow, |mut f| async move {
        let chunk = f.next_chunk().await?;
        Some((Ok::<Bytes, std::io::Error>(Bytes::from(chunk)), f))
    });
    ([text_plain], Body::from_stream(stream)).into_response()
}

/// A followed log: new lines as they are written, until the pod goes or the server stops.
struct Follow {
    shared: Arc<Shared>,
    name: String,
    query: LogQuery,
    last: f64,
    first: Option<String>,
}

impl Follow {
    async fn next_chunk(&mut self) -> Option<String> {
        if let Some(first) = self.first.take() {
            if !first.is_empty() {
                return Some(first);
            }
        }
        loop {
            if *self.shared.stop.borrow() {
                return None;
            }
            tokio::time::sleep(FOLLOW_POLL).await;
            let query = LogQuery {
                since_time: Some(self.last),
                since_seconds: None,
                ..self.query.clone()
            };
            let lines = self
                .shared
                .with_cluster(|c, now| c.log_entries(&self.name, &query, now, &self.shared.engines))
                .ok()?;
            let fresh: Vec<&(f64, String)> =
                lines.iter().filter(|(at, _)| *at > self.last).collect();
            if let Some((at, _)) = fresh.last() {
                self.last = *at;
                return Some(fresh.iter().map(|(_, l)| format!("{l}\n")).collect());
            }
        }
    }
}

async fn proxy(State(s): St, Path(p): Path<Params>, RawQuery(query): RawQuery) -> Response {
    let name_port = p.get("name").cloned().unwrap_or_default();
    let rest = p.get("rest").cloned().unwrap_or_default();
    let target = s.with_cluster(|c, now| {
        c.authorize(&access("get", Kind::Pod, &p, Some("proxy")))?;
        c.proxy_target(&name_port, now)
    });
    let port = match target {
        Ok(port) => port,
        Err(err) => return err.into_response(),
    };
    let mut url = format!("http://127.0.0.1:{port}/{rest}");
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(&query);
    }
    let response = match s.http.get(&url).send().await {
        Ok(response) => response,
        Err(err) => {
            let why = if err.is_connect() {
                "connect: connection refused".to_owned()
            } else {
                err.to_string()
            };
            return ApiError::unavailable(format!(
                "error trying to reach service: dial tcp 127.0.0.1:{port}: {why}"
            ))
            .into_response();
        }
    };
    let status =
        StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(err) => {
            return ApiError::unavailable(format!("error reading from the pod: {err}"))
                .into_response();
        }
    };
    let mut out = (status, body).into_response();
    if let Some(ct) = content_type {
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    out
}

async fn access_review(State(s): St, body: Bytes) -> Response {
    let review: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return ApiError::bad_request(format!("not JSON: {e}")).into_response(),
    };
    match s.with_cluster(|c, _| c.access_review(&review)) {
        Ok(answer) => (StatusCode::CREATED, json_body(&answer)).into_response(),
        Err(err) => err.into_response(),
    }
}

async fn version() -> Response {
    json_body(&json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.1",
        "gitCommit": "", "gitTreeState": "clean", "buildDate": "2025-05-15T00:00:00Z",
        "goVersion": "go1.24.2", "compiler": "gc", "platform": "linux/amd64",
        "emulationMajor": "1", "emulationMinor": "33",
        "minCompatibilityMajor": "1", "minCompatibilityMinor": "32"
    }))
}

async fn api_versions() -> Response {
    json_body(&json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
    }))
}

async fn namespaces(State(s): St) -> Response {
    let p = Params::new();
    respond(s.with_cluster(|c, _| {
        c.authorize(&access("list", Kind::Namespace, &p, None))?;
        Ok(c.namespaces())
    }))
}

async fn namespace(State(s): St, Path(p): Path<Params>) -> Response {
    let name = p.get("ns").cloned().unwrap_or_default();
    respond(s.with_cluster(|c, _| {
        let all = c.namespaces();
        all["items"]
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .find(|n| n["metadata"]["name"] == name.as_str())
            })
            .cloned()
            .ok_or_else(|| ApiError::not_found("namespaces", &name))
    }))
}
