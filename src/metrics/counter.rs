//! Counter arithmetic with reset detection.

/// The increase of a counter between two readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterDelta {
    pub increase: f64,
    /// The counter went backwards: the process restarted.
    pub reset: bool,
}

/// The increase from `prev` to `cur`; a decrease is a reset, and the increase is then `cur`.
pub fn counter_delta(prev: f64, cur: f64) -> CounterDelta {
    let _ = (prev, cur);
    todo!("counter_delta")
}
