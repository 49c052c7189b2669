//! The troubleshooting rules inside the console: the rule engine the [`App`] owns, when it
//! evaluates, the inputs it builds from the fleet, and which finding the diagnostics view has
//! selected.
//!
//! **When rules run.** Ingesting a scrape only marks the findings out of date; the rules run
//! when the state is settled after a batch of events ([`App::refresh_rules`], called by
//! `update::settle`, which the event loop runs once before each frame), and on every clock
//! tick ([`App::evaluate_rules`]), because `for` durations and staleness advance with time
//! alone. When settling they run no more often than every half scrape interval (at most every
//! [`REFRESH_SPACING_MAX`] seconds): scrape results of a large fleet trickle in all second
//! long, and a frame every 100 ms must not mean an evaluation every 100 ms. A deferred
//! evaluation keeps the findings marked out of date, and the event loop settles and draws once
//! more when it has run. So a finding is on screen at most half an interval after the scrape
//! that completes its `for` duration.
//!
//! **Replays.** A recording says when the recorded console ran its rules (its cycles). A
//! replay of one ([`App::pace_rules_by_recording`]) runs them at those instants only
//! ([`App::replayed_cycle`]), neither on ticks nor when settling, and the fleet's statuses move
//! with them: its findings are those of the recorded run, whether played, paused or jumped.
//!
//! **Frozen views.** While the view is frozen the rules keep running over the live fleet (so
//! `for` durations stay true to time) and the views show the findings as of the freeze.

use std::cell::Cell;
use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use super::incident_rows::DiagRow;
use super::state::{App, RowKey};
use crate::diagnose::{TargetLogs, inputs};
use kvtop_core::engine::EngineId;
use kvtop_core::fleet::{Fleet, Signals, TargetId, Ts};
use kvtop_core::rules::{
    EngineHealth, Explains, Finding, FindingCounts, FindingState, Incident, RuleEngine, RuleSet,
    Severity, Silences, Subject, Timeline, fold,
};

/// What the table shows about one engine: the severity of the worst firing incident touching
/// it and how many findings (firing or pending) are about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineMarks {
    /// Severity of the worst firing incident the engine is part of (its own findings, or a
    /// model incident that took them in).
    pub worst: Option<Severity>,
    /// Firing findings about the engine.
    pub firing: usize,
    /// Pending findings about the engine.
    pub pending: usize,
}

/// A rule engine and what was derived from its last cycle for drawing.
#[derive(Debug, Clone)]
pub struct RulesView {
    engine: RuleEngine,
    /// The engines of the last cycle, in input (fleet) order; rebuilt only when they change.
    keys: Vec<RowKey>,
    /// Positions in `keys`, sorted by key, for lookups by binary search.
    sorted: Vec<usize>,
    /// Table marks per engine, in input order.
    marks: Vec<EngineMarks>,
    /// Reused per-cycle parts of the inputs (GPU signals, models' merged quantiles).
    parts: inputs::FleetParts,
    /// When the last cycle ran.
    evaluated_at: Option<Ts>,
    /// What each rule explains, for folding findings into incidents.
    explains: Explains,
    /// The last cycle's findings folded into incidents, worst first.
    incidents: Vec<Incident>,
}

impl RulesView {
    fn new(rules: &RuleSet) -> Self {
        RulesView {
            explains: Explains::of(rules.rules()),
            incidents: Vec::new(),
            engine: RuleEngine::new(rules),
            keys: Vec::new(),
            sorted: Vec::new(),
            marks: Vec::new(),
            parts: inputs::FleetParts::default(),
            evaluated_at: None,
        }
    }

    /// The rule engine (findings, counts, health).
    pub fn engine(&self) -> &RuleEngine {
        &self.engine
    }

    /// The findings of the last cycle: firing, then pending, then resolved; each by severity,
    /// then age.
    pub fn findings(&self) -> &[Finding] {
        self.engine.findings()
    }

    /// The last cycle's incidents: firing ones worst first, then resolved ones.
    pub fn incidents(&self) -> &[Incident] {
        &self.incidents
    }

