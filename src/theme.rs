//! Colour themes: `themes/*.toml` embedded at build time plus a user themes directory.
//! Every style the UI uses is a named slot here, so a theme file can set each one.
//!
//! A theme file (`themes/NAME.toml`, or `NAME.toml` in the user themes directory, which wins
//! over a built-in of the same name):
//! ```toml
//! extends = "default"          # optional; slots not set here come from this theme
//! monochrome = false           # optional; true = no colour, the UI marks levels by text too
//! [styles]
//! header = { fg = "black", bg = "cyan", modifiers = ["bold"] }
//! ```
//! A slot set in a file replaces the inherited style as a whole. Slot keys are the `Theme`
//! field names, with the chart series as `series1` … `series4`.

mod file;
mod style_spec;

use std::io;
use std::path::{Path, PathBuf};

use ratatui::style::Style;

use crate::config::LineCol;
use crate::config::toml_location::{self, TomlError};
use file::ThemeFile;

pub use file::SLOT_NAMES;

/// Resolved styles for every element the UI draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    /// Background/foreground of the whole screen.
    pub base: Style,
    /// Header bar.
    pub header: Style,
    /// Panel titles.
    pub title: Style,
    pub border: Style,
    /// Selected table row.
    pub selected: Style,
    /// Table header row.
    pub table_header: Style,
    /// Secondary text (ages, units, resolved findings).
    pub dim: Style,
    /// Status / severity colours.
    pub ok: Style,
    pub info: Style,
    pub warn: Style,
    pub crit: Style,
    pub stale: Style,
    pub down: Style,
    /// Gauge bar fill by level (low < 0.75, mid < 0.9, high ≥ 0.9 by default).
    pub bar_low: Style,
    pub bar_mid: Style,
    pub bar_high: Style,
    /// Chart series, in order (e.g. p50, p95, p99).
    pub series: [Style; 4],
    /// Key names in help and footer.
    pub key: Style,
    /// Error text.
    pub error: Style,
    /// When true, the theme has no colour: the UI must mark levels with text/symbols too.
    pub monochrome: bool,
}

impl Theme {
    /// The built-in 16-colour theme, used when no theme file can be read. It uses only the
    /// terminal's own 16 ANSI colours, so it follows the user's palette.
    pub fn fallback() -> Theme {
        use ratatui::style::{Color, Modifier};
        let fg = |c: Color| Style::new().fg(c);
        Theme {
            name: "default".into(),
            base: Style::new(),
            header: Style::new().fg(Color::Black).bg(Color::Cyan),
            title: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            border: fg(Color::DarkGray),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            table_header: Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            dim: fg(Color::DarkGray),
            ok: fg(Color::Green),
            info: fg(Color::Blue),
            warn: fg(Color::Yellow),
            crit: fg(Color::LightRed).add_modifier(Modifier::BOLD),
            stale: fg(Color::Yellow).add_modifier(Modifier::DIM),
            down: fg(Color::Red).add_modifier(Modifier::BOLD),
            bar_low: fg(Color::Green),
            bar_mid: fg(Color::Yellow),
            bar_high: fg(Color::Red),
            series: [
                fg(Color::Green),
                fg(Color::Yellow),
                fg(Color::Red),
                fg(Color::Cyan),
            ],
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            error: fg(Color::Red),
            monochrome: false,
        }
    }

    /// The built-in colourless theme (`--theme mono`, `NO_COLOR`): only bold, dim and reverse.
    pub fn fallback_mono() -> Theme {
        use ratatui::style::Modifier;
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let plain = Style::new();
        Theme {
            name: "mono".into(),
            base: plain,
            header: Style::new().add_modifier(Modifier::REVERSED),
            title: bold,
            border: plain,
            selected: Style::new().add_modifier(Modifier::REVERSED),
            table_header: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            dim: Style::new().add_modifier(Modifier::DIM),
            ok: plain,
            info: plain,
            warn: bold,
            crit: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            stale: Style::new().add_modifier(Modifier::DIM),
            down: bold,
            bar_low: plain,
            bar_mid: plain,
            bar_high: bold,
            series: [plain, bold, Style::new().add_modifier(Modifier::DIM), plain],
            key: bold,
            error: bold,
            monochrome: true,
        }
    }
}

/// The themes built into the binary, by name.
const BUILTIN_THEMES: [(&str, &str); 4] = [
    ("default", include_str!("../themes/default.toml")),
    ("light", include_str!("../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../themes/high-contrast.toml"),
    ),
    ("mono", include_str!("../themes/mono.toml")),
];

/// Longest `extends` chain followed before giving up.
const MAX_EXTENDS_DEPTH: usize = 8;

