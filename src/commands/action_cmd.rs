//! `kvtop drain | undrain | restart | rollout-restart | cordon | uncordon | drain-node`:
//! scriptable Kubernetes actions. The plan is always printed; it runs only when `--confirm`
//! names the target, or as a `--dry-run` (which changes nothing). `--override` lets a failed
//! guard that may be overridden pass; confirming alone never does. Exit codes: 0 done, 1 API
//! error, 2 refused (guard, RBAC, read-only, no audit log to write), 4 plan only, 5 a drain
//! stopped with requests in flight (routing put back), 6 done but its outcome could not be
//! audited.
//! The run itself is [`crate::actions::run`]'s, as in the console: here are the flags, stderr,
//! the exit code and the signals that interrupt it.

use std::process::ExitCode;
use std::time::Duration;

use crate::actions::audit::{Attribution, AuditLog};
use crate::actions::execute::{ExecSettings, Progress, StepError};
use crate::actions::identity::{Identity, identify};
use crate::actions::policy::{PolicyChoices, policy_for};
use crate::actions::run::{self, Interruption, Run, RunEnd, SharedAudit};
use crate::actions::{InFlightProbe, Rollback};
use crate::cli::{ActionArgs, GlobalArgs};
use crate::sources::ScrapeSettings;
use crate::sources::kube::ClusterClient;
use kvtop_core::actions::plan::{ActionKind, Plan, Policy};
use kvtop_core::kube_model::naming::{self, NameError};
use kvtop_core::units::{UnitError, parse_duration};

use super::check::scrape_settings;
use super::setup::{load_config, runtime};
use super::stop_signals::{Signals, connect_kube};

/// Every step ran.
pub(crate) const EXIT_DONE: u8 = 0;
/// An API call failed.
pub(crate) const EXIT_API_ERROR: u8 = 1;
/// A guard, RBAC or read-only mode refused the action.
pub(crate) const EXIT_REFUSED: u8 = 2;
/// The plan was printed but not confirmed.
pub(crate) const EXIT_PLAN_ONLY: u8 = 4;
/// A drain's wait ended with requests in flight: it stopped and put routing back.
pub(crate) const EXIT_STILL_BUSY: u8 = 5;
/// The run ended but its outcome could not be written to the audit log.
pub(crate) const EXIT_AUDIT_FAILED: u8 = 6;

/// Run one action from the command line.
#[inline(never)] // a command entry: see main.rs
pub fn run(kind: ActionKind, args: ActionArgs, global: &GlobalArgs) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            super::err(&format!("kvtop: cannot start: {e}"));
            return ExitCode::from(EXIT_API_ERROR);
        }
    };
    ExitCode::from(rt.block_on(run_async(kind, args, global)))
}

/// A duration flag that does not read as one.
#[derive(Debug, thiserror::Error)]
#[error("--{flag}: {source}")]
struct FlagError {
    flag: &'static str,
    source: UnitError,
}

fn duration(
    flag: &'static str,
    text: &Option<String>,
    default: Duration,
) -> Result<Duration, FlagError> {
    match text {
        Some(t) => parse_duration(t).map_err(|source| FlagError { flag, source }),
        None => Ok(default),
    }
}

/// The target's name checked against Kubernetes naming rules, before anything is read or sent:
/// the name becomes a request path, and the audit must record the object acted on.
fn check_target_name(kind: ActionKind, name: &str) -> Result<(), NameError> {
    let what = match kind {
        ActionKind::DrainPod | ActionKind::RestartPod | ActionKind::Undrain => "pod",
        ActionKind::RolloutRestart => "Deployment",
        ActionKind::Cordon | ActionKind::Uncordon | ActionKind::DrainNode => "node",
    };
    naming::check_subdomain(what, name)
}

