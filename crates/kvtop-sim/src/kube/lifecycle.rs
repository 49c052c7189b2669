//! PURE. Where a simulated pod is in its life at a given time: scheduling, container creation,
//! start-up, ready; or, for an engine that cannot start, the kubelet's crash loop (run, fail,
//! back off 10 s, 20 s, 40 s … capped at 5 min, run again).

/// Durations of a pod's life, simulated seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timings {
    /// Pending with `ContainerCreating` (image present, volumes mounted).
    pub creating: f64,
    /// Container running, model loading, not ready yet.
    pub starting: f64,
    /// How long a crashing container runs before it fails.
    pub crash_after: f64,
    /// From a delete until the pod object is gone.
    pub terminating: f64,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            creating: 2.0,
            starting: 6.0,
            crash_after: 20.0,
            terminating: 2.0,
        }
    }
}

/// The kubelet's first crash back-off, seconds.
pub(crate) const BACKOFF_INITIAL: f64 = 10.0;
/// The kubelet's longest crash back-off, seconds.
pub(crate) const BACKOFF_MAX: f64 = 300.0;

/// Where a crash-looping container is at some time after its first start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrashLoop {
    /// Completed runs (each one failed): the container's `restartCount` once it runs again.
    pub failures: u32,
    /// True while a run is in progress; false while backing off.
    pub running: bool,
    /// Start of the current run, or of the last one while backing off.
    pub run_started: f64,
    /// Start of the run before `run_started`.
    pub earlier_run_started: Option<f64>,
    /// End of the last failed run.
    pub last_failed: Option<f64>,
    /// Start of the last failed run.
    pub last_failed_started: Option<f64>,
    /// The current back-off, while backing off.
    pub backoff: Option<f64>,
}

impl CrashLoop {
    /// The restart count the kubelet reports: every run after the first is a restart.
    pub fn restarts(&self) -> u32 {
        if self.running {
            self.failures
        } else {
            self.failures.saturating_sub(1)
        }
    }
}

/// The crash loop of a container first started at `first_start` that fails after `run` seconds,
/// as of `now`.
pub(crate) fn crash_loop(first_start: f64, run: f64, now: f64) -> CrashLoop {
    let run = run.max(0.1);
    let mut state = CrashLoop {
        failures: 0,
        running: true,
        run_started: first_start,
        earlier_run_started: None,
        last_failed: None,
        last_failed_started: None,
        backoff: None,
    };
    let mut backoff = BACKOFF_INITIAL;
    // Bounded: a day of simulated time is far fewer iterations than this.
    for _ in 0..10_000 {
        let fails_at = state.run_started + run;
        if now < fails_at {
            state.running = true;
            state.backoff = None;
            return state;
        }
        state.failures += 1;
        state.last_failed = Some(fails_at);
        state.last_failed_started = Some(state.run_started);
        let next = fails_at + backoff;
        if now < next {
            state.running = false;
            state.backoff = Some(backoff);
            return state;
        }
        state.earlier_run_started = Some(state.run_started);
        state.run_started = next;
        backoff = (backoff * 2.0).min(BACKOFF_MAX);
    }
    state
}

/// Where a pod that starts normally is, `age` seconds after it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// `ContainerCreating`.
    Creating,
    /// Running, not ready.
    Starting,
    Ready,
}

/// The stage at `age` seconds after creation.
pub(crate) fn stage(age: f64, t: &Timings) -> Stage {
    if age < t.creating {
        Stage::Creating
    } else if age < t.creating + t.starting {
        Stage::Starting
    } else {
        Stage::Ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_up_to_five_minutes() {
        // Runs of 20 s: [0,20) fail, back off 10 → [30,50), 20 → [70,90), 40 → [130,150),
        // 80 → [230,250), 160 → [410,430), 300 (capped from 320) → [730,750).
        let at = |now| crash_loop(0.0, 20.0, now);
        assert_eq!(at(5.0).failures, 0);
        assert!(at(5.0).running);
        assert_eq!(at(5.0).restarts(), 0);
        let s = at(25.0);
        assert!(!s.running);
        assert_eq!((s.failures, s.restarts(), s.backoff), (1, 0, Some(10.0)));
        let s = at(35.0);
        assert!(s.running);
        assert_eq!((s.restarts(), s.run_started), (1, 30.0));
        let s = at(300.0);
        assert!(!s.running);
        assert_eq!((s.failures, s.restarts(), s.backoff), (5, 4, Some(160.0)));
        assert_eq!(s.last_failed, Some(250.0));
        assert_eq!(s.last_failed_started, Some(230.0));
        assert_eq!((s.run_started, s.earlier_run_started), (230.0, Some(130.0)));
        let s = at(740.0);
        assert!(s.running);
        assert_eq!(s.run_started, 730.0);
        assert_eq!(s.restarts(), 6);
        assert_eq!(at(760.0).backoff, Some(300.0));
    }

    #[test]
    fn stages_follow_the_timings() {
        let t = Timings::default();
        assert_eq!(stage(0.0, &t), Stage::Creating);
        assert_eq!(stage(t.creating, &t), Stage::Starting);
        assert_eq!(stage(t.creating + t.starting, &t), Stage::Ready);
    }
}
