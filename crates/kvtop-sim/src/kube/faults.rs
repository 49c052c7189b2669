//! Request recording and fault injection for the simulated API: every request is recorded
//! (method, path, query, content type, body) so tests can assert exactly what a client sent,
//! and rules can make matching requests fail with an HTTP error, stall, or lose the connection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::status::ApiError;

/// Requests kept for inspection; older ones are dropped.
const RECORD_CAPACITY: usize = 10_000;
/// Largest request body recorded (and accepted).
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// What an injected fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Answer with this HTTP code and the API's Status object for it (401, 403, 404, 409, 429,
    /// 500, 503).
    Status(u16),
    /// Wait this long, then serve the request normally (a client timeout shorter than the
    /// delay sees a timeout).
    Delay(Duration),
    /// Close the connection without a complete response.
    Drop,
}

/// Which requests a fault applies to, and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// `GET`, `PATCH`, …; `None` for any method.
    pub method: Option<String>,
    /// A substring of the path (`/pods`, `/eviction`, `/apis/apps/`).
    pub path_contains: String,
    pub fault: Fault,
    /// How many matching requests fail; `None` for all of them.
    pub times: Option<u32>,
}

impl FaultRule {
    /// Every request whose path contains `path` fails with `fault`.
    pub fn new(path: &str, fault: Fault) -> FaultRule {
        FaultRule {
            method: None,
            path_contains: path.to_owned(),
            fault,
            times: None,
        }
    }

    /// Only requests with `method`.
    pub fn method(mut self, method: &str) -> FaultRule {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: u32) -> FaultRule {
        self.times = Some(n);
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method) && path.contains(&self.path_contains)
    }
}

/// One request as the simulated API received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// The raw query string (still percent-encoded).
    pub query: String,
    pub content_type: Option<String>,
    pub body: String,
}

impl RecordedRequest {
    /// A decoded query parameter.
    pub(crate) fn param(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == key).then(|| percent_decode(v))
        })
    }

    /// True when the request was a server-side dry run: `dryRun=All` in the query, or in the
    /// body's `DeleteOptions` (kube-rs sends a delete's dry run there).
    pub fn dry_run(&self) -> bool {
        if self.param("dryRun").as_deref() == Some("All") {
            return true;
        }
        let body: serde_json::Value = serde_json::from_str(&self.body).unwrap_or_default();
        let all =
            |v: &serde_json::Value| v.as_array().is_some_and(|a| a.iter().any(|x| x == "All"));
        all(&body["dryRun"]) || all(&body["deleteOptions"]["dryRun"])
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b),
                }
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Recorded requests and active fault rules, shared by the handle and the server.
#[derive(Debug, Default)]
pub struct Control {
    requests: Mutex<VecDeque<RecordedRequest>>,
    faults: Mutex<Vec<FaultRule>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Control {
    /// Every recorded request, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).iter().cloned().collect()
    }

    pub fn inject(&self, rule: FaultRule) {
        lock(&self.faults).push(rule);
    }

    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    fn record(&self, request: RecordedRequest) {
        let mut requests = lock(&self.requests);
        if requests.len() >= RECORD_CAPACITY {
            requests.pop_front();
        }
        requests.push_back(request);
    }

    /// The fault for a request, consuming one use of a limited rule.
    fn fault_for(&self, method: &str, path: &str) -> Option<Fault> {
        let mut faults = lock(&self.faults);
        let index = faults.iter().position(|r| r.matches(method, path))?;
        let rule = faults.get_mut(index)?;
        let fault = rule.fault.clone();
        match rule.times {
            Some(n) if n <= 1 => {
                faults.remove(index);
            }
            Some(n) => rule.times = Some(n - 1),
            None => {}
        }
        Some(fault)
    }
}

/// Middleware: record the request, then apply the first matching fault rule.
pub async fn record_and_inject(
    State(control): State<Arc<Control>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::bad_request("request body too large or unreadable").into_response();
        }
    };
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    control.record(RecordedRequest {
        method: method.clone(),
        path: path.clone(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        content_type: parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: String::from_utf8_lossy(&bytes).into_owned(),
    });
    match control.fault_for(&method, &path) {
        Some(Fault::Status(code)) => return ApiError::injected(code).into_response(),
        Some(Fault::Drop) => return dropped_connection(),
        Some(Fault::Delay(wait)) => tokio::time::sleep(wait).await,
        None => {}
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// A response whose body fails at once: the server aborts the connection, and the client sees
/// it closed before a complete message arrived.
fn dropped_connection() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "connection dropped by fault injection",
        ))
    });
    (StatusCode::OK, Body::from_stream(failing)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_rules_expire_and_method_filters_apply() {
        let control = Control::default();
        control.inject(
            FaultRule::new("/pods", Fault::Status(500))
                .method("patch")
                .times(2),
        );
        assert_eq!(control.fault_for("GET", "/api/v1/pods"), None);
        assert_eq!(
            control.fault_for("PATCH", "/api/v1/namespaces/llm/pods/p"),
            Some(Fault::Status(500))
        );
        assert_eq!(
            control.fault_for("PATCH", "/api/v1/namespaces/llm/pods/p"),
            Some(Fault::Status(500))
        );
        assert_eq!(
            control.fault_for("PATCH", "/api/v1/namespaces/llm/pods/p"),
            None
        );
    }

    #[test]
    fn query_parameters_decode() {
        let r = RecordedRequest {
            method: "GET".into(),
            path: "/api/v1/pods".into(),
            query: "labelSelector=app.kubernetes.io%2Fname%3Dvllm&dryRun=All".into(),
            content_type: None,
            body: String::new(),
        };
        assert_eq!(
            r.param("labelSelector").as_deref(),
            Some("app.kubernetes.io/name=vllm")
        );
        assert!(r.dry_run());
        assert_eq!(r.param("watch"), None);
    }
}
