//! The Kubernetes pod of the selected engine: a panel in the full detail pane (state, owner,
//! restarts, last termination, scrape route, vLLM arguments, environment, latest event, last
//! log lines), a short marker for the fleet table's status cell and the compact detail.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::format;
use crate::theme::Theme;
use kvtop_core::fleet::Ts;
use kvtop_core::kube_model::{PodInfo, ScrapeRoute, VllmArgs};

/// The panel's title.
const TITLE: &str = " pod ";
/// Heading of the log lines.
const LOG_HEADING: &str = "log";
/// Shown when no log line has been read yet.
const NO_LOG: &str = "no log lines yet";
/// Label column width.
const LABEL: usize = 8;
/// Restart count prefix in markers (`↻3`).
const RESTARTS: &str = "↻";

/// The state worth a glance in a table cell: `CrashLoop`, `OOMKilled`, `NotReady`, … with
/// the restart count (`CrashLoop↻4`, `↻2` alone when nothing else is wrong), and its style.
pub fn marker(pod: &PodInfo, theme: &Theme) -> Option<(String, Style)> {
    let restarts = (pod.restarts > 0).then(|| format!("{RESTARTS}{}", pod.restarts));
    match (pod.marker(), restarts) {
        (Some(word), Some(r)) => Some((format!("{word}{r}"), style_of(word, theme))),
        (Some(word), None) => Some((word.to_owned(), style_of(word, theme))),
        (None, Some(r)) => Some((r, theme.warn)),
        (None, None) => None,
    }
}

fn style_of(word: &str, theme: &Theme) -> Style {
    match word {
        "CrashLoop" | "OOMKilled" | "Failed" | "ImagePullBackOff" | "ErrImagePull" => theme.error,
        _ => theme.warn,
    }
}

/// Draw the panel of `pod` in `area`.
pub(crate) fn render_panel(
    buf: &mut Buffer,
    area: Rect,
    theme: &Theme,
    pod: &PodInfo,
    route: Option<ScrapeRoute>,
    now: Ts,
) {
    if area.width < 10 || area.height < 2 {
        return;
    }
    let block = Block::new()
        .borders(Borders::TOP | Borders::LEFT)
        .border_style(theme.border)
        .title(Line::styled(TITLE, theme.title));
    let inner = block.inner(area);
    block.render(area, buf);
    let width = usize::from(inner.width.saturating_sub(1));
    let mut lines = facts(pod, route, theme, now, width);
    let room = usize::from(inner.height).saturating_sub(lines.len() + 1);
    if room > 0 {
        lines.push(Line::styled(
            format!(
                "{LOG_HEADING} {}",
                "─".repeat(width.saturating_sub(LOG_HEADING.len() + 1))
            ),
            theme.dim,
        ));
        let log = pod.logs.lines();
        if log.is_empty() {
            lines.push(Line::styled(NO_LOG, theme.dim));
        }
        let skip = log.len().saturating_sub(room);
        for line in log.iter().skip(skip) {
            let style = if looks_like_error(line) {
                theme.error
            } else {
                theme.base
            };
            lines.push(Line::styled(
                format::truncate(&compact_log_line(line), width),
                style,
            ));
        }
    }
    Paragraph::new(lines).render(
        Rect {
            x: inner.x + 1,
            width: inner.width.saturating_sub(1),
            ..inner
        },
        buf,
    );
}

/// A vLLM log line without what a narrow panel cannot afford: `INFO 01-01 12:00:10
/// [loggers.py:123] Engine 000: Avg …` becomes `12:00:10 Engine 000: Avg …`; other levels keep
/// their level (`ERROR 12:00:11 …`). Other lines are left alone.
pub(crate) fn compact_log_line(line: &str) -> String {
    let mut words = line.splitn(4, ' ');
    let (Some(level), Some(date), Some(time), Some(rest)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return line.to_owned();
    };
    let is_level = matches!(level, "INFO" | "WARNING" | "ERROR" | "DEBUG" | "CRITICAL");
    let is_date = date.len() == 5 && date.as_bytes().get(2) == Some(&b'-');
    let is_time = time.len() == 8 && time.as_bytes().get(2) == Some(&b':');
    if !(is_level && is_date && is_time) {
        return line.to_owned();
    }
    // `[file.py:123] message` (V1) or `file.py:123] message` (V0).
    let message = rest
        .split_once("] ")
        .filter(|(source, _)| !source.contains(' '))
        .map_or(rest, |(_, message)| message);
    if level == "INFO" {
        format!("{time} {message}")
    } else {
        format!("{level} {time} {message}")
    }
}

fn looks_like_error(line: &str) -> bool {
    line.starts_with("ERROR")
        || line.contains("Error:")
        || line.contains("out of memory")
        || line.contains("Traceback")
}

