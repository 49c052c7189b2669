//! End to end through a real terminal: tmux runs `kvtop demo`, we read the screen, press keys
//! and check that `q` gives the terminal back with exit status 0. The demo discovers its
//! engines as pods through the simulated Kubernetes API (rows are pod names); `--no-kube`
//! scrapes them directly.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::tmux::Tmux;

fn start_demo(tmux: &Tmux, width: u16, height: u16, extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp home");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    tmux.start(
        &format!("{bin} demo {extra}"),
        width,
        height,
        home.path(),
        &[],
    );
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
    // "this help" is the overlay's own line (the footer says "quit" too, so that would not do).
    tmux.wait_for("the help overlay", Duration::from_secs(5), |s| {
        s.contains("quit") && s.contains("this help")
    });
    tmux.run(&["send-keys", "-t", "kvtop", "Escape"]);
    // Wait for the overlay to close: an Escape immediately followed by another key reads as
    // Alt+key to the terminal parser.
    tmux.wait_for("the help closed", Duration::from_secs(5), |s| {
        !s.contains("this help")
    });

    // The findings: the never-answering engine is down, a critical finding; then the routing
    // explainer, and back to the fleet.
    tmux.run(&["send-keys", "-t", "kvtop", "x"]);
    tmux.wait_for("the diagnostics view", Duration::from_secs(5), |s| {
        s.contains("ENGINE / GROUP") && s.contains("CRIT") && s.contains("Engine down")
    });
    tmux.run(&["send-keys", "-t", "kvtop", "r"]);
    tmux.wait_for("the routing view", Duration::from_secs(5), |s| {
        s.contains("picks:")
    });
    tmux.run(&["send-keys", "-t", "kvtop", "Escape"]);
    tmux.wait_for("the fleet again", Duration::from_secs(5), |s| {
        s.contains(" UP") && !s.contains("picks:")
    });

    tmux.run(&["send-keys", "-t", "kvtop", "q"]);
    let screen = tmux.wait_for("a clean exit", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status")
    });
    assert!(screen.contains("kvtop exited with status 0"), "{screen}");
    assert_terminal_restored(&tmux);
}

#[test]
fn demo_shows_pods_with_their_kubernetes_state_and_the_deployments() {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new("kube");
    let _home = start_demo(&tmux, 160, 45, "");
    let screen = tmux.wait_for("the pods, scraped", Duration::from_secs(20), |s| {
        s.matches(" UP").count() >= 3
    });
    assert!(
        screen.contains("demo (8 simulated engines, simulated Kubernetes API)"),
        "{screen}"
    );
    // Rows are pods of the simulated Deployments; the down engine's pod crash-loops.
    assert!(screen.contains("vllm-llama-8b-"), "{screen}");
    assert!(screen.contains("vllm-qwen-7b-"), "{screen}");
    let crash_row = screen
        .lines()
        .find(|l| l.contains("CrashLoop↻"))
        .unwrap_or_else(|| panic!("no crash-looping pod:\n{screen}"));
    assert!(crash_row.contains("vllm-"), "{crash_row}");
    // The selected pod's Kubernetes panel: node, restarts, owner, routing.
    let screen = tmux.wait_for("the pod panel", Duration::from_secs(10), |s| {
        s.contains("Running · ready · gpu-node-00") && s.contains("restarts 0")
    });
    assert!(
        screen.contains("owner    Deployment vllm-llama-8b (ReplicaSet "),
        "{screen}"
    );
    assert!(screen.contains("routing  in rotation"), "{screen}");
    // Its findings come from the pod too: the crash loop (pod state) is critical. (Under heavy
    // load a first scrape may time out and put another finding first for a few seconds.)
    tmux.wait_for("the crash-loop finding", Duration::from_secs(20), |s| {
        s.contains("CRIT Container crash-looping")
    });

    // `d`: the two Deployments, 4 replicas each, with their HPA and PDB.
    tmux.run(&["send-keys", "-t", "kvtop", "d"]);
    let screen = tmux.wait_for("the Deployments view", Duration::from_secs(15), |s| {
        s.contains(" Deployments ") && s.contains("llm/vllm-qwen-7b")
    });
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!("llm/{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{screen}"))
            .to_owned()
    };
    let llama = row("vllm-llama-8b");
    assert!(llama.contains("4/4"), "{llama}");
    let qwen = row("vllm-qwen-7b");
    // Its crash-looping pod is not ready.
    assert!(qwen.contains("3/4"), "{qwen}");
    for line in [&llama, &qwen] {
        assert!(line.contains("[4–4]"), "HPA min–max: {line}");
        assert!(
            line.contains("vllm:num_requests_waiting"),
            "HPA metric: {line}"
        );
        assert!(line.contains("minAvailable 2"), "PDB: {line}");
    }
    tmux.run(&["send-keys", "-t", "kvtop", "Escape"]);
    tmux.wait_for("the fleet again", Duration::from_secs(5), |s| {
        !s.contains(" Deployments ")
    });
    tmux.run(&["send-keys", "-t", "kvtop", "q"]);
    let screen = tmux.wait_for("a clean exit", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status")
    });
    assert!(screen.contains("kvtop exited with status 0"), "{screen}");
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
    // Pod names are too long for the column: each row keeps its Deployment's name up to the
    // model and the pod's whole random suffix (`vllm-llama…g9dhk`), so rows stay tellable
    // apart and the model readable.
    let names: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains(" UP "))
        .filter_map(|l| l.trim_start_matches(['!', ' ']).split_whitespace().next())
        .collect();
    assert!(names.len() >= 2, "{screen}");
    for name in &names {
        let (head, suffix) = name
            .rsplit_once(['…', '-'])
            .unwrap_or_else(|| panic!("{name:?} lost its suffix\n{screen}"));
        assert!(
            suffix.len() == 5 && suffix.chars().all(|c| c.is_ascii_alphanumeric()),
            "{name:?} lost part of its suffix\n{screen}"
        );
        assert!(
            head.starts_with("vllm-llama") || head.starts_with("vllm-qwen"),
            "{name:?} lost its model\n{screen}"
        );
    }
    let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "rows read alike: {names:?}");
    tmux.run(&["send-keys", "-t", "kvtop", "C-c"]);
    tmux.wait_for("exit on Ctrl-C", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status 0")
    });
    assert_terminal_restored(&tmux);
}

