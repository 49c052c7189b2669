//! PURE. How long `kvtop check` observes: long enough for the rules that can fire on this
//! fleet to get past their `for` durations, within a cap.

use kvtop_core::rules::{EngineInput, RuleSet, explain};

/// Longest observation chosen automatically, seconds: it covers every `for` of 5 minutes or
/// less (the queue, KV and error-ratio rules); longer ones need `--duration`.
pub(crate) const AUTO_CAP_SECS: f64 = 300.0;

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
pub(crate) fn rules_that_can_fire<'r>(
    rules: &'r RuleSet,
    inputs: &[EngineInput<'_>],
) -> Vec<&'r str> {
    explain::coverage(rules, inputs)
        .into_iter()
        .filter(|c| c.engines > 0 && c.missing.iter().all(|m| m.engines < c.engines))
        .filter_map(|c| rules.get(&c.rule_id).map(|r| r.id.as_str()))
        .collect()
}

/// The largest `for` among the rules that can fire, up to `cap`, plus two scrape intervals
/// (one to see the condition, one to see it hold past the `for`).
pub(crate) fn auto_duration(
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

#[cfg(test)]
mod tests {
    use super::*;
    use kvtop_core::engine::EngineId;
    use kvtop_core::fleet::{EngineStatus, Signals, TargetId};

    #[test]
    fn the_length_follows_the_longest_for_the_fleet_can_reach() {
        let rules = RuleSet::builtin().expect("built-in rules");
        let id = EngineId {
            model: "m".into(),
            engine: "0".into(),
        };
        // Only KV usage and the prefix hit rate are known.
        let signals = Signals {
            kv_usage: Some(0.5),
            prefix_hit: Some(0.9),
            ..Signals::default()
        };
        let input = EngineInput {
            target: TargetId(0),
            id: &id,
            name: "e0",
            status: EngineStatus::Up,
            signals: &signals,
            sample: None,
            restarted_at: None,
            gpu: None,
            facts: &[],
            labels: &[],
            logs: None,
            events: None,
            pod_status: None,
            gen_stall_s: None,
            stalled: false,
            model: None,
        };
        let plan = auto_duration(&rules, &[input], 1.0, AUTO_CAP_SECS);
        // kv-high (5m) is the first of the two 5-minute KV rules in the file.
        assert_eq!(plan.longest, Some(("kv-high".to_owned(), 300.0)));
        assert_eq!(plan.secs, 302.0);
        assert_eq!(
            plan.beyond,
            [
                ("prefix-hit-low".to_owned(), 900.0),
                ("prefix-hit-very-low".to_owned(), 900.0),
                ("kv-fragmentation-long".to_owned(), 3600.0),
            ]
        );
        let can = rules_that_can_fire(&rules, &[input]);
        assert!(can.contains(&"kv-breaker"));
        // GPU, text and pod rules need sources this engine does not have.
        assert!(!can.contains(&"gpu-underused"));
        assert!(!can.contains(&"cuda-oom"));
        assert!(!can.contains(&"omp-threads-high"));
        // Nothing known at all: only the status rules remain, none with a `for` beyond 1m.
        let blank = Signals::default();
        let bare = EngineInput {
            signals: &blank,
            ..input
        };
        let plan = auto_duration(&rules, &[bare], 2.0, AUTO_CAP_SECS);
        assert_eq!(plan.longest.as_ref().map(|(_, s)| *s), Some(60.0));
        assert_eq!(plan.secs, 64.0);
        assert!(plan.beyond.is_empty());
    }
}
