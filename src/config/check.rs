//! `kvtop check` / `kvtop config check`: what a config file resolved to, for a human.

use std::fmt;
use std::path::PathBuf;

use super::resolved::Config;
use super::units::{format_duration, format_size};

/// The result of checking a config file that loaded cleanly.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The file checked.
    pub path: PathBuf,
    /// What it resolved to (defaults included).
    pub config: Config,
    /// Every key the file sets, as key paths (`scrape.interval`, `targets[0].url`), sorted by
    /// key within each table.
    pub keys_set: Vec<String>,
}

impl CheckReport {
    /// Number of configured targets.
    pub fn target_count(&self) -> usize {
        self.config.targets.len()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        let d = format_duration;
        writeln!(f, "{}: OK", self.path.display())?;
        match c.targets.len() {
            0 => writeln!(
                f,
                "  targets: none (add [[targets]] or pass URLs on the command line)"
            )?,
            n => {
                writeln!(f, "  targets: {n}")?;
                for target in &c.targets {
                    let auth = if target.bearer_token.is_some() {
                        "  (bearer token)"
                    } else {
                        ""
                    };
                    writeln!(f, "    {}  {}{auth}", target.name, target.url)?;
                }
            }
        }
        if let Some(prom) = &c.prometheus {
            let auth = match &prom.auth {
                Some(super::PrometheusAuth::Bearer(_)) => ", bearer token",
                Some(super::PrometheusAuth::Basic { .. }) => ", basic auth",
                None => "",
            };
            let ca = if prom.ca.is_some() { ", custom CA" } else { "" };
            let gpus = if prom.dcgm { ", GPUs (DCGM)" } else { "" };
            writeln!(f, "  prometheus: {}{auth}{ca}{gpus}", prom.url)?;
        }
        writeln!(
            f,
            "  scrape:  interval {}, timeout {}, body limit {}, user agent {:?}",
            d(c.interval),
            d(c.timeout),
            format_size(c.body_limit as u64),
            c.user_agent
        )?;
        writeln!(
            f,
            "  display: theme {}, window {}, range {}, max {} fps, clipboard {}",
            c.theme,
            c.window.label(),
            d(c.range),
            c.max_fps,
            if c.clipboard { "on (OSC 52)" } else { "off" }
        )?;
        writeln!(
            f,
            "  history: full resolution {}, retention {}, coarse step {}",
            d(c.history.full_resolution),
            d(c.history.retention),
            d(c.history.coarse_step)
        )?;
        match &c.log_file {
            Some(file) => writeln!(
                f,
                "  log:     level {}, file {}",
                c.log_level,
                file.display()
            )?,
            None => writeln!(f, "  log:     level {}, no log file", c.log_level)?,
        }
        match &c.rules_file {
            Some(file) => writeln!(f, "  rules:   built-in, then {}", file.display())?,
            None => match super::paths::default_rules_path() {
                Some(default) => writeln!(
                    f,
                    "  rules:   built-in, then {} if it exists",
                    default.display()
                )?,
                None => writeln!(f, "  rules:   built-in")?,
            },
        }
        if self.keys_set.is_empty() {
            write!(f, "  the file sets nothing: all defaults")
        } else {
            write!(f, "  set in the file: {}", self.keys_set.join(", "))
        }
    }
}
