//! What each command line does. `main` parses the command line and calls one of these.

pub mod action_cmd;
pub mod check;
pub mod config_cmd;
pub mod console;
pub mod console_actions;
pub mod console_cmd;
#[cfg(feature = "demo")]
pub mod demo;
pub mod doctor;
pub mod file_limit;
pub mod past_window;
pub mod replay;
mod replay_ahead;
pub mod replay_prometheus;
pub mod rules_cmd;
pub mod setup;
pub mod shell_docs;
#[cfg(feature = "demo")]
pub mod sim;
mod simulated;
pub mod snapshot_files;
mod stop_signals;

/// Longest error or progress message printed (a config error quoting a 200 KB line is cut);
/// reports on stdout are not cut, their outside fields are bounded one by one.
const MAX_MESSAGE_CHARS: usize = 8 * 1024;

/// Print `text` on stdout, with every character a terminal would act on made visible (line
/// breaks kept): the one way command output reaches the terminal, since most of it quotes
/// outside text (labels, API errors, config snippets).
pub(crate) fn out(text: &str) {
    use std::io::Write as _;
    let safe = kvtop_core::safe_text::block(text, usize::MAX);
    // A closed stdout (a pipe to `head`) is not an error worth a panic.
    let _ = writeln!(std::io::stdout().lock(), "{safe}");
}

/// [`out`] without the final line break (for text that carries its own).
pub(crate) fn out_raw(text: &str) {
    use std::io::Write as _;
    let safe = kvtop_core::safe_text::block(text, usize::MAX);
    let _ = write!(std::io::stdout().lock(), "{safe}");
}

/// [`out`] on stderr, for errors and progress.
pub(crate) fn err(text: &str) {
    use std::io::Write as _;
    let safe = kvtop_core::safe_text::block(text, MAX_MESSAGE_CHARS);
    let _ = writeln!(std::io::stderr().lock(), "{safe}");
}
