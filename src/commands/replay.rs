//! `kvtop replay FILE [--speed N] [--from TIME]`: the console on a recording.
//!
//! A feeder thread reads the recording and hands its scrapes, logs and target changes to the
//! console's event loop when the replay clock reaches their time; the console runs on that
//! clock (ages, staleness, `for` durations, the header's time), `--speed` times faster than it
//! was recorded. Records before `--from` are handed over at once, so rates and windows are as
//! they were at `--from`. At the end of the recording the clock stops there and the console
//! stays, with the time cursor keys to go back through what was replayed. Nothing in a replay
//! reaches a cluster: the views are read-only.

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::replay_ahead::{self, Checkpoint, Checkpoints};
use super::setup::{Session, load_config};
use crate::app::run::{Executor, ExitReason, run_with};
use crate::app::state::App;
use crate::app::{Command, Event};
use crate::cli::{GlobalArgs, ReplayArgs};
use crate::record::{Recording, fleet_settings};
use kvtop_core::fleet::{Fleet, Ts};
use kvtop_core::recording::Record;

/// Events queued from the feeder to the console.
const QUEUE: usize = 4096;

/// The replay's clock: the recording's time, running `speed` times faster than the wall
/// clock from `origin`, stopped at the recording's end once the feeder reached it.
#[derive(Debug)]
pub(crate) struct ReplayClock {
    speed: f64,
    run: Mutex<Run>,
    end: Mutex<Option<Ts>>,
    skip: Mutex<Option<Skip>>,
}

/// A jump forward being caught up: every record up to `to` is handed over at once, and the
/// clock reads the last one's time (`at`) meanwhile, so the console's ages and rules follow
/// the data it has, never running ahead of it; past `to`, the clock runs on from `to`.
#[derive(Debug, Clone, Copy)]
struct Skip {
    to: Ts,
    at: Ts,
}

/// The clock reads `origin` at `wall`, and runs from there unless paused.
#[derive(Debug, Clone, Copy)]
struct Run {
    wall: Instant,
    origin: Ts,
    paused: bool,
}

impl Run {
    fn now(&self, speed: f64) -> Ts {
        if self.paused {
            self.origin
        } else {
            self.origin + self.wall.elapsed().as_secs_f64() * speed
        }
    }
}

impl ReplayClock {
    /// A clock at `origin` now, running `speed` times faster than the wall clock.
    pub(crate) fn start(origin: Ts, speed: f64) -> Self {
        ReplayClock {
            speed,
            run: Mutex::new(Run {
                wall: Instant::now(),
                origin,
                paused: false,
            }),
            end: Mutex::new(None),
            skip: Mutex::new(None),
        }
    }

    pub(crate) fn now(&self) -> Ts {
        let skipping = self.skip.lock().ok().and_then(|skip| *skip);
        let running = match skipping {
            Some(skip) => skip.at,
            None => self.running(),
        };
        match self.end.lock().ok().and_then(|end| *end) {
            Some(end) => running.min(end),
            None => running,
        }
    }

    fn running(&self) -> Ts {
        match self.run.lock() {
            Ok(run) => run.now(self.speed),
            Err(poisoned) => poisoned.into_inner().now(self.speed),
        }
    }

    /// Whether a record at `at` is due: the clock reached it, or a jump forward is catching
    /// up past it (the clock then reads `at`).
    pub(crate) fn due(&self, at: Ts) -> bool {
        if let Ok(mut slot) = self.skip.lock() {
            match *slot {
                Some(ref mut skip) if at <= skip.to => {
                    skip.at = skip.at.max(at);
                    return true;
                }
                Some(skip) => {
                    *slot = None;
                    self.run_from(skip.to);
                }
                None => {}
            }
        }
        at <= self.now()
    }

    /// Run on from `origin` now (paused or not, as it was).
    fn run_from(&self, origin: Ts) {
        if let Ok(mut run) = self.run.lock() {
            *run = Run {
                wall: Instant::now(),
                origin,
                paused: run.paused,
            };
        }
    }

