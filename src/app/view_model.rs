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

    /// Group the rows by model (see [`group_rows`]).
    pub(crate) fn group_by_model(&mut self, fleet: &Fleet) {
        group_rows(fleet, &mut self.rows);
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

/// Reorder `rows` (indices into `fleet`'s engines) so that each model's engines follow each
/// other, the models in the order their first engine had and each model's engines in the order
/// they had: the sort still decides, within and between groups.
pub(crate) fn group_rows(fleet: &Fleet, rows: &mut [usize]) {
    let engines = fleet.engines();
    let model = |i: usize| engines.get(i).map(|e| e.id.model.as_str()).unwrap_or("");
    let mut order: Vec<&str> = Vec::new();
    for &i in rows.iter() {
        if !order.contains(&model(i)) {
            order.push(model(i));
        }
    }
    rows.sort_by_key(|&i| order.iter().position(|m| *m == model(i)));
}

/// Where model groups start in `rows` (grouped by [`group_rows`]): `(position, model)`.
pub fn group_starts<'f>(fleet: &'f Fleet, rows: &[usize]) -> Vec<(usize, &'f str)> {
    let engines = fleet.engines();
    let mut starts: Vec<(usize, &str)> = Vec::new();
    for (pos, &i) in rows.iter().enumerate() {
        let Some(engine) = engines.get(i) else {
            continue;
        };
        if starts
            .last()
            .is_none_or(|(_, m)| *m != engine.id.model.as_str())
        {
            starts.push((pos, engine.id.model.as_str()));
        }
    }
    starts
}
