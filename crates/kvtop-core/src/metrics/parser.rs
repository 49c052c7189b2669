//! Zero-copy parser for the Prometheus text format (0.0.4) and the OpenMetrics subset that
//! prometheus_client emits. Names may contain ':'; label values are unescaped lazily.
//!
//! The parser walks the payload line by line on bytes. A sample line borrows its name and label
//! text from the input; label sets are validated once here, and where each label's name and
//! value lie is kept ([`Exposition::raw_labels`]), so reading them costs no second scan.
//! [`LabelIter`] scans any label text on demand and allocates only for values that contain
//! escapes. A malformed line is counted and skipped; nothing in here can fail or panic,
//! whatever the input.

use std::borrow::Cow;

use super::number::{parse_timestamp_ms, parse_value_token};
use super::scan::{
    label_name_end, line_end, metric_name_end, skip_blanks, skip_label_separators, token_end,
    value_stop,
};

/// The `# TYPE` of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    /// `untyped` (0.0.4) and `unknown` (OpenMetrics).
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
    /// Where this sample's labels lie in [`Exposition::label_spans`].
    pub(crate) spans: SpanRange,
}

/// A run of [`Exposition::label_spans`]: the labels of one sample, in the order written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SpanRange {
    start: u32,
    len: u32,
}

impl SpanRange {
    /// The index past the run's last span.
    fn end(self) -> usize {
        self.start as usize + self.len as usize
    }
}

/// One label of a sample as the parser found it: byte offsets into the sample's `labels_raw`
/// of the name's start and end, and of the value between its quotes (still escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LabelSpan {
    start: u32,
    name_end: u32,
    value_start: u32,
    value_end: u32,
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
    /// The labels of every sample, found while validating them (see [`Exposition::raw_labels`]).
    pub(crate) label_spans: Vec<LabelSpan>,
}

/// Iterator over `(name, value)` label pairs of a sample.
pub struct LabelIter<'a> {
    rest: &'a str,
    /// Bytes of the text already consumed.
    scanned: usize,
}

/// How many malformed lines keep their [`LineError`]; the rest are only counted.
pub(crate) const MAX_RECORDED_ERRORS: usize = 16;

/// Rough bytes per sample line in real payloads, used to reserve the sample vector once.
const BYTES_PER_SAMPLE_ESTIMATE: usize = 96;

/// Rough bytes per label in real payloads (three or four labels per sample line), used to
/// reserve the span vector once.
const BYTES_PER_LABEL_ESTIMATE: usize = 32;

/// Parse a whole payload. Never fails and never panics: malformed lines are counted in
/// [`Exposition::malformed`] and skipped.
///
/// Sample lines are parsed in one pass straight from the payload (the scanners stop at the
/// newline themselves); only comments and malformed lines are searched for their end.
///
/// ```
/// let body = "# TYPE vllm:num_requests_running gauge\n\
///             vllm:num_requests_running{model_name=\"say \\\"hi\\\"\",engine=\"0\"} 7\n\
///             not a sample\n";
/// let expo = kvtop_core::metrics::parse(body);
/// assert_eq!(expo.samples.len(), 1);
/// assert_eq!(expo.malformed, 1);
/// let sample = &expo.samples[0];
/// assert_eq!(sample.name, "vllm:num_requests_running");
/// assert_eq!(sample.label("model_name").as_deref(), Some("say \"hi\""));
/// assert_eq!(sample.value, 7.0);
/// ```
pub fn parse(input: &str) -> Exposition<'_> {
    let bytes = input.as_bytes();
    let mut expo = Exposition {
        samples: Vec::with_capacity(bytes.len() / BYTES_PER_SAMPLE_ESTIMATE + 1),
        label_spans: Vec::with_capacity(bytes.len() / BYTES_PER_LABEL_ESTIMATE + 1),
        ..Exposition::default()
    };
    let mut pos = 0usize;
    let mut line_no = 0usize;
    while pos < bytes.len() {
        line_no += 1;
        let start = skip_blanks(bytes, pos);
        let outcome = match bytes.get(start) {
            None => break,
            Some(b'\n') => {
                pos = start + 1;
                continue;
            }
            Some(b'#') => {
                let end = line_end(input, start);
                pos = end + 1;
                parse_comment(input.get(start..end).unwrap_or_default().trim_ascii_end())
            }
            Some(_) => match parse_sample(input, start, &mut expo.label_spans) {
                Ok((sample, end)) => {
                    expo.samples.push(sample);
                    pos = end + 1;
                    continue;
                }
                Err(reason) => {
                    // The labels read before the line failed are not a sample's.
                    let kept = expo.samples.last().map_or(0, |s| s.spans.end());
                    expo.label_spans.truncate(kept);
                    pos = line_end(input, start) + 1;
                    Comment::Malformed(reason)
                }
            },
        };
        match outcome {
            Comment::Skip => {}
            Comment::Type(family, metric_type) => expo.types.push((family, metric_type)),
            Comment::Eof => {
                expo.saw_eof = true;
                break;
            }
            Comment::Malformed(reason) => {
                expo.malformed += 1;
                if expo.errors.len() < MAX_RECORDED_ERRORS {
                    expo.errors.push(LineError {
                        line: line_no,
                        reason,
                    });
                }
            }
        }
    }
    expo
}

