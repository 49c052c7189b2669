//! The resolved configuration: typed values with every default filled in.

use std::path::PathBuf;
use std::time::Duration;

use super::kubernetes::KubernetesConfig;
use super::targets::TargetConfig;
use kvtop_core::engine::PayloadLimits;
use kvtop_core::fleet::{FleetSettings, QuantileWindow};

/// Shortest scrape interval accepted.
pub const MIN_INTERVAL: Duration = Duration::from_millis(250);
/// Default scrape interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Default limit on a (decompressed) `/metrics` body.
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Default log file name inside the state directory.
pub const LOG_FILE_NAME: &str = "kvtop.log";

/// The configuration kvtop runs with: file settings over defaults, then command-line overrides
/// (see `Config::apply`).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Scrape interval (≥ 250 ms).
    pub interval: Duration,
    /// Per-scrape timeout (≤ `interval`; defaults to 80 % of it).
    pub timeout: Duration,
    /// Largest accepted `/metrics` body after decompression, bytes.
    pub body_limit: usize,
    /// Bounds on what one target's payload may hold (`scrape.max_engines`, `scrape.max_series`).
    pub payload_limits: PayloadLimits,
    /// `User-Agent` header sent with each scrape.
    pub user_agent: String,
    pub targets: Vec<TargetConfig>,
    /// Theme name (built-in or from the user themes directory).
    pub theme: String,
    /// Window for windowed quantiles and rates.
    pub window: QuantileWindow,
    /// Time range shown by charts.
    pub range: Duration,
    /// Upper bound on redraws per second.
    pub max_fps: u32,
    /// Copies (`y`) go to the terminal's clipboard with OSC 52 (`[display] clipboard`).
    pub clipboard: bool,
    /// How far back the console's snapshot (`e`) reaches (`[display] snapshot_span`).
    pub snapshot_span: Duration,
    /// The fleet table's configured value columns (`[display] columns`), shown first.
    pub columns: Option<Vec<kvtop_core::signals::Signal>>,
    pub history: HistorySettings,
    /// `tracing` filter: a level (`info`) or directives (`kvtop=debug,reqwest=warn`).
    pub log_level: String,
    /// Log file; `None` only when no state directory could be determined.
    pub log_file: Option<PathBuf>,
    /// User rules file named by `[rules] file`; `None` means `<config_dir>/rules.toml`, used
    /// when it exists (see [`Config::user_rules_path`]).
    pub rules_file: Option<PathBuf>,
    /// The file this configuration was read from, if any.
    pub source: Option<PathBuf>,
    /// `[kubernetes]`: pod discovery.
    pub kubernetes: KubernetesConfig,
    pub(crate) timeout_provenance: TimeoutProvenance,
    /// Read the fleet (and GPUs) through this Prometheus server as well.
    pub prometheus: Option<super::prometheus::PrometheusConfig>,
    /// Recording what the console ingests.
    pub record: RecordSettings,
}

/// Recording what the console ingests (`[record]`, `--record`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSettings {
    /// Where to record; nothing is recorded without it.
    pub file: Option<PathBuf>,
    /// A file is rotated once it reaches this size or age; this many rotated files are kept.
    pub max_bytes: u64,
    pub max_age: Duration,
    pub keep: usize,
}

impl Default for RecordSettings {
    fn default() -> Self {
        RecordSettings {
            file: None,
            max_bytes: 512 << 20,
            max_age: Duration::from_secs(6 * 3600),
            keep: 5,
        }
    }
}

/// How much history is kept per engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistorySettings {
    /// Span kept at full (per-scrape) resolution.
    pub full_resolution: Duration,
    /// Total span kept; beyond `full_resolution` it is downsampled.
    pub retention: Duration,
    /// Width of one downsampled bucket.
    pub coarse_step: Duration,
}

impl Default for HistorySettings {
    fn default() -> Self {
        HistorySettings {
            full_resolution: Duration::from_secs(600),
            retention: Duration::from_secs(3600),
            coarse_step: Duration::from_secs(10),
        }
    }
}

/// Whether `timeout` was derived from `interval`, so that `apply` re-derives it when the
/// interval changes. Provenance only: it never makes two configs unequal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeoutProvenance {
    pub derived: bool,
}

