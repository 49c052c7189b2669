//! Engine health (seed T2): healthy, degraded or down, and the circuit breaker that rejects
//! requests while KV usage is high.
//!
//! Health is instantaneous: DOWN when kvtop cannot scrape the engine (status Stale or Down: a
//! killed backend must be routed around within about two scrape intervals), DEGRADED while KV
//! usage is above 88%, else HEALTHY (also when KV usage is unknown: nothing says otherwise).
//! The breaker has hysteresis: it opens when KV usage rises above 88% and closes only when it
//! falls below 0.9 × 88% = 79.2%. While the engine is not up, the breaker keeps its state.
//!
//! Both thresholds are written once, in the built-in `kv-breaker` rule (`config/rules.toml`,
//! `when` and `clear_when`), and read from it at compile time, so the finding and the HEALTH
//! column cannot disagree (a user's override of that rule changes the finding only).

use std::fmt;

use super::file::BUILTIN_RULES_TOML;
use crate::fleet::{EngineStatus, Ts};

/// The rule whose firing finding makes an engine's health `stuck`.
pub const STUCK_RULE: &str = "stuck-requests";

/// The built-in rule whose `when` opens the breaker and whose `clear_when` closes it.
#[cfg(test)]
const BREAKER_RULE: &str = "kv-breaker";

/// KV usage above which the breaker opens and the engine is degraded (0.88).
pub const BREAKER_OPEN_ABOVE: f64 = rule_percent(
    BUILTIN_RULES_TOML.as_bytes(),
    b"id = \"kv-breaker\"",
    b"when = \"kv_usage > ",
);

/// KV usage below which an open breaker closes (0.792).
const BREAKER_CLOSE_BELOW: f64 = rule_percent(
    BUILTIN_RULES_TOML.as_bytes(),
    b"id = \"kv-breaker\"",
    b"clear_when = \"kv_usage < ",
);

/// KV usage below which an open breaker closes (0.792).
pub fn breaker_close_below() -> f64 {
    BREAKER_CLOSE_BELOW
}

/// The percentage written right after `field` in the rule `rule` (`88%` → 0.88,
/// decimal digits exactly as the expression lexer reads them). Evaluated at compile time: a
/// rules file that no longer has the field in that form fails the build, never a run.
const fn rule_percent(text: &[u8], rule: &[u8], field: &[u8]) -> f64 {
    let Some(start) = find(text, rule, 0) else {
        panic!("config/rules.toml has no kv-breaker rule");
    };
    let end = match find(text, b"[[rule]]", start) {
        Some(next) => next,
        None => text.len(),
    };
    let at = match find(text, field, start) {
        Some(at) if at < end => at,
        _ => panic!("the kv-breaker rule has no `kv_usage` threshold in the expected form"),
    };
    let mut i = at + field.len();
    let mut mantissa: u64 = 0;
    let mut decimals: i32 = -1;
    while i < text.len() && (text[i].is_ascii_digit() || text[i] == b'.') {
        if text[i] == b'.' {
            decimals = 0;
        } else {
            mantissa = mantissa * 10 + (text[i] - b'0') as u64;
            if decimals >= 0 {
                decimals += 1;
            }
        }
        i += 1;
    }
    if i >= text.len() || text[i] != b'%' || mantissa == 0 {
        panic!("the kv-breaker threshold is not a percentage");
    }
    // A percentage: two more decimal places. The quotient of two exact integers is the double
    // nearest to the decimal, as `str::parse` gives it.
    let mut scale: u64 = 100;
    let mut d = 0;
    while d < decimals {
        scale *= 10;
        d += 1;
    }
    mantissa as f64 / scale as f64
}