    /// Firing incidents by severity (for the header), and how many resolved ones are listed.
    pub fn incident_counts(&self) -> FindingCounts {
        let mut counts = FindingCounts::default();
        for incident in &self.incidents {
            if !incident.is_firing() {
                counts.resolved += 1;
                continue;
            }
            match incident.severity {
                Severity::Critical => counts.critical += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Info => counts.info += 1,
            }
        }
        counts.pending = self.engine.counts().pending;
        counts
    }

    /// Findings about one engine.
    pub(crate) fn findings_for<'s>(
        &'s self,
        key: &'s RowKey,
    ) -> impl Iterator<Item = &'s Finding> + 's {
        self.engine.findings_for(key.target, &key.id)
    }

    /// The table marks of one engine.
    pub fn marks(&self, key: &RowKey) -> EngineMarks {
        self.position(key.target, &key.id)
            .and_then(|at| self.marks.get(at))
            .copied()
            .unwrap_or_default()
    }

    /// Health and circuit breaker of one engine, once the rules have seen it.
    pub fn health(&self, key: &RowKey) -> Option<EngineHealth> {
        let at = self.position(key.target, &key.id)?;
        self.engine.health().get(at).copied()
    }

    /// A model's latency quantiles over its engines' merged histograms as of the last cycle
    /// (for a past view, as of its instant); `None` before a cycle has seen the model.
    pub fn model_quantiles(&self, model: &str) -> Option<&Signals> {
        self.parts.model(model)
    }

    /// Number of rules evaluated.
    pub(crate) fn rule_count(&self) -> usize {
        self.engine.rules().count()
    }

    /// When the last cycle ran, if one has.
    pub(crate) fn evaluated_at(&self) -> Option<Ts> {
        self.evaluated_at
    }

    /// Position of engine `(target, id)` in the last cycle's inputs.
    fn position(&self, target: TargetId, id: &EngineId) -> Option<usize> {
        let found = self.sorted.binary_search_by(|&at| match self.keys.get(at) {
            Some(key) => (key.target, &key.id).cmp(&(target, id)),
            None => Ordering::Less,
        });
        found.ok().and_then(|i| self.sorted.get(i)).copied()
    }

    fn evaluate(&mut self, fleet: &Fleet, logs: &TargetLogs, now: Ts) {
        self.run(fleet, logs, now, true);
        self.derive(fleet);
    }

    /// Run the rules at `now`, merging the models' histograms only if `merge` or a rule reads
    /// them; what the views derive from the findings is left to [`RulesView::derive`].
    fn run(&mut self, fleet: &Fleet, logs: &TargetLogs, now: Ts, merge: bool) {
        let merge = merge || self.rules_read_merged();
        self.parts.refresh_merging(fleet, merge);
        let inputs = inputs::engine_inputs(fleet, &self.parts, logs);
        self.engine.evaluate(&inputs, now);
        self.evaluated_at = Some(now);
        let same_engines = self.keys.len() == inputs.len()
            && self
                .keys
                .iter()
                .zip(&inputs)
                .all(|(key, input)| key.target == input.target && key.id == *input.id);
        if !same_engines {
            self.set_keys(
                inputs
                    .iter()
                    .map(|input| RowKey {
                        target: input.target,
                        id: input.id.clone(),
                    })
                    .collect(),
            );
        }
    }

    /// What a replay's cycles left undone for the views (see [`App::replayed_cycle`]): the
    /// models' merged quantiles, the incidents and the table marks, as of `fleet`.
    fn catch_up_views(&mut self, fleet: &Fleet) {
        // Merged at the cycle already when a rule reads them.
        if !self.rules_read_merged() {
            self.parts.refresh_merging(fleet, true);
        }
        self.derive(fleet);
    }

    /// Whether a rule reads the models' merged histograms (`merged()`).
    fn rules_read_merged(&self) -> bool {
        self.engine
            .rules()
            .any(kvtop_core::rules::Rule::reads_merged)
    }

    /// The rules state at `t` as `timeline` has it, over `fleet` (the fleet as of `t`): what a
    /// view at the time cursor shows. It evaluates nothing.
    fn past(live: &RulesView, timeline: &Timeline, fleet: &Fleet, t: Ts) -> RulesView {
        let health = timeline.health_at(t);
        let keys = health
            .iter()
            .map(|((target, id), _)| RowKey {
                target: *target,
                id: id.clone(),
            })
            .collect();
        let mut view = RulesView {
            engine: RuleEngine::replayed(&live.engine, timeline.findings_at(t), health),
            explains: live.explains.clone(),
            incidents: Vec::new(),
            keys: Vec::new(),
            sorted: Vec::new(),
            marks: Vec::new(),
            // Not for the rules (a past view evaluates nothing): for the model lines of the
            // table, which read the models' merged quantiles from here.
            parts: inputs::FleetParts::of(fleet),
            evaluated_at: Some(t),
        };
        view.set_keys(keys);
        view.derive(fleet);
        view
    }

    /// Take the engines of a cycle, in input order.
    fn set_keys(&mut self, keys: Vec<RowKey>) {
        self.keys = keys;
        let keys = &self.keys;
        self.sorted = (0..keys.len()).collect();
        self.sorted.sort_by(|&a, &b| {
            let key = |i: usize| keys.get(i).map(|k| (k.target, &k.id));
            key(a).cmp(&key(b))
        });
    }

    /// Fold the cycle's findings into incidents and table marks.
    fn derive(&mut self, fleet: &Fleet) {
        // Traffic an incident touches: its engines' finished requests per second.
        let engines = fleet.engines();
        let traffic = |subject: &Subject| match subject {
            Subject::Engine { target, id, .. } => engines
                .iter()
                .find(|e| e.target == *target && e.id == *id)
                .and_then(|e| e.signals.requests_per_s),
            Subject::Model(_) | Subject::Fleet => None,
        };
        self.incidents = fold(self.engine.findings(), &self.explains, traffic);
        self.marks.clear();
        self.marks.resize(self.keys.len(), EngineMarks::default());
        for finding in self.engine.findings() {
            let Subject::Engine { target, id, .. } = finding.subject.as_ref() else {
                continue;
            };
            let Some(at) = self.position(*target, id) else {
                continue;
            };
            let Some(marks) = self.marks.get_mut(at) else {
                continue;
            };
            match finding.state {
                FindingState::Firing => marks.firing += 1,
                FindingState::Pending => marks.pending += 1,
                FindingState::Resolved { .. } => {}
            }
        }
        for incident in self.incidents.iter().filter(|i| i.is_firing()) {
            for subject in &incident.engines {
                let Subject::Engine { target, id, .. } = subject.as_ref() else {
                    continue;
                };
                let at = self.position(*target, id);
                if let Some(marks) = at.and_then(|at| self.marks.get_mut(at)) {
                    marks.worst = marks.worst.max(Some(incident.severity));
                }
            }
        }
    }
}

