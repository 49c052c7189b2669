//! PURE. Where a pod's metrics are served, and the two ways of reaching them: the pod IP
//! directly, or through the API server's pod proxy.
//!
//! Port, first match wins: the `prometheus.io/port` annotation; a port of the vLLM container
//! named `metrics`, then `http`; the configured port; the container's only port; vLLM's default
//! 8000. Path: the `prometheus.io/path` annotation, else the configured path (`/metrics`).
//! Scheme: `prometheus.io/scheme` (`http` unless it says `https`).

use std::collections::BTreeMap;
use std::fmt;

/// vLLM's default port (`--port`).
pub(crate) const VLLM_DEFAULT_PORT: u16 = 8000;
/// Default metrics path.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";
/// Annotation naming the metrics port.
pub(crate) const ANNOTATION_PORT: &str = "prometheus.io/port";
/// Annotation naming the metrics path.
pub(crate) const ANNOTATION_PATH: &str = "prometheus.io/path";
/// Annotation naming the metrics scheme.
pub(crate) const ANNOTATION_SCHEME: &str = "prometheus.io/scheme";

/// How pods are scraped (`scrape_via` in `[kubernetes]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScrapeVia {
    /// Pod IP first; on a connect failure or timeout switch that pod to the proxy for good.
    #[default]
    Auto,
    /// Always the pod IP.
    Direct,
    /// Always the API server's pod proxy.
    Proxy,
}

impl ScrapeVia {
    /// `auto`, `direct` or `proxy`.
    pub fn parse(text: &str) -> Option<ScrapeVia> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(ScrapeVia::Auto),
            "direct" => Some(ScrapeVia::Direct),
            "proxy" => Some(ScrapeVia::Proxy),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ScrapeVia::Auto => "auto",
            ScrapeVia::Direct => "direct",
            ScrapeVia::Proxy => "proxy",
        }
    }
}

impl fmt::Display for ScrapeVia {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The route one scrape took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ScrapeRoute {
    Direct,
    Proxy,
}

/// Which rule chose the port (shown in the detail view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PortSource {
    Annotation,
    NamedMetrics,
    NamedHttp,
    Configured,
    OnlyPort,
    Default,
}

/// Defaults from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointDefaults {
    /// Port used when the pod names none (`metrics_port`).
    pub port: Option<u16>,
    /// Path used when the pod names none (`metrics_path`).
    pub path: String,
}

impl Default for EndpointDefaults {
    fn default() -> Self {
        EndpointDefaults {
            port: None,
            path: DEFAULT_METRICS_PATH.to_owned(),
        }
    }
}

/// A declared container port.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamedPort {
    pub name: Option<String>,
    pub port: u16,
}

/// A pod's metrics endpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetricsEndpoint {
    /// `http` or `https`.
    pub https: bool,
    /// The pod IP, once assigned.
    pub pod_ip: Option<String>,
    pub port: u16,
    /// Starts with `/`.
    pub path: String,
    pub port_source: PortSource,
}

