//! `kvtop rules list [--explain] [--demo]`: the rules as a table; with `--explain`, each
//! rule's condition, `for`, the signals it reads and, for a live fleet (`--target`, the config
//! file's targets, or `--demo`), which engines lack those signals — a rule cannot fire for
//! them.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use super::check::{configured_targets, load_rules, scrape_settings};
use super::setup::{Loaded, load_config};
use crate::cli::{GlobalArgs, RulesAction};
use crate::diagnose::observe::{self, Quiet};
use crate::diagnose::{Clock, ObserveSettings, ObserveTarget, inputs};
use crate::ui::format::span;
use kvtop_core::rules::explain::{self, RuleCoverage};
use kvtop_core::rules::{Rule, RuleSet};

#[inline(never)] // a command entry: see main.rs
pub fn run(action: RulesAction, global: &GlobalArgs) -> ExitCode {
    #[cfg(feature = "demo")]
    let RulesAction::List {
        explain,
        demo,
        rules,
    } = action;
    #[cfg(not(feature = "demo"))]
    let (RulesAction::List { explain, rules }, demo) = (action, false);
    match list(explain, demo, rules, global) {
        Ok(text) => {
            super::out_raw(&text.to_string());
            ExitCode::SUCCESS
        }
        Err(message) => {
            super::err(&format!("kvtop rules: {message}"));
            ExitCode::from(2)
        }
    }
}

fn list(
    explain: bool,
    demo: bool,
    rules: Option<PathBuf>,
    global: &GlobalArgs,
) -> Result<String, String> {
    let rules = load_rules(rules)?;
    let fleet_wanted = explain && (demo || !global.targets.is_empty());
    let coverage = if fleet_wanted {
        Some(fleet_coverage(&rules, demo, global)?)
    } else {
        None
    };
    Ok(render(&rules, explain, coverage.as_ref()))
}

/// Coverage of the rules over a fleet observed for three scrape intervals (two scrapes give
/// the rates and windowed quantiles).
fn fleet_coverage(
    rules: &RuleSet,
    demo: bool,
    global: &GlobalArgs,
) -> Result<(usize, Vec<RuleCoverage>), String> {
    let _ = crate::logging::init(crate::logging::LogSink::Stderr, "warn");
    let Loaded { config, problems } = load_config(global);
    for problem in problems {
        super::err(&format!("kvtop rules: {problem}"));
    }
    let runtime = super::setup::runtime().map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        #[cfg(feature = "demo")]
        let simulated = if demo {
            Some(super::simulated::demo_fleet().await?)
        } else {
            None
        };
        #[cfg(not(feature = "demo"))]
        let simulated: Option<super::simulated::Simulated> = {
            let _ = demo; // always false: this build has no simulated fleet
            None
        };
        let (targets, clock, sim): (Vec<ObserveTarget>, Clock, _) = match simulated {
            Some(s) => (s.targets, s.clock, Some(s.sim)),
            None => (
                configured_targets(&config)?,
                Clock::Wall,
                None::<super::simulated::InProcessSim>,
            ),
        };
        let settings = ObserveSettings {
            scrape: scrape_settings(&config),
            fleet: config.fleet_settings(),
            duration: Some(3.0 * config.interval.as_secs_f64()),
            auto_cap: 0.0,
            record: None,
        };
        super::err(&format!(
            "kvtop rules: reading {} targets for {} to see which signals they export",
            targets.len(),
            span(3.0 * config.interval.as_secs_f64())
        ));
        let obs = observe::observe(&targets, rules, &settings, clock, &mut Quiet).await;
        if let Some(sim) = sim {
            sim.shutdown().await;
        }
        let obs = obs.map_err(|e| e.to_string())?;
        let parts = inputs::FleetParts::of(&obs.fleet);
        let engine_inputs = inputs::engine_inputs(&obs.fleet, &parts, &obs.logs);
        Ok((
            engine_inputs.len(),
            explain::coverage(rules, &engine_inputs),
        ))
    })
}

