//! Command-line overrides, applied over the resolved file configuration and re-validated.

use super::error::{ConfigError, Origin};
use super::prometheus::{PromKey, PrometheusConfig, check_prometheus_url};
use super::resolve::parse_window;
use super::resolved::{Config, TimeoutProvenance, default_timeout};
use super::targets::{TargetConfig, check_url};
use super::units::{parse_duration, parse_size};
use super::validate::{Setting, TargetField, validate};

/// Values given on the command line, as typed; `None` (or an empty `targets`) leaves the
/// configured value alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Target URLs; when non-empty they replace the file's targets (names from host:port, no
    /// tokens).
    pub targets: Vec<String>,
    /// Scrape interval (`500ms`); a timeout that was not set follows it (80 %).
    pub interval: Option<String>,
    pub timeout: Option<String>,
    /// Quantile window: `15s`, `1m` or `5m`.
    pub window: Option<String>,
    pub theme: Option<String>,
    /// Body size limit (`16MiB`).
    pub body_limit: Option<String>,
    pub log_level: Option<String>,
    /// Prometheus base URL (`--prometheus`): replaces the file's `prometheus.url`, keeping the
    /// section's other settings.
    pub prometheus: Option<String>,
}

impl Overrides {
    fn overrides(&self, setting: Setting) -> bool {
        match setting {
            Setting::Interval => self.interval.is_some(),
            Setting::Timeout => self.timeout.is_some(),
            Setting::BodyLimit => self.body_limit.is_some(),
            Setting::Target(_, TargetField::Url | TargetField::Name) => !self.targets.is_empty(),
            Setting::Theme => self.theme.is_some(),
            Setting::Window => self.window.is_some(),
            Setting::LogLevel => self.log_level.is_some(),
            Setting::Prometheus(PromKey::Url) => self.prometheus.is_some(),
            _ => false,
        }
    }
}

fn flag_error(setting: Setting, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        origin: Origin::CommandLine,
        key: setting
            .flag()
            .map_or_else(|| setting.key_path().to_string(), str::to_owned),
        message: message.into(),
    }
}