/// What a line other than a well-formed sample turned out to be.
enum Comment<'a> {
    /// `# HELP` or another comment.
    Skip,
    Type(&'a str, MetricType),
    Eof,
    Malformed(&'static str),
}

/// `# HELP ...`, `# TYPE name type`, `# EOF` or a free comment (trimmed, starting with '#').
fn parse_comment(line: &str) -> Comment<'_> {
    let body = line.get(1..).unwrap_or_default().trim_ascii_start();
    let (keyword, rest) = split_word(body);
    match keyword {
        "TYPE" => {
            let (family, rest) = split_word(rest);
            let (type_word, rest) = split_word(rest);
            if family.is_empty() || metric_name_end(family.as_bytes(), 0) != family.len() {
                return Comment::Malformed("bad metric name in TYPE line");
            }
            if !rest.is_empty() {
                return Comment::Malformed("junk after TYPE");
            }
            match metric_type(type_word) {
                Some(metric_type) => Comment::Type(family, metric_type),
                None => Comment::Malformed("unknown metric type"),
            }
        }
        "EOF" if rest.is_empty() => Comment::Eof,
        _ => Comment::Skip,
    }
}

fn metric_type(word: &str) -> Option<MetricType> {
    Some(match word {
        "counter" => MetricType::Counter,
        "gauge" => MetricType::Gauge,
        "histogram" => MetricType::Histogram,
        "summary" => MetricType::Summary,
        "untyped" | "unknown" => MetricType::Untyped,
        "info" => MetricType::Info,
        "stateset" => MetricType::StateSet,
        "gaugehistogram" => MetricType::GaugeHistogram,
        _ => return None,
    })
}

/// The first whitespace-separated word and the rest with leading whitespace removed.
fn split_word(text: &str) -> (&str, &str) {
    let bytes = text.as_bytes();
    let end = token_end(bytes, 0);
    (
        text.get(..end).unwrap_or_default(),
        text.get(end..).unwrap_or_default().trim_ascii_start(),
    )
}

