//! Theme loading errors.

use std::io;
use std::path::PathBuf;

use kvtop_core::toml_location::LineCol;

/// An error loading a theme. File errors name the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("unknown theme {name:?}; available: {}", .available.join(", "))]
    Unknown {
        name: String,
        available: Vec<String>,
    },

    #[error("{name:?} is not a theme name (letters, digits, '-' and '_' only)")]
    InvalidName { name: String },

    #[error("{}: cannot read: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },

    /// The file is not valid TOML; `context` shows the line with a caret.
    #[error("{file}:{at}: invalid TOML: {message}{context}")]
    Syntax {
        file: String,
        at: LineCol,
        message: String,
        context: String,
    },

    /// Unknown key, bad colour or modifier, wrong type.
    #[error("{file}{}: {key}: {message}", .at.map(|at| format!(":{at}")).unwrap_or_default())]
    Invalid {
        file: String,
        at: Option<LineCol>,
        key: String,
        message: String,
    },

    /// `extends` loops back or goes too deep.
    #[error("theme {name:?}: `extends` chain {} loops or is too long", .chain.join(" -> "))]
    ExtendsLoop { name: String, chain: Vec<String> },
}
