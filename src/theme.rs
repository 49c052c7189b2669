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

mod error;
mod file;
mod load;
mod style_spec;

use ratatui::style::Style;

pub use error::ThemeError;
pub use file::SLOT_NAMES;
pub use load::{available_theme_names, load_theme};

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
pub(crate) fn is_valid_theme_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests;
