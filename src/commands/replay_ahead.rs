//! Reading a replay ahead, so a jump forward costs minutes of records, not the hour before it.
//!
//! As soon as a replay opens, a thread of its own reads the recording to its end and builds
//! from it what the console builds (the fleet, the rules state, what Kubernetes told), handing
//! the records over as a jump does. Every few minutes of the recording it leaves a checkpoint:
//! a copy of that state and the point of the file to read on from. A jump forward then starts
//! from the last checkpoint before its target (the feeder reads on from there) instead of
//! taking every record in between. What a checkpoint holds is what the console would hold had
//! it taken those records (`tests`: the same findings at every cycle either way).
//!
//! The copies hold the fleet's histories, so the checkpoints waiting ahead of the replay are
//! bounded by the fleet's size (twelve for eight engines, one for 96, none beyond); the reading
//! pauses while the shelf is full and goes on as the replay passes them.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::app::replay_control::ReplayState;
use crate::app::state::App;
use crate::record::{Recording, ResumePoint};
use kvtop_core::fleet::{Fleet, FleetSettings, Ts};

/// Seconds of the recording between checkpoints: the most a jump takes records for.
const EVERY: f64 = 300.0;

/// Engines times checkpoints held at once: twelve (an hour ahead) for a fleet of eight.
const ENGINE_CHECKPOINTS: usize = 96;

/// Most checkpoints held at once, whatever the fleet.
const MOST: usize = 12;

/// What the records built up to a point of the recording, and where to read on from it.
#[derive(Debug)]
pub(crate) struct Checkpoint {
    /// Records before the point.
    pub(crate) records: u64,
    /// The newest record's time before the point.
    pub(crate) at: Ts,
    pub(crate) resume: ResumePoint,
    pub(crate) state: Box<ReplayState>,
}

/// The checkpoints ahead of the replay, between the thread that makes them and the feeder
/// that uses them.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    shelf: Mutex<Shelf>,
    room: Condvar,
}

#[derive(Debug, Default)]
struct Shelf {
    ahead: VecDeque<Checkpoint>,
    closed: bool,
}