impl Config {
    /// Applies command-line overrides and re-checks every rule (e.g. timeout ≤ interval).
    /// On error `self` is left unchanged. Errors name the flag (`--interval`), or the file key
    /// when a flag made a configured value invalid.
    pub fn apply(&mut self, overrides: Overrides) -> Result<(), ConfigError> {
        let mut next = self.clone();
        if let Some(text) = &overrides.interval {
            next.interval =
                parse_duration(text).map_err(|e| flag_error(Setting::Interval, e.to_string()))?;
            if next.timeout_provenance.derived {
                next.timeout = default_timeout(next.interval);
            }
        }
        if let Some(text) = &overrides.timeout {
            next.timeout =
                parse_duration(text).map_err(|e| flag_error(Setting::Timeout, e.to_string()))?;
            next.timeout_provenance = TimeoutProvenance { derived: false };
        }
        if let Some(text) = &overrides.body_limit {
            let bytes =
                parse_size(text).map_err(|e| flag_error(Setting::BodyLimit, e.to_string()))?;
            next.body_limit = usize::try_from(bytes)
                .map_err(|_| flag_error(Setting::BodyLimit, "is too large for this platform"))?;
        }
        if let Some(text) = &overrides.window {
            next.window = parse_window(text).map_err(|m| flag_error(Setting::Window, m))?;
        }
        if let Some(theme) = &overrides.theme {
            next.theme = theme.trim().to_owned();
        }
        if let Some(level) = &overrides.log_level {
            next.log_level = level.trim().to_owned();
        }
        if let Some(url) = &overrides.prometheus {
            let url = check_prometheus_url(url)
                .map_err(|m| flag_error(Setting::Prometheus(PromKey::Url), m))?;
            next.prometheus = Some(match next.prometheus.take() {
                Some(configured) => PrometheusConfig { url, ..configured },
                None => PrometheusConfig::at(url),
            });
        }
        if !overrides.targets.is_empty() {
            let checked = overrides
                .targets
                .iter()
                .enumerate()
                .map(|(index, url)| {
                    check_url(url)
                        .map_err(|m| flag_error(Setting::Target(index, TargetField::Url), m))
                })
                .collect::<Result<Vec<_>, ConfigError>>()?;
            // Two engines behind one host:port (a path-routing proxy) stay two rows: a name
            // shared with another target gets the URL's path.
            let shared = |name: &str| checked.iter().filter(|c| c.default_name == name).count() > 1;
            next.targets = checked
                .iter()
                .map(|c| TargetConfig {
                    name: if shared(&c.default_name) {
                        c.name_with_path.clone()
                    } else {
                        c.default_name.clone()
                    },
                    url: c.url.clone(),
                    bearer_token: None,
                })
                .collect();
        }

        let name = |setting: Setting| match setting.flag() {
            Some(flag) if overrides.overrides(setting) => flag.to_owned(),
            _ => setting.key_path().to_string(),
        };
        validate(&next, &name).map_err(|problem| ConfigError::Invalid {
            origin: Origin::CommandLine,
            key: name(problem.setting),
            message: problem.message,
        })?;
        *self = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use kvtop_core::fleet::QuantileWindow;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn interval_override_moves_a_derived_timeout() {
        let mut config = Config::default();
        config
            .apply(Overrides {
                interval: Some("500ms".into()),
                ..Overrides::default()
            })
            .expect("valid");
        assert_eq!(config.interval, ms(500));
        assert_eq!(config.timeout, ms(400));
    }

    #[test]
    fn interval_below_an_explicit_timeout_is_rejected_and_nothing_changes() {
        let mut config = Config::default();
        config
            .apply(Overrides {
                timeout: Some("900ms".into()),
                ..Overrides::default()
            })
            .expect("valid");
        let before = config.clone();
        let err = config
            .apply(Overrides {
                interval: Some("500ms".into()),
                ..Overrides::default()
            })
            .expect_err("timeout 900ms > interval 500ms");
        assert_eq!(
            err.to_string(),
            "command line: scrape.timeout: 900ms is longer than --interval (500ms); \
             the timeout must be at most the interval"
        );
        assert_eq!(config, before);
        assert_eq!(config.timeout, ms(900));
    }

    #[test]
    fn bad_flag_values_name_the_flag() {
        let mut config = Config::default();
        let err = config
            .apply(Overrides {
                interval: Some("5x".into()),
                ..Overrides::default()
            })
            .expect_err("bad duration");
        assert_eq!(
            err.to_string(),
            "command line: --interval: \"5x\" is not a duration (use e.g. 250ms, 1s, 2m)"
        );
        let err = config
            .apply(Overrides {
                window: Some("2m".into()),
                ..Overrides::default()
            })
            .expect_err("bad window");
        assert_eq!(err.key(), Some("--window"));
        let err = config
            .apply(Overrides {
                targets: vec!["http://a:1/".into(), "gopher://b".into()],
                ..Overrides::default()
            })
            .expect_err("bad url");
        assert_eq!(err.key(), Some("--target"));
    }

    #[test]
    fn targets_replace_the_configured_ones() {
        let mut config = Config::default();
        config.targets.push(TargetConfig {
            name: "old".into(),
            url: "http://old:1/metrics".into(),
            bearer_token: Some("t".into()),
        });
        config
            .apply(Overrides {
                targets: vec!["http://10.0.0.1:8000".into(), "http://10.0.0.2:8000".into()],
                window: Some("5m".into()),
                body_limit: Some("16MiB".into()),
                ..Overrides::default()
            })
            .expect("valid");
        let names: Vec<&str> = config.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["10.0.0.1:8000", "10.0.0.2:8000"]);
        assert_eq!(config.targets[0].url, "http://10.0.0.1:8000/metrics");
        assert!(config.targets.iter().all(|t| t.bearer_token.is_none()));
        assert_eq!(config.window, QuantileWindow::M5);
        assert_eq!(config.body_limit, 16 * 1024 * 1024);
    }

    #[test]
    fn two_targets_on_one_host_and_port_stay_two_named_by_their_paths() {
        let mut config = Config::default();
        config
            .apply(Overrides {
                targets: vec![
                    "http://gw:8000/a/metrics".into(),
                    "http://gw:8000/b/metrics".into(),
                    "http://10.0.0.2:8000".into(),
                ],
                ..Overrides::default()
            })
            .expect("valid");
        let names: Vec<&str> = config.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["gw:8000/a/metrics", "gw:8000/b/metrics", "10.0.0.2:8000"]
        );
    }

    #[test]
    fn empty_overrides_change_nothing() {
        let mut config = Config::default();
        config.apply(Overrides::default()).expect("valid");
        assert_eq!(config, Config::default());
    }
}
