//! The console's action executor: access reviews for the action menu, plans read from the
//! cluster for the plan screen, and the one run at a time, each as a tokio task that answers
//! the event loop with [`ActionUpdate`] events. The run, its audit records and its
//! interruption when the console quits are [`crate::actions::run`]'s, as for the command line;
//! here they become events.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::actions::audit::{Attribution, AuditLog};
use crate::actions::execute::{ExecSettings, review_access};
use crate::actions::identity::{Identity, identify};
use crate::actions::incident_audit;
use crate::actions::run::{self, Interruption, Run, RunEnd, SharedAudit};
use crate::actions::{
    ActionError, AuditProblem, InFlightProbe, Plan, PolicyChoices, Progress, policy_for,
};
use crate::app::actions::{ActionRequest, ActionUpdate, ActionsView, EntryChecks, RunFailure};
use crate::app::{Command, Event};
use crate::config::KubernetesConfig;
use crate::sources::ScrapeSettings;
use crate::sources::kube::ClusterClient;
use kvtop_core::actions::plan::access_text;

/// Period of the drain wait's readings in the console.
const DRAIN_POLL: Duration = Duration::from_millis(500);
/// How long an eviction a PodDisruptionBudget refuses is retried.
const EVICT_RETRY_FOR: Duration = Duration::from_secs(60);

/// Why a run was not even started; the progress panel tells it as step 1's failure.
#[derive(Debug, thiserror::Error)]
enum NotStarted {
    #[error("one action at a time: another is still running")]
    Busy,
    #[error("{0}; refusing to act without an audit log")]
    NoAudit(AuditProblem),
    #[error(transparent)]
    NoCluster(ActionError),
}

struct Running {
    task: JoinHandle<()>,
    run: Run,
    /// Where to put routing back if the console quits meanwhile.
    cluster: ClusterClient,
}

/// Carries out the console's action commands (see [`ActionRunner::handle`]).
pub struct ActionRunner {
    clusters: HashMap<String, ClusterClient>,
    kube: KubernetesConfig,
    exec: ExecSettings,
    http: reqwest::Client,
    scrape: ScrapeSettings,
    events: mpsc::Sender<Event>,
    audit: Result<SharedAudit, AuditProblem>,
    running: Option<Running>,
    /// Who the API server says the operator is, per context, learnt when a plan is read.
    identities: Arc<Mutex<HashMap<String, Identity>>>,
}

impl ActionRunner {
    /// An executor over `clusters` with `kube`'s settings, writing the audit log at
    /// `audit_path` (`None`: `audit.jsonl` in the state directory). A log that cannot be
    /// opened is reported by [`ActionRunner::view`] and refuses every run.
    pub fn new(
        clusters: &[ClusterClient],
        kube: &KubernetesConfig,
        audit_path: Option<&Path>,
        http: reqwest::Client,
        scrape: ScrapeSettings,
        events: mpsc::Sender<Event>,
    ) -> ActionRunner {
        let path = audit_path
            .map(Path::to_path_buf)
            .or_else(AuditLog::default_path);
        let audit = match path {
            Some(path) => AuditLog::open(&path)
                .map(run::share)
                .map_err(AuditProblem::from),
            None => Err(AuditProblem::NoStateDirectory),
        };
        ActionRunner {
            clusters: clusters
                .iter()
                .map(|c| (c.context.clone(), c.clone()))
                .collect(),
            kube: kube.clone(),
            exec: ExecSettings {
                api_timeout: kube.api_timeout,
                poll: DRAIN_POLL,
                evict_retry_for: EVICT_RETRY_FOR,
            },
            http,
            scrape,
            events,
            audit,
            running: None,
            identities: Arc::default(),
        }
    }

    /// The operator on `context`: as the API server answered, else from the kubeconfig.
    fn identity(&self, context: &str) -> Identity {
        let known = self
            .identities
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(context)
            .cloned();
        known
            .or_else(|| self.clusters.get(context).map(Identity::local))
            .unwrap_or_else(Identity::unknown)
    }

    /// What the console's state needs to know: whether actions are offered (not
    /// `--read-only`, some context writable), the read-only contexts, the routing label, and
    /// an audit log that could not be opened.
    pub fn view(&self) -> ActionsView {
        let read_only: BTreeSet<String> = self
            .clusters
            .keys()
            .filter(|c| self.kube.policy_of(c).read_only)
            .cloned()
            .collect();
        let mut view =
            ActionsView::new(self.kube.routing_label.as_deref().unwrap_or(""), read_only);
        view.enabled = !self.kube.read_only && view.read_only_contexts.len() < self.clusters.len();
        view.audit_problem = self.audit.as_ref().err().map(ToString::to_string);
        view
    }

