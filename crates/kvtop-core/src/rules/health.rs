//! Engine health (seed T2): healthy, degraded or down, and the circuit breaker that rejects
//! requests while KV usage is high.
//!
//! Health is instantaneous: DOWN when kvtop cannot scrape the engine (status Stale or Down: a
//! killed backend must be routed around within about two scrape intervals), DEGRADED while KV
//! usage is above the breaker's threshold, else HEALTHY (also when KV usage is unknown: nothing
//! says otherwise). The breaker has hysteresis: it opens when KV usage rises above one threshold
//! and closes only when it falls below a lower one. While the engine is not up, the breaker
//! keeps its state.
//!
//! Both thresholds are those of the built-in `kv-breaker` rule (`config/rules.toml`: `when =
//! "kv_usage > 88%"`, `clear_when = "kv_usage < 79.2%"`, i.e. 0.9 × 88%), so the finding and
//! the HEALTH column cannot disagree. A user's override of that rule changes the finding only.

use std::fmt;
use std::sync::OnceLock;

use super::expr::{Cmp, CmpOp, Cond, Expr, Num};
use super::file::RuleSet;
use super::signals::Resolved;
use crate::fleet::{EngineStatus, Ts};
use crate::signals::Signal;

/// The built-in rule whose `when` opens the breaker and whose `clear_when` closes it.
pub const BREAKER_RULE: &str = "kv-breaker";

/// KV usage thresholds of the circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerThresholds {
    /// Above this the breaker opens and the engine is degraded.
    pub open_above: f64,
    /// Below this an open breaker closes.
    pub close_below: f64,
}

/// The breaker's thresholds, read once from the built-in rules; `None` only if the built-in
/// file lost the rule (a test guards it), in which case no engine is degraded by KV usage.
pub fn breaker() -> Option<BreakerThresholds> {
    static THRESHOLDS: OnceLock<Option<BreakerThresholds>> = OnceLock::new();
    *THRESHOLDS.get_or_init(|| {
        let rules = RuleSet::builtin().ok()?;
        let rule = rules.get(BREAKER_RULE)?;
        Some(BreakerThresholds {
            open_above: kv_threshold(&rule.when, CmpOp::Gt)?,
            close_below: kv_threshold(rule.clear_when.as_ref()?, CmpOp::Lt)?,
        })
    })
}

/// `x` of an expression that is exactly `kv_usage <op> x`.
fn kv_threshold(expr: &Expr, op: CmpOp) -> Option<f64> {
    let Cond::Cmp(cmp) = &expr.root else {
        return None;
    };
    match cmp.as_ref() {
        Cmp {
            op: found,
            lhs: Num::Signal(Resolved::Named(def)),
            rhs: Num::Lit(value),
            ..
        } if *found == op && def.name == crate::signals::signal(Signal::KvUsage).name => {
            Some(*value)
        }
        _ => None,
    }
}

/// An engine's health class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Health {
    Healthy,
    Degraded,
    Down,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::Down => "down",
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
    if status != EngineStatus::Up {
        Health::Down
    } else if kv_usage.is_some_and(|kv| breaker().is_some_and(|b| kv > b.open_above)) {
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
        let Some(thresholds) = breaker() else {
            return self;
        };
        match self {
            Breaker::Closed if kv > thresholds.open_above => Breaker::Open { since: now },
            Breaker::Open { .. } if kv < thresholds.close_below => Breaker::Closed,
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
    fn thresholds_are_the_builtin_rules_88_and_0_9_of_it() {
        let thresholds = breaker().expect("the built-in kv-breaker rule");
        assert_eq!(thresholds.open_above, 0.88);
        assert_eq!(thresholds.close_below, 0.792);
        assert!((thresholds.close_below - 0.9 * thresholds.open_above).abs() < 1e-12);
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
