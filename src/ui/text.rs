//! Every user-facing string of the console's views, in one place.

use super::format;
use crate::app::{Action, Context, NoticeKind, SortColumn};
use kvtop_core::fleet::StatusCounts;

// Whole screen.
pub(crate) const APP_NAME: &str = "kvtop";
pub(crate) const TOO_SMALL: &str = "terminal too small";
pub(crate) const MIN_WIDTH: u16 = 60;
pub(crate) const MIN_HEIGHT: u16 = 15;

/// "need 60×15, have 50×10"
pub(crate) fn too_small_detail(width: u16, height: u16) -> String {
    format!("need {MIN_WIDTH}×{MIN_HEIGHT}, have {width}×{height}")
}

// Header.
pub const FROZEN: &str = "FROZEN";
pub const UTC: &str = "UTC";

/// "every 1s"
pub fn interval(secs: f64) -> String {
    format!("every {}", format::span(secs))
}

/// "p95 over 1m"
pub fn window(label: &str) -> String {
    format!("p95 over {label}")
}

/// The header's status counts, as (number, word) pairs.
pub fn counts(c: StatusCounts) -> [(String, &'static str); 3] {
    [
        (c.up.to_string(), "up"),
        (c.stale.to_string(), "stale"),
        (c.down.to_string(), "down"),
    ]
}

/// The header's mark while a replay's clock is paused (`p`).
pub(crate) const PAUSED: &str = "PAUSED";

/// The header's mark while a replay's clock runs (`kvtop replay`, a past Prometheus window).
pub(crate) const REPLAY: &str = "REPLAY";

/// The header's mark while the console records (`--record`).
pub(crate) const RECORDING: &str = "REC";

/// After the mark: records lost to a slow disk (or a failing one).
pub(crate) fn recording_lost(lost: u64) -> String {
    format!("{lost} lost ")
}

/// "AT 03:12:40": the time cursor's instant.
pub(crate) fn cursor_at(clock: &str) -> String {
    format!("AT {clock}")
}

/// "(−14m)": how far back the time cursor is, in whole minutes from a minute on, else seconds.
pub(crate) fn cursor_ago(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs >= 60.0 {
        format!("(−{}m)", (secs / 60.0).floor())
    } else {
        format!("(−{}s)", secs.round())
    }
}

/// "at 12:03:04", after the FROZEN marker.
pub(crate) fn frozen_at(clock: &str) -> String {
    format!("at {clock}")
}

// Fleet table.
pub(crate) const COL_NAME: &str = "NAME";
pub(crate) const COL_MODEL: &str = "MODEL";
pub(crate) const COL_STATUS: &str = "STATUS";
pub(crate) const COL_KV: &str = "KV";
pub(crate) const COL_RUNNING: &str = "RUN";
pub(crate) const COL_WAITING: &str = "WAIT";
pub(crate) const COL_TTFT: &str = "TTFT95";
pub(crate) const COL_ITL: &str = "ITL95";
pub(crate) const COL_GEN_TPS: &str = "TOK/S";
pub(crate) const COL_PREFIX: &str = "HIT%";
pub(crate) const COL_PREEMPT: &str = "PRE/M";
pub(crate) const COL_AGE: &str = "AGE";
pub(crate) const COL_GPU_UTIL: &str = "GPU%";
pub(crate) const COL_GPU_MEM: &str = "GMEM";
pub(crate) const SORT_UP: &str = "▲";
pub(crate) const SORT_DOWN: &str = "▼";
pub(crate) const NO_ENGINES: &str = "no engines yet: waiting for the first scrape";
pub(crate) const DOWN_NO_ERROR: &str = "no data";
/// Marker after a KV percentage at the high level, for themes without colour.
pub(crate) const LEVEL_HIGH_MARK: &str = "!";
/// Marker after a KV percentage at the mid level, for themes without colour.
pub(crate) const LEVEL_MID_MARK: &str = "+";

/// "no engine matches “xyz”"
pub(crate) fn no_match(filter: &str) -> String {
    format!("no engine matches “{filter}”")
}

/// Name of a sort column in notices.
pub(crate) fn sort_name(column: SortColumn) -> &'static str {
    match column {
        SortColumn::Name => "name",
        SortColumn::Status => "status",
        SortColumn::Kv => "KV usage",
        SortColumn::Running => "running",
        SortColumn::Waiting => "waiting",
        SortColumn::TtftP95 => "TTFT p95",
        SortColumn::ItlP95 => "ITL p95",
        SortColumn::GenTps => "tokens/s",
        SortColumn::PrefixHit => "prefix hit",
        SortColumn::Preemptions => "preemptions",
        SortColumn::Age => "scrape age",
        SortColumn::GpuUtil => "GPU utilization",
        SortColumn::GpuMem => "GPU memory",
    }
}