/// Identity of a finding, stable while the list re-sorts.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingKey {
    pub rule_id: Arc<str>,
    pub subject: Arc<Subject>,
}

impl FindingKey {
    /// The key of a finding.
    pub fn of(finding: &Finding) -> FindingKey {
        FindingKey {
            rule_id: Arc::clone(&finding.rule_id),
            subject: Arc::clone(&finding.subject),
        }
    }

    /// Whether `finding` is the one this key names.
    pub fn is(&self, finding: &Finding) -> bool {
        *self.rule_id == *finding.rule_id && *self.subject == *finding.subject
    }
}

/// The rules state of the console.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    live: RulesView,
    /// The findings as of the freeze, while the view is frozen.
    frozen: Option<RulesView>,
    /// The findings are out of date (they start so).
    stale: bool,
    /// Data or rules arrived through the state machine since the rules last ran: what makes
    /// settling the state run them.
    news: bool,
    /// The rules run at a replay's recorded cycles only (one was handed over).
    recorded_cycles: bool,
    /// Recorded cycles ran since the views last derived what they show from the findings.
    views_behind: bool,
    /// Recent log lines per target, for the rules that match text.
    pub logs: TargetLogs,
    /// What the live rules said over the retained past, for the time cursor.
    timeline: Timeline,
    /// The finding selected in the diagnostics view.
    pub selected: Option<FindingKey>,
    /// Incidents acknowledged or snoozed (kept over the live incidents, shown in both views).
    pub silences: Silences,
    /// First line of the routing view shown.
    pub routing_offset: usize,
    /// Rows of the findings list as last drawn (for paging); written while drawing.
    list_height: Cell<usize>,
    /// Lines of the routing view and rows it had as last drawn (for scrolling).
    routing_extent: Cell<(usize, usize)>,
}

