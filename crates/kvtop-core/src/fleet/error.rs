//! Why a scrape produced no data. Produced by the scraper, shown by the UI.

/// The reason a scrape failed, short enough for a table cell via [`ScrapeError::short`] and
/// complete via `Display`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    #[error("timed out after {after_ms} ms")]
    Timeout { after_ms: u64 },
    #[error("connection refused")]
    Refused,
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("HTTP {status}{}", reason.as_deref().map(|r| format!(" {r}")).unwrap_or_default())]
    Http { status: u16, reason: Option<String> },
    #[error("body larger than the {} limit", size(*limit))]
    TooLarge { limit: usize },
    #[error("reading body failed: {0}")]
    Body(String),
    #[error("empty")]
    Empty,
    #[error("not metrics: {0}")]
    NotMetrics(String),
    /// The payload holds more than one target may (see `engine::PayloadLimits`): refused whole,
    /// so the target stops growing.
    #[error("too many series: more than {limit} {what} in one payload")]
    TooManySeries { what: &'static str, limit: usize },
    /// The endpoint redirected more often than the client follows (a redirect loop).
    #[error("too many redirects")]
    TooManyRedirects,
    #[error("{0}")]
    Other(String),
}

impl ScrapeError {
    /// At most 8 columns for a table cell ("STALE timeout", "DOWN refused").
    pub fn short(&self) -> String {
        match self {
            ScrapeError::Timeout { .. } => "timeout".into(),
            ScrapeError::Refused => "refused".into(),
            ScrapeError::Connect(_) => "conn err".into(),
            ScrapeError::Http { status, .. } => format!("HTTP {status}"),
            ScrapeError::TooLarge { .. } => "too big".into(),
            ScrapeError::Body(_) => "body err".into(),
            ScrapeError::Empty => "empty".into(),
            ScrapeError::NotMetrics(_) => "bad data".into(),
            ScrapeError::TooManyRedirects => "redirect".into(),
            ScrapeError::TooManySeries { .. } => "too many".into(),
            ScrapeError::Other(_) => "error".into(),
        }
    }
}

/// A byte count as the body limit is configured: `8 MiB`, `512 KiB`, `1000 B`.
fn size(bytes: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes % unit == 0)
        .map_or_else(
            || format!("{bytes} B"),
            |(unit, name)| format!("{} {name}", bytes / unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reasons_fit_a_status_cell() {
        let all = [
            ScrapeError::Timeout { after_ms: 800 },
            ScrapeError::Refused,
            ScrapeError::Connect("no route to host".into()),
            ScrapeError::Http {
                status: 503,
                reason: Some("Service Unavailable".into()),
            },
            ScrapeError::TooLarge { limit: 1 },
            ScrapeError::Body("reset".into()),
            ScrapeError::Empty,
            ScrapeError::NotMetrics("an HTML page".into()),
            ScrapeError::TooManyRedirects,
            ScrapeError::TooManySeries {
                what: "engines",
                limit: 1000,
            },
            ScrapeError::Other("bearer token is not a valid header value".into()),
        ];
        for err in all {
            assert!(
                err.short().chars().count() <= 8,
                "{:?} -> {:?}",
                err,
                err.short()
            );
        }
        assert_eq!(
            ScrapeError::Http {
                status: 503,
                reason: Some("Service Unavailable".into())
            }
            .to_string(),
            "HTTP 503 Service Unavailable"
        );
    }

    #[test]
    fn body_limit_reads_as_configured() {
        let limit = |limit| ScrapeError::TooLarge { limit }.to_string();
        assert_eq!(limit(8 * 1024 * 1024), "body larger than the 8 MiB limit");
        assert_eq!(limit(512 * 1024), "body larger than the 512 KiB limit");
        assert_eq!(limit(1_000_000), "body larger than the 1000000 B limit");
        assert_eq!(limit(3 << 30), "body larger than the 3 GiB limit");
    }

    #[test]
    fn a_redirect_loop_is_named() {
        let err = ScrapeError::TooManyRedirects;
        assert_eq!(err.short(), "redirect");
        assert_eq!(err.to_string(), "too many redirects");
    }
}
