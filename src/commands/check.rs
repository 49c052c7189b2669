//! `kvtop check`: observe the fleet headless, evaluate the rules, print the findings and exit
//! with the verdict (0 healthy, 1 warnings, 2 critical, 3 nothing scraped or nothing to check).
//!
//! The fleet is the configured targets (`--target`, the config file), the engine pods of a
//! Kubernetes cluster (`--kube` with `--context`, `-n`, `-A`, `-l`, or `[kubernetes]`
//! enabled; discovered and scraped as the console does, with their state, events and logs
//! for the rules), or a simulator started in-process (`--sim` with `--scenario`, or `--demo`
//! with the demo's story). With the
//! simulator the observation runs on its clock, so `--time-scale` shortens the wait without
//! changing what is measured (see `diagnose::observe`). What the check waits for goes to
//! stderr; the report goes to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use super::setup::{Loaded, load_config};
use crate::cli::{CheckArgs, CheckOutput, GlobalArgs};
use crate::config::Config;
use crate::diagnose::observe::{self, Progress, wall_time};
use crate::diagnose::plan::{AUTO_CAP_SECS, DurationPlan};
use crate::diagnose::report::{self, Format, Verdict, exit};
use crate::diagnose::{Clock, ObserveSettings, ObserveTarget, replay};
use crate::sources::ScrapeSettings;
use crate::ui::format::{age, span};
use kvtop_core::fleet::Ts;
use kvtop_core::rules::RuleSet;

#[inline(never)] // a command entry: see main.rs
pub fn run(args: CheckArgs, global: &GlobalArgs) -> ExitCode {
    let _ = crate::logging::init(crate::logging::LogSink::Stderr, "warn");
    let Loaded {
        mut config,
        problems,
    } = load_config(global);
    for problem in &problems {
        super::err(&format!("kvtop check: {problem}"));
    }
    if let Err(err) = config.kubernetes.apply(&global.kube.overrides()) {
        return fail(&err.to_string());
    }
    let rules = match load_rules(args.rules.clone()) {
        Ok(rules) => rules,
        Err(message) => return fail(&message),
    };
    let duration = match args
        .duration
        .as_deref()
        .map(kvtop_core::units::parse_duration)
    {
        None => None,
        Some(Ok(d)) if !d.is_zero() => Some(d.as_secs_f64()),
        Some(Ok(_)) => return fail("--duration must be longer than zero"),
        Some(Err(e)) => return fail(&format!("--duration: {e}")),
    };
    if let Some(path) = &args.replay {
        return check_replay(path, &args, &rules);
    }
    let runtime = match super::setup::runtime() {
        Ok(rt) => rt,
        Err(err) => return fail(&format!("cannot start the runtime: {err}")),
    };
    if args.from.is_some() || args.to.is_some() {
        return check_past(&config, &args, &rules, &runtime);
    }
    runtime.block_on(async move {
        #[cfg(feature = "demo")]
        let simulated = super::simulated::for_check(&args.simulated).await;
        #[cfg(not(feature = "demo"))]
        let simulated: Option<Result<super::simulated::Simulated, String>> = None;
        if simulated.is_none() && config.kubernetes.enabled {
            let record = global.record.clone();
            return check_pods(&config, &rules, duration, args.output, record).await;
        }
        if simulated.is_none() && config.targets.is_empty() {
            if let Some(prom) = &config.prometheus {
                let record = global.record.clone();
                return check_prometheus(&config, prom, &rules, duration, args.output, record)
                    .await;
            }
        }
        let (targets, clock, sim) = match simulated {
            Some(Ok(s)) => (s.targets, s.clock, Some(s.sim)),
            Some(Err(message)) => return fail(&message),
            None => match configured_targets(&config) {
                Ok(targets) => (targets, Clock::Wall, None::<super::simulated::InProcessSim>),
                Err(message) => return fail(&message),
            },
        };
        let mut scrape = scrape_settings(&config);
        // Against a fast simulator, the interval stays the configured one in simulated time.
        scrape.interval = observe::sim_wall_interval(scrape.interval, clock.scale());
        let settings = ObserveSettings {
            scrape,
            fleet: config.fleet_settings(),
            duration,
            auto_cap: AUTO_CAP_SECS,
            record: global.record.clone(),
        };
        let mut progress = Announce {
            subject: report::plural(targets.len(), "target"),
        };
        let result = observe::observe(&targets, &rules, &settings, clock, &mut progress).await;
        if let Some(sim) = sim {
            sim.shutdown().await;
        }
        let obs = match result {
            Ok(obs) => obs,
            Err(err) => return fail(&err.to_string()),
        };
        print_report(&obs, args.output)
    })
}