impl Diagnostics {
    /// Take `other`'s rules state (findings, timeline, logs), keeping this one's view of it:
    /// the selected finding, the silences and the scroll offsets.
    pub(crate) fn restore(&mut self, other: Diagnostics) {
        let Diagnostics {
            live,
            frozen: _,
            stale,
            news,
            recorded_cycles,
            views_behind,
            logs,
            timeline,
            selected: _,
            silences: _,
            routing_offset: _,
            list_height: _,
            routing_extent: _,
        } = other;
        self.live = live;
        self.frozen = None;
        self.stale = stale;
        self.news = news;
        self.recorded_cycles = recorded_cycles;
        self.views_behind = views_behind;
        self.logs = logs;
        self.timeline = timeline;
    }

    /// Rules state over `rules`, nothing evaluated yet.
    pub fn new(rules: &RuleSet) -> Diagnostics {
        Diagnostics {
            live: RulesView::new(rules),
            frozen: None,
            stale: true,
            news: false,
            recorded_cycles: false,
            views_behind: false,
            logs: TargetLogs::default(),
            timeline: Timeline::new(DEFAULT_RETENTION_SECS),
            selected: None,
            silences: Silences::default(),
            routing_offset: 0,
            list_height: Cell::new(0),
            routing_extent: Cell::new((0, 0)),
        }
    }

    /// Rules state over the built-in rules. They are part of the binary and tested, so they
    /// always load; were they ever broken, the console runs without rules and logs why.
    pub fn builtin() -> Diagnostics {
        let rules = RuleSet::builtin().unwrap_or_else(|err| {
            tracing::error!(%err, "the built-in rules did not load");
            RuleSet::default()
        });
        Diagnostics::new(&rules)
    }

    /// The same, keeping the findings' past for `secs` seconds (the fleet's retention).
    pub fn with_retention(mut self, secs: f64) -> Diagnostics {
        self.timeline = Timeline::new(secs);
        self
    }

    /// The findings the views show: as of the freeze, or live.
    pub fn view(&self) -> &RulesView {
        self.frozen.as_ref().unwrap_or(&self.live)
    }

    /// The live findings, whatever the view shows.
    pub fn live(&self) -> &RulesView {
        &self.live
    }

    /// The findings of a frozen view or one at the time cursor, if the view is not live.
    pub fn frozen_view(&self) -> Option<&RulesView> {
        self.frozen.as_ref()
    }

    /// Replace the rules; unchanged rules keep their state.
    pub fn set_rules(&mut self, rules: &RuleSet) {
        self.live.engine.set_rules(rules);
        self.live.explains = Explains::of(rules.rules());
        self.mark_stale();
    }

    /// New data arrived: the findings are out of date.
    pub fn mark_stale(&mut self) {
        self.stale = true;
        self.news = true;
    }

    /// Whether the findings are out of date.
    pub(crate) fn is_stale(&self) -> bool {
        self.stale
    }

    /// Whether data or rules arrived that the rules have not run over.
    pub(crate) fn has_news(&self) -> bool {
        self.news
    }

    /// What the rules said over the retained past.
    #[cfg(test)]
    pub(crate) fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Whether the rules run at a replay's recorded cycles only (see the module docs).
    pub(crate) fn paced_by_recording(&self) -> bool {
        self.recorded_cycles
    }

