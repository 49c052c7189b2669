//! Which engine rows the fleet table shows, in which order: the filter and the sort.

use std::cmp::Ordering;

use kvtop_core::fleet::{EngineState, Fleet, Ts};

/// The columns the fleet table can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SortColumn {
    #[default]
    Name,
    Status,
    Kv,
    Running,
    Waiting,
    TtftP95,
    ItlP95,
    GenTps,
    PrefixHit,
    Preemptions,
    Age,
    GpuUtil,
    GpuMem,
}

impl SortColumn {
    /// Every column, in the order `s` cycles through them.
    pub(crate) const ALL: [SortColumn; 13] = [
        SortColumn::Name,
        SortColumn::Status,
        SortColumn::Kv,
        SortColumn::Running,
        SortColumn::Waiting,
        SortColumn::TtftP95,
        SortColumn::ItlP95,
        SortColumn::GenTps,
        SortColumn::PrefixHit,
        SortColumn::Preemptions,
        SortColumn::Age,
        SortColumn::GpuUtil,
        SortColumn::GpuMem,
    ];

    /// The next column in the `s` cycle.
    pub fn next(self) -> SortColumn {
        let i = SortColumn::ALL.iter().position(|c| *c == self).unwrap_or(0);
        SortColumn::ALL
            .get(i + 1)
            .copied()
            .unwrap_or(SortColumn::ALL[0])
    }

    /// The direction that puts the rows an operator looks for first on top: names A→Z, the
    /// lowest prefix-hit ratio first, otherwise the highest value (worst status, fullest cache,
    /// slowest latency, oldest scrape) first.
    pub(crate) fn natural_descending(self) -> bool {
        !matches!(self, SortColumn::Name | SortColumn::PrefixHit)
    }
}

pub use kvtop_core::fleet::RowStatus;

/// Indices into `fleet.engines()` of the rows that match `filter` (case-insensitive substring of
/// the name, the model or the status word), sorted by `sort`. GPU exporters' rows are not
/// engines and are left out (the node view shows them). Unknown values sort last whatever
/// the direction; ties are broken by name, then by fleet order, so the order is stable.
pub fn visible_rows(
    fleet: &Fleet,
    filter: &str,
    sort: SortColumn,
    descending: bool,
    now: Ts,
) -> Vec<usize> {
    let needle = filter.trim().to_lowercase();
    let mut keyed: Vec<(usize, &EngineState, Option<f64>)> = matching(fleet, &needle, now)
        .map(|(i, engine, status)| (i, engine, sort_value(engine, status, sort, now)))
        .collect();

    keyed.sort_by(|a, b| {
        let by_value = if sort == SortColumn::Name {
            directed(a.1.name.cmp(&b.1.name), descending)
        } else {
            match (a.2, b.2) {
                (Some(x), Some(y)) => directed(x.total_cmp(&y), descending),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        };
        by_value
            .then_with(|| a.1.name.cmp(&b.1.name))
            .then(a.0.cmp(&b.0))
    });
    keyed.into_iter().map(|(i, _, _)| i).collect()
}

/// How many rows [`visible_rows`] shows under `filter`, without sorting them.
pub(crate) fn matching_rows(fleet: &Fleet, filter: &str, now: Ts) -> usize {
    matching(fleet, &filter.trim().to_lowercase(), now).count()
}

/// The engine rows (index, row, status at `now`) that match `needle` (lower-cased; empty
/// matches every row), in fleet order.
fn matching<'f>(
    fleet: &'f Fleet,
    needle: &'f str,
    now: Ts,
) -> impl Iterator<Item = (usize, &'f EngineState, RowStatus)> + 'f {
    let restart_mark = fleet.settings().restart_mark_secs;
    fleet
        .engines()
        .iter()
        .enumerate()
        .filter(|(_, engine)| !fleet.is_gpu_exporter(engine.target))
        .map(move |(i, engine)| (i, engine, RowStatus::of(engine, now, restart_mark)))
        .filter(move |(_, engine, status)| {
            needle.is_empty() || matches_filter(engine, *status, needle)
        })
}

fn directed(ordering: Ordering, descending: bool) -> Ordering {
    if descending {
        ordering.reverse()
    } else {
        ordering
    }
}

/// `needle` is already lower-cased and non-empty.
fn matches_filter(engine: &EngineState, status: RowStatus, needle: &str) -> bool {
    engine.name.to_lowercase().contains(needle)
        || engine.id.model.to_lowercase().contains(needle)
        || status.word().to_lowercase().contains(needle)
}

/// The value a row is sorted by; `None` (unknown) sorts last. A down engine's values are stale
/// leftovers, so they count as unknown.
fn sort_value(engine: &EngineState, status: RowStatus, sort: SortColumn, now: Ts) -> Option<f64> {
    let s = &engine.signals;
    let live = status != RowStatus::Down;
    let value = match sort {
        SortColumn::Name => None,
        SortColumn::Status => return Some(status.rank()),
        SortColumn::Age => return engine.last_ok.map(|t| now - t).filter(|v| v.is_finite()),
        SortColumn::Kv => s.kv_usage,
        SortColumn::Running => s.running,
        SortColumn::Waiting => s.waiting,
        SortColumn::TtftP95 => s.ttft_p95,
        SortColumn::ItlP95 => s.itl_p95,
        SortColumn::GenTps => s.gen_tps,
        SortColumn::PrefixHit => s.prefix_hit,
        SortColumn::Preemptions => s.preemptions_per_s,
        SortColumn::GpuUtil => s.gpu_util,
        SortColumn::GpuMem => s.gpu_mem,
    };
    value.filter(|v| live && v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_cycle_visits_every_column_once() {
        let mut seen = vec![SortColumn::Name];
        let mut c = SortColumn::Name.next();
        while c != SortColumn::Name {
            assert!(!seen.contains(&c), "{c:?} visited twice");
            seen.push(c);
            c = c.next();
        }
        assert_eq!(seen.len(), SortColumn::ALL.len());
    }

    #[test]
    fn natural_direction_is_worst_first() {
        assert!(!SortColumn::Name.natural_descending());
        assert!(!SortColumn::PrefixHit.natural_descending());
        assert!(SortColumn::Kv.natural_descending());
        assert!(SortColumn::TtftP95.natural_descending());
        assert!(SortColumn::Status.natural_descending());
    }

    #[test]
    fn direction_reverses_only_when_descending() {
        assert_eq!(directed(Ordering::Less, false), Ordering::Less);
        assert_eq!(directed(Ordering::Less, true), Ordering::Greater);
    }
}
