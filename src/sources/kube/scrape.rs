//! Scraping discovered pods: one worker per pod, straight to the pod IP or through the API
//! server's pod proxy (`/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`, with the cluster's
//! credentials). In `auto` mode a worker starts direct and, the first time the pod cannot be
//! reached (refused, connect failure or timeout), switches to the proxy for good and says so.

use std::collections::HashMap;

use crate::sources::Outbox;
use http::{HeaderValue, Request, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::error::{KubeErrorKind, Unreachable, classify};
use super::update::{KubeUpdate, PodScrape};
use crate::sources::scrape::ACCEPT_TEXT;
use crate::sources::scrape::{PreparedScrape, decode_off_runtime, next_in_slot, slot_offset};
use crate::sources::{ScrapeSettings, ScrapeTarget};
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{ScrapeError, ScrapePayload, ScrapeReport, TargetId};
use kvtop_core::kube_model::{ScrapeRoute, ScrapeVia};

/// Longest API error message kept in a scrape error.
const REASON_LIMIT: usize = 160;

/// Scrape one pod through the API server's proxy, within the timeout and the body cap.
pub async fn scrape_via_proxy(
    client: &kube::Client,
    path: &str,
    settings: &ScrapeSettings,
) -> Result<ScrapePayload, ScrapeError> {
    let fetch = async {
        let request = Request::get(path)
            .header(header::ACCEPT, HeaderValue::from_static(ACCEPT_TEXT))
            .body(kube::client::Body::empty())
            .map_err(|e| ScrapeError::Other(e.to_string()))?;
        let response = client
            .send(request)
            .await
            .map_err(|e| transport_error(&e))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), settings.body_limit)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<LengthLimitError>() {
                    ScrapeError::TooLarge {
                        limit: settings.body_limit,
                    }
                } else {
                    ScrapeError::Body(e.to_string())
                }
            })?
            .to_bytes();
        if !status.is_success() {
            return Err(ScrapeError::Http {
                status: status.as_u16(),
                reason: Some(
                    api_message(&body)
                        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned()),
                ),
            });
        }
        decode_off_runtime(body, settings.limits).await
    };
    match tokio::time::timeout(settings.timeout, fetch).await {
        Ok(result) => result,
        Err(_) => Err(ScrapeError::Timeout {
            after_ms: settings.timeout.as_millis() as u64,
        }),
    }
}

/// The `message` of a Status body, shortened.
fn api_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let message = value.get("message")?.as_str()?;
    Some(message.chars().take(REASON_LIMIT).collect())
}

fn transport_error(err: &kube::Error) -> ScrapeError {
    match classify(err) {
        KubeErrorKind::Timeout { after } => ScrapeError::Timeout {
            after_ms: after.as_millis() as u64,
        },
        KubeErrorKind::Unreachable(Unreachable::Refused) => ScrapeError::Refused,
        KubeErrorKind::Unreachable(why) => ScrapeError::Connect(format!("API server: {why}")),
        KubeErrorKind::ConnectionLost(why) => ScrapeError::Body(why),
        KubeErrorKind::Api { code, message, .. } => ScrapeError::Http {
            status: code,
            reason: Some(message.chars().take(REASON_LIMIT).collect()),
        },
        other => ScrapeError::Other(format!("{other:?}")),
    }
}

/// Whether a direct scrape failed for want of a route to the pod.
fn unreachable(error: &ScrapeError) -> bool {
    matches!(
        error,
        ScrapeError::Refused | ScrapeError::Connect(_) | ScrapeError::Timeout { .. }
    )
}

/// Where a pod's scrape worker sends its scrapes and what it learns about the pod (a switch
/// to the API proxy).
#[derive(Debug, Clone)]
pub struct WorkerOutboxes {
    pub scrapes: Outbox<ScrapeReport>,
    pub updates: Outbox<KubeUpdate>,
}

/// The running pod scrape workers. Dropping it stops them.
pub struct PodScrapers {
    http: reqwest::Client,
    settings: ScrapeSettings,
    clients: HashMap<String, kube::Client>,
    events: WorkerOutboxes,
    workers: HashMap<TargetId, JoinHandle<()>>,
    /// What the scrape slots are laid on (see `sources::scrape::next_in_slot`).
    epoch: Instant,
}