// Detail pane.
pub(crate) const NO_SELECTION: &str = "no engine selected";
pub(crate) const NO_DATA_YET: &str = "no data yet";
pub(crate) const CHART_KV: &str = "KV usage";
pub(crate) const CHART_QUEUE: &str = "queue";
pub(crate) const CHART_TTFT: &str = "TTFT";
pub(crate) const CHART_ITL: &str = "ITL p95";
pub(crate) const CHART_GEN_TPS: &str = "gen tok/s";
pub(crate) const SPARK_KV: &str = "KV";
pub(crate) const SPARK_WAITING: &str = "wait";
pub(crate) const SPARK_TTFT: &str = "TTFT95";
pub(crate) const SPARK_ITL: &str = "ITL95";
pub(crate) const SPARK_GEN_TPS: &str = "tok/s";
pub(crate) const LABEL_RUNNING: &str = "run";
pub(crate) const LABEL_WAITING: &str = "wait";
pub(crate) const LABEL_P50: &str = "p50";
pub(crate) const LABEL_P95: &str = "p95";
pub(crate) const LABEL_P99: &str = "p99";
pub(crate) const FACT_MODEL: &str = "model";
pub(crate) const FACT_ENGINE: &str = "engine";
pub(crate) const FACT_KV_CAPACITY: &str = "KV cap";
pub(crate) const FACT_PREFIX: &str = "prefix hit";
pub(crate) const FACT_SPEC: &str = "spec accept";
pub(crate) const FACT_ERRORS: &str = "req errors";
pub(crate) const FACT_CPU: &str = "CPU";
pub(crate) const FACT_SCRAPE: &str = "scrape";
pub(crate) const FACT_SOURCE: &str = "prometheus";
pub(crate) const FACT_BACKFILL: &str = "history";
pub(crate) const FACT_MALFORMED: &str = "malformed";
pub(crate) const FACT_LAST_ERROR: &str = "last error";
pub(crate) const FACT_RESTARTED: &str = "restarted";
pub(crate) const FLAVOR_V0: &str = "vLLM V0";
pub(crate) const FLAVOR_V1: &str = "vLLM V1";
pub(crate) const FLAVOR_SGLANG: &str = "SGLang";
pub(crate) const FLAVOR_UNKNOWN: &str = "unknown engine";
pub(crate) const NO_MODEL: &str = "(no model label)";

/// "last 5m" in the detail title.
pub fn range(secs: f64) -> String {
    format!("last {}", format::span(secs))
}

/// "124k tokens"
pub fn tokens(n: u64) -> String {
    format!("{} tokens", format::si(Some(n as f64)))
}

/// "1.20 cores"
pub fn cores(v: Option<f64>) -> String {
    match v.filter(|v| v.is_finite()) {
        Some(v) => format!("{v:.2} cores"),
        None => format::UNKNOWN.into(),
    }
}

/// "42ms · 180 KiB"
pub(crate) fn scrape_cost(took: Option<f64>, bytes: Option<usize>) -> String {
    let size = bytes.map_or_else(|| format::UNKNOWN.to_string(), format::bytes);
    format!("{} · {size}", format::latency(took))
}

/// One cycle of a Prometheus source: "17 queries, 340ms, 6.8 MiB", or with failed queries
/// "17 queries, 2 failed, 340ms".
pub(crate) fn source_cost(
    queries: usize,
    failed: usize,
    took: Option<f64>,
    bytes: Option<usize>,
) -> String {
    let took = format::latency(took);
    if failed > 0 {
        format!("{queries} queries, {failed} failed, {took}")
    } else {
        let size = bytes.map_or_else(|| format::UNKNOWN.to_string(), format::bytes);
        format!("{queries} queries, {took}, {size}")
    }
}

/// "3 lines, first: line 12: bad value"
pub fn malformed(count: usize, first: Option<(usize, &str)>) -> String {
    match first {
        Some((line, reason)) if count > 0 => format!("{count}, first line {line}: {reason}"),
        _ => count.to_string(),
    }
}

/// "12s ago"
pub fn ago(secs: f64) -> String {
    format!("{} ago", format::age(secs))
}

// Model groups of the fleet table.
/// Leads a model group's summary line.
pub(crate) const GROUP_MARK: &str = "▸ ";
/// The group of engines that do not name a model.
pub(crate) const GROUP_NO_MODEL: &str = "(no model)";

/// "2/3 up"
pub(crate) fn group_up(up: usize, engines: usize) -> String {
    format!("{up}/{engines} up")
}

