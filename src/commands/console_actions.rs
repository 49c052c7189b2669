//! The console's action executor: access reviews for the action menu, plans read from the
//! cluster for the plan screen, and the one run at a time, each as a tokio task that answers
//! the event loop with [`ActionUpdate`] events. Every run and every refusal is written to the
//! audit log; a run still going when the console quits leaves an `interrupted` line.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::actions::audit::{AuditLog, AuditRecord, AuditResult};
use crate::actions::execute::{
    self, ExecSettings, in_flight_direct, in_flight_via_proxy, now_rfc3339, review_access,
};
use crate::actions::{Plan, PolicyChoices, Progress, policy_for};
use crate::app::actions::{ActionRequest, ActionUpdate, ActionsView, EntryChecks, RunFailure};
use crate::app::{Command, Event};
use crate::config::KubernetesConfig;
use crate::sources::ScrapeSettings;
use crate::sources::kube::{ClusterClient, KubeError};
use kvtop_core::actions::plan::access_text;

/// Period of the drain wait's readings in the console.
const DRAIN_POLL: Duration = Duration::from_millis(500);
/// How long an eviction a PodDisruptionBudget refuses is retried.
const EVICT_RETRY_FOR: Duration = Duration::from_secs(60);

/// What a run shares with the executor, so that quitting mid-run can still say what was done.
#[derive(Debug)]
struct RunShared {
    plan: Plan,
    /// The step under way (0-based).
    step: Option<usize>,
    /// Its audit line is written.
    finished: bool,
}

struct Running {
    task: JoinHandle<()>,
    shared: Arc<Mutex<RunShared>>,
}

