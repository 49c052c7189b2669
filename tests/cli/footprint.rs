//! What a running kvtop maps besides its own binary: glibc's `libm.so.6` is not among it (the
//! binary defines the few C math functions it calls, src/main.rs), which saves every process
//! about half a megabyte of resident pages.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Kills the child when the test ends, passed or failed.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_running_kvtop_does_not_load_libm() {
    let home = tempfile::tempdir().unwrap();
    // The simulator draws from exponential and normal distributions (log, sin, cos) and eases
    // its load curves (exp) as it starts: the functions libm would have provided run here.
    let child = Command::new(env!("CARGO_BIN_EXE_kvtop"))
        .args(["sim", "--engines", "2"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("KVTOP_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let stdout = running.0.stdout.take().unwrap();
    let listed = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("Ctrl-C to stop"));
    assert!(listed, "kvtop sim did not start");
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", running.0.id())).unwrap();
    let libraries: Vec<&str> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| path.contains(".so"))
        .collect();
    assert!(
        libraries.iter().any(|path| path.contains("libc.so")),
        "the maps list shared libraries: {libraries:?}"
    );
    assert!(
        !libraries.iter().any(|path| path.contains("libm.so")),
        "libm is mapped: {libraries:?}"
    );
}
