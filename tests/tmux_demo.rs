//! End to end through a real terminal: tmux runs `kvtop demo`, we read the screen, press keys
//! and check that `q` gives the terminal back with exit status 0.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(tag: &str) -> Tmux {
        Tmux {
            socket: format!("kvtop-test-{tag}-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "kvtop"])
    }

    /// Poll the screen until `pred` holds or the deadline passes; returns the last screen.
    fn wait_for(&self, what: &str, deadline: Duration, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < deadline,
                "waited {deadline:?} for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn start_demo(tmux: &Tmux, width: u16, height: u16, extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp home");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let script = format!("{bin} demo {extra}; echo \"kvtop exited with status $?\"; sleep 60",);
    let home_path = home.path().display().to_string();
    let (w, h) = (width.to_string(), height.to_string());
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "kvtop",
        "-x",
        &w,
        "-y",
        &h,
        "-e",
        &format!("HOME={home_path}"),
        "-e",
        &format!("XDG_CONFIG_HOME={home_path}/config"),
        "-e",
        &format!("XDG_STATE_HOME={home_path}/state"),
        "-e",
        "TERM=xterm-256color",
        &script,
    ]);
    home
}

#[test]
fn demo_shows_the_fleet_and_quits_cleanly() {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new("demo");
    let _home = start_demo(&tmux, 120, 40, "--engines 6");
    // The live fleet: the header, and engines with their KV usage once scraped.
    let screen = tmux.wait_for(
        "the fleet with live KV usage",
        Duration::from_secs(20),
        |s| s.contains("kvtop") && s.matches(" UP").count() >= 3 && s.contains('%'),
    );
    assert!(
        screen.contains("DOWN"),
        "the simulated down endpoint is shown DOWN:\n{screen}"
    );

    // Help is generated from the key map and closes again.
    tmux.run(&["send-keys", "-t", "kvtop", "?"]);
    tmux.wait_for("the help overlay", Duration::from_secs(5), |s| {
        s.contains("quit")
    });
    tmux.run(&["send-keys", "-t", "kvtop", "Escape"]);

    tmux.run(&["send-keys", "-t", "kvtop", "q"]);
    let screen = tmux.wait_for("a clean exit", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status")
    });
    assert!(screen.contains("kvtop exited with status 0"), "{screen}");
    // The alternate screen is gone: the table is no longer on the pane.
    assert!(
        !screen.contains(" UP "),
        "the console's screen was left behind:\n{screen}"
    );
}

#[test]
fn demo_fits_80x24_in_mono() {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new("small");
    let _home = start_demo(&tmux, 80, 24, "--engines 4 --theme mono");
    let screen = tmux.wait_for("the fleet at 80x24", Duration::from_secs(20), |s| {
        s.matches(" UP").count() >= 2
    });
    for line in screen.lines() {
        assert!(
            line.chars().count() <= 80,
            "line wider than 80 columns: {line:?}"
        );
    }
    tmux.run(&["send-keys", "-t", "kvtop", "C-c"]);
    tmux.wait_for("exit on Ctrl-C", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status 0")
    });
}
