//! Exec credential plugins (`users[].user.exec` in the kubeconfig), run by kvtop itself.
//!
//! kube-rs runs a plugin with a blocking `std::process` call and no time limit, several times
//! while it builds a client and again, on the blocking pool, whenever the token expires: a
//! plugin waiting for a browser login left kvtop with a blank screen, and the runtime's
//! shutdown waited for it after SIGTERM. Here a plugin runs as a child of the async runtime
//! with a time limit, a closed stdin (never the console's terminal), and its stdout and stderr
//! captured and bounded; it is killed when the limit passes or its caller gives up. Its token
//! goes on each request through [`ExecToken`], which runs the plugin again shortly before the
//! token expires. A failure names the context, the plugin (its file name only: arguments and
//! env may hold secrets), its exit status and one sanitised stderr line, never its stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use http::{HeaderValue, Request, header::AUTHORIZATION};
use jiff::{SignedDuration, Timestamp};
use kube::config::ExecConfig;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Most of a plugin's stdout kept: an ExecCredential with a certificate chain is a few KiB.
const MAX_STDOUT: usize = 1 << 20;
/// Most of its stderr kept: only the first non-empty line is ever shown.
const MAX_STDERR: usize = 16 << 10;
/// Characters of that stderr line shown.
const STDERR_LINE_CHARS: usize = 200;
/// A token this close to its expiry is replaced before the request goes out (client-go and
/// kube-rs use the same margin), so a request never carries a token that lapses in flight.
const REFRESH_MARGIN: SignedDuration = SignedDuration::from_secs(60);
/// How long a plugin may run before the operator is told which one is being waited for.
pub const FIRST_WAIT_NOTICE: Duration = Duration::from_secs(2);
/// Then how often the notice is repeated.
pub const WAIT_NOTICE_EVERY: Duration = Duration::from_secs(5);

/// Why a plugin gave no credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("credential plugin {plugin} gave no credential within {}s (exec_timeout); it was stopped", .after.as_secs())]
    TimedOut { plugin: String, after: Duration },
    #[error("cannot run the credential plugin {plugin}: {reason}")]
    Start { plugin: String, reason: String },
    #[error("credential plugin {plugin} {status}{}", stderr_suffix(.stderr_line))]
    Failed {
        plugin: String,
        /// `exited with status 3`, `was killed by a signal`.
        status: String,
        /// Its first non-empty stderr line, sanitised and bounded ("" when none).
        stderr_line: String,
    },
    #[error("the credential plugin {plugin}'s output is not an ExecCredential ({why})")]
    BadOutput { plugin: String, why: String },
    #[error("the kubeconfig's exec entry names no command")]
    NoCommand,
}

fn stderr_suffix(line: &str) -> String {
    if line.is_empty() {
        String::new()
    } else {
        format!(": {line}")
    }
}

/// What a plugin gave.
pub enum Credential {
    Token {
        token: String,
        expires: Option<Timestamp>,
    },
    /// PEM texts, for the TLS client identity.
    Certificate { certificate: String, key: String },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Token { expires, .. } => f
                .debug_struct("Token")
                .field("expires", expires)
                .finish_non_exhaustive(),
            Credential::Certificate { .. } => f.write_str("Certificate"),
        }
    }
}

/// The part of an `ExecCredential` kvtop reads.
#[derive(Deserialize)]
struct ExecCredential {
    status: Option<ExecCredentialStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
    expiration_timestamp: Option<String>,
}

/// One context's plugin, as the kubeconfig describes it.
#[derive(Clone)]
pub struct ExecPlugin {
    exec: ExecConfig,
    /// The command's file name, sanitised: what messages call the plugin.
    name: String,
    limit: Duration,
}