/// Parse `name[{labels}] value [timestamp] [# exemplar]` starting at `start` (the first
/// non-blank byte of a line that is not a comment). Returns the sample and the index of the
/// line's end (its newline, or the input length); the sample's labels are appended to `spans`
/// (a malformed line may leave some there: the caller drops them).
fn parse_sample<'a>(
    input: &'a str,
    start: usize,
    spans: &mut Vec<LabelSpan>,
) -> Result<(Sample<'a>, usize), &'static str> {
    let first_span = spans.len();
    let bytes = input.as_bytes();
    let name_end = metric_name_end(bytes, start);
    if name_end == start {
        return Err("bad metric name");
    }
    let name = input.get(start..name_end).ok_or("bad metric name")?;

    let mut pos = skip_blanks(bytes, name_end);
    let labels_raw = if bytes.get(pos) == Some(&b'{') {
        let open = pos + 1;
        let close = label_set_end(bytes, open, spans)?;
        pos = close + 1;
        input.get(open..close).ok_or("bad label set")?
    } else {
        pos = name_end;
        ""
    };

    let value_start = skip_blanks(bytes, pos);
    if matches!(bytes.get(value_start), None | Some(b'\n')) {
        return Err("missing value");
    }
    if value_start == pos {
        return Err("bad character in metric name or label set");
    }
    let (value, value_end) = parse_value_token(input, value_start).ok_or("unparsable value")?;

    let mut pos = skip_blanks(bytes, value_end);
    let mut timestamp_ms = None;
    if !matches!(bytes.get(pos), None | Some(b'\n' | b'#')) {
        let ts_end = token_end(bytes, pos);
        timestamp_ms = Some(
            input
                .get(pos..ts_end)
                .and_then(parse_timestamp_ms)
                .ok_or("junk after value")?,
        );
        pos = skip_blanks(bytes, ts_end);
    }
    let end = match bytes.get(pos) {
        None => bytes.len(),
        Some(b'\n') => pos,
        // An OpenMetrics exemplar (` # {labels} value [ts]`): ignored.
        Some(b'#') => line_end(input, pos),
        Some(_) => return Err("junk after timestamp"),
    };
    let sample = Sample {
        name,
        labels_raw,
        value,
        timestamp_ms,
        spans: SpanRange {
            start: u32::try_from(first_span).map_err(|_| "too many labels in the payload")?,
            len: u32::try_from(spans.len() - first_span).map_err(|_| "too many labels")?,
        },
    };
    Ok((sample, end))
}

/// Validate `name="value", ...}` starting just after `{`; returns the index of the closing `}`.
/// Each label is appended to `spans`, its offsets counted from `open`.
fn label_set_end(
    bytes: &[u8],
    open: usize,
    spans: &mut Vec<LabelSpan>,
) -> Result<usize, &'static str> {
    let offset = |at: usize| u32::try_from(at - open).map_err(|_| "label set too long");
    let mut i = open;
    loop {
        i = skip_blanks(bytes, i);
        match bytes.get(i) {
            Some(b'}') => return Ok(i),
            None | Some(b'\n') => return Err("unterminated label set"),
            Some(_) => {}
        }
        let name_start = i;
        let name_end = label_name_end(bytes, i);
        if name_end == i {
            return Err("bad label name");
        }
        i = skip_blanks(bytes, name_end);
        if bytes.get(i) != Some(&b'=') {
            return Err("missing '=' after label name");
        }
        i = skip_blanks(bytes, i + 1);
        if bytes.get(i) != Some(&b'"') {
            return Err("label value not quoted");
        }
        let value_start = i + 1;
        let after = quoted_end(bytes, value_start)?;
        spans.push(LabelSpan {
            start: offset(name_start)?,
            name_end: offset(name_end)?,
            value_start: offset(value_start)?,
            value_end: offset(after - 1)?,
        });
        i = skip_blanks(bytes, after);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Ok(i),
            None | Some(b'\n') => return Err("unterminated label set"),
            Some(_) => return Err("expected ',' or '}' after label value"),
        }
    }
}

/// Scan a label value starting after its opening quote; returns the index after the closing
/// quote. Only `\\`, `\"` and `\n` are valid escapes; a raw newline ends the line first.
fn quoted_end(bytes: &[u8], start: usize) -> Result<usize, &'static str> {
    let mut i = start;
    loop {
        i = value_stop(bytes, i).ok_or("unterminated label value")?;
        match bytes.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => match bytes.get(i + 1) {
                Some(b'\\' | b'"' | b'n') => i += 2,
                Some(b'\n') | None => return Err("unterminated label value"),
                Some(_) => return Err("bad escape in label value"),
            },
            _ => return Err("unterminated label value"),
        }
    }
}

