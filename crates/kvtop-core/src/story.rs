//! PURE. An engine's whole story as text for a pager: the pod's state, every vLLM argument,
//! the raw `cache_config_info` labels, every recent event and every log line kvtop holds,
//! oldest first. Lines are made safe for a terminal here (outside text: labels, events, logs),
//! so the pager, a search and a copy all see the same text.

use crate::engine::CacheConfig;
use crate::kube_model::PodInfo;
use crate::safe_text;

/// What a line of the story is, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoryKind {
    /// A section heading.
    Heading,
    /// A fact, an argument, a label.
    Fact,
    /// A Kubernetes event.
    Event,
    /// A log line.
    Log,
    /// Nothing known (`no event yet`).
    Missing,
}

/// One line of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoryLine {
    pub kind: StoryKind,
    pub text: String,
}

/// Longest line kept (a log line can be a whole stack trace on one line).
const MAX_LINE: usize = 4_096;

fn line(kind: StoryKind, text: &str) -> StoryLine {
    let text = safe_text::block(text, MAX_LINE);
    let text = match kind {
        // Marked in the text too, so a heading stands out in 16 colours, in monochrome and in
        // a copy.
        StoryKind::Heading => format!("── {text} ──"),
        _ => text.into_owned(),
    };
    StoryLine { kind, text }
}

/// The story of an engine whose pod is `pod` (`None`: not a discovered pod) and whose latest
/// `cache_config_info` is `cache`.
pub fn story(pod: Option<&PodInfo>, cache: Option<&CacheConfig>) -> Vec<StoryLine> {
    let mut out = Vec::new();
    let Some(pod) = pod else {
        out.push(line(StoryKind::Heading, "engine"));
        out.push(line(
            StoryKind::Missing,
            "not a Kubernetes pod: no arguments, events or logs (start with --kube to discover pods)",
        ));
        push_cache(&mut out, cache);
        return out;
    };
    out.push(line(
        StoryKind::Heading,
        &format!(
            "pod {}/{} (context {})",
            pod.key.namespace, pod.key.name, pod.key.context
        ),
    ));
    let mut state = format!(
        "{}{}{}",
        pod.phase.as_str(),
        if pod.ready {
            " · ready"
        } else {
            " · not ready"
        },
        if pod.terminating {
            " · terminating"
        } else {
            ""
        }
    );
    if let Some(reason) = &pod.waiting_reason {
        state.push_str(&format!(" · {reason}"));
    }
    out.push(line(StoryKind::Fact, &format!("state: {state}")));
    if let Some(node) = &pod.node {
        out.push(line(StoryKind::Fact, &format!("node: {node}")));
    }
    out.push(line(
        StoryKind::Fact,
        &format!("restarts: {} ({} container)", pod.restarts, pod.engine),
    ));
    if let Some(t) = &pod.last_termination {
        out.push(line(
            StoryKind::Fact,
            &format!("last exit: {} (code {})", t.reason, t.exit_code),
        ));
        if let Some(message) = &t.message {
            out.push(line(
                StoryKind::Fact,
                &format!("last exit message: {message}"),
            ));
        }
    }
    if let Some(owner) = &pod.owner {
        out.push(line(
            StoryKind::Fact,
            &format!("owner: {} {}", owner.kind, owner.name),
        ));
    }
    out.push(line(StoryKind::Heading, "arguments"));
    if pod.args.flags.is_empty() {
        let what = if pod.args.found {
            "vllm serve with no flags"
        } else {
            "no vLLM command line found in the container (the image's entry point)"
        };
        out.push(line(StoryKind::Missing, what));
    }
    if let Some(model) = &pod.args.model {
        out.push(line(StoryKind::Fact, &format!("model: {model}")));
    }
    for (flag, value) in &pod.args.flags {
        out.push(line(
            StoryKind::Fact,
            &format!("--{} {value}", flag.replace('_', "-")),
        ));
    }
    if !pod.env.is_empty() {
        out.push(line(StoryKind::Heading, "environment"));
        for var in &pod.env {
            let value = var.value.as_deref().unwrap_or("(from a reference)");
            out.push(line(StoryKind::Fact, &format!("{}={value}", var.name)));
        }
    }
    push_cache(&mut out, cache);
    out.push(line(
        StoryKind::Heading,
        &format!("events ({}, oldest first)", pod.events.len()),
    ));
    if pod.events.is_empty() {
        out.push(line(StoryKind::Missing, "no event yet"));
    }
    for event in pod.events.lines() {
        out.push(line(StoryKind::Event, event));
    }
    out.push(line(
        StoryKind::Heading,
        &format!("log ({} lines, oldest first)", pod.logs.len()),
    ));
    if pod.logs.is_empty() {
        out.push(line(StoryKind::Missing, "no log line yet"));
    }
    for log in pod.logs.lines() {
        out.push(line(StoryKind::Log, log));
    }
    out
}

