//! Entering and leaving the full-screen terminal, on every exit path.
//!
//! `restore()` is idempotent and ignores errors: it runs from the normal exit path, from the
//! panic hook and after SIGTERM/SIGHUP, when the terminal may already be gone.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::{cursor, event, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;

use crate::screen::Screen;

/// The terminal the console draws on (see `screen.rs`). Output is buffered so a frame leaves in
/// one write.
pub(crate) type ConsoleTerminal = Screen<CrosstermBackend<BufWriter<Stdout>>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// A terminal that cannot draw the console: `TERM=dumb` (Emacs shells, some CI logs) has no
/// cursor addressing or alternate screen, so the console would scribble over it.
fn unable(term: Option<&str>) -> Option<io::Error> {
    (term == Some("dumb")).then(|| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "TERM=dumb cannot show the console; run it in a full terminal, or use `kvtop check` for a plain report",
        )
    })
}

/// Switch to raw mode and the alternate screen, with the cursor hidden.
pub(crate) fn enter() -> io::Result<ConsoleTerminal> {
    if let Some(error) = unable(std::env::var("TERM").ok().as_deref()) {
        return Err(error);
    }
    install_panic_hook();
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut stdout = io::stdout();
    // Bracketed paste: a paste arrives as one text event, never as keys that could quit the
    // console or confirm a plan.
    if let Err(err) = execute!(
        stdout,
        terminal::EnterAlternateScreen,
        cursor::Hide,
        event::EnableBracketedPaste
    ) {
        restore();
        return Err(err);
    }
    let backend = CrosstermBackend::new(BufWriter::with_capacity(64 * 1024, io::stdout()));
    // The screen's size is asked once here and then follows the resize events (`fit`):
    // crossterm opens, queries and closes /dev/tty each time it is asked, which ratatui's
    // full-screen viewport would do before every frame.
    let opened = terminal::size()
        .map(|(width, height)| Screen::new(backend, Rect::new(0, 0, width, height)));
    match opened {
        Ok(t) => Ok(t),
        Err(err) => {
            restore();
            Err(err)
        }
    }
}

/// Follow the terminal to its new size (a resize event): the next frame is drawn whole.
pub(crate) fn fit(terminal: &mut ConsoleTerminal, width: u16, height: u16) -> io::Result<()> {
    terminal.resize(Rect::new(0, 0, width, height))
}

/// Whether a terminal I/O error means the terminal itself is gone (a closed pty, a dropped SSH
/// session): a hangup, whichever of the write error and SIGHUP the console saw first.
pub(crate) fn is_gone(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::BrokenPipe
        || matches!(err.raw_os_error(), Some(libc::EIO | libc::ENXIO))
}

/// Let go of the console's terminal. When the terminal is gone (a dropped SSH session)
/// showing the cursor fails, and what the writer still buffers has nowhere to go: the terminal
/// is then forgotten rather than flushed on drop, since there is nothing left to restore on it.
pub(crate) fn leave(mut terminal: ConsoleTerminal) {
    if terminal.show_cursor().is_err() {
        std::mem::forget(terminal);
    }
}

/// Give the terminal back: leave the alternate screen, show the cursor, leave raw mode.
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut stdout = io::stdout();
    let _ = execute!(
        stdout,
        event::DisableBracketedPaste,
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
    let _ = stdout.flush();
    let _ = terminal::disable_raw_mode();
}

/// Restore the terminal before the default panic message is printed, so it is readable.
fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        tracing::error!(%info, "panic");
        previous(info);
    }));
}
