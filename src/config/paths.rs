//! Where kvtop keeps its files, following the platform's conventions through `directories`
//! (on Linux: `$XDG_CONFIG_HOME/kvtop`, `$XDG_STATE_HOME/kvtop`, with the usual fallbacks).

use std::path::{Path, PathBuf};

use directories::{BaseDirs, ProjectDirs};

/// Environment variable naming the config file, overriding the default location.
pub const CONFIG_ENV_VAR: &str = "KVTOP_CONFIG";

fn project_dirs() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "kvtop")
}

/// The config file named by `KVTOP_CONFIG`, when that is set and non-empty.
pub fn env_config_path() -> Option<PathBuf> {
    std::env::var_os(CONFIG_ENV_VAR)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The config file to use when none is given: `KVTOP_CONFIG`, else `<config_dir>/config.toml`.
/// `None` when there is no home directory to derive it from.
pub fn default_config_path() -> Option<PathBuf> {
    env_config_path().or_else(|| project_dirs().map(|dirs| dirs.config_dir().join("config.toml")))
}

/// The directory for user themes: `<config_dir>/themes/`.
pub fn themes_dir() -> Option<PathBuf> {
    project_dirs().map(|dirs| dirs.config_dir().join("themes"))
}

/// The default user rules file: `<config_dir>/rules.toml` (used only when it exists).
pub fn default_rules_path() -> Option<PathBuf> {
    project_dirs().map(|dirs| dirs.config_dir().join("rules.toml"))
}

/// The directory for logs and the audit log: the platform's state directory, or the local data
/// directory on platforms without one.
pub fn state_dir() -> Option<PathBuf> {
    let dirs = project_dirs()?;
    Some(
        dirs.state_dir()
            .unwrap_or_else(|| dirs.data_local_dir())
            .to_path_buf(),
    )
}

/// Expands a path written in a config file: `~` and `~/…` from the home directory; a relative
/// path is taken relative to `base_dir` (the config file's directory) when there is one.
pub(crate) fn expand_path(text: &str, base_dir: Option<&Path>) -> PathBuf {
    let home = || BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    if text == "~" {
        if let Some(home) = home() {
            return home;
        }
    } else if let Some(rest) = text.strip_prefix("~/") {
        if let Some(home) = home() {
            return home.join(rest);
        }
    }
    let path = PathBuf::from(text);
    match base_dir {
        Some(base) if path.is_relative() => base.join(path),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_follow_the_config_file() {
        let base = Path::new("/etc/kvtop");
        assert_eq!(
            expand_path("token", Some(base)),
            PathBuf::from("/etc/kvtop/token")
        );
        assert_eq!(
            expand_path("/run/secrets/token", Some(base)),
            PathBuf::from("/run/secrets/token")
        );
        assert_eq!(expand_path("token", None), PathBuf::from("token"));
    }

    #[test]
    fn tilde_is_the_home_directory() {
        if let Some(home) = BaseDirs::new().map(|d| d.home_dir().to_path_buf()) {
            assert_eq!(expand_path("~/t", Some(Path::new("/x"))), home.join("t"));
            assert_eq!(expand_path("~", None), home);
        }
        assert_eq!(
            expand_path("~user/t", Some(Path::new("/x"))),
            PathBuf::from("/x/~user/t")
        );
    }

    #[test]
    fn config_dirs_end_in_kvtop() {
        // Only meaningful where a home directory exists; `directories` decides the rest.
        if let Some(dir) = themes_dir() {
            assert!(dir.ends_with("kvtop/themes"), "{}", dir.display());
        }
        if let Some(dir) = state_dir() {
            assert!(dir.ends_with("kvtop"), "{}", dir.display());
        }
    }
}
