//! The pods' subresources: `log` (with follow), `eviction` and `proxy`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::objects::delete_options;
use super::{Params, Req, Shared, St, Target, respond_as, truthy};
use crate::kube::cluster::LogQuery;
use crate::kube::kinds::Kind;
use crate::kube::status::{ApiError, success_status};
use crate::kube::wire::{self, BodyKind, ProtobufKind};

/// Wall-clock pause between reads of a followed log.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// POST `pods/NAME/eviction` with a policy/v1 Eviction (JSON or protobuf): its
/// `deleteOptions` (dry run, preconditions) apply; a PodDisruptionBudget may refuse (429).
pub(super) fn evict(s: Arc<Shared>, kind: Kind, req: Req) -> Response {
    let eviction = match wire::decode_body(req.content_type(), &req.body, BodyKind::Eviction) {
        Ok(eviction) => eviction,
        Err(err) => return err.into_response(),
    };
    let name = req.target.name().to_owned();
    if let Some(named) = eviction["metadata"]["name"].as_str() {
        if !named.is_empty() && named != name {
            return ApiError::bad_request(format!(
                "name in URL does not match name in Eviction object: {name} != {named}"
            ))
            .into_response();
        }
    }
    let opts = match delete_options(&req, &eviction["deleteOptions"]) {
        Ok(opts) => opts,
        Err(err) => return err.into_response(),
    };
    let ns = req.target.namespace.clone();
    let result = s.with_cluster(|c, now| {
        c.authorize(&req.target.access("create", kind, Some("eviction")))?;
        c.get(kind, ns.as_deref(), &name)?;
        c.evict(&name, &opts, now, &s.engines)
    });
    match result {
        Ok(()) => respond_as(
            req.accept(),
            201,
            ProtobufKind::Status,
            &success_status(201),
        ),
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

pub(super) async fn pod_log(
    State(s): St,
    Path(p): Path<Params>,
    Query(q): Query<Params>,
) -> Response {
    let query = match log_query(&q) {
        Ok(query) => query,
        Err(err) => return err.into_response(),
    };
    let name = p.get("name").cloned().unwrap_or_default();
    let ns = p.get("ns").cloned();
    let result = s.with_cluster(|c, now| {
        c.authorize(&Target::of(Kind::Pod, &p).access("get", Kind::Pod, Some("log")))?;
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

pub(super) async fn proxy(
    State(s): St,
    Path(p): Path<Params>,
    RawQuery(query): RawQuery,
) -> Response {
    let name_port = p.get("name").cloned().unwrap_or_default();
    let rest = p.get("rest").cloned().unwrap_or_default();
    let target = s.with_cluster(|c, now| {
        c.authorize(&Target::of(Kind::Pod, &p).access("get", Kind::Pod, Some("proxy")))?;
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