impl PartialEq for TimeoutProvenance {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            interval: DEFAULT_INTERVAL,
            timeout: default_timeout(DEFAULT_INTERVAL),
            body_limit: DEFAULT_BODY_LIMIT,
            payload_limits: PayloadLimits::default(),
            user_agent: default_user_agent(),
            targets: Vec::new(),
            theme: "default".to_owned(),
            window: QuantileWindow::M1,
            range: Duration::from_secs(300),
            max_fps: 10,
            clipboard: true,
            snapshot_span: Duration::from_secs(15 * 60),
            columns: None,
            history: HistorySettings::default(),
            log_level: "info".to_owned(),
            log_file: super::paths::state_dir().map(|dir| dir.join(LOG_FILE_NAME)),
            rules_file: None,
            source: None,
            kubernetes: KubernetesConfig::default(),
            timeout_provenance: TimeoutProvenance { derived: true },
            prometheus: None,
            record: RecordSettings::default(),
        }
    }
}

/// `kvtop/<version>`.
pub fn default_user_agent() -> String {
    format!("kvtop/{}", env!("CARGO_PKG_VERSION"))
}

/// The default scrape timeout: 80 % of the interval.
pub fn default_timeout(interval: Duration) -> Duration {
    interval
        .checked_mul(4)
        .map_or(interval, |four_fifths| four_fifths / 5)
}

impl Config {
    /// Settings for `fleet::Fleet`: interval, quantile window and history spans from this
    /// config; the rest at the fleet's defaults.
    pub fn fleet_settings(&self) -> FleetSettings {
        FleetSettings {
            interval: self.interval.as_secs_f64(),
            window: self.window,
            history_full_secs: self.history.full_resolution.as_secs_f64(),
            history_total_secs: self.history.retention.as_secs_f64(),
            history_coarse_step: self.history.coarse_step.as_secs_f64(),
            ..FleetSettings::default()
        }
    }

    /// The user rules file to merge over the built-in rules: the one `[rules] file` names
    /// (a named file that is missing is the caller's error to report), else
    /// `<config_dir>/rules.toml` when that file exists, else none.
    pub(crate) fn user_rules_path(&self) -> Option<PathBuf> {
        self.rules_file
            .clone()
            .or_else(|| super::paths::default_rules_path().filter(|path| path.is_file()))
    }

    #[cfg(test)]
    /// True when `timeout` was not set and follows the interval.
    pub(crate) fn timeout_is_derived(&self) -> bool {
        self.timeout_provenance.derived
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let config = Config::default();
        assert_eq!(config.interval, Duration::from_secs(1));
        assert_eq!(config.timeout, Duration::from_millis(800));
        assert_eq!(config.body_limit, 8_388_608);
        assert_eq!(
            config.user_agent,
            format!("kvtop/{}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(config.window, QuantileWindow::M1);
        assert_eq!(config.range, Duration::from_secs(300));
        assert_eq!(config.max_fps, 10);
        assert_eq!(config.theme, "default");
        assert_eq!(config.log_level, "info");
        assert!(config.targets.is_empty());
        assert!(config.timeout_is_derived());
    }

    #[test]
    fn default_timeout_is_eighty_percent() {
        assert_eq!(
            default_timeout(Duration::from_millis(250)),
            Duration::from_millis(200)
        );
        assert_eq!(
            default_timeout(Duration::from_secs(5)),
            Duration::from_secs(4)
        );
    }

    #[test]
    fn fleet_settings_carry_interval_window_and_history() {
        let config = Config {
            interval: Duration::from_millis(500),
            window: QuantileWindow::M5,
            history: HistorySettings {
                full_resolution: Duration::from_secs(120),
                retention: Duration::from_secs(7200),
                coarse_step: Duration::from_secs(30),
            },
            ..Config::default()
        };
        let settings = config.fleet_settings();
        assert_eq!(settings.interval, 0.5);
        assert_eq!(settings.window, QuantileWindow::M5);
        assert_eq!(settings.history_full_secs, 120.0);
        assert_eq!(settings.history_total_secs, 7200.0);
        assert_eq!(settings.history_coarse_step, 30.0);
        assert_eq!(
            settings.restart_mark_secs,
            FleetSettings::default().restart_mark_secs
        );
    }
}