/// The listing. `coverage` is `(engines, coverage per rule)` of a live fleet, if any.
pub fn render(
    rules: &RuleSet,
    explain: bool,
    coverage: Option<&(usize, Vec<RuleCoverage>)>,
) -> String {
    let mut out = String::new();
    let id_w = rules
        .rules()
        .iter()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    let title_w = rules
        .rules()
        .iter()
        .map(|r| r.title.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(
        out,
        "{:id_w$}  {:8}  {:title_w$}  SOURCE",
        "ID", "SEVERITY", "TITLE"
    );
    for rule in rules.rules() {
        let _ = writeln!(
            out,
            "{:id_w$}  {:8}  {:title_w$}  {}",
            rule.id,
            rule.severity.name(),
            rule.title,
            rule.source()
        );
        if explain {
            explain_rule(&mut out, rule, coverage);
        }
    }
    let _ = writeln!(out, "\n{} rules.", rules.rules().len());
    if !rules.disabled().is_empty() {
        let _ = writeln!(
            out,
            "Disabled by the rules file: {}.",
            rules.disabled().join(", ")
        );
    }
    if explain {
        if let Some((engines, _)) = coverage {
            let _ = writeln!(
                out,
                "Coverage over {engines} engines: a rule reading a signal an engine lacks cannot \
                 fire for that engine."
            );
        }
        if !rules.unobservable().is_empty() {
            let _ = writeln!(out, "\nTable rows not turned into rules:");
            for row in rules.unobservable() {
                let _ = writeln!(out, "  {:8} {}", row.id, row.reason);
            }
        }
    } else {
        let _ = writeln!(
            out,
            "kvtop rules list --explain shows each condition and the signals it reads."
        );
    }
    out
}

fn explain_rule(out: &mut String, rule: &Rule, coverage: Option<&(usize, Vec<RuleCoverage>)>) {
    let _ = writeln!(out, "    when:  {}", rule.when.text());
    if rule.for_secs > 0.0 {
        let _ = writeln!(out, "    for:   {}", span(rule.for_secs));
    }
    if let Some(clear) = &rule.clear_when {
        let _ = writeln!(out, "    clear: {}", clear.text());
    }
    let mut reads: Vec<String> = Vec::new();
    for read in rule
        .when
        .reads()
        .iter()
        .chain(rule.clear_when.iter().flat_map(|c| c.reads()))
    {
        let entry = format!("{} ({})", read.name(), read.origin().name());
        if !reads.contains(&entry) {
            reads.push(entry);
        }
    }
    let _ = writeln!(out, "    reads: {}", reads.join(", "));
    let Some((_, coverage)) = coverage else {
        return;
    };
    let Some(c) = coverage.iter().find(|c| c.rule_id == rule.id) else {
        return;
    };
    if c.engines == 0 {
        let _ = writeln!(out, "    fleet: no engine in its scope");
    } else if c.missing.is_empty() {
        let _ = writeln!(
            out,
            "    fleet: every signal known on all {} engines",
            c.engines
        );
    } else {
        for m in &c.missing {
            let _ = writeln!(
                out,
                "    fleet: {} missing on {} of {} engines (e.g. {})",
                m.signal, m.engines, c.engines, m.example
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvtop_core::rules::explain::MissingSignal;

    #[test]
    fn the_list_has_one_line_per_rule_and_explains_on_demand() {
        let rules = RuleSet::builtin().expect("built-in rules");
        let plain = render(&rules, false, None);
        let n = rules.rules().len();
        assert_eq!(
            plain
                .lines()
                .filter(|l| l.starts_with("ttft-kv-thrash "))
                .count(),
            1
        );
        assert!(plain.contains(&format!("\n{n} rules.")));
        assert!(!plain.contains("when:"));
        let line = plain
            .lines()
            .find(|l| l.starts_with("cuda-oom "))
            .expect("cuda-oom listed");
        assert!(
            line.contains("critical") && line.contains("CUDA out of memory"),
            "{line}"
        );

        let coverage = vec![RuleCoverage {
            rule_id: "ttft-kv-thrash".into(),
            engines: 4,
            missing: vec![MissingSignal {
                signal: "ttft_p95".into(),
                engines: 1,
                example: "vllm-a".into(),
            }],
        }];
        let explained = render(&rules, true, Some(&(4, coverage)));
        assert!(explained.contains("    when:  ttft_p95 > 500ms and kv_usage > 90%"));
        assert!(explained.contains("    for:   1m"));
        assert!(explained.contains("    reads: ttft_p95 (metrics), kv_usage (metrics)"));
        assert!(explained.contains("    fleet: ttft_p95 missing on 1 of 4 engines (e.g. vllm-a)"));
        assert!(explained.contains("    clear: kv_usage < 79.2%"));
        assert!(explained.contains("Table rows not turned into rules:"));
    }
}
