//! `[kubernetes]`: discovering vLLM pods through the Kubernetes API, and the command-line flags
//! that override it (`--kube`, `--kubeconfig`, `--context`, `-n`, `-A`, `-l`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::error::{ConfigError, Origin};
use super::file::DurationValue;
use super::paths::expand_path;
use super::units::format_duration;
use super::validate::{Problem, Setting};
use kvtop_core::kube_model::{DEFAULT_SELECTORS, LabelSelector, ScrapeVia};

/// Shortest accepted pod poll period.
pub(crate) const MIN_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Most log lines or events kept per pod.
pub(crate) const MAX_LINES: usize = 10_000;

/// `[kubernetes]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KubernetesSection {
    pub enabled: Option<bool>,
    pub kubeconfig: Option<String>,
    pub contexts: Option<Vec<String>>,
    pub namespace: Option<String>,
    pub all_namespaces: Option<bool>,
    pub selectors: Option<Vec<String>>,
    pub metrics_port: Option<u16>,
    pub metrics_path: Option<String>,
    pub scrape_via: Option<String>,
    pub routing_label: Option<String>,
    pub poll_interval: Option<DurationValue>,
    pub api_timeout: Option<DurationValue>,
    pub exec_timeout: Option<DurationValue>,
    pub log_lines: Option<usize>,
    pub event_lines: Option<usize>,
    /// Fewest ready replicas an action may leave in a Deployment.
    pub min_ready: Option<u32>,
    /// `[kubernetes.context.NAME]`: per-context action policy.
    pub context: Option<std::collections::BTreeMap<String, ContextPolicy>>,
}

/// `[kubernetes.context.NAME]`: what actions may do through one kubeconfig context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextPolicy {
    /// No mutation is sent through this context.
    #[serde(default)]
    pub read_only: bool,
    /// Actions need the target's name typed to confirm.
    #[serde(default)]
    pub protected: bool,
}

/// Kubernetes discovery settings, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesConfig {
    /// Discover pods (`--kube` or `enabled = true`).
    pub enabled: bool,
    /// Kubeconfig file; `None`: `$KUBECONFIG`, then `~/.kube/config`, then in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// Contexts to watch together; empty: the current context.
    pub contexts: Vec<String>,
    /// Namespace; `None`: each context's default namespace.
    pub namespace: Option<String>,
    /// Every namespace (`-A`); wins over `namespace`.
    pub all_namespaces: bool,
    /// Label selectors; a pod matching any of them is watched. The defaults also let pods
    /// running vLLM or SGLang in (see [`KubernetesConfig::recognizes_workloads`]).
    pub selectors: Vec<String>,
    /// Metrics port for pods that name none (no annotation, no `metrics`/`http` port).
    pub metrics_port: Option<u16>,
    /// Metrics path for pods without a `prometheus.io/path` annotation.
    pub metrics_path: String,
    pub scrape_via: ScrapeVia,
    /// The label that puts a pod in rotation (shown; drained pods lack it). `None` (the
    /// default): routing is derived from the Services, EndpointSlices and InferencePools.
    pub routing_label: Option<String>,
    /// How often pods are listed (new and gone pods show up within this, plus one scrape).
    pub poll_interval: Duration,
    /// Bound on one API call.
    pub api_timeout: Duration,
    /// Bound on one run of an exec credential plugin (a login that waits for a browser is
    /// given up on, and the plugin stopped, after this).
    pub exec_timeout: Duration,
    /// Log lines kept per pod (0: logs are not read).
    pub log_lines: usize,
    /// Events kept per pod (0: events are not read).
    pub event_lines: usize,
    /// Fewest ready replicas an action may leave in a Deployment.
    pub min_ready: u32,
    /// Per-context action policy, by context name (absent: neither read-only nor protected).
    pub context_policies: std::collections::BTreeMap<String, ContextPolicy>,
    /// `--read-only`: no mutation is sent through any context.
    pub read_only: bool,
}

