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
    #[error("body larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("reading body failed: {0}")]
    Body(String),
    #[error("empty")]
    Empty,
    #[error("not metrics: {0}")]
    NotMetrics(String),
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
            ScrapeError::Other(_) => "error".into(),
        }
    }
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
            ScrapeError::Other("too many redirects".into()),
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
}