// Footer.
pub(crate) const FILTER_PROMPT: &str = "/";
/// The footer's key hints, most useful first (the keys come from the key map).
pub(crate) const FOOTER_HINTS: [(Action, &str); 8] = [
    (Action::ToggleHelp, "help"),
    (Action::OpenDiagnostics, "findings"),
    (Action::OpenFilter, "filter"),
    (Action::CycleSort, "sort"),
    (Action::CycleWindow, "window"),
    (Action::ZoomIn, "zoom"),
    (Action::ToggleFreeze, "freeze"),
    (Action::Quit, "quit"),
];
/// The footer's key hint on a Kubernetes pod whose context allows actions.
pub(crate) const POD_HINTS: [(Action, &str); 1] = [(Action::OpenActionMenu, "actions")];
/// The footer's key hints in the diagnostics view.
pub(crate) const DIAGNOSTICS_HINTS: [(Action, &str); 8] = [
    (Action::JumpToEngine, "engine"),
    (Action::AckIncident, "ack"),
    (Action::SnoozeIncident, "snooze"),
    (Action::CopyIncident, "copy"),
    (Action::ShowFleet, "fleet"),
    (Action::OpenRouting, "routing"),
    (Action::ToggleHelp, "help"),
    (Action::Quit, "quit"),
];
/// The footer's key hints in the routing view.
pub(crate) const ROUTING_HINTS: [(Action, &str); 4] = [
    (Action::ShowFleet, "fleet"),
    (Action::OpenDiagnostics, "findings"),
    (Action::ToggleHelp, "help"),
    (Action::Quit, "quit"),
];
/// Footer hints while the filter prompt is open.
pub(crate) const FILTER_HINTS: [(Action, &str); 2] =
    [(Action::KeepFilter, "keep"), (Action::ClearFilter, "clear")];

/// "sort KV usage ▼"
pub(crate) fn sort_state(column: SortColumn, descending: bool) -> String {
    let arrow = if descending { SORT_DOWN } else { SORT_UP };
    format!("sort {} {arrow}", sort_name(column))
}

/// "filter “abc”"
pub(crate) fn filter_state(filter: &str) -> String {
    format!("filter “{filter}”")
}

/// "3 of 8 engines"
pub(crate) fn shown_of(shown: usize, total: usize) -> String {
    format!("{shown} of {total} engines")
}

/// A transient notice's text.
pub fn notice(kind: &NoticeKind) -> String {
    match kind {
        NoticeKind::Filter { shown, total } => format!("filter: {}", shown_of(*shown, *total)),
        NoticeKind::FilterCleared => "filter cleared".into(),
        NoticeKind::Sort { column, descending } => sort_state(*column, *descending),
        NoticeKind::Window(w) => format!("quantiles and rates over {}", w.label()),
        NoticeKind::Range(r) => format!("charts show the {}", range(r.secs())),
        NoticeKind::Frozen => {
            "view frozen: data keeps arriving in the background (f resumes)".into()
        }
        NoticeKind::Unfrozen => "view live again".into(),
        NoticeKind::ReplayEnded => "end of the recording: the replay stops here".into(),
        NoticeKind::CursorAtStart { ago } => format!(
            "the kept past starts {} ago: the time cursor stops there",
            format::age(*ago)
        ),
        NoticeKind::Problem(message)
        | NoticeKind::Action(message)
        | NoticeKind::ActionFailed(message)
        | NoticeKind::Copied(message) => message.clone(),
    }
}

/// The footer problem of a user rules file that did not load.
// Help overlay.
pub(crate) const HELP_TITLE: &str = " keys ";
/// Heading of the help overlay's note (the demo's kubectl line).
pub(crate) const HELP_NOTE_HEADING: &str = "This demo's cluster, from another shell";

/// The hint at the bottom of the help overlay: " ? Esc q close ", after the page and the
/// keys that turn it when the help takes more than one (" 1/2 → more · ? Esc q close ").
pub(crate) fn help_close_hint(keys: &str, page: Option<(usize, usize, &str)>) -> String {
    match page {
        Some((page, pages, next)) => format!(" {page}/{pages} {next} more · {keys} close "),
        None => format!(" {keys} close "),
    }
}

/// Heading of a key-map context in the help overlay.
pub(crate) fn context_heading(context: Context) -> &'static str {
    match context {
        Context::Fleet => "Fleet",
        Context::Views => "Findings, routing, GPU nodes",
        Context::Filter => "Filter prompt",
        Context::Help => "This help",
        Context::Anywhere => "Anywhere",
        Context::Pod => "On a Kubernetes pod",
        Context::ActionMenu => "Action menu",
        Context::ActionPlan => "Plan screen",
        Context::ActionProgress => "Action progress",
        Context::Story => "Engine story",
        Context::StorySearch => "Story search",
    }
}
