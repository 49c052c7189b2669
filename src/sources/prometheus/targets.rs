//! PURE. `/api/v1/targets` (Prometheus, and VictoriaMetrics when it scrapes itself): the scrape
//! targets with their health and last error, and which of them serve engines.
//!
//! A target serves engines when its job does: a job some of whose series are engine series
//! (seen in any cycle so far), or a job the configuration names. So a pod Prometheus has never
//! managed to scrape still gets its row, with Prometheus' own error.
//!
//! Front ends without the targets API (Thanos Query, Mimir, a VictoriaMetrics cluster's
//! vmselect answer 404) still have each target's `up` series: the targets are read from it,
//! with their health (1 up, 0 down) but without an error text or interval.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::decode::{Answer, decode_error};
use super::query::LabelMap;
use kvtop_core::fleet::{InstanceKey, ScrapeError, SourceTarget, TargetHealth};
use kvtop_core::units::parse_duration;

/// One active target as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveTarget {
    /// Its labels after relabelling: those its series carry.
    pub labels: BTreeMap<String, String>,
    pub health: TargetHealth,
    pub last_error: Option<String>,
    /// Its scrape interval, seconds: `scrapeInterval`, else the discovered
    /// `__scrape_interval__` (VictoriaMetrics lists only the latter).
    pub scrape_interval: Option<f64>,
}

impl ActiveTarget {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(default, rename = "activeTargets")]
    active_targets: Vec<RawTarget>,
}

#[derive(Deserialize)]
struct RawTarget {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default, rename = "discoveredLabels")]
    discovered_labels: BTreeMap<String, String>,
    #[serde(default)]
    health: String,
    #[serde(default, rename = "lastError")]
    last_error: String,
    #[serde(default, rename = "scrapeInterval")]
    scrape_interval: Option<String>,
}

/// Decode an answer of `/api/v1/targets` of HTTP status `status`.
pub fn decode_targets(status: u16, body: &[u8]) -> Result<Vec<ActiveTarget>, ScrapeError> {
    let envelope: Envelope =
        serde_json::from_slice(body).map_err(|e| decode_error(status, body, &e))?;
    if envelope.status != "success" || !(200..300).contains(&status) {
        let message = format!(
            "{}: {}",
            envelope.error_type.as_deref().unwrap_or("error"),
            envelope.error.as_deref().unwrap_or("(no message)")
        );
        return Err(ScrapeError::Http {
            status,
            reason: Some(message),
        });
    }
    let targets = envelope.data.map(|d| d.active_targets).unwrap_or_default();
    Ok(targets
        .into_iter()
        .map(|raw| {
            let interval = raw
                .scrape_interval
                .as_deref()
                .or_else(|| {
                    raw.discovered_labels
                        .get("__scrape_interval__")
                        .map(String::as_str)
                })
                .and_then(|text| parse_duration(text).ok())
                .map(|d| d.as_secs_f64())
                .filter(|secs| *secs > 0.0);
            ActiveTarget {
                labels: raw.labels,
                health: match raw.health.as_str() {
                    "up" => TargetHealth::Up,
                    "down" => TargetHealth::Down,
                    _ => TargetHealth::Unknown,
                },
                last_error: Some(raw.last_error).filter(|e| !e.trim().is_empty()),
                scrape_interval: interval,
            }
        })
        .collect())
}

/// The `up` query for the targets of `jobs` (every target's before any job is known).
pub fn up_query(labels: &LabelMap, jobs: &BTreeSet<String>) -> String {
    if jobs.is_empty() {
        return "up".to_owned();
    }
    let alternatives: Vec<String> = jobs.iter().map(|job| regex_escape(job)).collect();
    format!("up{{{}=~\"{}\"}}", labels.job, alternatives.join("|"))
}

/// `text` matched literally inside a PromQL regex in a double-quoted string.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' => {
                out.push_str("\\\\");
                out.push(c);
            }
            '"' => out.push_str("\\\""),
            _ => out.push(c),
        }
    }
    out
}

/// The targets an answer to [`up_query`] names: its labels, up when `up` is 1, down when 0.
pub fn targets_from_up(answer: &Answer<'_>) -> Vec<ActiveTarget> {
    answer
        .series
        .iter()
        .map(|item| ActiveTarget {
            labels: item
                .labels()
                .filter(|(name, _)| *name != "__name__")
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
            health: match item.sample() {
                Some(1.0) => TargetHealth::Up,
                Some(0.0) => TargetHealth::Down,
                _ => TargetHealth::Unknown,
            },
            last_error: None,
            scrape_interval: None,
        })
        .collect()
}

/// Whether the server has no targets API at all (as opposed to failing this once).
pub fn no_targets_api(error: &ScrapeError) -> bool {
    matches!(
        error,
        ScrapeError::Http {
            status: 404 | 405 | 501,
            ..
        }
    )
}

/// The targets of the jobs that serve engines, as the fleet takes them.
pub fn engine_targets(
    labels: &LabelMap,
    targets: &[ActiveTarget],
    engine_jobs: &BTreeSet<String>,
) -> Vec<SourceTarget> {
    targets
        .iter()
        .filter(|t| engine_jobs.contains(t.label(&labels.job)))
        .map(|t| SourceTarget {
            instance: InstanceKey::new(
                t.label(&labels.namespace),
                t.label(&labels.pod),
                t.label(&labels.instance),
            ),
            node: labels
                .node
                .as_deref()
                .map(|n| t.label(n))
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
            health: t.health,
            last_error: t.last_error.clone(),
            scrape_interval: t.scrape_interval,
        })
        .collect()
}

