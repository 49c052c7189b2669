//! One style as written in a theme file: `{ fg = "black", bg = "#1e1e2e", modifiers = ["bold"] }`.
//! Colours: the 16 ANSI names (`black` … `white`, `gray`, `darkgray`, `lightred` …), `reset`,
//! `#rrggbb`, and `indexed(N)` or `N` (0–255) for the 256-colour palette.

use std::fmt;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A style slot's value. A slot set in a theme replaces the inherited style entirely.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StyleSpec {
    pub fg: Option<ColourValue>,
    pub bg: Option<ColourValue>,
    #[serde(default)]
    pub modifiers: Vec<ModifierValue>,
}

impl StyleSpec {
    pub(crate) fn to_style(&self) -> Style {
        let mut style = Style::new();
        if let Some(fg) = self.fg {
            style = style.fg(fg.0);
        }
        if let Some(bg) = self.bg {
            style = style.bg(bg.0);
        }
        self.modifiers
            .iter()
            .fold(style, |style, modifier| style.add_modifier(modifier.0))
    }
}

/// A colour, parsed while deserializing so a bad one is reported at its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ColourValue(pub Color);

const COLOUR_HELP: &str =
    "use a name such as red, lightblue or darkgray, \"reset\", \"#rrggbb\", or 0-255";

/// The 16 ANSI colours and `reset`, by their normalized names (lowercase, no `_`, `-` or space).
const NAMED_COLOURS: [(&str, Color); 19] = [
    ("reset", Color::Reset),
    ("black", Color::Black),
    ("red", Color::Red),
    ("green", Color::Green),
    ("yellow", Color::Yellow),
    ("blue", Color::Blue),
    ("magenta", Color::Magenta),
    ("cyan", Color::Cyan),
    ("gray", Color::Gray),
    ("grey", Color::Gray),
    ("darkgray", Color::DarkGray),
    ("darkgrey", Color::DarkGray),
    ("lightred", Color::LightRed),
    ("lightgreen", Color::LightGreen),
    ("lightyellow", Color::LightYellow),
    ("lightblue", Color::LightBlue),
    ("lightmagenta", Color::LightMagenta),
    ("lightcyan", Color::LightCyan),
    ("white", Color::White),
];

/// Parses a colour (see the module docs).
pub(crate) fn parse_colour(text: &str) -> Result<Color, String> {
    let bad = || format!("{text:?} is not a colour ({COLOUR_HELP})");
    let trimmed = text.trim();
    if let Some(hex) = trimmed.strip_prefix('#') {
        if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let rgb = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
        let [_, r, g, b] = rgb.to_be_bytes();
        return Ok(Color::Rgb(r, g, b));
    }
    let normalized: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    let index_text = normalized
        .strip_prefix("indexed(")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or(&normalized);
    if !index_text.is_empty() && index_text.bytes().all(|b| b.is_ascii_digit()) {
        return index_text
            .parse::<u8>()
            .map(Color::Indexed)
            .map_err(|_| format!("{text:?}: a palette index must be 0 to 255"));
    }
    NAMED_COLOURS
        .iter()
        .find(|(name, _)| *name == normalized)
        .map(|&(_, colour)| colour)
        .ok_or_else(bad)
}

impl<'de> Deserialize<'de> for ColourValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ColourVisitor;
        impl Visitor<'_> for ColourVisitor {
            type Value = ColourValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a colour ({COLOUR_HELP})")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ColourValue, E> {
                parse_colour(text).map(ColourValue).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ColourValue, E> {
                u8::try_from(n)
                    .map(|i| ColourValue(Color::Indexed(i)))
                    .map_err(|_| E::custom(format!("{n}: a palette index must be 0 to 255")))
            }
        }
        deserializer.deserialize_any(ColourVisitor)
    }
}

/// A text modifier, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModifierValue(pub Modifier);

