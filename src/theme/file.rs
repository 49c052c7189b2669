//! The theme file model: `extends`, `monochrome` and a `[styles]` table with one optional entry
//! per `Theme` slot. Unknown keys are rejected, so a misspelt slot is an error, not a no-op.

use serde::Deserialize;

use super::Theme;
use super::style_spec::StyleSpec;

/// A whole theme file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThemeFile {
    /// Theme whose slots this one inherits (default: the built-in `default`).
    pub extends: Option<String>,
    pub monochrome: Option<bool>,
    #[serde(default)]
    pub styles: StylesSection,
}

/// Declares the `[styles]` table, mapping each key to a `Theme` field, so the slot list exists
/// once.
macro_rules! style_slots {
    ($($key:ident => $field:ident $([$index:literal])?),* $(,)?) => {
        /// `[styles]`: one optional style per slot.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct StylesSection {
            $(pub $key: Option<StyleSpec>,)*
        }

        impl StylesSection {
            /// Sets every slot this section names; the others keep `theme`'s styles.
            pub(crate) fn apply_to(&self, theme: &mut Theme) {
                $(
                    if let Some(spec) = &self.$key {
                        theme.$field $([$index])? = spec.to_style();
                    }
                )*
            }
        }

        /// Every slot key accepted under `[styles]`.
        pub const SLOT_NAMES: &[&str] = &[$(stringify!($key)),*];
    };
}

style_slots! {
    base => base,
    header => header,
    title => title,
    border => border,
    selected => selected,
    table_header => table_header,
    dim => dim,
    ok => ok,
    info => info,
    warn => warn,
    crit => crit,
    stale => stale,
    down => down,
    bar_low => bar_low,
    bar_mid => bar_mid,
    bar_high => bar_high,
    series1 => series[0],
    series2 => series[1],
    series3 => series[2],
    series4 => series[3],
    key => key,
    error => error,
}

impl ThemeFile {
    /// Applies this file over `base` (the theme it extends).
    pub(crate) fn apply_to(&self, mut base: Theme) -> Theme {
        self.styles.apply_to(&mut base);
        if let Some(monochrome) = self.monochrome {
            base.monochrome = monochrome;
        }
        base
    }
}
