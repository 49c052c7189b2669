//! The server's own endpoints: `/version`, health, discovery, and the self-subject reviews.

use std::sync::Arc;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::{Shared, respond, respond_as};
use crate::kube::discovery;
use crate::kube::kinds::ReviewInfo;
use crate::kube::status::{ApiError, json_body};
use crate::kube::wire::{self, BodyKind, ProtobufKind};

pub(super) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/version", get(version))
        .route("/healthz", get(ok))
        .route("/livez", get(ok))
        .route("/readyz", get(ok))
        .route("/api", get(core_discovery))
        .route("/api/v1", get(|| async { resources("", "v1") }))
        .route("/apis", get(groups_discovery))
        .route("/apis/{group}", get(group))
        .route(
            "/apis/{group}/{version}",
            get(|Path((g, v)): Path<(String, String)>| async move { resources(&g, &v) }),
        )
}

async fn ok() -> &'static str {
    "ok"
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

/// The aggregated document when the client asks for it, with its content type (the client
/// recognises the form by that type), else the legacy one.
fn discovery_response(headers: &HeaderMap, core: bool, legacy: Value) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match wire::wants_aggregated_discovery(accept) {
        Some(version) => {
            let content_type = format!(
                "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
            );
            let mut response = json_body(&discovery::aggregated(core, version));
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
        }
        None => json_body(&legacy),
    }
}

async fn core_discovery(headers: HeaderMap) -> Response {
    discovery_response(&headers, true, discovery::api_versions())
}

async fn groups_discovery(headers: HeaderMap) -> Response {
    discovery_response(&headers, false, discovery::api_group_list())
}

async fn group(Path(group): Path<String>) -> Response {
    respond(discovery::api_group_doc(&group).ok_or_else(ApiError::no_route))
}

fn resources(group: &str, version: &str) -> Response {
    respond(discovery::resource_list(group, version).ok_or_else(ApiError::no_route))
}

/// POST of a self-subject review: decode the body, answer 201 with the review's status.
pub(super) fn review(
    s: &Shared,
    review: &ReviewInfo,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let kind = match review.kind {
        "SelfSubjectAccessReview" => BodyKind::SelfSubjectAccessReview,
        "SelfSubjectRulesReview" => BodyKind::SelfSubjectRulesReview,
        _ => BodyKind::SelfSubjectReview,
    };
    let body = match wire::decode_body(content_type, body, kind) {
        Ok(body) => body,
        Err(err) => return err.into_response(),
    };
    let answer = s.with_cluster(|c, now| match kind {
        BodyKind::SelfSubjectAccessReview => c.access_review(&body),
        BodyKind::SelfSubjectRulesReview => c.rules_review(&body),
        _ => Ok(c.identity_review(now)),
    });
    let encoding = match kind {
        BodyKind::SelfSubjectAccessReview => ProtobufKind::SelfSubjectAccessReview,
        BodyKind::SelfSubjectRulesReview => ProtobufKind::SelfSubjectRulesReview,
        _ => ProtobufKind::SelfSubjectReview,
    };
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match answer {
        Ok(answer) => respond_as(accept, 201, encoding, &answer),
        Err(err) => err.into_response(),
    }
}
