//! PURE. The JSON report, shaped like `k8sgpt analyze -o json`: `status` (`OK`,
//! `ProblemDetected`, or `NoData` when nothing answered), `problems` (firing warning and
//! critical findings), and `results`, one per firing finding (info included) with `kind`,
//! `name`, `error: [{ text }]` and `details` as k8sgpt has them, plus kvtop's own fields:
//! `severity`, `rule`, `evidence`, `cause`, `action`, `source`, `since`, `firing_since`.
//! `pending` lists findings whose condition holds but not yet for long enough, `observed`
//! describes the observation, and `engines` lists every engine at its end: name, namespace
//! and pod, model, status with its reason, and its current value of every rule signal
//! (keyed by the rules' signal names, `null` when unknown). `models` gives each model's
//! engines up, summed load and its latency quantiles over the merged histograms of its engines
//! (as the dashboards' `histogram_quantile(q, sum by (le) (…))`). A replay adds `episodes`:
//! every finding that fired during the window, with `since`, `firing_since` and `resolved_at`
//! (`null` while still firing at the window's end); a recording's replay adds `actions` when
//! the recorded console ran any: each confirmation and end, with `at` and `phase`.

use serde_json::{Value, json};

use super::super::observe::Observation;
use super::{Verdict, evidence, firing, fleet_rows, kind, pending};
use kvtop_core::fleet::{EngineStatus, summarize};
use kvtop_core::rules::{Finding, Severity, Subject};
use kvtop_core::signals::Derivation;

/// The report as pretty-printed JSON.
pub fn render_json(obs: &Observation) -> String {
    let verdict = Verdict::of(obs);
    let firing = firing(&obs.findings);
    let problems = firing
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .count();
    // The verdict's word: of a replay, an incident that fired and resolved in the window is
    // a problem detected though nothing fires at its end.
    let status = match verdict {
        Verdict::NoData => "NoData",
        Verdict::Healthy => "OK",
        Verdict::Warning | Verdict::Critical => "ProblemDetected",
    };
    let errors: Vec<String> = obs
        .fleet
        .targets()
        .iter()
        .filter(|t| t.failing)
        .filter_map(|t| {
            let (_, err) = t.last_error.as_ref()?;
            Some(format!("{}: {err}", t.spec.name))
        })
        .collect();
    let rows = fleet_rows(obs);
    let engines = engines(obs);
    let mut doc = json!({
        "provider": "kvtop",
        "errors": if errors.is_empty() { Value::Null } else { json!(errors) },
        "status": status,
        "problems": problems,
        "results": firing.iter().map(|f| result(f)).collect::<Vec<_>>(),
        "pending": pending(&obs.findings).iter().map(|f| result(f)).collect::<Vec<_>>(),
        "observed": {
            "seconds": obs.ended - obs.started,
            "time_scale": obs.time_scale,
            "wall_seconds": (obs.ended - obs.started) / obs.time_scale,
            "interval_seconds": obs.interval,
            "cycles": obs.cycles,
            "engines": rows.len(),
            "up": rows.iter().filter(|r| r.status == kvtop_core::fleet::EngineStatus::Up).count(),
            "verdict": verdict.word(),
            "exit_code": verdict.exit_code(),
        },
        "engines": engines,
        "models": models(obs),
    });
    if let (Some(episodes), Some(map)) = (&obs.episodes, doc.as_object_mut()) {
        map.insert(
            "episodes".to_owned(),
            json!(
                episodes
                    .iter()
                    .map(super::episodes::json)
                    .collect::<Vec<_>>()
            ),
        );
    }
    if let (false, Some(map)) = (obs.actions.is_empty(), doc.as_object_mut()) {
        let actions: Vec<Value> = obs
            .actions
            .iter()
            .map(super::episodes::action_json)
            .collect();
        map.insert("actions".to_owned(), json!(actions));
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_owned());
    // C1 controls, bidi and zero-width characters as \u escapes: the same document, safe to
    // print.
    kvtop_core::safe_text::json(&text).into_owned()
}

/// Every engine at the end of the observation, with its signals as the rules read them.
fn engines(obs: &Observation) -> Vec<Value> {
    let parts = crate::diagnose::inputs::FleetParts::of(&obs.fleet);
    let inputs = crate::diagnose::inputs::engine_inputs(&obs.fleet, &parts, &obs.logs);
    inputs
        .iter()
        .map(|input| {
            let placement = obs.fleet.placement(input.target);
            let target = obs.fleet.target(input.target);
            let reason = target
                .filter(|t| t.failing || input.status != EngineStatus::Up)
                .and_then(|t| t.last_error.as_ref())
                .map(|(_, e)| e.to_string());
            let signals: serde_json::Map<String, Value> = kvtop_core::rules::signals::SIGNALS
                .iter()
                .map(|def| (def.name.to_owned(), json!(def.read(input))))
                .collect();
            json!({
                "name": input.name,
                "namespace": placement.namespace,
                "pod": placement.pod,
                "model": input.id.model,
                "engine": input.id.engine,
                "status": { "word": input.status.word(), "reason": reason },
                "signals": signals,
            })
        })
        .collect()
}

/// Every model at the end of the observation, in order of first appearance.
fn models(obs: &Observation) -> Vec<Value> {
    let engines = obs.fleet.engines();
    let mut names: Vec<&str> = Vec::new();
    for engine in engines {
        let model = engine.id.model.as_str();
        if !model.is_empty() && !names.contains(&model) {
            names.push(model);
        }
    }
    names
        .into_iter()
        .map(|model| {
            let members = engines.iter().filter(|e| e.id.model == model);
            let summary = summarize(
                members,
                obs.fleet.window_secs(),
                obs.fleet.source_model_signals(model),
            );
            let quantiles: serde_json::Map<String, Value> = kvtop_core::signals::SIGNALS
                .iter()
                .filter(|def| matches!(def.derivation, Derivation::Quantile(..)))
                .map(|def| (def.name.to_owned(), json!((def.get)(&summary.quantiles))))
                .collect();
            json!({
                "model": model,
                "engines": summary.engines,
                "up": summary.up,
                "kv_usage": summary.kv_usage,
                "running": summary.running,
                "waiting": summary.waiting,
                "gen_tps": summary.gen_tps,
                "quantiles": quantiles,
            })
        })
        .collect()
}

fn result(f: &Finding) -> Value {
    let evidence = evidence(f);
    let parent = match &*f.subject {
        Subject::Engine { id, .. } if !id.model.is_empty() => json!(id.model),
        _ => Value::Null,
    };
    json!({
        "kind": kind(&f.subject),
        "name": f.subject.label(),
        "error": [{ "text": if evidence.is_empty() {
            f.title.to_string()
        } else {
            format!("{}: {}", f.title, evidence.join("; "))
        } }],
        "details": f.cause.as_ref(),
        "parentObject": parent,
        "severity": f.severity.name(),
        "rule": f.rule_id.as_ref(),
        "title": f.title.as_ref(),
        "evidence": evidence,
        "cause": f.cause.as_ref(),
        "action": f.action.as_ref(),
        "suggest": f.suggest.map(|s| s.name()),
        "source": f.source.as_ref(),
        "since": f.since,
        "firing_since": f.fired_at,
        "frozen": f.frozen,
    })
}
