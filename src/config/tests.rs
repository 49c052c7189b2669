//! Unit tests of the load pipeline with an injected environment (integration tests of real
//! files are in tests/config_files.rs).

use std::time::Duration;

use super::*;

fn load_with(text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let lookup = |name: &str| {
        env.iter()
            .find(|(var, _)| *var == name)
            .map(|(_, value)| OsString::from(value))
    };
    load_str_with_env(Path::new("/etc/kvtop/config.toml"), text, &lookup).map(|(c, _)| c)
}

#[test]
fn empty_file_gives_defaults_with_the_source() {
    let config = load_with("", &[]).expect("valid");
    assert_eq!(config.source, Some(PathBuf::from("/etc/kvtop/config.toml")));
    assert_eq!(
        Config {
            source: None,
            ..config
        },
        Config::default()
    );
}

#[test]
fn every_section_is_read() {
    let config = load_with(
        r#"
[scrape]
interval = "500ms"
timeout = "300ms"
body_limit = "512KiB"
user_agent = "kvtop-test"

[[targets]]
url = "http://10.0.0.5:8000"

[[targets]]
url = "https://engine-1.example:8443/metrics"
name = "engine-1"
bearer_token_env = "ENGINE_TOKEN"

[display]
theme = "light"
window = "15s"
range = "2m"
max_fps = 30
clipboard = false
snapshot_span = "30m"

[history]
full_resolution = "5m"
retention = "2h"
coarse_step = "30s"

[log]
level = "debug"
file = "logs/kvtop.log"

[rules]
file = "rules/site.toml"
"#,
        &[("ENGINE_TOKEN", "tok-123")],
    )
    .expect("valid");
    assert_eq!(config.interval, Duration::from_millis(500));
    assert_eq!(config.timeout, Duration::from_millis(300));
    assert!(!config.timeout_is_derived());
    assert_eq!(config.body_limit, 524_288);
    assert_eq!(config.user_agent, "kvtop-test");
    assert_eq!(config.targets.len(), 2);
    assert_eq!(config.targets[0].name, "10.0.0.5:8000");
    assert_eq!(config.targets[0].url, "http://10.0.0.5:8000/metrics");
    assert_eq!(config.targets[0].bearer_token, None);
    assert_eq!(config.targets[1].name, "engine-1");
    assert_eq!(config.targets[1].bearer_token.as_deref(), Some("tok-123"));
    assert_eq!(config.theme, "light");
    assert_eq!(config.window, kvtop_core::fleet::QuantileWindow::S15);
    assert_eq!(config.range, Duration::from_secs(120));
    assert_eq!(config.max_fps, 30);
    assert!(!config.clipboard);
    assert_eq!(config.snapshot_span, Duration::from_secs(30 * 60));
    assert_eq!(
        config.history,
        HistorySettings {
            full_resolution: Duration::from_secs(300),
            retention: Duration::from_secs(7_200),
            coarse_step: Duration::from_secs(30),
        }
    );
    assert_eq!(config.log_level, "debug");
    assert_eq!(
        config.log_file,
        Some(PathBuf::from("/etc/kvtop/logs/kvtop.log"))
    );
    assert_eq!(
        config.rules_file,
        Some(PathBuf::from("/etc/kvtop/rules/site.toml"))
    );
    assert_eq!(
        config.user_rules_path(),
        Some(PathBuf::from("/etc/kvtop/rules/site.toml"))
    );
}

#[test]
fn an_empty_rules_file_setting_is_an_error() {
    let err = load_with("[rules]\nfile = \" \"\n", &[]).expect_err("empty");
    assert_eq!(err.key(), Some("rules.file"));
}

#[test]
fn interval_alone_derives_the_timeout() {
    let config = load_with("[scrape]\ninterval = \"250ms\"\n", &[]).expect("valid");
    assert_eq!(config.timeout, Duration::from_millis(200));
    assert!(config.timeout_is_derived());
}

#[test]
fn bad_duration_names_file_key_and_position() {
    let err = load_with("[scrape]\ninterval = \"5x\"\n", &[]).expect_err("bad duration");
    assert_eq!(
        err.to_string(),
        "/etc/kvtop/config.toml:2:12: scrape.interval: \"5x\" is not a duration \
         (use e.g. 250ms, 1s, 2m)"
    );
}

#[test]
fn duration_without_unit_suggests_one() {
    let err = load_with("[display]\nrange = 300\n", &[]).expect_err("no unit");
    assert_eq!(
        err.to_string(),
        "/etc/kvtop/config.toml:2:9: display.range: \"300\" is not a duration: add a unit \
         (ms, s, m, h or d), e.g. \"300s\""
    );
}

#[test]
fn cross_setting_errors_point_at_the_key() {
    let err = load_with("[scrape]\ninterval = \"1s\"\ntimeout = \"2s\"\n", &[])
        .expect_err("timeout > interval");
    assert_eq!(
        err.to_string(),
        "/etc/kvtop/config.toml:3:11: scrape.timeout: 2s is longer than scrape.interval (1s); \
         the timeout must be at most the interval"
    );
}

