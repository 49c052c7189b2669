//! Starting the live console: fleet, scrape workers, terminal, event loop, and giving the
//! terminal back on every exit path.

use std::process::ExitCode;

use std::collections::HashMap;

use tokio::sync::{mpsc, watch};

use super::console_actions::ActionRunner;
use super::file_limit::{FileLimit, raise_open_file_limit};
use crate::app::kube::KubeView;
use crate::app::run::{Executor, ExitReason, run_with};
use crate::app::state::App;
use crate::app::{Command, Event};
use crate::config::{Config, PrometheusConfig, TargetConfig};
#[cfg(feature = "demo")]
use crate::diagnose::{SimLogFeed, SimLogPoller};
use crate::record::{Recorder, Rotation};
use crate::sources::kube::{ClusterClient, Discovery, PodScrapers, WorkerOutboxes};
use crate::sources::prometheus::{ClientSettings, PollSettings, Poller, PromClient, QueryPlan};
use crate::sources::{Outbox, ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use crate::theme::Theme;
use kvtop_core::fleet::{Fleet, QuantileWindow, Ts};
use kvtop_core::recording::Record;
#[cfg(feature = "demo")]
use kvtop_sim::SimHandle;

/// `cache_config_info` is read through Prometheus every this many cycles.
const SLOW_QUERY_EVERY: u32 = 30;

/// Queue between the scrape workers and the event loop. Workers wait when it is full, which
/// only happens if the loop falls behind by this many results.
const EVENT_QUEUE: usize = 8192;

/// Where the console's data comes from, besides the Prometheus server of `config`.
#[derive(Default)]
pub struct Sources<'a> {
    /// Endpoints scraped directly.
    pub targets: &'a [TargetConfig],
    /// Kubernetes contexts whose vLLM pods are discovered and scraped (none: no Kubernetes).
    pub clusters: Vec<ClusterClient>,
    /// An in-process simulator whose engines' logs feed the rules (the demo).
    #[cfg(feature = "demo")]
    pub sim: Option<&'a SimHandle>,
    /// A line for the end of the help overlay (the demo's kubectl command).
    pub help_note: Option<String>,
    /// `--focus`: the row filter the console starts with, detail pane enlarged.
    pub focus: Option<String>,
    /// Where actions are audited (`None`: the user's audit log; the demo keeps its own).
    pub audit_log: Option<std::path::PathBuf>,
}

/// Run the console on `targets` until the user quits. `notices` are shown in the footer
/// (e.g. a config file problem that was worked around).
pub async fn run_console(
    config: &Config,
    theme: Theme,
    targets: &[TargetConfig],
    source: String,
    notices: Vec<String>,
) -> ExitCode {
    let sources = Sources {
        targets,
        ..Sources::default()
    };
    run_console_with(config, theme, sources, source, notices).await
}

/// The workers the event loop commands: static targets' scrapers, and with Kubernetes the
/// pod scrapers, the discovery (for log following) and the action executor.
struct Workers {
    scrapers: Scrapers,
    pods: Option<PodScrapers>,
    discovery: Option<Discovery>,
    actions: Option<ActionRunner>,
    /// `--record`: what the console ingests, to a file.
    recorder: Option<Recorder>,
    /// Kubernetes updates seen in the events being folded in: recorded once folded in, when
    /// each pod has its target.
    kube_updates: Vec<crate::sources::kube::KubeUpdate>,
    /// The action runs recorded so far.
    recorded_runs: crate::app::run_notes::RunWatch,
    /// Back to the console: what a command the workers ran could not do.
    problems: mpsc::Sender<Event>,
}

impl Executor for Workers {
    fn observe(&mut self, event: &Event, now: Ts) {
        let Some(recorder) = self.recorder.as_mut() else {
            return;
        };
        match event {
            Event::Scrape(report) => recorder.record_scrape(report),
            Event::Source(report) => recorder.record_source(now, report),
            Event::Logs(lines) => recorder.record(&Record::Logs {
                at: now,
                lines: lines.clone(),
            }),
            Event::Kube(update) => self.kube_updates.push(update.clone()),
            _ => {}
        }
    }

