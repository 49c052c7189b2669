//! Tests never write to the user's home: every kvtop a test starts has HOME and the XDG
//! directories pointed at a temporary folder, and kvtop writes only where they point.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use crate::common::tmux::Tmux;

/// What a launch of the binary must be near (before the process starts) to count as isolated:
/// the shared helper, an explicit HOME, or tmux's start, which sets both.
const ISOLATED_BY: [&str; 3] = ["isolate_home(", "\"HOME\"", ".start("];
/// Lines around a launch searched for one of [`ISOLATED_BY`].
const BEFORE: usize = 3;
const AFTER: usize = 25;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_kvtop_a_test_starts_has_its_home_pointed_away() {
    // Spelt in two pieces so that this file's own text is not a launch.
    let launch = ["CARGO_BIN_", "EXE_kvtop"].concat();
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
        &mut files,
    );
    let mut launches = 0;
    let mut bare = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains(&launch) {
                continue;
            }
            launches += 1;
            let window = lines[i.saturating_sub(BEFORE)..(i + AFTER).min(lines.len())].join("\n");
            if !ISOLATED_BY.iter().any(|marker| window.contains(marker)) {
                bare.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    assert!(
        launches >= 10,
        "only {launches} launches found: is the scan broken?"
    );
    assert!(
        bare.is_empty(),
        "kvtop started without its home pointed at a temporary folder (use \
         common::isolate_home): {bare:#?}"
    );
}

/// The console writes its log, and nothing else, where the test pointed its state directory:
/// under the temporary HOME, never under the user's `~/.local/state`.
#[test]
fn the_console_writes_only_into_the_temporary_home() {
    if !common::have_program("tmux") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    // A closed port: the console runs, its target is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let tmux = Tmux::new("home-isolation");
    tmux.start(
        &format!(
            "{} --target http://127.0.0.1:{port}/metrics --interval 500ms",
            env!("CARGO_BIN_EXE_kvtop")
        ),
        100,
        30,
        home.path(),
        &[],
    );
    tmux.wait_for("the console", Duration::from_secs(20), |s| {
        s.contains("DOWN")
    });
    tmux.send("q");
    assert_eq!(tmux.wait_exit(Duration::from_secs(10)), "0");
    let mut written = Vec::new();
    let mut stack = vec![home.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                written.push(path.strip_prefix(home.path()).unwrap().to_path_buf());
            }
        }
    }
    assert_eq!(
        written,
        [PathBuf::from("state/kvtop/kvtop.log")],
        "kvtop wrote outside its state directory"
    );
}
