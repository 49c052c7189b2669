//! Shared test helpers: an adversarial HTTP server on 127.0.0.1, a real Prometheus, tmux, and tool
//! detection.
#![allow(dead_code)]

pub mod bad_server;
pub mod kube_sim;
pub mod prometheus;
pub mod recorded_drain;
pub mod screen;
pub mod tmux;
pub mod victoria;

use std::path::PathBuf;

/// Where `.ci/run` unpacks Debian's Prometheus package (its `usr/bin` is searched too).
pub const CI_PROMETHEUS_BIN: &str = "/opt/kvtop-ci/prometheus/usr/bin";
/// Where `.ci/run` unpacks Debian's VictoriaMetrics package.
pub const CI_VICTORIA_BIN: &str = "/opt/kvtop-ci/victoria-metrics/usr/bin";

/// True when CI asked that no test be skipped.
pub fn require_all() -> bool {
    std::env::var("KVTOP_TEST_REQUIRE_ALL").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Where an external program is: `KVTOP_PROMETHEUS_BIN` names the directory of `prometheus`
/// and `promtool` when set; otherwise PATH, then [`CI_PROMETHEUS_BIN`].
pub fn find_program(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("KVTOP_PROMETHEUS_BIN").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        // The variable may name the binary itself.
        dirs.push(if dir.is_file() {
            dir.parent().map(PathBuf::from).unwrap_or_default()
        } else {
            dir
        });
    }
    if let Some(paths) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    dirs.push(PathBuf::from(CI_PROMETHEUS_BIN));
    dirs.push(PathBuf::from(CI_VICTORIA_BIN));
    dirs.into_iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Whether an external program can be found (see [`find_program`]). When it is missing, the
/// test is skipped with a printed reason, unless KVTOP_TEST_REQUIRE_ALL is set, in which case
/// it fails.
pub fn have_program(name: &str) -> bool {
    let found = find_program(name).is_some();
    if !found {
        assert!(
            !require_all(),
            "{name} is required (KVTOP_TEST_REQUIRE_ALL is set) but was not found on PATH, \
             in KVTOP_PROMETHEUS_BIN, {CI_PROMETHEUS_BIN} or {CI_VICTORIA_BIN}"
        );
        eprintln!(
            "skipping: {name} not found on PATH, in KVTOP_PROMETHEUS_BIN, {CI_PROMETHEUS_BIN} or {CI_VICTORIA_BIN}"
        );
    }
    found
}

/// Wait (at most until `deadline`) for the server process `child` to listen: `port` says
/// where once it does. Fails with `what` and the server's `log` when it exits or never does.
pub fn wait_listening(
    child: &mut std::process::Child,
    what: &str,
    deadline: std::time::Instant,
    port: impl Fn() -> Option<u16>,
    log: impl Fn() -> String,
) -> u16 {
    loop {
        if let Some(port) = port() {
            return port;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited with {status}:\n{}", log());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not listen:\n{}",
            log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Point every directory kvtop (and what it starts) could write to at `home`: HOME, the XDG
/// config, state, data and cache directories, and no KVTOP_CONFIG of the caller's. Tests never
/// write to the user's home; `tests/cli/home_isolation.rs` checks that every kvtop a test starts
/// goes through this (or through `tmux::Tmux::start`, which sets the same).
pub fn isolate_home(command: &mut std::process::Command, home: &std::path::Path) {
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env_remove("KVTOP_CONFIG");
}
