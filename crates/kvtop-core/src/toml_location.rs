//! Where things are in a TOML document: byte offsets to line:column, the key path at an offset
//! (for serde errors, which carry a span but no public key path), and the position of a known
//! key path (for errors found after deserializing, such as `timeout > interval`).

use std::fmt;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The line and column of byte `offset` in `text` (clamped to the end of the text).
pub fn line_col(text: &str, offset: usize) -> LineCol {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    LineCol {
        line: before.matches('\n').count() + 1,
        column: before.get(line_start..).unwrap_or_default().chars().count() + 1,
    }
}

/// The text of the 1-based line `line` (without its line ending), for error context.
pub(crate) fn line_text(text: &str, line: usize) -> &str {
    text.lines()
        .nth(line.saturating_sub(1))
        .unwrap_or_default()
        .trim_end_matches('\r')
}

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySegment {
    Key(String),
    Index(usize),
}

/// A dotted key path such as `scrape.interval` or `targets[1].url`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<KeySegment>);

impl KeyPath {
    /// A path of plain keys, e.g. `KeyPath::keys(&["scrape", "interval"])`.
    pub fn keys(keys: &[&str]) -> Self {
        KeyPath(
            keys.iter()
                .map(|k| KeySegment::Key((*k).to_owned()))
                .collect(),
        )
    }

    /// This path extended by an array index.
    pub fn index(mut self, index: usize) -> Self {
        self.0.push(KeySegment::Index(index));
        self
    }

    /// This path extended by a key.
    pub fn key(mut self, key: &str) -> Self {
        self.0.push(KeySegment::Key(key.to_owned()));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The path as text, or `(top level)` for the empty path.
    pub fn describe(&self) -> String {
        if self.is_empty() {
            "(top level)".to_owned()
        } else {
            self.to_string()
        }
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                KeySegment::Key(key) if i == 0 => write!(f, "{key}")?,
                KeySegment::Key(key) => write!(f, ".{key}")?,
                KeySegment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// A parsed document kept for locating keys.
#[derive(Debug)]
pub struct TomlMap<'i> {
    root: Spanned<DeTable<'i>>,
}

impl<'i> TomlMap<'i> {
    /// Parses `text`; on a syntax error returns toml's error (with its span).
    pub fn parse(text: &'i str) -> Result<Self, toml::de::Error> {
        DeTable::parse(text).map(|root| TomlMap { root })
    }

    /// The deepest key path whose key or value covers byte `offset`.
    pub(crate) fn path_at(&self, offset: usize) -> KeyPath {
        let mut path = KeyPath::default();
        find_in_table(self.root.get_ref(), offset, &mut path);
        path
    }

    /// The byte span of the value at `path` (or of its key when the value's span is empty).
    pub fn span_of(&self, path: &KeyPath) -> Option<Range<usize>> {
        let mut segments = path.0.iter();
        let first = match segments.next()? {
            KeySegment::Key(key) => key,
            KeySegment::Index(_) => return None,
        };
        let (mut key_span, mut value) = table_entry(self.root.get_ref(), first)?;
        for segment in segments {
            let next = match (segment, value.get_ref()) {
                (KeySegment::Key(key), DeValue::Table(table)) => table_entry(table, key)?,
                (KeySegment::Index(index), DeValue::Array(array)) => {
                    let item = array.get(*index)?;
                    (item.span(), item)
                }
                _ => return None,
            };
            (key_span, value) = next;
        }
        let span = value.span();
        Some(if span.is_empty() { key_span } else { span })
    }

    /// Every leaf key path set in the document (keys sorted within each table, array items in
    /// order).
    pub fn leaf_paths(&self) -> Vec<KeyPath> {
        let mut out = Vec::new();
        collect_leaves(self.root.get_ref(), &KeyPath::default(), &mut out);
        out
    }
}

/// Why a document could not be deserialized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TomlError {
    /// Not valid TOML. `context` is the offending line with a caret under the column.
    Syntax {
        at: LineCol,
        message: String,
        context: String,
    },
    /// Valid TOML that does not fit the expected shape (unknown key, wrong type, bad value).
    Invalid {
        at: Option<LineCol>,
        key: KeyPath,
        message: String,
    },
}

/// Parses and deserializes `text`, keeping the key map for locating later errors.
pub fn deserialize<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<(T, TomlMap<'_>), TomlError> {
    let map = TomlMap::parse(text).map_err(|e| {
        let at = line_col(text, e.span().map_or(0, |span| span.start));
        let gutter = " ".repeat(at.line.to_string().len());
        let caret_pad = " ".repeat(at.column.saturating_sub(1));
        TomlError::Syntax {
            at,
            message: e.message().trim().to_owned(),
            context: format!(
                "\n  {} | {}\n  {gutter} | {caret_pad}^",
                at.line,
                line_text(text, at.line)
            ),
        }
    })?;
    let value = toml::from_str(text).map_err(|e| {
        let offset = e.span().map(|span| span.start);
        TomlError::Invalid {
            at: offset.map(|o| line_col(text, o)),
            key: offset.map(|o| map.path_at(o)).unwrap_or_default(),
            message: e.message().trim().to_owned(),
        }
    })?;
    Ok((value, map))
}

fn table_entry<'a, 'i>(
    table: &'a DeTable<'i>,
    key: &str,
) -> Option<(Range<usize>, &'a Spanned<DeValue<'i>>)> {
    table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(k, v)| (k.span(), v))
}

fn covers(span: &Range<usize>, offset: usize) -> bool {
    span.contains(&offset) || (span.is_empty() && span.start == offset)
}