    fn settled(&mut self, app: &App, now: Ts) {
        if let Some(recorder) = self.recorder.as_mut() {
            let changes = std::mem::take(&mut self.kube_updates)
                .into_iter()
                .map(|update| crate::record::change_of(update, &app.fleet, &app.kube.targets))
                .collect();
            if app.kube.enabled {
                recorder.record_kube(&app.fleet, now, changes, || app.kube.recorded_state());
            }
            for (at, note) in self.recorded_runs.notes(&app.actions, now) {
                recorder.record(&Record::Action { at, note });
            }
            recorder.observe(&app.fleet, app.diag.live().evaluated_at(), now);
            recorder.flush();
        }
    }

    fn execute(&mut self, command: Command) {
        // Action commands are the runner's; the rest come back.
        let command = match &mut self.actions {
            Some(actions) => match actions.handle(command) {
                Some(other) => other,
                None => return,
            },
            None => command,
        };
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
            // Without Kubernetes there is no runner: the note goes to the audit log in the
            // state directory with the OS user.
            Command::AuditIncident(note) => audit_note_alone(&note),
            Command::WriteSnapshot(job) => {
                let audit = crate::actions::AuditLog::default_path();
                if let Err(err) = super::snapshot_files::write(*job, audit.as_deref()) {
                    tracing::warn!(%err, "snapshot not written");
                    let message = format!("snapshot not written: {err}");
                    let _ = self.problems.try_send(Event::Problem(message));
                }
            }
            // Without Kubernetes no action is offered, so none is asked for.
            Command::ReviewAccess { .. }
            | Command::PlanAction { .. }
            | Command::RunAction { .. }
            | Command::AuditRefused { .. } => {}
        }
    }
}

fn audit_note_alone(note: &crate::app::incident_keys::IncidentNote) {
    use crate::actions::{AuditLog, Identity, incident_audit};
    let Some(path) = AuditLog::default_path() else {
        tracing::warn!("no state directory: the incident note is not audited");
        return;
    };
    let written = AuditLog::open(&path)
        .and_then(|mut log| incident_audit::write_note(&mut log, note, &Identity::unknown()));
    if let Err(err) = written {
        tracing::warn!(%err, "incident note not audited");
    }
}

