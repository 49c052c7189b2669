//! File model → resolved `Config`: defaults filled in, targets checked, tokens read, paths
//! expanded, then the cross-setting rules checked.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::file::{ConfigFile, TargetEntry};
use super::paths::expand_path;
use super::prometheus::resolve_prometheus;
use super::resolved::{Config, TimeoutProvenance, default_timeout};
use super::targets::{TargetConfig, TokenSource, check_url, read_token};
use super::validate::{Problem, Setting, TargetField, validate};
use kvtop_core::fleet::QuantileWindow;

/// What resolution needs from outside the file.
pub(crate) struct ResolveContext<'a> {
    /// The file's path (kept as `Config::source`); its directory anchors relative paths.
    pub source: Option<&'a Path>,
    /// Environment lookup (injected so tests need not touch the process environment).
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl ResolveContext<'_> {
    fn base_dir(&self) -> Option<&Path> {
        self.source.and_then(Path::parent)
    }
}

/// Resolves a parsed file. Problems name the offending setting; the caller adds the location.
pub(crate) fn resolve(file: ConfigFile, cx: &ResolveContext<'_>) -> Result<Config, Problem> {
    let mut config = Config {
        source: cx.source.map(Path::to_path_buf),
        ..Config::default()
    };

    let scrape = file.scrape;
    if let Some(interval) = scrape.interval {
        config.interval = interval.0;
    }
    config.timeout = match scrape.timeout {
        Some(timeout) => {
            config.timeout_provenance = TimeoutProvenance { derived: false };
            timeout.0
        }
        None => default_timeout(config.interval),
    };
    if let Some(limit) = scrape.body_limit {
        config.body_limit = usize::try_from(limit.0)
            .map_err(|_| Problem::new(Setting::BodyLimit, "is too large for this platform"))?;
    }
    if let Some(user_agent) = scrape.user_agent {
        config.user_agent = user_agent;
    }
    if let Some(max) = scrape.max_engines {
        config.payload_limits.max_engines = max;
    }
    if let Some(max) = scrape.max_series {
        config.payload_limits.max_series = max;
    }

    config.targets = file
        .targets
        .into_iter()
        .enumerate()
        .map(|(index, entry)| resolve_target(index, entry, cx))
        .collect::<Result<_, _>>()?;

    let display = file.display;
    if let Some(theme) = display.theme {
        config.theme = theme;
    }
    if let Some(window) = display.window {
        config.window = parse_window(&window).map_err(|m| Problem::new(Setting::Window, m))?;
    }
    if let Some(range) = display.range {
        config.range = range.0;
    }
    if let Some(max_fps) = display.max_fps {
        config.max_fps = max_fps;
    }
    if let Some(clipboard) = display.clipboard {
        config.clipboard = clipboard;
    }
    if let Some(span) = display.snapshot_span {
        config.snapshot_span = span.0;
    }
    if let Some(columns) = display.columns {
        config.columns =
            Some(parse_columns(&columns).map_err(|m| Problem::new(Setting::Columns, m))?);
    }

    let history = file.history;
    if let Some(full) = history.full_resolution {
        config.history.full_resolution = full.0;
    }
    if let Some(retention) = history.retention {
        config.history.retention = retention.0;
    }
    if let Some(step) = history.coarse_step {
        config.history.coarse_step = step.0;
    }

    let log = file.log;
    if let Some(level) = log.level {
        config.log_level = level;
    }
    if let Some(file) = log.file {
        if file.trim().is_empty() {
            return Err(Problem::new(Setting::LogFile, "must not be empty"));
        }
        config.log_file = Some(expand_path(&file, cx.base_dir()));
    }

    let record = file.record;
    if let Some(path) = record.file.filter(|f| !f.trim().is_empty()) {
        config.record.file = Some(expand_path(&path, cx.base_dir()));
    }
    if let Some(size) = record.max_size {
        config.record.max_bytes = size.0.max(1 << 20);
    }
    if let Some(age) = record.max_age {
        config.record.max_age = age.0.max(Duration::from_secs(60));
    }
    if let Some(keep) = record.keep {
        config.record.keep = keep.min(1000);
    }

    if let Some(file) = file.rules.file {
        if file.trim().is_empty() {
            return Err(Problem::new(Setting::RulesFile, "must not be empty"));
        }
        config.rules_file = Some(expand_path(&file, cx.base_dir()));
    }

    if let Some(section) = file.prometheus {
        config.prometheus = Some(
            resolve_prometheus(section, cx.base_dir(), cx.env)
                .map_err(|(key, message)| Problem::new(Setting::Prometheus(key), message))?,
        );
    }

    config.kubernetes = super::kubernetes::resolve(file.kubernetes, cx.base_dir())?;

    validate(&config, &|setting| setting.key_path().to_string())?;
    Ok(config)
}

/// Parses a quantile window name.
pub(crate) fn parse_window(text: &str) -> Result<QuantileWindow, String> {
    QuantileWindow::parse(text.trim())
        .ok_or_else(|| format!("{text:?} is not a window (use 15s, 1m or 5m)"))
}

fn resolve_target(
    index: usize,
    entry: TargetEntry,
    cx: &ResolveContext<'_>,
) -> Result<TargetConfig, Problem> {
    let field = |field| Setting::Target(index, field);
    let checked = check_url(&entry.url).map_err(|m| Problem::new(field(TargetField::Url), m))?;
    let name = match entry.name {
        Some(name) if name.trim().is_empty() => {
            return Err(Problem::new(field(TargetField::Name), "must not be empty"));
        }
        Some(name) => name.trim().to_owned(),
        None => checked.default_name,
    };
    let token_source = match (entry.bearer_token_file, entry.bearer_token_env) {
        (Some(_), Some(_)) => {
            return Err(Problem::new(
                field(TargetField::BearerTokenEnv),
                "set either bearer_token_file or bearer_token_env, not both",
            ));
        }
        (Some(file), None) => Some((
            TokenSource::File(expand_path(&file, cx.base_dir())),
            TargetField::BearerTokenFile,
        )),
        (None, Some(var)) => Some((TokenSource::Env(var), TargetField::BearerTokenEnv)),
        (None, None) => None,
    };
    let bearer_token = match token_source {
        Some((source, token_field)) => {
            Some(read_token(&source, cx.env).map_err(|m| Problem::new(field(token_field), m))?)
        }
        None => None,
    };
    Ok(TargetConfig {
        name,
        url: checked.url,
        bearer_token,
    })
}

/// Most columns a configured set may name: more never fit beside the engine's name.
const MAX_COLUMNS: usize = 16;

/// `[display] columns`: signal names, each once.
fn parse_columns(names: &[String]) -> Result<Vec<kvtop_core::signals::Signal>, String> {
    if names.is_empty() {
        return Err("name at least one signal (see `kvtop rules signals`)".into());
    }
    if names.len() > MAX_COLUMNS {
        return Err(format!(
            "at most {MAX_COLUMNS} columns, not {}",
            names.len()
        ));
    }
    let mut signals = Vec::with_capacity(names.len());
    for name in names {
        let Some(def) = kvtop_core::signals::signal_named(name) else {
            return Err(format!(
                "{name:?} is not a metric signal (see `kvtop rules signals`)"
            ));
        };
        if signals.contains(&def.id) {
            return Err(format!("{name:?} is named twice"));
        }
        signals.push(def.id);
    }
    Ok(signals)
}