    /// Rows of the findings list as last drawn.
    pub(crate) fn list_height(&self) -> usize {
        self.list_height.get()
    }

    /// Record the findings list's height (by the view, while drawing).
    pub(crate) fn set_list_height(&self, rows: usize) {
        self.list_height.set(rows);
    }

    /// Lines of the routing view and the rows it had, as last drawn.
    pub(crate) fn routing_extent(&self) -> (usize, usize) {
        self.routing_extent.get()
    }

    /// Record the routing view's extent (by the view, while drawing).
    pub(crate) fn set_routing_extent(&self, lines: usize, rows: usize) {
        self.routing_extent.set((lines, rows));
    }

    /// Position in `findings` of the selected finding; the first when it is gone; `None` when
    /// there are none.
    pub fn selection(&self, findings: &[Finding]) -> Option<usize> {
        if findings.is_empty() {
            return None;
        }
        let found = self
            .selected
            .as_ref()
            .and_then(|key| findings.iter().position(|f| key.is(f)));
        Some(found.unwrap_or(0))
    }
}

/// How far back the time cursor can show the findings until the fleet's retention is known.
const DEFAULT_RETENTION_SECS: f64 = 3600.0;
impl Diagnostics {
    /// Position in `rows` (of `view`) of the selected finding's row; when the selected finding
    /// has no row of its own (the same cause on another engine of the incident), its
    /// incident's row; the first row when it is gone; `None` when there are no rows.
    pub fn selected_row(&self, view: &RulesView, rows: &[DiagRow]) -> Option<usize> {
        if rows.is_empty() {
            return None;
        }
        let Some(key) = self.selected.as_ref() else {
            return Some(0);
        };
        let findings = view.findings();
        let own = rows
            .iter()
            .position(|row| findings.get(row.finding).is_some_and(|f| key.is(f)));
        let of_incident = || {
            let incident = view.incidents().iter().position(|i| {
                i.members
                    .iter()
                    .any(|(rule, subject)| *rule == key.rule_id && *subject == key.subject)
            })?;
            rows.iter().position(|row| {
                row.kind == super::incident_rows::DiagRowKind::Incident { incident }
            })
        };
        Some(own.or_else(of_incident).unwrap_or(0))
    }

    /// The incidents of the findings strip: those of the view not acknowledged or snoozed,
    /// worst first.
    pub fn strip_incidents(&self) -> Vec<&Incident> {
        self.view()
            .incidents()
            .iter()
            .filter(|i| self.silences.of(i).is_none())
            .collect()
    }

    /// The finding the diagnostics list shows in full: the selected one (even without a row of
    /// its own), else the finding of the row standing for it.
    pub fn selected_finding<'v>(&self, view: &'v RulesView) -> Option<&'v Finding> {
        let findings = view.findings();
        let own = self
            .selected
            .as_ref()
            .and_then(|key| findings.iter().find(|f| key.is(f)));
        own.or_else(|| {
            let rows = super::incident_rows::diag_rows(view);
            let at = self.selected_row(view, &rows)?;
            findings.get(rows.get(at)?.finding)
        })
    }
}

/// Longest spacing of evaluations before frames, seconds (see the module docs).
pub(crate) const REFRESH_SPACING_MAX: f64 = 0.5;

impl App {
    /// Evaluate the rules over the live fleet at `now` (in a replay paced by its recorded
    /// cycles, only at those: see [`App::replayed_cycle`]).
    pub fn evaluate_rules(&mut self, now: Ts) {
        if !self.diag.recorded_cycles {
            self.run_rules(now);
        }
    }

