//! `kvtop check --record` and `--replay`: a recording replayed gives the findings the live run
//! gave, at the same instants; a torn, damaged or newer recording says what and where, and what
//! can be read is replayed.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn kvtop(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command.args(args);
    crate::common::isolate_home(&mut command, home);
    command
        .env_remove("KVTOP_CONFIG")
        .output()
        .expect("kvtop runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

/// A 3-minute simulated check of a KV-thrashing engine at 20×, recorded to `rec.kvr`.
fn recorded(home: &Path) -> (Value, std::path::PathBuf) {
    let file = home.join("rec.kvr");
    let path = file.to_str().expect("utf-8 path");
    let out = kvtop(
        home,
        &[
            "check",
            "--sim",
            "--engines",
            "3",
            "--scenario",
            "kv-thrash@1",
            "--time-scale",
            "20",
            "--duration",
            "3m",
            "-o",
            "json",
            "--record",
            path,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    (json(&out), file)
}

fn replay(home: &Path, file: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "check",
        "--replay",
        file.to_str().expect("utf-8"),
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    kvtop(home, &args)
}

#[test]
fn a_replayed_recording_gives_the_live_findings_at_the_same_instants() {
    let home = tempfile::tempdir().expect("temp dir");
    let (live, file) = recorded(home.path());
    let out = replay(home.path(), &file, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let replayed = json(&out);
    let results = &live["results"];
    assert!(
        results
            .as_array()
            .is_some_and(|r| r.iter().any(|f| f["rule"] == "kv-breaker")),
        "{live}"
    );
    // Same findings, same since and firing times to the bit, same order; the same signals.
    assert_eq!(replayed["results"], *results);
    assert_eq!(replayed["engines"], live["engines"]);
    assert_eq!(replayed["observed"]["cycles"], live["observed"]["cycles"]);
    assert_eq!(replayed["status"], live["status"]);

    // --to before the fault: nothing fires yet; --from bounds the cycles reported.
    let early = replay(home.path(), &file, &["--to", "+20s"]);
    assert_eq!(early.status.code(), Some(0), "{}", stderr(&early));
    let late = json(&replay(home.path(), &file, &["--from", "+150s"]));
    let cycles = late["observed"]["cycles"].as_u64().unwrap_or(0);
    assert!(cycles > 0 && cycles < live["observed"]["cycles"].as_u64().unwrap_or(0));
    assert_eq!(late["results"], *results);
}

#[test]
fn a_torn_or_damaged_recording_names_the_file_and_offset_and_replays_what_it_can() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_, file) = recorded(home.path());
    let bytes = std::fs::read(&file).expect("recording");

    // A crash mid-record: the last record is cut.
    let torn = home.path().join("torn.kvr");
    std::fs::write(&torn, bytes.get(..bytes.len() - 5).expect("bytes")).expect("write");
    let out = replay(home.path(), &torn, &[]);
    let err = stderr(&out);
    assert!(err.contains("torn.kvr"), "{err}");
    assert!(
        err.contains("cut short") && err.contains("at byte"),
        "{err}"
    );
    assert!(out.status.code().is_some_and(|c| c <= 2), "{err}");
    assert!(json(&out)["observed"]["cycles"].as_u64().unwrap_or(0) > 10);

    // A damaged byte in the middle: the checksum finds it (or, when the byte is a record's
    // length, the length check does); what came before is replayed.
    let damaged = home.path().join("damaged.kvr");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    if let Some(b) = flipped.get_mut(middle) {
        *b ^= 0x5a;
    }
    std::fs::write(&damaged, &flipped).expect("write");
    let out = replay(home.path(), &damaged, &[]);
    let err = stderr(&out);
    assert!(
        err.contains("damaged.kvr")
            && (err.contains("checksum") || err.contains("length out of bounds (damaged)"))
            && err.contains("at byte"),
        "{err}"
    );
    assert!(err.contains("record(s) before it are replayed"), "{err}");

    // A newer format, and not a recording at all: refused, naming the file.
    let newer = home.path().join("newer.kvr");
    let mut bumped = bytes.clone();
    if let Some(b) = bumped.get_mut(8) {
        *b = 7;
    }
    std::fs::write(&newer, &bumped).expect("write");
    let out = replay(home.path(), &newer, &[]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.contains("newer.kvr") && err.contains("format 7"),
        "{err}"
    );
    let text = home.path().join("metrics.txt");
    std::fs::write(&text, "# HELP vllm:num_requests_running\n").expect("write");
    let err = stderr(&replay(home.path(), &text, &[]));
    assert!(err.contains("not a kvtop recording"), "{err}");
}

#[test]
fn recording_never_overwrites_an_earlier_file() {
    let home = tempfile::tempdir().expect("temp dir");
    let file = home.path().join("rec.kvr");
    std::fs::write(&file, b"an earlier recording").expect("write");
    let path = file.to_str().expect("utf-8");
    let out = kvtop(
        home.path(),
        &[
            "check",
            "--sim",
            "--engines",
            "1",
            "--time-scale",
            "30",
            "--duration",
            "10s",
            "--record",
            path,
        ],
    );
    assert!(
        out.status.code().is_some_and(|c| c <= 2),
        "{}",
        stderr(&out)
    );
    let kept = home.path().join("rec.kvr.1");
    assert_eq!(
        std::fs::read(&kept).expect("rotated"),
        b"an earlier recording"
    );
    assert!(std::fs::read(&file).expect("new").starts_with(b"KVTOPREC"));
}

/// A format-1 recording (written by kvtop before format 2: `check --sim --engines 2
/// --scenario kv-thrash@1 --time-scale 20 --duration 2m --record`) still replays, to the
/// findings and signals that run reported live.
#[test]
fn a_format_1_recording_still_replays_to_its_live_findings() {
    let home = tempfile::tempdir().expect("temp dir");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let file = fixtures.join("recording-v1-kv-thrash.kvr");
    let bytes = std::fs::read(&file).expect("fixture");
    assert_eq!(bytes.get(8..10), Some(&[1u8, 0][..]), "a format-1 file");
    let expected: Value = serde_json::from_slice(
        &std::fs::read(fixtures.join("recording-v1-kv-thrash.expected.json")).expect("expected"),
    )
    .expect("json");
    let out = replay(home.path(), &file, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let replayed = json(&out);
    assert!(!stderr(&out).contains("at byte"), "{}", stderr(&out));
    assert_eq!(replayed["results"], expected["results"]);
    assert_eq!(replayed["engines"], expected["engines"]);
}

/// What `--record` writes now is format 2 (compressed blocks); the replay test above reads it.
#[test]
fn recordings_are_written_in_format_2() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_, file) = recorded(home.path());
    let bytes = std::fs::read(&file).expect("recording");
    assert_eq!(bytes.get(8..10), Some(&[2u8, 0][..]));
}

/// A recording holds the actions run from the recorded console: `check --replay` lists those
/// of its window, in every format, with the API's text made safe.
#[test]
fn a_replay_lists_the_actions_of_its_window_safely_in_every_format() {
    use crate::common::recorded_drain::{CONFIRMED, FAILED, write};
    let home = tempfile::tempdir().expect("temp dir");
    let (file, start) = write(home.path());
    let path = file.to_str().expect("utf-8");
    let out = replay(home.path(), &file, &[]);
    let doc = json(&out);
    let at: Vec<f64> = doc["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["at"].as_f64().expect("at") - start)
        .collect();
    assert_eq!(at, [CONFIRMED, FAILED]);
    assert_eq!(doc["actions"][0]["phase"], "started");
    assert_eq!(doc["actions"][1]["phase"], "failed");
    assert_eq!(doc["actions"][1]["target"], "vllm-0");
    let text = kvtop(home.path(), &["check", "--replay", path]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("Actions during the window:"), "{text}");
    assert!(
        text.contains("prod llm/vllm-0: drain vllm-0: confirmed (1 requests)"),
        "{text}"
    );
    let markdown = kvtop(home.path(), &["check", "--replay", path, "-o", "markdown"]);
    let markdown = String::from_utf8_lossy(&markdown.stdout).into_owned();
    assert!(
        markdown.contains("## Actions during the window"),
        "{markdown}"
    );
    for output in [
        &text,
        &markdown,
        &String::from_utf8_lossy(&out.stdout).into_owned(),
    ] {
        assert!(output.contains("HTTP 403"), "{output}");
        assert!(
            !output.contains('\u{1b}') && !output.contains('\u{7}'),
            "{output}"
        );
    }
    // Only what lies in the window: the confirmation comes before this --from.
    let from = format!("+{}s", CONFIRMED as u64 + 20);
    let late = json(&replay(home.path(), &file, &["--from", &from]));
    assert_eq!(late["actions"].as_array().map(Vec::len), Some(1));
    // Without any, a report has no such section.
    let plain =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recording-v1-kv-thrash.kvr");
    assert!(
        json(&replay(home.path(), &plain, &[]))
            .get("actions")
            .is_none()
    );
}
