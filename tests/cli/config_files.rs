//! Config and theme files as a user meets them: the shipped default config, the embedded
//! themes, user files on disk, and the errors for broken ones.
//!
//! Tests that need a particular process environment (default config location, a token in an
//! environment variable) re-run themselves in a child process with that environment, so this
//! process's environment is never modified.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kvtop::config::{self, CheckReport, Config, ConfigError, DEFAULT_CONFIG_TOML, Overrides};
use kvtop::theme::{self, Theme, ThemeError};
use kvtop_core::fleet::QuantileWindow;
use ratatui::style::{Color, Modifier, Style};

/// Marks a child process started by `run_in_child`; holds the name of the test to run for real.
const CHILD_MARKER: &str = "KVTOP_CONFIG_FILES_TEST_CHILD";

/// True when this process is the child started for `test`.
fn is_child_for(test: &str) -> bool {
    std::env::var(CHILD_MARKER).is_ok_and(|name| name == test)
}

/// Re-runs `test` from this test binary in a child process with `envs` set (and
/// `KVTOP_CONFIG` removed unless given), and fails if the child fails.
fn run_in_child(test: &str, envs: &[(&str, &OsStr)]) {
    let exe = std::env::current_exe().expect("test binary path");
    // The harness names tests by their path below the binary's root (`config_files::…`).
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let full_name = format!("{module}::{test}");
    let mut command = Command::new(exe);
    command
        .args(["--exact", &full_name, "--nocapture", "--test-threads=1"])
        .env(CHILD_MARKER, test)
        .env_remove("KVTOP_CONFIG");
    for (name, value) in envs {
        command.env(name, value);
    }
    let output = command.output().expect("run child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child run of {test} with {envs:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Guard against the filter matching nothing, which would pass vacuously.
    assert!(
        stdout.contains("1 passed"),
        "child did not run {test}:\n{stdout}"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test file");
    path
}

fn load_text(text: &str) -> (tempfile::TempDir, PathBuf, Result<Config, ConfigError>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), "config.toml", text);
    let result = config::load(Some(&path));
    (dir, path, result)
}

fn load_err(text: &str) -> (PathBuf, String) {
    let (_dir, path, result) = load_text(text);
    let err = result.expect_err("config should be rejected");
    (path, err.to_string())
}

fn without_source(mut config: Config) -> Config {
    config.source = None;
    config
}

