//! What drawing reads and keys act on, computed once by `settle` after a batch of events
//! instead of by every reader: the visible rows of the fleet table.

use super::rows::{SortColumn, visible_rows};
use kvtop_core::fleet::{Fleet, Ts};

/// The rows as the operator last saw them (or is about to).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewModel {
    /// Indices into the shown fleet's engines, filtered and sorted.
    rows: Vec<usize>,
    /// Engine rows before the filter (GPU exporters are not engines).
    engines: usize,
    /// Whether it was ever computed (an `App` starts unsettled).
    settled: bool,
}

impl ViewModel {
    /// The rows of `fleet` under `filter` and the sort, as of `now`.
    pub fn compute(
        fleet: &Fleet,
        filter: &str,
        sort: SortColumn,
        descending: bool,
        now: Ts,
    ) -> ViewModel {
        ViewModel {
            rows: visible_rows(fleet, filter, sort, descending, now),
            engines: engine_rows(fleet),
            settled: true,
        }
    }

    /// Whether it was ever computed.
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// Indices into the shown fleet's engines, in table order.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// Engine rows the filter chooses from.
    pub fn engines(&self) -> usize {
        self.engines
    }
}

/// Rows of `fleet` that are engines, whatever the filter.
pub fn engine_rows(fleet: &Fleet) -> usize {
    fleet
        .engines()
        .iter()
        .filter(|e| !fleet.is_gpu_exporter(e.target))
        .count()
}
