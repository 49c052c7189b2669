//! Configuration errors. Each names where the problem is (file, line:column when known, or the
//! command line) and which key, so the user can go straight to it.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::toml_location::LineCol;
use crate::theme::ThemeError;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A config file, with the position of the offending key or value when known.
    File { path: PathBuf, at: Option<LineCol> },
    /// A command-line flag.
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, at: Some(at) } => write!(f, "{}:{at}", path.display()),
            Origin::File { path, at: None } => write!(f, "{}", path.display()),
            Origin::CommandLine => f.write_str("command line"),
        }
    }
}

/// An error loading, checking or writing the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file named explicitly (argument or `KVTOP_CONFIG`) does not exist.
    #[error("{}: config file not found", .path.display())]
    NotFound { path: PathBuf },

    #[error("{}: cannot read: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },

    /// The file is not valid TOML. `context` shows the offending line with a caret.
    #[error("{}:{at}: invalid TOML: {message}{context}", .path.display())]
    Syntax {
        path: PathBuf,
        at: LineCol,
        message: String,
        context: String,
    },

    /// A setting is unknown, has the wrong type, or has an invalid value.
    #[error("{origin}: {key}: {message}")]
    Invalid {
        origin: Origin,
        /// Key path (`scrape.interval`, `targets[0].url`) or flag (`--interval`).
        key: String,
        message: String,
    },

    /// The configured theme cannot be loaded (reported by `check_file`).
    #[error("{origin}: {key}: {source}")]
    Theme {
        origin: Origin,
        key: String,
        source: Box<ThemeError>,
    },

    /// The rules file the config names (or the default one) does not load (reported by
    /// `check_file`): the message names the rules file, the line and the rule id.
    #[error("{}: rules.file: {message}", .config.display())]
    Rules { config: PathBuf, message: String },

    /// `init` found a file already there and was not told to overwrite it.
    #[error("{}: already exists (use --force to overwrite it)", .path.display())]
    AlreadyExists { path: PathBuf },

    #[error("{}: cannot write: {source}", .path.display())]
    Write { path: PathBuf, source: io::Error },

    /// No home directory, so no default config location.
    #[error(
        "cannot determine the config directory (no home directory); set KVTOP_CONFIG or pass a path"
    )]
    NoConfigDir,
}

impl ConfigError {
    /// The key path or flag the error is about, if it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } | ConfigError::Theme { key, .. } => Some(key),
            _ => None,
        }
    }
}
