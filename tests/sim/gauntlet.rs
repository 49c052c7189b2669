//! The bad-endpoint gauntlet: one console (real scrape workers over HTTP on 127.0.0.1, the
//! real state machine, the real screen drawn to a test backend) watching two healthy
//! simulated engines and one misbehaving endpoint per case of the README's "Bad endpoints"
//! list. For every case the bad engine's row shows its reason or the documented reading, the
//! healthy engines keep fresh data, every scrape worker keeps reporting (none panicked), the
//! console keeps drawing, and keys pressed while endpoints hang change the state at once.
//!
//! Transport cases start healthy and then go bad, as an engine does in an incident: their row
//! goes STALE with the reason while the target keeps failing. Data cases serve their odd
//! payload from the start and stay UP with what can be read from it.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::bad_server::{BadServer, Behaviour, gzip_bomb, sequence};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kvtop::app::{App, Event, update};
use kvtop::sources::{ScrapeSettings, ScrapeTarget, Scrapers, build_client};
use kvtop::theme::Theme;
use kvtop_core::clock::unix_now;
use kvtop_core::fleet::{
    EngineState, EngineStatus, Fleet, FleetSettings, ScrapeError, TargetId, TargetSpec,
};
use kvtop_sim::{Baseline, SimConfig};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;

/// Scrape interval of the gauntlet console; the timeout is 80 % of it, as by default.
const INTERVAL_MS: u64 = 500;
const TIMEOUT_MS: u64 = 400;
/// Body cap of the gauntlet console (the default is 8 MiB; a small cap keeps the 50 MB body
/// and the gzip bomb cheap on a shared machine, and the 10,000-series payload fits under it).
const BODY_LIMIT: usize = 2 * 1024 * 1024;
const WIDTH: u16 = 180;
const HEIGHT: u16 = 70;

/// A healthy V1 payload: 4 running, 2 waiting, KV 50 %.
fn gauges(running: &str, waiting: &str, kv: &str) -> String {
    format!(
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
         # TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {running}\n\
         # HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n\
         # TYPE vllm:num_requests_waiting gauge\n\
         vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} {waiting}\n\
         # HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n\
         # TYPE vllm:kv_cache_usage_perc gauge\n\
         vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} {kv}\n"
    )
}

fn good() -> Vec<u8> {
    gauges("4", "2", "0.5").into_bytes()
}

/// A V1 histogram family with cumulative `(le, count)` buckets as written.
fn histogram(family: &str, buckets: &[(&str, u64)]) -> String {
    let mut out = format!("# TYPE vllm:{family} histogram\n");
    for (le, count) in buckets {
        out.push_str(&format!(
            "vllm:{family}_bucket{{engine=\"0\",le=\"{le}\",model_name=\"m\"}} {count}\n"
        ));
    }
    let total = buckets.last().map_or(0, |(_, c)| *c);
    out.push_str(&format!(
        "vllm:{family}_count{{engine=\"0\",model_name=\"m\"}} {total}\n\
         vllm:{family}_sum{{engine=\"0\",model_name=\"m\"}} 1.0\n"
    ));
    out
}

fn counter(name: &str, value: u64) -> String {
    format!("# TYPE vllm:{name} counter\nvllm:{name}{{engine=\"0\",model_name=\"m\"}} {value}\n")
}

/// What one endpoint does, and when.
enum Plan {
    /// Healthy first; this behaviour once every engine is up.
    GoesBad(Behaviour),
    /// Healthy first; then its port is closed.
    StopsListening,
    /// This behaviour from the start.
    Serves(Behaviour),
}