impl<'a> Exposition<'a> {
    /// The labels of `sample` (one of [`Exposition::samples`]) as the parser found them, in the
    /// order written, escapes not resolved: nothing is scanned again.
    pub(crate) fn raw_labels(
        &self,
        sample: &Sample<'a>,
    ) -> impl Iterator<Item = RawLabel<'a>> + use<'a, '_> {
        let range = sample.spans;
        let spans = (self.label_spans)
            .get(range.start as usize..range.end())
            .unwrap_or_default();
        let raw = sample.labels_raw;
        spans.iter().map(move |span| {
            let at = |offset: u32| offset as usize;
            RawLabel {
                name: raw
                    .get(at(span.start)..at(span.name_end))
                    .unwrap_or_default(),
                value: raw
                    .get(at(span.value_start)..at(span.value_end))
                    .unwrap_or_default(),
                pair: (at(span.start), at(span.value_end) + 1),
            }
        })
    }

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
        LabelIter::new(self.labels_raw)
    }
    /// The value of one label, if present.
    pub fn label(&self, name: &str) -> Option<Cow<'a, str>> {
        self.labels().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// One label as written: name and still-escaped value, plus where the pair starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawLabel<'a> {
    pub name: &'a str,
    /// The value between the quotes, escapes not resolved. Two raw values are equal exactly
    /// when their unescaped forms are (the escaping is canonical).
    pub value: &'a str,
    /// Where the whole `name="value"` pair starts and ends (after its closing quote), as byte
    /// offsets into the text scanned.
    pub pair: (usize, usize),
}

impl<'a> LabelIter<'a> {
    /// The labels of a label set's text (what lies between `{` and `}`).
    pub fn new(labels_raw: &'a str) -> Self {
        LabelIter {
            rest: labels_raw,
            scanned: 0,
        }
    }

    /// The next label without resolving escapes. Stops (returns `None`) at the end or at the
    /// first thing that is not a well-formed label, so arbitrary text cannot make it panic.
    pub(crate) fn next_raw(&mut self) -> Option<RawLabel<'a>> {
        let label = self.scan_one();
        if label.is_none() {
            self.rest = "";
        }
        label
    }

    fn scan_one(&mut self) -> Option<RawLabel<'a>> {
        let text = self.rest;
        let offset = self.scanned;
        let bytes = text.as_bytes();
        let start = skip_label_separators(bytes, 0);
        let name_end = label_name_end(bytes, start);
        let eq = skip_blanks(bytes, name_end);
        let quote = skip_blanks(bytes, eq + 1);
        if name_end == start || bytes.get(eq) != Some(&b'=') || bytes.get(quote) != Some(&b'"') {
            return None;
        }
        let after = quoted_end(bytes, quote + 1).ok()?;
        let label = RawLabel {
            name: text.get(start..name_end)?,
            value: text.get(quote + 1..after - 1)?,
            pair: (offset + start, offset + after),
        };
        self.rest = text.get(after..)?;
        self.scanned = offset + after;
        Some(label)
    }
}

/// Resolve `\\`, `\"` and `\n` in a raw label value; borrows when there is nothing to resolve.
pub(crate) fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