    /// Replay seconds per wall-clock second.
    pub(crate) fn speed(&self) -> f64 {
        self.speed
    }

    pub(crate) fn stop_at(&self, end: Ts) {
        // A jump past the end stops there.
        if let Some(skip) = self.skip.lock().ok().and_then(|mut slot| slot.take()) {
            self.run_from(skip.to.max(skip.at));
        }
        if let Ok(mut slot) = self.end.lock() {
            *slot = Some(end);
        }
    }
}

impl crate::app::replay_control::ReplayControl for ReplayClock {
    fn paused(&self) -> bool {
        self.run.lock().is_ok_and(|run| run.paused)
    }

    fn set_paused(&self, paused: bool) {
        if let Ok(mut run) = self.run.lock() {
            if run.paused != paused {
                *run = Run {
                    wall: Instant::now(),
                    origin: run.now(self.speed),
                    paused,
                };
            }
        }
    }

    fn skipping_to(&self) -> Option<Ts> {
        self.skip.lock().ok().and_then(|skip| skip.map(|s| s.to))
    }

    fn skip_to(&self, t: Ts) {
        let now = self.now();
        let ended = self.end.lock().is_ok_and(|end| end.is_some());
        if ended || !t.is_finite() || t <= now {
            return;
        }
        if let Ok(mut slot) = self.skip.lock() {
            let at = slot.map_or(now, |skip| skip.at);
            *slot = Some(Skip { to: t, at });
        }
    }
}

/// The replay's workers: nothing to command (no scraping, no cluster), only the clock.
struct ReplayWorkers {
    clock: Arc<ReplayClock>,
}

impl Executor for ReplayWorkers {
    fn execute(&mut self, _command: Command) {}

    fn now(&self) -> Ts {
        self.clock.now()
    }

    fn tick_every(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.clock.speed)
    }
}

#[inline(never)] // a command entry: see main.rs
pub fn run(args: ReplayArgs, global: &GlobalArgs) -> ExitCode {
    let mut recording = match crate::record::open(&args.file) {
        Ok(recording) => recording,
        Err(err) => {
            super::err(&format!("kvtop replay: {err}"));
            return ExitCode::from(2);
        }
    };
    let header = recording.header().clone();
    let from = match args.from.as_deref() {
        None => None,
        Some(text) => match super::check::parse_instant(text, header.started) {
            Ok(at) => Some(at),
            Err(e) => {
                super::err(&format!("kvtop replay: --from {text:?}: {e}"));
                return ExitCode::from(2);
            }
        },
    };
    // The first record's time starts the clock (or --from).
    let Some(first) = recording.next() else {
        let why = recording
            .problem()
            .map_or_else(|| "nothing recorded".to_owned(), ToString::to_string);
        super::err(&format!("kvtop replay: {}: {why}", args.file.display()));
        return ExitCode::from(3);
    };
    let Session {
        config,
        theme,
        problems,
        runtime,
    } = match Session::start(load_config(global)) {
        Ok(session) => session,
        Err(code) => return code,
    };
    let clock = Arc::new(ReplayClock::start(
        from.unwrap_or_else(|| first.at()),
        args.speed,
    ));
    let settings = fleet_settings(&header);
    let interval = Duration::from_secs_f64(settings.interval.clamp(0.05, 3600.0));
    let source = format!(
        "replay of {} ({}, recorded {})",
        file_name(&args.file),
        header.source,
        kvtop_core::clock::utc(header.started)
    );
    let mut app = App::new(Fleet::new(settings), theme, source, interval, config.range);
    app.pace_rules_by_recording();
    app.utc_offset_secs = 0;
    let now = clock.now();
    for problem in problems {
        app.warn(problem, now);
    }
    app.load_user_rules(config.user_rules_path().as_deref(), now);
    let ahead = Ahead {
        path: args.file.clone(),
        checkpoints: Arc::new(Checkpoints::default()),
    };
    // Without a second reading (it opened a moment ago) jumps take every record, as before.
    if let Ok(reading) = crate::record::open(&args.file) {
        let _ = replay_ahead::start(
            reading,
            app.replay_state(),
            settings,
            interval,
            Arc::clone(&ahead.checkpoints),
        );
    }
    let checkpoints = Arc::clone(&ahead.checkpoints);
    let code = runtime.block_on(async move {
        let (tx, rx) = mpsc::channel(QUEUE);
        let feeder = {
            let clock = Arc::clone(&clock);
            std::thread::Builder::new()
                .name("kvtop-replay".into())
                .spawn(move || feed(first, recording, &clock, &tx, &ahead))
        };
        if let Err(err) = feeder {
            super::err(&format!("kvtop replay: cannot start reading: {err}"));
            return ExitCode::from(1);
        }
        console(&mut app, rx, clock, config.max_fps).await
    });
    checkpoints.close();
    code
}

