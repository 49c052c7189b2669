//! Kubernetes clients, one per watched context: from a kubeconfig (`--kubeconfig`, else
//! `$KUBECONFIG`, else `~/.kube/config`) and its contexts (`--context`, repeatable, else the
//! current one), or the in-cluster service account when there is no kubeconfig.
//!
//! Every client is built without kube-rs's automatic retries: a retried 429 would hide a
//! PodDisruptionBudget's refusal of an eviction, and kvtop's loops already try again on their
//! next round.

use std::time::Duration;

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::error::{ApiCall, KubeError, KubeErrorKind};
use super::exec_credential::{Credential, ExecPlugin, ExecToken, PluginError};
use crate::config::KubernetesConfig;

/// Name given to the in-cluster configuration, where there is no context.
pub const IN_CLUSTER: &str = "in-cluster";

/// One cluster to watch.
#[derive(Clone)]
pub struct ClusterClient {
    /// The kubeconfig context (or [`IN_CLUSTER`]); labels the cluster's pods.
    pub context: String,
    pub client: kube::Client,
    /// The context's namespace (`default` when it names none).
    pub default_namespace: String,
    /// The kubeconfig's user entry for the context (the audit log's fallback identity).
    pub kubeconfig_user: Option<String>,
}

impl std::fmt::Debug for ClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterClient")
            .field("context", &self.context)
            .field("default_namespace", &self.default_namespace)
            .finish_non_exhaustive()
    }
}

impl ClusterClient {
    /// A client for an explicit configuration (the simulated cluster, tests).
    pub fn from_config(
        context: &str,
        config: kube::Config,
        api_timeout: Duration,
    ) -> Result<ClusterClient, KubeError> {
        build(context, config, api_timeout, None)
    }
}

/// The client, with `token` (an exec plugin's) put on every request when given.
fn build(
    context: &str,
    mut config: kube::Config,
    api_timeout: Duration,
    token: Option<ExecToken>,
) -> Result<ClusterClient, KubeError> {
    prepare(&mut config, api_timeout);
    let default_namespace = config.default_namespace.clone();
    let failed = |e: kube::Error| {
        let message = super::error::exec_plugin_failure(&e).unwrap_or_else(|| e.to_string());
        ApiCall::new("connect to", "the API server")
            .context(context)
            .error(KubeErrorKind::Config(message))
    };
    let builder = kube::client::ClientBuilder::try_from(config).map_err(failed)?;
    let client = match token {
        // The filter hands each request on after an await, so the service under it is shared
        // through a buffer (as kube-rs's own client is).
        Some(token) => builder
            .with_layer(&tower::buffer::BufferLayer::new(1024))
            .with_layer(&tower::filter::AsyncFilterLayer::new(token))
            .build(),
        None => builder.build(),
    };
    Ok(ClusterClient {
        context: context.to_owned(),
        client,
        default_namespace,
        kubeconfig_user: None,
    })
}

/// Run the context's exec credential plugin, if kube-rs would use it, and take it out of
/// `config`, so kube-rs never runs it itself (blocking, without a time limit): a token comes
/// back as the layer that puts it on requests, a client certificate goes into the config.
async fn resolve_exec_plugin(
    context: &str,
    config: &mut kube::Config,
    limit: Duration,
    waiting: &(dyn Fn(&str) + Sync),
) -> Result<Option<ExecToken>, KubeError> {
    let auth = &config.auth_info;
    // kube-rs's order: an auth provider, a user and password, a token and a token file all
    // come before the plugin, which then never runs.
    let overridden = auth.auth_provider.is_some()
        || (auth.username.is_some() && auth.password.is_some())
        || auth.token.is_some()
        || auth.token_file.is_some();
    if overridden {
        return Ok(None);
    }
    let Some(exec) = config.auth_info.exec.take() else {
        return Ok(None);
    };
    let failed = |e: PluginError| {
        ApiCall::new("connect to", "the API server")
            .context(context)
            .error(KubeErrorKind::Config(e.to_string()))
    };
    let plugin = ExecPlugin::new(exec, limit).map_err(failed)?;
    let notice = |elapsed: Duration| {
        waiting(&format!(
            "context {context}: waiting for the credential plugin {} ({} s of {} s)",
            plugin.name(),
            elapsed.as_secs(),
            limit.as_secs()
        ));
    };
    match plugin.run(&notice).await.map_err(failed)? {
        Credential::Token { token, expires } => Ok(Some(
            ExecToken::new(plugin, &token, expires).map_err(failed)?,
        )),
        Credential::Certificate { certificate, key } => {
            // The kubeconfig's fields hold base64 of the PEM the plugin gives.
            let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
            config.auth_info.client_certificate_data = Some(encode(&certificate));
            config.auth_info.client_key_data = Some(encode(&key).into());
            Ok(None)
        }
    }
}

