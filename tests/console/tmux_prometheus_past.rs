//! `kvtop --prometheus URL --from TIME`: the console on a past window of a real Prometheus,
//! backfilled (promtool) with an incident: the replay's header, the incident's finding on the
//! replay clock, the pause (`p`), and the time cursor over what was replayed.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::prometheus::{PromServer, backfill_openmetrics};
use common::tmux::Tmux;

const A: &str = r#"pod="vllm-a",namespace="llm",model_name="m",engine="0""#;

/// 15 minutes of `vllm-a` from `start`, every 15 s: KV 97 % with 60 waiting for the first
/// 10 minutes, then KV 40 % with nothing waiting.
fn openmetrics(start: i64) -> String {
    let mut om = String::new();
    let times: Vec<i64> = (0..=60).map(|k| start + 15 * k).collect();
    let incident = |t: i64| t < start + 600;
    for (name, during, after) in [
        ("vllm:kv_cache_usage_perc", 0.97, 0.4),
        ("vllm:num_requests_running", 8.0, 8.0),
        ("vllm:num_requests_waiting", 60.0, 0.0),
    ] {
        let _ = writeln!(om, "# TYPE {name} gauge");
        for &t in &times {
            let v = if incident(t) { during } else { after };
            let _ = writeln!(om, "{name}{{{A}}} {v} {t}");
        }
    }
    om.push_str("# EOF\n");
    om
}

fn rfc3339(t: i64) -> String {
    kvtop_core::clock::utc(t as f64).replacen(' ', "T", 1)
}

#[test]
fn a_past_window_of_prometheus_replays_in_the_console() {
    if !(common::have_program("tmux")
        && common::have_program("prometheus")
        && common::have_program("promtool"))
    {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let start = (now - 3 * 3600) / 60 * 60;
    let data = openmetrics(start);
    let prom = PromServer::start("global:\n  scrape_interval: 15s\n", |dir| {
        backfill_openmetrics(&data, dir)
    });
    let home = tempfile::tempdir().expect("temp home");
    let bin = env!("CARGO_BIN_EXE_kvtop");
    let tmux = Tmux::new("prompast");
    tmux.start(
        &format!(
            "{bin} --prometheus {} --from {} --to +10m --step 15s --speed 40",
            prom.url,
            rfc3339(start + 30)
        ),
        120,
        30,
        home.path(),
        &[],
    );
    // The header names the replay; the breaker (KV > 88 % for 60 s) fires a minute in.
    let screen = tmux.wait_for("the replayed incident", Duration::from_secs(30), |s| {
        s.contains("replay of prometheus") && s.contains("vllm-a") && s.contains("KV > 88%")
    });
    assert!(screen.contains(" UP"), "{screen}");
    // `p` pauses the replay's clock (the header says so) and resumes it.
    tmux.send("p");
    let paused = tmux.wait_for("the pause", Duration::from_secs(5), |s| {
        s.lines().next().is_some_and(|l| l.contains("PAUSED"))
    });
    let header = |s: &str| s.lines().next().unwrap_or_default().to_owned();
    std::thread::sleep(Duration::from_secs(2));
    let still = tmux.capture();
    // Two seconds at 40× would be over a minute of the window: the clock stood still.
    assert_eq!(header(&still), header(&paused), "{still}");
    assert!(!still.contains("end of the window"), "{still}");
    tmux.send("p");
    tmux.wait_for("the resumed replay", Duration::from_secs(5), |s| {
        s.lines().next().is_some_and(|l| !l.contains("PAUSED"))
    });
    // The clock stops at the window's end; the cursor goes back through the replay.
    tmux.wait_for("the end of the window", Duration::from_secs(60), |s| {
        s.contains("end of the window")
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
