//! The `kvtop check` and `kvtop rules` binaries: exit codes, the JSON shape (parsed with
//! serde_json), the Markdown snapshot, and the rules listing. The simulator runs in-process at
//! 30× (see `diagnose::observe` for why the findings stay honest at that speed).

use std::process::{Command, Output};

use serde_json::Value;

/// Run `kvtop ARGS` with a home of its own (no user config or rules file is read).
fn kvtop(args: &[&str]) -> (Output, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("temp home");
    let output = Command::new(env!("CARGO_BIN_EXE_kvtop"))
        .args(args)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("KVTOP_CONFIG")
        .output()
        .expect("kvtop runs");
    (output, home)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn check_sim(scenario: Option<&str>, duration: &str, output: &str) -> Output {
    check_sim_with(scenario, duration, output, &[])
}

/// [`check_sim`] with more arguments.
fn check_sim_with(scenario: Option<&str>, duration: &str, output: &str, more: &[&str]) -> Output {
    let mut args = vec![
        "check",
        "--sim",
        "--engines",
        "3",
        "--time-scale",
        "30",
        "--duration",
        duration,
        "-o",
        output,
    ];
    if let Some(s) = scenario {
        args.extend(["--scenario", s]);
    }
    args.extend(more);
    kvtop(&args).0
}

#[test]
fn a_crash_looping_engine_is_critical_and_the_json_is_shaped_like_k8sgpt() {
    let out = check_sim(Some("oom-crashloop@0"), "60s", "json");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("JSON on stdout");
    assert_eq!(doc["status"], "ProblemDetected");
    assert!(doc["problems"].as_u64().is_some_and(|n| n >= 1), "{doc}");
    let results = doc["results"].as_array().expect("results");
    let oom = results
        .iter()
        .find(|r| r["rule"] == "cuda-oom")
        .expect("the out-of-memory finding");
    assert_eq!(oom["kind"], "Engine");
    assert_eq!(oom["severity"], "critical");
    assert!(
        oom["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("vllm-llama-8b-"))
    );
    assert_eq!(oom["parentObject"], "meta-llama/Llama-3.1-8B-Instruct");
    let text = oom["error"][0]["text"].as_str().expect("error text");
    assert!(text.starts_with("CUDA out of memory: "), "{text}");
    assert!(text.contains("torch.cuda.OutOfMemoryError"), "{text}");
    assert!(oom["evidence"].as_array().is_some_and(|e| !e.is_empty()));
    for field in ["details", "cause", "action", "source"] {
        assert!(
            oom[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field}"
        );
    }
    // Every result carries the k8sgpt fields.
    for r in results {
        assert!(r["kind"].is_string() && r["name"].is_string() && r["error"].is_array());
    }
    assert_eq!(doc["observed"]["exit_code"], 2);
    assert_eq!(doc["observed"]["time_scale"], 30.0);
}

#[test]
fn a_healthy_simulated_fleet_exits_0_with_status_ok() {
    let out = check_sim(None, "90s", "json");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(doc["status"], "OK");
    assert_eq!(doc["problems"], 0);
    assert_eq!(doc["errors"], Value::Null);
    assert!(
        doc["results"]
            .as_array()
            .is_some_and(|r| r.iter().all(|r| r["severity"] == "info"))
    );
}

#[test]
fn a_warning_exits_1_and_the_text_names_the_rule() {
    let out = check_sim(Some("high-cpu@0"), "150s", "text");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("kvtop check: warning: 0 critical, "),
        "{text}"
    );
    assert!(
        text.contains("Process CPU above 100%  [cpu-high; T1.5]"),
        "{text}"
    );
    assert!(text.contains("evidence: cpu_cores = "), "{text}");
    // What the check waited for is on stderr.
    let err = stderr(&out);
    assert!(
        err.contains("observing 4 targets for 2m30s of simulated time"),
        "{err}"
    );
}

#[test]
fn the_markdown_snapshot_has_the_fleet_table_findings_and_history() {
    let out = check_sim(Some("kv-thrash@0"), "150s", "markdown");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(
        md.starts_with("# kvtop incident snapshot: WARNING\n"),
        "{md}"
    );
    assert!(md.contains("## Fleet\n"));
    assert!(
        md.contains("| Engine | Model | Status | KV | Running | Waiting | TTFT p95 | Gen tok/s |")
    );
    // Three engine rows, each with its status.
    assert_eq!(
        md.lines()
            .filter(|l| l.starts_with("| `vllm-") && l.contains(" | UP"))
            .count(),
        3
    );
    assert!(
        md.contains("### WARNING: High TTFT, KV cache full on engine `vllm-llama-8b-"),
        "{md}"
    );
    assert!(md.contains("- Evidence: `ttft_p95 = "), "{md}");
    assert!(md.contains("## Over the observation\n"));
    assert!(md.contains("| Engine | KV min | KV max | TTFT p95 max |"));
}

#[test]
fn nothing_to_scrape_exits_3() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let url = format!("http://127.0.0.1:{port}/metrics");
    let (out, _home) = kvtop(&[
        "check",
        "--target",
        &url,
        "--interval",
        "250ms",
        "--duration",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("No target answered a scrape:"), "{text}");
    assert!(text.contains("connection refused"), "{text}");
    let (out, _home) = kvtop(&["check"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("no targets to check"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rules_list_shows_every_rule_and_explains_against_the_demo_fleet() {
    let (out, _home) = kvtop(&["rules", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("ID "), "{text}");
    let oom = text
        .lines()
        .find(|l| l.starts_with("cuda-oom "))
        .expect("cuda-oom listed");
    assert!(
        oom.contains("critical") && oom.contains("T1.3, T2.P1, T3.1, T4.1"),
        "{oom}"
    );

    let (out, _home) = kvtop(&[
        "rules",
        "list",
        "--explain",
        "--demo",
        "--interval",
        "250ms",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("    when:  running > 0 and (gen_stall_s > 0s or gen_tps == 0)"),
        "{text}"
    );
    // The simulator has no Kubernetes: pod facts and events are missing on every engine.
    assert!(
        text.contains("    fleet: env.OMP_NUM_THREADS missing on 8 of 8 engines"),
        "{text}"
    );
    assert!(text.contains("Coverage over 8 engines"), "{text}");
}

#[test]
fn the_demo_story_raises_findings_within_its_first_minute() {
    let (out, _home) = kvtop(&[
        "check",
        "--demo",
        "--engines",
        "8",
        "--time-scale",
        "20",
        "--duration",
        "65s",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let rules = |key: &str| -> Vec<String> {
        doc[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["rule"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let firing = rules("results");
    // Engine 7 is down from the start; engine 2 runs out of memory 20 s after its 30 s start.
    assert!(firing.contains(&"engine-down".to_owned()), "{firing:?}");
    assert!(firing.contains(&"cuda-oom".to_owned()), "{firing:?}");
    // The KV thrash (10 s) and the queue (20 s) are on their way.
    let pending = rules("pending");
    assert!(pending.contains(&"kv-breaker".to_owned()), "{pending:?}");
    assert!(pending.contains(&"ttft-high".to_owned()), "{pending:?}");
}

#[test]
fn a_time_scale_too_fast_to_simulate_is_refused_up_front() {
    for scale in ["1e4", "1e5", "inf", "NaN", "0", "-3"] {
        let started = std::time::Instant::now();
        let flag = format!("--time-scale={scale}");
        let (out, _home) = kvtop(&["check", "--sim", &flag, "--duration", "60s"]);
        assert_ne!(out.status.code(), Some(0), "{scale}");
        assert!(stdout(&out).is_empty(), "{scale}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("use a factor above 0 and below 10000"),
            "{scale}: {}",
            stderr(&out)
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{scale}"
        );
    }
}

#[test]
fn a_model_rule_reads_the_merged_quantile_that_the_models_array_reports() {
    let home = tempfile::tempdir().expect("temp home");
    let rules = home.path().join("rules.toml");
    std::fs::write(
        &rules,
        r#"[[rule]]
id = "model-e2e-slo"
title = "Model e2e p99 above its SLO"
severity = "warning"
per = "model"
when = "merged(e2e_p99) > 1ms"
cause = "test"
action = "test"
source = "test"
"#,
    )
    .expect("rules file");
    let rules = rules.to_string_lossy().into_owned();
    let out = check_sim_with(None, "60s", "json", &["--rules", &rules]);
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let models = doc["models"].as_array().expect("models");
    assert!(!models.is_empty(), "{doc:#}");
    let results = doc["results"].as_array().expect("results");
    for model in models {
        let name = model["model"].as_str().expect("model name");
        let e2e = model["quantiles"]["e2e_p99"].as_f64();
        assert!(e2e.is_some_and(|v| v > 0.001), "{model:#}");
        // One finding per model, about the model.
        let found: Vec<&Value> = results
            .iter()
            .filter(|r| r["rule"] == "model-e2e-slo" && r["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{name}: {results:#?}");
    }
}
