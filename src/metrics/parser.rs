//! Zero-copy parser for the Prometheus text format (0.0.4) and the OpenMetrics subset that
//! prometheus_client emits. Names may contain ':'; label values are unescaped lazily.

use std::borrow::Cow;

/// The `# TYPE` of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
    Info,
    StateSet,
    GaugeHistogram,
}

/// One sample line. Borrowed from the input; labels are validated at parse time and
/// re-scanned (and unescaped only when they contain a backslash) on demand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    /// The text between `{` and `}` (exclusive), already validated.
    pub labels_raw: &'a str,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
}

/// A malformed line: its 1-based number and why it was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub reason: &'static str,
}

/// Everything that was read from one payload.
#[derive(Debug, Default, Clone)]
pub struct Exposition<'a> {
    pub samples: Vec<Sample<'a>>,
    /// `# TYPE` declarations in order of appearance (family name, type).
    pub types: Vec<(&'a str, MetricType)>,
    /// Malformed lines (kept up to a small cap; `malformed` counts all of them).
    pub errors: Vec<LineError>,
    pub malformed: usize,
    /// True when an OpenMetrics `# EOF` marker was seen.
    pub saw_eof: bool,
}

/// Iterator over `(name, value)` label pairs of a sample.
pub struct LabelIter<'a> {
    pub(crate) rest: &'a str,
}

/// Parse a whole payload. Never fails and never panics: malformed lines are counted in
/// [`Exposition::malformed`] and skipped.
pub fn parse(input: &str) -> Exposition<'_> {
    let _ = input;
    todo!("metrics::parse")
}

impl<'a> Exposition<'a> {
    /// The declared `# TYPE` of a family, if any.
    pub fn metric_type(&self, family: &str) -> Option<MetricType> {
        self.types
            .iter()
            .find(|(n, _)| *n == family)
            .map(|(_, t)| *t)
    }
}

impl<'a> Sample<'a> {
    /// Iterate the labels as `(name, value)` with escapes resolved.
    pub fn labels(&self) -> LabelIter<'a> {
        LabelIter {
            rest: self.labels_raw,
        }
    }
    /// The value of one label, if present.
    pub fn label(&self, name: &str) -> Option<Cow<'a, str>> {
        self.labels().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl<'a> Iterator for LabelIter<'a> {
    type Item = (&'a str, Cow<'a, str>);
    fn next(&mut self) -> Option<Self::Item> {
        todo!("LabelIter::next")
    }
}
