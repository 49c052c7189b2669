//! Rules that span settings (timeout ≤ interval, range ≤ retention, …), checked on the resolved
//! `Config` after loading a file and again after command-line overrides.

use std::time::Duration;

use super::resolved::{Config, MIN_INTERVAL};
use super::toml_location::KeyPath;
use super::units::{format_duration, format_size};

/// A setting, so errors can name it by file key or by command-line flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    Interval,
    Timeout,
    BodyLimit,
    UserAgent,
    Target(usize, TargetField),
    Theme,
    Window,
    Range,
    MaxFps,
    Columns,
    HistoryFullResolution,
    HistoryRetention,
    HistoryCoarseStep,
    LogLevel,
    LogFile,
    /// A key of `[kubernetes]`.
    Kubernetes(&'static str),
    RulesFile,
    Prometheus(super::prometheus::PromKey),
}

/// A key of a `[[targets]]` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetField {
    Url,
    Name,
    BearerTokenFile,
    BearerTokenEnv,
}

impl Setting {
    /// Where the setting lives in the file (`scrape.interval`, `targets[2].url`).
    pub(crate) fn key_path(self) -> KeyPath {
        let keys: &[&str] = match self {
            Setting::Interval => &["scrape", "interval"],
            Setting::Timeout => &["scrape", "timeout"],
            Setting::BodyLimit => &["scrape", "body_limit"],
            Setting::UserAgent => &["scrape", "user_agent"],
            Setting::Target(index, field) => {
                let field = match field {
                    TargetField::Url => "url",
                    TargetField::Name => "name",
                    TargetField::BearerTokenFile => "bearer_token_file",
                    TargetField::BearerTokenEnv => "bearer_token_env",
                };
                return KeyPath::keys(&["targets"]).index(index).key(field);
            }
            Setting::Theme => &["display", "theme"],
            Setting::Window => &["display", "window"],
            Setting::Range => &["display", "range"],
            Setting::MaxFps => &["display", "max_fps"],
            Setting::Columns => &["display", "columns"],
            Setting::HistoryFullResolution => &["history", "full_resolution"],
            Setting::HistoryRetention => &["history", "retention"],
            Setting::HistoryCoarseStep => &["history", "coarse_step"],
            Setting::LogLevel => &["log", "level"],
            Setting::LogFile => &["log", "file"],
            Setting::Kubernetes(key) => return KeyPath::keys(&["kubernetes", key]),
            Setting::RulesFile => &["rules", "file"],
            Setting::Prometheus(key) => return KeyPath::keys(&["prometheus", key.name()]),
        };
        KeyPath::keys(keys)
    }

    /// The command-line flag that overrides the setting, if there is one.
    pub(crate) fn flag(self) -> Option<&'static str> {
        match self {
            Setting::Interval => Some("--interval"),
            Setting::Timeout => Some("--timeout"),
            Setting::BodyLimit => Some("--body-limit"),
            Setting::Target(_, TargetField::Url | TargetField::Name) => Some("--target"),
            Setting::Theme => Some("--theme"),
            Setting::Window => Some("--window"),
            Setting::LogLevel => Some("--log-level"),
            Setting::Prometheus(super::prometheus::PromKey::Url) => Some("--prometheus"),
            _ => None,
        }
    }
}

/// A rule a setting breaks, with a message that reads after `key: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub setting: Setting,
    pub message: String,
}

impl Problem {
    pub fn new(setting: Setting, message: impl Into<String>) -> Self {
        Problem {
            setting,
            message: message.into(),
        }
    }
}

/// Maximum points one history tier may hold per series and engine (memory guard: 1,000
/// engines × 14 series × 2 tiers × 20,000 points × 4 bytes ≈ 2.2 GB at worst).
pub(crate) const MAX_HISTORY_POINTS: u128 = 20_000;
/// Highest accepted redraw rate.
pub(crate) const MAX_FPS: u32 = 60;
/// Smallest accepted body limit.
pub(crate) const MIN_BODY_LIMIT: usize = 1024;
/// Largest body limit accepted: far above any real `/metrics` page (a few MiB), and small
/// enough that the body, the parsed samples and the engines read from them fit in memory.
pub(crate) const MAX_BODY_LIMIT: usize = 1 << 30;

