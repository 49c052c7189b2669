//! Number parsing for sample values, `le` bounds and timestamps.
//!
//! Exporters write most values as short decimals (`300.0`, `0.7415504997598329`, `4.108603e+06`).
//! Those take an exact fast path: the decimal digits form an integer mantissa below 2^53 and the
//! power of ten is at most 10^22, so both are exact `f64`s and one IEEE multiplication or division
//! rounds correctly (Clinger's fast path). Everything else goes through `str::parse::<f64>`.

use super::scan::token_end;

/// Largest mantissa that converts to `f64` exactly.
const MAX_EXACT_MANTISSA: u64 = 1 << 53;

/// Powers of ten that are exact in `f64`.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parse a sample value as Prometheus does: decimal or scientific notation, `NaN`, `+Inf`, `-Inf`
/// and `Inf` in any letter case. `None` when the text is not a number.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    match simple_decimal_prefix(text.as_bytes(), 0) {
        Some((value, end)) if end == text.len() => Some(value),
        _ => parse_special(text).or_else(|| text.parse::<f64>().ok()),
    }
}

/// Parse the value token that starts at `start` in `input` (it ends at a blank, a newline or
/// the end). Returns the value and the token's end, or `None` when the token is not a number.
pub(crate) fn parse_value_token(input: &str, start: usize) -> Option<(f64, usize)> {
    let bytes = input.as_bytes();
    if let Some((value, end)) = simple_decimal_prefix(bytes, start) {
        if matches!(bytes.get(end), None | Some(b' ' | b'\t' | b'\r' | b'\n')) {
            return Some((value, end));
        }
    }
    let end = token_end(bytes, start);
    Some((parse_f64(input.get(start..end)?)?, end))
}

/// `NaN` / `Inf` spellings, case-insensitive. Rust's parser accepts these too, but also
/// `infinity`, which Prometheus accepts as well; keeping it explicit documents the contract.
fn parse_special(text: &str) -> Option<f64> {
    let (negative, word) = match text.as_bytes().first() {
        Some(b'+') => (false, text.get(1..)?),
        Some(b'-') => (true, text.get(1..)?),
        _ => (false, text),
    };
    if word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("infinity") {
        Some(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    } else if word.eq_ignore_ascii_case("nan") {
        Some(f64::NAN)
    } else {
        None
    }
}

/// The exact fast path for a number `[+-]digits[.digits][(e|E)[+-]digits]` at the start of
/// `bytes[start..]`: its value and the index just after it. `None` when there is no such
/// number or it does not fit the exact range; callers then fall back to the full parser.
fn simple_decimal_prefix(bytes: &[u8], start: usize) -> Option<(f64, usize)> {
    let (negative, mut i) = match bytes.get(start) {
        Some(b'-') => (true, start + 1),
        Some(b'+') => (false, start + 1),
        _ => (false, start),
    };
    let mut mantissa: u64 = 0;
    let mut exponent: i32 = 0;

    let int_start = i;
    while let Some(&c) = bytes.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        i += 1;
    }
    let mut any_digit = i > int_start;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        let frac_start = i;
        while let Some(&c) = bytes.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            exponent -= 1;
            i += 1;
        }
        any_digit |= i > frac_start;
    }
    if !any_digit {
        return None;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        i += 1;
        let exp_negative = match bytes.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let exp_start = i;
        let mut e: i32 = 0;
        while let Some(&c) = bytes.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            e = e.checked_mul(10)?.checked_add(i32::from(c - b'0'))?;
            i += 1;
        }
        if i == exp_start {
            return None;
        }
        exponent = exponent.checked_add(if exp_negative { -e } else { e })?;
    }
    // Trailing zeros of a fraction ("300.000000") carry no information: drop them so the
    // mantissa stays small and the power of ten stays in the exact range.
    while exponent < 0 && mantissa != 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    if mantissa > MAX_EXACT_MANTISSA {
        return None;
    }
    let m = mantissa as f64;
    let value = if exponent >= 0 {
        m * *EXACT_POWERS_OF_TEN.get(usize::try_from(exponent).ok()?)?
    } else {
        m / *EXACT_POWERS_OF_TEN.get(usize::try_from(-exponent).ok()?)?
    };
    Some((if negative { -value } else { value }, i))
}

/// Parse an integer millisecond timestamp (`-?digits`).
pub(crate) fn parse_timestamp_ms(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

/// `v` as an integer, when it is one that is exact in an `f64`, below 2^53 either way
/// (`-0.0` gives 0).
pub(crate) fn as_int(v: f64) -> Option<i64> {
    let n = v as i64;
    (n as f64 == v && v.abs() < MAX_EXACT_MANTISSA as f64).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_matches_std_parser() {
        for text in [
            "0",
            "0.0",
            "300.0",
            "8.969000",
            "0.000008",
            "11395.0",
            "-1.5",
            "+2.25",
            "0.7415504997598329",
            "0.9656968490207513",
            "4.108603e+06",
            "1.7952600588488026e+09",
            "6.634254336e+09",
            "1.048576e+06",
            "10.950000000000001",
            "0.09999999999999999",
            "1e22",
            "1e-22",
            ".5",
            "5.",
            "123456789012345678",
            "9007199254740993",
            "1.7976931348623157e308",
            "5e-324",
            "2.2250738585072014e-308",
        ] {
            let expected: f64 = text.parse().unwrap();
            assert_eq!(parse_f64(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn special_values_in_any_case() {
        for text in ["+Inf", "Inf", "inf", "+inf", "INF", "Infinity"] {
            assert_eq!(parse_f64(text), Some(f64::INFINITY), "{text}");
        }
        for text in ["-Inf", "-inf", "-INF"] {
            assert_eq!(parse_f64(text), Some(f64::NEG_INFINITY), "{text}");
        }
        for text in ["NaN", "nan", "NAN"] {
            assert!(parse_f64(text).is_some_and(f64::is_nan), "{text}");
        }
    }

    #[test]
    fn rejects_non_numbers() {
        for text in [
            "", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "12a", "0x10", "--1", "In f", "...",
        ] {
            assert_eq!(parse_f64(text), None, "{text}");
        }
    }

    #[test]
    fn value_tokens_end_at_blanks_and_newlines() {
        assert_eq!(parse_value_token("m 14.0 123", 2), Some((14.0, 6)));
        assert_eq!(parse_value_token("m 14.0\nx", 2), Some((14.0, 6)));
        assert_eq!(parse_value_token("m 14.0\r\n", 2), Some((14.0, 6)));
        assert_eq!(parse_value_token("m +Inf", 2), Some((f64::INFINITY, 6)));
        assert_eq!(
            parse_value_token("m 1.7952600588488026e+09 x", 2),
            Some((1.7952600588488026e+09, 24))
        );
        assert_eq!(parse_value_token("m 1.5x", 2), None);
        assert_eq!(parse_value_token("m 1e", 2), None);
        assert_eq!(parse_value_token("m", 5), None);
    }

    #[test]
    fn timestamps_are_integers() {
        assert_eq!(parse_timestamp_ms("1718140558300"), Some(1_718_140_558_300));
        assert_eq!(parse_timestamp_ms("-5"), Some(-5));
        assert_eq!(parse_timestamp_ms("+5"), None);
        assert_eq!(parse_timestamp_ms("1.5"), None);
        assert_eq!(parse_timestamp_ms("99999999999999999999"), None);
        assert_eq!(parse_timestamp_ms("-"), None);
    }
}