async fn run_async(kind: ActionKind, args: ActionArgs, global: &GlobalArgs) -> u8 {
    if let Err(e) = check_target_name(kind, &args.target) {
        super::err(&format!("kvtop: {e}"));
        return EXIT_REFUSED;
    }
    let mut loaded = load_config(global);
    let mut kube = loaded.config.kubernetes.clone();
    if let Err(e) = kube.apply(&global.kube.overrides()) {
        loaded.problems.push(e.to_string());
    }
    for problem in &loaded.problems {
        super::err(&format!("kvtop: {problem}"));
    }
    if let Some(Err(e)) = kube
        .namespace
        .as_deref()
        .map(|ns| naming::check_label("namespace", ns))
    {
        super::err(&format!("kvtop: {e}"));
        return EXIT_REFUSED;
    }
    if kube.contexts.len() > 1 {
        super::err("kvtop: an action acts on one context; name one with --context");
        return EXIT_REFUSED;
    }
    let parsed = (
        duration(
            "drain-timeout",
            &args.drain_timeout,
            Duration::from_secs(120),
        ),
        duration(
            "evict-timeout",
            &args.evict_timeout,
            Duration::from_secs(60),
        ),
    );
    let (drain_timeout, evict_timeout) = match parsed {
        (Ok(d), Ok(e)) => (d, e),
        (Err(m), _) | (_, Err(m)) => {
            super::err(&format!("kvtop: {m}"));
            return EXIT_REFUSED;
        }
    };
    let clusters = match connect_kube(&kube).await {
        Ok(c) => c,
        Err(e) => {
            super::err(&format!("kvtop: {e}"));
            return EXIT_API_ERROR;
        }
    };
    let Some(cluster) = clusters.into_iter().next() else {
        super::err("kvtop: no Kubernetes context to act on");
        return EXIT_API_ERROR;
    };
    let choices = PolicyChoices {
        min_ready: args.min_ready,
        drain_timeout_s: Some(drain_timeout.as_secs_f64()),
        dry_run: args.dry_run,
        on_timeout: args.on_timeout.into(),
        parallelism: args.parallel.map(usize::from),
    };
    let policy = policy_for(&kube, &cluster.context, &choices);
    let settings = ExecSettings {
        api_timeout: kube.api_timeout,
        poll: Duration::from_millis(500),
        evict_retry_for: evict_timeout,
    };
    let namespace = kube
        .namespace
        .clone()
        .unwrap_or_else(|| cluster.default_namespace.clone());
    if let Err(e) = naming::check_label("namespace", &namespace) {
        super::err(&format!("kvtop: {e}"));
        return EXIT_REFUSED;
    }
    let Some(audit_path) = args.audit_log.clone().or_else(AuditLog::default_path) else {
        super::err(
            "kvtop: no state directory for the audit log (pass --audit-log); refusing to act without an audit log",
        );
        return EXIT_REFUSED;
    };
    let audit = match AuditLog::open(&audit_path) {
        Ok(log) => run::share(log),
        Err(e) => {
            super::err(&format!("kvtop: {e}; refusing to act without an audit log"));
            return EXIT_REFUSED;
        }
    };
    let target = Target {
        cluster: &cluster,
        kind,
        namespace: &namespace,
    };
    let scrape = scrape_settings(&loaded.config);
    act(&target, &args, &policy, &settings, &scrape, audit).await
}

/// What the action is on.
struct Target<'a> {
    cluster: &'a ClusterClient,
    kind: ActionKind,
    namespace: &'a str,
}

async fn act(
    on: &Target<'_>,
    args: &ActionArgs,
    policy: &Policy,
    settings: &ExecSettings,
    scrape: &ScrapeSettings,
    audit: SharedAudit,
) -> u8 {
    let limit = settings.api_timeout;
    let prepared = run::prepare(
        on.cluster,
        on.kind,
        on.namespace,
        &args.target,
        policy,
        limit,
    )
    .await;
    let (plan, pods) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            super::err(&format!("kvtop: {e}"));
            return EXIT_API_ERROR;
        }
    };
    super::out_raw(&plan.render());
    let confirmed = args.confirm.as_deref() == Some(plan.target.as_str());
    let overriding = args.override_guards && confirmed;
    let blocking = plan.blocking_guards(overriding);
    // Asked only when something is recorded; read-only mode sends nothing, not even a review.
    let who = || async {
        let identity = if policy.read_only {
            Identity::local(on.cluster)
        } else {
            identify(on.cluster, limit).await
        };
        Attribution {
            identity,
            overridden: overriding && plan.has_overridable_failure(),
        }
    };
    if !blocking.is_empty() {
        let reasons: Vec<String> = blocking
            .iter()
            .map(|g| format!("{}: {}", g.name, g.reason))
            .collect();
        let message = format!("refused: {}", reasons.join("; "));
        super::err(&format!("kvtop: {message}"));
        if plan.has_overridable_failure() && !args.override_guards {
            super::err(&format!(
                "kvtop: pass --override --confirm {} to act anyway",
                plan.target
            ));
        }
        let who = who().await;
        if let Err(e) = run::record_refusal(&audit, &plan, &who, message) {
            super::err(&format!("kvtop: {e}"));
        }
        return EXIT_REFUSED;
    }
    // A server-side dry run changes nothing, so it needs no confirmation.
    if !confirmed && !plan.dry_run {
        super::err(&format!(
            "kvtop: plan only; to run it, pass --confirm {}",
            plan.target
        ));
        return EXIT_PLAN_ONLY;
    }
    let who = who().await;
    let probe = InFlightProbe::via_proxy(on.cluster, pods, scrape, limit);
    run_plan(on.cluster, plan, who, &probe, settings, audit).await
}

