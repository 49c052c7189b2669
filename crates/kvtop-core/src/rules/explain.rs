//! Explaining rules: the signal catalogue (for `kvtop rules list --explain`) and, for a live
//! fleet, which signals each rule reads that engines do not provide (such a rule cannot fire
//! for them).

use super::file::RuleSet;
use super::input::EngineInput;
use super::model::{Per, Rule};
use super::signals::{NAMESPACES, Origin, SIGNALS, TextSource};
use super::units::Unit;

/// One entry of the signal catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalInfo {
    /// Name as written in expressions; open namespaces end in `*` (`config.*`).
    pub name: String,
    /// `None` for open namespaces and text sources.
    pub unit: Option<Unit>,
    pub origin: Origin,
    pub description: String,
}

/// Every name an expression can use: the named signals, the open namespaces and the text
/// sources, in that order.
pub fn signal_catalogue() -> Vec<SignalInfo> {
    let named = SIGNALS.iter().map(|def| SignalInfo {
        name: def.name.to_owned(),
        unit: Some(def.unit),
        origin: def.origin,
        description: def.description.to_owned(),
    });
    let namespaces = NAMESPACES.iter().map(|ns| SignalInfo {
        name: format!("{}*", ns.prefix),
        unit: None,
        origin: ns.origin,
        description: if ns.examples.is_empty() {
            ns.description.to_owned()
        } else {
            format!("{} (e.g. {})", ns.description, ns.examples.join(", "))
        },
    });
    let texts = TextSource::ALL.iter().map(|source| SignalInfo {
        name: format!("{} ~ \"text\"", source.name()),
        unit: None,
        origin: Origin::Text,
        description: source.description().to_owned(),
    });
    named.chain(namespaces).chain(texts).collect()
}

/// A signal a rule reads that some engines do not provide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingSignal {
    pub signal: String,
    /// How many engines in the rule's scope lack it.
    pub engines: usize,
    /// The first such engine's name.
    pub example: String,
}

/// What one rule can see of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCoverage {
    pub rule_id: String,
    /// Engines in the rule's scope.
    pub engines: usize,
    /// Signals read by the rule that some of those engines lack, in the order the rule reads
    /// them. A condition over a missing signal is unknown, so it never makes the rule fire.
    pub missing: Vec<MissingSignal>,
}

/// For each rule, the signals it reads that engines in its scope do not provide now.
pub fn coverage(rules: &RuleSet, inputs: &[EngineInput<'_>]) -> Vec<RuleCoverage> {
    rules
        .rules()
        .iter()
        .map(|rule| rule_coverage(rule, inputs))
        .collect()
}

fn rule_coverage(rule: &Rule, inputs: &[EngineInput<'_>]) -> RuleCoverage {
    let in_scope: Vec<&EngineInput<'_>> = inputs
        .iter()
        .filter(|input| rule.scope.matches(input))
        .filter(|input| rule.per != Per::Model || !input.id.model.is_empty())
        .collect();
    let mut missing: Vec<MissingSignal> = Vec::new();
    let reads = rule
        .when
        .reads()
        .iter()
        .chain(rule.clear_when.iter().flat_map(|c| c.reads()));
    for read in reads {
        if missing.iter().any(|m| m.signal == read.name()) {
            continue;
        }
        let lacking: Vec<&&EngineInput<'_>> = in_scope
            .iter()
            .filter(|input| !read.available(input))
            .collect();
        if let Some(first) = lacking.first() {
            missing.push(MissingSignal {
                signal: read.name().to_owned(),
                engines: lacking.len(),
                example: first.name.to_owned(),
            });
        }
    }
    RuleCoverage {
        rule_id: rule.id.clone(),
        engines: in_scope.len(),
        missing,
    }
}