/// The console on every kind of source: static targets, pods discovered in Kubernetes (with
/// `config.kubernetes`'s settings), Prometheus, and an in-process simulator's logs.
pub async fn run_console_with(
    config: &Config,
    theme: Theme,
    sources: Sources<'_>,
    source: String,
    notices: Vec<String>,
) -> ExitCode {
    let Sources {
        targets,
        clusters,
        #[cfg(feature = "demo")]
        sim,
        help_note,
        focus,
        audit_log,
    } = sources;
    let settings = ScrapeSettings {
        interval: config.interval,
        timeout: config.timeout,
        body_limit: config.body_limit,
        user_agent: config.user_agent.clone(),
        limits: config.payload_limits,
    };
    let client = match build_client(&settings) {
        Ok(client) => client,
        Err(err) => {
            super::err(&format!("kvtop: cannot create the HTTP client: {err}"));
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
    app.help_note = help_note;
    app.clipboard =
        crate::clipboard::allowed(config.clipboard, std::env::var("TERM").ok().as_deref());
    app.state_dir = crate::config::state_dir();
    app.snapshot_span = config.snapshot_span;
    if let Some(columns) = &config.columns {
        app.columns = crate::app::ColumnSets::configured(columns.clone());
    }
    if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
        // As if typed after `/` and kept with Enter: the first matching row is selected.
        app.filter = focus;
        app.detail_expanded = true;
    }
    let now = kvtop_core::clock::unix_now();
    for notice in notices {
        app.warn(notice, now);
    }
    // One socket per target, plus the terminal, the log and the runtime.
    let needed = scrape_targets.len() as u64 + 64;
    if let Some(FileLimit::TooLow { hard }) = raise_open_file_limit(needed) {
        app.warn(
            format!("{needed} open files needed for the targets; the hard limit is {hard}"),
            now,
        );
    }
    app.load_user_rules(config.user_rules_path().as_deref(), now);
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let (window_tx, window_rx) = watch::channel(config.window);
    let _poller = match &config.prometheus {
        Some(prom) => match start_prometheus(config, prom, &mut app.fleet, tx.clone(), window_rx) {
            Ok(poller) => Some(poller),
            Err(message) => {
                super::err(&format!("kvtop: {message}"));
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    #[cfg(feature = "demo")]
    let _sim_logs = sim.map(|sim| {
        let poller = SimLogPoller::matching(sim.control(), &sim.engines, &app.fleet);
        SimLogFeed::start(poller, config.interval, Outbox::new(tx.clone()))
    });
    let recorder = config.record.file.as_deref().and_then(|path| {
        let header = crate::record::header_for(&app.fleet, &app.source, now);
        let rotation = Rotation {
            max_bytes: config.record.max_bytes,
            max_age_secs: config.record.max_age.as_secs_f64(),
            keep: config.record.keep,
        };
        match Recorder::start(path, header, rotation) {
            Ok(recorder) => {
                app.recording = Some(recorder.stats());
                Some(recorder)
            }
            Err(err) => {
                app.warn(format!("not recording: {err}"), now);
                None
            }
        }
    });
    let mut workers = Workers {
        recorder,
        kube_updates: Vec::new(),
        recorded_runs: crate::app::run_notes::RunWatch::default(),
        problems: tx.clone(),
        scrapers: Scrapers::start(
            client.clone(),
            settings.clone(),
            scrape_targets,
            Outbox::new(tx.clone()),
        ),
        pods: None,
        discovery: None,
        actions: None,
    };
    if !clusters.is_empty() {
        let k = &config.kubernetes;
        app.kube = KubeView::new(k.scrape_via, clusters.len(), k.all_namespaces);
        let runner = ActionRunner::new(
            &clusters,
            k,
            audit_log.as_deref(),
            client.clone(),
            settings.clone(),
            tx.clone(),
        );
        app.actions = runner.view();
        if let Some(problem) = &app.actions.audit_problem {
            app.warn(format!("{problem}: actions are refused"), now);
        }
        workers.actions = Some(runner);
        let by_context: HashMap<String, kube::Client> = clusters
            .iter()
            .map(|c| (c.context.clone(), c.client.clone()))
            .collect();
        let outboxes = WorkerOutboxes {
            scrapes: Outbox::new(tx.clone()),
            updates: Outbox::new(tx.clone()),
        };
        workers.pods = Some(PodScrapers::new(client, settings, by_context, outboxes));
        workers.discovery = Some(Discovery::start(&clusters, k, Outbox::new(tx)));
    } else {
        drop(tx);
    }

    let mut terminal = match crate::terminal::enter() {
        Ok(t) => t,
        Err(err) => {
            super::err(&format!("kvtop: cannot take over the terminal: {err}"));
            return ExitCode::from(1);
        }
    };
    let result = run_with(
        &mut app,
        &mut terminal,
        rx,
        config.max_fps,
        Some(window_tx),
        &mut workers,
        crate::ui::draw_into,
    )
    .await;
    // An action still running is stopped and its interrupted line written before leaving.
    if let Some(actions) = workers.actions.as_mut() {
        actions.shutdown().await;
    }
    drop(workers);
    crate::terminal::leave(terminal);
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
        // The terminal went away while drawing: a hangup, as if SIGHUP had come first.
        Err(err) if crate::terminal::is_gone(&err) => ExitCode::from(129),
        Err(err) => {
            super::err(&format!("kvtop: terminal error: {err}"));
            ExitCode::from(1)
        }
    }
}

/// Register the Prometheus source in the fleet and start its worker. The error is a message
/// for the user (a CA file that does not parse, an unusable URL).
fn start_prometheus(
    config: &Config,
    prom: &PrometheusConfig,
    fleet: &mut Fleet,
    events: mpsc::Sender<Event>,
    window: watch::Receiver<QuantileWindow>,
) -> Result<Poller, String> {
    let client = PromClient::new(
        prom,
        ClientSettings {
            timeout: prom.timeout.unwrap_or(config.timeout),
            body_limit: prom.body_limit,
            user_agent: config.user_agent.clone(),
        },
    )
    .map_err(|e| e.to_string())?;
    fleet.add_source(client.url(), &source_name(&prom.url));
    let mut plan = QueryPlan::new(prom.labels.clone(), config.window, prom.dcgm);
    if !prom.engines {
        plan = plan.gpus_only();
    }
    let settings = PollSettings {
        backfill_timeout: prom.backfill_timeout,
        engine_jobs: prom.engine_jobs.clone(),
        ..PollSettings::new(
            config.interval,
            prom.backfill.unwrap_or(config.range),
            SLOW_QUERY_EVERY,
        )
    };
    Ok(Poller::start(
        client,
        plan,
        settings,
        Outbox::new(events),
        window,
    ))
}

/// The row standing for a Prometheus server before it names any pod: `prometheus host:port`.
pub(crate) fn source_name(url: &str) -> String {
    let host = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| url.to_owned());
    format!("prometheus {host}")
}