/// Every exec credential plugin made non-interactive, should kube-rs ever run one (kvtop runs
/// them itself, [`resolve_exec_plugin`]): a closed stdin and a captured stderr instead of the
/// console's terminal (a login prompt would read the operator's keys and draw over the
/// console; several contexts' plugins would read the same tty).
fn without_interactive_plugins(mut kubeconfig: Kubeconfig) -> Kubeconfig {
    for user in &mut kubeconfig.auth_infos {
        if let Some(exec) = user.auth_info.as_mut().and_then(|a| a.exec.as_mut()) {
            exec.interactive_mode = Some(kube::config::ExecInteractiveMode::Never);
        }
    }
    kubeconfig
}

fn prepare(config: &mut kube::Config, api_timeout: Duration) {
    config.default_retry = false;
    config.connect_timeout = Some(api_timeout);
}

fn config_error(context: Option<&str>, message: String) -> KubeError {
    let mut call = ApiCall::new("load", "kubeconfig");
    if let Some(context) = context {
        call = call.context(context);
    }
    call.error(KubeErrorKind::Config(message))
}

/// Clients for the configured contexts.
pub async fn connect(settings: &KubernetesConfig) -> Result<Vec<ClusterClient>, KubeError> {
    connect_reporting(settings, &|_| {}).await
}

/// [`connect`], and `waiting` hears, while a context's exec credential plugin runs for more
/// than a moment, which context waits on which plugin and for how long.
pub async fn connect_reporting(
    settings: &KubernetesConfig,
    waiting: &(dyn Fn(&str) + Sync),
) -> Result<Vec<ClusterClient>, KubeError> {
    let kubeconfig = match &settings.kubeconfig {
        Some(path) => Kubeconfig::read_from(path)
            .map_err(|e| config_error(None, format!("{}: {e}", path.display())))?,
        None => match Kubeconfig::read() {
            Ok(kubeconfig) => kubeconfig,
            Err(read_error) => {
                if !settings.contexts.is_empty() {
                    return Err(config_error(None, read_error.to_string()));
                }
                // No kubeconfig: inside a pod, use its service account.
                let config = kube::Config::incluster().map_err(|e| {
                    config_error(
                        None,
                        format!(
                            "no kubeconfig ({read_error}) and not inside a cluster ({e}); pass --kubeconfig or set KUBECONFIG"
                        ),
                    )
                })?;
                return Ok(vec![ClusterClient::from_config(
                    IN_CLUSTER,
                    config,
                    settings.api_timeout,
                )?]);
            }
        },
    };
    let kubeconfig = without_interactive_plugins(kubeconfig);
    let contexts: Vec<String> = if settings.contexts.is_empty() {
        let current = kubeconfig.current_context.clone().ok_or_else(|| {
            config_error(
                None,
                "the kubeconfig has no current context; name one with --context".into(),
            )
        })?;
        vec![current]
    } else {
        settings.contexts.clone()
    };
    let mut clients = Vec::with_capacity(contexts.len());
    for context in contexts {
        let known = kubeconfig.contexts.iter().any(|c| c.name == context);
        if !known {
            let names: Vec<&str> = kubeconfig
                .contexts
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(config_error(
                Some(&context),
                format!(
                    "no context {context:?} in the kubeconfig (it has: {})",
                    names.join(", ")
                ),
            ));
        }
        let options = KubeConfigOptions {
            context: Some(context.clone()),
            ..KubeConfigOptions::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
            .await
            .map_err(|e| config_error(Some(&context), e.to_string()))?;
        let token =
            resolve_exec_plugin(&context, &mut config, settings.exec_timeout, waiting).await?;
        let mut client = build(&context, config, settings.api_timeout, token)?;
        client.kubeconfig_user = kubeconfig
            .contexts
            .iter()
            .find(|c| c.name == context)
            .and_then(|c| c.context.as_ref())
            .and_then(|c| c.user.clone());
        clients.push(client);
    }
    Ok(clients)
}