/// The longest scrape interval of the engine targets, seconds.
pub fn longest_interval(targets: &[SourceTarget]) -> Option<f64> {
    targets
        .iter()
        .filter_map(|t| t.scrape_interval)
        .fold(None, |max: Option<f64>, i| {
            Some(max.map_or(i, |m| m.max(i)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMETHEUS: &[u8] = br#"{"status":"success","data":{"activeTargets":[{"discoveredLabels":{"__address__":"127.0.0.1:1","__scrape_interval__":"2s","job":"vllm"},"labels":{"instance":"127.0.0.1:1","job":"vllm","namespace":"llm","pod":"dead-pod"},"scrapePool":"vllm","scrapeUrl":"http://127.0.0.1:1/metrics","globalUrl":"http://vm:1/metrics","lastError":"Get \"http://127.0.0.1:1/metrics\": dial tcp 127.0.0.1:1: connect: connection refused","lastScrape":"2026-11-26T00:57:48.076797145Z","lastScrapeDuration":0.000457422,"health":"down","scrapeInterval":"15s","scrapeTimeout":"1s"},{"labels":{"instance":"n:9100","job":"node"},"health":"up","lastError":"","scrapeInterval":"1m"}],"droppedTargets":[]}}"#;

    const VICTORIA: &[u8] = br#"{"status":"success","data":{"activeTargets":[{"discoveredLabels":{"__address__":"127.0.0.1:1","__scrape_interval__":"2s","job":"vllm"},"labels":{"instance":"127.0.0.1:1","job":"vllm","pod":"dead-pod"},"scrapePool":"vllm","lastError":"error when scraping","lastScrape":"2026-11-26T00:57:49.122Z","lastScrapeDuration":0,"lastSamplesScraped":0,"health":"unknown"}],"droppedTargets":[]}}"#;

    #[test]
    fn prometheus_targets_keep_their_error_and_interval() {
        let targets = decode_targets(200, PROMETHEUS).expect("targets");
        assert_eq!(targets.len(), 2);
        assert_eq!(targets[0].health, TargetHealth::Down);
        assert_eq!(targets[0].scrape_interval, Some(15.0));
        assert!(
            targets[0]
                .last_error
                .as_deref()
                .is_some_and(|e| e.ends_with("connection refused"))
        );
        assert_eq!(targets[1].last_error, None);
        assert_eq!(targets[1].scrape_interval, Some(60.0));
    }

    #[test]
    fn victoria_metrics_gives_the_interval_in_the_discovered_labels() {
        let targets = decode_targets(200, VICTORIA).expect("targets");
        assert_eq!(targets[0].scrape_interval, Some(2.0));
        assert_eq!(targets[0].health, TargetHealth::Unknown);
    }

    #[test]
    fn only_the_jobs_that_serve_engines_count() {
        let targets = decode_targets(200, PROMETHEUS).expect("targets");
        let jobs: BTreeSet<String> = ["vllm".to_owned()].into();
        let engines = engine_targets(&LabelMap::default(), &targets, &jobs);
        assert_eq!(engines.len(), 1);
        assert_eq!(engines[0].instance, InstanceKey::new("llm", "dead-pod", ""));
        assert_eq!(longest_interval(&engines), Some(15.0));
        assert!(engine_targets(&LabelMap::default(), &targets, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn without_a_targets_api_the_up_series_name_the_targets() {
        let labels = LabelMap::default();
        assert_eq!(up_query(&labels, &BTreeSet::new()), "up");
        let jobs: BTreeSet<String> = ["vllm".to_owned(), "llm.d+x".to_owned()].into();
        assert_eq!(up_query(&labels, &jobs), r#"up{job=~"llm\\.d\\+x|vllm"}"#);
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"up","job":"vllm","instance":"10.0.0.1:8000","pod":"a","namespace":"llm"},"value":[1,"1"]},
            {"metric":{"__name__":"up","job":"vllm","instance":"10.0.0.2:8000","pod":"b","namespace":"llm"},"value":[1,"0"]}]}}"#;
        let answer = super::super::decode::decode_answer(200, body).expect("answer");
        let targets = targets_from_up(&answer);
        let engines = engine_targets(&labels, &targets, &["vllm".to_owned()].into());
        assert_eq!(engines.len(), 2);
        assert_eq!(engines[0].instance, InstanceKey::new("llm", "a", ""));
        assert_eq!(engines[0].health, TargetHealth::Up);
        assert_eq!(engines[1].health, TargetHealth::Down);
        assert_eq!(engines[1].last_error, None);
        assert!(!targets[0].labels.contains_key("__name__"));
        assert!(no_targets_api(&ScrapeError::Http {
            status: 404,
            reason: None
        }));
        assert!(!no_targets_api(&ScrapeError::Timeout { after_ms: 800 }));
    }

    #[test]
    fn an_error_answer_keeps_the_servers_words() {
        let body = br#"{"status":"error","errorType":"unavailable","error":"not ready"}"#;
        assert_eq!(
            decode_targets(503, body),
            Err(ScrapeError::Http {
                status: 503,
                reason: Some("unavailable: not ready".into())
            })
        );
        assert!(decode_targets(404, b"404 page not found").is_err());
    }
}