/// Checks every cross-setting rule. `name` renders a setting for messages that mention a
/// second setting (file key or flag, depending on where it came from).
pub(crate) fn validate(config: &Config, name: &dyn Fn(Setting) -> String) -> Result<(), Problem> {
    let d = format_duration;
    if config.interval < MIN_INTERVAL {
        return Err(Problem::new(
            Setting::Interval,
            format!(
                "{} is below the minimum of {}",
                d(config.interval),
                d(MIN_INTERVAL)
            ),
        ));
    }
    if config.timeout.is_zero() {
        return Err(Problem::new(Setting::Timeout, "must be longer than 0s"));
    }
    if config.timeout > config.interval {
        return Err(Problem::new(
            Setting::Timeout,
            format!(
                "{} is longer than {} ({}); the timeout must be at most the interval",
                d(config.timeout),
                name(Setting::Interval),
                d(config.interval)
            ),
        ));
    }
    if config.body_limit < MIN_BODY_LIMIT {
        return Err(Problem::new(
            Setting::BodyLimit,
            format!(
                "{} is below the minimum of {}",
                format_size(config.body_limit as u64),
                format_size(MIN_BODY_LIMIT as u64)
            ),
        ));
    }
    if config.body_limit > MAX_BODY_LIMIT {
        return Err(Problem::new(
            Setting::BodyLimit,
            format!(
                "{} is above the maximum of {}",
                format_size(config.body_limit as u64),
                format_size(MAX_BODY_LIMIT as u64)
            ),
        ));
    }
    if config.user_agent.is_empty()
        || !config
            .user_agent
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b))
    {
        return Err(Problem::new(
            Setting::UserAgent,
            "must be non-empty printable ASCII (it is sent as an HTTP header)",
        ));
    }
    validate_targets(config)?;
    if !crate::theme::is_valid_theme_name(&config.theme) {
        return Err(Problem::new(
            Setting::Theme,
            format!(
                "{:?} is not a theme name (letters, digits, '-' and '_' only)",
                config.theme
            ),
        ));
    }
    validate_display(config, name)?;
    validate_history(config, name)?;
    validate_prometheus(config, name)?;
    validate_log_level(&config.log_level)
}

fn validate_prometheus(config: &Config, name: &dyn Fn(Setting) -> String) -> Result<(), Problem> {
    let Some(backfill) = config.prometheus.as_ref().and_then(|p| p.backfill) else {
        return Ok(());
    };
    if backfill > config.history.retention {
        return Err(Problem::new(
            Setting::Prometheus(super::prometheus::PromKey::Backfill),
            format!(
                "{} is longer than the history kept ({} is {})",
                format_duration(backfill),
                name(Setting::HistoryRetention),
                format_duration(config.history.retention)
            ),
        ));
    }
    Ok(())
}

fn validate_targets(config: &Config) -> Result<(), Problem> {
    for (index, target) in config.targets.iter().enumerate() {
        let setting = Setting::Target(index, TargetField::Name);
        if target.name.trim().is_empty() {
            return Err(Problem::new(setting, "must not be empty"));
        }
        if let Some(first) = config
            .targets
            .iter()
            .take(index)
            .position(|other| other.name == target.name)
        {
            return Err(Problem::new(
                setting,
                format!(
                    "{:?} is also the name of target {} ({}); give each target a distinct `name`",
                    target.name,
                    first,
                    config.targets.get(first).map_or("", |t| t.url.as_str())
                ),
            ));
        }
    }
    Ok(())
}

fn validate_display(config: &Config, name: &dyn Fn(Setting) -> String) -> Result<(), Problem> {
    let d = format_duration;
    let two_intervals = config.interval.saturating_mul(2);
    if config.range < two_intervals {
        return Err(Problem::new(
            Setting::Range,
            format!(
                "{} is too short: a chart needs at least two scrapes ({} is {})",
                d(config.range),
                name(Setting::Interval),
                d(config.interval)
            ),
        ));
    }
    if config.range > config.history.retention {
        return Err(Problem::new(
            Setting::Range,
            format!(
                "{} is longer than the history kept ({} is {})",
                d(config.range),
                name(Setting::HistoryRetention),
                d(config.history.retention)
            ),
        ));
    }
    if !(1..=MAX_FPS).contains(&config.max_fps) {
        return Err(Problem::new(
            Setting::MaxFps,
            format!("{} is out of range (1 to {MAX_FPS})", config.max_fps),
        ));
    }
    Ok(())
}