fn cases() -> Vec<(&'static str, Plan)> {
    use Plan::*;
    let html = b"<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>\n".to_vec();
    // Invalid UTF-8 through and through: Latin-1 text and stray continuation bytes.
    let not_utf8 = b"\xff\xfe\x80 caf\xe9 \xc3\x28 \xa0\xa1\n\x80\x81\x82\n".to_vec();
    // Invalid UTF-8 in a HELP line and in a sample's value; the other lines are fine.
    let mut utf8_mixed = b"# HELP vllm:num_requests_running caf\xe9 \xff\n".to_vec();
    utf8_mixed.extend_from_slice(
        b"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n\
          vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} \xff\xfe\n\
          vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n",
    );
    // The same series twice with different values: the last reading wins.
    let duplicate = format!(
        "{}vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} 9\n",
        gauges("4", "2", "0.5")
    );
    // Generation tokens 1000, 2000, 3000, then 50: the process restarted.
    let backwards = [1000, 2000, 3000, 50]
        .iter()
        .map(|v| format!("{}{}", good_text(), counter("generation_tokens_total", *v)).into_bytes())
        .collect();
    // TTFT without a +Inf bucket; ITL complete. The first scrape sees no observation, the
    // second 20: the window holds exactly these deltas.
    let no_inf = vec![
        format!(
            "{}{}{}",
            good_text(),
            histogram(
                "time_to_first_token_seconds",
                &[("0.1", 0), ("0.5", 0), ("1.0", 0)]
            ),
            histogram(
                "inter_token_latency_seconds",
                &[("0.01", 0), ("0.05", 0), ("0.1", 0), ("+Inf", 0)]
            ),
        )
        .into_bytes(),
        format!(
            "{}{}{}",
            good_text(),
            histogram(
                "time_to_first_token_seconds",
                &[("0.1", 10), ("0.5", 20), ("1.0", 20)]
            ),
            histogram(
                "inter_token_latency_seconds",
                &[("0.01", 10), ("0.05", 20), ("0.1", 20), ("+Inf", 20)]
            ),
        )
        .into_bytes(),
    ];
    // Cumulative counts that go down (10, 5, 20): repaired upwards as Prometheus does.
    let non_monotonic = vec![
        format!(
            "{}{}",
            good_text(),
            histogram(
                "time_to_first_token_seconds",
                &[("0.1", 0), ("0.5", 0), ("1.0", 0), ("+Inf", 0)]
            )
        )
        .into_bytes(),
        format!(
            "{}{}",
            good_text(),
            histogram(
                "time_to_first_token_seconds",
                &[("0.1", 10), ("0.5", 5), ("1.0", 20), ("+Inf", 20)]
            )
        )
        .into_bytes(),
    ];
    // Escaped quote, backslash and newline in the model name (valid), and a raw newline
    // inside a label value (breaks its line in two malformed halves).
    let escapes =
        "vllm:num_requests_running{engine=\"0\",model_name=\"say \\\"hi\\\" C:\\\\x\\nnext\"} 4\n\
        vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"say \\\"hi\\\" C:\\\\x\\nnext\"} 0.5\n\
        vllm:num_requests_waiting{engine=\"0\",model_name=\"broken\nline\"} 2\n"
            .to_string();
    // 10,000 series: the engine's gauges among 9,997 series of an unrelated family.
    let mut many = good_text();
    for i in 0..9_997 {
        many.push_str(&format!(
            "lora_adapter_requests{{adapter=\"a{i}\"}} {}\n",
            i % 13
        ));
    }
    // HELP and TYPE said twice, differently: names decide how a value is read.
    let help_type = format!(
        "# HELP vllm:num_requests_running Something else.\n\
         # TYPE vllm:num_requests_running counter\n{}",
        gauges("4", "2", "0.5")
    );
    // The connection closed in the middle of the last line.
    let mut truncated = good_text();
    truncated.push_str("vllm:num_requests_swapped{engine=\"0\",model_na");
    // Streamed: 50 MB of valid lines, far over the cap.
    let line: Arc<[u8]> = b"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n"
        .to_vec()
        .into();
    vec![
        ("hang", GoesBad(Behaviour::Hang)),
        (
            "slowloris",
            GoesBad(Behaviour::Slowloris(Duration::from_secs(1))),
        ),
        ("http500", GoesBad(Behaviour::Status(500))),
        ("http404", GoesBad(Behaviour::Status(404))),
        ("http401", GoesBad(Behaviour::Status(401))),
        ("refused", StopsListening),
        ("reset", GoesBad(Behaviour::ResetMidBody)),
        (
            "body50mb",
            GoesBad(Behaviour::Stream {
                line,
                len: 50_000_000,
            }),
        ),
        (
            "gzipbomb",
            GoesBad(Behaviour::GzipBytes(gzip_bomb(64 * 1024 * 1024))),
        ),
        ("notutf8", GoesBad(Behaviour::Ok(not_utf8))),
        ("emptybody", GoesBad(Behaviour::Ok(Vec::new()))),
        ("htmlpage", GoesBad(Behaviour::Ok(html))),
        ("redirects", GoesBad(Behaviour::RedirectLoop)),
        (
            "naninf",
            Serves(Behaviour::Ok(gauges("+Inf", "-Inf", "NaN").into_bytes())),
        ),
        ("duplicate", Serves(Behaviour::Ok(duplicate.into_bytes()))),
        ("backwards", Serves(sequence(backwards))),
        ("noinf", Serves(sequence(no_inf))),
        ("nonmono", Serves(sequence(non_monotonic))),
        ("escapes", Serves(Behaviour::Ok(escapes.into_bytes()))),
        ("series10k", Serves(Behaviour::Ok(many.into_bytes()))),
        ("helptype", Serves(Behaviour::Ok(help_type.into_bytes()))),
        ("truncated", Serves(Behaviour::Ok(truncated.into_bytes()))),
        ("utf8mixed", Serves(Behaviour::Ok(utf8_mixed))),
    ]
}