impl<'a> Iterator for LabelIter<'a> {
    type Item = (&'a str, Cow<'a, str>);
    fn next(&mut self) -> Option<Self::Item> {
        let label = self.next_raw()?;
        Some((label.name, unescape(label.value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn only_sample(input: &str) -> Sample<'_> {
        let expo = parse(input);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        assert_eq!(expo.samples.len(), 1, "{input:?}");
        expo.samples[0]
    }

    fn labels_of<'a>(sample: &Sample<'a>) -> Vec<(&'a str, String)> {
        sample.labels().map(|(n, v)| (n, v.into_owned())).collect()
    }

    fn reasons(expo: &Exposition<'_>) -> Vec<(usize, &'static str)> {
        expo.errors.iter().map(|e| (e.line, e.reason)).collect()
    }

    #[test]
    fn plain_sample_without_labels() {
        let s = only_sample("process_cpu_seconds_total 10.950000000000001\n");
        assert_eq!(s.name, "process_cpu_seconds_total");
        assert_eq!(s.labels_raw, "");
        assert_eq!(s.value, 10.950000000000001);
        assert_eq!(s.timestamp_ms, None);
        assert_eq!(s.labels().count(), 0);
    }

    #[test]
    fn names_with_colons_and_label_sets() {
        let s = only_sample(
            r#"vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 14.0"#,
        );
        assert_eq!(s.name, "vllm:num_requests_running");
        assert_eq!(
            s.labels_raw,
            r#"engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct""#
        );
        assert_eq!(s.value, 14.0);
        assert_eq!(
            labels_of(&s),
            vec![
                ("engine", "0".to_string()),
                ("model_name", "meta-llama/Llama-3.1-8B-Instruct".to_string())
            ]
        );
        assert_eq!(s.label("engine").as_deref(), Some("0"));
        assert_eq!(s.label("pid"), None);
        let colon_first = only_sample(":leading:colon 1");
        assert_eq!(colon_first.name, ":leading:colon");
    }

    #[test]
    fn trailing_comma_spaces_and_empty_label_set() {
        let s = only_sample("m { a = \"x\" , b=\"y\", } 2");
        assert_eq!(
            labels_of(&s),
            vec![("a", "x".to_string()), ("b", "y".to_string())]
        );
        assert_eq!(s.value, 2.0);
        let empty = only_sample("m{} 3");
        assert_eq!(empty.labels_raw, "");
        assert_eq!(empty.value, 3.0);
    }

    #[test]
    fn escaped_label_values_are_unescaped_lazily() {
        let s = only_sample(r#"m{path="C:\\dir",quote="say \"hi\"",text="l1\nl2",plain="p"} 1"#);
        assert_eq!(
            labels_of(&s),
            vec![
                ("path", r"C:\dir".to_string()),
                ("quote", r#"say "hi""#.to_string()),
                ("text", "l1\nl2".to_string()),
                ("plain", "p".to_string()),
            ]
        );
        for (name, value) in s.labels() {
            let borrowed = matches!(value, Cow::Borrowed(_));
            assert_eq!(borrowed, name == "plain", "{name}");
        }
    }

    #[test]
    fn label_values_may_hold_braces_commas_and_hashes() {
        let s = only_sample(r##"m{a="}",b=",",c="# x",d="{=}"} 4 # {trace_id="1"} 2"##);
        assert_eq!(
            labels_of(&s),
            vec![
                ("a", "}".to_string()),
                ("b", ",".to_string()),
                ("c", "# x".to_string()),
                ("d", "{=}".to_string()),
            ]
        );
        assert_eq!(s.value, 4.0);
    }

    #[test]
    fn special_and_scientific_values() {
        let input =
            "a NaN\nb +Inf\nc -Inf\nd Inf\ne inf\nf nan\ng 4.108603e+06\nh 1.5E-3\ni -7\nj +0.25\n";
        let expo = parse(input);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        let values: Vec<f64> = expo.samples.iter().map(|s| s.value).collect();
        assert!(values[0].is_nan());
        assert_eq!(values[1], f64::INFINITY);
        assert_eq!(values[2], f64::NEG_INFINITY);
        assert_eq!(values[3], f64::INFINITY);
        assert_eq!(values[4], f64::INFINITY);
        assert!(values[5].is_nan());
        assert_eq!(values[6], 4_108_603.0);
        assert_eq!(values[7], 0.0015);
        assert_eq!(values[8], -7.0);
        assert_eq!(values[9], 0.25);
    }

    #[test]
    fn timestamps_in_milliseconds() {
        let s = only_sample("m{a=\"b\"} 3.5 1718140558300");
        assert_eq!(s.value, 3.5);
        assert_eq!(s.timestamp_ms, Some(1_718_140_558_300));
        let negative = only_sample("m 1 -1000");
        assert_eq!(negative.timestamp_ms, Some(-1000));
    }

    #[test]
    fn exemplars_are_ignored() {
        let with_ts = only_sample(
            r#"vllm:e2e_request_latency_seconds_bucket{le="1.0"} 7 123 # {trace_id="abc"} 0.67 1520879607.789"#,
        );
        assert_eq!(with_ts.value, 7.0);
        assert_eq!(with_ts.timestamp_ms, Some(123));
        let without_ts = only_sample(r#"x_bucket{le="0.5"} 2 # {trace_id="KOO5S4vxi0o"} 0.67"#);
        assert_eq!(without_ts.value, 2.0);
        assert_eq!(without_ts.timestamp_ms, None);
        assert_eq!(without_ts.labels_raw, r#"le="0.5""#);
    }

    #[test]
    fn type_lines_help_and_comments() {
        let input = "# HELP a Some help with {braces} and \"quotes\"\n\
                     # TYPE a counter\n\
                     # TYPE b gauge\n\
                     # TYPE c histogram\n\
                     # TYPE d summary\n\
                     # TYPE e untyped\n\
                     # TYPE f unknown\n\
                     # TYPE g info\n\
                     # TYPE h stateset\n\
                     # TYPE i gaugehistogram\n\
                     # TYPE vllm:x gauge\n\
                     # just a comment\n\
                     #no space comment\n\
                     # UNIT a seconds\n\
                     a_total 1\n";
        let expo = parse(input);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        assert_eq!(
            expo.types,
            vec![
                ("a", MetricType::Counter),
                ("b", MetricType::Gauge),
                ("c", MetricType::Histogram),
                ("d", MetricType::Summary),
                ("e", MetricType::Untyped),
                ("f", MetricType::Untyped),
                ("g", MetricType::Info),
                ("h", MetricType::StateSet),
                ("i", MetricType::GaugeHistogram),
                ("vllm:x", MetricType::Gauge),
            ]
        );
        assert_eq!(expo.metric_type("c"), Some(MetricType::Histogram));
        assert_eq!(expo.metric_type("zzz"), None);
        assert_eq!(expo.samples.len(), 1);
        assert!(!expo.saw_eof);
    }

    #[test]
    fn eof_marker_stops_parsing() {
        let expo = parse("a 1\n# EOF\nb 2\nnot a line at all ...\n");
        assert!(expo.saw_eof);
        assert_eq!(expo.samples.len(), 1);
        assert_eq!(expo.samples[0].name, "a");
        assert_eq!(expo.malformed, 0);
        // "# EOF" followed by more words is a comment, not the marker.
        let not_eof = parse("# EOF is near\na 1\n");
        assert!(!not_eof.saw_eof);
        assert_eq!(not_eof.samples.len(), 1);
    }

    #[test]
    fn blank_lines_crlf_and_surrounding_whitespace() {
        let input = "\r\n  \n# TYPE a gauge\r\n\ta{x=\"1\"} 5\r\n   b 6 1000  \r\n\n\nc 7";
        let expo = parse(input);
        assert_eq!(expo.malformed, 0, "{:?}", expo.errors);
        assert_eq!(expo.types, vec![("a", MetricType::Gauge)]);
        let got: Vec<(&str, &str, f64, Option<i64>)> = expo
            .samples
            .iter()
            .map(|s| (s.name, s.labels_raw, s.value, s.timestamp_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "x=\"1\"", 5.0, None),
                ("b", "", 6.0, Some(1000)),
                ("c", "", 7.0, None),
            ]
        );
    }

    #[test]
    fn malformed_lines_are_counted_with_line_numbers() {
        let input = [
            "good 1",               // 1
            "...",                  // 2 bad name
            "9lives 1",             // 3 bad name
            "m{a=\"x} 1",           // 4 unterminated quote
            "m{a=\"\\t\"} 1",       // 5 bad escape
            "m{a=\"x\"}",           // 6 missing value
            "m",                    // 7 missing value
            "m twelve",             // 8 unparsable
            "m 1 2 3",              // 9 junk after timestamp
            "m 1 soon",             // 10 junk after value
            "m{a=x} 1",             // 11 unquoted
            "m{1a=\"x\"} 1",        // 12 bad label name
            "m{a=\"x\" b=\"y\"} 1", // 13 missing comma
            "m{a \"x\"} 1",         // 14 missing '='
            "m{a=\"x\"",            // 15 unterminated set
            "# TYPE m sometimes",   // 16 bad type
            "# TYPE 1m gauge",      // 17 bad family name
            "m-x 1",                // 18 bad char in name
            "m{a=\"x\"}5",          // 19 no space before value
            "good 2",               // 20
        ]
        .join("\n");
        let expo = parse(&input);
        assert_eq!(expo.samples.len(), 2);
        assert_eq!(expo.malformed, 18);
        assert_eq!(
            reasons(&expo),
            vec![
                (2, "bad metric name"),
                (3, "bad metric name"),
                (4, "unterminated label value"),
                (5, "bad escape in label value"),
                (6, "missing value"),
                (7, "missing value"),
                (8, "unparsable value"),
                (9, "junk after timestamp"),
                (10, "junk after value"),
                (11, "label value not quoted"),
                (12, "bad label name"),
                (13, "expected ',' or '}' after label value"),
                (14, "missing '=' after label name"),
                (15, "unterminated label set"),
                (16, "unknown metric type"),
                (17, "bad metric name in TYPE line"),
            ]
        );
    }

    #[test]
    fn only_the_first_errors_are_recorded() {
        let input = "bad line\n".repeat(MAX_RECORDED_ERRORS + 4);
        let expo = parse(&input);
        assert_eq!(expo.malformed, MAX_RECORDED_ERRORS + 4);
        assert_eq!(expo.errors.len(), MAX_RECORDED_ERRORS);
        assert_eq!(
            expo.errors.last().map(|e| e.line),
            Some(MAX_RECORDED_ERRORS)
        );
    }

    #[test]
    fn label_iter_stops_on_garbage_without_panicking() {
        for raw in [
            r#"a="x",b"#,
            r#"a="x"#,
            "=",
            r#"a=x"#,
            r#"a="\"#,
            ",,,",
            "\u{e9}=\"x\"",
        ] {
            let s = Sample {
                name: "m",
                labels_raw: raw,
                value: 0.0,
                timestamp_ms: None,
                spans: SpanRange::default(),
            };
            let got: Vec<_> = s.labels().collect();
            assert!(got.len() <= 1, "{raw}: {got:?}");
        }
        let s = Sample {
            name: "m",
            labels_raw: r#"a="x",b"#,
            value: 0.0,
            timestamp_ms: None,
            spans: SpanRange::default(),
        };
        assert_eq!(labels_of(&s), vec![("a", "x".to_string())]);
    }

    fn kept_labels<'a>(expo: &Exposition<'a>, sample: &Sample<'a>) -> Vec<RawLabel<'a>> {
        expo.raw_labels(sample).collect()
    }

    fn scanned_labels<'a>(sample: &Sample<'a>) -> Vec<RawLabel<'a>> {
        let mut iter = sample.labels();
        std::iter::from_fn(|| iter.next_raw()).collect()
    }

    /// The labels the parser keeps are those a fresh scan finds, also when a malformed line
    /// (whose labels were read before its value failed) lies between two samples.
    #[test]
    fn kept_labels_are_the_scanned_ones_around_malformed_lines() {
        let body = "a{x=\"1\",le=\"0.5\"} 1\n\
                    b{y=\"2\",z=\"3\"} not-a-number\n\
                    c{w=\"q\\\"\",v=\"\"} 2\n\
                    d 3\n";
        let expo = parse(body);
        assert_eq!(expo.malformed, 1);
        assert_eq!(expo.samples.len(), 3);
        assert_eq!(
            expo.label_spans.len(),
            4,
            "the malformed line's labels are dropped"
        );
        for sample in &expo.samples {
            assert_eq!(kept_labels(&expo, sample), scanned_labels(sample));
        }
        let c = kept_labels(&expo, &expo.samples[1]);
        assert_eq!((c[0].name, c[0].value), ("w", "q\\\""));
        assert_eq!(c[1].pair, (8, 12));
        let a = kept_labels(&expo, &expo.samples[0]);
        assert_eq!(
            &expo.samples[0].labels_raw[a[1].pair.0..a[1].pair.1],
            "le=\"0.5\""
        );
        assert!(kept_labels(&expo, &expo.samples[2]).is_empty());
    }

    fn escape_label_value(value: &str) -> String {
        let mut out = String::with_capacity(value.len());
        for c in value.chars() {
            match c {
                '\\' => out.push_str(r"\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str(r"\n"),
                other => out.push(other),
            }
        }
        out
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let text = String::from_utf8_lossy(&bytes);
            let expo = parse(&text);
            let lines = text.split('\n').count();
            prop_assert!(expo.samples.len() + expo.malformed <= lines);
            for sample in &expo.samples {
                prop_assert_eq!(kept_labels(&expo, sample), scanned_labels(sample));
            }
        }

        #[test]
        fn exposition_alphabet_never_panics(text in "[a-z:_{}=\",\\\\ #\t\r\n0-9.eE+-]{0,300}") {
            let expo = parse(&text);
            prop_assert!(expo.samples.len() + expo.malformed <= text.split('\n').count());
            prop_assert!(expo.errors.len() <= MAX_RECORDED_ERRORS);
            for sample in &expo.samples {
                prop_assert_eq!(kept_labels(&expo, sample), scanned_labels(sample));
            }
        }

        #[test]
        fn written_samples_round_trip(
            name in "[a-zA-Z_:][a-zA-Z0-9_:]{0,24}",
            labels in proptest::collection::vec(
                ("[a-zA-Z_][a-zA-Z0-9_]{0,12}", "(\\PC|[\\\\\"\n{},=# ]){0,16}"),
                0..5,
            ),
            value in any::<f64>().prop_filter("finite", |v| v.is_finite()),
            timestamp in proptest::option::of(any::<i64>()),
            trailing_comma in any::<bool>(),
        ) {
            let mut line = name.clone();
            if !labels.is_empty() {
                let pairs: Vec<String> = labels
                    .iter()
                    .map(|(n, v)| format!("{n}=\"{}\"", escape_label_value(v)))
                    .collect();
                line.push('{');
                line.push_str(&pairs.join(","));
                if trailing_comma {
                    line.push(',');
                }
                line.push('}');
            }
            line.push_str(&format!(" {value}"));
            if let Some(ts) = timestamp {
                line.push_str(&format!(" {ts}"));
            }
            line.push('\n');

            let expo = parse(&line);
            prop_assert_eq!(expo.malformed, 0, "{:?} in {:?}", expo.errors, line);
            prop_assert_eq!(expo.samples.len(), 1);
            let sample = expo.samples[0];
            prop_assert_eq!(sample.name, name.as_str());
            prop_assert_eq!(sample.value.to_bits(), value.to_bits());
            prop_assert_eq!(sample.timestamp_ms, timestamp);
            let got: Vec<(String, String)> = sample
                .labels()
                .map(|(n, v)| (n.to_string(), v.into_owned()))
                .collect();
            prop_assert_eq!(got, labels);
            prop_assert_eq!(kept_labels(&expo, &sample), scanned_labels(&sample));
        }
    }
}
