//! The event loop: input, scrape results, clock ticks and signals in; frames out.
//!
//! It owns the [`App`] and is the only place that calls `update` and `draw`. A frame is drawn
//! only when the state is dirty, and at most `max_fps` times a second, so an idle console
//! writes nothing and a busy one stays within a small byte budget. A key is the exception: the
//! frame that answers it is drawn at once, so the frame cap never delays the operator.
//!
//! Keys and ticks go through `update` (step and settle). Worker events arrive far more often
//! than frames (a thousand engines report a thousand times a second), so they are only
//! stepped, and the state is settled once before the next frame, or before the next key so
//! that it acts on what is current: the rows are sorted once per frame, not once per scrape.

use std::io;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyEventKind};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};

use super::state::App;
use super::update::{settle, step, update};
use super::{Command, Event};
use crate::terminal::ConsoleTerminal;
use crate::terminal_input::TerminalInput;
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{QuantileWindow, Ts};

/// Most events folded into the state before a frame is considered.
const MAX_EVENTS_PER_BATCH: usize = 4096;

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// The user quit (q, Ctrl-C).
    User,
    /// SIGTERM or SIGINT.
    Terminated,
    /// SIGHUP: the SSH session or the terminal went away.
    HangUp,
    /// The input stream ended or failed.
    InputClosed,
}

/// Carries out what the state machine asks of the workers (start or stop a scrape, follow a
/// pod's log). `Quit` never reaches it.
pub trait Executor {
    fn execute(&mut self, command: Command);

    /// See an event before the state machine folds it in at `now` (a recording keeps what
    /// the console ingests).
    fn observe(&mut self, _event: &Event, _now: Ts) {}

    /// See the state once it settled at `now` (a recording keeps the targets and the
    /// instants the rules ran).
    fn settled(&mut self, _app: &App, _now: Ts) {}

    /// The console's clock: the wall clock, or a replay's (see `commands::replay`).
    fn now(&self) -> Ts {
        unix_now()
    }

    /// Wall time between two clock ticks (one second of the console's clock).
    fn tick_every(&self) -> Duration {
        Duration::from_secs(1)
    }
}

/// No workers to command.
impl Executor for () {
    fn execute(&mut self, _: Command) {}
}

/// How a frame is drawn: the console's views (`ui::draw_into`), handed in by the caller so the
/// state machine does not depend on the views that read it.
pub(crate) type Draw = fn(&mut ratatui::buffer::Buffer, ratatui::layout::Rect, &App, Ts);

/// Run the console until the user quits or a signal arrives: frames drawn with `draw`, every
/// command other than `Quit` handed to `workers`, and the quantile window the operator picks
/// (`w`) published on `window` for workers that compute windowed signals themselves (a
/// Prometheus source).
pub(crate) async fn run_with(
    app: &mut App,
    terminal: &mut ConsoleTerminal,
    mut events: mpsc::Receiver<Event>,
    max_fps: u32,
    window: Option<watch::Sender<QuantileWindow>>,
    workers: &mut dyn Executor,
    draw: Draw,
) -> io::Result<ExitReason> {
    let frame_interval = Duration::from_secs_f64(1.0 / f64::from(max_fps.clamp(1, 60)));
    let mut input = TerminalInput::start()?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;

    let mut ticker = second_ticker(workers.now(), workers.tick_every());
    settle_with(app, workers);
    render(app, terminal, draw, workers.now())?;
    let mut last_frame = Instant::now();
    let mut events_open = true;
    // Worker events were stepped since the state was last settled.
    let mut unsettled = false;
    // Something other than new samples changed since the last frame (see `Pending`).
    let mut pending = Pending::default();

    loop {
        let mut key_pressed = false;
        let frame_due = last_frame + frame_interval;
        let exit = tokio::select! {
            biased;
            _ = sigterm.recv() => Some(ExitReason::Terminated),
            _ = sigint.recv() => Some(ExitReason::Terminated),
            _ = sighup.recv() => Some(ExitReason::HangUp),
            term = input.next() => {
                key_pressed = matches!(term, Some(Ok(TermEvent::Key(_))));
                if let Some(Ok(TermEvent::Resize(width, height))) = term {
                    crate::terminal::fit(terminal, width, height)?;
                }
                pending.more_than_samples = true;
                on_input(app, term, &mut unsettled, workers)
            }
            first = events.recv(), if events_open => match first {
                Some(ev) => {
                    unsettled = true;
                    fold_batch(app, ev, &mut events, workers, &mut pending)
                        .then_some(ExitReason::User)
                }
                // Every worker is gone; keep the console up for the user.
                None => {
                    events_open = false;
                    None
                }
            },
            _ = ticker.tick() => {
                unsettled = false;
                pending.more_than_samples = true;
                apply(app, Event::Tick, workers).then_some(ExitReason::User)
            }
            _ = tokio::time::sleep_until(frame_due), if app.dirty && pending.more_than_samples => None,
        };
        if let Some(reason) = exit {
            return Ok(reason);
        }
        if let Some(window) = &window {
            publish_window(window, app);
        }
        let drawable = app.dirty && pending.more_than_samples;
        if should_draw(drawable, key_pressed, last_frame.elapsed(), frame_interval) {
            // Settles the batches folded since the last frame, and rules an earlier settle
            // deferred.
            if std::mem::take(&mut unsettled) || app.diag.has_news() {
                settle_with(app, workers);
            }
            render(app, terminal, draw, workers.now())?;
            last_frame = Instant::now();
            // A rule evaluation deferred by render is drawn at the next frame, as before.
            pending.more_than_samples = app.dirty;
        }
    }
}

