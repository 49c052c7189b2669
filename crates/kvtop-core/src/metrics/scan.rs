//! Byte scanners for the exposition parser: character classes and word-at-a-time searches.
//!
//! The parser spends most of its time walking metric names and label values, so the long runs
//! are scanned eight bytes at a time (SWAR, safe `u64` arithmetic), and single bytes are
//! classified with one table lookup.

const NAME_CHAR: u8 = 1; // [a-zA-Z0-9_:] continues a metric name
const LABEL_CHAR: u8 = 2; // [a-zA-Z0-9_] continues a label name
const NAME_START: u8 = 4; // [a-zA-Z_:] starts a metric name
const LABEL_START: u8 = 8; // [a-zA-Z_] starts a label name
const BLANK: u8 = 16; // ' ', '\t', '\r': separators inside a line
const LABEL_SEPARATOR: u8 = 32; // blanks and ',' between labels

const CHAR_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut c = 0usize;
    while c < 256 {
        let b = c as u8;
        let alpha = b.is_ascii_alphabetic() || b == b'_';
        if alpha || b.is_ascii_digit() {
            table[c] |= NAME_CHAR | LABEL_CHAR;
        }
        if alpha {
            table[c] |= NAME_START | LABEL_START;
        }
        if b == b':' {
            table[c] |= NAME_CHAR | NAME_START;
        }
        if b == b' ' || b == b'\t' || b == b'\r' {
            table[c] |= BLANK | LABEL_SEPARATOR;
        }
        if b == b',' {
            table[c] |= LABEL_SEPARATOR;
        }
        c += 1;
    }
    table
};

fn has_class(byte: u8, class: u8) -> bool {
    CHAR_CLASS[usize::from(byte)] & class != 0
}

/// `byte` repeated in every lane of a word.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}
const LOW_BITS: u64 = splat(0x01);
const HIGH_BITS: u64 = splat(0x80);

/// The 8 bytes at `at` as a little-endian word, if that many remain.
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(chunk.try_into().ok()?))
}

/// High bit set in each lane of `word` that equals `byte`. Lanes above the first match may
/// hold false positives (borrows), so only the lowest set lane is meaningful.
fn lanes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ splat(byte);
    x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
}

/// High bit set in each lane whose byte cannot continue a metric name (`[a-zA-Z0-9_:]`).
/// Exact in every lane: no borrow crosses lanes.
fn lanes_not_name(word: u64) -> u64 {
    let ascii = word & !HIGH_BITS;
    // For ASCII lanes `(x | 0x80) - lo` keeps bit 7 iff x >= lo, and `(hi | 0x80) - x` keeps
    // bit 7 iff x <= hi; neither can borrow from the next lane.
    let ge = |lo: u8| (ascii | HIGH_BITS).wrapping_sub(splat(lo)) & HIGH_BITS;
    let le = |hi: u8| (splat(hi) | HIGH_BITS).wrapping_sub(ascii) & HIGH_BITS;
    let lower = ge(b'a') & le(b'z');
    let upper = ge(b'A') & le(b'Z');
    let digit_or_colon = ge(b'0') & le(b':');
    let underscore = ge(b'_') & le(b'_');
    // Non-ASCII lanes (bit 7 set in `word`) are never name bytes.
    let name = (lower | upper | digit_or_colon | underscore) & !word;
    !name & HIGH_BITS
}

fn first_lane(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// End of the metric name starting at `start` (`[a-zA-Z_:][a-zA-Z0-9_:]*`); `start` if none.
/// Metric names are long (40 bytes is common), so they are scanned a word at a time.
pub(super) fn metric_name_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(c) if has_class(*c, NAME_START) => {}
        _ => return start,
    }
    let mut i = start + 1;
    while let Some(word) = word_at(bytes, i) {
        let stops = lanes_not_name(word);
        if stops != 0 {
            return i + first_lane(stops);
        }
        i += 8;
    }
    class_run_end(bytes, i, NAME_CHAR)
}

/// End of a label name starting at `start` (`[a-zA-Z_][a-zA-Z0-9_]*`); `start` if none.
/// Label names are short: a plain byte loop beats the word-at-a-time scan here.
pub(super) fn label_name_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(c) if has_class(*c, LABEL_START) => class_run_end(bytes, start + 1, LABEL_CHAR),
        _ => start,
    }
}

/// Index of the first byte at or after `start` that is not of `class` (or the length).
fn class_run_end(bytes: &[u8], start: usize, class: u8) -> usize {
    let mut i = start;
    while let Some(c) = bytes.get(i) {
        if !has_class(*c, class) {
            break;
        }
        i += 1;
    }
    i
}

