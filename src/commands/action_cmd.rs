//! `kvtop drain | restart | rollout-restart | cordon | uncordon | drain-node`: scriptable
//! Kubernetes actions. The plan is always printed; it runs only when `--confirm` names the
//! target. Exit codes: 0 done, 1 API error, 2 refused (guard, RBAC, read-only), 4 plan only.

use std::process::ExitCode;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::actions::audit::{AuditLog, AuditRecord, AuditResult};
use crate::actions::execute::{self, ExecSettings, Progress, in_flight_via_proxy};
use crate::actions::policy::{PolicyChoices, policy_for};
use crate::cli::{ActionArgs, GlobalArgs};
use crate::sources::kube::{ClusterClient, connect};
use kvtop_core::actions::plan::{ActionKind, Plan, Policy};
use kvtop_core::units::parse_duration;

use super::setup::{load_config, runtime};

/// Every step ran.
pub const EXIT_DONE: u8 = 0;
/// An API call failed.
pub const EXIT_API_ERROR: u8 = 1;
/// A guard, RBAC or read-only mode refused the action.
pub const EXIT_REFUSED: u8 = 2;
/// The plan was printed but not confirmed.
pub const EXIT_PLAN_ONLY: u8 = 4;

/// Run one action from the command line.
pub fn run(kind: ActionKind, args: ActionArgs, global: &GlobalArgs) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kvtop: cannot start: {e}");
            return ExitCode::from(EXIT_API_ERROR);
        }
    };
    ExitCode::from(rt.block_on(run_async(kind, args, global)))
}

fn duration(flag: &str, text: &Option<String>, default: Duration) -> Result<Duration, String> {
    match text {
        Some(t) => parse_duration(t).map_err(|e| format!("--{flag}: {e}")),
        None => Ok(default),
    }
}

async fn run_async(kind: ActionKind, args: ActionArgs, global: &GlobalArgs) -> u8 {
    let mut loaded = load_config(global);
    let mut kube = loaded.config.kubernetes.clone();
    if let Err(e) = kube.apply(&global.kube.overrides()) {
        loaded.problems.push(e.to_string());
    }
    for problem in &loaded.problems {
        eprintln!("kvtop: {problem}");
    }
    if kube.contexts.len() > 1 {
        eprintln!("kvtop: an action acts on one context; name one with --context");
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
            eprintln!("kvtop: {m}");
            return EXIT_REFUSED;
        }
    };
    let clusters = match connect(&kube).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kvtop: {e}");
            return EXIT_API_ERROR;
        }
    };
    let Some(cluster) = clusters.into_iter().next() else {
        eprintln!("kvtop: no Kubernetes context to act on");
        return EXIT_API_ERROR;
    };
    let choices = PolicyChoices {
        min_ready: args.min_ready,
        drain_timeout_s: Some(drain_timeout.as_secs_f64()),
        dry_run: args.dry_run,
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
    let mut audit = match &args.audit_log {
        Some(path) => AuditLog::open(path).map(Some),
        None => match AuditLog::default_path() {
            Some(path) => AuditLog::open(&path).map(Some),
            None => Ok(None),
        },
    };
    let audit_log = match &mut audit {
        Ok(log) => log,
        Err(e) => {
            eprintln!("kvtop: {e}; refusing to act without an audit log");
            return EXIT_REFUSED;
        }
    };
    act(
        &cluster,
        kind,
        &namespace,
        &args,
        &policy,
        &settings,
        audit_log.as_mut(),
    )
    .await
}

fn record(audit: Option<&mut AuditLog>, record: &AuditRecord) {
    if let Some(log) = audit {
        if let Err(e) = log.write(record) {
            eprintln!("kvtop: {e}");
        }
    }
}

