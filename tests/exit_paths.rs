//! Every way out of the real binary, through a real terminal (tmux): `q`, Ctrl-C, SIGTERM,
//! SIGHUP (a dropped SSH session) and a panic each give the terminal back (cooked mode with
//! echo, the alternate screen left, the cursor shown), leave no process or thread behind and
//! exit with a sensible status. Each console watches a healthy endpoint and one that hangs, so
//! a scrape is in flight when it leaves.

mod common;

use std::time::Duration;

use common::bad_server::{BadServer, Behaviour};
use common::tmux::{Tmux, alive, process_tree, threads_of};

const GOOD: &str = "# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n\
# TYPE vllm:kv_cache_usage_perc gauge\n\
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n";

/// Generous bound on waits; nothing here asserts how fast anything happens.
const PATIENCE: Duration = Duration::from_secs(20);

/// How the console is asked to leave.
enum Exit {
    Key(&'static str),
    Signal(&'static str),
    /// The test hook `KVTOP_TEST_PANIC_AFTER_MS`.
    Panic,
}

/// The endpoints (on their own runtime, serving while the test thread waits on tmux) and the
/// console's home directory with its config.
struct Fixture {
    _runtime: tokio::runtime::Runtime,
    _servers: Vec<BadServer>,
    home: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let servers = runtime.block_on(async {
        vec![
            BadServer::start(Behaviour::Ok(GOOD.into())).await,
            BadServer::start(Behaviour::Hang).await,
        ]
    });
    let home = tempfile::tempdir().expect("temp home");
    let config = format!(
        "[[targets]]\nname = \"healthy\"\nurl = \"{}\"\n\n[[targets]]\nname = \"hangs\"\nurl = \"{}\"\n",
        servers[0].url, servers[1].url
    );
    std::fs::write(home.path().join("kvtop.toml"), config).expect("config");
    Fixture {
        _runtime: runtime,
        _servers: servers,
        home,
    }
}

fn leave(tag: &str, exit: Exit, expected_status: &str) {
    if !common::have_program("tmux") {
        return;
    }
    let fixture = fixture();
    let tmux = Tmux::new(tag);
    let config = fixture.home.path().join("kvtop.toml");
    let command = format!(
        "{} --config {} --interval 500ms",
        env!("CARGO_BIN_EXE_kvtop"),
        config.display()
    );
    let env: &[(&str, &str)] = match exit {
        // Long enough to see the console first; no backtrace, so the message stays on screen.
        Exit::Panic => &[
            ("KVTOP_TEST_PANIC_AFTER_MS", "2500"),
            ("RUST_BACKTRACE", "0"),
        ],
        _ => &[],
    };
    tmux.start(&command, 100, 30, fixture.home.path(), env);
    tmux.wait_for("the console with a hung scrape", PATIENCE, |s| {
        s.contains(" UP") && s.contains("timeout")
    });
    assert_eq!(
        tmux.pane("alternate_on"),
        "1",
        "the console uses the alternate screen"
    );
    let pid = tmux.kvtop_pid();
    let tree = process_tree(pid);
    assert!(threads_of(pid).len() > 1, "a multi-threaded runtime");

    match exit {
        Exit::Key(key) => tmux.send(key),
        Exit::Signal(name) => {
            let status = std::process::Command::new("kill")
                .arg(format!("-{name}"))
                .arg(pid.to_string())
                .status()
                .expect("kill");
            assert!(status.success());
        }
        Exit::Panic => {}
    }
    let status = tmux.wait_exit(PATIENCE);
    assert_eq!(status, expected_status, "{}", tmux.capture());
    tmux.assert_terminal_restored();
    let screen = tmux.capture();
    assert!(
        !screen.contains(" UP "),
        "the console's screen was left behind:\n{screen}"
    );
    for p in &tree {
        assert!(!alive(*p), "process {p} of kvtop {pid} is still running");
    }
    assert!(threads_of(pid).is_empty(), "threads of kvtop {pid} remain");
    if matches!(exit, Exit::Panic) {
        // The panic message is printed after the terminal is back, so it can be read.
        assert!(
            screen.contains("KVTOP_TEST_PANIC_AFTER_MS asked for a panic"),
            "{screen}"
        );
    }
}

#[test]
fn q_quits_and_restores_the_terminal() {
    leave("q", Exit::Key("q"), "0");
}

#[test]
fn ctrl_c_quits_and_restores_the_terminal() {
    leave("ctrlc", Exit::Key("C-c"), "0");
}

#[test]
fn sigterm_restores_the_terminal_and_leaves_nothing() {
    leave("term", Exit::Signal("TERM"), "0");
}

#[test]
fn sighup_restores_the_terminal_and_leaves_nothing() {
    // What a dropped SSH session delivers; 129 = 128 + SIGHUP.
    leave("hup", Exit::Signal("HUP"), "129");
}

#[test]
fn a_panic_restores_the_terminal_and_prints_its_message() {
    // Rust's exit status for a panicking main thread.
    leave("panic", Exit::Panic, "101");
}