    /// Carry out an action command; other commands are given back.
    pub fn handle(&mut self, command: Command) -> Option<Command> {
        match command {
            Command::ReviewAccess {
                menu,
                context,
                checks,
            } => self.review(menu, &context, checks),
            Command::PlanAction {
                id,
                request,
                dry_run,
                on_timeout,
            } => self.plan(
                id,
                *request,
                PolicyChoices {
                    dry_run,
                    on_timeout,
                    ..PolicyChoices::default()
                },
            ),
            Command::RunAction {
                id,
                plan,
                request,
                overridden,
            } => self.run(id, *plan, *request, overridden),
            Command::AuditRefused { plan, reason } => {
                let who = Attribution {
                    identity: self.identity(&plan.context),
                    overridden: false,
                };
                let written = match &self.audit {
                    Ok(audit) => {
                        run::record_refusal(audit, &plan, &who, reason).map_err(Into::into)
                    }
                    Err(problem) => Err(problem.clone()),
                };
                if let Err(problem) = written {
                    let _ = self
                        .events
                        .try_send(Event::Action(ActionUpdate::AuditFailed(problem)));
                }
            }
            Command::AuditIncident(note) => {
                let who = self.identity(note.context.as_deref().unwrap_or_default());
                let written = match &self.audit {
                    Ok(audit) => {
                        let mut log = audit.lock().unwrap_or_else(|p| p.into_inner());
                        incident_audit::write_note(&mut log, &note, &who).map_err(Into::into)
                    }
                    Err(problem) => Err(problem.clone()),
                };
                if let Err(problem) = written {
                    let _ = self
                        .events
                        .try_send(Event::Action(ActionUpdate::AuditFailed(problem)));
                }
            }
            other @ (Command::Quit
            | Command::WriteSnapshot(_)
            | Command::ScrapePod(_)
            | Command::StopScrape(_)
            | Command::FollowLogs(_)) => return Some(other),
        }
        None
    }

    fn cluster(&self, context: &str) -> Result<ClusterClient, ActionError> {
        self.clusters
            .get(context)
            .cloned()
            .ok_or_else(|| ActionError::NoCluster(context.to_owned()))
    }

    fn review(&self, menu: u64, context: &str, checks: Vec<EntryChecks>) {
        let events = self.events.clone();
        let limit = self.exec.api_timeout;
        let cluster = self.cluster(context);
        tokio::spawn(async move {
            for check in checks {
                let result = match &cluster {
                    Ok(cluster) => denials(cluster, check.accesses, limit).await,
                    Err(e) => Err(e.clone()),
                };
                let update = ActionUpdate::Access {
                    menu,
                    entry: check.entry,
                    result,
                };
                if events.send(Event::Action(update)).await.is_err() {
                    return;
                }
            }
        });
    }

    fn plan(&self, id: u64, request: ActionRequest, choices: PolicyChoices) {
        let events = self.events.clone();
        let limit = self.exec.api_timeout;
        let cluster = self.cluster(&request.context);
        let policy = policy_for(&self.kube, &request.context, &choices);
        let identities = Arc::clone(&self.identities);
        tokio::spawn(async move {
            let plan = async {
                let cluster = cluster?;
                let (plan, _) = run::prepare(
                    &cluster,
                    request.kind,
                    &request.namespace,
                    &request.target,
                    &policy,
                    limit,
                )
                .await?;
                // Read-only mode sends nothing, not even a review: the kubeconfig's user then.
                if !policy.read_only {
                    let identity = identify(&cluster, limit).await;
                    identities
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .insert(cluster.context.clone(), identity);
                }
                Ok(Box::new(plan))
            }
            .await;
            let _ = events
                .send(Event::Action(ActionUpdate::Planned { id, plan }))
                .await;
        });
    }

    fn run(&mut self, id: u64, plan: Plan, request: ActionRequest, overridden: bool) {
        let started = self.start(id, plan, request, overridden);
        if let Err(why) = started {
            let refused = ActionUpdate::Finished {
                id,
                outcome: Err(RunFailure {
                    step: 0,
                    message: why.to_string(),
                    done: Vec::new(),
                }),
            };
            let _ = self.events.try_send(Event::Action(refused));
        }
    }