/// Where a jump forward can start from instead of the records before it.
struct Ahead {
    /// The recording, to read on from a checkpoint.
    path: std::path::PathBuf,
    checkpoints: Arc<Checkpoints>,
}

impl Ahead {
    /// For a feeder holding record number `records` while the clock jumps forward: the last
    /// checkpoint before the jump's target that lies ahead, and the recording read on from it.
    fn jump(&self, clock: &ReplayClock, records: u64) -> Option<(Recording, Checkpoint)> {
        use crate::app::replay_control::ReplayControl;
        let Some(to) = clock.skipping_to() else {
            self.checkpoints.passed(records);
            return None;
        };
        let checkpoint = self.checkpoints.take_for(records, to)?;
        let recording = crate::record::resume(&self.path, &checkpoint.resume).ok()?;
        Some((recording, checkpoint))
    }
}

/// The console on a replay's clock until the user leaves: the exit code.
pub(crate) async fn console(
    app: &mut App,
    rx: mpsc::Receiver<Event>,
    clock: Arc<ReplayClock>,
    max_fps: u32,
) -> ExitCode {
    app.replay = Some(Arc::clone(&clock) as Arc<dyn crate::app::replay_control::ReplayControl>);
    {
        let mut terminal = match crate::terminal::enter() {
            Ok(t) => t,
            Err(err) => {
                super::err(&format!("kvtop: cannot take over the terminal: {err}"));
                return ExitCode::from(1);
            }
        };
        let mut workers = ReplayWorkers { clock };
        let result = run_with(
            app,
            &mut terminal,
            rx,
            max_fps,
            None,
            &mut workers,
            crate::ui::draw_into,
        )
        .await;
        drop(terminal);
        crate::terminal::restore();
        match result {
            Ok(ExitReason::HangUp) => ExitCode::from(129),
            Ok(_) => ExitCode::SUCCESS,
            // The terminal went away while drawing: a hangup, as if SIGHUP had come first.
            Err(err) if crate::terminal::is_gone(&err) => ExitCode::from(129),
            Err(err) => {
                super::err(&format!("kvtop: terminal error: {err}"));
                ExitCode::from(1)
            }
        }
    }
}

/// Hand the recording's records to the console as the clock reaches them; stop the clock at
/// the last one.
fn feed(
    first: Record,
    mut recording: Recording,
    clock: &ReplayClock,
    tx: &mpsc::Sender<Event>,
    ahead: &Ahead,
) {
    let mut last = first.at();
    let mut next = Some(first);
    let mut records = 0;
    while let Some(record) = next.take().or_else(|| recording.next()) {
        records += 1;
        // A jump over a checkpoint: on from there (this record is among those it holds).
        if let Some((resumed, checkpoint)) = ahead.jump(clock, records) {
            recording = resumed;
            records = checkpoint.records;
            last = checkpoint.at;
            // The clock reads the data's time while the jump catches up.
            clock.due(checkpoint.at);
            if tx
                .blocking_send(Event::ReplayRestore(checkpoint.state))
                .is_err()
            {
                return;
            }
            continue;
        }
        last = record.at();
        wait_until(clock, record.at());
        let Some(event) = event_of(record) else {
            continue;
        };
        if tx.blocking_send(event).is_err() {
            return;
        }
    }
    clock.stop_at(last.max(clock.now()));
    let problem = recording.problem().map(|p| format!("replay: {p}"));
    let _ = tx.blocking_send(Event::ReplayEnded(problem));
}