impl Checkpoints {
    fn shelf(&self) -> MutexGuard<'_, Shelf> {
        self.shelf
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Shelve `checkpoint`, waiting while `capacity` are shelved; false once closed.
    fn put(&self, checkpoint: Checkpoint, capacity: usize) -> bool {
        let mut shelf = self.shelf();
        while shelf.ahead.len() >= capacity && !shelf.closed {
            shelf = self
                .room
                .wait(shelf)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if shelf.closed {
            return false;
        }
        shelf.ahead.push_back(checkpoint);
        true
    }

    /// The feeder has taken `records` records: checkpoints within them are of no more use.
    pub(crate) fn passed(&self, records: u64) {
        let mut shelf = self.shelf();
        let before = shelf.ahead.len();
        shelf.ahead.retain(|c| c.records > records);
        if shelf.ahead.len() < before {
            self.room.notify_all();
        }
    }

    /// For a feeder holding record number `records` (counted from 1) and jumping to `to`: the
    /// last checkpoint at or before `to` that holds that record, the ones before it dropped.
    pub(crate) fn take_for(&self, records: u64, to: Ts) -> Option<Checkpoint> {
        let mut shelf = self.shelf();
        shelf.ahead.retain(|c| c.records >= records);
        let last = shelf.ahead.iter().rposition(|c| c.at <= to)?;
        let taken = shelf.ahead.drain(..=last).next_back();
        self.room.notify_all();
        taken
    }

    /// A shelf holding `checkpoints`, in order.
    #[cfg(test)]
    pub(crate) fn holding(checkpoints: Vec<Checkpoint>) -> Checkpoints {
        let held = Checkpoints::default();
        held.shelf().ahead.extend(checkpoints);
        held
    }

    /// No more checkpoints are wanted (the replay is over): the reading ahead stops.
    pub(crate) fn close(&self) {
        self.shelf().closed = true;
        self.room.notify_all();
    }
}

/// Read `recording` (a reading of the file of its own) ahead on a thread of its own, leaving
/// checkpoints in `checkpoints`. `base` is the console's state before any record (its rules).
pub(crate) fn start(
    mut recording: Recording,
    base: ReplayState,
    settings: FleetSettings,
    interval: Duration,
    checkpoints: Arc<Checkpoints>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    recording.keep_resume_points();
    std::thread::Builder::new()
        .name("kvtop-replay-ahead".into())
        .spawn(move || {
            let mut app = App::new(
                Fleet::new(settings),
                crate::theme::Theme::fallback(),
                String::new(),
                interval,
                interval,
            );
            app.restore(base);
            read_ahead(&mut app, &mut recording, &checkpoints, EVERY, capacity);
        })
}

/// How many checkpoints may wait ahead for a fleet of `engines`: none for a fleet larger than
/// [`ENGINE_CHECKPOINTS`], whose one copy would cost as much as the console (its jumps take
/// every record, as before).
fn capacity(engines: usize) -> usize {
    (ENGINE_CHECKPOINTS / engines.max(1)).min(MOST)
}

/// Take every record of `recording` into `app` as a jump does, shelving a checkpoint at the
/// first point it can be resumed from once `every` seconds of the recording passed since the
/// last (or the start), while `capacity(engines)` are not already waiting.
fn read_ahead(
    app: &mut App,
    recording: &mut Recording,
    checkpoints: &Checkpoints,
    every: f64,
    capacity: fn(usize) -> usize,
) {
    let mut last_at = f64::NEG_INFINITY;
    let mut since = None::<Ts>;
    while let Some(record) = recording.next() {
        let at = record.at();
        last_at = last_at.max(at);
        let since = since.get_or_insert(at);
        if let Some(event) = super::replay::event_of(record) {
            crate::app::step(app, event, at);
        }
        if last_at - *since < every {
            continue;
        }
        let Some(resume) = recording.resume_point() else {
            continue;
        };
        *since = last_at;
        let capacity = capacity(app.fleet.engines().len());
        if capacity == 0 {
            return;
        }
        let checkpoint = Checkpoint {
            records: resume.records(),
            at: last_at,
            resume,
            state: Box::new(app.replay_state()),
        };
        if !checkpoints.put(checkpoint, capacity) {
            return;
        }
    }
}

#[cfg(test)]
pub(crate) use tests::checkpoints_of;

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint after `records` records, the newest at `at` (its state a fresh console's).
    fn checkpoint(records: u64, at: Ts) -> Checkpoint {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recording-v1-kv-thrash.kvr");
        let reading = crate::record::open(&path).expect("the fixture opens");
        let app = App::new(
            Fleet::new(crate::record::fleet_settings(reading.header())),
            crate::theme::Theme::fallback(),
            String::new(),
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        Checkpoint {
            records,
            at,
            resume: reading.resume_point().expect("at the start"),
            state: Box::new(app.replay_state()),
        }
    }

    fn shelved(checkpoints: &Checkpoints) -> Vec<u64> {
        checkpoints
            .shelf()
            .ahead
            .iter()
            .map(|c| c.records)
            .collect()
    }

    #[test]
    fn the_checkpoints_held_ahead_shrink_with_the_fleet_and_stop_past_its_bound() {
        assert_eq!(capacity(1), MOST);
        assert_eq!(capacity(8), 12);
        assert_eq!(capacity(32), 3);
        assert_eq!(capacity(96), 1);
        assert_eq!(capacity(97), 0);
        assert_eq!(capacity(1000), 0);
    }

    #[test]
    fn a_jump_takes_the_last_checkpoint_before_its_target_ahead_of_the_feeder() {
        let checkpoints = Checkpoints::default();
        for (records, at) in [(100, 1000.0), (200, 1300.0), (300, 1600.0), (400, 1900.0)] {
            assert!(checkpoints.put(checkpoint(records, at), 10));
        }
        // Before the first checkpoint's time: none to start from.
        assert!(checkpoints.take_for(50, 999.0).is_none());
        // The last at or before the target; those before it go.
        let taken = checkpoints.take_for(50, 1650.0).map(|c| c.records);
        assert_eq!(taken, Some(300));
        assert_eq!(shelved(&checkpoints), [400]);
        // One the feeder is already past is of no use.
        assert!(checkpoints.take_for(401, 5000.0).is_none());
        assert!(shelved(&checkpoints).is_empty());
    }

    #[test]
    fn playing_past_checkpoints_drops_them_and_makes_room_for_the_reading_ahead() {
        let checkpoints = Arc::new(Checkpoints::default());
        assert!(checkpoints.put(checkpoint(100, 1000.0), 1));
        // Full: the next waits until the feeder passes the first.
        let maker = {
            let checkpoints = Arc::clone(&checkpoints);
            std::thread::spawn(move || checkpoints.put(checkpoint(200, 1300.0), 1))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(shelved(&checkpoints), [100]);
        checkpoints.passed(99);
        assert_eq!(shelved(&checkpoints), [100], "not passed yet");
        checkpoints.passed(100);
        assert_eq!(maker.join().ok(), Some(true));
        assert_eq!(shelved(&checkpoints), [200]);
        // Closed: the reading ahead stops instead of waiting.
        checkpoints.close();
        assert!(!checkpoints.put(checkpoint(300, 1600.0), 1));
    }

    /// Every checkpoint of `recording` read ahead into `app`, `every` seconds apart.
    pub(crate) fn checkpoints_of(
        app: &mut App,
        mut recording: Recording,
        every: f64,
    ) -> Vec<Checkpoint> {
        recording.keep_resume_points();
        let checkpoints = Checkpoints::default();
        read_ahead(app, &mut recording, &checkpoints, every, |_| usize::MAX);
        checkpoints.shelf().ahead.drain(..).collect()
    }
}
