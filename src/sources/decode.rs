//! Turning a response body into a [`ScrapePayload`]: parse, map engines and GPUs.

use std::borrow::Cow;

use kvtop_core::engine::{PayloadLimits, extract_engines_within, extract_gpus};
use kvtop_core::fleet::{ScrapeError, ScrapePayload};
use kvtop_core::metrics::parse;

/// Parse a body and map it. A body that holds no sample at all but does hold malformed lines
/// (an HTML error page, a JSON document, random bytes) is not a metrics payload.
pub fn decode_payload(body: &[u8]) -> Result<ScrapePayload, ScrapeError> {
    decode_payload_within(body, PayloadLimits::default())
}

/// [`decode_payload`] within a target's limits: a payload with more series or engines than
/// `limits` allow is refused as a whole ([`ScrapeError::TooManySeries`]).
pub fn decode_payload_within(
    body: &[u8],
    limits: PayloadLimits,
) -> Result<ScrapePayload, ScrapeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ScrapeError::Empty);
    }
    let text = as_text(body);
    let expo = parse(&text);
    if expo.samples.is_empty() && expo.malformed > 0 {
        let what = if std::str::from_utf8(body).is_err() {
            "not UTF-8 text".to_owned()
        } else {
            describe_non_metrics(&text)
        };
        return Err(ScrapeError::NotMetrics(what));
    }
    let max_series = limits.max_series.get();
    if expo.samples.len() > max_series {
        return Err(ScrapeError::TooManySeries {
            what: "series",
            limit: max_series,
        });
    }
    let engines = extract_engines_within(&expo, limits.max_engines.get()).map_err(|e| {
        ScrapeError::TooManySeries {
            what: "engines",
            limit: e.limit,
        }
    })?;
    Ok(ScrapePayload {
        engines,
        gpus: extract_gpus(&expo),
        samples: expo.samples.len(),
        malformed: expo.malformed,
        first_error: expo.errors.first().cloned(),
        bytes: body.len(),
    })
}

/// The body as text. Invalid UTF-8 is replaced rather than rejected, so the rest of the payload
/// stays usable; valid bodies (nearly all) are borrowed after the standard library's fast
/// validation, which checks ASCII a word at a time where `from_utf8_lossy` goes byte by byte.
fn as_text(body: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(body) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(body),
    }
}

/// A short description of what came back instead of metrics.
fn describe_non_metrics(text: &str) -> String {
    let start = text.trim_start();
    let lower: String = start
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") || lower.starts_with('<') {
        return "an HTML page".into();
    }
    if lower.starts_with('{') || lower.starts_with('[') {
        return "a JSON document".into();
    }
    let first_line: String = start
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(40)
        .collect();
    format!("no sample lines (starts with {first_line:?})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_only_body_is_empty() {
        assert_eq!(decode_payload(b"  \n\n"), Err(ScrapeError::Empty));
        assert_eq!(decode_payload(b""), Err(ScrapeError::Empty));
    }

    #[test]
    fn html_is_not_metrics() {
        let err = decode_payload(b"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n");
        assert_eq!(err, Err(ScrapeError::NotMetrics("an HTML page".into())));
    }

    #[test]
    fn json_is_not_metrics() {
        let err = decode_payload(b"{\"status\":\"error\"}\n");
        assert_eq!(err, Err(ScrapeError::NotMetrics("a JSON document".into())));
    }

    #[test]
    fn payload_counts_samples_and_malformed_lines() {
        let body = b"# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n\
this is not a metric line\n";
        let payload = decode_payload(body).expect("metrics payload");
        assert_eq!(payload.samples, 1);
        assert_eq!(payload.malformed, 1);
        assert_eq!(payload.engines.len(), 1);
        assert_eq!(payload.engines[0].running, Some(3.0));
        assert_eq!(payload.bytes, body.len());
    }

    #[test]
    fn binary_or_latin1_bytes_without_samples_are_named_not_utf8() {
        let err = decode_payload(b"\xff\xfe\x80 caf\xe9 \xc3\x28\n\x80\x81\n");
        assert_eq!(err, Err(ScrapeError::NotMetrics("not UTF-8 text".into())));
        // HTML in Latin-1 is still not UTF-8: the encoding is what the operator must fix.
        let err = decode_payload(b"<html>caf\xe9</html>\n");
        assert_eq!(err, Err(ScrapeError::NotMetrics("not UTF-8 text".into())));
    }

    #[test]
    fn valid_utf8_is_borrowed_and_invalid_bytes_are_replaced() {
        assert!(matches!(
            as_text("µs ok".as_bytes()),
            Cow::Borrowed("µs ok")
        ));
        let replaced = as_text(b"a\xffb");
        assert!(matches!(replaced, Cow::Owned(_)));
        assert_eq!(replaced, "a\u{FFFD}b");
    }

    #[test]
    fn invalid_utf8_does_not_lose_the_payload() {
        let mut body = b"vllm:num_requests_waiting{model_name=\"m\"} 7\n".to_vec();
        body.extend_from_slice(b"junk \xff\xfe line\n");
        let payload = decode_payload(&body).expect("metrics payload");
        assert_eq!(payload.engines[0].waiting, Some(7.0));
        assert_eq!(payload.malformed, 1);
    }
}