/// `check --replay FILE`: the rules over a recording (see `diagnose::replay`).
fn check_replay(path: &std::path::Path, args: &CheckArgs, rules: &RuleSet) -> ExitCode {
    let mut recording = match crate::record::open(path) {
        Ok(recording) => recording,
        Err(err) => return fail(&err.to_string()),
    };
    let start = recording.header().started;
    let instant = |flag: &str, text: &Option<String>| -> Result<Option<Ts>, String> {
        text.as_deref()
            .map(|t| parse_instant(t, start).map_err(|e| format!("--{flag} {t:?}: {e}")))
            .transpose()
    };
    let window = match (instant("from", &args.from), instant("to", &args.to)) {
        (Ok(from), Ok(to)) => replay::Window { from, to },
        (Err(message), _) | (_, Err(message)) => return fail(&message),
    };
    super::err(&format!(
        "kvtop check: replaying {} (recorded {} from {})",
        path.display(),
        kvtop_core::clock::utc(start),
        recording.header().source
    ));
    let (obs, notes) = replay::replay(&mut recording, rules, window, &mut observe::Quiet);
    if let Some(problem) = recording.problem() {
        super::err(&format!("kvtop check: {problem}"));
    }
    if notes.dropped > 0 {
        super::err(&format!(
            "kvtop check: the recording lost {} record(s) to a slow disk while it was made",
            notes.dropped
        ));
    }
    if obs.cycles == 0 {
        return fail("no rules cycle in the recording (or in --from/--to)");
    }
    print_report(&obs, args.output)
}

/// `check --prometheus URL --from TIME [--to TIME]`: the rules over a past window of the
/// server (see `past_window`).
fn check_past(
    config: &Config,
    args: &CheckArgs,
    rules: &RuleSet,
    runtime: &tokio::runtime::Runtime,
) -> ExitCode {
    let Some(prom) = &config.prometheus else {
        return fail(
            "--from and --to replay a recording (--replay FILE) or a Prometheus server's past \
             (--prometheus URL)",
        );
    };
    let Some(from) = args.from.as_deref() else {
        return fail("--to needs --from");
    };
    let window = match super::past_window::WindowArgs::parse(
        from,
        args.to.as_deref(),
        args.step.as_deref(),
        kvtop_core::clock::unix_now(),
    ) {
        Ok(window) => window,
        Err(message) => return fail(&message),
    };
    match runtime.block_on(super::past_window::check(config, prom, rules, window)) {
        Ok(obs) => print_report(&obs, args.output),
        Err(message) => fail(&message),
    }
}

/// An instant given to --from/--to: RFC 3339, or `+DURATION` after `start`.
pub(crate) fn parse_instant(text: &str, start: Ts) -> Result<Ts, String> {
    if let Some(offset) = text.strip_prefix('+') {
        let d = kvtop_core::units::parse_duration(offset).map_err(|e| e.to_string())?;
        return Ok(start + d.as_secs_f64());
    }
    kvtop_core::clock::parse_utc(text)
        .map_err(|e| format!("not an RFC 3339 time or +DURATION ({e})"))
}

/// Print the report in the chosen format; the exit code of its verdict.
fn print_report(obs: &observe::Observation, output: CheckOutput) -> ExitCode {
    let format = match output {
        CheckOutput::Text => Format::Text,
        CheckOutput::Json => Format::Json,
        CheckOutput::Markdown => Format::Markdown,
    };
    super::out_raw(&report::render(obs, format));
    ExitCode::from(Verdict::of(obs).exit_code())
}

/// `check --kube`: the engine pods discovered through the configured contexts, scraped and
/// evaluated as the console does (pod state, events and logs included).
async fn check_pods(
    config: &Config,
    rules: &RuleSet,
    duration: Option<f64>,
    output: CheckOutput,
    record: Option<PathBuf>,
) -> ExitCode {
    let clusters = match super::stop_signals::connect_kube(&config.kubernetes).await {
        Ok(clusters) => clusters,
        Err(err) => return fail(&err.to_string()),
    };
    let settings = ObserveSettings {
        scrape: scrape_settings(config),
        fleet: config.fleet_settings(),
        duration,
        auto_cap: AUTO_CAP_SECS,
        record,
    };
    let contexts: Vec<&str> = clusters.iter().map(|c| c.context.as_str()).collect();
    let mut progress = Announce {
        subject: format!(
            "the engine pods of {} {}",
            if contexts.len() == 1 {
                "context"
            } else {
                "contexts"
            },
            contexts.join(", ")
        ),
    };
    match observe::observe_pods(
        &clusters,
        &config.kubernetes,
        rules,
        &settings,
        &mut progress,
    )
    .await
    {
        Ok(obs) => print_report(&obs, output),
        Err(err) => fail(&err.to_string()),
    }
}

