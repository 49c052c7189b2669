//! Number, duration and percentage formatting for table cells and labels. Every function shows
//! an unknown (`None`, NaN, ±∞) value as [`UNKNOWN`] and keeps its output short (≤ 6 columns
//! unless stated).

/// How an unknown value is shown.
pub const UNKNOWN: &str = "–";

fn known(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

/// `text` without the sign of a number that shows as zero (`-0`, `-0.0`): an endpoint's `-0`
/// or a tiny negative rounded away is no negative value.
fn unsigned_zero(text: String) -> String {
    match text.strip_prefix('-') {
        Some(rest)
            if rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .all(|c| matches!(c, '0' | '.')) =>
        {
            rest.to_owned()
        }
        _ => text,
    }
}

/// Largest magnitude [`si`] shows with a suffix; beyond it the cell says `>999T`.
const SI_MAX: f64 = 999.5e12;

/// A latency in seconds: `412ms` under a second, `1.25s`, `12.3s`, `123s`, then minutes.
pub fn latency(secs: Option<f64>) -> String {
    let Some(s) = known(secs).filter(|s| *s >= 0.0) else {
        return UNKNOWN.into();
    };
    let ms = s * 1000.0;
    if ms < 0.95 && ms > 0.0 {
        return format!("{ms:.1}ms");
    }
    if ms.round() < 1000.0 {
        return format!("{ms:.0}ms");
    }
    if s < 9.995 {
        format!("{s:.2}s")
    } else if s < 99.95 {
        format!("{s:.1}s")
    } else if s < 999.5 {
        format!("{s:.0}s")
    } else {
        age(s)
    }
}

/// A quantity with a k/M/G suffix: `850`, `8.5`, `1.25k`, `12.3k`, `123k`, `1.2M`.
pub fn si(v: Option<f64>) -> String {
    let Some(v) = known(v) else {
        return UNKNOWN.into();
    };
    unsigned_zero(si_known(v))
}

fn si_known(v: f64) -> String {
    let a = v.abs();
    if a >= SI_MAX {
        return if v > 0.0 { ">999T" } else { "<-999T" }.into();
    }
    if a < 9.95 && a.fract() != 0.0 {
        return format!("{v:.1}");
    }
    if a < 999.5 {
        return format!("{v:.0}");
    }
    for (scale, suffix) in [(1e3, "k"), (1e6, "M"), (1e9, "G")] {
        let x = v / scale;
        let ax = x.abs();
        if ax < 9.995 {
            return format!("{x:.2}{suffix}");
        }
        if ax < 99.95 {
            return format!("{x:.1}{suffix}");
        }
        if ax < 999.5 {
            return format!("{x:.0}{suffix}");
        }
    }
    format!("{:.0}T", v / 1e12)
}

/// A gauge that counts things (requests running or waiting): `0`, `12`, `1.25k`. Averaged
/// values are rounded to whole requests.
pub fn count(v: Option<f64>) -> String {
    match known(v) {
        Some(v) if v.abs() < 999.5 => unsigned_zero(format!("{:.0}", v.round())),
        other => si(other),
    }
}

/// A 0..1 ratio as a whole percentage: `45%`; `<1%` for small non-zero ratios. Every ratio
/// shown this way (cache usage, hit rates, utilisation, error ratios) lies in 0..1 by
/// definition: an endpoint's value outside it is shown at the nearest bound, so a cell never
/// reads `inf%`, `-0%` or `1e310%`.
pub fn percent(ratio: Option<f64>) -> String {
    match known(ratio).map(|r| r.clamp(0.0, 1.0)) {
        None => UNKNOWN.into(),
        Some(r) if r > 0.0 && r < 0.005 => "<1%".into(),
        Some(r) => unsigned_zero(format!("{:.0}%", r * 100.0)),
    }
}

/// A per-second rate shown per minute: `0`, `0.5`, `12`.
pub fn per_minute(per_sec: Option<f64>) -> String {
    match known(per_sec).map(|v| v * 60.0) {
        None => UNKNOWN.into(),
        Some(0.0) => "0".into(),
        Some(m) if m < 9.95 => format!("{m:.1}"),
        Some(m) => si(Some(m.round())),
    }
}

/// An age or a span in seconds, whole units: `3s`, `2m10s`, `1h05m`, `3d04h`. Negative ages
/// (clock skew between hosts) are shown as `0s`.
pub fn age(secs: f64) -> String {
    if !secs.is_finite() {
        return UNKNOWN.into();
    }
    let s = secs.max(0.0).floor() as u64;
    if s >= 1000 * 86400 {
        return ">999d".into();
    }
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

/// A time span given as a whole duration: `1m`, `5m`, `15m`, `1h`, `90s`.
pub fn span(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return UNKNOWN.into();
    }
    if secs > 0.0 && secs < 1.0 {
        return format!("{:.0}ms", secs * 1000.0);
    }
    let s = secs.round() as u64;
    if s >= 3600 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s >= 60 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// A size in bytes: `512 B`, `12.3 KiB`, `1.50 MiB`.
pub fn bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = UNITS[0];
    for u in UNITS {
        v /= 1024.0;
        unit = u;
        if v < 1023.5 {
            break;
        }
    }
    if v < 9.995 {
        format!("{v:.2} {unit}")
    } else if v < 99.95 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// Wall-clock time of day `HH:MM:SS` for `now` (seconds since the Unix epoch) shifted by
/// `utc_offset_secs`.
pub fn clock(now: f64, utc_offset_secs: i32) -> String {
    let secs = if now.is_finite() {
        now.floor() as i64
    } else {
        0
    };
    let day = (secs + i64::from(utc_offset_secs)).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", day / 3600, (day % 3600) / 60, day % 60)
}

/// `s` with every unsafe character ([`crate::safe_text::is_unsafe`]: a newline or escape in a
/// label value, a bidi override, a zero-width space) shown as `�`: the terminal must never
/// receive one inside a cell, and each must still take one column so the row stays aligned.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    use crate::safe_text::is_unsafe;
    if s.chars().any(is_unsafe) {
        s.chars()
            .map(|c| if is_unsafe(c) { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into()
    } else {
        s.into()
    }
}

/// Terminal columns `s` takes: a CJK character two, a combining mark none.
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

fn char_columns(c: char) -> usize {
    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
}

/// The longest start of `chars` that fits in `budget` columns, and the columns it takes.
fn fit(chars: impl Iterator<Item = char>, budget: usize) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    for c in chars {
        let w = char_columns(c);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    (out, used)
}

/// `s` followed by spaces up to `width` columns (a `format!` width counts characters, not
/// columns, and would shift the rest of a row with wide names).
fn pad_right(s: String, width: usize) -> String {
    let missing = width.saturating_sub(columns(&s));
    s + &" ".repeat(missing)
}

/// Cut `s` to at most `width` columns, ending in `…` when cut.
pub fn truncate(s: &str, width: usize) -> String {
    let s = printable(s);
    if columns(&s) <= width {
        return s.into_owned();
    }
    if width == 0 {
        return String::new();
    }
    let (mut out, _) = fit(s.chars(), width - 1);
    out.push('…');
    out
}

/// `s` cut in the middle to at most `width` columns: pod and host names differ at their ends
/// (`vllm-llama-8b-98ztx-pfwbm`), so both ends stay visible. A short last `-` segment (a
/// pod's random suffix) is kept whole and the rest of the room goes to the start, where the
/// Deployment's name is: `vllm-llama…pfwbm`; other names keep equal parts of both ends.
pub(crate) fn truncate_middle(s: &str, width: usize) -> String {
    let s = printable(s);
    if columns(&s) <= width {
        return s.into_owned();
    }
    if width < 8 {
        return truncate(&s, width);
    }
    let last_segment = s.rsplit('-').next().map_or(0, columns);
    let tail = if s.contains('-') && (1..=(width - 1) / 2).contains(&last_segment) {
        last_segment
    } else {
        (width - 1) / 2
    };
    let (tail, tail_used) = fit(s.chars().rev(), tail);
    let (mut out, _) = fit(s.chars(), width - 1 - tail_used);
    out.push('…');
    out.extend(tail.chars().rev());
    out
}

/// `s` padded or cut (in the middle) to exactly `width` columns, left-aligned.
pub fn left_middle(s: &str, width: usize) -> String {
    pad_right(truncate_middle(s, width), width)
}

/// A model name without its organisation prefix: `meta-llama/Llama-3.1-8B` → `Llama-3.1-8B`.
pub fn short_model(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// `s` padded or cut to exactly `width` columns, right-aligned.
pub fn right(s: &str, width: usize) -> String {
    let s = truncate(s, width);
    " ".repeat(width.saturating_sub(columns(&s))) + &s
}

/// `s` padded or cut to exactly `width` columns, left-aligned.
pub fn left(s: &str, width: usize) -> String {
    pad_right(truncate(s, width), width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_measured_in_columns_not_characters() {
        // Four CJK characters take eight columns.
        assert_eq!(left("模型名称", 10), "模型名称  ");
        assert_eq!(columns(&left("模型名称", 10)), 10);
        assert_eq!(truncate("模型名称", 6), "模型…");
        assert_eq!(columns(&truncate("模型名称", 6)), 5);
        assert_eq!(columns(&right("模型名称", 7)), 7);
        assert_eq!(columns(&left_middle("vllm-模型名称-abcde", 14)), 14);
        // A combining mark takes no column of its own.
        assert_eq!(columns(&left("e\u{301}tude", 8)), 8);
        assert_eq!(left("e\u{301}tude", 8), "e\u{301}tude   ");
    }

    #[test]
    fn names_are_cut_in_the_middle() {
        assert_eq!(
            truncate_middle("vllm-llama-8b-98ztx-pfwbm", 25),
            "vllm-llama-8b-98ztx-pfwbm"
        );
        // The pod's suffix whole, the rest to the Deployment's name.
        assert_eq!(
            truncate_middle("vllm-llama-8b-98ztx-pfwbm", 15),
            "vllm-llam…pfwbm"
        );
        assert_eq!(
            truncate_middle("vllm-qwen-7b-sz7s2-gdd2m", 16),
            "vllm-qwen-…gdd2m"
        );
        // No short last segment: equal ends.
        assert_eq!(
            truncate_middle("gpu-node-00.cluster.local:9400", 15),
            "gpu-nod…al:9400"
        );
        assert_eq!(
            truncate_middle("vllm-llama-8b-98ztx-pfwbm", 15)
                .chars()
                .count(),
            15
        );
        assert_eq!(truncate_middle("abcdefghij", 5), "abcd…");
        assert_eq!(left_middle("abc", 5), "abc  ");
    }

    #[test]
    fn control_characters_take_one_visible_column() {
        // A model label `a\nb` (escaped in the exposition) unescapes to a real newline.
        assert_eq!(left("a\nb\u{1b}[2J", 8), "a\u{FFFD}b\u{FFFD}[2J ");
        assert_eq!(left_middle("x\ty", 4), "x\u{FFFD}y ");
        assert_eq!(truncate("\r\r\r\r", 3), "\u{FFFD}\u{FFFD}…");
    }

    #[test]
    fn latency_picks_a_unit_per_magnitude() {
        assert_eq!(latency(None), "–");
        assert_eq!(latency(Some(f64::NAN)), "–");
        assert_eq!(latency(Some(-1.0)), "–");
        assert_eq!(latency(Some(0.0)), "0ms");
        assert_eq!(latency(Some(0.0004)), "0.4ms");
        assert_eq!(latency(Some(0.412)), "412ms");
        assert_eq!(latency(Some(0.9996)), "1.00s");
        assert_eq!(latency(Some(1.25)), "1.25s");
        assert_eq!(latency(Some(12.34)), "12.3s");
        assert_eq!(latency(Some(123.4)), "123s");
        assert_eq!(latency(Some(1300.0)), "21m40s");
    }

    #[test]
    fn si_suffixes() {
        assert_eq!(si(None), "–");
        assert_eq!(si(Some(0.0)), "0");
        assert_eq!(si(Some(8.5)), "8.5");
        assert_eq!(si(Some(850.0)), "850");
        assert_eq!(si(Some(1250.0)), "1.25k");
        assert_eq!(si(Some(12_340.0)), "12.3k");
        assert_eq!(si(Some(123_400.0)), "123k");
        assert_eq!(si(Some(999_600.0)), "1.00M");
        assert_eq!(si(Some(1_200_000.0)), "1.20M");
    }

    #[test]
    fn counts_are_whole() {
        assert_eq!(count(Some(12.4)), "12");
        assert_eq!(count(Some(0.0)), "0");
        assert_eq!(count(Some(2500.0)), "2.50k");
        assert_eq!(count(None), "–");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(Some(0.453)), "45%");
        assert_eq!(percent(Some(1.0)), "100%");
        assert_eq!(percent(Some(0.0)), "0%");
        assert_eq!(percent(Some(0.001)), "<1%");
        assert_eq!(percent(None), "–");
    }

    #[test]
    fn outside_numbers_stay_bounded_and_unsigned_at_zero() {
        assert_eq!(percent(Some(1e308)), "100%");
        assert_eq!(percent(Some(1.7)), "100%");
        assert_eq!(percent(Some(-0.0)), "0%");
        assert_eq!(percent(Some(-3.0)), "0%");
        assert_eq!(percent(Some(f64::NAN)), "–");
        assert_eq!(percent(Some(f64::INFINITY)), "–");
        assert_eq!(si(Some(-0.0)), "0");
        assert_eq!(si(Some(-0.04)), "0.0");
        assert_eq!(si(Some(1e308)), ">999T");
        assert_eq!(si(Some(-1e308)), "<-999T");
        assert_eq!(si(Some(5e14)), "500T");
        assert_eq!(count(Some(-0.3)), "0");
        assert_eq!(count(Some(1e308)), ">999T");
        assert_eq!(per_minute(Some(1e308)), "–");
        assert_eq!(latency(Some(1e308)), ">999d");
        assert_eq!(age(1e12), ">999d");
    }

    #[test]
    fn per_minute_scales_per_second_rates() {
        assert_eq!(per_minute(Some(0.0)), "0");
        assert_eq!(per_minute(Some(0.05)), "3.0");
        assert_eq!(per_minute(Some(0.5)), "30");
        assert_eq!(per_minute(None), "–");
    }

    #[test]
    fn ages() {
        assert_eq!(age(3.7), "3s");
        assert_eq!(age(-2.0), "0s");
        assert_eq!(age(130.0), "2m10s");
        assert_eq!(age(3900.0), "1h05m");
        assert_eq!(age(2.0 * 86400.0 + 4.0 * 3600.0), "2d04h");
        assert_eq!(age(f64::INFINITY), "–");
    }

    #[test]
    fn spans() {
        assert_eq!(span(60.0), "1m");
        assert_eq!(span(900.0), "15m");
        assert_eq!(span(3600.0), "1h");
        assert_eq!(span(90.0), "90s");
        assert_eq!(span(0.5), "500ms");
        assert_eq!(span(2.0), "2s");
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12_595), "12.3 KiB");
        assert_eq!(bytes(1_572_864), "1.50 MiB");
    }

    #[test]
    fn clock_is_time_of_day() {
        // 2024-01-01T12:03:04Z
        assert_eq!(clock(1_704_110_584.9, 0), "12:03:04");
        assert_eq!(clock(1_704_110_584.0, 3600), "13:03:04");
        assert_eq!(clock(1_704_110_584.0, -13 * 3600), "23:03:04");
        assert_eq!(clock(f64::NAN, 0), "00:00:00");
    }

    #[test]
    fn cutting_and_padding() {
        assert_eq!(truncate("vllm-a-0", 8), "vllm-a-0");
        assert_eq!(truncate("vllm-a-10", 8), "vllm-a-…");
        assert_eq!(truncate("abc", 0), "");
        assert_eq!(right("42", 5), "   42");
        assert_eq!(left("42", 4), "42  ");
        assert_eq!(short_model("meta-llama/Llama-3.1-8B"), "Llama-3.1-8B");
        assert_eq!(short_model("plain"), "plain");
    }
}
