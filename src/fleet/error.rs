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
    #[error("empty body")]
    Empty,
    #[error("not metrics: {0}")]
    NotMetrics(String),
    #[error("{0}")]
    Other(String),
}

impl ScrapeError {
    /// A few words for a table cell.
    pub fn short(&self) -> String {
        match self {
            ScrapeError::Timeout { .. } => "timeout".into(),
            ScrapeError::Refused => "refused".into(),
            ScrapeError::Connect(_) => "conn failed".into(),
            ScrapeError::Http { status, .. } => format!("HTTP {status}"),
            ScrapeError::TooLarge { .. } => "too large".into(),
            ScrapeError::Body(_) => "body error".into(),
            ScrapeError::Empty => "empty body".into(),
            ScrapeError::NotMetrics(_) => "not metrics".into(),
            ScrapeError::Other(_) => "error".into(),
        }
    }
}