fn good_text() -> String {
    gauges("4", "2", "0.5")
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The screen as rows of cells (one string per cell).
fn draw(app: &App) -> Vec<Vec<String>> {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    terminal
        .draw(|f| kvtop::ui::draw(f, app, unix_now()))
        .expect("draw");
    let buf = terminal.backend().buffer().clone();
    (0..HEIGHT)
        .map(|y| {
            (0..WIDTH)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

fn text(screen: &[Vec<String>]) -> String {
    screen
        .iter()
        .map(|row| row.concat())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The table row of engine `name` (rows start with a two-column badge and a space).
fn row<'s>(screen: &'s [Vec<String>], name: &str) -> Option<&'s Vec<String>> {
    screen.iter().find(|cells| {
        let line: String = cells.iter().skip(3).map(String::as_str).collect();
        line.starts_with(name)
            && line
                .get(name.len()..)
                .is_some_and(|rest| rest.starts_with(' '))
    })
}

/// The text of column `header` in `row`. Text columns are left-aligned (a value runs from its
/// header to the next header), value columns right-aligned (the last word before the end of
/// their header).
fn cell(screen: &[Vec<String>], row: &[String], header: &str) -> String {
    let header_row = screen
        .iter()
        .find(|cells| {
            let line = cells.concat();
            line.contains("STATUS") && line.contains("RUN") && line.contains("WAIT")
        })
        .expect("table header");
    // Header words as (start, end, text), a sort marker glued to a word counted apart.
    let mut words: Vec<(usize, usize, String)> = Vec::new();
    for (x, c) in header_row.iter().enumerate() {
        let blank = c.trim().is_empty() || c == "▲" || c == "▼";
        match words.last_mut() {
            Some((_, end, word)) if !blank && *end == x => {
                word.push_str(c);
                *end = x + 1;
            }
            _ if !blank => words.push((x, x + 1, c.clone())),
            _ => {}
        }
    }
    let i = words
        .iter()
        .position(|(_, _, w)| w == header)
        .unwrap_or_else(|| panic!("no column {header}"));
    let left_aligned = ["NAME", "MODEL", "STATUS", "HEALTH", "KV"].contains(&header);
    let (from, to) = if left_aligned {
        (words[i].0, words.get(i + 1).map_or(row.len(), |w| w.0))
    } else {
        (words.get(i.wrapping_sub(1)).map_or(0, |w| w.1), words[i].1)
    };
    let text = row
        .get(from..to)
        .map(|cells| cells.concat())
        .unwrap_or_default();
    if left_aligned {
        text.trim().to_string()
    } else {
        // The previous column may reach into the span (the KV bar): the value is its last word.
        text.split_whitespace()
            .last()
            .unwrap_or_default()
            .to_string()
    }
}

fn engine<'a>(app: &'a App, name: &str) -> &'a EngineState {
    app.fleet
        .engines()
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no engine row {name}"))
}

fn last_error(app: &App, id: TargetId) -> Option<ScrapeError> {
    app.fleet
        .targets()
        .iter()
        .find(|t| t.id == id)
        .filter(|t| t.failing)
        .and_then(|t| t.last_error.as_ref().map(|(_, e)| e.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_endpoint_shows_its_reason_while_the_console_stays_live() {
    let sim = kvtop_sim::start(SimConfig {
        engines: 2,
        baseline: Baseline::Healthy,
        gpus_per_node: 2,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let healthy: Vec<String> = sim.engines.iter().map(|e| e.name.clone()).collect();

    let settings = ScrapeSettings {
        interval: Duration::from_millis(INTERVAL_MS),
        timeout: Duration::from_millis(TIMEOUT_MS),
        body_limit: BODY_LIMIT,
        user_agent: "kvtop-gauntlet".into(),
        limits: Default::default(),
    };
    let mut fleet = Fleet::new(FleetSettings {
        interval: INTERVAL_MS as f64 / 1000.0,
        ..FleetSettings::default()
    });
    let mut targets = Vec::new();
    let mut servers: Vec<(&'static str, BadServer, Plan, TargetId)> = Vec::new();
    for endpoint in &sim.engines {
        let id = fleet.add_target(TargetSpec {
            name: endpoint.name.clone(),
            url: endpoint.url.clone(),
        });
        targets.push(ScrapeTarget {
            id,
            url: endpoint.url.clone(),
            bearer_token: None,
        });
    }
    for (name, plan) in cases() {
        let first = match &plan {
            Plan::Serves(behaviour) => behaviour.clone(),
            Plan::GoesBad(_) | Plan::StopsListening => Behaviour::Ok(good()),
        };
        let server = BadServer::start(first).await;
        let id = fleet.add_target(TargetSpec {
            name: name.into(),
            url: server.url.clone(),
        });
        targets.push(ScrapeTarget {
            id,
            url: server.url.clone(),
            bearer_token: None,
        });
        servers.push((name, server, plan, id));
    }
    let mut app = App::new(
        fleet,
        Theme::fallback(),
        "gauntlet".into(),
        settings.interval,
        Duration::from_secs(300),
    );
    let (tx, mut rx) = mpsc::channel(8192);
    let client = build_client(&settings).expect("client");
    let _scrapers = Scrapers::start(client, settings, targets, kvtop::sources::Outbox::new(tx));

    // Phase 1: every engine answers.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while app.fleet.counts().up < healthy.len() + servers.len() {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(event)) => {
                update(&mut app, event, unix_now());
            }
            Ok(None) => panic!("scrapers stopped"),
            Err(_) => panic!("not every engine came up:\n{}", text(&draw(&app))),
        }
    }

    // Phase 2: the transport cases go bad.
    for (_, server, plan, _) in &servers {
        match plan {
            Plan::GoesBad(behaviour) => server.set(behaviour.clone()),
            Plan::StopsListening => server.stop_listening(),
            Plan::Serves(_) => {}
        }
    }
    let went_bad = unix_now();
    let bad: Vec<(&str, TargetId)> = servers
        .iter()
        .filter(|(_, _, plan, _)| !matches!(plan, Plan::Serves(_)))
        .map(|(name, _, _, id)| (*name, *id))
        .collect();

    let mut reports_after: HashMap<TargetId, usize> = HashMap::new();
    let mut frames = 0usize;
    let mut keys_checked = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        // As the event loop does: wait for a report, fold in everything queued, then draw.
        let mut batch = Vec::new();
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(50), rx.recv()).await {
            batch.push(event);
            while let Ok(event) = rx.try_recv() {
                batch.push(event);
            }
        }
        for event in batch {
            if let Event::Scrape(report) = &event {
                if report.at > went_bad {
                    *reports_after.entry(report.target).or_default() += 1;
                }
            }
            update(&mut app, event, unix_now());
        }
        update(&mut app, Event::Tick, unix_now());
        if app.dirty {
            draw(&app);
            app.dirty = false;
            frames += 1;
        }

        // While the hung endpoint hangs, keys change the state at once.
        let hanging = last_error(&app, bad[0].1).is_some();
        if hanging && !keys_checked {
            answer_keys(&mut app);
            keys_checked = true;
        }

        let all_reasons = bad.iter().all(|(name, id)| {
            engine(&app, name).status == EngineStatus::Stale && last_error(&app, *id).is_some()
        });
        // Three reports each since the switch: every worker is alive (a panicked one stops
        // reporting), and the hung ones report their timeouts.
        let all_alive = app
            .fleet
            .targets()
            .iter()
            .all(|t| reports_after.get(&t.id).copied().unwrap_or(0) >= 3);
        let data_ready = engine(&app, "backwards").restarted_at.is_some()
            && engine(&app, "noinf").signals.itl_p95.is_some()
            && engine(&app, "nonmono").signals.ttft_p95.is_some()
            && healthy
                .iter()
                .all(|h| engine(&app, h).signals.gen_tps.is_some());
        if all_reasons && all_alive && data_ready && keys_checked {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gauntlet did not settle: reasons {all_reasons}, workers alive {all_alive}, \
             data {data_ready}, keys {keys_checked}\nreports since the switch: {reports_after:?}\n{}",
            text(&draw(&app))
        );
    }
    assert!(frames >= 3, "the console kept drawing ({frames} frames)");

    let screen = draw(&app);
    let shown = text(&screen);
    let row_of =
        |name: &str| row(&screen, name).unwrap_or_else(|| panic!("no row for {name}:\n{shown}"));
    let status = |name: &str| cell(&screen, row_of(name), "STATUS");
    let col = |name: &str, header: &str| cell(&screen, row_of(name), header);

    // Transport cases: STALE with the short reason on the row, the full one in the state.
    // (case, STATUS cell, the full reason of the detail pane)
    let expected = [
        ("hang", "STALE timeout", "timed out after 400 ms"),
        ("slowloris", "STALE timeout", "timed out after 400 ms"),
        (
            "http500",
            "STALE HTTP 500",
            "HTTP 500 Internal Server Error",
        ),
        ("http404", "STALE HTTP 404", "HTTP 404 Not Found"),
        ("http401", "STALE HTTP 401", "HTTP 401 Unauthorized"),
        ("refused", "STALE refused", "connection refused"),
        (
            "reset",
            "STALE body err",
            "reading body failed: connection reset",
        ),
        (
            "body50mb",
            "STALE too big",
            "body larger than the 2 MiB limit",
        ),
        (
            "gzipbomb",
            "STALE too big",
            "body larger than the 2 MiB limit",
        ),
        ("notutf8", "STALE bad data", "not metrics: not UTF-8 text"),
        ("emptybody", "STALE empty", "empty"),
        ("htmlpage", "STALE bad data", "not metrics: an HTML page"),
        ("redirects", "STALE redirect", "too many redirects"),
    ];
    for (name, shown_status, reason) in expected {
        assert_eq!(status(name), shown_status, "{name}:\n{shown}");
        let id = bad
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, id)| *id)
            .expect("case");
        let err = last_error(&app, id).expect("failing");
        assert_eq!(err.to_string(), reason, "{name}");
        // The row keeps its last good values while it says why it has no new ones.
        assert_eq!(col(name, "RUN"), "4", "{name}:\n{shown}");
    }

    // NaN and ±Inf readings are unknown: `–`, never a number, 0 or "inf".
    let e = engine(&app, "naninf");
    assert_eq!(e.status, EngineStatus::Up);
    assert_eq!(
        (e.signals.running, e.signals.waiting, e.signals.kv_usage),
        (None, None, None)
    );
    for header in ["RUN", "WAIT"] {
        assert_eq!(col("naninf", header), "–", "{header}:\n{shown}");
    }
    assert!(col("naninf", "KV").contains('–'), "{shown}");

    // A series repeated in one payload: the last reading wins.
    assert_eq!(col("duplicate", "RUN"), "9", "{shown}");
    assert_eq!(engine(&app, "duplicate").signals.running, Some(9.0));

    // A counter going backwards is a restart, never a negative rate.
    let e = engine(&app, "backwards");
    assert_eq!(status("backwards"), "RESTARTED", "{shown}");
    let tps = e.signals.gen_tps.expect("a rate across the restart");
    assert!(tps.is_finite() && tps > 0.0, "{tps}");
    assert!(!col("backwards", "TOK/S").starts_with('-'), "{shown}");

    // No +Inf bucket: the quantile is unknown. The complete ITL histogram beside it gives
    // 0.01 + 0.04 × (19 − 10) / 10 = 0.046 s for rank 0.95 × 20 = 19.
    let e = engine(&app, "noinf");
    assert_eq!(e.signals.ttft_p95, None);
    assert_eq!(col("noinf", "TTFT95"), "–", "{shown}");
    assert!((e.signals.itl_p95.expect("itl") - 0.046).abs() < 1e-9);
    assert_eq!(col("noinf", "ITL95"), "46ms", "{shown}");

    // Counts 10, 5, 20, 20 are repaired to 10, 10, 20, 20 (Prometheus' monotonic fix): rank 19
    // lies in (0.5, 1.0]: 0.5 + 0.5 × (19 − 10) / 10 = 0.95 s.
    let e = engine(&app, "nonmono");
    assert!((e.signals.ttft_p95.expect("ttft") - 0.95).abs() < 1e-9);
    assert_eq!(col("nonmono", "TTFT95"), "950ms", "{shown}");

    // Escapes are unescaped; the newline is not written to the terminal as a line break;
    // the raw newline breaks its line into two malformed ones and loses only that value.
    let e = engine(&app, "escapes");
    assert_eq!(e.id.model, "say \"hi\" C:\\x\nnext");
    assert_eq!(e.signals.running, Some(4.0));
    assert_eq!(e.signals.waiting, None);
    assert_eq!(
        col("escapes", "MODEL"),
        "say \"hi\" C:\\x\u{FFFD}next",
        "the newline takes one visible column:\n{shown}"
    );
    assert!(
        screen
            .iter()
            .all(|r| r.iter().all(|c| !c.contains(char::is_control)))
    );
    assert_eq!(target_of(&app, "escapes").malformed, 2);

    // 10,000 series are read under the cap and the engine's gauges found among them.
    assert_eq!(col("series10k", "RUN"), "4", "{shown}");
    assert_eq!(engine(&app, "series10k").signals.kv_usage, Some(0.5));
    let bytes = target_of(&app, "series10k").last_bytes.expect("size");
    assert!(bytes > 10_000 * 20 && bytes < BODY_LIMIT, "{bytes}");

    // Conflicting HELP/TYPE lines do not change how a value is read: names do.
    assert_eq!(col("helptype", "RUN"), "4", "{shown}");
    assert_eq!(engine(&app, "helptype").status, EngineStatus::Up);

    // A truncated last line is one malformed line; the rest of the payload counts.
    assert_eq!(col("truncated", "RUN"), "4", "{shown}");
    assert_eq!(target_of(&app, "truncated").malformed, 1);

    // Invalid UTF-8 in a comment is harmless; in a value it makes that line malformed.
    let e = engine(&app, "utf8mixed");
    assert_eq!(
        (e.signals.running, e.signals.waiting, e.signals.kv_usage),
        (Some(4.0), None, Some(0.5))
    );
    assert_eq!(target_of(&app, "utf8mixed").malformed, 1);

    // The healthy engines kept fresh data throughout.
    for name in &healthy {
        let e = engine(&app, name);
        assert_eq!(e.status, EngineStatus::Up, "{name}");
        assert!(e.signals.kv_usage.is_some() && e.signals.running.is_some());
        assert!(e.last_ok.is_some_and(|t| t > went_bad));
        assert_eq!(status(name), "UP", "{shown}");
    }
    for (name, _, plan, _) in &servers {
        if matches!(plan, Plan::Serves(_)) && *name != "backwards" {
            assert_eq!(status(name), "UP", "{name}:\n{shown}");
        }
    }
    sim.shutdown().await;
}

