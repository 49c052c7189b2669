//! PURE. Number and label formatting exactly as the exporters write them.

use std::fmt::Write;

/// Append `v` the way Python's `prometheus_client` writes sample values and `le` bounds
/// (`floatToGoString`): Python's shortest round-trip `repr` ("1.0", "0.001", "1e-05"), with
/// Go-style exponents for positive values of seven or more integer digits ("2.341057e+06"),
/// and "+Inf", "-Inf", "NaN".
pub(crate) fn push_float(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let magnitude = v.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        push_python_exponent(out, v);
        return;
    }
    let start = out.len();
    let _ = write!(out, "{v}");
    let int_digits = match out[start..].find('.') {
        Some(dot) => dot,
        None => out.len() - start,
    };
    if v > 0.0 && int_digits > 6 {
        go_exponent(out, start, int_digits);
    } else if !out[start..].contains('.') {
        out.push_str(".0");
    }
}

/// Rewrite the positional number at `out[start..]` (positive, `int_digits` ≥ 7) as
/// `floatToGoString` does: one leading digit, the remaining digits after a '.', trailing zeros
/// (and a bare '.') stripped, then `e+0` and the number of integer digits minus one.
fn go_exponent(out: &mut String, start: usize, int_digits: usize) {
    let mut digits = [0u8; 40];
    let mut len = 0;
    for b in out.bytes().skip(start).filter(u8::is_ascii_digit) {
        if let Some(slot) = digits.get_mut(len) {
            *slot = b;
            len += 1;
        }
    }
    while len > 1 && digits.get(len - 1) == Some(&b'0') {
        len -= 1;
    }
    out.truncate(start);
    if let Some((first, rest)) = digits.get(..len).and_then(<[u8]>::split_first) {
        out.push(char::from(*first));
        if !rest.is_empty() {
            out.push('.');
            out.extend(rest.iter().map(|b| char::from(*b)));
        }
    }
    let _ = write!(out, "e+0{}", int_digits - 1);
}

/// Python's exponent notation: "1e-05", "1.5e+16".
fn push_python_exponent(out: &mut String, v: f64) {
    let start = out.len();
    let _ = write!(out, "{v:e}");
    let Some(e) = out[start..].find('e').map(|i| start + i) else {
        return;
    };
    let exponent = out[e + 1..].to_owned();
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent.as_str()),
    };
    out.truncate(e + 1);
    out.push(sign);
    if digits.len() < 2 {
        out.push('0');
    }
    out.push_str(digits);
}

/// Append a label value escaped for the text format (`\\`, `\"`, `\n`).
pub(crate) fn push_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut s = String::new();
        push_float(&mut s, v);
        s
    }

    #[test]
    fn values_match_prometheus_client_output() {
        // Expectations taken from prometheus_client output in tests/fixtures.
        assert_eq!(f(0.001), "0.001");
        assert_eq!(f(1.0), "1.0");
        assert_eq!(f(20000.0), "20000.0");
        assert_eq!(f(0.0), "0.0");
        assert_eq!(f(14.0), "14.0");
        assert_eq!(f(0.7415504997598329), "0.7415504997598329");
        assert_eq!(f(2_341_057.0), "2.341057e+06");
        assert_eq!(f(4_108_603.0), "4.108603e+06");
        assert_eq!(f(1_795_260_058.68), "1.79526005868e+09");
        assert_eq!(f(1_795_260_058.848_802_6), "1.7952600588488026e+09");
        assert_eq!(f(1_048_576.0), "1.048576e+06");
        assert_eq!(f(0.09999999999999999), "0.09999999999999999");
        assert_eq!(f(f64::INFINITY), "+Inf");
    }

    #[test]
    fn go_and_python_corner_cases() {
        assert_eq!(f(1_000_000.0), "1e+06");
        assert_eq!(f(10_000_000_000.0), "1e+010"); // floatToGoString's literal "e+0" prefix
        assert_eq!(f(999_999.0), "999999.0");
        assert_eq!(f(0.00001), "1e-05");
        assert_eq!(f(1.5e16), "1.5e+16");
        assert_eq!(f(-2.5), "-2.5");
        assert_eq!(f(-3_000_000.0), "-3000000.0");
        assert_eq!(f(f64::NEG_INFINITY), "-Inf");
        assert_eq!(f(f64::NAN), "NaN");
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = String::new();
        push_label_value(&mut s, "a\"b\\c\nd");
        assert_eq!(s, "a\\\"b\\\\c\\nd");
    }
}
