//! Configuration: the TOML file model, its validation, and the resolved `Config`.
//!
//! Flow: read the file (`load`) → TOML syntax check → deserialize into the file model
//! (`file`, unknown keys rejected, durations and sizes parsed) → `resolve` (defaults, targets,
//! tokens, paths) → `validate` (rules across settings) → `Config`. The CLI then calls
//! `Config::apply(Overrides)`, which re-validates. Every error names the file (with line:column
//! when known) or the command line, and the key.

mod check;
mod error;
mod file;
mod kubernetes;
mod overrides;
mod paths;
mod prometheus;
mod resolve;
mod resolved;
mod targets;
pub(crate) use kvtop_core::toml_location;
pub use kvtop_core::units;
mod validate;

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use check::CheckReport;
pub use error::{ConfigError, Origin};
pub use kubernetes::{ContextPolicy, KubeOverrides, KubernetesConfig};
pub use overrides::Overrides;
pub use paths::{
    CONFIG_ENV_VAR, default_config_path, default_rules_path, env_config_path, state_dir, themes_dir,
};
pub use prometheus::{DEFAULT_PROMETHEUS_BODY_LIMIT, PrometheusAuth, PrometheusConfig};
pub use resolved::{
    Config, DEFAULT_BODY_LIMIT, DEFAULT_INTERVAL, HistorySettings, LOG_FILE_NAME, MIN_INTERVAL,
    default_timeout, default_user_agent,
};
pub use targets::TargetConfig;
pub use toml_location::LineCol;

use file::ConfigFile;
use resolve::{ResolveContext, resolve};
use toml_location::{KeyPath, TomlError, TomlMap, line_col};

/// The commented default config file, as written by `init`.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../config/default.toml");

/// Loads the configuration.
///
/// `path` names a file explicitly; otherwise `KVTOP_CONFIG` does, otherwise the default
/// location is used. A missing file at the default location gives the defaults; a missing file
/// that was named (argument or `KVTOP_CONFIG`) is an error.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    let (path, named) = match path.map(Path::to_path_buf).or_else(env_config_path) {
        Some(path) => (path, true),
        None => match default_config_path() {
            Some(path) => (path, false),
            None => return Ok(Config::default()),
        },
    };
    match fs::read_to_string(&path) {
        Ok(text) => load_str(&path, &text),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !named => Ok(Config::default()),
        Err(e) => Err(read_error(path, e)),
    }
}

/// Resolves configuration text as if read from `path` (used in messages, and as the base for
/// relative paths in the file). Tokens are read from the process environment.
pub fn load_str(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let env = |name: &str| std::env::var_os(name);
    load_str_with_env(path, text, &env).map(|(config, _)| config)
}

/// Checks a config file: it must exist, resolve cleanly and name a theme that loads.
pub fn check_file(path: &Path) -> Result<CheckReport, ConfigError> {
    let text = fs::read_to_string(path).map_err(|e| read_error(path.to_path_buf(), e))?;
    let env = |name: &str| std::env::var_os(name);
    let (config, map) = load_str_with_env(path, &text, &env)?;
    if let Err(source) = crate::theme::load_theme(&config.theme, themes_dir().as_deref()) {
        let key = KeyPath::keys(&["display", "theme"]);
        return Err(ConfigError::Theme {
            origin: file_origin(path, &text, &map, &key),
            key: key.to_string(),
            source: Box::new(source),
        });
    }
    if let Err(err) = kvtop_core::rules::RuleSet::load(config.user_rules_path().as_deref()) {
        return Err(ConfigError::Rules {
            config: path.to_path_buf(),
            message: err.to_string(),
        });
    }
    Ok(CheckReport {
        path: path.to_path_buf(),
        config,
        keys_set: map.leaf_paths().iter().map(ToString::to_string).collect(),
    })
}

/// Writes `DEFAULT_CONFIG_TOML` to `path` (or the default location), creating its directory.
/// An existing file is only replaced when `force` is set. Returns the path written.
pub fn init(path: Option<&Path>, force: bool) -> Result<PathBuf, ConfigError> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => default_config_path().ok_or(ConfigError::NoConfigDir)?,
    };
    let write_error = |source| ConfigError::Write {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(write_error)?;
    }
    let mut options = fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(ConfigError::AlreadyExists { path });
        }
        Err(e) => return Err(write_error(e)),
    };
    file.write_all(DEFAULT_CONFIG_TOML.as_bytes())
        .and_then(|()| file.flush())
        .map_err(write_error)?;
    Ok(path)
}

fn read_error(path: PathBuf, source: io::Error) -> ConfigError {
    if source.kind() == io::ErrorKind::NotFound {
        ConfigError::NotFound { path }
    } else {
        ConfigError::Read { path, source }
    }
}

/// The whole pipeline, with the environment injected; also returns the key map for reports.
fn load_str_with_env<'t>(
    path: &Path,
    text: &'t str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<(Config, TomlMap<'t>), ConfigError> {
    let (file, map) = toml_location::deserialize::<ConfigFile>(text).map_err(|e| match e {
        TomlError::Syntax {
            at,
            message,
            context,
        } => ConfigError::Syntax {
            path: path.to_path_buf(),
            at,
            message,
            context,
        },
        TomlError::Invalid { at, key, message } => ConfigError::Invalid {
            origin: Origin::File {
                path: path.to_path_buf(),
                at,
            },
            key: key.describe(),
            message,
        },
    })?;
    let cx = ResolveContext {
        source: Some(path),
        env,
    };
    let config = resolve(file, &cx).map_err(|problem| {
        let key = problem.setting.key_path();
        ConfigError::Invalid {
            origin: file_origin(path, text, &map, &key),
            key: key.to_string(),
            message: problem.message,
        }
    })?;
    Ok((config, map))
}

fn file_origin(path: &Path, text: &str, map: &TomlMap<'_>, key: &KeyPath) -> Origin {
    Origin::File {
        path: path.to_path_buf(),
        at: map.span_of(key).map(|span| line_col(text, span.start)),
    }
}

#[cfg(test)]
mod tests;
