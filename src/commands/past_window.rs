//! A past window of a Prometheus server: `kvtop check --prometheus URL --from TIME [--to TIME]`
//! here, and the console's `kvtop --prometheus URL --from TIME` (see `console_past`).
//!
//! TIME is RFC 3339, `now`, or a time before now: `now-DURATION` or `-DURATION`; the end may
//! also be `+DURATION` after the start.

use crate::config::{Config, PrometheusConfig};
use crate::diagnose::observe::Progress;
use crate::diagnose::plan::DurationPlan;
use crate::diagnose::prometheus_replay;
use crate::sources::prometheus::replay::{PastWindow, WindowReader, scrape_interval};
use crate::sources::prometheus::{ClientSettings, PromClient, QueryPlan};
use kvtop_core::clock::utc;
use kvtop_core::fleet::Ts;
use kvtop_core::rules::RuleSet;

/// The least time a range query of a replay is given.
const RANGE_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// An instant of a past window: RFC 3339, `now`, `now-DURATION` or `-DURATION`.
pub fn parse_past(text: &str, now: Ts) -> Result<Ts, String> {
    let trimmed = text.trim();
    if trimmed == "now" {
        return Ok(now);
    }
    if let Some(ago) = trimmed
        .strip_prefix("now-")
        .or_else(|| trimmed.strip_prefix('-'))
    {
        let d = kvtop_core::units::parse_duration(ago).map_err(|e| e.to_string())?;
        return Ok(now - d.as_secs_f64());
    }
    kvtop_core::clock::parse_utc(trimmed)
        .map_err(|e| format!("not an RFC 3339 time, `now`, `now-DURATION` or `-DURATION` ({e})"))
}

/// The window's end: as [`parse_past`], or `+DURATION` after `from`; now when not given.
pub fn parse_end(text: Option<&str>, from: Ts, now: Ts) -> Result<Ts, String> {
    match text.map(str::trim) {
        None => Ok(now),
        Some(t) => match t.strip_prefix('+') {
            Some(after) => kvtop_core::units::parse_duration(after)
                .map(|d| from + d.as_secs_f64())
                .map_err(|e| e.to_string()),
            None => parse_past(t, now),
        },
    }
}

/// What the flags ask for: the window (start, end) and the step if given.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowArgs {
    pub from: Ts,
    pub to: Ts,
    pub step: Option<f64>,
}

impl WindowArgs {
    /// Parse `--from`, `--to` and `--step` against `now`.
    pub fn parse(
        from: &str,
        to: Option<&str>,
        step: Option<&str>,
        now: Ts,
    ) -> Result<Self, String> {
        let start = parse_past(from, now).map_err(|e| format!("--from {from:?}: {e}"))?;
        let end = parse_end(to, start, now)
            .map_err(|e| format!("--to {:?}: {e}", to.unwrap_or_default()))?;
        if end <= start {
            return Err(format!(
                "the window is empty: --to ({}) is not after --from ({})",
                utc(end),
                utc(start)
            ));
        }
        let step = match step.map(kvtop_core::units::parse_duration) {
            None => None,
            Some(Ok(d)) if !d.is_zero() => Some(d.as_secs_f64()),
            Some(Ok(_)) => return Err("--step must be longer than zero".to_owned()),
            Some(Err(e)) => return Err(format!("--step: {e}")),
        };
        Ok(WindowArgs {
            from: start,
            to: end,
            step,
        })
    }
}

