//! `[prometheus]`: reading the fleet through a Prometheus server. The file section, its
//! resolved form, and the checks (URL, credentials from a file or the environment, CA file,
//! label names). Secrets never appear in `Debug` output or messages.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::file::{DurationValue, SizeValue};
use super::paths::expand_path;
use super::targets::{TokenSource, read_token};
use kvtop_core::signals::promql::LabelMap;

/// Default limit on one (decompressed) answer of Prometheus: a 1,000-engine answer is a few
/// hundred KiB, a start-up range answer a few MiB.
pub const DEFAULT_PROMETHEUS_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Largest CA file accepted.
const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;

/// `[prometheus]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrometheusSection {
    pub url: Option<String>,
    pub bearer_token_file: Option<String>,
    pub bearer_token_env: Option<String>,
    pub username: Option<String>,
    pub password_file: Option<String>,
    pub password_env: Option<String>,
    pub ca_file: Option<String>,
    pub timeout: Option<DurationValue>,
    pub body_limit: Option<SizeValue>,
    pub backfill: Option<DurationValue>,
    pub dcgm: Option<bool>,
    pub engines: Option<bool>,
    pub pod_label: Option<String>,
    pub namespace_label: Option<String>,
    pub model_label: Option<String>,
    pub engine_label: Option<String>,
    pub instance_label: Option<String>,
    pub node_label: Option<String>,
    pub replica_labels: Option<Vec<String>>,
    pub engine_jobs: Option<Vec<String>>,
    pub backfill_timeout: Option<DurationValue>,
}

/// A key of `[prometheus]`, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PromKey {
    Url,
    BearerTokenFile,
    BearerTokenEnv,
    Username,
    PasswordFile,
    PasswordEnv,
    CaFile,
    Timeout,
    BodyLimit,
    Backfill,
    Engines,
    EngineJobs,
    BackfillTimeout,
    Label(&'static str),
}

impl PromKey {
    pub(crate) fn name(self) -> &'static str {
        match self {
            PromKey::Url => "url",
            PromKey::BearerTokenFile => "bearer_token_file",
            PromKey::BearerTokenEnv => "bearer_token_env",
            PromKey::Username => "username",
            PromKey::PasswordFile => "password_file",
            PromKey::PasswordEnv => "password_env",
            PromKey::CaFile => "ca_file",
            PromKey::Timeout => "timeout",
            PromKey::BodyLimit => "body_limit",
            PromKey::Backfill => "backfill",
            PromKey::Engines => "engines",
            PromKey::EngineJobs => "engine_jobs",
            PromKey::BackfillTimeout => "backfill_timeout",
            PromKey::Label(key) => key,
        }
    }
}

/// How kvtop proves who it is to Prometheus.
#[derive(Clone, PartialEq, Eq)]
pub enum PrometheusAuth {
    /// `Authorization: Bearer …`.
    Bearer(String),
    /// HTTP basic authentication.
    Basic { username: String, password: String },
}

impl fmt::Debug for PrometheusAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrometheusAuth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            PrometheusAuth::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
        }
    }
}

/// The resolved `[prometheus]` section (or `--prometheus URL`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusConfig {
    /// Base URL of the server (`http://prometheus:9090`, or with a path prefix).
    pub url: String,
    pub auth: Option<PrometheusAuth>,
    /// Extra CA certificates (PEM) trusted for HTTPS, and the file they came from.
    pub ca: Option<(PathBuf, Vec<u8>)>,
    /// Bound on one query; `None` follows the scrape timeout.
    pub timeout: Option<Duration>,
    /// Bound on one decompressed answer.
    pub body_limit: usize,
    /// History read at start-up; `None` follows the chart range, zero reads none.
    pub backfill: Option<Duration>,
    /// Read GPUs (DCGM) through Prometheus too.
    pub dcgm: bool,
    /// Read engines through Prometheus (off: GPUs only, engines scraped directly).
    pub engines: bool,
    pub labels: LabelMap,
    /// Scrape jobs whose targets are engines even before any of their series is seen (a job
    /// whose every target is down from the start).
    pub engine_jobs: Vec<String>,
    /// Bound on each start-up history query (they read far more than a cycle's).
    pub backfill_timeout: Duration,
}