/// Searches `table` for the deepest entry covering `offset`, appending its path to `path`.
/// Returns whether anything was found.
fn find_in_table(table: &DeTable<'_>, offset: usize, path: &mut KeyPath) -> bool {
    for (key, value) in table.iter() {
        path.0.push(KeySegment::Key(key.get_ref().to_string()));
        if find_in_value(value.get_ref(), offset, path)
            || covers(&key.span(), offset)
            || covers(&value.span(), offset)
        {
            return true;
        }
        path.0.pop();
    }
    false
}

fn find_in_value(value: &DeValue<'_>, offset: usize, path: &mut KeyPath) -> bool {
    match value {
        DeValue::Table(table) => find_in_table(table, offset, path),
        DeValue::Array(array) => {
            for (index, item) in array.iter().enumerate() {
                path.0.push(KeySegment::Index(index));
                if find_in_value(item.get_ref(), offset, path) || covers(&item.span(), offset) {
                    return true;
                }
                path.0.pop();
            }
            false
        }
        _ => false,
    }
}

fn collect_leaves(table: &DeTable<'_>, prefix: &KeyPath, out: &mut Vec<KeyPath>) {
    for (key, value) in table.iter() {
        let path = prefix.clone().key(key.get_ref());
        match value.get_ref() {
            DeValue::Table(inner) => collect_leaves(inner, &path, out),
            DeValue::Array(array)
                if array
                    .iter()
                    .all(|v| matches!(v.get_ref(), DeValue::Table(_)))
                    && !array.is_empty() =>
            {
                for (index, item) in array.iter().enumerate() {
                    if let DeValue::Table(inner) = item.get_ref() {
                        collect_leaves(inner, &path.clone().index(index), out);
                    }
                }
            }
            _ => out.push(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# comment
[scrape]
interval = \"1s\"
timeout = \"5x\"

[[targets]]
url = \"http://a:8000/metrics\"

[[targets]]
url = \"http://b:8000/metrics\"
name = \"b\"

[display]
colours = { fg = \"red\" }
";

    fn offset_of(needle: &str) -> usize {
        DOC.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in DOC"))
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col(DOC, 0), LineCol { line: 1, column: 1 });
        assert_eq!(
            line_col(DOC, offset_of("timeout")),
            LineCol { line: 4, column: 1 }
        );
        assert_eq!(
            line_col(DOC, offset_of("\"5x\"")),
            LineCol {
                line: 4,
                column: 11
            }
        );
        assert_eq!(line_col("é=1", 2), LineCol { line: 1, column: 2 });
        assert_eq!(line_col("a", 99), LineCol { line: 1, column: 2 });
        assert_eq!(line_text(DOC, 4), "timeout = \"5x\"");
    }

    #[test]
    fn path_at_finds_keys_values_and_array_items() {
        let map = TomlMap::parse(DOC).expect("valid toml");
        assert_eq!(
            map.path_at(offset_of("timeout")).to_string(),
            "scrape.timeout"
        );
        assert_eq!(
            map.path_at(offset_of("\"5x\"")).to_string(),
            "scrape.timeout"
        );
        assert_eq!(
            map.path_at(offset_of("name")).to_string(),
            "targets[1].name"
        );
        assert_eq!(
            map.path_at(offset_of("\"http://a")).to_string(),
            "targets[0].url"
        );
        assert_eq!(
            map.path_at(offset_of("\"red\"")).to_string(),
            "display.colours.fg"
        );
        assert!(map.path_at(offset_of("# comment")).is_empty());
    }

    #[test]
    fn span_of_points_at_the_value() {
        let map = TomlMap::parse(DOC).expect("valid toml");
        let span = map
            .span_of(&KeyPath::keys(&["scrape", "timeout"]))
            .expect("present");
        assert_eq!(DOC.get(span), Some("\"5x\""));
        let span = map
            .span_of(&KeyPath::keys(&["targets"]).index(1).key("name"))
            .expect("present");
        assert_eq!(DOC.get(span), Some("\"b\""));
        assert_eq!(map.span_of(&KeyPath::keys(&["scrape", "absent"])), None);
        assert_eq!(map.span_of(&KeyPath::keys(&["targets"]).index(7)), None);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Shape {
        a: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        n: Option<u32>,
    }

    #[test]
    fn deserialize_locates_syntax_errors() {
        let err = deserialize::<Shape>("[a]\nn = = 1\n").expect_err("syntax");
        let TomlError::Syntax { at, context, .. } = err else {
            panic!("expected a syntax error, got {err:?}");
        };
        assert_eq!(at.line, 2);
        assert!(context.contains("2 | n = = 1"), "{context}");
    }

    #[test]
    fn deserialize_names_unknown_and_mistyped_keys() {
        let err = deserialize::<Shape>("[a]\nn = 1\nm = 2\n").expect_err("unknown key");
        assert_eq!(
            err,
            TomlError::Invalid {
                at: Some(LineCol { line: 3, column: 1 }),
                key: KeyPath::keys(&["a", "m"]),
                message: "unknown field `m`, expected `n`".to_owned(),
            }
        );
        let err = deserialize::<Shape>("[a]\nn = \"x\"\n").expect_err("wrong type");
        let TomlError::Invalid { at, key, .. } = err else {
            panic!("expected an invalid-value error, got {err:?}");
        };
        assert_eq!(key.to_string(), "a.n");
        assert_eq!(at, Some(LineCol { line: 2, column: 5 }));
    }

    #[test]
    fn leaf_paths_lists_every_set_key() {
        let map = TomlMap::parse(DOC).expect("valid toml");
        let mut paths: Vec<String> = map.leaf_paths().iter().map(|p| p.to_string()).collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "display.colours.fg",
                "scrape.interval",
                "scrape.timeout",
                "targets[0].url",
                "targets[1].name",
                "targets[1].url",
            ]
        );
    }
}