fn target_of<'a>(app: &'a App, name: &str) -> &'a kvtop_core::fleet::TargetState {
    app.fleet
        .targets()
        .iter()
        .find(|t| t.spec.name == name)
        .unwrap_or_else(|| panic!("no target {name}"))
}

/// Sort, filter and clear while endpoints hang: each key changes the state in its `update`.
fn answer_keys(app: &mut App) {
    let now = unix_now();
    let sort = app.sort;
    update(app, key(KeyCode::Char('s')), now);
    assert_ne!(app.sort, sort, "s moves the sort column");
    update(app, key(KeyCode::Char('S')), now);
    let descending = app.sort_descending;
    update(app, key(KeyCode::Char('S')), now);
    assert_ne!(app.sort_descending, descending, "S reverses the sort");

    update(app, key(KeyCode::Char('/')), now);
    assert!(app.filter_editing(), "/ opens the filter");
    for c in "hang".chars() {
        update(app, key(KeyCode::Char(c)), now);
    }
    update(app, key(KeyCode::Enter), now);
    assert_eq!(app.filter, "hang");
    let rows = app.rows(now);
    assert_eq!(rows.len(), 1, "the filter keeps one row");
    update(app, key(KeyCode::Char('/')), now);
    update(app, key(KeyCode::Esc), now);
    assert!(app.filter.is_empty(), "Esc clears the filter");
    assert!(app.rows(now).len() > 1);
}

