//! A hostile endpoint's label values reach every CLI output without their power: no control
//! character, bidi override or zero-width character gets to the terminal from `kvtop check`
//! (text, Markdown, JSON) or `kvtop rules list --explain`, and the text stays readable.

use std::process::{Command, Output};

use crate::common::bad_server::{BadServer, Behaviour};

/// A title change, an OSC 52 clipboard write, a screen clear, a C1 CSI (a cursor report the
/// terminal types back), a right-to-left override and a zero-width space, in one model name.
const HOSTILE: &str = "evil\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}[2J\u{9b}6n\u{202e}txt.exe\u{200b}";

fn unsafe_chars(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| *c != '\n' && kvtop_core::safe_text::is_unsafe(*c))
        .collect()
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_rules_show_hostile_labels_as_visible_text() {
    let fixture =
        std::fs::read_to_string("tests/fixtures/synthetic-v1-3models-prometheus_client.txt")
            .expect("V1 fixture");
    // Every model name becomes the hostile one (label values may hold any UTF-8).
    let mut payload = String::new();
    for line in fixture.lines() {
        let mut line = line.to_owned();
        while let Some(start) = line.find("model_name=\"") {
            let value = start + "model_name=\"".len();
            let Some(len) = line[value..].find('"') else {
                break;
            };
            line.replace_range(
                start..value + len + 1,
                &format!("model_nam\u{0}=\"{HOSTILE}\""),
            );
        }
        payload.push_str(&line.replace('\u{0}', "e"));
        payload.push('\n');
    }
    assert!(payload.contains(HOSTILE));
    let server = BadServer::start(Behaviour::Ok(payload.into_bytes())).await;
    let url = server.url.clone();
    let run = move |extra: &[&str]| {
        let mut args = vec![
            "check",
            "--target",
            url.as_str(),
            "--interval",
            "250ms",
            "--duration",
            "1s",
        ];
        args.extend_from_slice(extra);
        kvtop(&args)
    };
    let outputs = tokio::task::spawn_blocking(move || {
        [
            ("text", run(&[])),
            ("markdown", run(&["-o", "markdown"])),
            ("json", run(&["-o", "json"])),
        ]
    })
    .await
    .expect("check runs");
    for (format, (out, _home)) in &outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some_and(|c| c <= 2),
            "{format}: {stderr}"
        );
        assert_eq!(
            unsafe_chars(&stdout),
            Vec::<char>::new(),
            "{format} stdout:\n{stdout}"
        );
        assert_eq!(
            unsafe_chars(&stderr),
            Vec::<char>::new(),
            "{format} stderr:\n{stderr}"
        );
    }
    // Markdown shows the name as text, escapes and all.
    let markdown = String::from_utf8_lossy(&outputs[1].1.0.stdout).into_owned();
    assert!(markdown.contains("evil\\x1b]0;pwned\\x07"), "{markdown}");
    assert!(markdown.contains("\\u{202e}txt.exe"), "{markdown}");
    // JSON is still JSON, and says the same once parsed.
    let json = String::from_utf8_lossy(&outputs[2].1.0.stdout).into_owned();
    let doc: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert!(doc.get("status").is_some(), "{json}");

    let url = server.url.clone();
    let (explained, _home) = tokio::task::spawn_blocking(move || {
        kvtop(&[
            "rules",
            "list",
            "--explain",
            "--target",
            &url,
            "--interval",
            "250ms",
        ])
    })
    .await
    .expect("rules runs");
    let text = String::from_utf8_lossy(&explained.stdout);
    assert_eq!(
        explained.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&explained.stderr)
    );
    assert_eq!(unsafe_chars(&text), Vec::<char>::new(), "{text}");
    let plain = String::from_utf8_lossy(&outputs[0].1.0.stdout).into_owned();
    assert!(plain.contains("evil\\x1b]0;pwned"), "{plain}");
}