/// Why the state is dirty. New samples alone wait for the next clock tick (one a second): an
/// engine's values and ages are shown to the second, and every scrape of every engine landing
/// at its own moment would otherwise draw up to `max_fps` frames a second of one changed age
/// each (8 engines at 1 s: ten frames a second, most of the console's CPU). Keys, resizes,
/// ticks and every other worker event (pods, actions, problems) draw as before.
#[derive(Debug, Default)]
struct Pending {
    more_than_samples: bool,
}

/// Tell the workers that compute windowed signals themselves the window picked with `w`.
fn publish_window(window: &watch::Sender<QuantileWindow>, app: &App) {
    let current = app.fleet.window();
    window.send_if_modified(|published| {
        let changed = *published != current;
        *published = current;
        changed
    });
}

/// Whether to draw now: only a dirty state is drawn; a key's answer at once, anything else
/// once `frame_interval` has passed since the last frame.
fn should_draw(
    dirty: bool,
    key_pressed: bool,
    since_last_frame: Duration,
    frame_interval: Duration,
) -> bool {
    dirty && (key_pressed || since_last_frame >= frame_interval)
}

/// Clock ticks just after each wall-clock second, so the header clock changes once per tick.
fn second_ticker(now: Ts, every: Duration) -> tokio::time::Interval {
    let to_next_second = every.mul_f64(1.0 - now.fract()) + Duration::from_millis(5);
    let mut ticker = tokio::time::interval_at(Instant::now() + to_next_second, every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    ticker
}

/// What the terminal sent. Worker events folded since the last frame are settled first, so
/// that a key acts on the current rows.
fn on_input(
    app: &mut App,
    term: Option<io::Result<TermEvent>>,
    unsettled: &mut bool,
    workers: &mut dyn Executor,
) -> Option<ExitReason> {
    match term {
        Some(Ok(ev)) => {
            if std::mem::take(unsettled) {
                settle_with(app, workers);
            }
            handle_terminal_event(app, ev, workers)
        }
        Some(Err(err)) => {
            tracing::warn!(%err, "terminal input failed");
            Some(ExitReason::InputClosed)
        }
        None => Some(ExitReason::InputClosed),
    }
}

fn handle_terminal_event(
    app: &mut App,
    ev: TermEvent,
    workers: &mut dyn Executor,
) -> Option<ExitReason> {
    let event = match ev {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => Event::Key(key),
        TermEvent::Resize(width, height) => Event::Resize { width, height },
        TermEvent::Paste(text) => Event::Paste(text),
        // Focus changes do not change what is shown.
        _ => return None,
    };
    apply(app, event, workers).then_some(ExitReason::User)
}

/// Apply one event and settle (`update`), handing the commands to the workers; true when the
/// state machine asks to quit.
fn apply(app: &mut App, event: Event, workers: &mut dyn Executor) -> bool {
    let now = workers.now();
    workers.observe(&event, now);
    let quit = run_commands(update(app, event, now), workers);
    workers.settled(app, now);
    quit
}

/// Settle the state and hand its commands to the workers, which then see it settled.
fn settle_with(app: &mut App, workers: &mut dyn Executor) {
    let now = workers.now();
    run_commands(settle(app, now), workers);
    workers.settled(app, now);
}

/// Step `first` and everything already queued behind it (up to [`MAX_EVENTS_PER_BATCH`]), to
/// settle and draw once; true when the state machine asks to quit.
fn fold_batch(
    app: &mut App,
    first: Event,
    events: &mut mpsc::Receiver<Event>,
    workers: &mut dyn Executor,
    pending: &mut Pending,
) -> bool {
    let mut quit = fold(app, first, workers, pending);
    let mut folded = 1;
    while !quit && folded < MAX_EVENTS_PER_BATCH {
        match events.try_recv() {
            Ok(ev) => quit = fold(app, ev, workers, pending),
            Err(_) => break,
        }
        folded += 1;
    }
    quit
}

/// Step one worker event without settling (see the module docs); true when the state machine
/// asks to quit.
fn fold(app: &mut App, event: Event, workers: &mut dyn Executor, pending: &mut Pending) -> bool {
    if !matches!(event, Event::Scrape(_) | Event::Source(_) | Event::Logs(_)) {
        pending.more_than_samples = true;
    }
    let now = workers.now();
    workers.observe(&event, now);
    run_commands(step(app, event, now), workers)
}

/// Hand commands to the workers; true when one of them is `Quit`.
fn run_commands(commands: Vec<Command>, workers: &mut dyn Executor) -> bool {
    let mut quit = false;
    for command in commands {
        match command {
            Command::Quit => quit = true,
            other => workers.execute(other),
        }
    }
    quit
}

fn render(app: &mut App, terminal: &mut ConsoleTerminal, draw: Draw, now: Ts) -> io::Result<()> {
    terminal.draw(|buffer, area| draw(buffer, area, app, now))?;
    if let Some(text) = app.copy_out.take() {
        use std::io::Write;
        let backend = terminal.backend_mut();
        backend.write_all(crate::clipboard::sequence(&text).as_bytes())?;
        backend.flush()?;
    }
    // An evaluation deferred by the rules' spacing needs one more frame once it has run.
    app.dirty = app.diag.has_news();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_answered_without_waiting_for_the_frame_cap() {
        let cap = Duration::from_millis(100);
        let just_drawn = Duration::from_millis(3);
        // Data arriving right after a frame waits for the cap; a key does not.
        assert!(!should_draw(true, false, just_drawn, cap));
        assert!(should_draw(true, true, just_drawn, cap));
        assert!(should_draw(true, false, cap, cap));
        // Nothing changed: nothing is drawn, key or not.
        assert!(!should_draw(false, true, just_drawn, cap));
        assert!(!should_draw(false, false, cap, cap));
    }
}
