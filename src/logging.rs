//! `tracing` to a file in the state directory: the terminal belongs to the UI.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// Where log lines go.
pub enum LogSink<'a> {
    /// Append to this file (created with its directory).
    File(&'a Path),
    /// Standard error, for commands without a full-screen UI.
    Stderr,
}

/// Install the global subscriber. Returns the log file path when logging to a file.
/// A file that cannot be opened is not fatal: logging is then off and the reason returned.
pub fn init(sink: LogSink<'_>, level: &str) -> Result<Option<PathBuf>, String> {
    let filter = EnvFilter::try_from_env("KVTOP_LOG")
        .or_else(|_| EnvFilter::try_new(level))
        .map_err(|e| format!("log level {level:?}: {e}"))?;
    match sink {
        LogSink::Stderr => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .with_target(false)
                .try_init();
            Ok(None)
        }
        LogSink::File(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create log directory {}: {e}", dir.display()))?;
            }
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(Mutex::new(file))
                .with_ansi(false)
                .try_init();
            Ok(Some(path.to_path_buf()))
        }
    }
}