/// Carries out the console's action commands (see [`ActionRunner::handle`]).
pub struct ActionRunner {
    clusters: HashMap<String, ClusterClient>,
    kube: KubernetesConfig,
    exec: ExecSettings,
    http: reqwest::Client,
    scrape: ScrapeSettings,
    events: mpsc::Sender<Event>,
    audit: Result<Arc<Mutex<AuditLog>>, String>,
    running: Option<Running>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
                .map(|log| Arc::new(Mutex::new(log)))
                .map_err(|e| e.to_string()),
            None => Err("no state directory for the audit log".to_owned()),
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
        }
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
        let mut view = ActionsView::new(&self.kube.routing_label, read_only);
        view.enabled = !self.kube.read_only && view.read_only_contexts.len() < self.clusters.len();
        view.audit_problem = self.audit.as_ref().err().cloned();
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
            } => self.plan(id, *request, dry_run),
            Command::RunAction { id, plan, request } => self.run(id, *plan, *request),
            Command::AuditRefused { plan, reason } => {
                let mut line = AuditRecord::new(&plan, now_rfc3339(), AuditResult::Refused);
                line.error = Some(reason);
                if let Err(message) = write_audit(&self.audit, &line) {
                    let _ = self
                        .events
                        .try_send(Event::Action(ActionUpdate::AuditFailed(message)));
                }
            }
            other @ (Command::Quit
            | Command::ScrapePod(_)
            | Command::StopScrape(_)
            | Command::FollowLogs(_)) => return Some(other),
        }
        None
    }

    fn cluster(&self, context: &str) -> Result<ClusterClient, String> {
        self.clusters
            .get(context)
            .cloned()
            .ok_or_else(|| format!("no Kubernetes client for context {context}"))
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

    fn plan(&self, id: u64, request: ActionRequest, dry_run: bool) {
        let events = self.events.clone();
        let limit = self.exec.api_timeout;
        let cluster = self.cluster(&request.context);
        let choices = PolicyChoices {
            dry_run,
            ..PolicyChoices::default()
        };
        let policy = policy_for(&self.kube, &request.context, &choices);
        tokio::spawn(async move {
            let plan = async {
                let cluster = cluster?;
                let (mut plan, _) = execute::build_plan(
                    &cluster,
                    request.kind,
                    &request.namespace,
                    &request.target,
                    &policy,
                    limit,
                )
                .await
                .map_err(|e| explain(&e))?;
                // Read-only sends nothing at all, not even an access review.
                if !policy.read_only {
                    execute::preflight(&cluster, &mut plan, limit)
                        .await
                        .map_err(|e| format!("RBAC preflight: {}", explain(&e)))?;
                }
                Ok(Box::new(plan))
            }
            .await;
            let _ = events
                .send(Event::Action(ActionUpdate::Planned { id, plan }))
                .await;
        });
    }

    fn run(&mut self, id: u64, plan: Plan, request: ActionRequest) {
        let refuse = |why: String| ActionUpdate::Finished {
            id,
            outcome: Err(RunFailure {
                step: 0,
                message: why,
                done: Vec::new(),
            }),
        };
        if self
            .running
            .as_ref()
            .is_some_and(|r| !lock(&r.shared).finished)
        {
            let why = "one action at a time: another is still running".to_owned();
            let _ = self.events.try_send(Event::Action(refuse(why)));
            return;
        }
        let audit = match &self.audit {
            Ok(audit) => Arc::clone(audit),
            Err(problem) => {
                let why = format!("{problem}; refusing to act without an audit log");
                let _ = self.events.try_send(Event::Action(refuse(why)));
                return;
            }
        };
        let cluster = match self.cluster(&plan.context) {
            Ok(cluster) => cluster,
            Err(why) => {
                let _ = self.events.try_send(Event::Action(refuse(why)));
                return;
            }
        };
        let shared = Arc::new(Mutex::new(RunShared {
            plan: plan.clone(),
            step: None,
            finished: false,
        }));
        let task_shared = Arc::clone(&shared);
        let events = self.events.clone();
        let exec = self.exec.clone();
        let http = self.http.clone();
        let scrape = self.scrape.clone();
        let task = tokio::spawn(async move {
            let probe = || {
                let (cluster, http, scrape) = (&cluster, &http, &scrape);
                let pod = request.pod.clone();
                let (row, via_proxy, limit) = (request.row, request.via_proxy, exec.api_timeout);
                async move {
                    let pod = pod?;
                    let direct = match (via_proxy, row) {
                        (false, Some(row)) => in_flight_direct(http, row, &pod, scrape).await,
                        _ => None,
                    };
                    match direct {
                        Some(n) => Some(n),
                        None => in_flight_via_proxy(cluster, &pod, limit).await,
                    }
                }
            };
            let progress_events = events.clone();
            let progress_shared = Arc::clone(&task_shared);
            let mut report = move |progress: Progress| {
                if let Progress::Step { index, .. } = &progress {
                    lock(&progress_shared).step = Some(*index);
                }
                let update = ActionUpdate::Progress { id, progress };
                let _ = progress_events.try_send(Event::Action(update));
            };
            let outcome = execute::execute(&cluster, &plan, &exec, probe, &mut report).await;
            let label = format!(
                "{} {} {}",
                plan.kind.name(),
                plan.kind.target_kind(),
                plan.target
            );
            let (line, outcome) = match outcome {
                Ok(done) => {
                    let mut line = AuditRecord::new(&plan, now_rfc3339(), AuditResult::Ok);
                    line.detail = done.clone();
                    (line, Ok(done))
                }
                Err(e) => {
                    let message = format!(
                        "{label}: step {} of {} failed: {}",
                        e.step + 1,
                        plan.steps.len(),
                        explain(&e.error)
                    );
                    let mut line = AuditRecord::new(&plan, now_rfc3339(), AuditResult::Error);
                    line.detail = e.done.clone();
                    line.error = Some(message.clone());
                    let failure = RunFailure {
                        step: e.step,
                        message,
                        done: e.done,
                    };
                    (line, Err(failure))
                }
            };
            let written = {
                let mut state = lock(&task_shared);
                if state.finished {
                    // The console quit meanwhile and wrote the interrupted line.
                    return;
                }
                state.finished = true;
                write_audit(&Ok(audit), &line)
            };
            if let Err(message) = written {
                let _ = events
                    .send(Event::Action(ActionUpdate::AuditFailed(message)))
                    .await;
            }
            let _ = events
                .send(Event::Action(ActionUpdate::Finished { id, outcome }))
                .await;
        });
        self.running = Some(Running { task, shared });
    }

    /// Stop a run still going (the console is quitting) and write its `interrupted` line,
    /// with the steps done so far. Also done on drop.
    pub fn shutdown(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let mut state = lock(&running.shared);
        if state.finished {
            return;
        }
        state.finished = true;
        running.task.abort();
        let texts = state.plan.step_texts();
        let mut line = AuditRecord::new(&state.plan, now_rfc3339(), AuditResult::Interrupted);
        let current = state.step.unwrap_or(0);
        line.detail = texts.iter().take(current).cloned().collect();
        line.error = Some(match (state.step, texts.get(current)) {
            (Some(_), Some(text)) => format!(
                "the console quit during step {} of {}: {text}",
                current + 1,
                texts.len()
            ),
            _ => "the console quit before the first step".to_owned(),
        });
        if let Err(message) = write_audit(&self.audit, &line) {
            tracing::warn!(%message, "audit log");
        }
    }
}