/// Default bound on one start-up history query.
pub const DEFAULT_BACKFILL_TIMEOUT: Duration = Duration::from_secs(30);

impl PrometheusConfig {
    /// A server at `url` with every other setting at its default.
    pub fn at(url: String) -> Self {
        PrometheusConfig {
            url,
            auth: None,
            ca: None,
            timeout: None,
            body_limit: DEFAULT_PROMETHEUS_BODY_LIMIT,
            backfill: None,
            dcgm: true,
            engines: true,
            labels: LabelMap::default(),
            engine_jobs: Vec::new(),
            backfill_timeout: DEFAULT_BACKFILL_TIMEOUT,
        }
    }
}

/// Checks a Prometheus base URL: http or https, a host, no credentials in it.
pub(crate) fn check_prometheus_url(text: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(text.trim())
        .map_err(|e| format!("{text:?} is not a valid URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{text:?}: the scheme must be http or https, not {:?}",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "credentials in the URL would be shown on screen; use username with \
             password_file/password_env, or bearer_token_file/bearer_token_env"
                .to_owned(),
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{text:?} has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "{text:?}: give the server's base URL, without a query or fragment"
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Resolves the section. Errors name the key.
pub(crate) fn resolve_prometheus(
    section: PrometheusSection,
    base_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PrometheusConfig, (PromKey, String)> {
    let url = section
        .url
        .ok_or((PromKey::Url, "is required in [prometheus]".to_owned()))?;
    let mut config =
        PrometheusConfig::at(check_prometheus_url(&url).map_err(|m| (PromKey::Url, m))?);

    let bearer = secret(
        section.bearer_token_file,
        section.bearer_token_env,
        (PromKey::BearerTokenFile, PromKey::BearerTokenEnv),
        base_dir,
        env,
    )?;
    let password = secret(
        section.password_file,
        section.password_env,
        (PromKey::PasswordFile, PromKey::PasswordEnv),
        base_dir,
        env,
    )?;
    config.auth = match (bearer, section.username, password) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err((
                PromKey::Username,
                "set either a bearer token or a username and password, not both".to_owned(),
            ));
        }
        (Some(token), None, None) => Some(PrometheusAuth::Bearer(token)),
        (None, Some(username), Some(password)) => {
            if username.is_empty() || username.contains(':') {
                return Err((
                    PromKey::Username,
                    "must be non-empty and without ':'".to_owned(),
                ));
            }
            Some(PrometheusAuth::Basic { username, password })
        }
        (None, Some(_), None) => {
            return Err((
                PromKey::Username,
                "needs password_file or password_env".to_owned(),
            ));
        }
        (None, None, Some(_)) => {
            return Err((
                PromKey::PasswordFile,
                "a password needs a username".to_owned(),
            ));
        }
        (None, None, None) => None,
    };

    if let Some(file) = section.ca_file {
        let path = expand_path(&file, base_dir);
        let pem = read_ca(&path).map_err(|m| (PromKey::CaFile, m))?;
        config.ca = Some((path, pem));
    }
    if let Some(timeout) = section.timeout {
        if timeout.0.is_zero() {
            return Err((PromKey::Timeout, "must be longer than 0s".to_owned()));
        }
        config.timeout = Some(timeout.0);
    }
    if let Some(limit) = section.body_limit {
        config.body_limit = usize::try_from(limit.0)
            .ok()
            .filter(|l| *l >= 1024)
            .ok_or((PromKey::BodyLimit, "must be at least 1KiB".to_owned()))?;
    }
    config.backfill = section.backfill.map(|b| b.0);
    if let Some(dcgm) = section.dcgm {
        config.dcgm = dcgm;
    }
    if let Some(engines) = section.engines {
        config.engines = engines;
    }
    if !config.engines && !config.dcgm {
        return Err((
            PromKey::Engines,
            "with dcgm = false too, nothing would be read from Prometheus".to_owned(),
        ));
    }

    let labels = &mut config.labels;
    for (key, value, slot) in [
        ("pod_label", section.pod_label, &mut labels.pod),
        (
            "namespace_label",
            section.namespace_label,
            &mut labels.namespace,
        ),
        ("model_label", section.model_label, &mut labels.model),
        ("engine_label", section.engine_label, &mut labels.engine),
        (
            "instance_label",
            section.instance_label,
            &mut labels.instance,
        ),
    ] {
        if let Some(value) = value {
            *slot = label_name(&value).map_err(|m| (PromKey::Label(key), m))?;
        }
    }
    if let Some(node) = section.node_label {
        labels.node = Some(label_name(&node).map_err(|m| (PromKey::Label("node_label"), m))?);
    }
    if let Some(replicas) = section.replica_labels {
        labels.replicas = replicas
            .iter()
            .map(|r| label_name(r))
            .collect::<Result<_, _>>()
            .map_err(|m| (PromKey::Label("replica_labels"), m))?;
    }
    if let Some(jobs) = section.engine_jobs {
        if jobs.iter().any(|j| j.trim().is_empty()) {
            return Err((
                PromKey::EngineJobs,
                "job names must not be empty".to_owned(),
            ));
        }
        config.engine_jobs = jobs.into_iter().map(|j| j.trim().to_owned()).collect();
    }
    if let Some(timeout) = section.backfill_timeout {
        if timeout.0.is_zero() {
            return Err((
                PromKey::BackfillTimeout,
                "must be longer than 0s".to_owned(),
            ));
        }
        config.backfill_timeout = timeout.0;
    }
    let names = config.labels.names();
    let repeated = names
        .iter()
        .enumerate()
        .find_map(|(i, name)| names.iter().take(i).any(|n| n == name).then_some(*name));
    if let Some(name) = repeated {
        return Err((
            PromKey::Label("pod_label"),
            format!("the label {name:?} is given two roles; each role needs its own label"),
        ));
    }
    Ok(config)
}

/// A secret from a file or an environment variable (not both).
fn secret(
    file: Option<String>,
    var: Option<String>,
    keys: (PromKey, PromKey),
    base_dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<String>, (PromKey, String)> {
    let source = match (file, var) {
        (Some(_), Some(_)) => {
            return Err((
                keys.1,
                format!(
                    "set either {} or {}, not both",
                    keys.0.name(),
                    keys.1.name()
                ),
            ));
        }
        (Some(file), None) => (TokenSource::File(expand_path(&file, base_dir)), keys.0),
        (None, Some(var)) => (TokenSource::Env(var), keys.1),
        (None, None) => return Ok(None),
    };
    read_token(&source.0, env)
        .map(Some)
        .map_err(|m| (source.1, m))
}

/// A Prometheus label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn label_name(text: &str) -> Result<String, String> {
    let text = text.trim();
    let mut chars = text.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a Prometheus label name (letters, digits and '_', not starting \
             with a digit)"
        ))
    }
}