impl KubernetesConfig {
    /// Whether the selectors are the defaults, which widen rather than narrow: a pod whose
    /// image or command runs vLLM or SGLang is discovered even when no selector matches. The
    /// user's own selectors (`selectors = […]`, `-l`) narrow the search to their pods.
    pub fn recognizes_workloads(&self) -> bool {
        self.selectors
            .iter()
            .map(String::as_str)
            .eq(DEFAULT_SELECTORS)
    }

    /// The action policy of `context`.
    pub(crate) fn policy_of(&self, context: &str) -> ContextPolicy {
        self.context_policies
            .get(context)
            .cloned()
            .unwrap_or_default()
    }
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        KubernetesConfig {
            enabled: false,
            kubeconfig: None,
            contexts: Vec::new(),
            namespace: None,
            all_namespaces: false,
            selectors: DEFAULT_SELECTORS.iter().map(|s| (*s).to_owned()).collect(),
            metrics_port: None,
            metrics_path: kvtop_core::kube_model::endpoint::DEFAULT_METRICS_PATH.to_owned(),
            scrape_via: ScrapeVia::Auto,
            routing_label: None,
            poll_interval: Duration::from_secs(2),
            api_timeout: Duration::from_secs(5),
            exec_timeout: Duration::from_secs(30),
            log_lines: 200,
            event_lines: 20,
            min_ready: 1,
            context_policies: std::collections::BTreeMap::new(),
            read_only: false,
        }
    }
}

/// The Kubernetes flags as typed; `None`/empty/false leaves the configured value alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeOverrides {
    /// `--kube`.
    pub enable: bool,
    pub kubeconfig: Option<PathBuf>,
    /// `--context`, repeatable; replaces the configured contexts.
    pub contexts: Vec<String>,
    /// `-n/--namespace`.
    pub namespace: Option<String>,
    /// `-A/--all-namespaces`.
    pub all_namespaces: bool,
    /// `-l/--selector`, repeatable; replaces the configured selectors.
    pub selectors: Vec<String>,
    /// `--read-only`: every mutation refused (does not by itself turn discovery on).
    pub read_only: bool,
}

impl KubeOverrides {
    /// True when any Kubernetes flag was given (each implies `--kube`).
    pub fn any(&self) -> bool {
        self.enable
            || self.kubeconfig.is_some()
            || !self.contexts.is_empty()
            || self.namespace.is_some()
            || self.all_namespaces
            || !self.selectors.is_empty()
    }
}