/// A reader of the window asked for, with its lead-in; the reader, and the step chosen.
pub async fn open_reader(
    config: &Config,
    prom: &PrometheusConfig,
    args: &WindowArgs,
    lead_in: f64,
) -> Result<WindowReader, String> {
    let client = PromClient::new(
        prom,
        ClientSettings {
            // A range query over a chunk of a long window carries many points: a histogram
            // quantile over a hundred engines can take Prometheus tens of seconds.
            timeout: prom
                .backfill_timeout
                .max(prom.timeout.unwrap_or(config.timeout))
                .max(RANGE_QUERY_TIMEOUT),
            body_limit: prom.body_limit,
            user_agent: config.user_agent.clone(),
        },
    )
    .map_err(|e| e.to_string())?;
    let mut plan = QueryPlan::new(prom.labels.clone(), config.window, prom.dcgm);
    if !prom.engines {
        plan = plan.gpus_only();
    }
    let interval = scrape_interval(&client, &plan, &prom.engine_jobs).await;
    let plan = plan.with_scrape_interval(interval.or(plan.scrape_interval()));
    let step = args
        .step
        .or(interval)
        .unwrap_or(config.interval.as_secs_f64());
    // The lead-in is a whole number of steps, so the window's own steps are on the grid.
    let lead = (lead_in / step).ceil() * step;
    let window = PastWindow::new(args.from - lead, args.to, step).map_err(|e| e.to_string())?;
    // The history a live console reads at start-up.
    let history = prom.backfill.unwrap_or(config.range).as_secs_f64();
    Ok(WindowReader::new(client, plan, window, history))
}

/// `check --prometheus URL --from TIME [--to TIME] [--step DURATION]`.
pub async fn check(
    config: &Config,
    prom: &PrometheusConfig,
    rules: &RuleSet,
    args: WindowArgs,
) -> Result<crate::diagnose::Observation, String> {
    let reader = open_reader(config, prom, &args, prometheus_replay::lead_in(rules)).await?;
    let step = reader.window().step;
    super::err(&format!(
        "kvtop check: replaying {} from {} to {}, a cycle every {}",
        prom.url,
        utc(args.from),
        utc(args.to),
        kvtop_core::format::age(step)
    ));
    let mut progress = Quiet;
    let (obs, failed) = prometheus_replay::replay(
        reader,
        args.from,
        rules,
        config.fleet_settings(),
        &mut progress,
    )
    .await;
    // Partial answers leave signals unknown: say which, so a quiet report is not read as a
    // healthy one.
    for (signal, (steps, error)) in &failed {
        super::err(&format!(
            "kvtop check: query {signal} failed at {steps} step(s), its signals unknown there: \
             {error}"
        ));
    }
    Ok(obs)
}

/// Nothing to say while a past window is read: it is read as fast as Prometheus answers.
struct Quiet;

impl Progress for Quiet {
    fn planned(&mut self, _: f64, _: Option<&DurationPlan>, _: f64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_times_are_rfc3339_now_or_before_now() {
        let now = 1_800_000_000.0;
        assert_eq!(parse_past("now", now), Ok(now));
        assert_eq!(parse_past("-1h", now), Ok(now - 3600.0));
        assert_eq!(parse_past("now-30m", now), Ok(now - 1800.0));
        assert_eq!(parse_past("2024-08-12T10:15:32Z", now), Ok(1_723_457_732.0));
        assert!(parse_past("yesterday", now).is_err());
        assert!(parse_past("now-", now).is_err());
        assert_eq!(parse_end(None, 0.0, now), Ok(now));
        assert_eq!(parse_end(Some("+5m"), 100.0, now), Ok(400.0));
        assert_eq!(parse_end(Some("-10m"), 100.0, now), Ok(now - 600.0));
    }

    #[test]
    fn a_window_must_end_after_it_starts_and_have_a_step() {
        let now = 1_800_000_000.0;
        let w = WindowArgs::parse("-1h", Some("-30m"), Some("15s"), now).expect("window");
        assert_eq!(
            (w.from, w.to, w.step),
            (now - 3600.0, now - 1800.0, Some(15.0))
        );
        assert!(WindowArgs::parse("-1h", Some("-2h"), None, now).is_err());
        assert!(WindowArgs::parse("-1h", None, Some("0s"), now).is_err());
        assert_eq!(
            WindowArgs::parse("-1h", None, None, now).map(|w| w.to),
            Ok(now)
        );
    }
}
