//! Counter arithmetic with reset detection.

/// The increase of a counter between two readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterDelta {
    /// The increase; `NaN` when either reading was `NaN` (unknown, see [`CounterDelta::known`]).
    pub increase: f64,
    /// The counter went backwards: the process restarted.
    pub reset: bool,
}

impl CounterDelta {
    /// The increase, or `None` when it is unknown (a reading was `NaN`).
    pub fn known(&self) -> Option<f64> {
        (!self.increase.is_nan()).then_some(self.increase)
    }
}

/// The increase from `prev` to `cur`; a decrease is a reset, and the increase is then `cur`
/// (the counter restarted from zero and counted `cur` since, as Prometheus' `increase` assumes).
///
/// A `NaN` reading makes the increase unknown: `increase` is `NaN` and `reset` is false, since
/// nothing can be concluded about a restart from a reading that is not a number.
pub fn counter_delta(prev: f64, cur: f64) -> CounterDelta {
    if prev.is_nan() || cur.is_nan() {
        return CounterDelta {
            increase: f64::NAN,
            reset: false,
        };
    }
    if cur < prev {
        CounterDelta {
            increase: cur,
            reset: true,
        }
    } else {
        CounterDelta {
            increase: cur - prev,
            reset: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_the_difference() {
        let d = counter_delta(10.0, 25.5);
        assert_eq!(d.increase, 15.5);
        assert!(!d.reset);
        assert_eq!(d.known(), Some(15.5));
    }

    #[test]
    fn unchanged_counter_has_zero_increase() {
        assert_eq!(
            counter_delta(7.0, 7.0),
            CounterDelta {
                increase: 0.0,
                reset: false
            }
        );
    }

    #[test]
    fn decrease_is_a_reset_counting_the_new_value() {
        let d = counter_delta(1000.0, 12.0);
        assert!(d.reset);
        assert_eq!(d.increase, 12.0);
    }

    #[test]
    fn reset_to_zero_counts_nothing() {
        let d = counter_delta(3.0, 0.0);
        assert!(d.reset);
        assert_eq!(d.increase, 0.0);
    }

    #[test]
    fn nan_readings_are_unknown_not_resets() {
        for (prev, cur) in [(f64::NAN, 4.0), (4.0, f64::NAN), (f64::NAN, f64::NAN)] {
            let d = counter_delta(prev, cur);
            assert!(d.increase.is_nan());
            assert!(!d.reset);
            assert_eq!(d.known(), None);
        }
    }
}