fn print_rollback(rollback: Option<&Rollback>) {
    for line in rollback.map(Rollback::lines).unwrap_or_default() {
        super::err(&format!("kvtop: {line}"));
    }
}

async fn run_plan(
    cluster: &ClusterClient,
    plan: Plan,
    who: Attribution,
    probe: &InFlightProbe,
    settings: &ExecSettings,
    audit: SharedAudit,
) -> u8 {
    // Registered before the first mutation, so a signal during the run is always caught here.
    let mut stop = Signals::listen();
    let run = Run::new(plan, who, audit);
    let mut report = |p: Progress| match p {
        Progress::Step { index, text } => super::err(&format!("step {}: {text}", index + 1)),
        Progress::InFlight { pod, in_flight } => match in_flight {
            Some(n) => super::err(&format!("  in flight: {n:.0} ({pod})")),
            None => super::err(&format!("  in flight: unknown, metrics unreadable ({pod})")),
        },
        Progress::Note(text) => super::err(&format!("  {text}")),
    };
    let end = tokio::select! {
        end = run.execute(cluster, settings, probe, &mut report) => Ok(end),
        signal = stop.recv() => Err(signal),
    };
    match end {
        Ok(RunEnd::NotAudited(e)) => {
            super::err(&format!(
                "kvtop: {e}; nothing was sent: refusing to act without an audit log"
            ));
            EXIT_REFUSED
        }
        Ok(RunEnd::Ended { outcome, audit }) => {
            let audited = match audit {
                Ok(()) => true,
                Err(e) => {
                    super::err(&format!(
                        "kvtop: WARNING: the action ran but its outcome is NOT in the audit log: {e}"
                    ));
                    false
                }
            };
            match outcome {
                Ok(done) => {
                    for line in &done {
                        super::out(&line.to_string());
                    }
                    if audited {
                        EXIT_DONE
                    } else {
                        EXIT_AUDIT_FAILED
                    }
                }
                Err(failure) => {
                    // What was done before (a node drain: every pod that did leave) is as
                    // much the result as what failed.
                    for line in &failure.failed.done {
                        super::out(line);
                    }
                    super::err(&format!("kvtop: {failure}"));
                    print_rollback(failure.failed.rollback.as_deref());
                    match failure.failed.error {
                        StepError::StillBusy(_) => EXIT_STILL_BUSY,
                        StepError::Api(_) | StepError::PodsLeft(_) => EXIT_API_ERROR,
                    }
                }
            }
        }
        // Nothing here interrupts a run but the signal below, which ends the select first.
        Ok(RunEnd::Interrupted) => EXIT_API_ERROR,
        Err((name, code)) => {
            let mut quiet = |_: Progress| {};
            let stopped = run
                .interrupt_and_restore(
                    Interruption::Signal(name),
                    cluster,
                    settings.api_timeout,
                    &mut quiet,
                )
                .await;
            let Some(stopped) = stopped else {
                return code;
            };
            let last = stopped
                .record
                .detail
                .last()
                .map_or("before the first step", String::as_str);
            super::err(&format!(
                "kvtop: {name}: stopped ({last}); check the target's state"
            ));
            print_rollback(stopped.record.rollback.as_ref());
            if let Err(e) = stopped.audit {
                super::err(&format!(
                    "kvtop: WARNING: the interruption is NOT in the audit log: {e}"
                ));
            }
            code
        }
    }
}