    fn start(
        &mut self,
        id: u64,
        plan: Plan,
        request: ActionRequest,
        overridden: bool,
    ) -> Result<(), NotStarted> {
        if self.running.as_ref().is_some_and(|r| !r.run.finished()) {
            return Err(NotStarted::Busy);
        }
        let audit = self.audit.clone().map_err(NotStarted::NoAudit)?;
        let cluster = self.cluster(&plan.context).map_err(NotStarted::NoCluster)?;
        let mut probe = InFlightProbe::via_proxy(
            &cluster,
            request.pods.clone(),
            &self.scrape,
            self.exec.api_timeout,
        );
        if let (false, Some(row)) = (request.via_proxy, request.row) {
            probe = probe.direct_first(&self.http, row);
        }
        let who = Attribution {
            identity: self.identity(&plan.context),
            overridden,
        };
        let run = Run::new(plan, who, audit);
        let cluster_for_rollback = cluster.clone();
        let task_run = run.clone();
        let events = self.events.clone();
        let exec = self.exec.clone();
        let task = tokio::spawn(async move {
            let progress_events = events.clone();
            let mut report = move |progress: Progress| {
                let update = ActionUpdate::Progress { id, progress };
                let _ = progress_events.try_send(Event::Action(update));
            };
            let end = task_run.execute(&cluster, &exec, &probe, &mut report).await;
            let (outcome, audit) = match end {
                RunEnd::Ended { outcome, audit } => (outcome, audit),
                // Interrupted: the console quit meanwhile and wrote the record.
                RunEnd::Interrupted => return,
                RunEnd::NotAudited(error) => {
                    let message =
                        format!("{}; nothing was sent", NotStarted::NoAudit(error.into()));
                    let refused = ActionUpdate::Finished {
                        id,
                        outcome: Err(RunFailure {
                            step: 0,
                            message,
                            done: Vec::new(),
                        }),
                    };
                    let _ = events.send(Event::Action(refused)).await;
                    return;
                }
            };
            // Before its end: the end's notice must not hide that it went unrecorded.
            if let Err(error) = audit {
                let update = ActionUpdate::AuditFailed(error.into());
                let _ = events.send(Event::Action(update)).await;
            }
            let outcome = outcome.map_err(|failure| RunFailure {
                step: failure.failed.step,
                message: failure.to_string(),
                done: failure.failed.done,
            });
            let _ = events
                .send(Event::Action(ActionUpdate::Finished { id, outcome }))
                .await;
        });
        self.running = Some(Running {
            task,
            run,
            cluster: cluster_for_rollback,
        });
        Ok(())
    }

    /// Stop a run still going (the console is quitting), put back the routing it removed,
    /// and write its `interrupted` line with the steps done so far and the rollback.
    pub async fn shutdown(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        running.task.abort();
        let mut quiet = |_: Progress| {};
        let interrupted = running
            .run
            .interrupt_and_restore(
                Interruption::ConsoleQuit,
                &running.cluster,
                self.exec.api_timeout,
                &mut quiet,
            )
            .await;
        if let Some(Err(error)) = interrupted.map(|i| i.audit) {
            tracing::warn!(%error, "audit log");
        }
    }
}

/// Dropped without [`ActionRunner::shutdown`]: no time to roll back, but the interrupted
/// line is written, naming the routing left removed.
impl Drop for ActionRunner {
    fn drop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let interrupted = running.run.interrupt(Interruption::ConsoleQuit);
        running.task.abort();
        if let Some(Err(error)) = interrupted.map(|i| i.audit) {
            tracing::warn!(%error, "audit log");
        }
    }
}

/// The denied accesses among `accesses`, each as `may not VERB RESOURCE NAME: REASON`.
async fn denials(
    cluster: &ClusterClient,
    accesses: Vec<kvtop_core::actions::plan::Access>,
    limit: Duration,
) -> Result<Vec<String>, ActionError> {
    let mut denied = Vec::new();
    for access in accesses {
        let answer = review_access(cluster, access, limit)
            .await
            .map_err(ActionError::Api)?;
        if !answer.allowed {
            let why = if answer.reason.is_empty() {
                "denied by RBAC".to_owned()
            } else {
                answer.reason
            };
            denied.push(format!("may not {}: {why}", access_text(&answer.access)));
        }
    }
    Ok(denied)
}