fn read_ca(path: &Path) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read CA file {}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.len() > MAX_CA_FILE_BYTES {
        return Err(format!(
            "CA file {} is larger than 1MiB; is it the right file?",
            path.display()
        ));
    }
    let pem = std::fs::read(path).map_err(cannot)?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(format!(
            "CA file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn resolve(text: &str, env: &[(&str, &str)]) -> Result<PrometheusConfig, (PromKey, String)> {
        let section: PrometheusSection = toml::from_str(text).expect("section parses");
        let lookup = |name: &str| {
            env.iter()
                .find(|(var, _)| *var == name)
                .map(|(_, value)| OsString::from(value))
        };
        resolve_prometheus(section, Some(Path::new("/etc/kvtop")), &lookup)
    }

    #[test]
    fn a_url_alone_gives_the_defaults() {
        let config = resolve("url = \"http://prom.monitoring:9090/\"", &[]).expect("valid");
        assert_eq!(
            config,
            PrometheusConfig::at("http://prom.monitoring:9090".into())
        );
        assert_eq!(config.labels.pod, "pod");
        assert!(config.dcgm);
    }

    #[test]
    fn basic_auth_and_labels_are_read() {
        let config = resolve(
            "url = \"https://prom.example/prometheus\"\nusername = \"kvtop\"\n\
             password_env = \"PROM_PW\"\npod_label = \"kubernetes_pod_name\"\n\
             node_label = \"node\"\ndcgm = false\nbackfill = \"0s\"",
            &[("PROM_PW", "s3cret")],
        )
        .expect("valid");
        assert_eq!(config.url, "https://prom.example/prometheus");
        assert_eq!(
            config.auth,
            Some(PrometheusAuth::Basic {
                username: "kvtop".into(),
                password: "s3cret".into()
            })
        );
        assert!(!format!("{config:?}").contains("s3cret"));
        assert_eq!(config.labels.pod, "kubernetes_pod_name");
        assert_eq!(config.labels.node.as_deref(), Some("node"));
        assert!(!config.dcgm);
        assert_eq!(config.backfill, Some(Duration::ZERO));
    }

    #[test]
    fn mistakes_name_their_key() {
        let key = |text: &str, env: &[(&str, &str)]| resolve(text, env).map_err(|(k, _)| k.name());
        assert_eq!(key("", &[]).err(), Some("url"));
        assert_eq!(
            key("url = \"http://u:p@prom:9090\"", &[]).err(),
            Some("url")
        );
        assert_eq!(
            key(
                "url = \"http://prom:9090\"\nbearer_token_env = \"T\"\nusername = \"a\"",
                &[("T", "tok")]
            )
            .err(),
            Some("username")
        );
        assert_eq!(
            key("url = \"http://prom:9090\"\nusername = \"a\"", &[]).err(),
            Some("username")
        );
        assert_eq!(
            key(
                "url = \"http://prom:9090\"\nengines = false\ndcgm = false",
                &[]
            )
            .err(),
            Some("engines")
        );
        assert_eq!(
            key("url = \"http://prom:9090\"\npod_label = \"9pod\"", &[]).err(),
            Some("pod_label")
        );
        assert_eq!(
            key("url = \"http://prom:9090\"\nengine_label = \"pod\"", &[]).err(),
            Some("pod_label")
        );
        assert_eq!(
            key(
                "url = \"http://prom:9090\"\nca_file = \"/nonexistent/ca.pem\"",
                &[]
            )
            .err(),
            Some("ca_file")
        );
        assert_eq!(
            key(
                "url = \"http://prom:9090\"\nbearer_token_env = \"UNSET\"",
                &[]
            )
            .err(),
            Some("bearer_token_env")
        );
    }

    #[test]
    fn the_section_goes_through_the_whole_pipeline_and_errors_point_at_the_key() {
        let path = Path::new("/etc/kvtop/config.toml");
        let config = crate::config::load_str(
            path,
            "[prometheus]\nurl = \"http://prom:9090\"\nnode_label = \"node\"\n",
        )
        .expect("valid");
        let prom = config.prometheus.clone().expect("section");
        assert_eq!(prom.url, "http://prom:9090");
        let err = crate::config::load_str(path, "[prometheus]\nurl = \"ftp://prom\"\n")
            .expect_err("bad scheme");
        assert_eq!(err.key(), Some("prometheus.url"));
        assert!(
            err.to_string().starts_with("/etc/kvtop/config.toml:2:"),
            "{err}"
        );
        let err = crate::config::load_str(
            path,
            "[prometheus]\nurl = \"http://prom:9090\"\nbackfill = \"2h\"\n",
        )
        .expect_err("longer than the history");
        assert_eq!(err.key(), Some("prometheus.backfill"));
        // --prometheus replaces the URL and keeps the section's other settings.
        let mut config = config;
        config
            .apply(crate::config::Overrides {
                prometheus: Some("https://other:9091/".into()),
                ..crate::config::Overrides::default()
            })
            .expect("valid");
        let prom = config.prometheus.expect("section");
        assert_eq!(prom.url, "https://other:9091");
        assert_eq!(prom.labels.node.as_deref(), Some("node"));
        let err = Config::default()
            .apply(crate::config::Overrides {
                prometheus: Some("prom:9090".into()),
                ..crate::config::Overrides::default()
            })
            .expect_err("no scheme");
        assert_eq!(err.key(), Some("--prometheus"));
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").expect("write");
        let text = format!(
            "url = \"https://prom:9090\"\nca_file = {:?}",
            path.display().to_string()
        );
        let err = resolve(&text, &[]).expect_err("no PEM");
        assert!(err.1.contains("no PEM certificate"), "{}", err.1);
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let config = resolve(&text, &[]).expect("valid");
        assert_eq!(config.ca.map(|(p, _)| p), Some(path));
    }
}