const MODIFIERS: [(&str, Modifier); 13] = [
    ("bold", Modifier::BOLD),
    ("dim", Modifier::DIM),
    ("italic", Modifier::ITALIC),
    ("underlined", Modifier::UNDERLINED),
    ("underline", Modifier::UNDERLINED),
    ("slow_blink", Modifier::SLOW_BLINK),
    ("blink", Modifier::SLOW_BLINK),
    ("rapid_blink", Modifier::RAPID_BLINK),
    ("reversed", Modifier::REVERSED),
    ("reverse", Modifier::REVERSED),
    ("hidden", Modifier::HIDDEN),
    ("crossed_out", Modifier::CROSSED_OUT),
    ("strikethrough", Modifier::CROSSED_OUT),
];

/// Parses a modifier name (`bold`, `dim`, `italic`, `underlined`, `reversed`, …).
pub(crate) fn parse_modifier(text: &str) -> Result<Modifier, String> {
    let normalized = text.trim().to_ascii_lowercase().replace('-', "_");
    MODIFIERS
        .iter()
        .find(|(name, _)| *name == normalized)
        .map(|&(_, modifier)| modifier)
        .ok_or_else(|| {
            format!(
                "{text:?} is not a modifier (use bold, dim, italic, underlined, reversed, \
                 slow_blink, rapid_blink, hidden or crossed_out)"
            )
        })
}

impl<'de> Deserialize<'de> for ModifierValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_modifier(&text)
            .map(ModifierValue)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_names_in_any_spelling() {
        assert_eq!(parse_colour("black"), Ok(Color::Black));
        assert_eq!(parse_colour("DarkGray"), Ok(Color::DarkGray));
        assert_eq!(parse_colour("dark_grey"), Ok(Color::DarkGray));
        assert_eq!(parse_colour("light-red"), Ok(Color::LightRed));
        assert_eq!(parse_colour("gray"), Ok(Color::Gray));
        assert_eq!(parse_colour("white"), Ok(Color::White));
        assert_eq!(parse_colour("reset"), Ok(Color::Reset));
    }

    #[test]
    fn rgb_and_palette_colours() {
        assert_eq!(parse_colour("#1e90ff"), Ok(Color::Rgb(0x1e, 0x90, 0xff)));
        assert_eq!(parse_colour("#FFFFFF"), Ok(Color::Rgb(255, 255, 255)));
        assert_eq!(parse_colour("indexed(208)"), Ok(Color::Indexed(208)));
        assert_eq!(parse_colour("17"), Ok(Color::Indexed(17)));
        assert_eq!(parse_colour("0"), Ok(Color::Indexed(0)));
    }

    #[test]
    fn bad_colours_explain_the_choices() {
        for bad in ["purple", "#12345", "#12345g", "#", "", "indexed()", "light"] {
            let err = parse_colour(bad).expect_err(bad);
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("#rrggbb"), "{err}");
        }
        let err = parse_colour("256").expect_err("out of range");
        assert!(err.contains("0 to 255"), "{err}");
        assert!(parse_colour("indexed(300)").is_err());
    }

    #[test]
    fn modifiers_by_name() {
        assert_eq!(parse_modifier("bold"), Ok(Modifier::BOLD));
        assert_eq!(parse_modifier("Reverse"), Ok(Modifier::REVERSED));
        assert_eq!(parse_modifier("crossed-out"), Ok(Modifier::CROSSED_OUT));
        let err = parse_modifier("blinky").expect_err("unknown");
        assert!(err.contains("\"blinky\""), "{err}");
    }

    #[test]
    fn spec_builds_the_style() {
        let spec = StyleSpec {
            fg: Some(ColourValue(Color::Black)),
            bg: Some(ColourValue(Color::Cyan)),
            modifiers: vec![ModifierValue(Modifier::BOLD), ModifierValue(Modifier::DIM)],
        };
        assert_eq!(
            spec.to_style(),
            Style::new()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD | Modifier::DIM)
        );
        assert_eq!(StyleSpec::default().to_style(), Style::new());
    }
}
