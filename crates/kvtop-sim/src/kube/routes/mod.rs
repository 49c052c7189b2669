//! HTTP routes of the simulated API server, under the real API's paths: discovery, `/version`
//! and health; every kind of the catalog ([`super::kinds`]) as a collection (list and watch)
//! and as objects (get, and patch or delete where the simulation acts on it); the pods'
//! `log`, `eviction`, `proxy` and `status` subresources, `deployments/scale` and
//! `deployments/status`; and the self-subject access, rules and identity reviews.

mod meta;
mod objects;
mod pods;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, get, post};
use serde_json::Value;
use tokio::sync::watch;

use super::cluster::{AccessRequest, Cluster};
use super::engines::EngineLink;
use super::kinds::{Kind, REVIEWS};
use super::status::{ApiError, json_body};
use super::wire::{self, ProtobufKind, Representation};

/// What every handler shares.
pub(crate) struct Shared {
    pub cluster: Mutex<Cluster>,
    pub engines: EngineLink,
    pub http: reqwest::Client,
    pub stop: watch::Receiver<bool>,
    /// The latest resource version, sent whenever the journal records a change (watches wait
    /// on it).
    pub changes: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the cluster brought up to the current simulated time, then journal what
    /// changed and wake the watches.
    pub(crate) fn with_cluster<R>(&self, f: impl FnOnce(&mut Cluster, f64) -> R) -> R {
        let now = self.engines.now();
        let mut cluster = self.lock();
        cluster.tick(now, &self.engines);
        // Journal the controllers' changes first, so `f` sees a journal in step with the
        // objects, then its own.
        let mut changed = cluster.record_changes();
        let out = f(&mut cluster, now);
        changed |= cluster.record_changes();
        if changed {
            self.changes.send_replace(cluster.journaled_version());
        }
        out
    }
}

type Params = HashMap<String, String>;
type St = State<Arc<Shared>>;

/// The namespace and name a path names (a Namespace object is named by the `{ns}` segment).
#[derive(Debug, Clone, Default)]
struct Target {
    namespace: Option<String>,
    name: Option<String>,
}