/// The shipped default config with every `# key = value` line uncommented.
fn uncommented_default() -> (String, usize) {
    let mut uncommented = 0;
    let text = DEFAULT_CONFIG_TOML
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if is_setting_line(rest) => {
                uncommented += 1;
                rest.to_owned()
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    (text, uncommented)
}

fn is_setting_line(text: &str) -> bool {
    text.split_once(" = ").is_some_and(|(key, _)| {
        !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

// ---------------------------------------------------------------------------------------------
// The shipped default config

#[test]
fn default_config_file_resolves_to_the_defaults() {
    let (_dir, path, result) = load_text(DEFAULT_CONFIG_TOML);
    let config = result.expect("the shipped file loads");
    assert_eq!(config.source.as_deref(), Some(path.as_path()));
    assert_eq!(without_source(config), Config::default());
}

#[test]
fn default_config_file_uncommented_still_resolves_to_the_defaults() {
    let (text, uncommented) = uncommented_default();
    // scrape: interval, timeout, body_limit; display: theme, window, range, max_fps, clipboard;
    // history: full_resolution, retention, coarse_step; log: level; kubernetes: enabled,
    // all_namespaces, selectors, metrics_path, scrape_via, poll_interval, api_timeout,
    // exec_timeout, log_lines, event_lines, min_ready (routing_label has no default: routing is
    // derived); record: max_size, max_age, keep (its file has no default: nothing is recorded).
    assert_eq!(uncommented, 26, "setting lines uncommented:\n{text}");
    let (_dir, _path, result) = load_text(&text);
    let config = result.expect("the uncommented file loads");
    assert_eq!(without_source(config), Config::default());
}

#[test]
fn default_config_file_documents_every_setting() {
    let keys = [
        "interval",
        "timeout",
        "body_limit",
        "user_agent",
        "url",
        "name",
        "bearer_token_file",
        "bearer_token_env",
        "theme",
        "window",
        "range",
        "max_fps",
        "clipboard",
        "full_resolution",
        "retention",
        "coarse_step",
        "level",
        "file",
        "enabled",
        "kubeconfig",
        "contexts",
        "namespace",
        "all_namespaces",
        "selectors",
        "metrics_port",
        "metrics_path",
        "scrape_via",
        "routing_label",
        "poll_interval",
        "api_timeout",
        "exec_timeout",
        "log_lines",
        "event_lines",
        "min_ready",
        "read_only",
        "protected",
    ];
    for key in keys {
        assert!(
            DEFAULT_CONFIG_TOML.contains(&format!("{key} = ")),
            "config/default.toml does not mention {key}"
        );
    }
    for section in [
        "[scrape]",
        "[[targets]]",
        "[display]",
        "[history]",
        "[log]",
        "[kubernetes]",
    ] {
        assert!(DEFAULT_CONFIG_TOML.contains(section), "{section}");
    }
}

#[test]
fn default_config_values_are_the_documented_ones() {
    let config = Config::default();
    assert_eq!(config.interval, Duration::from_secs(1));
    assert_eq!(config.timeout, Duration::from_millis(800));
    assert_eq!(config.body_limit, 8 * 1024 * 1024);
    assert_eq!(config.theme, "default");
    assert_eq!(config.window, QuantileWindow::M1);
    assert_eq!(config.range, Duration::from_secs(5 * 60));
    assert_eq!(config.max_fps, 10);
    assert_eq!(config.history.full_resolution, Duration::from_secs(10 * 60));
    assert_eq!(config.history.retention, Duration::from_secs(60 * 60));
    assert_eq!(config.history.coarse_step, Duration::from_secs(10));
    assert_eq!(config.log_level, "info");
}

// ---------------------------------------------------------------------------------------------
// Config errors

#[test]
fn unknown_key_names_the_key_the_file_and_the_expected_keys() {
    let (path, text) = load_err("[scrape]\ninterval = \"1s\"\nintervall = \"2s\"\n");
    assert!(
        text.starts_with(&format!("{}:3:1: scrape.intervall: ", path.display())),
        "{text}"
    );
    assert!(text.contains("unknown field `intervall`"), "{text}");
    for expected in ["interval", "timeout", "body_limit", "user_agent"] {
        assert!(text.contains(&format!("`{expected}`")), "{text}");
    }
}

#[test]
fn unknown_key_in_a_target_names_the_target() {
    let (path, text) = load_err("[[targets]]\nurl = \"http://a:8000\"\ntoken = \"x\"\n");
    assert!(
        text.starts_with(&format!("{}:3:1: targets[0].token: ", path.display())),
        "{text}"
    );
    assert!(text.contains("`bearer_token_file`"), "{text}");
}

#[test]
fn bad_durations_name_file_and_key() {
    let cases = [
        (
            "[scrape]\ninterval = \"5x\"\n",
            "scrape.interval",
            "\"5x\" is not a duration",
        ),
        (
            "[scrape]\ntimeout = \"-1s\"\n",
            "scrape.timeout",
            "\"-1s\" is not a duration",
        ),
        (
            "[display]\nrange = \"five minutes\"\n",
            "display.range",
            "is not a duration",
        ),
        (
            "[history]\nretention = 3600\n",
            "history.retention",
            "add a unit",
        ),
        (
            "[history]\ncoarse_step = true\n",
            "history.coarse_step",
            "a duration string",
        ),
    ];
    for (toml, key, message) in cases {
        let (path, text) = load_err(toml);
        assert!(
            text.starts_with(&format!("{}:2:", path.display())),
            "{toml}: {text}"
        );
        assert!(text.contains(&format!(": {key}: ")), "{toml}: {text}");
        assert!(text.contains(message), "{toml}: {text}");
    }
}

#[test]
fn interval_below_the_minimum_is_rejected() {
    let (path, text) = load_err("[scrape]\ninterval = \"100ms\"\n");
    assert_eq!(
        text,
        format!(
            "{}:2:12: scrape.interval: 100ms is below the minimum of 250ms",
            path.display()
        )
    );
}

#[test]
fn timeout_longer_than_the_interval_is_rejected() {
    let (path, text) = load_err("[scrape]\ninterval = \"500ms\"\ntimeout = \"600ms\"\n");
    assert_eq!(
        text,
        format!(
            "{}:3:11: scrape.timeout: 600ms is longer than scrape.interval (500ms); \
             the timeout must be at most the interval",
            path.display()
        )
    );
}

#[test]
fn broken_toml_shows_line_and_column() {
    let (_dir, path, result) =
        load_text("[scrape]\ninterval = \"1s\"\n[display\ntheme = \"light\"\n");
    let err = result.expect_err("syntax error");
    let ConfigError::Syntax { at, .. } = &err else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert_eq!(at.line, 3);
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}:3:", path.display())),
        "{text}"
    );
    assert!(text.contains("invalid TOML"), "{text}");
    assert!(text.contains("3 | [display"), "{text}");
}

#[test]
fn bad_target_urls_are_rejected() {
    let (_, text) = load_err("[[targets]]\nurl = \"ftp://a/metrics\"\n");
    assert!(text.contains("targets[0].url: "), "{text}");
    assert!(text.contains("http or https"), "{text}");
    let (_, text) = load_err("[[targets]]\nurl = \"http://u:secret@a:8000/\"\n");
    assert!(text.contains("targets[0].url: "), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

#[test]
fn duplicate_target_names_are_rejected() {
    let (_, text) = load_err(
        "[[targets]]\nurl = \"http://a:8000/metrics\"\n\n[[targets]]\nurl = \"http://a:8000/other\"\n",
    );
    assert!(text.contains("targets[1].name: \"a:8000\""), "{text}");
}

#[test]
fn unreadable_config_files_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = config::load(Some(dir.path())).expect_err("a directory is not a config file");
    assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    let binary = dir.path().join("binary.toml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x41]).expect("write");
    let err = config::load(Some(&binary)).expect_err("not UTF-8");
    assert!(err.to_string().contains("binary.toml"), "{err}");
}

#[test]
fn explicitly_named_missing_file_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope.toml");
    let err = config::load(Some(&missing)).expect_err("missing");
    assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("nope.toml"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Bearer tokens

#[test]
fn bearer_token_from_a_file_relative_to_the_config() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "engine.token", "tok-from-file-42\n");
    let path = write(
        dir.path(),
        "config.toml",
        "[[targets]]\nurl = \"http://10.1.2.3:8000\"\nbearer_token_file = \"engine.token\"\n",
    );
    let config = config::load(Some(&path)).expect("loads");
    let target = config.targets.first().expect("one target");
    assert_eq!(target.bearer_token.as_deref(), Some("tok-from-file-42"));
    assert_eq!(target.name, "10.1.2.3:8000");
    let debug = format!("{config:?}");
    assert!(!debug.contains("tok-from-file-42"), "token leaked: {debug}");
    let report = config::check_file(&path).expect("checks").to_string();
    assert!(
        !report.contains("tok-from-file-42"),
        "token leaked: {report}"
    );
    assert!(report.contains("(bearer token)"), "{report}");
}

#[test]
fn missing_token_file_names_the_file() {
    let (path, text) = load_err(
        "[[targets]]\nurl = \"http://a:8000\"\nbearer_token_file = \"/nonexistent/kvtop/token\"\n",
    );
    assert!(
        text.starts_with(&format!(
            "{}:3:21: targets[0].bearer_token_file: cannot read token file /nonexistent/kvtop/token",
            path.display()
        )),
        "{text}"
    );
}

/// Two targets: the first reads its token from `var`, the second from `var_UNSET`.
fn env_token_config(var: &str) -> String {
    format!(
        "[[targets]]\nurl = \"http://a:8000\"\nbearer_token_env = \"{var}\"\n\n\
         [[targets]]\nurl = \"http://b:8000\"\nbearer_token_env = \"{var}_UNSET\"\n"
    )
}

#[test]
fn bearer_token_from_an_environment_variable() {
    const TEST: &str = "bearer_token_from_an_environment_variable";
    if is_child_for(TEST) {
        let var = std::env::var("KVTOP_TEST_TOKEN_VAR").expect("set by the parent");
        let dir = tempfile::tempdir().expect("temp dir");
        let text = env_token_config(&var);
        let path = write(dir.path(), "config.toml", &text);
        let err = config::load(Some(&path)).expect_err("second variable is unset");
        assert_eq!(
            err.to_string(),
            format!(
                "{}:7:20: targets[1].bearer_token_env: environment variable {var}_UNSET \
                 is not set",
                path.display()
            )
        );
        let first_target_only: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
        let path = write(dir.path(), "config.toml", &first_target_only);
        let config = config::load(Some(&path)).expect("loads");
        assert_eq!(
            config
                .targets
                .first()
                .and_then(|t| t.bearer_token.as_deref()),
            Some("tok-from-env-7")
        );
        assert!(!format!("{config:?}").contains("tok-from-env-7"));
        return;
    }
    let var = format!("KVTOP_TEST_TOKEN_{}", std::process::id());
    run_in_child(
        TEST,
        &[
            ("KVTOP_TEST_TOKEN_VAR", OsStr::new(&var)),
            (&var, OsStr::new("tok-from-env-7")),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Default location, init, check

#[test]
fn missing_file_at_the_default_location_gives_defaults() {
    const TEST: &str = "missing_file_at_the_default_location_gives_defaults";
    if is_child_for(TEST) {
        let default_path = config::default_config_path().expect("a default path");
        let config_home = std::env::var_os("XDG_CONFIG_HOME").expect("set by the parent");
        assert!(
            default_path.starts_with(&config_home),
            "{} is not under {config_home:?}",
            default_path.display()
        );
        assert!(!default_path.exists());
        let config = config::load(None).expect("defaults");
        assert_eq!(config, Config::default());
        return;
    }
    let home = tempfile::tempdir().expect("temp dir");
    let config_home = home.path().join("config");
    run_in_child(
        TEST,
        &[
            ("HOME", home.path().as_os_str()),
            ("XDG_CONFIG_HOME", config_home.as_os_str()),
        ],
    );
}

#[test]
fn kvtop_config_names_the_file_and_must_exist() {
    const TEST: &str = "kvtop_config_names_the_file_and_must_exist";
    if is_child_for(TEST) {
        let named = PathBuf::from(std::env::var_os("KVTOP_CONFIG").expect("set by the parent"));
        assert_eq!(config::default_config_path(), Some(named.clone()));
        let err = config::load(None).expect_err("named file is missing");
        assert!(
            matches!(err, ConfigError::NotFound { ref path } if *path == named),
            "{err:?}"
        );
        std::fs::write(&named, "[display]\ntheme = \"mono\"\n").expect("write");
        let config = config::load(None).expect("loads");
        assert_eq!(config.theme, "mono");
        assert_eq!(config.source, Some(named));
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let named = dir.path().join("named.toml");
    run_in_child(TEST, &[("KVTOP_CONFIG", named.as_os_str())]);
}

#[test]
fn init_writes_the_default_file_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested/dir/config.toml");
    let written = config::init(Some(&path), false).expect("first init");
    assert_eq!(written, path);
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        DEFAULT_CONFIG_TOML
    );

    std::fs::write(&path, "# my edits\n").expect("edit");
    let err = config::init(Some(&path), false).expect_err("exists");
    assert!(matches!(err, ConfigError::AlreadyExists { .. }), "{err:?}");
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "# my edits\n"
    );

    config::init(Some(&path), true).expect("forced init");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        DEFAULT_CONFIG_TOML
    );
}

#[test]
fn check_file_reports_what_it_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        dir.path(),
        "config.toml",
        "[scrape]\ninterval = \"500ms\"\n\n\
         [[targets]]\nurl = \"http://10.0.0.5:8000\"\nname = \"llama-0\"\n\n\
         [[targets]]\nurl = \"http://10.0.0.6:8000/metrics\"\n\n\
         [display]\ntheme = \"light\"\n",
    );
    let report: CheckReport = config::check_file(&path).expect("checks");
    assert_eq!(report.path, path);
    assert_eq!(report.target_count(), 2);
    assert_eq!(report.config.interval, Duration::from_millis(500));
    assert_eq!(report.config.timeout, Duration::from_millis(400));
    assert_eq!(report.config.theme, "light");
    assert_eq!(
        report.keys_set,
        [
            "display.theme",
            "scrape.interval",
            "targets[0].name",
            "targets[0].url",
            "targets[1].url",
        ]
    );
    let text = report.to_string();
    for expected in [
        "OK",
        "targets: 2",
        "llama-0  http://10.0.0.5:8000/metrics",
        "10.0.0.6:8000  http://10.0.0.6:8000/metrics",
        "interval 500ms, timeout 400ms, body limit 8MiB",
        "theme light, window 1m, range 5m, max 10 fps, clipboard on (OSC 52)",
        "full resolution 10m, retention 1h, coarse step 10s",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn check_file_rejects_an_unknown_theme() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        dir.path(),
        "config.toml",
        "[display]\ntheme = \"no-such-theme-kvtop-test\"\n",
    );
    let err = config::check_file(&path).expect_err("unknown theme");
    assert!(matches!(err, ConfigError::Theme { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{}:2:9: display.theme: unknown theme",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("high-contrast"), "{text}");
}

#[test]
fn check_file_of_a_missing_file_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = config::check_file(&dir.path().join("absent.toml")).expect_err("missing");
    assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");
}

#[test]
fn command_line_overrides_apply_over_the_file() {
    let (_dir, _path, result) =
        load_text("[scrape]\ninterval = \"2s\"\n[display]\nwindow = \"5m\"\n");
    let mut config = result.expect("loads");
    assert_eq!(config.timeout, Duration::from_millis(1_600));
    config
        .apply(Overrides {
            interval: Some("1s".into()),
            theme: Some("mono".into()),
            targets: vec!["http://127.0.0.1:9400".into()],
            ..Overrides::default()
        })
        .expect("valid overrides");
    assert_eq!(config.interval, Duration::from_secs(1));
    assert_eq!(config.timeout, Duration::from_millis(800));
    assert_eq!(config.window, QuantileWindow::M5);
    assert_eq!(config.theme, "mono");
    assert_eq!(config.targets.len(), 1);
    let err = config
        .apply(Overrides {
            timeout: Some("3s".into()),
            ..Overrides::default()
        })
        .expect_err("timeout > interval");
    assert_eq!(err.key(), Some("--timeout"));
}

// ---------------------------------------------------------------------------------------------
// Themes

fn all_slots(theme: &Theme) -> Vec<(&'static str, Style)> {
    let mut slots = vec![
        ("base", theme.base),
        ("header", theme.header),
        ("title", theme.title),
        ("border", theme.border),
        ("selected", theme.selected),
        ("table_header", theme.table_header),
        ("dim", theme.dim),
        ("ok", theme.ok),
        ("info", theme.info),
        ("warn", theme.warn),
        ("crit", theme.crit),
        ("stale", theme.stale),
        ("down", theme.down),
        ("bar_low", theme.bar_low),
        ("bar_mid", theme.bar_mid),
        ("bar_high", theme.bar_high),
        ("key", theme.key),
        ("error", theme.error),
    ];
    for (i, style) in theme.series.iter().enumerate() {
        slots.push((["series1", "series2", "series3", "series4"][i], *style));
    }
    slots
}

fn builtin(name: &str) -> Theme {
    theme::load_theme(name, None).unwrap_or_else(|e| panic!("built-in {name}: {e}"))
}

#[test]
fn every_builtin_theme_loads_under_its_name() {
    assert_eq!(
        theme::builtin_theme_names(),
        ["default", "light", "high-contrast", "mono"]
    );
    for name in theme::builtin_theme_names() {
        assert_eq!(builtin(name).name, *name);
    }
    assert_eq!(builtin("default"), Theme::fallback());
    assert_eq!(builtin("mono"), Theme::fallback_mono());
}

#[test]
fn builtin_themes_all_differ() {
    let names = theme::builtin_theme_names();
    for (i, a) in names.iter().enumerate() {
        for b in names.iter().skip(i + 1) {
            let (ta, tb) = (builtin(a), builtin(b));
            assert_ne!(
                all_slots(&ta),
                all_slots(&tb),
                "{a} and {b} have the same styles"
            );
        }
    }
}

#[test]
fn mono_has_no_colour_anywhere() {
    let mono = builtin("mono");
    assert!(mono.monochrome);
    for (slot, style) in all_slots(&mono) {
        assert_eq!(style.fg, None, "mono {slot} has a foreground colour");
        assert_eq!(style.bg, None, "mono {slot} has a background colour");
    }
    // Levels stay distinguishable without colour.
    assert_ne!(mono.ok, mono.crit);
    assert_ne!(mono.bar_low, mono.bar_high);
    for name in ["default", "light", "high-contrast"] {
        assert!(!builtin(name).monochrome, "{name}");
    }
}

#[test]
fn high_contrast_is_bold_and_reverses_the_selection() {
    let theme = builtin("high-contrast");
    assert!(theme.selected.add_modifier.contains(Modifier::REVERSED));
    for (slot, style) in all_slots(&theme) {
        assert!(
            !style.add_modifier.contains(Modifier::DIM),
            "{slot} is dimmed"
        );
        assert_ne!(style.fg, Some(Color::DarkGray), "{slot} uses dark gray");
    }
    for slot in [theme.crit, theme.down, theme.warn, theme.title, theme.key] {
        assert!(slot.add_modifier.contains(Modifier::BOLD), "{slot:?}");
    }
}

#[test]
fn light_theme_has_no_light_text_on_the_terminal_background() {
    let too_light = [
        Color::White,
        Color::Gray,
        Color::Yellow,
        Color::LightYellow,
        Color::LightCyan,
        Color::LightGreen,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightRed,
    ];
    for (slot, style) in all_slots(&builtin("light")) {
        if style.bg.is_none() {
            if let Some(fg) = style.fg {
                assert!(
                    !too_light.contains(&fg),
                    "light theme {slot} uses {fg:?} text"
                );
            }
        }
    }
}

#[test]
fn user_theme_overrides_one_slot_and_inherits_the_rest() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        "oncall.toml",
        "extends = \"high-contrast\"\n\n[styles]\ncrit = { fg = \"#ff0000\", modifiers = [\"bold\", \"rapid_blink\"] }\n",
    );
    let theme = theme::load_theme("oncall", Some(dir.path())).expect("loads");
    let base = builtin("high-contrast");
    assert_eq!(
        theme.crit,
        Style::new()
            .fg(Color::Rgb(255, 0, 0))
            .add_modifier(Modifier::BOLD | Modifier::RAPID_BLINK)
    );
    assert_eq!(
        Theme {
            crit: base.crit,
            name: base.name.clone(),
            ..theme
        },
        base
    );
}

#[test]
fn user_theme_without_extends_starts_from_the_default() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        "plain.toml",
        "[styles]\nok = { fg = \"indexed(34)\" }\n",
    );
    let theme = theme::load_theme("plain", Some(dir.path())).expect("loads");
    assert_eq!(theme.ok, Style::new().fg(Color::Indexed(34)));
    assert_eq!(theme.warn, Theme::fallback().warn);
}

