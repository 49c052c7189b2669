//! What drawing reads and keys act on, computed once by `settle` after a batch of events
//! instead of by every reader: the visible rows of the fleet table.

use super::rows::{SortColumn, visible_rows};
use kvtop_core::fleet::{Fleet, Ts};

/// The rows as the operator last saw them (or is about to).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ViewModel {
    /// Indices into the shown fleet's engines, filtered and sorted.
    rows: Vec<usize>,
    /// Engine rows before the filter (GPU exporters are not engines).
    engines: usize,
}

impl ViewModel {
    /// The rows of `fleet` under `filter` and the sort, as of `now`.
    pub(crate) fn compute(
        fleet: &Fleet,
        filter: &str,
        sort: SortColumn,
        descending: bool,
        now: Ts,
    ) -> ViewModel {
        ViewModel {
            rows: visible_rows(fleet, filter, sort, descending, now),
            engines: engine_rows(fleet),
        }
    }

    /// The rows of a console that has seen no event yet: all of them by name. Neither depends
    /// on the time, so they are computed as of the fleet's last scrape.
    pub(crate) fn initial(fleet: &Fleet) -> ViewModel {
        let last_scrape = fleet
            .targets()
            .iter()
            .filter_map(|t| t.last_attempt)
            .fold(0.0, f64::max);
        let sort = SortColumn::default();
        ViewModel::compute(fleet, "", sort, sort.natural_descending(), last_scrape)
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
pub(crate) fn engine_rows(fleet: &Fleet) -> usize {
    fleet
        .engines()
        .iter()
        .filter(|e| !fleet.is_gpu_exporter(e.target))
        .count()
}
