//! Freezing the view (`f`): the view stays at an instant while ingestion goes on.
//!
//! Freezing records the instant and what the rows, targets and GPUs were then, but not the
//! engines' histories (most of the fleet's memory): the charts of a frozen view read the live
//! histories up to the frozen instant. Histories only grow at their new end, so those points
//! are the ones the view had, with two exceptions that come with not copying: the live history
//! folds points older than its full-resolution span into coarse buckets, so a view frozen for
//! longer than that span shows those parts of its charts at the coarse resolution; and an
//! engine the live fleet removed (a pod gone) loses its charts.

use super::state::{App, Frozen, NoticeKind};

/// A cursor this close to now (seconds) is the live view.
const CURSOR_LIVE_SLACK: f64 = 0.5;
use kvtop_core::fleet::{EngineState, Series, Ts};

impl App {
    /// Freeze the view as of `now`, or let it follow the live fleet again.
    pub(crate) fn toggle_freeze(&mut self, now: Ts) {
        let freezing = self.frozen.is_none();
        self.freeze_rules(freezing, now);
        if self.frozen.take().is_some() {
            self.set_notice(NoticeKind::Unfrozen, now);
        } else {
            self.frozen = Some(Frozen {
                at: now,
                fleet: self.fleet.without_history(),
                past: false,
            });
            self.set_notice(NoticeKind::Frozen, now);
        }
    }

    /// Move the time cursor by `delta` seconds from where the view is (now when live): the
    /// view shows the fleet and the findings as they were then, rebuilt from the histories and
    /// the findings' timeline, while ingestion goes on. Reaching the present goes live again
    /// (in a replay, a step beyond it jumps the replay forward); the retained past's start
    /// stops it.
    pub(crate) fn step_cursor(&mut self, delta: f64, now: Ts) {
        // Live in a replay still catching up a jump, the next step goes on from its target.
        let ahead = self.replay.as_ref().and_then(|r| r.skipping_to());
        let from = self
            .frozen
            .as_ref()
            .map_or_else(|| ahead.unwrap_or(now).max(now), |f| f.at);
        self.move_cursor(from + delta, now);
    }

    /// Put the time cursor at `t` (see [`step_cursor`](Self::step_cursor)).
    pub(crate) fn move_cursor(&mut self, t: Ts, now: Ts) {
        if !t.is_finite() {
            return;
        }
        if t >= now - CURSOR_LIVE_SLACK {
            if self.frozen.take().is_some() {
                self.freeze_rules(false, now);
                self.set_notice(NoticeKind::Unfrozen, now);
            }
            // A replay goes on to `t` beyond what it has replayed.
            if let Some(replay) = self.replay.as_ref().filter(|_| t > now + CURSOR_LIVE_SLACK) {
                replay.skip_to(t);
                self.dirty = true;
            }
            return;
        }
        if self.diag.is_stale() {
            self.evaluate_rules(now);
        }
        let Some(start) = self.cursor_start(now) else {
            self.set_notice(NoticeKind::CursorAtStart { ago: 0.0 }, now);
            return;
        };
        if t < start {
            self.set_notice(NoticeKind::CursorAtStart { ago: now - start }, now);
        }
        let at = t.max(start);
        let fleet = self.fleet.as_of(at);
        self.rules_at(&fleet, at);
        self.frozen = Some(Frozen {
            at,
            fleet,
            past: true,
        });
        self.dirty = true;
    }

    /// Points of one series of a shown engine from `since`, oldest first: its history, or for
    /// a frozen view the live engine's history up to the frozen instant (nothing once the
    /// engine is gone from the live fleet).
    pub(crate) fn history_points(
        &self,
        engine: &EngineState,
        series: Series,
        since: Ts,
    ) -> Vec<(f64, f64)> {
        let Some(frozen) = &self.frozen else {
            return engine.history.points(series, since);
        };
        let mut points = self
            .live_engine(engine)
            .map_or_else(Vec::new, |e| e.history.points(series, since));
        // At the time cursor the charts go on past it (see `chart_end`).
        if !frozen.past {
            points.retain(|&(t, _)| t <= frozen.at);
        }
        points
    }

    /// Where a chart of `range` seconds of `engine` ends, and the time cursor it marks: at the
    /// cursor, a quarter of the range goes on past it, as far as data came since (what
    /// happened next is part of the story); otherwise the chart ends at `now` (the view's
    /// time) with no mark.
    pub(crate) fn chart_end(&self, engine: &EngineState, range: f64, now: Ts) -> (Ts, Option<Ts>) {
        match &self.frozen {
            Some(frozen) if frozen.past => {
                let newest = self
                    .live_engine(engine)
                    .and_then(|e| e.history.newest_time())
                    .unwrap_or(frozen.at);
                let end = (frozen.at + range / 4.0).min(newest).max(frozen.at);
                (end, Some(frozen.at))
            }
            _ => (now, None),
        }
    }

    /// The live fleet's row of a shown engine (gone once the live fleet removed it).
    fn live_engine(&self, engine: &EngineState) -> Option<&EngineState> {
        self.fleet
            .engines()
            .iter()
            .find(|e| e.target == engine.target && e.id == engine.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_fleet::{kv_report, one_target_app};
    use crate::app::{Event, update};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use kvtop_core::fleet::TargetId;

    const T0: Ts = 5_000.0;

    fn scrape(target: TargetId, at: Ts, kv: f64) -> Event {
        Event::Scrape(kv_report(target, at, "m", kv))
    }

    /// One engine scraped at T0, T0 + 1 and T0 + 2 with KV 0.1, 0.2, 0.3.
    fn app() -> (App, TargetId) {
        let (mut app, target) = one_target_app();
        for (step, kv) in [0.1, 0.2, 0.3].into_iter().enumerate() {
            let at = T0 + step as f64;
            update(&mut app, scrape(target, at, kv), at);
        }
        (app, target)
    }

    fn freeze(app: &mut App, now: Ts) {
        let f = KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE);
        update(app, Event::Key(f), now);
    }

    fn kv_points(app: &App) -> Vec<(f64, f64)> {
        let rows = app.visible_rows();
        let Some(engine) = app.selected_engine(rows) else {
            panic!("no engine shown");
        };
        app.history_points(engine, Series::KvUsage, 0.0)
    }

    #[test]
    fn a_frozen_view_copies_no_history_and_charts_stop_at_the_instant() {
        let (mut app, target) = app();
        freeze(&mut app, T0 + 2.5);
        let Some(frozen) = app.frozen.as_ref() else {
            panic!("not frozen");
        };
        assert!(frozen.fleet.engines().iter().all(|e| e.history.is_empty()));
        update(&mut app, scrape(target, T0 + 3.0, 0.9), T0 + 3.0);
        let kv: Vec<f64> = kv_points(&app).iter().map(|p| p.1).collect();
        assert_eq!(kv.len(), 3, "{kv:?}");
        assert!((kv[2] - 0.3).abs() < 1e-6, "{kv:?}");
        freeze(&mut app, T0 + 4.0);
        assert_eq!(kv_points(&app).len(), 4, "live again");
    }

    #[test]
    fn an_engine_gone_from_the_live_fleet_has_no_frozen_chart() {
        let (mut app, target) = app();
        freeze(&mut app, T0 + 2.5);
        app.fleet.remove_target(target);
        assert!(kv_points(&app).is_empty());
        assert_eq!(app.view_fleet().engines().len(), 1, "the row stays");
    }
}

#[cfg(test)]
#[path = "cursor_tests.rs"]
mod cursor_tests;
