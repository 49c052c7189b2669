//! Every way out of the real binary, through a real terminal (tmux): `q`, Ctrl-C, SIGTERM,
//! SIGHUP (a dropped SSH session) and a panic each give the terminal back (cooked mode with
//! echo, the alternate screen left, the cursor shown), leave no process or thread behind and
//! exit with a sensible status. Each console watches a healthy endpoint and one that hangs, so
//! a scrape is in flight when it leaves.

use crate::common;

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
    // The runtime's thread and the terminal input's (and those of the blocking pool).
    assert!(
        threads_of(pid).len() > 1,
        "the terminal input has a thread of its own"
    );

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

/// `kvtop drain POD --confirm POD` on an engine whose requests never finish waits for them;
/// SIGTERM during that wait ends it at once (128 + 15), leaves no process, and the audit log
/// holds the attempt as one complete JSON line marked interrupted, with the steps it reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_drain_wait_exits_and_audits_the_attempt() {
    use kvtop_sim::{ScenarioAssignment, SimConfig};

    // Engine 2 (a llama pod) hangs: its requests stay running, so the drain waits. Six
    // engines give llama three ready replicas (0, 2, 4; engine 5, a qwen, is down), so its
    // PodDisruptionBudget (minAvailable 2) allows the drain, which the plan now checks before
    // any mutation.
    let stuck: ScenarioAssignment = "stuck-requests@2".parse().expect("scenario");
    let sim = SimConfig {
        engines: 6,
        seed: 11,
        scenarios: vec![stuck],
        ..SimConfig::default()
    };
    let (sim, kube) = common::kube_sim::fast_cluster_of(sim, 1e9).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig_yaml("sim")).expect("kubeconfig");
    std::fs::write(
        dir.path().join("config.toml"),
        "[kubernetes]\napi_timeout = \"2s\"\n",
    )
    .expect("config");
    let audit = dir.path().join("audit.jsonl");
    let stderr_path = dir.path().join("stderr");
    let pod = kube.pods_of(2).first().cloned().expect("a pod of engine 2");

    // Requests must be stuck in the engine before the drain, or there is nothing to wait for.
    let metrics = sim.engines[2].url.clone();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while running(&metrics).await < 1.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no request ever got stuck in engine 2"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"));
    common::isolate_home(&mut command, &dir.path().join("home"));
    let mut child = command
        .args(["drain", &pod, "-n", "llm", "--confirm", &pod])
        .args(["--drain-timeout", "100s"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .arg("--audit-log")
        .arg(&audit)
        .env("USER", "oncall")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("run kvtop drain");
    let pid = child.id();
    let read_stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();

    // The wait has begun once the engine's in-flight count is reported.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !read_stderr().contains("  in flight: ") {
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "kvtop drain ended before its wait:\n{}",
            read_stderr()
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "the drain never started waiting:\n{}",
            read_stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tree = process_tree(pid);
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);

    // Well inside the 100 s the drain would otherwise wait.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "kvtop drain did not stop on SIGTERM:\n{}",
            read_stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(143), "{}", read_stderr());
    for p in &tree {
        assert!(
            !alive(*p),
            "process {p} of kvtop drain {pid} is still running"
        );
    }
    assert!(
        read_stderr().contains("SIGTERM: stopped (started step 3"),
        "{}",
        read_stderr()
    );

    let text = std::fs::read_to_string(&audit).expect("audit log");
    assert!(text.ends_with('\n'), "a complete line: {text:?}");
    let all: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    // The `started` line written before the first request (issue 17), then the outcome.
    assert_eq!(all[0]["result"], "started", "{text}");
    let lines: Vec<&serde_json::Value> = all.iter().filter(|l| l["result"] != "started").collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert_eq!(line["action"], "drain");
    assert_eq!(line["target"], pod.as_str());
    assert_eq!(line["result"], "interrupted");
    assert_eq!(line["error"], "interrupted by SIGTERM");
    let detail: Vec<&str> = line["detail"]
        .as_array()
        .expect("detail")
        .iter()
        .filter_map(|d| d.as_str())
        .collect();
    // Unrouted, the EndpointSlices let go, then waiting on the engine.
    assert_eq!(detail.len(), 3, "unrouted, then waiting: {detail:?}");
    assert!(detail[2].starts_with("started step 3: "), "{detail:?}");
    // The pod was taken out of routing and was not evicted; the signal put routing back.
    assert!(kube.pods_of(2).contains(&pod));
    assert_eq!(
        line["rollback"]["restored"].as_array().map(Vec::len),
        Some(1),
        "{line}"
    );
    sim.shutdown().await;
}

/// `vllm:num_requests_running` of a simulated engine (0 when unreadable).
async fn running(url: &str) -> f64 {
    let Ok(response) = reqwest::get(url).await else {
        return 0.0;
    };
    let body = response.text().await.unwrap_or_default();
    body.lines()
        .filter(|l| l.starts_with("vllm:num_requests_running{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
