//! Tokens of rule expressions.

use super::units::LiteralUnit;

/// One token with its position: `start`/`end` are byte offsets into the expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind<'a>,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind<'a> {
    /// A number with its unit suffix, already in base units.
    Number(f64, LiteralUnit),
    /// A signal name, function name or keyword (`and`, `or`, `not`).
    Ident(&'a str),
    /// A double-quoted text, unescaped (`\"` and `\\`).
    Text(String),
    Op(Op),
    LParen,
    RParen,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
    Match,
    Plus,
    Minus,
    Star,
    Slash,
}

/// Why the text could not be split into tokens: the byte offset and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub start: usize,
    pub expected: String,
    pub found: String,
}

/// Split `text` into tokens, ending with `End`.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token<'_>>, LexError> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some(&b) = bytes.get(pos) else { break };
        if b.is_ascii_whitespace() {
            pos += 1;
            continue;
        }
        let start = pos;
        let single = |kind| Token {
            kind,
            start,
            end: start + 1,
        };
        let next = bytes.get(pos + 1).copied();
        let token = match b {
            b'(' => single(TokenKind::LParen),
            b')' => single(TokenKind::RParen),
            b',' => single(TokenKind::Comma),
            b'+' => single(TokenKind::Op(Op::Plus)),
            b'-' => single(TokenKind::Op(Op::Minus)),
            b'*' => single(TokenKind::Op(Op::Star)),
            b'/' => single(TokenKind::Op(Op::Slash)),
            b'~' => single(TokenKind::Op(Op::Match)),
            b'>' | b'<' | b'=' | b'!' => {
                let (op, len) = match (b, next) {
                    (b'>', Some(b'=')) => (Op::Ge, 2),
                    (b'<', Some(b'=')) => (Op::Le, 2),
                    (b'=', Some(b'=')) => (Op::Eq, 2),
                    (b'!', Some(b'=')) => (Op::Ne, 2),
                    (b'>', _) => (Op::Gt, 1),
                    (b'<', _) => (Op::Lt, 1),
                    _ => {
                        let end = char_end(text, start);
                        return Err(LexError {
                            start,
                            expected: if b == b'=' {
                                "\"==\" (comparison)".into()
                            } else {
                                "\"!=\" (use `not` to negate a condition)".into()
                            },
                            found: quote(text.get(start..end).unwrap_or_default()),
                        });
                    }
                };
                Token {
                    kind: TokenKind::Op(op),
                    start,
                    end: start + len,
                }
            }
            b'"' => lex_text(text, start)?,
            b'0'..=b'9' | b'.' => lex_number(text, start)?,
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let end = scan(bytes, start, |c| {
                    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
                });
                Token {
                    kind: TokenKind::Ident(text.get(start..end).unwrap_or_default()),
                    start,
                    end,
                }
            }
            _ => {
                let end = char_end(text, start);
                return Err(LexError {
                    start,
                    expected: "a signal, a number, an operator or a parenthesis".into(),
                    found: quote(text.get(start..end).unwrap_or_default()),
                });
            }
        };
        pos = token.end;
        tokens.push(token);
    }
    tokens.push(Token {
        kind: TokenKind::End,
        start: text.len(),
        end: text.len(),
    });
    Ok(tokens)
}

fn scan(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut end = from;
    while bytes.get(end).is_some_and(|&c| keep(c)) {
        end += 1;
    }
    end
}

/// End offset of the character starting at `start`.
fn char_end(text: &str, start: usize) -> usize {
    text.get(start..)
        .and_then(|rest| rest.chars().next())
        .map_or(start + 1, |c| start + c.len_utf8())
}

/// `"text"` for messages.
pub(crate) fn quote(text: &str) -> String {
    format!("{text:?}")
}

