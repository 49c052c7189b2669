//! `kvtop check --prometheus URL --from --to`: a TSDB backfilled (promtool) with a past incident,
//! replayed through the live queries, derivations and rules, gives the incident's findings with
//! their fire and resolve times inside it; a gap in the data stays a gap.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

use std::time::{Duration, Instant};

use common::prometheus::{PromServer, backfill_openmetrics};
use common::victoria::VmServer;
use serde_json::Value;

/// Samples every 15 s.
const SAMPLE: i64 = 15;
/// The data: 40 minutes, from 2h20m ago (whole minutes, so the samples are on the steps).
const SPAN: i64 = 40 * 60;
/// The incident starts 10 minutes in and lasts 5 minutes.
const INCIDENT_AFTER: i64 = 10 * 60;
const INCIDENT_LASTS: i64 = 5 * 60;
/// `vllm-b` has no sample for 12 minutes from 25 minutes in (beyond the 5 minute lookback).
const GAP_AFTER: i64 = 25 * 60;
const GAP_LASTS: i64 = 12 * 60;

const A: &str = r#"pod="vllm-a",namespace="llm",model_name="m",engine="0""#;
const B: &str = r#"pod="vllm-b",namespace="llm",model_name="m",engine="0""#;

/// A gauge family: its name, `vllm-a`'s value at a time, and `vllm-b`'s constant value.
type Family<'f> = (&'static str, &'f dyn Fn(i64) -> f64, f64);

struct Timeline {
    start: i64,
}

impl Timeline {
    fn now() -> Timeline {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        Timeline {
            start: (now - 140 * 60) / 60 * 60,
        }
    }

    fn incident(&self) -> (i64, i64) {
        let from = self.start + INCIDENT_AFTER;
        (from, from + INCIDENT_LASTS)
    }

    fn gap(&self) -> (i64, i64) {
        let from = self.start + GAP_AFTER;
        (from, from + GAP_LASTS)
    }

    /// Every sample: `(family, labels, value, unix seconds)`, family by family. `vllm-a`: KV
    /// 50 %, 4 running, nothing waiting, except during the incident: KV 97 % with 60 waiting.
    /// `vllm-b`: KV 30 %, 2 running, and no sample during the gap.
    fn samples(&self) -> Vec<(&'static str, &'static str, f64, i64)> {
        let (inc_from, inc_to) = self.incident();
        let (gap_from, gap_to) = self.gap();
        let in_incident = |t: i64| (inc_from..inc_to).contains(&t);
        let families: [Family; 3] = [
            (
                "vllm:kv_cache_usage_perc",
                &|t| if in_incident(t) { 0.97 } else { 0.5 },
                0.3,
            ),
            ("vllm:num_requests_running", &|_| 4.0, 2.0),
            (
                "vllm:num_requests_waiting",
                &|t| if in_incident(t) { 60.0 } else { 0.0 },
                0.0,
            ),
        ];
        let times = || (0..=SPAN / SAMPLE).map(|k| self.start + k * SAMPLE);
        let mut out = Vec::new();
        for (name, a, b) in families {
            out.extend(times().map(|t| (name, A, a(t), t)));
            out.extend(
                times()
                    .filter(|t| !(gap_from..gap_to).contains(t))
                    .map(|t| (name, B, b, t)),
            );
        }
        out
    }

    /// The samples as OpenMetrics, for promtool's backfill.
    fn openmetrics(&self) -> String {
        let mut om = String::new();
        let mut family = "";
        for (name, labels, value, t) in self.samples() {
            if name != family {
                let _ = writeln!(om, "# TYPE {name} gauge");
                family = name;
            }
            let _ = writeln!(om, "{name}{{{labels}}} {value} {t}");
        }
        om.push_str("# EOF\n");
        om
    }

    /// The samples in Prometheus' text format with millisecond timestamps, for
    /// VictoriaMetrics' `/api/v1/import/prometheus`.
    fn import_text(&self) -> String {
        let mut text = String::new();
        for (name, labels, value, t) in self.samples() {
            let _ = writeln!(text, "{name}{{{labels}}} {value} {}", t * 1000);
        }
        text
    }
}

fn rfc3339(t: i64) -> String {
    // `2026-11-26 04:45:00Z` as RFC 3339 writes it.
    kvtop_core::clock::utc(t as f64).replacen(' ', "T", 1)
}