/// Resolve the section; `base` anchors a relative kubeconfig path.
pub(crate) fn resolve(
    section: KubernetesSection,
    base: Option<&std::path::Path>,
) -> Result<KubernetesConfig, Problem> {
    let mut k = KubernetesConfig::default();
    let problem =
        |key: &'static str, message: String| Problem::new(Setting::Kubernetes(key), message);
    if let Some(enabled) = section.enabled {
        k.enabled = enabled;
    }
    if let Some(path) = section.kubeconfig {
        if path.trim().is_empty() {
            return Err(problem("kubeconfig", "must not be empty".into()));
        }
        k.kubeconfig = Some(expand_path(&path, base));
    }
    if let Some(contexts) = section.contexts {
        k.contexts = check_names(contexts).map_err(|m| problem("contexts", m))?;
    }
    if let Some(ns) = section.namespace {
        k.namespace = Some(check_namespace(&ns).map_err(|m| problem("namespace", m))?);
    }
    if let Some(all) = section.all_namespaces {
        k.all_namespaces = all;
    }
    if let Some(selectors) = section.selectors {
        k.selectors = check_selectors(selectors).map_err(|m| problem("selectors", m))?;
    }
    if let Some(port) = section.metrics_port {
        if port == 0 {
            return Err(problem(
                "metrics_port",
                "must be a port from 1 to 65535".into(),
            ));
        }
        k.metrics_port = Some(port);
    }
    if let Some(path) = section.metrics_path {
        if !path.starts_with('/') {
            return Err(problem(
                "metrics_path",
                format!("{path:?} must start with /"),
            ));
        }
        k.metrics_path = path;
    }
    if let Some(via) = section.scrape_via {
        k.scrape_via = ScrapeVia::parse(&via).ok_or_else(|| {
            problem(
                "scrape_via",
                format!("{via:?} is not a scrape route (use auto, direct or proxy)"),
            )
        })?;
    }
    if let Some(label) = section.routing_label {
        LabelSelector::parse(&label)
            .ok()
            .filter(|s| s.requirements.len() == 1 && !label.contains(['=', '!', ' ']))
            .ok_or_else(|| problem("routing_label", format!("{label:?} is not a label key")))?;
        k.routing_label = Some(label);
    }
    if let Some(poll) = section.poll_interval {
        if poll.0 < MIN_POLL_INTERVAL {
            return Err(problem(
                "poll_interval",
                format!(
                    "{} is below the minimum of {}",
                    format_duration(poll.0),
                    format_duration(MIN_POLL_INTERVAL)
                ),
            ));
        }
        k.poll_interval = poll.0;
    }
    if let Some(timeout) = section.api_timeout {
        if timeout.0.is_zero() {
            return Err(problem("api_timeout", "must be longer than 0s".into()));
        }
        k.api_timeout = timeout.0;
    }
    if let Some(timeout) = section.exec_timeout {
        if timeout.0.is_zero() {
            return Err(problem("exec_timeout", "must be longer than 0s".into()));
        }
        k.exec_timeout = timeout.0;
    }
    if let Some(n) = section.log_lines {
        k.log_lines = check_lines(n).map_err(|m| problem("log_lines", m))?;
    }
    if let Some(n) = section.event_lines {
        k.event_lines = check_lines(n).map_err(|m| problem("event_lines", m))?;
    }
    if let Some(n) = section.min_ready {
        k.min_ready = n;
    }
    if let Some(policies) = section.context {
        k.context_policies = policies;
    }
    Ok(k)
}

fn check_names(names: Vec<String>) -> Result<Vec<String>, String> {
    names
        .into_iter()
        .map(|n| {
            let n = n.trim().to_owned();
            if n.is_empty() {
                Err("a context name is empty".to_owned())
            } else {
                Ok(n)
            }
        })
        .collect()
}

/// A namespace: a DNS label (lowercase letters, digits, `-`, at most 63).
fn check_namespace(ns: &str) -> Result<String, String> {
    let ns = ns.trim();
    let ok = !ns.is_empty()
        && ns.len() <= 63
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if ok {
        Ok(ns.to_owned())
    } else {
        Err(format!(
            "{ns:?} is not a namespace name (lowercase letters, digits and '-')"
        ))
    }
}

