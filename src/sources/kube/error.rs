//! Errors of Kubernetes API calls, worded for the operator: what kvtop tried (verb, resource,
//! namespace/name, context), and what went wrong (the HTTP code and the API's own message, a
//! timeout, a lost connection).

use std::fmt;
use std::future::Future;
use std::time::Duration;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeErrorKind {
    /// The API server answered with an error status.
    Api {
        code: u16,
        /// The Status `reason` (`Forbidden`, `NotFound`, `TooManyRequests`, …).
        reason: String,
        /// The API's own message.
        message: String,
    },
    /// No answer within the call's time limit.
    Timeout {
        after: Duration,
    },
    /// The connection broke before a complete answer arrived.
    ConnectionLost(String),
    /// The API server could not be reached at all (refused, DNS, TLS).
    Unreachable(Unreachable),
    /// The answer could not be read.
    BadResponse(String),
    /// The kubeconfig or in-cluster configuration is unusable.
    Config(String),
    Other(String),
}

/// Why the API server could not be reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// Nothing listens there: the pod proxy's scrape reports it as a refusal, like a direct one.
    #[error("connection refused")]
    Refused,
    /// DNS, TLS or another connect failure, in the innermost error's words.
    #[error("{0}")]
    Other(String),
}

/// A failed Kubernetes API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct KubeError {
    /// What was attempted (boxed: errors travel in `Result`s and should stay small).
    pub call: Box<ApiCall>,
    pub kind: KubeErrorKind,
}

/// The call being made, for error messages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiCall {
    /// What is attempted: `list`, `get`, `patch`, `delete`, `evict`, `read the log of`, ….
    pub verb: String,
    /// `pods`, `pods/log`, `deployments`, `nodes`, …
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The kubeconfig context.
    pub context: Option<String>,
}

impl ApiCall {
    /// `verb` on `resource` (cluster-wide until narrowed).
    pub fn new(verb: &str, resource: &str) -> ApiCall {
        ApiCall {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            ..ApiCall::default()
        }
    }

    /// In a namespace (`None`: all namespaces).
    pub fn namespace(mut self, namespace: Option<&str>) -> ApiCall {
        self.namespace = namespace.map(str::to_owned);
        self
    }

    /// Of one object.
    pub fn name(mut self, name: &str) -> ApiCall {
        self.name = Some(name.to_owned());
        self
    }

    /// Through a kubeconfig context.
    pub fn context(mut self, context: &str) -> ApiCall {
        self.context = Some(context.to_owned());
        self
    }

    /// The error of this call.
    pub fn error(&self, kind: KubeErrorKind) -> KubeError {
        KubeError {
            call: Box::new(self.clone()),
            kind,
        }
    }

    /// Run `call` within `limit`, turning its failure into a [`KubeError`] for this call.
    pub async fn run<T>(
        &self,
        limit: Duration,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, KubeError> {
        match tokio::time::timeout(limit, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.error(classify(&err))),
            Err(_) => Err(self.error(KubeErrorKind::Timeout { after: limit })),
        }
    }
}

impl KubeError {
    /// The HTTP code of an API error.
    pub fn code(&self) -> Option<u16> {
        match &self.kind {
            KubeErrorKind::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub(crate) fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// 429: rate limited, or an eviction a PodDisruptionBudget blocks.
    pub fn is_too_many_requests(&self) -> bool {
        self.code() == Some(429)
    }

    #[cfg(test)]
    /// A timeout, a lost connection or an unreachable server: worth retrying later.
    pub(crate) fn is_transport(&self) -> bool {
        matches!(
            self.kind,
            KubeErrorKind::Timeout { .. }
                | KubeErrorKind::ConnectionLost(_)
                | KubeErrorKind::Unreachable(_)
        )
    }

    /// What was attempted, e.g. `list pods in namespace llm (context prod)`.
    pub fn target(&self) -> String {
        let call = &self.call;
        let mut text = format!("{} {}", call.verb, call.resource);
        match (&call.namespace, &call.name) {
            (Some(ns), Some(name)) => text.push_str(&format!(" {ns}/{name}")),
            (None, Some(name)) => text.push_str(&format!(" {name}")),
            (Some(ns), None) => text.push_str(&format!(" in namespace {ns}")),
            (None, None) => {}
        }
        if let Some(context) = &call.context {
            text.push_str(&format!(" (context {context})"));
        }
        text
    }
}

impl fmt::Display for KubeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot {}: ", self.target())?;
        match &self.kind {
            KubeErrorKind::Api {
                code,
                reason,
                message,
            } => {
                let reason = if reason.is_empty() {
                    canonical_reason(*code)
                } else {
                    reason.as_str()
                };
                write!(f, "HTTP {code} {reason}")?;
                if !message.is_empty() && message != reason {
                    write!(f, ": {message}")?;
                }
                match code {
                    401 => f.write_str(
                        " (the credentials were rejected: refresh the kubeconfig's token)",
                    ),
                    403 => f.write_str(" (RBAC does not allow it)"),
                    429 if self.call.resource == "pods/eviction" => {
                        f.write_str(" (a PodDisruptionBudget blocks it)")
                    }
                    429 => f.write_str(" (the API server asks to retry later)"),
                    500..=599 => f.write_str(" (API server error)"),
                    _ => Ok(()),
                }
            }
            KubeErrorKind::Timeout { after } => {
                write!(f, "no answer within {:.1}s", after.as_secs_f64())
            }
            KubeErrorKind::ConnectionLost(why) => write!(f, "connection lost ({why})"),
            KubeErrorKind::Unreachable(why) => write!(f, "API server unreachable ({why})"),
            KubeErrorKind::BadResponse(why) => write!(f, "unreadable answer ({why})"),
            KubeErrorKind::Config(why) => write!(f, "configuration problem: {why}"),
            KubeErrorKind::Other(why) => f.write_str(why),
        }
    }
}

