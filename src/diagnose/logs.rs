//! PURE. Recent log lines per scrape target, for the rules' `log ~ "…"` conditions.
//!
//! Each target with a log stream gets a small ring bounded both in lines and in age: a line
//! counts as "recent" for [`RECENT_LOG_SECS`], so a finding raised by one log line (an
//! out-of-memory error) stays firing for five minutes after it and then resolves, unless the
//! line comes again. A target without a stream has no ring at all, which the rules read as
//! "unknown" (not as "no such line").

use std::collections::BTreeMap;

use kvtop_core::fleet::{TargetId, Ts};

/// How long a log line stays recent, seconds.
pub(crate) const RECENT_LOG_SECS: f64 = 300.0;
/// Most lines kept per target (a throughput line every 10 s is 30 in five minutes; an
/// out-of-memory traceback is a dozen).
pub(crate) const RECENT_LOG_LINES: usize = 256;

/// One target's recent lines, oldest first.
#[derive(Debug, Clone, Default)]
pub struct LogRing {
    lines: Vec<String>,
    times: Vec<Ts>,
}

impl LogRing {
    /// Append a line written at `at`, dropping the oldest beyond [`RECENT_LOG_LINES`].
    pub fn push(&mut self, at: Ts, text: String) {
        self.lines.push(text);
        self.times.push(at);
        let excess = self.lines.len().saturating_sub(RECENT_LOG_LINES);
        if excess > 0 {
            self.lines.drain(..excess);
            self.times.drain(..excess);
        }
    }

    /// Forget lines written more than [`RECENT_LOG_SECS`] before `now`.
    pub(crate) fn prune(&mut self, now: Ts) {
        let keep_from = self
            .times
            .iter()
            .position(|t| now - t <= RECENT_LOG_SECS)
            .unwrap_or(self.times.len());
        if keep_from > 0 {
            self.lines.drain(..keep_from);
            self.times.drain(..keep_from);
        }
    }

    /// The recent lines, oldest first.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }
}

/// Recent log lines of every target that has a log stream.
#[derive(Debug, Clone, Default)]
pub struct TargetLogs {
    rings: BTreeMap<TargetId, LogRing>,
}

impl TargetLogs {
    /// Declare that `target` has a log stream (its ring exists even while empty).
    pub fn open(&mut self, target: TargetId) {
        self.rings.entry(target).or_default();
    }

    /// Add lines `(written at, text)` of `target` (opening its stream if needed).
    pub fn extend(&mut self, target: TargetId, lines: impl IntoIterator<Item = (Ts, String)>) {
        let ring = self.rings.entry(target).or_default();
        for (at, text) in lines {
            ring.push(at, text);
        }
    }

    /// Forget lines older than [`RECENT_LOG_SECS`] before `now`, in every ring.
    pub(crate) fn prune(&mut self, now: Ts) {
        for ring in self.rings.values_mut() {
            ring.prune(now);
        }
    }

    /// `target`'s recent lines; `None` when it has no log stream.
    pub fn get(&self, target: TargetId) -> Option<&[String]> {
        self.rings.get(&target).map(LogRing::lines)
    }

    /// Forget a target (removed from the fleet).
    pub fn close(&mut self, target: TargetId) {
        self.rings.remove(&target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_age_out_after_five_minutes() {
        let mut ring = LogRing::default();
        ring.push(100.0, "old".into());
        ring.push(350.0, "newer".into());
        ring.prune(400.0);
        assert_eq!(ring.lines(), ["old", "newer"]);
        // 400.1 - 100 > 300: the first line is no longer recent.
        ring.prune(400.1);
        assert_eq!(ring.lines(), ["newer"]);
        ring.prune(10_000.0);
        assert!(ring.lines().is_empty());
    }

    #[test]
    fn the_ring_keeps_the_newest_lines() {
        let mut ring = LogRing::default();
        for i in 0..(RECENT_LOG_LINES + 3) {
            ring.push(i as f64, format!("line {i}"));
        }
        assert_eq!(ring.lines().len(), RECENT_LOG_LINES);
        assert_eq!(ring.lines().first().map(String::as_str), Some("line 3"));
    }

    #[test]
    fn a_target_without_a_stream_is_unknown_and_an_open_one_is_empty() {
        let mut logs = TargetLogs::default();
        assert_eq!(logs.get(TargetId(1)), None);
        logs.open(TargetId(1));
        assert_eq!(logs.get(TargetId(1)), Some(&[][..]));
        logs.extend(TargetId(2), [(5.0, "CUDA out of memory".to_owned())]);
        assert_eq!(logs.get(TargetId(2)).map(<[String]>::len), Some(1));
        logs.close(TargetId(2));
        assert_eq!(logs.get(TargetId(2)), None);
    }
}