fn validate_history(config: &Config, name: &dyn Fn(Setting) -> String) -> Result<(), Problem> {
    let d = format_duration;
    let history = &config.history;
    if history.full_resolution < config.interval {
        return Err(Problem::new(
            Setting::HistoryFullResolution,
            format!(
                "{} is shorter than {} ({})",
                d(history.full_resolution),
                name(Setting::Interval),
                d(config.interval)
            ),
        ));
    }
    if history.full_resolution > history.retention {
        return Err(Problem::new(
            Setting::HistoryFullResolution,
            format!(
                "{} is longer than {} ({})",
                d(history.full_resolution),
                name(Setting::HistoryRetention),
                d(history.retention)
            ),
        ));
    }
    if history.coarse_step < Duration::from_secs(1) {
        return Err(Problem::new(
            Setting::HistoryCoarseStep,
            format!("{} is below the minimum of 1s", d(history.coarse_step)),
        ));
    }
    let full_points = history.full_resolution.as_nanos() / config.interval.as_nanos().max(1);
    if full_points > MAX_HISTORY_POINTS {
        return Err(Problem::new(
            Setting::HistoryFullResolution,
            format!(
                "{} at one point per {} ({}) is {full_points} points per series; \
                 at most {MAX_HISTORY_POINTS} are allowed",
                d(history.full_resolution),
                name(Setting::Interval),
                d(config.interval)
            ),
        ));
    }
    let coarse_span = history.retention.saturating_sub(history.full_resolution);
    let coarse_points = coarse_span.as_nanos() / history.coarse_step.as_nanos().max(1);
    if coarse_points > MAX_HISTORY_POINTS {
        return Err(Problem::new(
            Setting::HistoryCoarseStep,
            format!(
                "{} buckets over the downsampled {} is {coarse_points} points per series; \
                 at most {MAX_HISTORY_POINTS} are allowed",
                d(history.coarse_step),
                d(coarse_span)
            ),
        ));
    }
    Ok(())
}