/// Position of the first `needle` in `text` at or after `from`.
const fn find(text: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + needle.len() <= text.len() {
        let mut j = 0;
        while j < needle.len() && text[i + j] == needle[j] {
            j += 1;
        }
        if j == needle.len() {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// An engine's health class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Health {
    Healthy,
    Degraded,
    /// Up, with requests running, but no token generated for the stuck-requests rule's span:
    /// a hang (NCCL deadlock, Ray hang) that its scrape alone makes look healthy.
    Stuck,
    Down,
    /// Not scraped yet: neither healthy nor down.
    Pending,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::Stuck => "stuck",
            Health::Down => "down",
            Health::Pending => "pending",
        }
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Classify one engine from its scrape status and KV usage.
pub fn classify(status: EngineStatus, kv_usage: Option<f64>) -> Health {
    if status == EngineStatus::Pending {
        Health::Pending
    } else if status != EngineStatus::Up {
        Health::Down
    } else if kv_usage.is_some_and(|kv| kv > BREAKER_OPEN_ABOVE) {
        Health::Degraded
    } else {
        Health::Healthy
    }
}

/// The circuit breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Breaker {
    /// Requests are admitted.
    #[default]
    Closed,
    /// Requests are rejected (HTTP 429) since `since`.
    Open { since: Ts },
}

impl Breaker {
    pub fn is_open(self) -> bool {
        matches!(self, Breaker::Open { .. })
    }

    /// The state after one observation. Unknown KV usage, or an engine that is not up, keeps
    /// the state.
    pub fn step(self, status: EngineStatus, kv_usage: Option<f64>, now: Ts) -> Breaker {
        let Some(kv) = kv_usage.filter(|v| !v.is_nan()) else {
            return self;
        };
        if status != EngineStatus::Up {
            return self;
        }
        match self {
            Breaker::Closed if kv > BREAKER_OPEN_ABOVE => Breaker::Open { since: now },
            Breaker::Open { .. } if kv < breaker_close_below() => Breaker::Closed,
            unchanged => unchanged,
        }
    }
}

/// Health and breaker of one engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineHealth {
    pub health: Health,
    pub breaker: Breaker,
}

impl Default for EngineHealth {
    fn default() -> Self {
        EngineHealth {
            health: Health::Down,
            breaker: Breaker::Closed,
        }
    }
}

impl EngineHealth {
    /// The next health from the previous one and a new observation.
    pub fn step(self, status: EngineStatus, kv_usage: Option<f64>, now: Ts) -> EngineHealth {
        EngineHealth {
            health: classify(status, kv_usage),
            breaker: self.breaker.step(status, kv_usage, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_threshold_is_0_792() {
        assert_eq!(breaker_close_below(), 0.792);
    }

    /// The thresholds read at compile time are those the rule evaluator parses.
    #[test]
    fn thresholds_are_the_kv_breaker_rules_as_parsed() {
        use crate::rules::expr::{Cmp, CmpOp, Cond, Expr, Num};
        use crate::rules::signals::Resolved;
        let rules = crate::rules::RuleSet::builtin().expect("built-in rules");
        let rule = rules.get(BREAKER_RULE).expect("kv-breaker");
        let threshold = |expr: &Expr, op: CmpOp| match &expr.root {
            Cond::Cmp(cmp) => match cmp.as_ref() {
                Cmp {
                    op: found,
                    lhs: Num::Signal(Resolved::Named(def)),
                    rhs: Num::Lit(value),
                    ..
                } if *found == op && def.name == "kv_usage" => Some(*value),
                _ => None,
            },
            _ => None,
        };
        assert_eq!(threshold(&rule.when, CmpOp::Gt), Some(BREAKER_OPEN_ABOVE));
        let clear = rule.clear_when.as_ref().expect("clear_when");
        assert_eq!(threshold(clear, CmpOp::Lt), Some(breaker_close_below()));
        // The close threshold is 0.9 × the open one.
        assert!((breaker_close_below() - 0.9 * BREAKER_OPEN_ABOVE).abs() < 1e-12);
    }

    #[test]
    fn classification() {
        assert_eq!(classify(EngineStatus::Up, Some(0.5)), Health::Healthy);
        assert_eq!(classify(EngineStatus::Up, Some(0.88)), Health::Healthy);
        assert_eq!(classify(EngineStatus::Up, Some(0.8801)), Health::Degraded);
        assert_eq!(classify(EngineStatus::Up, None), Health::Healthy);
        assert_eq!(classify(EngineStatus::Stale, Some(0.1)), Health::Down);
        assert_eq!(classify(EngineStatus::Down, None), Health::Down);
    }
}