impl Target {
    fn of(kind: Kind, p: &Params) -> Target {
        if kind == Kind::Namespace {
            return Target {
                namespace: None,
                name: p.get("ns").cloned(),
            };
        }
        Target {
            namespace: p.get("ns").cloned(),
            name: p.get("name").cloned(),
        }
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    fn access(&self, verb: &str, kind: Kind, subresource: Option<&str>) -> AccessRequest {
        AccessRequest {
            verb: verb.to_owned(),
            group: kind.group().to_owned(),
            resource: kind.plural().to_owned(),
            subresource: subresource.map(str::to_owned),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// Everything a resource handler may read off the request.
struct Req {
    target: Target,
    query: Params,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn accept(&self) -> Option<&str> {
        self.header(header::ACCEPT)
    }

    fn content_type(&self) -> Option<&str> {
        self.header(header::CONTENT_TYPE)
    }

    /// `dryRun=All` in the query.
    fn dry_run(&self) -> bool {
        self.query.get("dryRun").is_some_and(|v| v == "All")
    }
}

/// A resource handler: the kind and the whole request in, the response out.
type Handle = fn(Arc<Shared>, Kind, Req) -> Response;

/// `route` answering `method` with `f` for `kind`.
fn on(
    route: MethodRouter<Arc<Shared>>,
    method: MethodFilter,
    kind: Kind,
    f: Handle,
) -> MethodRouter<Arc<Shared>> {
    route.on(
        method,
        move |State(s): St,
              Path(p): Path<Params>,
              Query(q): Query<Params>,
              headers: HeaderMap,
              body: Bytes| async move {
            let req = Req {
                target: Target::of(kind, &p),
                query: q,
                headers,
                body,
            };
            f(s, kind, req)
        },
    )
}

/// A route answering only `method`.
fn only(method: MethodFilter, kind: Kind, f: Handle) -> MethodRouter<Arc<Shared>> {
    on(MethodRouter::new(), method, kind, f)
}

/// The router of the simulated API.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut r = meta::routes();
    for kind in Kind::ALL {
        let info = kind.info();
        let prefix = kind.prefix();
        let plural = info.plural;
        let (collection, object) = if info.namespaced {
            r = r.route(&format!("{prefix}/{plural}"), collection_route(kind));
            (
                format!("{prefix}/namespaces/{{ns}}/{plural}"),
                format!("{prefix}/namespaces/{{ns}}/{plural}/{{name}}"),
            )
        } else if kind == Kind::Namespace {
            (
                format!("{prefix}/{plural}"),
                format!("{prefix}/{plural}/{{ns}}"),
            )
        } else {
            (
                format!("{prefix}/{plural}"),
                format!("{prefix}/{plural}/{{name}}"),
            )
        };
        r = r
            .route(&collection, collection_route(kind))
            .route(&object, object_route(kind));
    }
    let pod = "/api/v1/namespaces/{ns}/pods/{name}";
    let deployment = "/apis/apps/v1/namespaces/{ns}/deployments/{name}";
    r = r
        .route(&format!("{pod}/log"), get(pods::pod_log))
        .route(
            &format!("{pod}/eviction"),
            only(MethodFilter::POST, Kind::Pod, pods::evict),
        )
        .route(&format!("{pod}/proxy"), get(pods::proxy))
        .route(&format!("{pod}/proxy/{{*rest}}"), get(pods::proxy))
        .route(
            &format!("{pod}/status"),
            only(MethodFilter::GET, Kind::Pod, objects::get_one),
        )
        .route(
            &format!("{deployment}/status"),
            only(MethodFilter::GET, Kind::Deployment, objects::get_one),
        )
        .route(
            &format!("{deployment}/scale"),
            [
                (MethodFilter::GET, objects::get_scale as Handle),
                (MethodFilter::PATCH, objects::patch_scale),
                (MethodFilter::PUT, objects::put_scale),
            ]
            .into_iter()
            .fold(MethodRouter::new(), |r, (method, f)| {
                on(r, method, Kind::Deployment, f)
            }),
        );
    for review in REVIEWS {
        r = r.route(
            &format!(
                "/apis/{}/{}/{}",
                review.group, review.version, review.plural
            ),
            post(
                move |State(s): St, headers: HeaderMap, body: Bytes| async move {
                    meta::review(&s, review, &headers, &body)
                },
            ),
        );
    }
    r.fallback(|| async { ApiError::no_route() })
        .with_state(shared)
}

fn collection_route(kind: Kind) -> MethodRouter<Arc<Shared>> {
    only(MethodFilter::GET, kind, objects::list_or_watch)
}

fn object_route(kind: Kind) -> MethodRouter<Arc<Shared>> {
    let route = only(MethodFilter::GET, kind, objects::get_one);
    match kind {
        Kind::Pod => on(
            on(route, MethodFilter::PATCH, kind, objects::patch),
            MethodFilter::DELETE,
            kind,
            objects::delete,
        ),
        Kind::Node | Kind::Deployment => on(route, MethodFilter::PATCH, kind, objects::patch),
        _ => route,
    }
}

fn respond(result: Result<Value, ApiError>) -> Response {
    match result {
        Ok(value) => json_body(&value),
        Err(err) => err.into_response(),
    }
}

/// `value` with HTTP `code`, in protobuf when the client prefers it and the kind has an
/// encoding here (reviews, Scale, Status), else JSON.
fn respond_as(accept: Option<&str>, code: u16, kind: ProtobufKind, value: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    match wire::negotiate(accept) {
        Ok(Representation::Protobuf) => match wire::encode_protobuf(value, kind) {
            Ok(bytes) => (
                status,
                [(header::CONTENT_TYPE, HeaderValue::from_static(PROTOBUF))],
                bytes,
            )
                .into_response(),
            Err(err) => err.into_response(),
        },
        Ok(_) => (status, json_body(value)).into_response(),
        Err(err) => err.into_response(),
    }
}

/// The Kubernetes protobuf media type.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn truthy(q: &Params, key: &str) -> bool {
    q.get(key)
        .is_some_and(|v| v == "true" || v == "1" || v.is_empty())
}