/// What the console is handed for a record (nothing for a gap, which only the headless
/// report counts).
pub(super) fn event_of(record: Record) -> Option<Event> {
    Some(match record {
        Record::Targets { targets, .. } => Event::ReplayTargets(targets),
        Record::Scrape(report) => Event::Scrape(report),
        Record::Source { report, .. } => Event::Source(report),
        Record::Logs { lines, .. } => Event::Logs(lines),
        Record::Kube { change, .. } => Event::ReplayKube(change),
        Record::Action { note, .. } => Event::ReplayAction(note),
        Record::Cycle { at } => Event::ReplayCycle(at),
        Record::Gap { .. } => return None,
    })
}

/// Sleep until the replay clock reaches `at` (at once when it already has, or a jump forward
/// passes it).
fn wait_until(clock: &ReplayClock, at: Ts) {
    while !clock.due(at) {
        let ahead = at - clock.now();
        if !ahead.is_finite() {
            return;
        }
        std::thread::sleep(Duration::from_secs_f64(
            (ahead / clock.speed).clamp(0.001, MAX_NAP),
        ));
    }
}

/// Longest wait between looks at the clock, seconds: a jump forward starts within it.
const MAX_NAP: f64 = 0.02;

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::replay_control::ReplayControl;
    use crate::app::{settle, step, update};
    use crate::diagnose::observe::Progress;
    use crate::diagnose::plan::DurationPlan;
    use kvtop_core::rules::{Finding, RuleSet};

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recording-v1-kv-thrash.kvr")
    }

    /// What a view shows of a finding: which, about what, in which state since when.
    type Shown = std::collections::BTreeSet<String>;

    fn shown<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Shown {
        findings
            .into_iter()
            .map(|f| {
                let fired = f.fired_at.map(f64::to_bits);
                format!(
                    "{} {} {:?} {} {fired:?} {:?} {}",
                    f.rule_id,
                    f.subject.label(),
                    f.state,
                    f.since.to_bits(),
                    f.severity,
                    f.frozen
                )
            })
            .collect()
    }

    /// The findings of every cycle of `check --replay`.
    #[derive(Default)]
    struct EachCycle(Vec<(Ts, Shown)>);

    impl Progress for EachCycle {
        fn planned(&mut self, _: f64, _: Option<&DurationPlan>, _: f64) {}
        fn evaluated(&mut self, at: Ts, findings: &[Finding]) {
            self.0.push((at, shown(findings)));
        }
    }

    /// How the console is handed the records.
    #[derive(Clone, Copy, Debug)]
    enum Handing {
        /// As the clock reaches each, settling after each, with the clock ticking every
        /// `tick` seconds of the recording in between.
        Played { tick: f64 },
        /// All at once (a jump), settled only at the end, no tick.
        Jumped,
        /// A jump from the middle checkpoint of those read ahead `every` seconds apart, then
        /// the records after it.
        FromCheckpoint { every: f64 },
        /// The feeder's own handing over (`feed`) of a jump over the whole recording, with
        /// checkpoints read ahead `every` seconds apart on its shelf.
        Fed { every: f64 },
    }

    /// What the feeder hands the console for a jump over the whole recording, with the
    /// checkpoints read ahead `every` seconds apart; and how many of them there were.
    fn fed_events(app: &App, every: f64) -> (Vec<Event>, usize) {
        let mut recording = crate::record::open(&fixture()).expect("the fixture opens");
        let mut ahead_app = new_console(&recording);
        ahead_app.restore(app.replay_state());
        let reading = crate::record::open(&fixture()).expect("the fixture opens");
        let checkpoints = replay_ahead::checkpoints_of(&mut ahead_app, reading, every);
        let made = checkpoints.len();
        let skipped = checkpoints.last().map_or(0, |c| c.records);
        let total = crate::record::open(&fixture())
            .expect("the fixture opens")
            .count();
        let ahead = Ahead {
            path: fixture(),
            checkpoints: Arc::new(Checkpoints::holding(checkpoints)),
        };
        let first = recording.next().expect("a first record");
        let clock = ReplayClock::start(first.at(), 1e-6);
        clock.skip_to(first.at() + 1e6);
        let (tx, mut rx) = mpsc::channel(QUEUE);
        feed(first, recording, &clock, &tx, &ahead);
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        // From the checkpoint on, the records after it only (and the end), none before it.
        let after = events
            .iter()
            .skip_while(|e| !matches!(e, Event::ReplayRestore(_)))
            .count();
        let skipped = usize::try_from(skipped).unwrap_or(usize::MAX);
        assert_eq!(
            after,
            1 + (total - skipped) + 1,
            "{total} records, {skipped} in the checkpoint"
        );
        (events, made)
    }

    fn new_console(recording: &Recording) -> App {
        let settings = fleet_settings(recording.header());
        let mut app = App::new(
            Fleet::new(settings),
            crate::theme::Theme::fallback(),
            "replay".into(),
            Duration::from_secs(1),
            Duration::from_secs(300),
        );
        app.pace_rules_by_recording();
        app
    }

    fn replayed_console(handing: Handing) -> App {
        let mut recording = crate::record::open(&fixture()).expect("the fixture opens");
        let mut app = new_console(&recording);
        if let Handing::Fed { every } = handing {
            let (events, made) = fed_events(&app, every);
            assert!(made >= 3, "{made} checkpoints");
            let restored = events
                .iter()
                .filter(|e| matches!(e, Event::ReplayRestore(_)))
                .count();
            assert_eq!(restored, 1, "the jump starts from the last checkpoint");
            // Each event at its own time where it has one, else at the one before.
            let mut now = 0.0;
            for event in events {
                now = match &event {
                    Event::Scrape(report) => report.at,
                    Event::ReplayCycle(at) => *at,
                    _ => now,
                };
                step(&mut app, event, now);
            }
            settle(&mut app, now);
            return app;
        }
        if let Handing::FromCheckpoint { every } = handing {
            // Read ahead as the replay does: from the console's state before any record.
            let mut ahead = new_console(&recording);
            ahead.restore(app.replay_state());
            let reading = crate::record::open(&fixture()).expect("the fixture opens");
            let mut checkpoints = replay_ahead::checkpoints_of(&mut ahead, reading, every);
            assert!(checkpoints.len() >= 3, "{} checkpoints", checkpoints.len());
            let checkpoint = checkpoints.swap_remove(checkpoints.len() / 2);
            app.restore(*checkpoint.state);
            recording = crate::record::resume(&fixture(), &checkpoint.resume).expect("resumes");
        }
        let mut clock = None::<Ts>;
        let mut last = 0.0;
        for record in recording.by_ref() {
            let at = record.at();
            last = at;
            let Some(event) = event_of(record) else {
                continue;
            };
            match handing {
                Handing::Played { tick } => {
                    let mut next = clock.unwrap_or(at);
                    while next < at {
                        update(&mut app, Event::Tick, next);
                        next += tick;
                    }
                    clock = Some(next);
                    update(&mut app, event, at);
                }
                Handing::Jumped | Handing::FromCheckpoint { .. } | Handing::Fed { .. } => {
                    step(&mut app, event, at);
                }
            }
        }
        assert_eq!(recording.problem(), None);
        settle(&mut app, last);
        app
    }

    #[test]
    fn a_replayed_console_finds_what_check_replay_finds_at_every_recorded_cycle() {
        let rules = RuleSet::builtin().expect("built-in rules");
        let mut recording = crate::record::open(&fixture()).expect("the fixture opens");
        let mut cycles = EachCycle::default();
        crate::diagnose::replay::replay(
            &mut recording,
            &rules,
            crate::diagnose::replay::Window::default(),
            &mut cycles,
        );
        assert!(
            cycles.0.iter().any(|(_, found)| !found.is_empty()),
            "the recording has findings to compare"
        );
        // Ticks between the records (a clock that is not the recorded console's) and a jump
        // over the whole recording find the same, at the same instants.
        let mut incidents = Vec::new();
        for handing in [
            Handing::Played { tick: 0.37 },
            Handing::Played { tick: 2.9 },
            Handing::Jumped,
            Handing::FromCheckpoint { every: 20.0 },
            Handing::Fed { every: 20.0 },
        ] {
            let app = replayed_console(handing);
            // What the views derive from the findings (incidents) is there once settled,
            // however many cycles came at once.
            let titles: Vec<String> = app
                .diag
                .live()
                .incidents()
                .iter()
                .map(|i| format!("{i:?}"))
                .collect();
            assert!(!titles.is_empty(), "{handing:?}: incidents at the end");
            incidents.push(titles);
            let timeline = app.diag.timeline();
            for (at, found) in &cycles.0 {
                assert_eq!(
                    &shown(&timeline.findings_at(*at)),
                    found,
                    "{handing:?} at {at}"
                );
            }
            let (last_at, last) = cycles.0.last().expect("cycles");
            assert_eq!(
                &shown(app.diag.live().findings()),
                last,
                "{handing:?}, the present ({last_at})"
            );
        }
        assert!(incidents.windows(2).all(|w| w[0] == w[1]), "{incidents:#?}");
    }

    #[test]
    fn a_paused_clock_stands_still_and_resumes_where_it_stopped() {
        let clock = ReplayClock::start(1000.0, 100.0);
        std::thread::sleep(Duration::from_millis(20));
        clock.set_paused(true);
        assert!(clock.paused());
        let stopped = clock.now();
        assert!(stopped >= 1002.0, "{stopped}");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(clock.now(), stopped);
        clock.set_paused(false);
        assert!(!clock.paused());
        std::thread::sleep(Duration::from_millis(20));
        let resumed = clock.now();
        // From where it stopped, not from where it would be had it run on.
        assert!(
            resumed >= stopped + 2.0 && resumed < stopped + 3.0 + 5.0,
            "{resumed}"
        );
        clock.stop_at(resumed);
        assert!(clock.now() <= resumed);
    }

    #[test]
    fn a_jump_forward_hands_over_what_lies_before_it_at_once_then_runs_on_from_there() {
        // A slow clock: without the jump, nothing past 1000 s would be due for hours.
        let clock = ReplayClock::start(1000.0, 0.001);
        assert!(!clock.due(1100.0));
        clock.skip_to(1600.0);
        assert_eq!(clock.skipping_to(), Some(1600.0));
        // While catching up the clock reads the data's time, not the target's.
        assert!(clock.now() < 1000.1, "{}", clock.now());
        for at in [1100.0, 1300.0, 1599.0] {
            assert!(clock.due(at));
            assert_eq!(clock.now(), at);
        }
        // The first record past the target ends the jump: the clock runs on from it.
        assert!(!clock.due(1601.0));
        assert!(
            clock.now() >= 1600.0 && clock.now() < 1600.1,
            "{}",
            clock.now()
        );
        // A jump backwards, or at the end of the recording, does nothing.
        clock.skip_to(1200.0);
        assert!(clock.now() >= 1600.0);
        clock.stop_at(1650.0);
        clock.skip_to(1700.0);
        assert!(clock.now() <= 1650.0);
    }

    #[test]
    fn a_jump_past_the_end_of_the_recording_stops_there() {
        let clock = ReplayClock::start(1000.0, 0.001);
        clock.skip_to(5000.0);
        assert!(clock.due(1200.0));
        // The feeder reached the last record (1200) and stops the clock there.
        clock.stop_at(1200.0);
        assert_eq!(clock.now(), 1200.0);
    }
}