/// Names of the built-in themes.
pub fn builtin_theme_names() -> &'static [&'static str] {
    &["default", "light", "high-contrast", "mono"]
}

/// True when the `NO_COLOR` environment variable is set and non-empty (<https://no-color.org>):
/// callers then use the `mono` theme whatever is configured.
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

/// True for names made of ASCII letters, digits, `-` and `_` (so a name can never reach
/// outside the themes directory).
pub fn is_valid_theme_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Every theme that can be loaded: built-ins plus `*.toml` in `user_dir`, sorted.
pub fn available_theme_names(user_dir: Option<&Path>) -> Vec<String> {
    let mut names: Vec<String> = builtin_theme_names()
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    if let Some(entries) = user_dir.and_then(|dir| std::fs::read_dir(dir).ok()) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "toml") {
                continue;
            }
            if let Some(stem) = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .filter(|stem| is_valid_theme_name(stem))
            {
                names.push(stem.to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

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

/// Loads a theme by name: `<user_dir>/NAME.toml` if present, else the built-in. Slots it does
/// not set come from the theme it `extends`, or from the built-in default theme.
pub fn load_theme(name: &str, user_dir: Option<&Path>) -> Result<Theme, ThemeError> {
    let mut chain = Vec::new();
    let mut theme = resolve(name, user_dir, &mut chain)?;
    theme.name = name.to_owned();
    Ok(theme)
}

/// Where a theme's text came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Builtin,
    User(PathBuf),
}

/// One step of an `extends` chain: a name and where it was found.
type ChainLink = (String, Origin);

fn resolve(
    name: &str,
    user_dir: Option<&Path>,
    chain: &mut Vec<ChainLink>,
) -> Result<Theme, ThemeError> {
    if !is_valid_theme_name(name) {
        return Err(ThemeError::InvalidName {
            name: name.to_owned(),
        });
    }
    // A user file may extend the built-in of its own name ("default" tweaking "default"), and
    // built-ins only ever extend built-ins.
    let inside_builtin = chain
        .last()
        .is_some_and(|(_, origin)| *origin == Origin::Builtin);
    let user_file_in_chain = chain
        .iter()
        .any(|(n, origin)| n == name && matches!(origin, Origin::User(_)));
    let loop_error = |chain: &[ChainLink]| {
        let mut names: Vec<String> = chain.iter().map(|(n, _)| n.clone()).collect();
        names.push(name.to_owned());
        ThemeError::ExtendsLoop {
            name: chain.first().map_or(name, |(n, _)| n.as_str()).to_owned(),
            chain: names,
        }
    };
    if user_file_in_chain && !builtin_theme_names().contains(&name) {
        return Err(loop_error(chain));
    }
    let search_user = !inside_builtin && !user_file_in_chain;
    let (origin, text) = find(name, user_dir.filter(|_| search_user))?;
    let link = (name.to_owned(), origin.clone());
    if chain.contains(&link) || chain.len() >= MAX_EXTENDS_DEPTH {
        return Err(loop_error(chain));
    }
    chain.push(link);
    let file_label = match &origin {
        Origin::Builtin => format!("themes/{name}.toml (built-in)"),
        Origin::User(path) => path.display().to_string(),
    };
    let theme_file = parse(&file_label, &text)?;
    let base = match &theme_file.extends {
        Some(parent) => resolve(parent, user_dir, chain)?,
        None => Theme::fallback(),
    };
    Ok(theme_file.apply_to(base))
}

/// Finds a theme's text: the user directory first (when given), then the built-ins.
fn find(name: &str, user_dir: Option<&Path>) -> Result<(Origin, String), ThemeError> {
    if let Some(dir) = user_dir {
        let path = dir.join(format!("{name}.toml"));
        match std::fs::read_to_string(&path) {
            Ok(text) => return Ok((Origin::User(path), text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(ThemeError::Read { path, source }),
        }
    }
    BUILTIN_THEMES
        .iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, text)| (Origin::Builtin, (*text).to_owned()))
        .ok_or_else(|| ThemeError::Unknown {
            name: name.to_owned(),
            available: available_theme_names(user_dir),
        })
}

fn parse(file: &str, text: &str) -> Result<ThemeFile, ThemeError> {
    toml_location::deserialize::<ThemeFile>(text)
        .map(|(theme_file, _)| theme_file)
        .map_err(|e| match e {
            TomlError::Syntax {
                at,
                message,
                context,
            } => ThemeError::Syntax {
                file: file.to_owned(),
                at,
                message,
                context,
            },
            TomlError::Invalid { at, key, message } => ThemeError::Invalid {
                file: file.to_owned(),
                at,
                key: key.describe(),
                message,
            },
        })
}

#[cfg(test)]
mod tests;
