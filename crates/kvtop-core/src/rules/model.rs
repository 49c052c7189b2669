//! A parsed, ready-to-evaluate rule.

use std::fmt;

use serde::Deserialize;

use super::expr::{Expr, Level};
use super::input::EngineInput;

/// How urgent a finding is. Ordered: `Info < Warning < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An action kvtop can perform that a rule recommends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suggest {
    /// Take the engine's pod out of routing, wait for it to empty, then delete it.
    Drain,
    /// Delete the pod (or rollout-restart its deployment).
    Restart,
    /// Mark the pod's node unschedulable.
    Cordon,
}

impl Suggest {
    pub fn name(self) -> &'static str {
        match self {
            Suggest::Drain => "drain",
            Suggest::Restart => "restart",
            Suggest::Cordon => "cordon",
        }
    }
}

/// What one finding of a rule is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// One finding per engine (the default).
    #[default]
    Engine,
    /// One finding per model group (engines serving the same model), from aggregates.
    Model,
    /// One finding for the whole fleet, from aggregates.
    Fleet,
}

impl Per {
    pub fn name(self) -> &'static str {
        match self {
            Per::Engine => "engine",
            Per::Model => "model",
            Per::Fleet => "fleet",
        }
    }

    /// The expression level rules of this kind are parsed at.
    pub fn level(self) -> Level {
        match self {
            Per::Engine => Level::Engine,
            Per::Model | Per::Fleet => Level::Group,
        }
    }
}

/// Which engines a rule applies to. Empty lists match everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    /// Model name patterns (`*` matches any run of characters); any one must match.
    pub models: Vec<String>,
    /// Pod labels that must all be present with these values.
    pub labels: Vec<(String, String)>,
}

impl Scope {
    /// Whether the scope has no filter at all.
    pub(crate) fn is_everything(&self) -> bool {
        self.models.is_empty() && self.labels.is_empty()
    }

    /// Whether the model name passes the model filter.
    pub(crate) fn matches_model(&self, model: &str) -> bool {
        self.models.is_empty() || self.models.iter().any(|p| glob_match(p, model))
    }

    /// Whether the engine's labels pass the label filter.
    pub(crate) fn matches_labels(&self, labels: &[(String, String)]) -> bool {
        self.labels
            .iter()
            .all(|(key, value)| labels.iter().any(|(k, v)| k == key && v == value))
    }

    /// Whether the scope takes this engine.
    pub fn matches(&self, input: &EngineInput<'_>) -> bool {
        self.matches_model(&input.id.model) && self.matches_labels(input.labels)
    }
}

/// `*` matches any run of characters (including none); everything else matches itself.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = rest.get(at + part.len()..).unwrap_or_default(),
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// One troubleshooting rule, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Unique id, e.g. `t1.1-ttft-kv-thrash`.
    pub id: String,
    /// Short title (fits an 80-column table).
    pub title: String,
    pub severity: Severity,
    /// The condition that makes the rule pending, then firing once it held for `for_secs`.
    pub when: Expr,
    /// How long `when` must hold before the rule fires, seconds.
    pub for_secs: f64,
    /// Once firing, the rule clears only when this holds (hysteresis); without it, when `when`
    /// is false.
    pub clear_when: Option<Expr>,
    /// Likely cause, in plain words.
    pub cause: String,
    /// What to do, in plain words.
    pub action: String,
    pub suggest: Option<Suggest>,
    /// Rows of the troubleshooting tables this rule encodes (`T1.1`, `A.vllm.4`, …).
    pub sources: Vec<String>,
    pub per: Per,
    pub scope: Scope,
    /// Ids of the rules whose findings this rule's finding explains (its symptoms): on the same
    /// engine they fold into one incident headed by this rule.
    pub explains: Vec<String>,
    /// Once firing, how long the rule keeps firing after `when` stops holding (or `clear_when`
    /// starts to), seconds: a condition that clears and returns within it stays one finding
    /// (Prometheus' `keep_firing_for`).
    pub keep_firing_for: f64,
}

impl Rule {
    /// The sources joined for display: `T2.3, T2.M5`.
    pub fn source(&self) -> String {
        self.sources.join(", ")
    }

    /// Whether the rule reads the engine's own scrape (and so is frozen while it is not up).
    pub fn reads_scraped(&self) -> bool {
        self.when.reads_scraped() || self.clear_when.as_ref().is_some_and(Expr::reads_scraped)
    }

    /// Whether its conditions read a model's merged quantiles (`merged(…)`).
    pub fn reads_merged(&self) -> bool {
        self.when.reads_merged() || self.clear_when.as_ref().is_some_and(Expr::reads_merged)
    }
}

/// A row of the troubleshooting tables kvtop does not turn into a rule, and why.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unobservable {
    /// The row id (`T3.5`).
    pub id: String,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("meta-llama/*", "meta-llama/Llama-3.1-8B"));
        assert!(glob_match("*8B", "meta-llama/Llama-3.1-8B"));
        assert!(glob_match("*llama*8B*", "meta-llama/Llama-3.1-8B"));
        assert!(glob_match("*", ""));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(!glob_match("a*b", "ab-c"));
        assert!(!glob_match("aa*aa", "aaa"));
        assert!(!glob_match("qwen/*", "meta-llama/x"));
    }

    #[test]
    fn scopes_filter_by_model_and_labels() {
        let scope = Scope {
            models: vec!["meta-llama/*".into()],
            labels: vec![("tier".into(), "prod".into())],
        };
        let prod = vec![("tier".to_owned(), "prod".to_owned())];
        assert!(scope.matches_model("meta-llama/x"));
        assert!(!scope.matches_model("qwen/x"));
        assert!(scope.matches_labels(&prod));
        assert!(!scope.matches_labels(&[]));
        assert!(Scope::default().is_everything());
    }
}
