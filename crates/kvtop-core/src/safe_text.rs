//! PURE. Text from outside (label values, log lines, event messages, API errors, config
//! snippets) made safe to show: one definition of what is unsafe, and one way to show it for
//! each kind of output.
//!
//! Unsafe are the C0 and C1 control characters and DEL (a terminal acts on them: titles, the
//! clipboard through OSC 52, cursor reports typed back into the shell), the bidirectional
//! overrides and isolates (they reorder what is read), and the zero-width characters (they
//! hide text). The console shows each as one `�` so cells stay aligned ([`crate::format`]);
//! every other output shows it as a visible escape (`\x1b`, `\u{202e}`), and bounds the length.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Longest text shown from one outside field before it is cut (`…`): a label or message is
/// far shorter; a 200 KB "label" is an attack or a bug either way.
pub const MAX_FIELD_CHARS: usize = 1_024;

/// Whether `c` must never reach a terminal or a document as it is.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidirectional marks, embeddings, overrides and isolates.
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            // Zero-width space, joiners, word joiner, invisible operators, BOM.
            | '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
}

fn escape_into(out: &mut String, c: char) {
    let code = u32::from(c);
    if code < 0x100 {
        let _ = write!(out, "\\x{code:02x}");
    } else {
        let _ = write!(out, "\\u{{{code:04x}}}");
    }
}

/// `text` on one line for a terminal or a log: unsafe characters (newlines included) as
/// visible escapes, at most [`MAX_FIELD_CHARS`] characters.
pub fn line(text: &str) -> Cow<'_, str> {
    bounded(text, MAX_FIELD_CHARS, false)
}

/// [`line`] that keeps line breaks (`\n`): for a multi-line message such as a config error.
pub fn block(text: &str, max_chars: usize) -> Cow<'_, str> {
    bounded(text, max_chars, true)
}

fn bounded(text: &str, max_chars: usize, keep_newlines: bool) -> Cow<'_, str> {
    let clean = !text
        .chars()
        .any(|c| is_unsafe(c) && !(keep_newlines && c == '\n'));
    if clean && text.chars().nth(max_chars).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    for (i, c) in text.chars().enumerate() {
        if i == max_chars {
            out.push('…');
            break;
        }
        if is_unsafe(c) && !(keep_newlines && c == '\n') {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`line`] for Markdown: also escapes what would make a link, an image, HTML, code, a table
/// cell break or emphasis, so a pasted snippet shows the text and nothing else.
pub fn markdown(text: &str) -> String {
    let safe = line(text);
    let mut out = String::with_capacity(safe.len());
    for c in safe.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '<' | '>' | '|' | '!' | '#' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A serialised JSON document with every unsafe character that JSON allows raw (C1 controls,
/// DEL, bidi and zero-width characters) written as a `\uXXXX` escape: the same document to
/// a parser, nothing a terminal acts on to a reader.
pub fn json(serialised: &str) -> Cow<'_, str> {
    if !serialised.chars().any(is_unsafe_in_json) {
        return Cow::Borrowed(serialised);
    }
    let mut out = String::with_capacity(serialised.len() + 16);
    for c in serialised.chars() {
        if is_unsafe_in_json(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Unsafe characters a JSON serialiser leaves raw (it escapes C0 itself; `\n` between tokens
/// is layout).
fn is_unsafe_in_json(c: char) -> bool {
    is_unsafe(c) && u32::from(c) >= 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a hostile endpoint put in a label: a title change, an OSC 52 clipboard write, a
    /// screen clear, a C1 CSI, a right-to-left override and a zero-width space.
    const HOSTILE: &str = "llama\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}[2J\u{9b}6n\u{202e}gnp.exe\u{200b}";

    #[test]
    fn a_hostile_label_keeps_its_text_and_loses_its_power() {
        let shown = line(HOSTILE);
        assert!(!shown.chars().any(is_unsafe), "{shown}");
        assert_eq!(
            shown,
            "llama\\x1b]0;pwned\\x07\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\x9b6n\\u{202e}gnp.exe\\u{200b}"
        );
        assert!(matches!(line("vllm-llama-8b"), Cow::Borrowed(_)));
        assert_eq!(line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(block("a\nb\u{1b}", 100), "a\nb\\x1b");
    }

    #[test]
    fn long_text_is_cut() {
        let long = "x".repeat(200_000);
        let shown = line(&long);
        assert_eq!(shown.chars().count(), MAX_FIELD_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(block("abcdef", 3), "abc…");
    }

    #[test]
    fn markdown_shows_links_and_html_as_text() {
        assert_eq!(
            markdown("[click](http://evil) <img src=x> `code` a|b"),
            "\\[click\\]\\(http://evil\\) \\<img src=x\\> \\`code\\` a\\|b"
        );
        assert!(!markdown(HOSTILE).chars().any(is_unsafe));
    }

    #[test]
    fn json_escapes_what_serialisers_leave_raw_and_parses_back_the_same() {
        let doc = serde_json::json!({"model": HOSTILE, "emoji": "😀 ok"});
        let raw = serde_json::to_string(&doc).unwrap_or_default();
        assert!(raw.contains('\u{9b}'), "serde_json leaves C1 raw");
        let safe = json(&raw);
        assert!(!safe.chars().any(is_unsafe), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, doc);
        assert!(matches!(json("{\"a\":\"b\"}"), Cow::Borrowed(_)));
    }
}