impl std::fmt::Debug for ExecPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecPlugin")
            .field("name", &self.name)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl ExecPlugin {
    pub fn new(exec: ExecConfig, limit: Duration) -> Result<ExecPlugin, PluginError> {
        let command = exec.command.as_deref().ok_or(PluginError::NoCommand)?;
        let file_name = command.rsplit('/').next().unwrap_or(command);
        let name = kvtop_core::safe_text::block(file_name, 64).into_owned();
        Ok(ExecPlugin { exec, name, limit })
    }

    /// The plugin's name for messages (its command's file name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run the plugin once; `waiting` hears how long it has been running, first after
    /// [`FIRST_WAIT_NOTICE`] and then every [`WAIT_NOTICE_EVERY`].
    pub async fn run(
        &self,
        waiting: &(dyn Fn(Duration) + Sync),
    ) -> Result<Credential, PluginError> {
        let mut child = self.command().spawn().map_err(|e| PluginError::Start {
            plugin: self.name.clone(),
            reason: e.kind().to_string(),
        })?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let started = Instant::now();
        let finished = async {
            tokio::join!(
                read_bounded(stdout, MAX_STDOUT),
                read_bounded(stderr, MAX_STDERR),
                child.wait()
            )
        };
        tokio::pin!(finished);
        let deadline = tokio::time::sleep(self.limit);
        tokio::pin!(deadline);
        let mut notice = tokio::time::interval_at(
            tokio::time::Instant::now() + FIRST_WAIT_NOTICE,
            WAIT_NOTICE_EVERY,
        );
        let (stdout, stderr, status) = loop {
            tokio::select! {
                done = &mut finished => break done,
                () = &mut deadline => {
                    // Dropping the child (kill_on_drop) kills it; say so only once it is.
                    return Err(PluginError::TimedOut { plugin: self.name.clone(), after: self.limit });
                }
                _ = notice.tick() => waiting(started.elapsed()),
            }
        };
        let status = status.map_err(|e| PluginError::Start {
            plugin: self.name.clone(),
            reason: e.kind().to_string(),
        })?;
        if !status.success() {
            let status_text = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_owned(),
            };
            let text = String::from_utf8_lossy(&stderr);
            let line = text.lines().map(str::trim).find(|l| !l.is_empty());
            let line =
                line.map(|l| kvtop_core::safe_text::block(l, STDERR_LINE_CHARS).into_owned());
            return Err(PluginError::Failed {
                plugin: self.name.clone(),
                status: status_text,
                stderr_line: line.unwrap_or_default(),
            });
        }
        self.parse(&stdout)
    }

    fn command(&self) -> tokio::process::Command {
        let exec = &self.exec;
        let mut command = tokio::process::Command::new(exec.command.as_deref().unwrap_or(""));
        if let Some(args) = &exec.args {
            command.args(args);
        }
        for pair in exec.env.iter().flatten() {
            if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
                command.env(name, value);
            }
        }
        for name in exec.drop_env.iter().flatten() {
            command.env_remove(name);
        }
        command.env("KUBERNETES_EXEC_INFO", self.exec_info());
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// What the plugin is told about the call (client-go's `KUBERNETES_EXEC_INFO`): never
    /// interactive, and the cluster when the kubeconfig asks for it.
    fn exec_info(&self) -> String {
        let mut spec = serde_json::json!({ "interactive": false });
        if self.exec.provide_cluster_info
            && let Some(cluster) = &self.exec.cluster
            && let Ok(cluster) = serde_json::to_value(cluster)
        {
            spec["cluster"] = cluster;
        }
        serde_json::json!({
            "apiVersion": self.exec.api_version,
            "kind": "ExecCredential",
            "spec": spec,
        })
        .to_string()
    }

    /// The credential in the plugin's stdout. The reasons never quote the output: it is
    /// where the token is.
    fn parse(&self, stdout: &[u8]) -> Result<Credential, PluginError> {
        let bad = |why: &str| PluginError::BadOutput {
            plugin: self.name.clone(),
            why: why.to_owned(),
        };
        let credential: ExecCredential = serde_json::from_slice(stdout)
            .map_err(|e| bad(&format!("not JSON of that shape: {:?}", e.classify())))?;
        let status = credential.status.ok_or_else(|| bad("no status"))?;
        let expires = match &status.expiration_timestamp {
            Some(text) => Some(
                text.parse::<Timestamp>()
                    .map_err(|_| bad("its expirationTimestamp is not an RFC 3339 time"))?,
            ),
            None => None,
        };
        match (
            status.token,
            status.client_certificate_data,
            status.client_key_data,
        ) {
            (_, Some(certificate), Some(key)) => Ok(Credential::Certificate { certificate, key }),
            (Some(token), _, _) if !token.is_empty() => Ok(Credential::Token { token, expires }),
            _ => Err(bad("neither a token nor a client certificate and key")),
        }
    }
}

/// Up to `limit` bytes of `stream`; the rest is read and dropped, so a chatty plugin never
/// blocks on a full pipe.
async fn read_bounded(stream: Option<impl AsyncRead + Unpin>, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut stream) = stream else {
        return kept;
    };
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

/// The bearer token of one context's plugin, put on every request; the plugin runs again when
/// the token is within [`REFRESH_MARGIN`] of its expiry (a token without one is kept).
#[derive(Clone)]
pub struct ExecToken {
    plugin: Arc<ExecPlugin>,
    current: Arc<tokio::sync::Mutex<BearerToken>>,
}

struct BearerToken {
    header: HeaderValue,
    expires: Option<Timestamp>,
}

impl ExecToken {
    pub fn new(
        plugin: ExecPlugin,
        token: &str,
        expires: Option<Timestamp>,
    ) -> Result<ExecToken, PluginError> {
        let header = bearer(&plugin, token)?;
        Ok(ExecToken {
            plugin: Arc::new(plugin),
            current: Arc::new(tokio::sync::Mutex::new(BearerToken { header, expires })),
        })
    }

    /// The header for the next request, after running the plugin again if the token is
    /// about to expire. Requests wait for one refresh, not one each (the lock).
    pub async fn header(&self) -> Result<HeaderValue, PluginError> {
        let mut current = self.current.lock().await;
        let expiring = current
            .expires
            .is_some_and(|at| Timestamp::now() + REFRESH_MARGIN >= at);
        if expiring {
            match self.plugin.run(&|_| {}).await? {
                Credential::Token { token, expires } => {
                    current.header = bearer(&self.plugin, &token)?;
                    current.expires = expires;
                }
                Credential::Certificate { .. } => {
                    return Err(PluginError::BadOutput {
                        plugin: self.plugin.name.clone(),
                        why: "it gave a client certificate where it had given a token".into(),
                    });
                }
            }
        }
        Ok(current.header.clone())
    }
}

fn bearer(plugin: &ExecPlugin, token: &str) -> Result<HeaderValue, PluginError> {
    let mut header =
        HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| PluginError::BadOutput {
            plugin: plugin.name.clone(),
            why: "its token is not a valid header value".into(),
        })?;
    header.set_sensitive(true);
    Ok(header)
}

impl<B: Send + 'static> tower::filter::AsyncPredicate<Request<B>> for ExecToken {
    type Future = BoxFuture<'static, Result<Request<B>, tower::BoxError>>;
    type Request = Request<B>;

    fn check(&mut self, mut request: Request<B>) -> Self::Future {
        let token = self.clone();
        Box::pin(async move {
            let header = token.header().await?;
            request.headers_mut().insert(AUTHORIZATION, header);
            Ok(request)
        })
    }
}