/// Index of the first `"`, `\` or newline at or after `start`: the end of a label value's
/// plain run.
pub(super) fn value_stop(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while let Some(word) = word_at(bytes, i) {
        let stops = lanes_equal(word, b'"') | lanes_equal(word, b'\\') | lanes_equal(word, b'\n');
        if stops != 0 {
            return Some(i + first_lane(stops));
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|c| matches!(c, b'"' | b'\\' | b'\n'))
        .map(|n| i + n)
}

/// First index at or after `i` that is not a blank (`' '`, `'\t'`, `'\r'`).
pub(super) fn skip_blanks(bytes: &[u8], i: usize) -> usize {
    class_run_end(bytes, i, BLANK)
}

/// First index at or after `i` that is neither a blank nor a ',' (the gap between labels).
pub(super) fn skip_label_separators(bytes: &[u8], i: usize) -> usize {
    class_run_end(bytes, i, LABEL_SEPARATOR)
}

/// End of a whitespace-delimited token starting at `i` (stops at a blank or a newline).
pub(super) fn token_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(c) = bytes.get(i) {
        if *c == b'\n' || has_class(*c, BLANK) {
            break;
        }
        i += 1;
    }
    i
}

/// Index of the next newline at or after `start`, or the length.
pub(super) fn line_end(text: &str, start: usize) -> usize {
    text.get(start..)
        .and_then(|tail| tail.find('\n'))
        .map_or(text.len(), |n| start + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_ident_end(bytes: &[u8], start: usize, colon: bool) -> usize {
        let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || (colon && *c == b':');
        match bytes.get(start) {
            Some(c) if ident(c) && !c.is_ascii_digit() => {}
            _ => return start,
        }
        let mut i = start + 1;
        while bytes.get(i).is_some_and(ident) {
            i += 1;
        }
        i
    }

    #[test]
    fn name_scan_matches_bytewise_reference_for_every_byte() {
        for stop in 0..=255u8 {
            for len in 1..20 {
                let mut line = vec![b'a'; len];
                line.push(stop);
                line.extend_from_slice(b"zzzzzzzzzzzz");
                assert_eq!(
                    metric_name_end(&line, 0),
                    reference_ident_end(&line, 0, true),
                    "stop byte {stop:#04x} after {len} name bytes"
                );
                assert_eq!(
                    label_name_end(&line, 0),
                    reference_ident_end(&line, 0, false),
                    "stop byte {stop:#04x} after {len} label name bytes"
                );
            }
        }
        assert_eq!(metric_name_end(b"vllm:kv_cache_usage_perc{", 0), 24);
        assert_eq!(metric_name_end(b"x", 0), 1);
        assert_eq!(metric_name_end(b"9x", 0), 0);
        assert_eq!(metric_name_end(b"ab", 5), 5);
        assert_eq!(label_name_end(b"model_name=", 0), 10);
        assert_eq!(label_name_end(b":a", 0), 0);
        assert_eq!(label_name_end(b"a:b", 0), 1);
    }

    #[test]
    fn value_scan_finds_first_stop() {
        let text = br#"meta-llama/Llama-3.1-8B-Instruct",x"#;
        assert_eq!(value_stop(text, 0), Some(32));
        assert_eq!(value_stop(br"abcdefghij\n", 0), Some(10));
        assert_eq!(value_stop(b"abcdefghijklmnop\nq\"", 0), Some(16));
        assert_eq!(value_stop(b"no stop here at all", 0), None);
        assert_eq!(value_stop(b"\"", 0), Some(0));
        assert_eq!(value_stop(b"ab", 7), None);
        for stop in [b'"', b'\\', b'\n'] {
            for at in 0..20 {
                let mut text = vec![b'x'; 24];
                text[at] = stop;
                text[at + 2] = b'"';
                assert_eq!(value_stop(&text, 0), Some(at));
            }
        }
    }

    #[test]
    fn tokens_blanks_and_lines() {
        assert_eq!(skip_blanks(b"  \t\rx", 0), 4);
        assert_eq!(skip_blanks(b" ,x", 0), 1);
        assert_eq!(skip_label_separators(b" , ,\tx", 0), 5);
        assert_eq!(token_end(b"12.5 99", 0), 4);
        assert_eq!(token_end(b"12.5\r\n", 0), 4);
        assert_eq!(line_end("ab\ncd", 0), 2);
        assert_eq!(line_end("ab\ncd", 3), 5);
        assert_eq!(line_end("ab", 9), 2);
    }
}