impl PodScrapers {
    /// Workers scrape with `http` (direct) or the context's client (proxy).
    pub fn new(
        http: reqwest::Client,
        settings: ScrapeSettings,
        clients: HashMap<String, kube::Client>,
        events: WorkerOutboxes,
    ) -> PodScrapers {
        PodScrapers {
            http,
            settings,
            clients,
            events,
            workers: HashMap::new(),
            epoch: Instant::now(),
        }
    }

    /// Start scraping a pod (replacing the target's current worker), from its slot's next
    /// instant: pods share the slots of up to `TARGETS_PER_SLOT` as static targets do, so
    /// pods found at different times (a rollout's) are scraped together, one wake-up a slot.
    pub fn start(&mut self, scrape: PodScrape) {
        self.stop(scrape.target);
        let id = scrape.target;
        let client = self.clients.get(&scrape.key.context).cloned();
        let interval = self.settings.interval;
        let offset = slot_offset(interval, id.0 as usize, self.workers.len() + 1);
        let worker = Worker {
            http: self.http.clone(),
            settings: self.settings.clone(),
            client,
            events: self.events.clone(),
            scrape,
            first: next_in_slot(self.epoch, Instant::now(), interval, offset),
        };
        self.workers.insert(id, tokio::spawn(worker.run()));
    }

    /// Stop scraping a target.
    pub fn stop(&mut self, id: TargetId) {
        if let Some(handle) = self.workers.remove(&id) {
            handle.abort();
        }
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }
}

impl Drop for PodScrapers {
    fn drop(&mut self) {
        for handle in self.workers.values() {
            handle.abort();
        }
    }
}

struct Worker {
    http: reqwest::Client,
    settings: ScrapeSettings,
    client: Option<kube::Client>,
    events: WorkerOutboxes,
    scrape: PodScrape,
    /// When its first scrape is due.
    first: Instant,
}

impl Worker {
    async fn run(self) {
        let id = self.scrape.target;
        let direct = self.scrape.endpoint.direct_url().map(|url| {
            let target = ScrapeTarget {
                id,
                url,
                bearer_token: None,
            };
            PreparedScrape::new(&self.http, &target, &self.settings)
        });
        let proxy_path = self
            .scrape
            .endpoint
            .proxy_path(&self.scrape.key.namespace, &self.scrape.key.name);
        let mut route = match (self.scrape.via, &direct) {
            (ScrapeVia::Proxy, _) | (ScrapeVia::Auto, None) => ScrapeRoute::Proxy,
            _ => ScrapeRoute::Direct,
        };
        if route == ScrapeRoute::Proxy && !self.announce(route).await {
            return;
        }
        let mut ticker = tokio::time::interval_at(self.first, self.settings.interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = Instant::now();
            let mut outcome = match (&direct, route) {
                (Some(direct), ScrapeRoute::Direct) => {
                    direct.scrape(&self.http, &self.settings).await
                }
                _ => self.via_proxy(&proxy_path).await,
            };
            let fell_back = self.scrape.via == ScrapeVia::Auto
                && route == ScrapeRoute::Direct
                && outcome.as_ref().err().is_some_and(unreachable);
            if fell_back {
                route = ScrapeRoute::Proxy;
                if !self.announce(route).await {
                    return;
                }
                outcome = self.via_proxy(&proxy_path).await;
            }
            let report = ScrapeReport {
                target: id,
                at: unix_now(),
                took: started.elapsed().as_secs_f64(),
                outcome,
            };
            if !self.events.scrapes.send(report).await {
                return;
            }
        }
    }

    async fn via_proxy(&self, path: &str) -> Result<ScrapePayload, ScrapeError> {
        match &self.client {
            Some(client) => scrape_via_proxy(client, path, &self.settings).await,
            None => Err(ScrapeError::Other(format!(
                "no client for context {}",
                self.scrape.key.context
            ))),
        }
    }

    async fn announce(&self, route: ScrapeRoute) -> bool {
        let update = KubeUpdate::Route {
            target: self.scrape.target,
            route,
        };
        self.events.updates.send(update).await
    }
}