    /// The recorded console ran its rules at `at`: bring the fleet's statuses to `at` and run
    /// them there, as `check --replay` does. From now on the rules run at recorded cycles
    /// only, so what a replay finds does not hang on when its clock ticked or how far a jump
    /// handed records over at once.
    ///
    /// A jump hands over many cycles at once: each runs the rules and is kept in the timeline,
    /// but what only the views read (the models' merged histograms, incidents, table marks)
    /// is derived once, when the state is next settled.
    pub(crate) fn replayed_cycle(&mut self, at: Ts) {
        self.pace_rules_by_recording();
        self.fleet.tick(at);
        self.diag.logs.prune(at);
        self.diag.live.run(&self.fleet, &self.diag.logs, at, false);
        self.observe_timeline(at);
        self.diag.stale = false;
        self.diag.views_behind = true;
        // Settling derives the views.
        self.diag.news = true;
        if !self.is_frozen() {
            self.dirty = true;
        }
    }

    /// Run the rules at a replay's recorded cycles only, from the start (before the first
    /// cycle too: a tick there would start a `for` duration the recorded run did not).
    pub(crate) fn pace_rules_by_recording(&mut self) {
        self.diag.recorded_cycles = true;
    }

    fn run_rules(&mut self, now: Ts) {
        self.diag.logs.prune(now);
        self.diag.live.evaluate(&self.fleet, &self.diag.logs, now);
        self.observe_timeline(now);
        self.diag.silences.prune(&self.diag.live.incidents, now);
        self.diag.stale = false;
        self.diag.news = false;
    }

    /// Show the timeline the live findings and health of the cycle at `now`.
    fn observe_timeline(&mut self, now: Ts) {
        let live = &self.diag.live;
        let health = live
            .keys
            .iter()
            .zip(live.engine.health())
            .map(|(key, health)| ((key.target, &key.id), *health));
        self.diag
            .timeline
            .observe(live.engine.findings(), health, now);
    }

    /// Evaluate the rules if data arrived since they last ran and they last ran at least half a
    /// scrape interval (at most [`REFRESH_SPACING_MAX`]) ago; see the module docs. Whether the
    /// findings are still out of date is [`Diagnostics::is_stale`].
    pub fn refresh_rules(&mut self, now: Ts) {
        if self.diag.recorded_cycles {
            // The recorded cycles run them; settling only derives what the views show.
            if std::mem::take(&mut self.diag.views_behind) {
                self.diag.live.catch_up_views(&self.fleet);
                self.diag.silences.prune(&self.diag.live.incidents, now);
            }
            self.diag.news = false;
            return;
        }
        if !self.diag.stale {
            return;
        }
        let spacing = (self.interval.as_secs_f64() / 2.0).min(REFRESH_SPACING_MAX);
        let due = self
            .diag
            .live
            .evaluated_at
            .is_none_or(|last| now - last >= spacing || now < last);
        if due {
            self.evaluate_rules(now);
        }
    }

    /// Merge the user rules file at `path` (if any) over the built-in rules. A file that does
    /// not load is reported in the footer and the built-in rules run alone.
    pub(crate) fn load_user_rules(&mut self, path: Option<&Path>, now: Ts) {
        match RuleSet::load(path) {
            Ok(rules) => self.diag.set_rules(&rules),
            Err(err) => {
                self.warn(
                    format!("rules file ignored, built-in rules only: {err}"),
                    now,
                );
                if let Ok(rules) = RuleSet::builtin() {
                    self.diag.set_rules(&rules);
                }
            }
        }
    }

    /// Show the findings as they were at `t` (the time cursor), over `fleet` as of `t`.
    pub(crate) fn rules_at(&mut self, fleet: &Fleet, t: Ts) {
        self.diag.frozen = Some(RulesView::past(
            &self.diag.live,
            &self.diag.timeline,
            fleet,
            t,
        ));
    }

    /// The earliest instant the time cursor can show: what both the findings and the
    /// histories reach back to (the first data, not the start before any scrape answered).
    pub(crate) fn cursor_start(&self, now: Ts) -> Option<Ts> {
        let retention = self.fleet.settings().history_total_secs;
        let first_data = self
            .fleet
            .engines()
            .iter()
            .filter_map(|e| e.history.oldest_time())
            .reduce(f64::min);
        let start = self.diag.timeline.start(now)?;
        Some(start.max(first_data.unwrap_or(start)).max(now - retention))
    }