/// `check --prometheus`: the fleet as the Prometheus server reads it, engines it cannot
/// scrape included, evaluated as the console does.
async fn check_prometheus(
    config: &Config,
    prom: &crate::config::PrometheusConfig,
    rules: &RuleSet,
    duration: Option<f64>,
    output: CheckOutput,
    record: Option<PathBuf>,
) -> ExitCode {
    use crate::sources::prometheus::{ClientSettings, PollSettings, PromClient, QueryPlan};
    let client = match PromClient::new(
        prom,
        ClientSettings {
            timeout: prom.timeout.unwrap_or(config.timeout),
            body_limit: prom.body_limit,
            user_agent: config.user_agent.clone(),
        },
    ) {
        Ok(client) => client,
        Err(err) => return fail(&err.to_string()),
    };
    let mut plan = QueryPlan::new(prom.labels.clone(), config.window, prom.dcgm);
    if !prom.engines {
        plan = plan.gpus_only();
    }
    // No history: the check judges what Prometheus says now.
    let poll = PollSettings {
        backfill_timeout: prom.backfill_timeout,
        engine_jobs: prom.engine_jobs.clone(),
        ..PollSettings::new(config.interval, std::time::Duration::ZERO, 30)
    };
    let settings = ObserveSettings {
        scrape: scrape_settings(config),
        fleet: config.fleet_settings(),
        duration,
        auto_cap: AUTO_CAP_SECS,
        record,
    };
    let mut progress = Announce {
        subject: format!("the fleet through Prometheus at {}", prom.url),
    };
    match observe::observe_prometheus(client, plan, poll, rules, &settings, &mut progress).await {
        Ok(obs) => print_report(&obs, output),
        Err(err) => fail(&err.to_string()),
    }
}

/// The built-in rules merged with the user's rules file (`--rules`, else `rules.toml` beside
/// the config file when it exists).
pub(crate) fn load_rules(explicit: Option<PathBuf>) -> Result<RuleSet, String> {
    let path = explicit.or_else(|| {
        crate::config::default_config_path()
            .and_then(|p| p.parent().map(|dir| dir.join("rules.toml")))
            .filter(|p| p.is_file())
    });
    RuleSet::load(path.as_deref()).map_err(|e| e.to_string())
}

fn fail(message: &str) -> ExitCode {
    super::err(&format!("kvtop check: {message}"));
    ExitCode::from(exit::NO_DATA)
}

pub(crate) fn scrape_settings(config: &Config) -> ScrapeSettings {
    ScrapeSettings {
        interval: config.interval,
        timeout: config.timeout,
        body_limit: config.body_limit,
        user_agent: config.user_agent.clone(),
        limits: config.payload_limits,
    }
}

/// The targets of `--target` or the config file.
pub(crate) fn configured_targets(config: &Config) -> Result<Vec<ObserveTarget>, String> {
    if config.targets.is_empty() {
        return Err(if config.prometheus.is_some() {
            "check scrapes targets directly; reading the fleet through Prometheus is not \
             supported here yet. Pass --target http://HOST:PORT/metrics (repeatable)."
                .to_owned()
        } else {
            "no targets to check. Pass --target http://HOST:PORT/metrics (repeatable), add \
             [[targets]] to the config file, check a cluster's vLLM pods with --kube, or try \
             --sim --scenario kv-thrash@0 or --demo."
                .to_owned()
        });
    }
    Ok(config
        .targets
        .iter()
        .map(|t| ObserveTarget {
            name: t.name.clone(),
            url: t.url.clone(),
            bearer_token: t.bearer_token.clone(),
            sim_engine: None,
        })
        .collect())
}

/// Tells on stderr what the check waits for.
struct Announce {
    /// What is observed: `3 targets`, `the engine pods of context prod`.
    subject: String,
}

impl Progress for Announce {
    fn planned(&mut self, secs: f64, plan: Option<&DurationPlan>, time_scale: f64) {
        let clock = if (time_scale - 1.0).abs() < f64::EPSILON {
            String::new()
        } else {
            format!(
                " of simulated time ({}× faster: {} of wall time)",
                time_scale,
                age(wall_time(secs, time_scale).as_secs_f64())
            )
        };
        super::err(&format!(
            "kvtop check: observing {} for {}{clock}",
            self.subject,
            age(secs)
        ));
        let Some(plan) = plan else { return };
        match &plan.longest {
            Some((rule, secs)) if *secs > 0.0 => super::err(&format!(
                "kvtop check: the longest `for` among the rules that can fire is {} ({rule}), \
                 plus two scrape intervals",
                span(*secs)
            )),
            _ => {}
        }
        if !plan.beyond.is_empty() {
            let longest = plan.beyond.last().map_or(0.0, |(_, s)| *s);
            let names: Vec<String> = plan
                .beyond
                .iter()
                .map(|(rule, secs)| format!("{rule} ({})", span(*secs)))
                .collect();
            super::err(&format!(
                "kvtop check: not observed long enough to fire: {}; pass --duration {} to \
                 include them",
                names.join(", "),
                span(longest + 60.0)
            ));
        }
    }
}