fn lex_number(text: &str, start: usize) -> Result<Token<'_>, LexError> {
    let bytes = text.as_bytes();
    let digits_end = scan(bytes, start, |c| c.is_ascii_digit() || c == b'.');
    let digits = text.get(start..digits_end).unwrap_or_default();
    let suffix_end = if bytes.get(digits_end) == Some(&b'%') {
        digits_end + 1
    } else {
        scan(bytes, digits_end, |c| {
            c.is_ascii_alphanumeric() || c == b'_'
        })
    };
    let suffix = text.get(digits_end..suffix_end).unwrap_or_default();
    let whole = text.get(start..suffix_end).unwrap_or_default();
    let well_formed = digits.chars().filter(|&c| c == '.').count() <= 1
        && digits.chars().any(|c| c.is_ascii_digit());
    if !well_formed {
        return Err(LexError {
            start,
            expected: "a number such as 0.9 or 500".into(),
            found: quote(whole),
        });
    }
    let Some(unit) = LiteralUnit::parse(suffix) else {
        return Err(LexError {
            start: digits_end,
            expected: "a unit (ms, s, m, h or %) or nothing after the number".into(),
            found: quote(suffix),
        });
    };
    let Some(value) = unit.value(digits) else {
        return Err(LexError {
            start,
            expected: "a number of reasonable size".into(),
            found: quote(whole),
        });
    };
    Ok(Token {
        kind: TokenKind::Number(value, unit),
        start,
        end: suffix_end,
    })
}

fn lex_text(text: &str, start: usize) -> Result<Token<'_>, LexError> {
    let mut out = String::new();
    let mut chars = text.get(start + 1..).unwrap_or_default().char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                return Ok(Token {
                    kind: TokenKind::Text(out),
                    start,
                    end: start + 1 + i + 1,
                });
            }
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some((j, other)) => {
                    return Err(LexError {
                        start: start + 1 + j,
                        expected: "\\\" or \\\\ after a backslash".into(),
                        found: quote(&other.to_string()),
                    });
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(LexError {
        start: text.len(),
        expected: "a closing \" for the text started at column ".to_owned()
            + &column(text, start).to_string(),
        found: "the end of the expression".into(),
    })
}

/// 1-based character column of byte offset `offset`.
pub(crate) fn column(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    text.get(..offset).unwrap_or_default().chars().count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind<'_>> {
        tokenize(text)
            .expect("tokens")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn numbers_carry_units() {
        assert_eq!(
            kinds("500ms 2s 1m 90% 0.4"),
            vec![
                TokenKind::Number(0.5, LiteralUnit::Millis),
                TokenKind::Number(2.0, LiteralUnit::Seconds),
                TokenKind::Number(60.0, LiteralUnit::Minutes),
                TokenKind::Number(0.9, LiteralUnit::Percent),
                TokenKind::Number(0.4, LiteralUnit::None),
                TokenKind::End,
            ]
        );
    }

    #[test]
    fn a_percent_ends_the_number() {
        assert_eq!(
            kinds("90%and"),
            vec![
                TokenKind::Number(0.9, LiteralUnit::Percent),
                TokenKind::Ident("and"),
                TokenKind::End,
            ]
        );
    }

    #[test]
    fn operators_and_names() {
        assert_eq!(
            kinds("cache.block_size>=16 and log ~ \"a \\\"b\\\"\""),
            vec![
                TokenKind::Ident("cache.block_size"),
                TokenKind::Op(Op::Ge),
                TokenKind::Number(16.0, LiteralUnit::None),
                TokenKind::Ident("and"),
                TokenKind::Ident("log"),
                TokenKind::Op(Op::Match),
                TokenKind::Text("a \"b\"".into()),
                TokenKind::End,
            ]
        );
    }

    #[test]
    fn errors_point_at_the_offending_text() {
        let err = tokenize("waiting > 5mb").expect_err("bad unit");
        assert_eq!((err.start, err.found.as_str()), (11, "\"mb\""));
        let err = tokenize("a = 1").expect_err("single =");
        assert_eq!(err.start, 2);
        let err = tokenize("log ~ \"open").expect_err("unterminated");
        assert_eq!(err.start, 11);
        let err = tokenize("1.2.3").expect_err("two dots");
        assert_eq!(err.found, "\"1.2.3\"");
        let err = tokenize("kv_usage > 0.9 ; x").expect_err("stray");
        assert_eq!(err.start, 15);
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(column("abc", 0), 1);
        assert_eq!(column("é > 1", 3), 3);
        assert_eq!(column("abc", 99), 4);
    }
}