fn check_selectors(selectors: Vec<String>) -> Result<Vec<String>, String> {
    if selectors.is_empty() {
        return Err("give at least one selector (\"\" selects every pod)".into());
    }
    selectors
        .into_iter()
        .map(|s| {
            LabelSelector::parse(&s)
                .map(|_| s.trim().to_owned())
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn check_lines(n: usize) -> Result<usize, String> {
    if n > MAX_LINES {
        Err(format!("{n} is above the maximum of {MAX_LINES}"))
    } else {
        Ok(n)
    }
}

impl KubernetesConfig {
    /// Apply the Kubernetes flags. Any of them turns discovery on. On error nothing changes.
    pub fn apply(&mut self, o: &KubeOverrides) -> Result<(), ConfigError> {
        let flag = |key: &str, message: String| ConfigError::Invalid {
            origin: Origin::CommandLine,
            key: key.to_owned(),
            message,
        };
        let mut next = self.clone();
        next.enabled |= o.any();
        if let Some(path) = &o.kubeconfig {
            next.kubeconfig = Some(path.clone());
        }
        if !o.contexts.is_empty() {
            next.contexts = check_names(o.contexts.clone()).map_err(|m| flag("--context", m))?;
        }
        if let Some(ns) = &o.namespace {
            next.namespace = Some(check_namespace(ns).map_err(|m| flag("--namespace", m))?);
        }
        next.all_namespaces |= o.all_namespaces;
        next.read_only |= o.read_only;
        if !o.selectors.is_empty() {
            next.selectors =
                check_selectors(o.selectors.clone()).map_err(|m| flag("--selector", m))?;
        }
        *self = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml_text: &str) -> KubernetesSection {
        toml::from_str(toml_text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn defaults_cover_production_stack_llm_d_and_plain_vllm() {
        let k = KubernetesConfig::default();
        assert!(!k.enabled);
        assert_eq!(k.selectors.len(), 3);
        assert_eq!(k.scrape_via, ScrapeVia::Auto);
        assert_eq!(k.metrics_path, "/metrics");
        assert_eq!(k.poll_interval, Duration::from_secs(2));
        assert_eq!(k.routing_label, None, "derived from the routes");
    }

    #[test]
    fn a_full_section_resolves() {
        let k = resolve(
            section(
                r#"
                enabled = true
                kubeconfig = "kube/config"
                contexts = ["prod-a", "prod-b"]
                namespace = "llm"
                selectors = ["app=vllm,tier!=canary"]
                metrics_port = 9000
                metrics_path = "/stats"
                scrape_via = "proxy"
                poll_interval = "1s"
                api_timeout = "3s"
                log_lines = 50
                event_lines = 5
                "#,
            ),
            Some(std::path::Path::new("/etc/kvtop")),
        )
        .unwrap_or_else(|p| panic!("{}", p.message));
        assert!(k.enabled);
        assert_eq!(k.kubeconfig, Some(PathBuf::from("/etc/kvtop/kube/config")));
        assert_eq!(k.contexts, ["prod-a", "prod-b"]);
        assert_eq!(k.namespace.as_deref(), Some("llm"));
        assert_eq!(k.selectors, ["app=vllm,tier!=canary"]);
        assert_eq!(k.metrics_port, Some(9000));
        assert_eq!(k.scrape_via, ScrapeVia::Proxy);
        assert_eq!((k.log_lines, k.event_lines), (50, 5));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, key) in [
            ("scrape_via = \"tunnel\"", "scrape_via"),
            ("selectors = [\"app=v llm\"]", "selectors"),
            ("selectors = []", "selectors"),
            ("namespace = \"LLM\"", "namespace"),
            ("poll_interval = \"100ms\"", "poll_interval"),
            ("metrics_path = \"metrics\"", "metrics_path"),
            ("routing_label = \"a=b\"", "routing_label"),
            ("log_lines = 20000", "log_lines"),
        ] {
            let err = resolve(section(text), None)
                .err()
                .unwrap_or_else(|| panic!("{text} accepted"));
            assert_eq!(err.setting, Setting::Kubernetes(key), "{text}");
        }
    }

    #[test]
    fn only_the_default_selectors_let_pods_in_by_what_they_run() {
        let mut k = KubernetesConfig::default();
        assert!(k.recognizes_workloads());
        k.apply(&KubeOverrides {
            selectors: vec!["app=vllm".into()],
            ..KubeOverrides::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(!k.recognizes_workloads(), "the user's selector narrows");
        let k = resolve(
            section("selectors = [\"app.kubernetes.io/name=vllm\"]"),
            None,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(!k.recognizes_workloads());
    }

    #[test]
    fn flags_turn_discovery_on_and_replace_lists() {
        let mut k = KubernetesConfig::default();
        k.apply(&KubeOverrides {
            namespace: Some("llm".into()),
            contexts: vec!["a".into(), "b".into()],
            selectors: vec!["model=llama-8b".into()],
            ..KubeOverrides::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(k.enabled);
        assert_eq!(k.contexts, ["a", "b"]);
        assert_eq!(k.selectors, ["model=llama-8b"]);
        let before = k.clone();
        let err = k
            .apply(&KubeOverrides {
                selectors: vec!["bad selector".into()],
                ..KubeOverrides::default()
            })
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(err.key(), Some("--selector"));
        assert_eq!(k, before);
        assert!(!KubeOverrides::default().any());
    }
}
