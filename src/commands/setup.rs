//! Shared start-up steps: config with command-line overrides, theme, logging, runtime.

use crate::cli::GlobalArgs;
use crate::config::{self, Config, Overrides};
use crate::logging::{self, LogSink};
use crate::theme::{self, Theme};

/// The resolved config, or the defaults plus a message saying what was wrong with the file.
/// A broken config file must not stop the console: the message is shown on screen.
pub(crate) struct Loaded {
    pub config: Config,
    pub problems: Vec<String>,
}

/// The command-line flags that override the config file's settings.
pub(crate) fn overrides(global: &GlobalArgs) -> Overrides {
    Overrides {
        targets: global.targets.clone(),
        interval: global.interval.clone(),
        timeout: global.timeout.clone(),
        window: global.window.clone(),
        theme: global.theme.clone(),
        body_limit: global.body_limit.clone(),
        log_level: global.log_level.clone(),
        prometheus: global.prometheus.clone(),
    }
}

/// Load the config file and apply the command-line flags.
pub(crate) fn load_config(global: &GlobalArgs) -> Loaded {
    let mut problems = Vec::new();
    let mut config = match config::load(global.config.as_deref()) {
        Ok(config) => config,
        Err(err) => {
            problems.push(format!("config ignored: {err}"));
            Config::default()
        }
    };
    if let Err(err) = config.apply(overrides(global)) {
        problems.push(err.to_string());
    }
    if let Some(path) = &global.record {
        config.record.file = Some(path.clone());
    }
    Loaded { config, problems }
}

/// The theme to draw with: `NO_COLOR` forces mono; a theme that fails to load falls back to
/// the built-in default with a message.
pub fn load_theme(config: &Config, problems: &mut Vec<String>) -> Theme {
    let name = if theme::no_color_requested() {
        "mono"
    } else {
        config.theme.as_str()
    };
    match theme::load_theme(name, config::themes_dir().as_deref()) {
        Ok(theme) => theme,
        Err(err) => {
            problems.push(format!("theme: {err}"));
            if name == "mono" {
                Theme::fallback_mono()
            } else {
                Theme::fallback()
            }
        }
    }
}

/// Log to the configured file (default: the state directory). Problems are returned as
/// messages, never printed over the UI.
pub(crate) fn start_logging(config: &Config, problems: &mut Vec<String>) {
    let path = config
        .log_file
        .clone()
        .or_else(|| config::state_dir().map(|d| d.join(config::LOG_FILE_NAME)));
    let result = match &path {
        Some(path) => logging::init(LogSink::File(path), &config.log_level),
        None => Ok(None),
    };
    if let Err(message) = result {
        problems.push(format!("logging off: {message}"));
    }
}

/// The runtime of every command but the simulator: one thread runs the event loop, every
/// scrape and every watch, so none of them wakes another thread to hand over what it got (on
/// two worker threads, with the event loop on a third, the console used about 7 % more CPU at
/// 8 engines, and two more threads' stacks and malloc arenas).
/// What takes long goes to the blocking pool (large payloads and Prometheus answers, name
/// resolution): a few threads keep up with 2,000 targets, where tokio's default (512) would
/// let a burst of slow bodies spawn hundreds of threads, each with its own stack.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(8)
        .thread_name("kvtop")
        .enable_all()
        .build()
}

/// The simulator's runtime: it renders every simulated engine's payload, so two worker
/// threads share that work on a large fleet.
pub fn server_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(8)
        .thread_name("kvtop-sim")
        .enable_all()
        .build()
}

/// Everything a console command needs once the config is known.
pub(crate) struct Session {
    pub config: Config,
    pub theme: Theme,
    /// Problems worked around so far, for the footer.
    pub problems: Vec<String>,
    pub runtime: tokio::runtime::Runtime,
}

impl Session {
    /// Start logging, load the theme and build the runtime. Fails (with a message already
    /// printed) only when no runtime can be created.
    pub fn start(loaded: Loaded) -> Result<Session, std::process::ExitCode> {
        let Loaded {
            config,
            mut problems,
        } = loaded;
        start_logging(&config, &mut problems);
        let theme = load_theme(&config, &mut problems);
        match runtime() {
            Ok(runtime) => Ok(Session {
                config,
                theme,
                problems,
                runtime,
            }),
            Err(err) => {
                super::err(&format!("kvtop: cannot start the runtime: {err}"));
                Err(std::process::ExitCode::from(1))
            }
        }
    }
}