/// The findings strip's incident lines (` CRIT Engine down … · vllm-x +2   1m10s`), firing
/// ones only (resolved ones say how long they lasted).
fn firing_incident_lines(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            ["CRIT ", "WARN ", "INFO "].iter().any(|w| t.starts_with(w))
                && l.contains(" · ")
                && !l.contains("lasted")
        })
        .collect()
}

/// Incidents, not alerts: at 80×24 as at 200×50 the demo's critical causes each get a line
/// of their own on the first screen, worst first, within the width; `x` opens on a critical.
#[test]
fn demo_first_screen_lists_the_incidents_worst_first() {
    if !common::have_program("tmux") {
        return;
    }
    for (width, height) in [(80u16, 24u16), (200, 50)] {
        let tmux = Tmux::new(&format!("incidents{width}"));
        let _home = start_demo(&tmux, width, height, "");
        // The down engine's crash loop from the start, the out-of-memory crash loop at ~50 s.
        let screen = tmux.wait_for(
            "two critical incidents on the first screen",
            Duration::from_secs(120),
            |s| {
                firing_incident_lines(s)
                    .iter()
                    .filter(|l| l.trim_start().starts_with("CRIT "))
                    .count()
                    >= 2
            },
        );
        for line in screen.lines() {
            assert!(
                line.chars().count() <= usize::from(width),
                "line wider than {width} columns: {line:?}"
            );
        }
        let rank = |l: &str| match l.trim_start().get(..4) {
            Some("CRIT") => 2,
            Some("WARN") => 1,
            _ => 0,
        };
        let ranks: Vec<u8> = firing_incident_lines(&screen)
            .iter()
            .map(|l| rank(l))
            .collect();
        assert!(
            ranks.windows(2).all(|w| w[0] >= w[1]),
            "worst first: {ranks:?}\n{screen}"
        );
        // One line per cause: the crash-looping pods are not listed once per symptom.
        let crash_lines = screen
            .lines()
            .filter(|l| l.contains("Engine not answering"))
            .count();
        assert_eq!(crash_lines, 0, "a symptom has a line of its own:\n{screen}");

        tmux.run(&["send-keys", "-t", "kvtop", "x"]);
        let screen = tmux.wait_for("the diagnostics view", Duration::from_secs(10), |s| {
            s.contains("ENGINE / GROUP")
        });
        let first_row = screen
            .lines()
            .skip_while(|l| !l.contains("ENGINE / GROUP"))
            .nth(1)
            .unwrap_or_default();
        assert!(
            first_row.contains("CRIT"),
            "x opens on a critical:\n{screen}"
        );
        tmux.run(&["send-keys", "-t", "kvtop", "q"]);
        tmux.wait_for("a clean exit", Duration::from_secs(10), |s| {
            s.contains("kvtop exited with status")
        });
    }
}

fn signal_exit(signal: &str, expected_status: &str, demo_args: &str) {
    if !common::have_program("tmux") {
        return;
    }
    let tmux = Tmux::new(signal);
    let _home = start_demo(&tmux, 100, 30, demo_args);
    tmux.wait_for("the fleet", Duration::from_secs(20), |s| s.contains(" UP"));
    let pid = tmux.kvtop_pid();
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let screen = tmux.wait_for("exit after the signal", Duration::from_secs(10), |s| {
        s.contains("kvtop exited with status")
    });
    assert!(
        screen.contains(&format!("kvtop exited with status {expected_status}")),
        "{screen}"
    );
    assert_terminal_restored(&tmux);
}

/// After kvtop exits the tty is back in cooked mode with echo, the alternate screen was left
/// and the console's screen is gone.
fn assert_terminal_restored(tmux: &Tmux) {
    tmux.assert_terminal_restored();
    let screen = tmux.capture();
    assert!(
        !screen.contains(" UP "),
        "the console's screen was left behind:\n{screen}"
    );
}

#[test]
fn sigterm_restores_the_terminal() {
    // Without the simulated Kubernetes API: the engines scraped directly.
    signal_exit("TERM", "0", "--engines 3 --no-kube");
}

#[test]
fn sighup_restores_the_terminal() {
    // SIGHUP is what a dropped SSH session delivers; 129 = 128 + SIGHUP.
    signal_exit("HUP", "129", "--engines 3");
}