impl Drop for ActionRunner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn write_audit(
    audit: &Result<Arc<Mutex<AuditLog>>, String>,
    line: &AuditRecord,
) -> Result<(), String> {
    match audit {
        Ok(log) => lock(log).write(line).map_err(|e| e.to_string()),
        Err(problem) => Err(problem.clone()),
    }
}

/// The denied accesses among `accesses`, each as `may not VERB RESOURCE NAME: REASON`.
async fn denials(
    cluster: &ClusterClient,
    accesses: Vec<kvtop_core::actions::plan::Access>,
    limit: Duration,
) -> Result<Vec<String>, String> {
    let mut denied = Vec::new();
    for access in accesses {
        let answer = review_access(cluster, access, limit)
            .await
            .map_err(|e| explain(&e))?;
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

/// An API error as one sentence for the operator, with what to make of the codes whose
/// message does not say it already.
pub fn explain(error: &KubeError) -> String {
    let hint = match error.code() {
        Some(404) => " (it no longer exists)",
        Some(409) => " (it was changed meanwhile: read it again and retry)",
        _ => "",
    };
    format!("{error}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::kube::{ApiCall, KubeErrorKind};

    fn api(code: u16, reason: &str) -> KubeError {
        ApiCall::new("delete", "pods")
            .namespace(Some("llm"))
            .name("vllm-0")
            .error(KubeErrorKind::Api {
                code,
                reason: reason.into(),
                message: String::new(),
            })
    }

    #[test]
    fn each_failure_reads_as_one_sentence_with_what_it_means() {
        assert_eq!(
            explain(&api(404, "NotFound")),
            "cannot delete pods llm/vllm-0: HTTP 404 NotFound (it no longer exists)"
        );
        assert_eq!(
            explain(&api(409, "Conflict")),
            "cannot delete pods llm/vllm-0: HTTP 409 Conflict (it was changed meanwhile: read it again and retry)"
        );
        assert_eq!(
            explain(&api(401, "Unauthorized")),
            "cannot delete pods llm/vllm-0: HTTP 401 Unauthorized (the credentials were rejected: refresh the kubeconfig's token)"
        );
        assert_eq!(
            explain(&api(500, "")),
            "cannot delete pods llm/vllm-0: HTTP 500 InternalError (API server error)"
        );
        let lost = ApiCall::new("patch", "nodes")
            .name("n1")
            .error(KubeErrorKind::ConnectionLost("reset by peer".into()));
        assert_eq!(
            explain(&lost),
            "cannot patch nodes n1: connection lost (reset by peer)"
        );
    }
}