#[test]
fn broken_user_themes_name_the_file_and_the_key() {
    let cases = [
        (
            "[styles]\ntitle = { fg = \"bluish\" }\n",
            "styles.title.fg",
            "\"bluish\" is not a colour",
        ),
        (
            "[styles]\ntitle = { fg = \"#12\" }\n",
            "styles.title.fg",
            "is not a colour",
        ),
        (
            "[styles]\ntitle = { fg = 300 }\n",
            "styles.title.fg",
            "0 to 255",
        ),
        (
            "[styles]\ntitle = { modifiers = [\"shiny\"] }\n",
            "styles.title.modifiers",
            "\"shiny\" is not a modifier",
        ),
        (
            "[styles]\ntitel = {}\n",
            "styles.titel",
            "unknown field `titel`",
        ),
        (
            "[styles]\ntitle = { foreground = \"red\" }\n",
            "styles.title.foreground",
            "unknown field `foreground`",
        ),
        ("colour = true\n", "colour", "unknown field `colour`"),
        ("monochrome = \"yes\"\n", "monochrome", "invalid type"),
    ];
    for (toml, key, message) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write(dir.path(), "broken.toml", toml);
        let err = theme::load_theme("broken", Some(dir.path())).expect_err(toml);
        assert!(matches!(err, ThemeError::Invalid { .. }), "{toml}: {err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}:", path.display())),
            "{toml}: {text}"
        );
        assert!(text.contains(&format!(": {key}: ")), "{toml}: {text}");
        assert!(text.contains(message), "{toml}: {text}");
    }
}

