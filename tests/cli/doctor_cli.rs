//! `kvtop doctor` as a user runs it: against the simulated cluster everything kvtop needs is
//! there (exit 0); a denied permission is named with its fix; a broken kubeconfig, an unknown
//! context or an unreachable API server is named (exit 1); outside text never reaches the
//! terminal raw.

use std::path::Path;
use std::process::{Command, Output};

use kvtop_sim::kube::{Denial, KubeSimHandle};
use serde_json::Value;

use crate::common::kube_sim::fast_cluster;

/// `kvtop doctor ARGS` with its home, config and state in `home` (on a blocking thread: the
/// simulated API keeps serving on the test's runtime).
async fn doctor(home: &Path, args: &[&str]) -> Output {
    let home = home.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_kvtop"))
            .arg("doctor")
            .args(&args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env_remove("KVTOP_CONFIG")
            .env_remove("KUBECONFIG")
            .output()
            .unwrap_or_else(|e| panic!("kvtop runs: {e}"))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

fn write_kubeconfig(home: &Path, kube: &KubeSimHandle) -> String {
    let path = home.join("kubeconfig");
    std::fs::write(&path, kube.kubeconfig_yaml("sim")).unwrap_or_else(|e| panic!("{e}"));
    path.display().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

/// The check named `name` in a JSON report.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {report:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_cluster_has_everything_kvtop_needs() {
    // Six engines: the sixth is down, as a real fleet may have one; that is the fleet's
    // trouble (a warning), not a missing piece of kvtop's set-up.
    let (_sim, kube) = fast_cluster(6, 7).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = write_kubeconfig(home.path(), &kube);
    let out = doctor(
        home.path(),
        &[
            "--kube",
            "--kubeconfig",
            &kubeconfig,
            "-n",
            "llm",
            "-o",
            "json",
        ],
    )
    .await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    assert_eq!(check(&report, "config file")["verdict"], "ok");
    assert_eq!(check(&report, "rules")["verdict"], "ok");
    let server = check(&report, "context sim: API server");
    assert_eq!(server["verdict"], "ok");
    assert!(
        server["detail"]
            .as_str()
            .unwrap()
            .contains("Kubernetes v1."),
        "{server}"
    );
    let discovery = check(&report, "context sim: discovery");
    let found = discovery["detail"].as_str().unwrap();
    assert!(
        found.starts_with("6 engine pod(s) among 6 pod(s) in namespace llm; matched by -l "),
        "{found}"
    );
    for read in [
        "list pods",
        "watch pods",
        "get pods/log",
        "get pods/proxy",
        "list events",
    ] {
        let name = format!("context sim: RBAC {read} in llm");
        assert_eq!(check(&report, &name)["verdict"], "ok", "{name}");
    }
    for action in [
        "drain",
        "undrain",
        "restart",
        "rollout-restart",
        "cordon",
        "uncordon",
        "drain-node",
    ] {
        let name = format!("context sim: RBAC for {action}");
        assert_eq!(check(&report, &name)["verdict"], "ok", "{name}: {report:#}");
    }
    let endpoints: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["area"] == "engines" && c["check"].as_str().unwrap().starts_with("pod "))
        .collect();
    assert_eq!(endpoints.len(), 6, "{report:#}");
    let up: Vec<&&Value> = endpoints.iter().filter(|c| c["verdict"] == "ok").collect();
    assert_eq!(up.len(), 5, "{report:#}");
    for c in &up {
        assert!(
            c["detail"]
                .as_str()
                .unwrap()
                .contains("vLLM 0.10 or later (V1 engine metric names)"),
            "{c}"
        );
    }
    assert_eq!(
        check(&report, "metrics reachable")["detail"],
        "5 of 6 endpoint(s) answered"
    );

    // The table a person reads: a verdict and, where something is wrong, a fix.
    let out = doctor(
        home.path(),
        &["--kube", "--kubeconfig", &kubeconfig, "-n", "llm"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    let table = text(&out.stdout);
    assert!(table.contains("ok    context sim: API server"), "{table}");
    assert!(table.contains("fix: is the engine up"), "{table}");
    assert!(table.contains("everything kvtop needs is there"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_permissions_are_named_with_their_fix() {
    let (_sim, kube) = fast_cluster(2, 7).await;
    kube.deny(Denial::new("create", "pods/eviction"));
    kube.deny(Denial::new("get", "pods/log"));
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = write_kubeconfig(home.path(), &kube);
    let out = doctor(
        home.path(),
        &["--kube", "--kubeconfig", &kubeconfig, "-o", "json"],
    )
    .await;
    let report = json(&out);
    // Watching still works: denied logs and evictions are warnings.
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let logs = check(&report, "context sim: RBAC get pods/log in llm");
    assert_eq!(logs["verdict"], "warn");
    assert_eq!(logs["fix"], "ask for a Role granting get pods/log in llm");
    let drain = check(&report, "context sim: RBAC for drain");
    assert_eq!(drain["verdict"], "warn", "{drain}");
    assert!(
        drain["detail"]
            .as_str()
            .unwrap()
            .contains("create pods/eviction"),
        "{drain}"
    );
    assert_eq!(
        check(&report, "context sim: RBAC for restart")["verdict"],
        "ok"
    );

    // Without the right to list pods nothing can be watched: that fails.
    kube.deny(Denial::new("list", "pods"));
    let out = doctor(
        home.path(),
        &["--kube", "--kubeconfig", &kubeconfig, "-o", "json"],
    )
    .await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    assert_eq!(
        check(&report, "context sim: RBAC list pods in llm")["verdict"],
        "fail"
    );
    assert_eq!(check(&report, "context sim: discovery")["verdict"], "fail");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_kubeconfig_is_named() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let missing = home.path().join("no-such-kubeconfig");
    let missing = missing.display().to_string();
    let out = doctor(home.path(), &["--kube", "--kubeconfig", &missing]).await;
    assert_eq!(out.status.code(), Some(1));
    let table = text(&out.stdout);
    let line = table
        .lines()
        .find(|l| l.starts_with("FAIL  kubeconfig"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains(&missing), "{line}");
    assert!(table.contains("fix: kvtop read --kubeconfig"), "{table}");

    // Not YAML at all.
    let garbage = home.path().join("garbage.yaml");
    std::fs::write(&garbage, "clusters: [:::\n").unwrap();
    let out = doctor(
        home.path(),
        &[
            "--kube",
            "--kubeconfig",
            &garbage.display().to_string(),
            "-o",
            "json",
        ],
    )
    .await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(check(&report, "kubeconfig")["verdict"], "fail");

    // A context the kubeconfig does not have, named with the ones it has; then a server
    // nobody listens on (a port just released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: gone\nclusters:\n- name: gone\n  \
             cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: gone\n  context:\n    \
             cluster: gone\n    user: me\nusers:\n- name: me\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    let kubeconfig = kubeconfig.display().to_string();
    let out = doctor(
        home.path(),
        &[
            "--kubeconfig",
            &kubeconfig,
            "--context",
            "prod",
            "-o",
            "json",
        ],
    )
    .await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1));
    let detail = check(&report, "kubeconfig")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        detail.contains("no context \"prod\" in the kubeconfig (it has: gone)"),
        "{detail}"
    );

    let out = doctor(home.path(), &["--kubeconfig", &kubeconfig, "-o", "json"]).await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1));
    let server = check(&report, "context gone: API server");
    assert_eq!(server["verdict"], "fail");
    assert!(
        server["fix"]
            .as_str()
            .unwrap()
            .contains("kubectl --context gone version"),
        "{server}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_to_watch_and_a_broken_config_fail() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = doctor(home.path(), &["-o", "json"]).await;
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(check(&report, "something to watch")["verdict"], "fail");

    let config = home.path().join("kvtop.toml");
    std::fs::write(&config, "[scrape]\ninterval = \"fast\"\n").unwrap();
    let out = doctor(
        home.path(),
        &["--config", &config.display().to_string(), "-o", "json"],
    )
    .await;
    let report = json(&out);
    let file = check(&report, "config file");
    assert_eq!(file["verdict"], "fail");
    assert!(
        file["detail"].as_str().unwrap().contains("interval"),
        "{file}"
    );
}

/// A context name is outside text: escape sequences in it reach the terminal as visible text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_text_is_printed_harmless() {
    let (_sim, kube) = fast_cluster(1, 7).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = write_kubeconfig(home.path(), &kube);
    let out = doctor(
        home.path(),
        &[
            "--kubeconfig",
            &kubeconfig,
            "--context",
            "\u{1b}]0;owned\u{7}\u{1b}[2J",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAIL  kubeconfig"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
}

/// A real Prometheus scraping a simulated fleet and its dcgm-exporter: the doctor reads its
/// version, finds the vLLM and DCGM series and measures how old the newest sample is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_is_checked_for_version_series_and_lag() {
    if !crate::common::have_program("prometheus") {
        return;
    }
    let sim = kvtop_sim::start(kvtop_sim::SimConfig {
        engines: 2,
        seed: 3,
        ..kvtop_sim::SimConfig::default()
    })
    .await
    .unwrap();
    let host = |url: &str| {
        url.trim_start_matches("http://")
            .trim_end_matches("/metrics")
            .to_owned()
    };
    let engines: Vec<String> = sim
        .engines
        .iter()
        .map(|e| format!("\"{}\"", host(&e.url)))
        .collect();
    let exporters: Vec<String> = sim
        .dcgm
        .iter()
        .map(|d| format!("\"{}\"", host(&d.url)))
        .collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  \
         - job_name: vllm\n    static_configs:\n      - targets: [{}]\n  \
         - job_name: dcgm\n    static_configs:\n      - targets: [{}]\n",
        engines.join(", "),
        exporters.join(", ")
    );
    let prom = crate::common::prometheus::PromServer::start(&config, |_| {});
    let home = tempfile::tempdir().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    let report = loop {
        let out = doctor(home.path(), &["--prometheus", &prom.url, "-o", "json"]).await;
        let report = json(&out);
        // Prometheus scrapes each target on its own schedule: wait until both engines and the
        // exporter have been scraped once.
        let both_engines = check(&report, "vLLM series")["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("2 "));
        if out.status.code() == Some(0)
            && check(&report, "DCGM series")["verdict"] == "ok"
            && both_engines
        {
            break report;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{report:#}\n{}",
            prom.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let server = check(&report, "server")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    let version = server
        .strip_prefix(&format!("{}: reachable, ", prom.url))
        .unwrap_or_else(|| panic!("{server}"));
    assert!(
        version.split('.').count() >= 3 && version.starts_with(|c: char| c.is_ascii_digit()),
        "{server}"
    );
    assert_eq!(
        check(&report, "vLLM series")["detail"],
        "2 engine(s) export vllm:num_requests_running"
    );
    let lag = check(&report, "lag");
    assert_eq!(lag["verdict"], "ok", "{lag}");
    assert!(
        lag["detail"]
            .as_str()
            .unwrap()
            .starts_with("newest vLLM sample "),
        "{lag}"
    );
}
