//! Terminal input, read on a thread of its own and handed to the event loop through a channel.
//!
//! crossterm's `EventStream` parks a helper thread in `poll` while that thread holds crossterm's
//! event-reader lock, and takes the same lock each time the stream is polled. The event loop
//! polls its input on every wake-up (each scrape report, each clock tick), so every wake-up
//! spun on that lock (about seven `sched_yield`s) before giving up: with two engines, 42
//! system calls a second for no key at all. Here one thread owns the reader and sleeps in
//! `read` until the terminal sends something; between keys the event loop pays nothing.

use std::io;

use crossterm::event::{Event, read};
use tokio::sync::mpsc;

/// Keys and resizes queued for the event loop before the reader waits for it to catch up:
/// what is typed meanwhile stays in the terminal's own buffer.
const QUEUED_EVENTS: usize = 256;

/// Stack of the reader thread: crossterm's parser is shallow, and a small stack keeps the
/// thread's reservation small.
const READER_STACK: usize = 256 * 1024;

/// The terminal's events, as they arrive.
pub(crate) struct TerminalInput {
    events: mpsc::Receiver<io::Result<Event>>,
}

impl TerminalInput {
    /// Start reading. The thread ends after handing over an error (the terminal is gone) or
    /// when the receiver is dropped and the next event arrives; while the console is up it is
    /// the only reader of the terminal.
    pub(crate) fn start() -> io::Result<Self> {
        let (sender, events) = mpsc::channel(QUEUED_EVENTS);
        std::thread::Builder::new()
            .name("kvtop-input".into())
            .stack_size(READER_STACK)
            .spawn(move || {
                loop {
                    let event = read();
                    let failed = event.is_err();
                    if sender.blocking_send(event).is_err() || failed {
                        break;
                    }
                }
            })?;
        Ok(TerminalInput { events })
    }

    /// The next event; `None` once the reader has stopped.
    pub(crate) async fn next(&mut self) -> Option<io::Result<Event>> {
        self.events.recv().await
    }
}
