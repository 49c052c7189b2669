//! API errors of the simulated cluster, rendered as `meta/v1` Status objects with the HTTP code,
//! reason and message wording of the real API server.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A failed request: HTTP code, the Status `reason`, a message and the object it concerns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details`: kind (plural resource) and name, when one object is concerned.
    pub details: Option<Box<(String, String)>>,
    /// `details.causes`: (reason, message) pairs.
    pub causes: Vec<(String, String)>,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after: Option<u32>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: String) -> ApiError {
        ApiError {
            code,
            reason,
            message,
            details: None,
            causes: Vec::new(),
            retry_after: None,
        }
    }

    fn about(mut self, resource: &str, name: &str) -> ApiError {
        self.details = Some(Box::new((resource.to_owned(), name.to_owned())));
        self
    }

    /// 404: `pods "x" not found`.
    pub(crate) fn not_found(resource: &str, name: &str) -> ApiError {
        Self::new(404, "NotFound", format!("{resource} \"{name}\" not found")).about(resource, name)
    }

    /// 404 for a path the API does not serve.
    pub(crate) fn no_route() -> ApiError {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
        )
    }

    /// 409: the object changed since the client read it.
    pub(crate) fn conflict(resource: &str, name: &str, why: &str) -> ApiError {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {resource} \"{name}\": {why}"),
        )
        .about(resource, name)
    }

    /// 403 from an RBAC denial.
    pub fn forbidden(
        user: &str,
        verb: &str,
        resource: &str,
        group: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> ApiError {
        let what = match name {
            Some(name) => format!("{resource} \"{name}\" is forbidden"),
            None => format!("{resource} is forbidden"),
        };
        let scope = match namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_owned(),
        };
        let err = Self::new(
            403,
            "Forbidden",
            format!(
                "{what}: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\"{scope}"
            ),
        );
        err.about(resource, name.unwrap_or(""))
    }

    /// 429 for an eviction a PodDisruptionBudget blocks.
    pub(crate) fn disruption_budget(pdb: &str, needs: i32, has: i32) -> ApiError {
        let mut err = Self::new(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.".into(),
        );
        err.causes.push((
            "DisruptionBudget".into(),
            format!(
                "The disruption budget {pdb} needs {needs} healthy pods and has {has} currently"
            ),
        ));
        // The API server sets no Retry-After here (retryAfterSeconds 0): clients such as
        // kubectl drain retry on their own schedule, client-go does not retry for them.
        err
    }

    /// 410 for a watch from a resource version the server no longer has.
    pub(crate) fn expired(message: String) -> ApiError {
        Self::new(410, "Expired", message)
    }

    /// 400.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        Self::new(400, "BadRequest", message.into())
    }

    /// 422 for an object that fails validation.
    pub fn invalid(kind: &str, name: &str, message: &str) -> ApiError {
        Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {message}"),
        )
    }

    /// 415 for a patch type the API does not accept.
    pub(crate) fn unsupported_media(content_type: &str) -> ApiError {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"
            ),
        )
    }

    /// 415 for a request body in a media type the API cannot decode.
    pub(crate) fn unsupported_body_type(content_type: &str) -> ApiError {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/vnd.kubernetes.protobuf; got {content_type:?}"
            ),
        )
    }

    /// 406 when none of the media types the client accepts can represent the response.
    pub(crate) fn not_acceptable(offered: &[&str]) -> ApiError {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                offered.join(", ")
            ),
        )
    }

    /// 405 for a verb a resource does not support.
    pub(crate) fn method_not_allowed(what: &str) -> ApiError {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource: {what}"),
        )
    }

    /// 500 for a failure of the simulated API itself.
    pub(crate) fn internal(message: impl Into<String>) -> ApiError {
        Self::new(500, "InternalError", message.into())
    }

    /// 503 from the pod proxy when the pod cannot be reached.
    pub(crate) fn unavailable(message: impl Into<String>) -> ApiError {
        Self::new(503, "ServiceUnavailable", message.into())
    }

    /// An injected fault with the canonical reason and message for its code.
    pub fn injected(code: u16) -> ApiError {
        let (reason, message) = match code {
            401 => ("Unauthorized", "Unauthorized"),
            403 => ("Forbidden", "forbidden: injected by the simulated API"),
            404 => (
                "NotFound",
                "the server could not find the requested resource",
            ),
            409 => (
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
            ),
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            500 => (
                "InternalError",
                "an error on the server (\"\") has prevented the request from succeeding",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => ("", "injected failure"),
        };
        let mut err = Self::new(code, reason, message.into());
        if code == 429 {
            err.retry_after = Some(1);
        }
        err
    }

    /// The Status object.
    pub fn body(&self) -> serde_json::Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.details.is_some() || !self.causes.is_empty() {
            let mut details = serde_json::Map::new();
            if let Some(about) = &self.details {
                let (kind, name) = about.as_ref();
                details.insert("kind".into(), kind.clone().into());
                if !name.is_empty() {
                    details.insert("name".into(), name.clone().into());
                }
            }
            if !self.causes.is_empty() {
                let causes: Vec<serde_json::Value> = self
                    .causes
                    .iter()
                    .map(|(reason, message)| json!({"reason": reason, "message": message}))
                    .collect();
                details.insert("causes".into(), causes.into());
            }
            status["details"] = details.into();
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, json_body(&self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A JSON body with the content type the API server uses.
pub(crate) fn json_body(value: &serde_json::Value) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        value.to_string(),
    )
        .into_response()
}

/// A success Status object (`201` for an accepted eviction).
pub(crate) fn success_status(code: u16) -> serde_json::Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_objects_look_like_the_api_servers() {
        let nf = ApiError::not_found("pods", "vllm-0").body();
        assert_eq!(nf["kind"], "Status");
        assert_eq!(nf["code"], 404);
        assert_eq!(nf["reason"], "NotFound");
        assert_eq!(nf["message"], "pods \"vllm-0\" not found");
        assert_eq!(nf["details"]["name"], "vllm-0");
        let pdb = ApiError::disruption_budget("vllm-llama-8b", 2, 2).body();
        assert_eq!(pdb["code"], 429);
        assert_eq!(pdb["details"]["causes"][0]["reason"], "DisruptionBudget");
        let denied =
            ApiError::forbidden("kvtop-sim", "delete", "pods", "", Some("llm"), Some("p")).message;
        assert_eq!(
            denied,
            "pods \"p\" is forbidden: User \"kvtop-sim\" cannot delete resource \"pods\" in API group \"\" in the namespace \"llm\""
        );
    }
}
