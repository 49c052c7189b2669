//! Time travel through a real terminal: the time cursor in the demo (back, the `AT` header,
//! forward to live), and `kvtop replay` of a recording made by `kvtop check --record`, on the
//! recording's clock, to its end.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::tmux::Tmux;

#[test]
fn the_time_cursor_goes_back_and_returns_to_live() {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new("cursor");
    let home = tempfile::tempdir().expect("temp home");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    tmux.start(&format!("{bin} demo"), 80, 24, home.path(), &[]);
    tmux.wait_for("the fleet", Duration::from_secs(20), |s| {
        s.matches(" UP").count() >= 3
    });
    std::thread::sleep(Duration::from_secs(12));
    tmux.send("[");
    let screen = tmux.wait_for("the AT header", Duration::from_secs(5), |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains(" AT ") && l.contains("(−10s)"))
    });
    assert!(screen.matches(" UP").count() >= 3, "{screen}");
    tmux.send("]");
    tmux.wait_for("live again", Duration::from_secs(5), |s| {
        s.lines().next().is_some_and(|l| !l.contains(" AT ")) && s.contains("view live again")
    });
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
}

#[test]
fn a_recording_replays_in_the_console_to_its_end() {
    if !common::have_program("tmux") {
        return;
    }
    let home = tempfile::tempdir().expect("temp home");
    let file = recording_of_90s(home.path());
    let bin = env!("CARGO_BIN_EXE_kvtop");

    let tmux = Tmux::new("replay");
    tmux.start(
        &format!("{bin} replay --speed 20 {}", file.display()),
        100,
        30,
        home.path(),
        &[],
    );
    tmux.wait_for("the replay", Duration::from_secs(20), |s| {
        s.contains("replay of rec.kvr") && s.matches(" UP").count() >= 2
    });
    tmux.wait_for("the end of the recording", Duration::from_secs(30), |s| {
        s.contains("end of the recording")
    });
    tmux.send("{");
    tmux.wait_for(
        "the cursor over the replayed past",
        Duration::from_secs(5),
        |s| {
            s.lines()
                .next()
                .is_some_and(|l| l.contains(" AT ") && l.contains("(−1m)"))
        },
    );
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
}

/// A 90 s simulated check of two engines recorded in `home` (3 s of wall time).
fn recording_of_90s(home: &std::path::Path) -> std::path::PathBuf {
    let file = home.join("rec.kvr");
    let mut check = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    check.args([
        "check",
        "--sim",
        "--engines",
        "2",
        "--time-scale",
        "30",
        "--duration",
        "90s",
        "--record",
    ]);
    check.arg(&file);
    common::isolate_home(&mut check, home);
    let out = check.output().expect("kvtop check runs");
    assert!(out.status.code().is_some_and(|c| c <= 2), "{out:?}");
    file
}

/// `}` in a replay at its own pace jumps a minute ahead of what was replayed: two of them
/// reach the end of a 90 s recording at once, not in a minute and a half.
#[test]
fn the_cursor_keys_jump_a_replay_forward() {
    if !common::have_program("tmux") {
        return;
    }
    let home = tempfile::tempdir().expect("temp home");
    let file = recording_of_90s(home.path());
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let tmux = Tmux::new("replay-jump");
    tmux.start(
        &format!("{bin} replay --speed 1 {}", file.display()),
        80,
        24,
        home.path(),
        &[],
    );
    tmux.wait_for("the replay", Duration::from_secs(20), |s| {
        s.matches(" UP").count() >= 2
    });
    tmux.send("}");
    tmux.send("}");
    tmux.wait_for("the end of the recording", Duration::from_secs(15), |s| {
        s.contains("end of the recording")
    });
    // Stepping back from the end moves over what the jump handed over.
    tmux.send("{");
    tmux.wait_for("the cursor a minute back", Duration::from_secs(5), |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains(" AT ") && l.contains("(−1m)"))
    });
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
}

/// A recorded action shows in a replay's footer when the replay reaches it, as the recorded
/// console told it, the API's text made safe.
#[test]
fn a_replay_tells_the_recorded_actions_where_they_happened() {
    use common::recorded_drain::{CONFIRMED, write};
    if !common::have_program("tmux") {
        return;
    }
    let home = tempfile::tempdir().expect("temp home");
    let (file, _) = write(home.path());
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let tmux = Tmux::new("replay-actions");
    let from = CONFIRMED as u64 - 2;
    tmux.start(
        &format!("{bin} replay --speed 5 --from +{from}s {}", file.display()),
        100,
        30,
        home.path(),
        &[],
    );
    tmux.wait_for("the confirmation", Duration::from_secs(20), |s| {
        s.contains("drain vllm-0: confirmed (1 requests)")
    });
    let screen = tmux.wait_for("the failure", Duration::from_secs(30), |s| {
        s.contains("drain vllm-0: HTTP 403")
    });
    assert!(
        screen.contains("pwned"),
        "the text is shown, made safe\n{screen}"
    );
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
}

/// A console on Prometheus that records keeps what Prometheus answered (here: that it cannot
/// be reached), and `check --replay` of the file finds it as the console showed it.
#[test]
fn a_console_on_prometheus_records_its_answers() {
    if !common::have_program("tmux") {
        return;
    }
    let home = tempfile::tempdir().expect("temp home");
    // A port nobody listens on: every cycle of the source fails.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let file = home.path().join("prom.kvr");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let tmux = Tmux::new("record-prom");
    tmux.start(
        &format!(
            "{bin} --prometheus http://127.0.0.1:{port} --record {}",
            file.display()
        ),
        80,
        24,
        home.path(),
        &[],
    );
    // "refused" once the source's first answer is in (before it, the row says "no data").
    tmux.wait_for("the source's answer", Duration::from_secs(30), |s| {
        s.contains("refused") && s.contains("REC")
    });
    std::thread::sleep(Duration::from_secs(2));
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");

    let mut replay = Command::new(bin);
    replay
        .args(["check", "--replay"])
        .arg(&file)
        .args(["-o", "json"]);
    common::isolate_home(&mut replay, home.path());
    let out = replay.output().expect("kvtop runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let rows = doc["engines"].as_array().expect("an engines array");
    let source = format!("http://127.0.0.1:{port}");
    assert!(
        rows.iter().any(|row| row["name"] == source.as_str()
            && row["status"]["word"] == "DOWN"
            && row["status"]["reason"] == "connection refused"),
        "{doc:#}"
    );
}