fn check(home: &Path, url: &str, from: i64, to: i64, extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command
        .args(["check", "--prometheus", url, "--from"])
        .arg(rfc3339(from))
        .arg("--to")
        .arg(rfc3339(to))
        .args(extra);
    common::isolate_home(&mut command, home);
    command
        .env_remove("KVTOP_CONFIG")
        .output()
        .expect("kvtop runs")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The server a replay reads: a real Prometheus on a promtool-backfilled TSDB, or a real
/// VictoriaMetrics the samples were imported into.
enum Server {
    Prometheus(PromServer),
    Victoria(VmServer),
}

impl Server {
    fn url(&self) -> &str {
        match self {
            Server::Prometheus(p) => &p.url,
            Server::Victoria(v) => &v.url,
        }
    }

    fn log(&self) -> String {
        match self {
            Server::Prometheus(p) => p.log(),
            Server::Victoria(v) => v.log(),
        }
    }
}

fn prometheus(timeline: &Timeline) -> Option<Server> {
    if !(common::have_program("prometheus") && common::have_program("promtool")) {
        return None;
    }
    let data = timeline.openmetrics();
    Some(Server::Prometheus(PromServer::start(
        "global:\n  scrape_interval: 15s\n",
        |dir| backfill_openmetrics(&data, dir),
    )))
}

/// VictoriaMetrics with the samples imported, once every one of them answers a query.
fn victoria(timeline: &Timeline) -> Option<Server> {
    if !common::have_program("victoria-metrics") {
        return None;
    }
    let vm = VmServer::start("scrape_configs: []\n", Duration::from_secs(1));
    let expected = timeline.samples().len();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let http = reqwest::Client::new();
        vm.import(timeline.import_text()).await;
        // Wait until every sample answers.
        let count = format!(
            "sum(count_over_time({{__name__=~\"vllm:.*\"}}[{}s]))",
            SPAN + 60
        );
        let at = (timeline.start + SPAN + 30).to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let url = reqwest::Url::parse_with_params(
                &format!("{}/api/v1/query", vm.url),
                [("query", count.as_str()), ("time", at.as_str())],
            )
            .expect("query url");
            let answer: Value = http
                .get(url)
                .send()
                .await
                .expect("query")
                .json()
                .await
                .expect("json");
            let found = answer["data"]["result"][0]["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok());
            if found == Some(expected as f64) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{expected} samples imported, {found:?} found: {answer}\n{}",
                vm.log()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    Some(Server::Victoria(vm))
}

fn episodes<'d>(doc: &'d Value, rule: &str, name: &str) -> Vec<&'d Value> {
    doc["episodes"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|e| e["rule"] == rule && e["name"] == name)
                .collect()
        })
        .unwrap_or_default()
}

fn time(v: &Value) -> i64 {
    v.as_f64()
        .map_or_else(|| panic!("not a time: {v}"), |t| t.round() as i64)
}

#[test]
fn a_past_incident_replayed_from_prometheus_gives_its_findings_at_their_times() {
    let timeline = Timeline::now();
    if let Some(server) = prometheus(&timeline) {
        past_incident(&timeline, &server);
    }
}

#[test]
fn a_past_incident_replayed_from_victoria_metrics_gives_its_findings_at_their_times() {
    let timeline = Timeline::now();
    if let Some(server) = victoria(&timeline) {
        past_incident(&timeline, &server);
    }
}

fn past_incident(timeline: &Timeline, prom: &Server) {
    let home = tempfile::tempdir().expect("temp dir");
    let (inc_from, inc_to) = timeline.incident();
    // The window: 5 minutes before the incident to 5 minutes after it.
    let out = check(
        home.path(),
        prom.url(),
        inc_from - 300,
        inc_to + 300,
        &["--step", "15s", "-o", "json"],
    );
    let doc = json(&out);
    // Resolved by the window's end, the incident still makes the verdict.
    assert_eq!(out.status.code(), Some(1), "{doc}\n{}", prom.log());
    assert_eq!(doc["status"], "ProblemDetected", "{doc}");
    assert_eq!(doc["observed"]["interval_seconds"], 15.0);
    assert_eq!(doc["observed"]["cycles"], (INCIDENT_LASTS + 600) / 15 + 1);

    // kv-breaker (KV > 88 % for 60 s): fires a minute into the incident, and clears at the
    // first step after it (KV back at 50 %).
    let breaker = episodes(&doc, "kv-breaker", "vllm-a");
    assert_eq!(breaker.len(), 1, "{doc}");
    let e = breaker[0];
    assert_eq!(time(&e["since"]), inc_from, "{e}");
    assert_eq!(time(&e["firing_since"]), inc_from + 60, "{e}");
    assert_eq!(time(&e["resolved_at"]), inc_to, "{e}");
    // queue-deep (waiting > 50 for 3 m).
    let queue = episodes(&doc, "queue-deep", "vllm-a");
    assert_eq!(queue.len(), 1, "{doc}");
    assert_eq!(time(&queue[0]["firing_since"]), inc_from + 180);
    assert_eq!(time(&queue[0]["resolved_at"]), inc_to);
    // Nothing about the healthy engine, and both engines are up at the end.
    assert!(episodes(&doc, "kv-breaker", "vllm-b").is_empty(), "{doc}");
    let engines = doc["engines"].as_array().expect("engines");
    assert_eq!(engines.len(), 2, "{doc}");
    assert!(engines.iter().all(|e| e["status"]["word"] == "UP"), "{doc}");
    // At the end the findings are resolved: nothing fires in `results`.
    assert_eq!(doc["results"], serde_json::json!([]), "{doc}");

    // The same window ending during the incident: firing at the end, fired inside it.
    let during = json(&check(
        home.path(),
        prom.url(),
        inc_from - 300,
        inc_from + 240,
        &["--step", "15s", "-o", "json"],
    ));
    let firing: Vec<&Value> = during["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["rule"] == "kv-breaker")
        .collect();
    assert_eq!(firing.len(), 1, "{during}");
    assert_eq!(time(&firing[0]["firing_since"]), inc_from + 60);
    assert_eq!(
        episodes(&during, "kv-breaker", "vllm-a")[0]["resolved_at"],
        Value::Null
    );

    // Markdown for a postmortem lists the episode.
    let md = check(
        home.path(),
        prom.url(),
        inc_from - 300,
        inc_to + 300,
        &["--step", "15s", "-o", "markdown"],
    );
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.contains("## Fired during the window"), "{text}");
    assert!(text.contains("`kv-breaker`"), "{text}");
}

