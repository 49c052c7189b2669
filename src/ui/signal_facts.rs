//! The dashboards' signals in the detail pane's facts: latency quantiles, throughput, how
//! requests finished, the API server's HTTP answers and speculative decoding, each value `–`
//! while unknown.

use kvtop_core::fleet::Signals;
use kvtop_core::format;

/// Labels, at most the facts' label width (11 columns).
const LATENCY: &str = "latency";
const QUANTILES: &str = "p50/p95/p99";
const TTFT: &str = "TTFT";
const ITL: &str = "ITL";
const TPOT: &str = "TPOT";
const PREFILL: &str = "prefill";
const DECODE: &str = "decode";
const E2E: &str = "e2e";
const QUEUE: &str = "queue";
const TOKENS: &str = "tok/s";
const REQUESTS: &str = "requests";
const FINISHED: &str = "finished";
const HTTP: &str = "HTTP";
const SPEC_LENGTH: &str = "spec length";

/// `p50/p95/p99` of one latency.
fn triple(values: [Option<f64>; 3]) -> String {
    values.map(format::latency).join("/")
}

/// A per-second rate: `3.1/s`, `–`.
fn per_second(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{}/s", format::si(Some(v))),
        _ => format::UNKNOWN.to_owned(),
    }
}

/// The facts, label and value, in reading order.
pub(crate) fn facts(s: &Signals) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        (LATENCY, QUANTILES.to_owned()),
        (TTFT, triple([s.ttft_p50, s.ttft_p95, s.ttft_p99])),
        (ITL, triple([s.itl_p50, s.itl_p95, s.itl_p99])),
        (TPOT, triple([s.tpot_p50, s.tpot_p95, s.tpot_p99])),
        (
            PREFILL,
            triple([s.prefill_p50, s.prefill_p95, s.prefill_p99]),
        ),
        (DECODE, triple([s.decode_p50, s.decode_p95, s.decode_p99])),
        (E2E, triple([s.e2e_p50, s.e2e_p95, s.e2e_p99])),
        (QUEUE, triple([s.queue_p50, s.queue_p95, s.queue_p99])),
        (
            TOKENS,
            format!(
                "in {} · out {}",
                format::si(s.prompt_tps),
                format::si(s.gen_tps)
            ),
        ),
        (REQUESTS, per_second(s.requests_per_s)),
        (
            FINISHED,
            format!(
                "stop {} len {}",
                format::percent(s.finished_stop),
                format::percent(s.finished_length)
            ),
        ),
    ];
    let mut failed = format!(
        "abort {} err {}",
        format::percent(s.finished_abort),
        format::percent(s.finished_error)
    );
    // Only vLLM 0.33+ stops for repetition: shown once it is known.
    if s.finished_repetition.is_some() {
        failed.push_str(&format!(" rep {}", format::percent(s.finished_repetition)));
    }
    facts.push(("", failed));
    facts.push((
        HTTP,
        format!(
            "{} 4xx {} 5xx {}",
            per_second(s.http_per_s),
            format::percent(s.http_4xx_ratio),
            format::percent(s.http_5xx_ratio)
        ),
    ));
    let length = s
        .spec_accept_length
        .filter(|v| v.is_finite())
        .map_or_else(|| format::UNKNOWN.to_owned(), |v| format!("{v:.2}"));
    facts.push((SPEC_LENGTH, length));
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(facts: &'a [(&str, String)], label: &str) -> &'a str {
        facts
            .iter()
            .find(|(l, _)| *l == label)
            .map_or("", |(_, v)| v.as_str())
    }

    #[test]
    fn unknown_signals_are_dashes_never_zero() {
        let facts = facts(&Signals::default());
        assert_eq!(value(&facts, TPOT), "–/–/–");
        assert_eq!(value(&facts, HTTP), "– 4xx – 5xx –");
        assert_eq!(value(&facts, SPEC_LENGTH), "–");
        assert_eq!(value(&facts, ""), "abort – err –");
        for (label, _) in &facts {
            assert!(label.chars().count() <= 11, "{label}");
        }
    }

    #[test]
    fn known_signals_are_shown_in_their_units() {
        let signals = Signals {
            tpot_p50: Some(0.012),
            tpot_p95: Some(0.03),
            tpot_p99: Some(0.045),
            finished_stop: Some(0.9),
            finished_length: Some(0.08),
            finished_abort: Some(0.02),
            finished_error: Some(0.0),
            finished_repetition: Some(0.0),
            http_per_s: Some(3.1),
            http_4xx_ratio: Some(0.25),
            spec_accept_length: Some(2.314),
            ..Signals::default()
        };
        let facts = facts(&signals);
        assert_eq!(value(&facts, TPOT), "12ms/30ms/45ms");
        assert_eq!(value(&facts, FINISHED), "stop 90% len 8%");
        assert_eq!(value(&facts, ""), "abort 2% err 0% rep 0%");
        assert_eq!(value(&facts, HTTP), "3.1/s 4xx 25% 5xx –");
        assert_eq!(value(&facts, SPEC_LENGTH), "2.31");
    }
}
