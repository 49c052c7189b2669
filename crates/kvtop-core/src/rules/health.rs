//! Engine health (seed T2): healthy, degraded or down, and the circuit breaker that rejects
//! requests while KV usage is high.
//!
//! Health is instantaneous: DOWN when kvtop cannot scrape the engine (status Stale or Down: a
//! killed backend must be routed around within about two scrape intervals), DEGRADED while KV
//! usage is above 88%, else HEALTHY (also when KV usage is unknown: nothing says otherwise).
//! The breaker has hysteresis: it opens when KV usage rises above 88% and closes only when it
//! falls below 0.9 × 88% = 79.2%. While the engine is not up, the breaker keeps its state.

use std::fmt;

use crate::fleet::{EngineStatus, Ts};

/// KV usage above which the breaker opens and the engine is degraded.
pub const BREAKER_OPEN_ABOVE: f64 = 0.88;
/// The breaker closes below this share of the opening threshold.
pub const BREAKER_CLOSE_FACTOR: f64 = 0.9;

/// KV usage below which an open breaker closes (0.792).
pub fn breaker_close_below() -> f64 {
    BREAKER_OPEN_ABOVE * BREAKER_CLOSE_FACTOR
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