fn canonical_reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Gone",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Error",
    }
}

/// Longest stderr line quoted from a failing credential plugin.
const PLUGIN_STDERR_CHARS: usize = 200;

/// A credential plugin's failure told without what kube-rs puts in its message: the whole
/// command with its environment (`AWS_SECRET_ACCESS_KEY=…`) and arguments, and its stdout.
/// Only the program's name, its exit status and its first stderr line, sanitised and bounded.
pub(crate) fn exec_plugin_failure(err: &kube::Error) -> Option<String> {
    // kvtop's own plugin runs: a token refresh that failed on a request's way out.
    if let Some(plugin) =
        chain(err).find_map(|e| e.downcast_ref::<super::exec_credential::PluginError>())
    {
        return Some(plugin.to_string());
    }
    let auth = chain(err).find_map(|e| e.downcast_ref::<kube::client::AuthError>())?;
    match auth {
        kube::client::AuthError::AuthExecRun { cmd, out } => {
            // kube-rs gives the command as `Command`'s Debug text, `KEY="value" "program"
            // "arg"…`: the program is the first word that starts quoted.
            let program = cmd
                .split_whitespace()
                .find(|word| word.starts_with('"'))
                .map(|word| word.trim_matches('"'))
                .and_then(|path| path.rsplit('/').next())
                .map(|name| kvtop_core::safe_text::block(name, 64).into_owned())
                .unwrap_or_else(|| "(unnamed)".to_owned());
            let stderr = String::from_utf8_lossy(&out.stderr);
            let line = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let line = kvtop_core::safe_text::block(line.trim(), PLUGIN_STDERR_CHARS);
            let status = match out.status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_owned(),
            };
            Some(if line.is_empty() {
                format!("credential plugin {program} {status}")
            } else {
                format!("credential plugin {program} {status}: {line}")
            })
        }
        kube::client::AuthError::AuthExecStart(io) => {
            Some(format!("cannot run the credential plugin: {io}"))
        }
        kube::client::AuthError::AuthExecParse(_) => {
            Some("the credential plugin's output is not an ExecCredential".to_owned())
        }
        _ => None,
    }
}

/// Sort a kube-rs error into what the operator needs to know.
pub(crate) fn classify(err: &kube::Error) -> KubeErrorKind {
    if let Some(message) = exec_plugin_failure(err) {
        return KubeErrorKind::Config(message);
    }
    match err {
        kube::Error::Api(status) => {
            // A body that was not a Status (a proxy's HTML page): kube-rs puts the text in the
            // message and a parse note in the reason.
            let reason = if status.reason == "Failed to parse error data" {
                canonical_reason(status.code).to_owned()
            } else {
                status.reason.clone()
            };
            KubeErrorKind::Api {
                code: status.code,
                reason,
                message: status.message.clone(),
            }
        }
        kube::Error::HyperError(e) => {
            if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
                KubeErrorKind::ConnectionLost(root_cause(err))
            } else {
                transport(err)
            }
        }
        kube::Error::Service(_) | kube::Error::ReadEvents(_) => transport(err),
        kube::Error::SerdeError(_)
        | kube::Error::FromUtf8(_)
        | kube::Error::LinesCodecMaxLineLengthExceeded => {
            KubeErrorKind::BadResponse(root_cause(err))
        }
        kube::Error::InferConfig(_) | kube::Error::InferKubeconfig(_) | kube::Error::Auth(_) => {
            KubeErrorKind::Config(root_cause(err))
        }
        kube::Error::RustlsTls(_) | kube::Error::TlsRequired => {
            KubeErrorKind::Unreachable(Unreachable::Other(root_cause(err)))
        }
        _ => KubeErrorKind::Other(root_cause(err)),
    }
}