impl MetricsEndpoint {
    /// Choose the endpoint of a pod from its annotations and the vLLM container's ports.
    pub fn choose(
        annotations: &BTreeMap<String, String>,
        ports: &[NamedPort],
        pod_ip: Option<&str>,
        defaults: &EndpointDefaults,
    ) -> MetricsEndpoint {
        let named = |wanted: &str| {
            ports
                .iter()
                .find(|p| p.name.as_deref() == Some(wanted))
                .map(|p| p.port)
        };
        let annotated = annotations
            .get(ANNOTATION_PORT)
            .and_then(|p| p.trim().parse::<u16>().ok())
            .filter(|p| *p != 0);
        let (port, port_source) = if let Some(p) = annotated {
            (p, PortSource::Annotation)
        } else if let Some(p) = named("metrics") {
            (p, PortSource::NamedMetrics)
        } else if let Some(p) = named("http") {
            (p, PortSource::NamedHttp)
        } else if let Some(p) = defaults.port {
            (p, PortSource::Configured)
        } else if let [only] = ports {
            (only.port, PortSource::OnlyPort)
        } else {
            (VLLM_DEFAULT_PORT, PortSource::Default)
        };
        let path = annotations
            .get(ANNOTATION_PATH)
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .unwrap_or(defaults.path.as_str());
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        let https = annotations
            .get(ANNOTATION_SCHEME)
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("https"));
        MetricsEndpoint {
            https,
            pod_ip: pod_ip.map(str::to_owned).filter(|ip| !ip.is_empty()),
            port,
            path,
            port_source,
        }
    }

    /// `http://POD_IP:PORT/PATH` (IPv6 addresses in brackets), once the pod has an IP.
    pub fn direct_url(&self) -> Option<String> {
        let ip = self.pod_ip.as_deref()?;
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_owned()
        };
        let scheme = if self.https { "https" } else { "http" };
        Some(format!("{scheme}://{host}:{}{}", self.port, self.path))
    }

    /// The API server path that proxies to this endpoint:
    /// `/api/v1/namespaces/NS/pods/[https:]NAME:PORT/proxy/PATH`.
    pub fn proxy_path(&self, namespace: &str, pod: &str) -> String {
        let scheme = if self.https { "https:" } else { "" };
        format!(
            "/api/v1/namespaces/{namespace}/pods/{scheme}{pod}:{}/proxy{}",
            self.port, self.path
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn port(name: Option<&str>, port: u16) -> NamedPort {
        NamedPort {
            name: name.map(str::to_owned),
            port,
        }
    }

    #[test]
    fn port_precedence_annotation_metrics_http_config_only_default() {
        let d = EndpointDefaults::default();
        let ports = [port(Some("http"), 8000), port(Some("metrics"), 9090)];
        let e = MetricsEndpoint::choose(&ann(&[(ANNOTATION_PORT, "7000")]), &ports, None, &d);
        assert_eq!((e.port, e.port_source), (7000, PortSource::Annotation));
        let e = MetricsEndpoint::choose(&ann(&[]), &ports, None, &d);
        assert_eq!((e.port, e.port_source), (9090, PortSource::NamedMetrics));
        let e = MetricsEndpoint::choose(&ann(&[]), &ports[..1], None, &d);
        assert_eq!((e.port, e.port_source), (8000, PortSource::NamedHttp));
        let configured = EndpointDefaults {
            port: Some(8080),
            ..EndpointDefaults::default()
        };
        let unnamed = [port(None, 5000), port(Some("grpc"), 5001)];
        let e = MetricsEndpoint::choose(&ann(&[]), &unnamed, None, &configured);
        assert_eq!((e.port, e.port_source), (8080, PortSource::Configured));
        let e = MetricsEndpoint::choose(&ann(&[]), &unnamed[..1], None, &d);
        assert_eq!((e.port, e.port_source), (5000, PortSource::OnlyPort));
        let e = MetricsEndpoint::choose(&ann(&[]), &unnamed, None, &d);
        assert_eq!((e.port, e.port_source), (8000, PortSource::Default));
        let e = MetricsEndpoint::choose(&ann(&[(ANNOTATION_PORT, "nope")]), &[], None, &d);
        assert_eq!(e.port_source, PortSource::Default);
    }

    #[test]
    fn urls_for_both_routes() {
        let d = EndpointDefaults::default();
        let a = ann(&[
            (ANNOTATION_PATH, "stats/prom"),
            (ANNOTATION_SCHEME, "HTTPS"),
        ]);
        let e = MetricsEndpoint::choose(&a, &[port(Some("http"), 8000)], Some("10.1.2.3"), &d);
        assert_eq!(
            e.direct_url().as_deref(),
            Some("https://10.1.2.3:8000/stats/prom")
        );
        assert_eq!(
            e.proxy_path("llm", "vllm-0"),
            "/api/v1/namespaces/llm/pods/https:vllm-0:8000/proxy/stats/prom"
        );
        let v6 = MetricsEndpoint::choose(&ann(&[]), &[], Some("fd00::5"), &d);
        assert_eq!(
            v6.direct_url().as_deref(),
            Some("http://[fd00::5]:8000/metrics")
        );
        let pending = MetricsEndpoint::choose(&ann(&[]), &[], Some(""), &d);
        assert_eq!(pending.direct_url(), None);
        assert_eq!(
            pending.proxy_path("ns", "p"),
            "/api/v1/namespaces/ns/pods/p:8000/proxy/metrics"
        );
    }

    #[test]
    fn scrape_via_parses_its_three_words() {
        assert_eq!(ScrapeVia::parse(" Proxy "), Some(ScrapeVia::Proxy));
        assert_eq!(ScrapeVia::parse("auto"), Some(ScrapeVia::Auto));
        assert_eq!(ScrapeVia::parse("direct"), Some(ScrapeVia::Direct));
        assert_eq!(ScrapeVia::parse("tunnel"), None);
    }
}
