//! The config file as written: every section and every key optional, unknown keys rejected.
//! Durations and sizes are parsed while deserializing, so a bad value is reported by the TOML
//! deserializer with its exact position. Cross-setting rules live in `resolve`.
//!
//! Adding a section: one `…Section` struct here plus one field in `ConfigFile`.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::units;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    #[serde(default)]
    pub scrape: ScrapeSection,
    #[serde(default)]
    pub targets: Vec<TargetEntry>,
    #[serde(default)]
    pub display: DisplaySection,
    #[serde(default)]
    pub history: HistorySection,
    #[serde(default)]
    pub log: LogSection,
    #[serde(default)]
    pub kubernetes: super::kubernetes::KubernetesSection,
    #[serde(default)]
    pub rules: RulesSection,
    pub prometheus: Option<super::prometheus::PrometheusSection>,
    #[serde(default)]
    pub record: RecordSection,
}

/// `[record]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordSection {
    /// Record what the console ingests to this file (as `--record`).
    pub file: Option<String>,
    /// Rotate the file at this size or age; keep this many rotated files.
    pub max_size: Option<SizeValue>,
    pub max_age: Option<DurationValue>,
    pub keep: Option<usize>,
}

/// `[scrape]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScrapeSection {
    pub interval: Option<DurationValue>,
    pub timeout: Option<DurationValue>,
    pub body_limit: Option<SizeValue>,
    pub user_agent: Option<String>,
    /// Most engines one target's payload may name.
    pub max_engines: Option<std::num::NonZeroUsize>,
    /// Most sample lines one target's payload may hold.
    pub max_series: Option<std::num::NonZeroUsize>,
}

/// One `[[targets]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TargetEntry {
    pub url: String,
    pub name: Option<String>,
    pub bearer_token_file: Option<String>,
    pub bearer_token_env: Option<String>,
}

/// `[display]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DisplaySection {
    pub theme: Option<String>,
    pub window: Option<String>,
    pub range: Option<DurationValue>,
    pub max_fps: Option<u32>,
    pub clipboard: Option<bool>,
    /// How far back the console's snapshot (`e`) reaches.
    pub snapshot_span: Option<DurationValue>,
    /// Signal names (`kvtop rules signals`) for the fleet table's first set of columns.
    pub columns: Option<Vec<String>>,
}

/// `[history]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistorySection {
    pub full_resolution: Option<DurationValue>,
    pub retention: Option<DurationValue>,
    pub coarse_step: Option<DurationValue>,
}

/// `[log]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogSection {
    pub level: Option<String>,
    pub file: Option<String>,
}

/// `[rules]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RulesSection {
    pub file: Option<String>,
}

/// A duration written as a string (`"250ms"`, `"1s"`, `"2m"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DurationValue(pub Duration);

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = DurationValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"250ms\", \"1s\" or \"2m\"")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<DurationValue, E> {
                units::parse_duration(text)
                    .map(DurationValue)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<DurationValue, E> {
                Err(E::custom(units::UnitError::MissingDurationUnit(
                    n.to_string(),
                )))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<DurationValue, E> {
                Err(E::custom(units::UnitError::MissingDurationUnit(
                    n.to_string(),
                )))
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

/// A size in bytes, written as a string (`"8MiB"`) or a plain integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SizeValue(pub u64);

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = SizeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"512KiB\", \"8MiB\" or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<SizeValue, E> {
                units::parse_size(text).map(SizeValue).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<SizeValue, E> {
                u64::try_from(n)
                    .map(SizeValue)
                    .map_err(|_| E::custom(units::UnitError::NotASize(n.to_string())))
            }
        }
        deserializer.deserialize_any(SizeVisitor)
    }
}
