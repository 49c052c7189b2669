//! Starting the live console: fleet, scrape workers, terminal, event loop, and giving the
//! terminal back on every exit path.

use std::process::ExitCode;

use std::collections::HashMap;

use tokio::sync::mpsc;

use crate::app::Command;
use crate::app::kube::KubeView;
use crate::app::run::{Executor, ExitReason, run_with};
use crate::app::state::App;
use crate::config::{Config, TargetConfig};
use crate::fleet::Fleet;
use crate::sources::kube::{ClusterClient, Discovery, PodScrapers};
use crate::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use crate::theme::Theme;

/// Queue between the scrape workers and the event loop. Workers wait when it is full, which
/// only happens if the loop falls behind by this many results.
const EVENT_QUEUE: usize = 8192;

/// Run the console on `targets` until the user quits. `notices` are shown in the footer
/// (e.g. a config file problem that was worked around).
pub async fn run_console(
    config: &Config,
    theme: Theme,
    targets: &[TargetConfig],
    source: String,
    notices: Vec<String>,
) -> ExitCode {
    run_console_with(config, theme, targets, source, notices, Vec::new()).await
}

/// The workers the event loop commands: static targets' scrapers, and with Kubernetes the
/// pod scrapers and the discovery (for log following).
struct Workers {
    scrapers: Scrapers,
    pods: Option<PodScrapers>,
    discovery: Option<Discovery>,
}

impl Executor for Workers {
    fn execute(&mut self, command: Command) {
        match command {
            Command::Quit => {}
            Command::ScrapePod(scrape) => {
                if let Some(pods) = &mut self.pods {
                    pods.start(scrape);
                }
            }
            Command::StopScrape(id) => {
                if let Some(pods) = &mut self.pods {
                    pods.stop(id);
                }
                self.scrapers.remove(id);
            }
            Command::FollowLogs(key) => {
                if let Some(discovery) = &self.discovery {
                    discovery.follow(key);
                }
            }
        }
    }
}

/// [`run_console`] plus pods discovered in `clusters` (one per watched context; none: no
/// Kubernetes), with `config.kubernetes`'s settings.
pub async fn run_console_with(
    config: &Config,
    theme: Theme,
    targets: &[TargetConfig],
    source: String,
    notices: Vec<String>,
    clusters: Vec<ClusterClient>,
) -> ExitCode {
    let settings = ScrapeSettings {
        interval: config.interval,
        timeout: config.timeout,
        body_limit: config.body_limit,
        user_agent: config.user_agent.clone(),
    };
    let client = match build_client(&settings) {
        Ok(client) => client,
        Err(err) => {
            eprintln!("kvtop: cannot create the HTTP client: {err}");
            return ExitCode::from(1);
        }
    };
    let mut fleet = Fleet::new(config.fleet_settings());
    let scrape_targets: Vec<ScrapeTarget> = targets
        .iter()
        .map(|t| ScrapeTarget {
            id: fleet.add_target(t.spec()),
            url: t.url.clone(),
            bearer_token: t.bearer_token.clone(),
        })
        .collect();
    let mut app = App::new(fleet, theme, source, config.interval, config.range);
    let now = crate::clock::unix_now();
    for notice in notices {
        app.warn(notice, now);
    }
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let mut workers = Workers {
        scrapers: Scrapers::start(client.clone(), settings.clone(), scrape_targets, tx.clone()),
        pods: None,
        discovery: None,
    };
    if !clusters.is_empty() {
        let k = &config.kubernetes;
        app.kube = KubeView::new(k.scrape_via, clusters.len(), k.all_namespaces);
        let by_context: HashMap<String, kube::Client> = clusters
            .iter()
            .map(|c| (c.context.clone(), c.client.clone()))
            .collect();
        workers.pods = Some(PodScrapers::new(client, settings, by_context, tx.clone()));
        workers.discovery = Some(Discovery::start(&clusters, k, tx));
    } else {
        drop(tx);
    }

    let mut terminal = match crate::terminal::enter() {
        Ok(t) => t,
        Err(err) => {
            eprintln!("kvtop: cannot take over the terminal: {err}");
            return ExitCode::from(1);
        }
    };
    let result = run_with(&mut app, &mut terminal, rx, config.max_fps, &mut workers).await;
    drop(workers);
    drop(terminal);
    crate::terminal::restore();
    match result {
        Ok(reason) => {
            tracing::info!(?reason, "console stopped");
            match reason {
                ExitReason::User | ExitReason::Terminated | ExitReason::InputClosed => {
                    ExitCode::SUCCESS
                }
                // The terminal is gone; the exit status follows the shell convention.
                ExitReason::HangUp => ExitCode::from(129),
            }
        }
        Err(err) => {
            eprintln!("kvtop: terminal error: {err}");
            ExitCode::from(1)
        }
    }
}