    /// Keep the findings as they are now for a frozen view (after bringing them up to date),
    /// or drop the copy when the view goes live again.
    pub(crate) fn freeze_rules(&mut self, frozen: bool, now: Ts) {
        if frozen {
            if self.diag.stale {
                self.evaluate_rules(now);
            }
            self.diag.frozen = Some(self.diag.live.clone());
        } else {
            self.diag.frozen = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_fleet::{KV_RULE, one_target_app};
    use kvtop_core::engine::{EngineId, EngineSample};
    use kvtop_core::fleet::{ScrapePayload, ScrapeReport, TargetSpec};

    const T0: Ts = 10_000.0;

    fn scrape(target: kvtop_core::fleet::TargetId, at: Ts, kv: f64) -> ScrapeReport {
        ScrapeReport {
            target,
            at,
            took: 0.01,
            outcome: Ok(ScrapePayload {
                engines: vec![EngineSample {
                    id: EngineId {
                        model: "m".into(),
                        engine: "0".into(),
                    },
                    kv_usage: Some(kv),
                    ..EngineSample::default()
                }],
                ..ScrapePayload::default()
            }),
        }
    }

    fn rules(user: &str) -> RuleSet {
        match RuleSet::from_texts(&[("test.toml", user)]) {
            Ok(rules) => rules,
            Err(err) => panic!("test rules: {err}"),
        }
    }

    #[test]
    fn findings_follow_the_for_duration_and_mark_the_engine() {
        let (mut app, target) = one_target_app();
        app.diag = Diagnostics::new(&rules(KV_RULE));
        app.fleet.ingest(scrape(target, T0, 0.95));
        app.evaluate_rules(T0);
        let key = RowKey::of(&app.fleet.engines()[0]);
        let marks = app.diag.view().marks(&key);
        assert_eq!((marks.worst, marks.firing, marks.pending), (None, 0, 1));
        app.fleet.ingest(scrape(target, T0 + 11.0, 0.96));
        app.evaluate_rules(T0 + 11.0);
        let marks = app.diag.view().marks(&key);
        assert_eq!(
            (marks.worst, marks.firing, marks.pending),
            (Some(Severity::Critical), 1, 0)
        );
        assert_eq!(app.diag.view().findings_for(&key).count(), 1);
    }

    #[test]
    fn marks_and_health_follow_engines_when_targets_come_and_go() {
        let (mut app, a) = one_target_app();
        app.diag = Diagnostics::new(&rules(KV_RULE));
        // A target added before `a` in name order but after it in id order, and one removed.
        let b = app.fleet.add_target(TargetSpec {
            name: "0-b".into(),
            url: "http://b/metrics".into(),
        });
        app.fleet.ingest(scrape(a, T0, 0.95));
        app.fleet.ingest(scrape(b, T0, 0.10));
        app.evaluate_rules(T0);
        app.fleet.ingest(scrape(a, T0 + 11.0, 0.95));
        app.fleet.ingest(scrape(b, T0 + 11.0, 0.10));
        app.evaluate_rules(T0 + 11.0);
        let key_of = |app: &App, target| {
            app.fleet
                .engines()
                .iter()
                .find(|e| e.target == target)
                .map(RowKey::of)
        };
        let (Some(ka), Some(kb)) = (key_of(&app, a), key_of(&app, b)) else {
            panic!("both engines have rows");
        };
        assert_eq!(app.diag.view().marks(&ka).worst, Some(Severity::Critical));
        assert_eq!(app.diag.view().marks(&kb).worst, None);
        let health = |app: &App, key: &RowKey| app.diag.view().health(key).map(|h| h.health);
        assert_eq!(health(&app, &ka), Some(kvtop_core::rules::Health::Degraded));
        assert_eq!(health(&app, &kb), Some(kvtop_core::rules::Health::Healthy));
        app.fleet.remove_target(a);
        app.evaluate_rules(T0 + 12.0);
        assert_eq!(app.diag.view().marks(&ka), EngineMarks::default());
        assert_eq!(health(&app, &ka), None);
        assert_eq!(health(&app, &kb), Some(kvtop_core::rules::Health::Healthy));
    }

    #[test]
    fn refresh_runs_only_when_data_arrived() {
        let (mut app, target) = one_target_app();
        app.diag = Diagnostics::new(&rules(KV_RULE));
        app.refresh_rules(T0);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0));
        app.refresh_rules(T0 + 1.0);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0), "nothing new");
        crate::app::step(
            &mut app,
            crate::app::Event::Scrape(scrape(target, T0 + 2.0, 0.5)),
            T0 + 2.0,
        );
        assert!(app.diag.is_stale());
        assert_eq!(
            app.diag.view().evaluated_at(),
            Some(T0),
            "ingest only marks"
        );
        app.refresh_rules(T0 + 2.5);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0 + 2.5));
        assert!(!app.diag.is_stale());
    }

    #[test]
    fn refresh_waits_half_an_interval_between_evaluations() {
        // A 1 s interval: at most every 0.5 s before frames.
        let (mut app, target) = one_target_app();
        app.refresh_rules(T0);
        app.fleet.ingest(scrape(target, T0 + 0.2, 0.5));
        app.diag.mark_stale();
        app.refresh_rules(T0 + 0.3);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0), "too soon");
        assert!(app.diag.is_stale(), "still out of date");
        app.refresh_rules(T0 + 0.5);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0 + 0.5));
        assert!(!app.diag.is_stale());
        // A tick evaluates whatever the spacing.
        app.diag.mark_stale();
        crate::app::update(&mut app, crate::app::Event::Tick, T0 + 0.6);
        assert_eq!(app.diag.view().evaluated_at(), Some(T0 + 0.6));
    }

    #[test]
    fn a_broken_user_rules_file_is_reported_and_the_builtin_rules_run() {
        let (mut app, _) = one_target_app();
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(err) => panic!("temp dir: {err}"),
        };
        let path = dir.path().join("rules.toml");
        if let Err(err) = std::fs::write(&path, "[[rule]]\nid = \"x\"\nwhen = \"kv_usage >\"\n") {
            panic!("write: {err}");
        }
        app.load_user_rules(Some(&path), T0);
        let notice = app.notice.as_ref().map(|n| n.kind.clone());
        let Some(crate::app::NoticeKind::Problem(message)) = notice else {
            panic!("no problem notice: {notice:?}");
        };
        assert!(message.contains("rules.toml"), "{message}");
        let builtin = RuleSet::builtin().map(|r| r.rules().len()).unwrap_or(0);
        assert!(builtin > 0);
        assert_eq!(app.diag.view().rule_count(), builtin);
    }

    #[test]
    fn a_missing_named_rules_file_is_reported() {
        let (mut app, _) = one_target_app();
        app.load_user_rules(Some(Path::new("/nonexistent/kvtop/rules.toml")), T0);
        assert!(matches!(
            app.notice.as_ref().map(|n| &n.kind),
            Some(crate::app::NoticeKind::Problem(_))
        ));
    }

    #[test]
    fn a_frozen_view_keeps_its_findings_while_the_rules_keep_running() {
        let (mut app, target) = one_target_app();
        app.diag = Diagnostics::new(&rules(KV_RULE));
        app.fleet.ingest(scrape(target, T0, 0.95));
        app.evaluate_rules(T0);
        app.freeze_rules(true, T0);
        app.fleet.ingest(scrape(target, T0 + 11.0, 0.96));
        app.evaluate_rules(T0 + 11.0);
        let key = RowKey::of(&app.fleet.engines()[0]);
        assert_eq!(app.diag.view().marks(&key).pending, 1, "as frozen");
        assert_eq!(app.diag.live().marks(&key).firing, 1, "live moved on");
        app.freeze_rules(false, T0 + 12.0);
        assert_eq!(app.diag.view().marks(&key).firing, 1);
    }
}