#[test]
fn a_gap_in_the_data_stays_a_gap() {
    let timeline = Timeline::now();
    if let Some(server) = prometheus(&timeline) {
        gap_stays_gap(&timeline, &server);
    }
}

#[test]
fn a_gap_in_victoria_metrics_data_stays_a_gap() {
    let timeline = Timeline::now();
    if let Some(server) = victoria(&timeline) {
        gap_stays_gap(&timeline, &server);
    }
}

fn gap_stays_gap(timeline: &Timeline, prom: &Server) {
    let home = tempfile::tempdir().expect("temp dir");
    let (gap_from, _) = timeline.gap();
    // From 6 minutes into the gap (past Prometheus' 5-minute lookback) to 9 minutes in: the
    // engine is still listed (a source forgets a member 10 minutes after its last sample,
    // which VictoriaMetrics, with its shorter lookback, dates to the gap's start).
    let out = check(
        home.path(),
        prom.url(),
        gap_from + 360,
        gap_from + 540,
        &["--step", "15s", "-o", "json"],
    );
    let doc = json(&out);
    let engines = doc["engines"].as_array().expect("engines");
    let b = engines
        .iter()
        .find(|e| e["pod"] == "vllm-b")
        .unwrap_or_else(|| panic!("vllm-b is listed, not up: {doc}"));
    assert_eq!(b["status"]["word"], "DOWN", "{doc}");
    assert!(
        b["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not in Prometheus' answer")),
        "{doc}"
    );
    // No value invented for it: its signals are unknown, not its last values.
    assert_eq!(b["signals"]["kv_usage"], Value::Null, "{doc}");
    assert_eq!(b["signals"]["running"], Value::Null, "{doc}");
    // It is reported unreachable, then down, as live; nothing about its KV or queue.
    let about_b: Vec<&Value> = doc["episodes"]
        .as_array()
        .expect("episodes")
        .iter()
        .filter(|e| e["name"] == "vllm-b")
        .collect();
    assert!(
        !about_b.is_empty()
            && about_b
                .iter()
                .all(|e| e["rule"] == "engine-unreachable" || e["rule"] == "engine-down"),
        "{doc}"
    );
    let a = engines
        .iter()
        .find(|e| e["pod"] == "vllm-a")
        .expect("vllm-a");
    assert_eq!(a["status"]["word"], "UP", "{doc}");
    assert_eq!(a["signals"]["kv_usage"], 0.5, "{doc}");

    // Entirely before the data: nothing answered, nothing invented.
    let empty = check(
        home.path(),
        prom.url(),
        timeline.start - 3600,
        timeline.start - 1800,
        &["--step", "1m", "-o", "json"],
    );
    assert_eq!(empty.status.code(), Some(3));
    let doc = json(&empty);
    assert_eq!(doc["status"], "NoData", "{doc}");
    // Only the source's own row stands, as live when Prometheus names no engine.
    let rows = doc["engines"].as_array().expect("engines");
    assert!(
        rows.iter()
            .all(|e| e["name"] == prom.url() && e["signals"]["kv_usage"].is_null()),
        "{doc}"
    );
}

#[test]
fn a_window_longer_than_a_range_query_allows_is_read_in_chunks() {
    let timeline = Timeline::now();
    let Some(prom) = prometheus(&timeline) else {
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    let (inc_from, inc_to) = timeline.incident();
    // 1 s steps over 40 minutes: 2,400 steps per series, read in several range queries.
    let out = check(
        home.path(),
        prom.url(),
        timeline.start,
        timeline.start + SPAN,
        &["--step", "1s", "-o", "json"],
    );
    let doc = json(&out);
    assert_eq!(doc["observed"]["cycles"], SPAN + 1, "{doc}");
    let breaker = episodes(&doc, "kv-breaker", "vllm-a");
    assert_eq!(breaker.len(), 1, "{doc}");
    // With 1 s steps the finding fires 60 s after the condition starts to hold.
    let fired = time(&breaker[0]["firing_since"]);
    assert_eq!(fired, inc_from + 60, "{doc}");
    let resolved = time(&breaker[0]["resolved_at"]);
    assert_eq!(resolved, inc_to, "{doc}");
}
