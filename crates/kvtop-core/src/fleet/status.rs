//! Status rules: how long since the last good scrape makes a row Up, Stale or Down; and what
//! a row's status cell says ([`RowStatus`]: the scrape status, with a recent restart as data).

use super::{EngineState, EngineStatus, Ts};

/// Scrape interval made safe for the rules (a non-positive interval counts as 1 s).
pub(crate) fn effective_interval(interval: f64) -> f64 {
    if interval.is_finite() && interval > 0.0 {
        interval
    } else {
        1.0
    }
}

/// Age of the last good scrape from which a row is Stale: two intervals.
pub(crate) fn stale_after(interval: f64) -> f64 {
    2.0 * effective_interval(interval)
}

/// Age of the last good scrape beyond which a row is Down: 30 intervals, at least 60 s.
pub(crate) fn down_after(interval: f64) -> f64 {
    (30.0 * effective_interval(interval)).max(60.0)
}

/// The status at `now` of a row whose last good scrape was at `last_ok`:
/// Down when it never had one or it is older than [`down_after`]; Stale when it is at least
/// [`stale_after`] old; Up otherwise.
pub(crate) fn status_at(last_ok: Option<Ts>, now: Ts, interval: f64) -> EngineStatus {
    let Some(ok) = last_ok else {
        return EngineStatus::Down;
    };
    let age = now - ok;
    if age > down_after(interval) {
        EngineStatus::Down
    } else if age >= stale_after(interval) {
        EngineStatus::Stale
    } else {
        EngineStatus::Up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_at_a_one_second_interval() {
        // Stale from 2 s, Down beyond max(60, 30) = 60 s.
        assert_eq!(status_at(Some(100.0), 101.9, 1.0), EngineStatus::Up);
        assert_eq!(status_at(Some(100.0), 102.0, 1.0), EngineStatus::Stale);
        assert_eq!(status_at(Some(100.0), 160.0, 1.0), EngineStatus::Stale);
        assert_eq!(status_at(Some(100.0), 160.5, 1.0), EngineStatus::Down);
    }

    #[test]
    fn slow_intervals_stretch_the_down_threshold() {
        // interval 5 s: Stale from 10 s, Down beyond 150 s.
        assert_eq!(status_at(Some(0.0), 9.0, 5.0), EngineStatus::Up);
        assert_eq!(status_at(Some(0.0), 10.0, 5.0), EngineStatus::Stale);
        assert_eq!(status_at(Some(0.0), 150.0, 5.0), EngineStatus::Stale);
        assert_eq!(status_at(Some(0.0), 151.0, 5.0), EngineStatus::Down);
    }

    #[test]
    fn never_scraped_is_down() {
        assert_eq!(status_at(None, 0.0, 1.0), EngineStatus::Down);
    }
}

impl EngineStatus {
    /// The word for it, as every view and report writes it.
    pub fn word(self) -> &'static str {
        match self {
            EngineStatus::Up => "UP",
            EngineStatus::Stale => "STALE",
            EngineStatus::Down => "DOWN",
            EngineStatus::Pending => "PENDING",
        }
    }
}

/// What the status cell of a row says: its [`EngineStatus`], or `Restarted` while it is Up and
/// a counter reset (a process restart) was seen recently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowStatus {
    Up,
    /// Up, but a counter reset (process restart) was seen recently.
    Restarted,
    Stale,
    Down,
    /// Not scraped yet.
    Pending,
}

impl RowStatus {
    /// The status of `engine` at `now`; a restart is marked for `restart_mark_secs` after it
    /// was seen.
    pub fn of(engine: &EngineState, now: Ts, restart_mark_secs: f64) -> RowStatus {
        match engine.status {
            EngineStatus::Down => RowStatus::Down,
            EngineStatus::Pending => RowStatus::Pending,
            EngineStatus::Stale => RowStatus::Stale,
            EngineStatus::Up => match engine.restarted_at {
                Some(at) if now - at < restart_mark_secs => RowStatus::Restarted,
                _ => RowStatus::Up,
            },
        }
    }

    /// The word of the status cell; the console's filter matches it too.
    pub fn word(self) -> &'static str {
        match self {
            RowStatus::Up => EngineStatus::Up.word(),
            RowStatus::Restarted => "RESTARTED",
            RowStatus::Stale => EngineStatus::Stale.word(),
            RowStatus::Down => EngineStatus::Down.word(),
            RowStatus::Pending => EngineStatus::Pending.word(),
        }
    }

    /// Severity used by the status sort: the worse, the higher.
    pub fn rank(self) -> f64 {
        match self {
            RowStatus::Up => 0.0,
            RowStatus::Pending => 0.5,
            RowStatus::Restarted => 1.0,
            RowStatus::Stale => 2.0,
            RowStatus::Down => 3.0,
        }
    }
}
