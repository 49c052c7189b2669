//! The HTTP side: instant and range queries against one Prometheus server, each bounded in time
//! (connect, headers and body, plus Prometheus' own `timeout` parameter) and in size.

use std::time::Duration;

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, HeaderValue};

use crate::config::{PrometheusAuth, PrometheusConfig};
use crate::sources::scrape::{GZIP, classify, read_capped};
use kvtop_core::fleet::ScrapeError;

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{url}: not a usable base URL")]
    BadUrl { url: String },
    #[error("CA file {path}: {message}")]
    Ca { path: String, message: String },
    #[error("cannot create the HTTP client for Prometheus: {0}")]
    Build(String),
}

/// A raw answer: HTTP status and the (decompressed) body, decoded by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct RawAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// How requests are made.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// Bound on one request, body included.
    pub timeout: Duration,
    pub body_limit: usize,
    pub user_agent: String,
}

/// A client for one Prometheus server.
#[derive(Clone)]
pub struct PromClient {
    http: reqwest::Client,
    query_url: reqwest::Url,
    range_url: reqwest::Url,
    targets_url: reqwest::Url,
    /// The server's URL, for messages and as the source's name.
    url: String,
    auth: Option<PrometheusAuth>,
    settings: ClientSettings,
}

impl std::fmt::Debug for PromClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromClient")
            .field("url", &self.url)
            .field("auth", &self.auth)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PromClient {
    /// A client for the configured server: its CA certificates trusted on top of the system's.
    pub fn new(config: &PrometheusConfig, settings: ClientSettings) -> Result<Self, ClientError> {
        let bad_url = || ClientError::BadUrl {
            url: config.url.clone(),
        };
        let mut base = reqwest::Url::parse(&config.url).map_err(|_| bad_url())?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let query_url = base.join("api/v1/query").map_err(|_| bad_url())?;
        let range_url = base.join("api/v1/query_range").map_err(|_| bad_url())?;
        let mut targets_url = base.join("api/v1/targets").map_err(|_| bad_url())?;
        targets_url.query_pairs_mut().append_pair("state", "active");

        let mut builder = reqwest::Client::builder()
            .user_agent(settings.user_agent.clone())
            .connect_timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::limited(5))
            .pool_max_idle_per_host(32)
            .tcp_nodelay(true)
            .no_proxy();
        if let Some((path, pem)) = &config.ca {
            let certs =
                reqwest::Certificate::from_pem_bundle(pem).map_err(|e| ClientError::Ca {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })?;
            if certs.is_empty() {
                return Err(ClientError::Ca {
                    path: path.display().to_string(),
                    message: "no certificate in the file".into(),
                });
            }
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        Ok(PromClient {
            http,
            query_url,
            range_url,
            targets_url,
            url: config.url.clone(),
            auth: config.auth.clone(),
            settings,
        })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// An instant query, evaluated at `time` (seconds since the epoch) or at the server's now.
    pub async fn query(&self, promql: &str, time: Option<f64>) -> Result<RawAnswer, ScrapeError> {
        let mut url = self.query_url.clone();
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("query", promql);
            if let Some(time) = time {
                pairs.append_pair("time", &format!("{time:.3}"));
            }
            pairs.append_pair("timeout", &self.server_timeout());
        }
        self.get(url).await
    }

    /// A range query over `[start, end]` every `step` seconds.
    pub async fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<RawAnswer, ScrapeError> {
        let mut url = self.range_url.clone();
        url.query_pairs_mut()
            .append_pair("query", promql)
            .append_pair("start", &format!("{start:.3}"))
            .append_pair("end", &format!("{end:.3}"))
            .append_pair("step", &format!("{step:.3}"))
            .append_pair("timeout", &self.server_timeout());
        self.get(url).await
    }

    /// The server's build information (`/api/v1/status/buildinfo`: version, revision), which
    /// Prometheus and VictoriaMetrics both serve (`kvtop doctor`).
    pub async fn build_info(&self) -> Result<RawAnswer, ScrapeError> {
        let url = self
            .query_url
            .join("status/buildinfo")
            .map_err(|e| ScrapeError::Other(e.to_string()))?;
        self.get(url).await
    }

    /// The scrape targets and their health (`/api/v1/targets?state=active`).
    pub async fn targets(&self) -> Result<RawAnswer, ScrapeError> {
        self.get(self.targets_url.clone()).await
    }

    /// The same client bounding each request by `timeout` instead (the start-up backfill
    /// reads far more than a cycle).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        let mut client = self.clone();
        client.settings.timeout = timeout;
        client
    }

    /// Prometheus' own evaluation timeout: the client's, so the server gives up as well.
    fn server_timeout(&self) -> String {
        format!("{}ms", self.settings.timeout.as_millis().max(1))
    }

    async fn get(&self, url: reqwest::Url) -> Result<RawAnswer, ScrapeError> {
        let timeout = self.settings.timeout;
        match tokio::time::timeout(timeout, self.fetch(url)).await {
            Ok(result) => result,
            Err(_) => Err(ScrapeError::Timeout {
                after_ms: timeout.as_millis() as u64,
            }),
        }
    }

    async fn fetch(&self, url: reqwest::Url) -> Result<RawAnswer, ScrapeError> {
        let mut request = self
            .http
            .get(url)
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(ACCEPT_ENCODING, HeaderValue::from_static(GZIP));
        request = match &self.auth {
            Some(PrometheusAuth::Bearer(token)) => request.bearer_auth(token),
            Some(PrometheusAuth::Basic { username, password }) => {
                request.basic_auth(username, Some(password))
            }
            None => request,
        };
        let response = request.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let body = read_capped(response, self.settings.body_limit).await?;
        Ok(RawAnswer { status, body })
    }
}
