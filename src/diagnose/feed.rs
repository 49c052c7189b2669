//! The in-process log feed: without Kubernetes, the simulator's engines' logs reach the rules
//! by polling the simulator itself. [`SimLogPoller`] copies new lines into a [`TargetLogs`]
//! on demand (`kvtop check` calls it each cycle); [`SimLogFeed`] runs one in a task for the
//! console and sends what it finds to the event loop as [`FreshLogLines`], like any worker.
//!
//! Line times are the simulator's clock. `kvtop demo` runs it at wall speed and `kvtop check`
//! evaluates on the simulator's clock, so they line up with the `now` of the rules cycle.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::sources::Outbox;
use kvtop_core::fleet::{Fleet, TargetId};
use kvtop_sim::{SimControl, SimEndpoint};

/// Log lines written since the last poll, per target: `(written at, text)`.
#[derive(Debug, Clone, PartialEq)]
pub struct FreshLogLines(pub Vec<(TargetId, Vec<(f64, String)>)>);

/// Copies new log lines of simulated engines into a [`TargetLogs`].
#[derive(Debug, Clone)]
pub struct SimLogPoller {
    control: SimControl,
    /// (engine index in the simulator, fleet target, cursor in the engine's log).
    streams: Vec<(usize, TargetId, u64)>,
}

impl SimLogPoller {
    /// Follow engine `index`'s log for fleet target `target`, for each pair.
    pub fn new(control: SimControl, targets: impl IntoIterator<Item = (usize, TargetId)>) -> Self {
        SimLogPoller {
            control,
            streams: targets.into_iter().map(|(i, t)| (i, t, 0)).collect(),
        }
    }

    /// Follow every simulated engine that is a target of `fleet` (matched by URL): what the
    /// demo's console needs, whatever order it added its targets in.
    pub fn matching(control: SimControl, engines: &[SimEndpoint], fleet: &Fleet) -> Self {
        let streams = engines.iter().enumerate().filter_map(|(index, endpoint)| {
            fleet
                .targets()
                .iter()
                .find(|t| t.spec.url == endpoint.url)
                .map(|t| (index, t.id))
        });
        Self::new(control, streams)
    }

    /// The lines written since the last call, per target (every followed target, possibly
    /// with no lines).
    pub fn collect(&mut self) -> Vec<(TargetId, Vec<(f64, String)>)> {
        self.streams
            .iter_mut()
            .map(|(index, target, cursor)| {
                let (lines, next) = self.control.log_since(*index, *cursor);
                *cursor = next;
                (*target, lines.into_iter().map(|l| (l.at, l.text)).collect())
            })
            .collect()
    }
}

/// A task polling a [`SimLogPoller`] every interval and sending the new lines to the console
/// as [`FreshLogLines`]. Dropping the feed stops the task.
#[derive(Debug)]
pub struct SimLogFeed {
    task: JoinHandle<()>,
}

impl SimLogFeed {
    /// Start polling every `interval` (at least 100 ms).
    pub fn start(
        mut poller: SimLogPoller,
        interval: Duration,
        events: Outbox<FreshLogLines>,
    ) -> Self {
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(100)));
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let fresh = poller.collect();
                if fresh.is_empty() {
                    continue;
                }
                if !events.send(FreshLogLines(fresh)).await {
                    break; // the console is gone
                }
            }
        });
        SimLogFeed { task }
    }
}

impl Drop for SimLogFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}