/// The labelled lines above the log.
fn facts(
    pod: &PodInfo,
    route: Option<ScrapeRoute>,
    theme: &Theme,
    now: Ts,
    width: usize,
) -> Vec<Line<'static>> {
    let value_width = width.saturating_sub(LABEL + 1);
    let fact = |label: &str, value: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{label:<LABEL$} "), theme.dim),
            Span::styled(format::truncate(&value, value_width), style),
        ])
    };
    let mut lines = Vec::new();

    let mut state = vec![pod.phase.as_str().to_owned()];
    state.push(if pod.ready { "ready" } else { "not ready" }.to_owned());
    if pod.terminating {
        state.push("terminating".to_owned());
    }
    if let Some(node) = &pod.node {
        state.push(node.clone());
    }
    let state_style = if pod.ready && !pod.terminating {
        theme.ok
    } else {
        theme.warn
    };
    lines.push(fact("pod", state.join(" · "), state_style));

    if let Some(reason) = &pod.waiting_reason {
        let text = match &pod.waiting_message {
            Some(message) => format!("{reason}: {message}"),
            None => reason.clone(),
        };
        lines.push(fact("waiting", text, style_of(reason, theme)));
    }

    let mut restarts = pod.restarts.to_string();
    let mut restart_style = if pod.restarts > 0 {
        theme.warn
    } else {
        theme.base
    };
    if let Some(t) = &pod.last_termination {
        restarts.push_str(&format!(" · last {} (exit {})", t.reason, t.exit_code));
        if let Some(at) = t.finished_at {
            restarts.push_str(&format!(" {} ago", format::age(now - at)));
        }
        restart_style = style_of(&t.reason, theme);
    }
    lines.push(fact("restarts", restarts, restart_style));

    if let Some(owner) = &pod.owner {
        // `Deployment vllm-llama-8b (ReplicaSet 6d4f9)`: the ReplicaSet by its template hash.
        let text = match &owner.deployment {
            Some(d) => {
                let hash = owner
                    .name
                    .strip_prefix(d.as_str())
                    .map_or(owner.name.as_str(), |h| h.trim_start_matches('-'));
                format!("Deployment {d} ({} {hash})", owner.kind)
            }
            None => format!("{} {}", owner.kind, owner.name),
        };
        lines.push(fact("owner", text, theme.base));
    }

    let scraped = match route {
        Some(ScrapeRoute::Proxy) => format!(
            "API proxy · {}",
            pod.endpoint.proxy_path(&pod.key.namespace, &pod.key.name)
        ),
        _ => pod
            .endpoint
            .direct_url()
            .unwrap_or_else(|| "no pod IP yet".to_owned()),
    };
    lines.push(fact("scrape", scraped, theme.base));

    if let Some(routed) = pod.routed {
        let (text, style) = if routed {
            ("in rotation", theme.base)
        } else {
            ("out of rotation (routing label absent)", theme.warn)
        };
        lines.push(fact("routing", text.to_owned(), style));
    }

    if pod.args.found {
        lines.push(fact("args", args_summary(&pod.args), theme.base));
    }
    let env: Vec<String> = pod
        .env
        .iter()
        .filter_map(|e| Some(format!("{}={}", e.name, e.value.as_deref()?)))
        .collect();
    if !env.is_empty() {
        lines.push(fact("env", env.join(" "), theme.base));
    }
    if let Some(event) = pod.events.last() {
        let style = if event.starts_with("Warning") {
            theme.warn
        } else {
            theme.base
        };
        lines.push(fact("event", event.clone(), style));
    }
    lines
}

/// The engine arguments that matter most, in a few words each: `batched 16384 · chunked on ·
/// gpu-mem 0.92 · len 32768 · tp 2 · prefix on · seqs 256`; unknown ones are left out.
pub(crate) fn args_summary(args: &VllmArgs) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    let mut parts = Vec::new();
    if let Some(v) = args.max_num_batched_tokens {
        parts.push(format!("batched {v}"));
    }
    if let Some(v) = args.enable_chunked_prefill {
        parts.push(format!("chunked {}", on(v)));
    }
    if let Some(v) = args.gpu_memory_utilization {
        parts.push(format!("gpu-mem {v}"));
    }
    if let Some(v) = args.max_model_len {
        parts.push(format!("len {v}"));
    }
    if let Some(v) = args.tensor_parallel_size {
        parts.push(format!("tp {v}"));
    }
    if let Some(v) = args.enable_prefix_caching {
        parts.push(format!("prefix {}", on(v)));
    }
    if let Some(v) = args.max_num_seqs {
        parts.push(format!("seqs {v}"));
    }
    if parts.is_empty() {
        "defaults".to_owned()
    } else {
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_log_lines_lose_their_prefix() {
        assert_eq!(
            compact_log_line(
                "INFO 01-01 12:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s"
            ),
            "12:00:10 Engine 000: Avg prompt throughput: 1.0 tokens/s"
        );
        assert_eq!(
            compact_log_line("ERROR 01-01 12:00:11 [core.py:700] EngineCore failed to start."),
            "ERROR 12:00:11 EngineCore failed to start."
        );
        assert_eq!(
            compact_log_line("INFO 08-14 10:23:45 metrics.py:455] Avg prompt throughput"),
            "10:23:45 Avg prompt throughput"
        );
        for other in [
            "INFO:     Started server process [1]",
            "torch.cuda.OutOfMemoryError: x",
            "",
        ] {
            assert_eq!(compact_log_line(other), other);
        }
    }

    #[test]
    fn args_read_in_a_few_words() {
        let args = VllmArgs::parse(
            &["vllm".into(), "serve".into()],
            &"m --enable-chunked-prefill --max-num-batched-tokens 16384 --tensor-parallel-size 2"
                .split(' ')
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        );
        assert_eq!(args_summary(&args), "batched 16384 · chunked on · tp 2");
        assert_eq!(args_summary(&VllmArgs::default()), "defaults");
    }
}