#[test]
fn both_token_sources_are_rejected() {
    let err = load_with(
        "[[targets]]\nurl = \"http://a:1\"\nbearer_token_file = \"t\"\nbearer_token_env = \"T\"\n",
        &[],
    )
    .expect_err("both");
    assert_eq!(err.key(), Some("targets[0].bearer_token_env"));
    assert!(err.to_string().contains(":4:"), "{err}");
}

#[test]
fn missing_env_token_names_the_variable() {
    let err = load_with(
        "[[targets]]\nurl = \"http://a:1\"\n\n[[targets]]\nurl = \"http://b:1\"\nbearer_token_env = \"KVTOP_UNIT_TEST_UNSET\"\n",
        &[],
    )
    .expect_err("unset");
    assert_eq!(
        err.to_string(),
        "/etc/kvtop/config.toml:6:20: targets[1].bearer_token_env: environment variable \
         KVTOP_UNIT_TEST_UNSET is not set"
    );
}

#[test]
fn missing_url_names_the_target() {
    let err = load_with("[[targets]]\nname = \"x\"\n", &[]).expect_err("no url");
    let text = err.to_string();
    assert!(text.contains("targets[0]"), "{text}");
    assert!(text.contains("missing field `url`"), "{text}");
}

#[test]
fn wrong_types_are_named() {
    let err = load_with("[display]\nmax_fps = \"ten\"\n", &[]).expect_err("type");
    assert_eq!(err.key(), Some("display.max_fps"));
    let err = load_with("targets = 5\n", &[]).expect_err("type");
    assert_eq!(err.key(), Some("targets"));
    let err = load_with("scrape = 1\n", &[]).expect_err("type");
    assert_eq!(err.key(), Some("scrape"));
}

#[test]
fn unknown_top_level_section_lists_the_sections() {
    let err = load_with("[alerts]\nurl = \"x\"\n", &[]).expect_err("unknown");
    let text = err.to_string();
    assert!(
        text.starts_with("/etc/kvtop/config.toml:1:2: alerts: unknown field `alerts`"),
        "{text}"
    );
    for section in [
        "scrape",
        "targets",
        "display",
        "history",
        "log",
        "rules",
        "kubernetes",
    ] {
        assert!(text.contains(&format!("`{section}`")), "{text}");
    }
}

#[test]
fn kubernetes_keys_are_checked_like_the_others() {
    // `contexts` is a list; the singular is a typo.
    let err = load_with("[kubernetes]\ncontext = \"prod\"\n", &[]).expect_err("unknown");
    assert_eq!(err.key(), Some("kubernetes.context"));
    let err = load_with("[kubernetes]\nscrape_via = \"tunnel\"\n", &[]).expect_err("bad");
    assert_eq!(err.key(), Some("kubernetes.scrape_via"));
    assert!(
        err.to_string().starts_with("/etc/kvtop/config.toml:2:"),
        "{err}"
    );
    let config =
        load_with("[kubernetes]\nenabled = true\nnamespace = \"llm\"\n", &[]).expect("valid");
    assert!(config.kubernetes.enabled);
    assert_eq!(config.kubernetes.namespace.as_deref(), Some("llm"));
}

#[test]
fn syntax_error_shows_line_column_and_context() {
    let err = load_with("[scrape]\ninterval = = \"1s\"\n", &[]).expect_err("syntax");
    let ConfigError::Syntax { at, .. } = &err else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert_eq!(at.line, 2);
    let text = err.to_string();
    assert!(text.starts_with("/etc/kvtop/config.toml:2:"), "{text}");
    assert!(text.contains("2 | interval = = \"1s\""), "{text}");
}

#[test]
fn bad_window_and_theme_names() {
    let err = load_with("[display]\nwindow = \"2m\"\n", &[]).expect_err("window");
    assert_eq!(
        err.to_string(),
        "/etc/kvtop/config.toml:2:10: display.window: \"2m\" is not a window (use 15s, 1m or 5m)"
    );
    let err = load_with("[display]\ntheme = \"../x\"\n", &[]).expect_err("theme");
    assert_eq!(err.key(), Some("display.theme"));
}

#[test]
fn display_columns_name_catalog_signals_once() {
    let config = load_with(
        "[display]\ncolumns = [\"tpot_p95\", \"http_5xx_ratio\", \"finished_abort\"]\n",
        &[],
    )
    .expect("valid");
    use kvtop_core::signals::Signal;
    assert_eq!(
        config.columns,
        Some(vec![
            Signal::TpotP95,
            Signal::Http5xxRatio,
            Signal::FinishedAbort
        ])
    );
    assert_eq!(load_with("", &[]).expect("empty").columns, None);
    for (text, wanted) in [
        ("columns = [\"tpot\"]", "not a metric signal"),
        ("columns = []", "at least one"),
        ("columns = [\"ttft_p95\", \"ttft_p95\"]", "named twice"),
        // Not a metric of the engine: the table shows catalog signals only.
        ("columns = [\"gen_stall_s\"]", "not a metric signal"),
    ] {
        let err = load_with(&format!("[display]\n{text}\n"), &[]).expect_err(text);
        assert_eq!(err.key(), Some("display.columns"), "{text}");
        assert!(err.to_string().contains(wanted), "{text}: {err}");
    }
}
