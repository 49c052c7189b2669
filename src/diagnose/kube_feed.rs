//! The pods `kvtop check --kube` observes: the console's discovery and pod scrapers, their
//! updates folded into the observed fleet as the console folds them (targets named as in the
//! console, pod state, events and log lines on each pod for the rules).

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::KubernetesConfig;
use crate::sources::kube::fleet_pods::{remove_pod, target_name, upsert_pod};
use crate::sources::kube::{ClusterClient, Discovery, KubeUpdate, PodScrapers, WorkerOutboxes};
use crate::sources::{Outbox, ScrapeSettings};
use kvtop_core::fleet::{Fleet, ScrapeReport, TargetId};
use kvtop_core::kube_model::{ContextSearch, PodInfo, PodKey, ScrapeVia, explain_empty};

/// Updates queued from discovery and the scrape workers.
const UPDATE_QUEUE: usize = 1024;

/// Discovery and pod scraping of every context, feeding one fleet.
pub struct KubeFeed {
    /// The fleet target of each discovered pod.
    targets: BTreeMap<PodKey, TargetId>,
    via: ScrapeVia,
    /// Names carry the context (several are watched) and the namespace (all are watched).
    show_context: bool,
    show_namespace: bool,
    updates: mpsc::Receiver<KubeUpdate>,
    scrapers: PodScrapers,
    contexts: usize,
    searches: BTreeMap<String, ContextSearch>,
    /// The latest problem of each (context, task), told once on stderr.
    problems: BTreeMap<(String, &'static str), String>,
    _discovery: Discovery,
}

impl KubeFeed {
    /// Start discovering the pods of `clusters`; their scrapes go to `scrapes`.
    pub fn start(
        clusters: &[ClusterClient],
        kube: &KubernetesConfig,
        http: reqwest::Client,
        scrape: ScrapeSettings,
        scrapes: Outbox<ScrapeReport>,
    ) -> KubeFeed {
        let (tx, updates) = mpsc::channel(UPDATE_QUEUE);
        let clients: HashMap<String, kube::Client> = clusters
            .iter()
            .map(|c| (c.context.clone(), c.client.clone()))
            .collect();
        let outboxes = WorkerOutboxes {
            scrapes,
            updates: Outbox::new(tx.clone()),
        };
        KubeFeed {
            targets: BTreeMap::new(),
            via: kube.scrape_via,
            show_context: clusters.len() > 1,
            show_namespace: kube.all_namespaces,
            updates,
            scrapers: PodScrapers::new(http, scrape, clients, outboxes),
            contexts: clusters.len(),
            searches: BTreeMap::new(),
            problems: BTreeMap::new(),
            _discovery: Discovery::start(clusters, kube, Outbox::new(tx)),
        }
    }

    /// Fold updates into `fleet` until every context finished its first discovery round (or
    /// `limit` passed). `Err` with the explanation when no engine was found.
    pub async fn first_round(
        &mut self,
        fleet: &mut Fleet,
        limit: Duration,
    ) -> Result<(), Vec<String>> {
        let deadline = tokio::time::Instant::now() + limit;
        while self.searches.len() < self.contexts {
            match tokio::time::timeout_at(deadline, self.updates.recv()).await {
                Ok(Some(update)) => self.apply(fleet, update),
                Ok(None) | Err(_) => break,
            }
        }
        if self.targets.is_empty() {
            let searches: Vec<ContextSearch> = self.searches.values().cloned().collect();
            let mut lines = explain_empty(&searches);
            if lines.is_empty() {
                lines.push(format!(
                    "no vLLM or SGLang pods found: discovery did not answer within {}",
                    kvtop_core::format::span(limit.as_secs_f64())
                ));
            }
            return Err(lines);
        }
        Ok(())
    }

    /// The fleet target of each discovered pod.
    pub fn pods(&self) -> &BTreeMap<PodKey, TargetId> {
        &self.targets
    }

    /// The next update (never ends while the feed runs).
    pub async fn next(&mut self) -> Option<KubeUpdate> {
        self.updates.recv().await
    }

    /// Fold one update into `fleet`: pods become targets and are scraped, gone ones are
    /// removed, events and log lines land on their pod.
    pub fn apply(&mut self, fleet: &mut Fleet, update: KubeUpdate) {
        match update {
            KubeUpdate::Pods { changed, gone, .. } => {
                for key in gone {
                    if let Some(id) = remove_pod(fleet, &mut self.targets, &key) {
                        self.scrapers.stop(id);
                    }
                }
                for pod in changed {
                    let name = target_name(&pod.key, self.show_context, self.show_namespace);
                    let via = self.via;
                    if let Some(scrape) = upsert_pod(fleet, &mut self.targets, name, pod, via) {
                        self.scrapers.start(scrape);
                    }
                }
            }
            KubeUpdate::Events { key, messages } => {
                if let Some(pod) = self.pod_mut(fleet, &key) {
                    pod.events.replace(messages);
                }
            }
            KubeUpdate::Logs { key, lines } => {
                if let Some(pod) = self.pod_mut(fleet, &key) {
                    pod.logs.extend(lines);
                }
            }
            KubeUpdate::Searched(search) => {
                self.searches.insert(search.context.clone(), search);
            }
            KubeUpdate::Problem {
                context,
                task,
                error,
            } => match error {
                Some(error) => {
                    let text = error.to_string();
                    if self.problems.get(&(context.clone(), task)) != Some(&text) {
                        // A closed stderr (the SSH session dropped) is no reason to panic,
                        // which `eprintln!` would.
                        let _ = writeln!(
                            std::io::stderr().lock(),
                            "kvtop check: {}",
                            kvtop_core::safe_text::line(&text)
                        );
                        self.problems.insert((context, task), text);
                    }
                }
                None => {
                    self.problems.remove(&(context, task));
                }
            },
            KubeUpdate::Workloads { .. } | KubeUpdate::Route { .. } => {}
        }
    }

    fn pod_mut<'a>(&self, fleet: &'a mut Fleet, key: &PodKey) -> Option<&'a mut PodInfo> {
        let id = *self.targets.get(key)?;
        fleet.pod_info_mut(id)
    }
}