fn push_cache(out: &mut Vec<StoryLine>, cache: Option<&CacheConfig>) {
    out.push(line(StoryKind::Heading, "cache_config_info"));
    match cache {
        Some(c) if !c.fields.is_empty() => {
            for (name, value) in c.fields.iter() {
                out.push(line(StoryKind::Fact, &format!("{name}=\"{value}\"")));
            }
        }
        _ => out.push(line(StoryKind::Missing, "not exported by this engine")),
    }
}

/// The next line at or after `from` (before it, backwards) that contains `query`, ignoring
/// case, wrapping around; `None` when no line does or the query is empty.
pub fn find(lines: &[StoryLine], query: &str, from: usize, forward: bool) -> Option<usize> {
    let needle = query.trim().to_lowercase();
    if needle.is_empty() || lines.is_empty() {
        return None;
    }
    let n = lines.len();
    let start = from.min(n - 1);
    (0..n)
        .map(|step| {
            if forward {
                (start + step) % n
            } else {
                (start + n - step) % n
            }
        })
        .find(|&i| lines[i].text.to_lowercase().contains(&needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_model::LineRing;

    fn pod() -> PodInfo {
        let mut pod = PodInfo::for_test("prod", "vllm-0");
        pod.args.found = true;
        pod.args.flags = vec![
            ("max_num_batched_tokens".into(), "8192".into()),
            ("enable_chunked_prefill".into(), "true".into()),
        ];
        pod.events = LineRing::new(5);
        pod.events
            .push("Warning BackOff: Back-off restarting failed container".into());
        pod.logs = LineRing::new(5);
        pod.logs
            .push("INFO 01-01 00:00:01 [api_server.py:1] starting".into());
        pod.logs.push(
            "ERROR 01-01 00:00:02 [core.py:9] CUDA out of memory\u{1b}]52;c;cHduZWQ=\u{7}".into(),
        );
        pod
    }

    #[test]
    fn every_argument_event_and_log_line_is_there_and_safe() {
        let cache = CacheConfig {
            fields: [("block_size", "16")].into_iter().collect(),
            ..CacheConfig::default()
        };
        let lines = story(Some(&pod()), Some(&cache));
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert!(
            texts.contains(&"--max-num-batched-tokens 8192"),
            "{texts:?}"
        );
        assert!(texts.contains(&"--enable-chunked-prefill true"));
        assert!(texts.contains(&"block_size=\"16\""));
        assert!(texts.contains(&"Warning BackOff: Back-off restarting failed container"));
        assert_eq!(lines.iter().filter(|l| l.kind == StoryKind::Log).count(), 2);
        assert!(
            lines.iter().all(|l| !l.text.contains('\u{1b}')),
            "{texts:?}"
        );
    }

    #[test]
    fn without_a_pod_the_story_says_so_and_keeps_the_cache_labels() {
        let lines = story(None, None);
        assert!(
            lines
                .iter()
                .any(|l| l.text.starts_with("not a Kubernetes pod"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.text == "not exported by this engine")
        );
    }

    #[test]
    fn search_wraps_around_both_ways_and_ignores_case() {
        let lines = story(Some(&pod()), None);
        let oom = find(&lines, "cuda OUT", 0, true);
        assert!(oom.is_some_and(|i| lines[i].text.contains("CUDA out of memory")));
        let last = lines.len() - 1;
        assert_eq!(
            find(&lines, "--max-num", last, true),
            find(&lines, "--max-num", 0, true)
        );
        assert_eq!(
            find(&lines, "back-off", last, false),
            find(&lines, "back-off", 0, true)
        );
        assert_eq!(find(&lines, "  ", 0, true), None);
        assert_eq!(find(&lines, "no such text", 3, false), None);
    }
}