/// The sort in force as the footer states it (`sort status ▼`, or the notice a key leaves:
/// `sorted by KV usage ▲`), from a captured screen. Some sort columns are hidden on narrow
/// screens; the footer always names the sort.
fn sort_shown(screen: &str) -> Option<String> {
    let footer = screen.lines().rev().find(|l| l.contains("sort"))?;
    let from = footer.find("sort")?;
    let rest = footer.get(from..)?;
    let end = rest.find(['▲', '▼'])? + '▲'.len_utf8();
    rest.get(..end).map(str::to_owned)
}

/// The gauntlet once through the real binary in a real terminal: a healthy endpoint and some
/// of the bad ones, configured by name. Every reason appears on its row, and `s` (next sort
/// column) is answered while endpoints hang; the key-to-screen latency seen through tmux is
/// printed (not asserted: `benches/key_latency.sh` measures it).
#[test]
fn the_binary_shows_each_reason_and_answers_keys_in_tmux() {
    if !common::have_program("tmux") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let bad: Vec<(&str, Plan, &str)> = vec![
        ("hang", Plan::GoesBad(Behaviour::Hang), "STALE timeout"),
        (
            "slowloris",
            Plan::GoesBad(Behaviour::Slowloris(Duration::from_secs(1))),
            "STALE timeout",
        ),
        (
            "http500",
            Plan::GoesBad(Behaviour::Status(500)),
            "STALE HTTP 500",
        ),
        ("refused", Plan::StopsListening, "STALE refused"),
        (
            "gzipbomb",
            Plan::GoesBad(Behaviour::GzipBytes(gzip_bomb(64 * 1024 * 1024))),
            "STALE too big",
        ),
        (
            "htmlpage",
            Plan::GoesBad(Behaviour::Ok(b"<html><body>down</body></html>".to_vec())),
            "STALE bad data",
        ),
        (
            "redirects",
            Plan::GoesBad(Behaviour::RedirectLoop),
            "STALE redirect",
        ),
    ];
    let servers: Vec<BadServer> = runtime.block_on(async {
        let mut servers = Vec::new();
        for _ in 0..=bad.len() {
            servers.push(BadServer::start(Behaviour::Ok(good())).await);
        }
        servers
    });
    let home = tempfile::tempdir().expect("home");
    let mut config = String::new();
    for (name, server) in std::iter::once("healthy")
        .chain(bad.iter().map(|(n, _, _)| *n))
        .zip(&servers)
    {
        config.push_str(&format!(
            "[[targets]]\nname = \"{name}\"\nurl = \"{}\"\n\n",
            server.url
        ));
    }
    let config_path = home.path().join("kvtop.toml");
    std::fs::write(&config_path, config).expect("config");

    let tmux = common::tmux::Tmux::new("gauntlet");
    let command = format!(
        "{} --config {} --interval 500ms --body-limit 2MiB",
        env!("CARGO_BIN_EXE_kvtop"),
        config_path.display()
    );
    tmux.start(&command, 140, 30, home.path(), &[]);
    let patience = Duration::from_secs(20);
    tmux.wait_for("every engine up", patience, |s| {
        s.matches(" UP ").count() == servers.len()
    });

    for ((_, plan, _), server) in bad.iter().zip(servers.iter().skip(1)) {
        match plan {
            Plan::GoesBad(behaviour) => server.set(behaviour.clone()),
            Plan::StopsListening => server.stop_listening(),
            Plan::Serves(_) => {}
        }
    }
    let row_of = |screen: &str, name: &str| {
        screen
            .lines()
            .find(|l| {
                l.get(3..)
                    .is_some_and(|r| r.starts_with(&format!("{name} ")))
            })
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let screen = tmux.wait_for("every reason on its row", patience, |s| {
        bad.iter()
            .all(|(name, _, reason)| row_of(s, name).contains(reason))
    });
    assert!(row_of(&screen, "healthy").contains(" UP "), "{screen}");

    // Key to screen while endpoints hang: `s` sorts by the next column, and the footer says so.
    let mut latencies = Vec::new();
    for _ in 0..10 {
        let before = sort_shown(&tmux.capture());
        tmux.send("s");
        let (_, took) = tmux.wait_every(
            "the footer to name the next sort",
            Duration::from_secs(5),
            Duration::from_millis(2),
            |s| sort_shown(s).is_some() && sort_shown(s) != before,
        );
        latencies.push(took);
    }
    latencies.sort();
    println!(
        "key to screen through tmux while endpoints hang: median {:?}, max {:?} (10 presses)",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    let screen = tmux.capture();
    assert!(
        row_of(&screen, "hang").contains("STALE timeout"),
        "{screen}"
    );

    tmux.send("q");
    assert_eq!(tmux.wait_exit(patience), "0");
    tmux.assert_terminal_restored();
}
