//! PURE. What fired during a replayed window: each firing episode of a finding with the time it
//! started to hold, fired and resolved, so a postmortem sees an incident that came and went
//! before the window's end (the report's findings are only those of its last cycle).

use std::collections::HashMap;
use std::sync::Arc;

use kvtop_core::fleet::Ts;
use kvtop_core::rules::{Finding, FindingState, Severity, Subject};

/// One firing episode of one rule about one subject.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub rule_id: Arc<str>,
    pub title: Arc<str>,
    pub severity: Severity,
    pub subject: Arc<Subject>,
    /// When the condition started to hold.
    pub since: Ts,
    pub fired_at: Ts,
    /// When it cleared (or left the rule engine's list); `None` while it still fired at the
    /// window's end.
    pub resolved_at: Option<Ts>,
}

/// Collects the episodes of the cycles it is shown.
#[derive(Debug, Default)]
pub struct Episodes {
    list: Vec<Episode>,
    /// The newest episode of each (rule, subject).
    newest: HashMap<(Arc<str>, Arc<Subject>), usize>,
}

impl Episodes {
    /// Fold in the findings of the cycle at `at`; episodes that resolved before `from` are
    /// not of the window.
    pub fn observe(&mut self, findings: &[Finding], at: Ts, from: Ts) {
        let mut listed = vec![false; self.list.len()];
        for f in findings {
            let Some(fired_at) = f.fired_at else { continue };
            let resolved = match f.state {
                FindingState::Resolved { at } => Some(at),
                _ => None,
            };
            let key = (Arc::clone(&f.rule_id), Arc::clone(&f.subject));
            let current = self
                .newest
                .get(&key)
                .copied()
                .filter(|&i| self.list.get(i).is_some_and(|e| e.fired_at == fired_at));
            match current {
                Some(i) => {
                    if let Some(slot) = listed.get_mut(i) {
                        *slot = true;
                    }
                    if let Some(episode) = self.list.get_mut(i) {
                        if episode.resolved_at.is_none() {
                            episode.resolved_at = resolved;
                        }
                    }
                }
                None if resolved.is_some_and(|r| r < from) => {}
                None => {
                    self.newest.insert(key, self.list.len());
                    self.list.push(Episode {
                        rule_id: Arc::clone(&f.rule_id),
                        title: Arc::clone(&f.title),
                        severity: f.severity,
                        subject: Arc::clone(&f.subject),
                        since: f.since,
                        fired_at,
                        resolved_at: resolved,
                    });
                }
            }
        }
        // An open episode whose finding left the list (its engine was forgotten) ended here.
        for (episode, listed) in self.list.iter_mut().zip(listed) {
            if !listed && episode.resolved_at.is_none() {
                episode.resolved_at = Some(at);
            }
        }
    }

    /// The episodes, in the order they fired.
    pub fn finish(mut self) -> Vec<Episode> {
        self.list.sort_by(|a, b| a.fired_at.total_cmp(&b.fired_at));
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(since: Ts, fired_at: Option<Ts>, state: FindingState) -> Finding {
        Finding {
            rule_id: Arc::from("kv-breaker"),
            title: Arc::from("KV cache full"),
            severity: Severity::Critical,
            subject: Arc::new(Subject::Model("m".into())),
            since,
            fired_at,
            state,
            evidence: Vec::new(),
            cause: Arc::from("c"),
            action: Arc::from("a"),
            suggest: None,
            source: Arc::from("T1"),
            frozen: false,
        }
    }

    #[test]
    fn an_episode_keeps_its_fire_and_resolve_times_and_a_new_one_starts_apart() {
        let mut episodes = Episodes::default();
        episodes.observe(&[finding(10.0, None, FindingState::Pending)], 10.0, 0.0);
        episodes.observe(
            &[finding(10.0, Some(40.0), FindingState::Firing)],
            40.0,
            0.0,
        );
        episodes.observe(
            &[finding(10.0, Some(40.0), FindingState::Firing)],
            50.0,
            0.0,
        );
        let cleared = FindingState::Resolved { at: 60.0 };
        episodes.observe(&[finding(10.0, Some(40.0), cleared)], 60.0, 0.0);
        episodes.observe(&[finding(10.0, Some(40.0), cleared)], 70.0, 0.0);
        episodes.observe(
            &[finding(80.0, Some(90.0), FindingState::Firing)],
            90.0,
            0.0,
        );
        let list = episodes.finish();
        assert_eq!(list.len(), 2);
        assert_eq!((list[0].since, list[0].fired_at), (10.0, 40.0));
        assert_eq!(list[0].resolved_at, Some(60.0));
        assert_eq!((list[1].fired_at, list[1].resolved_at), (90.0, None));
    }

    #[test]
    fn what_resolved_before_the_window_is_left_out_and_what_left_the_list_ended() {
        let mut episodes = Episodes::default();
        let before = FindingState::Resolved { at: 5.0 };
        episodes.observe(&[finding(1.0, Some(2.0), before)], 10.0, 10.0);
        episodes.observe(&[finding(8.0, Some(9.0), FindingState::Firing)], 11.0, 10.0);
        episodes.observe(&[], 12.0, 10.0);
        let list = episodes.finish();
        assert_eq!(list.len(), 1);
        assert_eq!((list[0].fired_at, list[0].resolved_at), (9.0, Some(12.0)));
    }
}