#[test]
fn broken_theme_toml_shows_line_and_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(
        dir.path(),
        "broken.toml",
        "[styles]\nheader = { fg = \"red\" \n",
    );
    let err = theme::load_theme("broken", Some(dir.path())).expect_err("syntax");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}:2:", path.display())),
        "{text}"
    );
    assert!(text.contains("invalid TOML"), "{text}");
}

#[test]
fn unknown_theme_lists_the_available_names() {
    let err = theme::load_theme("nord", None).expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown theme \"nord\"; available: default, high-contrast, light, mono"
    );
}

#[test]
fn no_color_is_read_from_the_environment() {
    const TEST: &str = "no_color_is_read_from_the_environment";
    if is_child_for(TEST) {
        let expected = std::env::var("KVTOP_TEST_EXPECT_NO_COLOR").expect("set by parent");
        assert_eq!(theme::no_color_requested().to_string(), expected);
        return;
    }
    for (value, expected) in [("1", "true"), ("", "false")] {
        run_in_child(
            TEST,
            &[
                ("NO_COLOR", OsStr::new(value)),
                ("KVTOP_TEST_EXPECT_NO_COLOR", OsStr::new(expected)),
            ],
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Robustness: no input makes loading panic.

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn any_config_text_loads_or_errors(text in "[\\[\\]a-z_=\" .#0-9{},\n-]{0,120}") {
        let _ = config::load_str(Path::new("/tmp/kvtop-proptest.toml"), &text);
    }

    #[test]
    fn any_duration_text_parses_or_errors(text in "[0-9.a-z ]{0,12}") {
        let _ = config::units::parse_duration(&text);
        let _ = config::units::parse_size(&text);
    }
}

#[test]
fn check_validates_the_rules_file_it_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[rules]\nfile = \"rules.toml\"\n").expect("write config");
    std::fs::write(
        dir.path().join("rules.toml"),
        "[[rule]]\nid = \"mine\"\ntitle = \"t\"\nseverity = \"warning\"\nwhen = \"kv_usage >> 3\"\n\
         cause = \"c\"\naction = \"a\"\nsource = \"T1.1\"\n",
    )
    .expect("write rules");
    let err = kvtop::config::check_file(&config).expect_err("a broken rule is an error");
    let text = err.to_string();
    assert!(text.contains("rules.file"), "{text}");
    assert!(
        text.contains("\"mine\""),
        "the message names the rule: {text}"
    );

    std::fs::write(
        dir.path().join("rules.toml"),
        "[[rule]]\nid = \"mine\"\ntitle = \"t\"\nseverity = \"warning\"\nwhen = \"kv_usage > 0.5\"\n\
         cause = \"c\"\naction = \"a\"\nsource = \"T1.1\"\n",
    )
    .expect("write rules");
    kvtop::config::check_file(&config).expect("a valid rules file passes");
}
