//! Which signals the fleet table shows beside the engine's identity, status and KV usage:
//! sets of columns cycled with a key, the standard set first, or the configured one
//! (`[display] columns`).

use kvtop_core::signals::Signal;

/// One set of the table's value columns.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSet {
    pub name: &'static str,
    /// The signal columns, in order (the first kept longest on narrow terminals); `None` for
    /// the standard table (RUN, WAIT, TTFT95, ITL95, TOK/S, HIT%, PRE/M).
    pub signals: Option<Vec<Signal>>,
}

/// The sets, in cycling order, and the one shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSets {
    sets: Vec<ColumnSet>,
    current: usize,
}

/// The built-in sets after the standard one: the dashboards' latencies, their traffic, and how
/// requests end.
const LATENCY: [Signal; 6] = [
    Signal::TtftP95,
    Signal::TpotP95,
    Signal::PrefillP95,
    Signal::DecodeP95,
    Signal::E2eP95,
    Signal::QueueP95,
];
const TRAFFIC: [Signal; 6] = [
    Signal::GenTps,
    Signal::PromptTps,
    Signal::RequestsPerS,
    Signal::HttpPerS,
    Signal::Http4xxRatio,
    Signal::Http5xxRatio,
];
const ENDINGS: [Signal; 6] = [
    Signal::FinishedStop,
    Signal::FinishedLength,
    Signal::FinishedAbort,
    Signal::FinishedError,
    Signal::SpecAcceptance,
    Signal::SpecAcceptLength,
];

impl Default for ColumnSets {
    fn default() -> Self {
        ColumnSets {
            sets: vec![
                ColumnSet {
                    name: "standard",
                    signals: None,
                },
                ColumnSet {
                    name: "latency",
                    signals: Some(LATENCY.to_vec()),
                },
                ColumnSet {
                    name: "traffic",
                    signals: Some(TRAFFIC.to_vec()),
                },
                ColumnSet {
                    name: "endings",
                    signals: Some(ENDINGS.to_vec()),
                },
            ],
            current: 0,
        }
    }
}

impl ColumnSets {
    /// The built-in sets after a configured one, which is shown first.
    pub fn configured(signals: Vec<Signal>) -> Self {
        let mut sets = ColumnSets::default();
        sets.sets.insert(
            0,
            ColumnSet {
                name: "configured",
                signals: Some(signals),
            },
        );
        sets
    }

    pub fn current(&self) -> &ColumnSet {
        // `current` always indexes `sets`, which is never empty.
        &self.sets[self.current.min(self.sets.len() - 1)]
    }

    /// Show the next set, after the last the first again.
    pub fn next(&mut self) {
        self.current = (self.current + 1) % self.sets.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_set_comes_first_and_the_cycle_wraps() {
        let mut sets = ColumnSets::default();
        let mut seen = vec![sets.current().name];
        for _ in 0..4 {
            sets.next();
            seen.push(sets.current().name);
        }
        assert_eq!(
            seen,
            ["standard", "latency", "traffic", "endings", "standard"]
        );
        assert_eq!(ColumnSets::default().current().signals, None);
    }

    #[test]
    fn a_configured_set_is_shown_first() {
        let mut sets = ColumnSets::configured(vec![Signal::TpotP99]);
        assert_eq!(sets.current().signals, Some(vec![Signal::TpotP99]));
        sets.next();
        assert_eq!(sets.current().name, "standard");
    }
}