/// A transport failure, read from the types in the error's chain: an I/O error anywhere in it
/// decides; else hyper's own timeout and lost-connection flags; else the legacy client's
/// "could not connect".
fn transport(err: &kube::Error) -> KubeErrorKind {
    if let Some(io) = chain(err).find_map(|e| e.downcast_ref::<std::io::Error>()) {
        return io_failure(io);
    }
    for e in chain(err) {
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            if hyper.is_timeout() {
                return KubeErrorKind::Timeout {
                    after: Duration::ZERO,
                };
            }
            if hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled() {
                return KubeErrorKind::ConnectionLost(root_cause(err));
            }
        }
    }
    let connect = chain(err)
        .filter_map(|e| e.downcast_ref::<hyper_util::client::legacy::Error>())
        .any(hyper_util::client::legacy::Error::is_connect);
    if connect {
        KubeErrorKind::Unreachable(Unreachable::Other(root_cause(err)))
    } else {
        KubeErrorKind::Other(root_cause(err))
    }
}

fn io_failure(io: &std::io::Error) -> KubeErrorKind {
    use std::io::ErrorKind as Io;
    match io.kind() {
        Io::ConnectionRefused => KubeErrorKind::Unreachable(Unreachable::Refused),
        Io::TimedOut => KubeErrorKind::Timeout {
            after: Duration::ZERO,
        },
        Io::ConnectionReset | Io::ConnectionAborted | Io::UnexpectedEof | Io::BrokenPipe => {
            KubeErrorKind::ConnectionLost(io.to_string())
        }
        _ => KubeErrorKind::Unreachable(Unreachable::Other(io.to_string())),
    }
}

/// `err` and its sources, outermost first.
fn chain<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

/// The innermost error's message.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, message: &str) -> KubeErrorKind {
        KubeErrorKind::Api {
            code,
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn messages_name_the_call_the_code_and_the_apis_words() {
        let call = ApiCall::new("delete", "pods")
            .namespace(Some("llm"))
            .name("vllm-0")
            .context("prod");
        let e = call.error(api(403, "Forbidden", "pods \"vllm-0\" is forbidden"));
        assert_eq!(
            e.to_string(),
            "cannot delete pods llm/vllm-0 (context prod): HTTP 403 Forbidden: pods \"vllm-0\" is forbidden (RBAC does not allow it)"
        );
        assert!(e.is_forbidden());
        let list = ApiCall::new("list", "pods").namespace(Some("llm"));
        let t = list.error(KubeErrorKind::Timeout {
            after: Duration::from_millis(2500),
        });
        assert_eq!(
            t.to_string(),
            "cannot list pods in namespace llm: no answer within 2.5s"
        );
        assert!(t.is_transport());
        let evict = ApiCall::new("evict", "pods/eviction").name("p");
        let blocked = evict.error(api(429, "TooManyRequests", "Cannot evict pod"));
        assert!(
            blocked
                .to_string()
                .ends_with("(a PodDisruptionBudget blocks it)")
        );
        let bare = ApiCall::new("list", "nodes").error(api(500, "", ""));
        assert_eq!(
            bare.to_string(),
            "cannot list nodes: HTTP 500 InternalError (API server error)"
        );
    }

    #[test]
    fn api_statuses_classify_with_their_reason() {
        let status = kube::core::Status::failure("pods \"x\" not found", "NotFound").with_code(404);
        let kind = classify(&kube::Error::Api(status.boxed()));
        assert_eq!(kind, api(404, "NotFound", "pods \"x\" not found"));
        let html =
            kube::core::Status::failure("<html>bad gateway</html>", "Failed to parse error data")
                .with_code(502);
        assert_eq!(
            classify(&kube::Error::Api(html.boxed())),
            api(502, "Error", "<html>bad gateway</html>")
        );
    }

    fn service(error: impl std::error::Error + Send + Sync + 'static) -> kube::Error {
        kube::Error::Service(Box::new(error))
    }

    #[test]
    fn transport_failures_classify_by_the_types_in_the_chain() {
        use std::io::{Error, ErrorKind};
        let refused = service(Error::new(ErrorKind::ConnectionRefused, "refused"));
        assert_eq!(
            classify(&refused),
            KubeErrorKind::Unreachable(Unreachable::Refused)
        );
        assert_eq!(
            ApiCall::new("list", "pods")
                .error(classify(&refused))
                .to_string(),
            "cannot list pods: API server unreachable (connection refused)"
        );
        let reset = service(Error::new(ErrorKind::ConnectionReset, "reset by peer"));
        assert_eq!(
            classify(&reset),
            KubeErrorKind::ConnectionLost("reset by peer".into())
        );
        let slow = service(Error::new(ErrorKind::TimedOut, "slow"));
        assert!(matches!(classify(&slow), KubeErrorKind::Timeout { .. }));
        // Words alone decide nothing: an untyped failure that says "timed out" stays other.
        #[derive(Debug, thiserror::Error)]
        #[error("operation timed out")]
        struct Untyped;
        assert_eq!(
            classify(&service(Untyped)),
            KubeErrorKind::Other("operation timed out".into())
        );
    }
}