/// Plain level names tracing understands.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A level name, or `target=level` directives (`kvtop=debug,reqwest=warn`) as accepted by
/// `tracing_subscriber::EnvFilter`. A bare word that is not a level is rejected: EnvFilter would
/// read it as a target name and silently log everything from that target.
fn validate_log_level(level: &str) -> Result<(), Problem> {
    let trimmed = level.trim();
    if LEVELS.iter().any(|l| l.eq_ignore_ascii_case(trimmed)) {
        return Ok(());
    }
    let is_directive_list = trimmed.contains('=') || trimmed.contains(',');
    if is_directive_list && tracing_subscriber::EnvFilter::try_new(trimmed).is_ok() {
        return Ok(());
    }
    Err(Problem::new(
        Setting::LogLevel,
        format!(
            "{level:?} is not a log level (use one of {}, or directives like \"kvtop=debug,warn\")",
            LEVELS.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::resolved::HistorySettings;
    use super::*;

    fn key_name(setting: Setting) -> String {
        setting.key_path().to_string()
    }

    fn check(config: &Config) -> Result<(), Problem> {
        validate(config, &key_name)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(check(&Config::default()), Ok(()));
    }

    #[test]
    fn interval_minimum_is_250ms() {
        let mut config = Config {
            interval: Duration::from_millis(249),
            timeout: Duration::from_millis(100),
            ..Config::default()
        };
        let problem = check(&config).expect_err("too short");
        assert_eq!(problem.setting, Setting::Interval);
        assert_eq!(problem.message, "249ms is below the minimum of 250ms");
        config.interval = Duration::from_millis(250);
        assert_eq!(check(&config), Ok(()));
    }

    #[test]
    fn timeout_longer_than_interval_is_rejected() {
        let config = Config {
            timeout: Duration::from_millis(1_500),
            ..Config::default()
        };
        let problem = check(&config).expect_err("timeout > interval");
        assert_eq!(problem.setting, Setting::Timeout);
        assert_eq!(
            problem.message,
            "1.5s is longer than scrape.interval (1s); the timeout must be at most the interval"
        );
        let equal = Config {
            timeout: secs(1),
            ..Config::default()
        };
        assert_eq!(check(&equal), Ok(()));
    }

    #[test]
    fn range_must_fit_in_retention_and_hold_two_scrapes() {
        let long = Config {
            range: secs(7_200),
            ..Config::default()
        };
        assert_eq!(check(&long).map_err(|p| p.setting), Err(Setting::Range));
        let short = Config {
            range: Duration::from_millis(1_999),
            ..Config::default()
        };
        assert_eq!(check(&short).map_err(|p| p.setting), Err(Setting::Range));
    }

    #[test]
    fn history_tiers_are_bounded() {
        let full_too_long = Config {
            history: HistorySettings {
                full_resolution: secs(7_200),
                ..HistorySettings::default()
            },
            ..Config::default()
        };
        assert_eq!(
            check(&full_too_long).map_err(|p| p.setting),
            Err(Setting::HistoryFullResolution)
        );
        // 6 h at 1 s = 21,600 points > 20,000.
        let too_many_points = Config {
            history: HistorySettings {
                full_resolution: secs(6 * 3_600),
                retention: secs(7 * 3_600),
                coarse_step: secs(60),
            },
            ..Config::default()
        };
        let problem = check(&too_many_points).expect_err("too many points");
        assert_eq!(problem.setting, Setting::HistoryFullResolution);
        assert!(
            problem.message.contains("21600 points"),
            "{}",
            problem.message
        );
        // (24 h - 10 m) / 1 s = 85,800 coarse points.
        let too_many_buckets = Config {
            history: HistorySettings {
                retention: secs(86_400),
                coarse_step: secs(1),
                ..HistorySettings::default()
            },
            range: secs(300),
            ..Config::default()
        };
        assert_eq!(
            check(&too_many_buckets).map_err(|p| p.setting),
            Err(Setting::HistoryCoarseStep)
        );
    }

    #[test]
    fn fps_and_body_limit_bounds() {
        for fps in [0, 61] {
            let config = Config {
                max_fps: fps,
                ..Config::default()
            };
            assert_eq!(check(&config).map_err(|p| p.setting), Err(Setting::MaxFps));
        }
        let config = Config {
            body_limit: 1023,
            ..Config::default()
        };
        assert_eq!(
            check(&config).map_err(|p| p.setting),
            Err(Setting::BodyLimit)
        );
        // 200 GiB would be believed, and a Content-Length that large allocated.
        let config = Config {
            body_limit: 200 << 30,
            ..Config::default()
        };
        let problem = check(&config).expect_err("200 GiB is refused");
        assert_eq!(problem.setting, Setting::BodyLimit);
        assert!(
            problem.message.contains("above the maximum of 1GiB"),
            "{}",
            problem.message
        );
    }

    #[test]
    fn log_levels_and_directives() {
        for good in [
            "info",
            "DEBUG",
            "off",
            "kvtop=debug,warn",
            "kvtop::sources=trace",
        ] {
            assert_eq!(validate_log_level(good), Ok(()), "{good}");
        }
        for bad in ["inf", "verbose", "", "kvtop=loud"] {
            assert!(validate_log_level(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn duplicate_target_names_are_rejected() {
        let target = |name: &str, url: &str| super::super::TargetConfig {
            name: name.into(),
            url: url.into(),
            bearer_token: None,
        };
        let config = Config {
            targets: vec![
                target("a", "http://a:1/metrics"),
                target("b", "http://b:1/metrics"),
                target("a", "http://a:1/other"),
            ],
            ..Config::default()
        };
        let problem = check(&config).expect_err("duplicate");
        assert_eq!(problem.setting, Setting::Target(2, TargetField::Name));
        assert!(problem.message.contains("target 0"), "{}", problem.message);
    }

    #[test]
    fn key_paths_and_flags() {
        assert_eq!(
            Setting::Target(3, TargetField::BearerTokenEnv)
                .key_path()
                .to_string(),
            "targets[3].bearer_token_env"
        );
        assert_eq!(Setting::Interval.flag(), Some("--interval"));
        assert_eq!(Setting::HistoryRetention.flag(), None);
    }
}