async fn act(
    cluster: &ClusterClient,
    kind: ActionKind,
    namespace: &str,
    args: &ActionArgs,
    policy: &Policy,
    settings: &ExecSettings,
    mut audit: Option<&mut AuditLog>,
) -> u8 {
    let limit = settings.api_timeout;
    let (mut plan, pod) =
        match execute::build_plan(cluster, kind, namespace, &args.target, policy, limit).await {
            Ok(built) => built,
            Err(e) => {
                eprintln!("kvtop: {e}");
                return EXIT_API_ERROR;
            }
        };
    // Read-only mode sends nothing at all, not even an access review.
    if !policy.read_only {
        if let Err(e) = execute::preflight(cluster, &mut plan, limit).await {
            eprintln!("kvtop: RBAC preflight: {e}");
            return EXIT_API_ERROR;
        }
    }
    print!("{}", plan.render());
    let confirmed = args.confirm.as_deref() == Some(plan.target.as_str());
    let blocking = plan.blocking_guards(args.override_guards && confirmed);
    if !blocking.is_empty() {
        let reasons: Vec<String> = blocking
            .iter()
            .map(|g| format!("{}: {}", g.name, g.reason))
            .collect();
        let message = format!("refused: {}", reasons.join("; "));
        eprintln!("kvtop: {message}");
        if plan.has_overridable_failure() && !args.override_guards {
            eprintln!(
                "kvtop: pass --override --confirm {} to act anyway",
                plan.target
            );
        }
        let mut line = AuditRecord::new(&plan, execute::now_rfc3339(), AuditResult::Refused);
        line.error = Some(message);
        record(audit.as_deref_mut(), &line);
        return EXIT_REFUSED;
    }
    if !confirmed {
        eprintln!(
            "kvtop: plan only; to run it, pass --confirm {}",
            plan.target
        );
        return EXIT_PLAN_ONLY;
    }
    run_plan(cluster, &plan, pod, settings, audit).await
}

async fn run_plan(
    cluster: &ClusterClient,
    plan: &Plan,
    pod: Option<kvtop_core::kube_model::PodInfo>,
    settings: &ExecSettings,
    audit: Option<&mut AuditLog>,
) -> u8 {
    // Registered before the first mutation, so a signal during the run is always caught here.
    let mut stop = Interruption::listen();
    let probe = || {
        let pod = pod.clone();
        let limit = settings.api_timeout;
        async move {
            match pod {
                Some(pod) => in_flight_via_proxy(cluster, &pod, limit).await,
                None => None,
            }
        }
    };
    let mut started: Vec<String> = Vec::new();
    let mut report = |p: Progress| match p {
        Progress::Step { index, text } => {
            eprintln!("step {}: {text}", index + 1);
            started.push(format!("started step {}: {text}", index + 1));
        }
        Progress::InFlight { in_flight } => match in_flight {
            Some(n) => eprintln!("  in flight: {n:.0}"),
            None => eprintln!("  in flight: unknown (metrics unreadable)"),
        },
        Progress::Note(text) => eprintln!("  {text}"),
    };
    let outcome = tokio::select! {
        outcome = execute::execute(cluster, plan, settings, probe, &mut report) => Ok(outcome),
        signal = stop.recv() => Err(signal),
    };
    let time = execute::now_rfc3339();
    match outcome {
        Ok(Ok(done)) => {
            for line in &done {
                println!("{line}");
            }
            let mut line = AuditRecord::new(plan, time, AuditResult::Ok);
            line.detail = done;
            record(audit, &line);
            EXIT_DONE
        }
        Ok(Err(e)) => {
            eprintln!("kvtop: {e}");
            let mut line = AuditRecord::new(plan, time, AuditResult::Error);
            line.detail = e.done.clone();
            line.error = Some(e.to_string());
            record(audit, &line);
            EXIT_API_ERROR
        }
        Err((name, code)) => {
            let last = started
                .last()
                .map_or("before the first step", String::as_str);
            eprintln!("kvtop: {name}: stopped ({last}); check the target's state");
            let mut line = AuditRecord::new(plan, time, AuditResult::Interrupted);
            line.detail = started;
            line.error = Some(format!("interrupted by {name}"));
            record(audit, &line);
            code
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP while an action runs: it stops, and the attempt is audited as
/// interrupted instead of vanishing with the process.
struct Interruption {
    signals: Vec<(Signal, &'static str, u8)>,
}

impl Interruption {
    fn listen() -> Interruption {
        let wanted = [
            (SignalKind::terminate(), "SIGTERM", 143),
            (SignalKind::interrupt(), "SIGINT", 130),
            (SignalKind::hangup(), "SIGHUP", 129),
        ];
        let signals = wanted
            .into_iter()
            .filter_map(|(kind, name, code)| Some((signal(kind).ok()?, name, code)))
            .collect();
        Interruption { signals }
    }

    /// The first signal received: its name and the exit code it gives (128 + its number).
    async fn recv(&mut self) -> (&'static str, u8) {
        let waits = self.signals.iter_mut().map(|(signal, name, code)| {
            Box::pin(async move {
                if signal.recv().await.is_none() {
                    // The signal driver is gone: this signal can no longer arrive.
                    std::future::pending::<()>().await;
                }
                (*name, *code)
            })
        });
        let waits: Vec<_> = waits.collect();
        if waits.is_empty() {
            return std::future::pending().await;
        }
        futures_util::future::select_all(waits).await.0
    }
}
