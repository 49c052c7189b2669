//! Writing the console's snapshot (`e`): the actions of the audit log over its span are added,
//! then its Markdown and JSON go to the files the state machine named.

use std::path::{Path, PathBuf};

use crate::app::snapshot::SnapshotJob;
use crate::diagnose::report::{markdown, snapshot};
use kvtop_core::fleet::Ts;

/// Why a snapshot was not written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the snapshot {path}: {source}")]
pub struct SnapshotError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Write `job`, with the actions `audit` (the audit log, when there is one) recorded since
/// the snapshot's start.
pub fn write(mut job: SnapshotJob, audit: Option<&Path>) -> Result<(), SnapshotError> {
    if let Some(text) = audit.and_then(|path| std::fs::read_to_string(path).ok()) {
        job.snapshot.actions = actions_since(&text, job.snapshot.started);
    }
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError { path, source }
    };
    if let Some(dir) = job.markdown.parent() {
        std::fs::create_dir_all(dir).map_err(err(dir))?;
    }
    std::fs::write(&job.markdown, markdown(&job.snapshot)).map_err(err(&job.markdown))?;
    std::fs::write(&job.json, snapshot::json(&job.snapshot)).map_err(err(&job.json))
}

/// One line per audit record written at or after `since`: `2026-11-26T04:05:12Z alice drain
/// vllm-a: ok`. Lines that are not records (a torn last line) are skipped.
pub fn actions_since(audit: &str, since: Ts) -> Vec<String> {
    audit
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|record| {
            record["time"]
                .as_str()
                .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
                .is_some_and(|t| t.as_second() as f64 >= since.floor())
        })
        .map(|record| {
            let text = |key: &str| record[key].as_str().unwrap_or("").to_owned();
            let outcome = match (record["result"].as_str(), record["until"].as_str()) {
                (Some(result), _) => format!(": {result}"),
                (None, Some(until)) => format!(" until {until}"),
                (None, None) => String::new(),
            };
            // The local account tells who it was when the cluster user is unknown.
            let who = match (record["user"].as_str(), record["os_user"].as_str()) {
                (Some("unknown") | None, Some(os)) => format!("{} ({os})", text("user")),
                _ => text("user"),
            };
            format!(
                "{} {who} {} {}{outcome}",
                text("time"),
                text("action"),
                text("target")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_the_records_of_the_span() {
        let audit = concat!(
            r#"{"time":"2026-11-26T03:00:00Z","user":"bob","action":"drain","target":"vllm-a","result":"ok"}"#,
            "\n",
            r#"{"time":"2026-11-26T04:05:12Z","user":"unknown","os_user":"alice","action":"snooze","target":"vllm-b","until":"2026-11-26T04:20:12Z"}"#,
            "\n",
            r#"{"time":"2026-11-26T04:06:00Z","user":"alice","action":"restart","target":"vllm-b","result":"error"}"#,
            "\n{\"torn"
        );
        // 2026-11-26T04:00:00Z
        let since = 1_795_665_600.0;
        assert_eq!(
            actions_since(audit, since),
            [
                "2026-11-26T04:05:12Z unknown (alice) snooze vllm-b until 2026-11-26T04:20:12Z",
                "2026-11-26T04:06:00Z alice restart vllm-b: error",
            ]
        );
    }
}
