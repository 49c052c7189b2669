//! PURE. How long `kvtop check` observes: long enough for the rules that can fire on this
//! fleet to get past their `for` durations, within a cap.

use crate::rules::{EngineInput, RuleSet, explain};

/// Longest observation chosen automatically, seconds: it covers every `for` of 5 minutes or
/// less (the queue, KV and error-ratio rules); longer ones need `--duration`.
pub const AUTO_CAP_SECS: f64 = 300.0;

/// The automatic observation length and why.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationPlan {
    /// Seconds to observe.
    pub secs: f64,
    /// The rule with the longest `for` within the cap, and that `for`.
    pub longest: Option<(String, f64)>,
    /// Rules that could fire but whose `for` is beyond the cap, with their `for`.
    pub beyond: Vec<(String, f64)>,
}

/// Rules that can fire on these inputs: enabled, in scope of some engine, and for each signal
/// they read, at least one of those engines provides it.
pub fn rules_that_can_fire<'r>(rules: &'r RuleSet, inputs: &[EngineInput<'_>]) -> Vec<&'r str> {
    explain::coverage(rules, inputs)
        .into_iter()
        .filter(|c| c.engines > 0 && c.missing.iter().all(|m| m.engines < c.engines))
        .filter_map(|c| rules.get(&c.rule_id).map(|r| r.id.as_str()))
        .collect()
}

/// The largest `for` among the rules that can fire, up to `cap`, plus two scrape intervals
/// (one to see the condition, one to see it hold past the `for`).
pub fn auto_duration(
    rules: &RuleSet,
    inputs: &[EngineInput<'_>],
    interval: f64,
    cap: f64,
) -> DurationPlan {
    let mut longest: Option<(String, f64)> = None;
    let mut beyond = Vec::new();
    for id in rules_that_can_fire(rules, inputs) {
        let Some(rule) = rules.get(id) else { continue };
        let secs = rule.for_secs;
        if secs > cap {
            beyond.push((rule.id.clone(), secs));
        } else if longest.as_ref().is_none_or(|(_, l)| secs > *l) {
            longest = Some((rule.id.clone(), secs));
        }
    }
    beyond.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let base = longest.as_ref().map_or(0.0, |(_, s)| *s);
    DurationPlan {
        secs: base + 2.0 * interval,
        longest,
        beyond,
    }
}
