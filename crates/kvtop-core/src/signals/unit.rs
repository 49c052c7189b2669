//! Units of signals and of literals in rule expressions, and how values are shown.

use std::fmt;

/// The unit a signal is measured in. Latencies are in seconds and shares in 0..1, whatever the
/// literal they are compared with says (`500ms` is 0.5, `90%` is 0.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Seconds (latencies, durations).
    Seconds,
    /// A share in 0..1 (KV usage, hit ratios, GPU utilization).
    Ratio,
    /// A number of requests, engines, restarts.
    Count,
    /// Events per second (preemptions, finished requests).
    PerSecond,
    /// Tokens per second.
    TokensPerSecond,
    /// Tokens.
    Tokens,
    /// CPU cores in use (1 = one core fully busy).
    Cores,
    /// Degrees Celsius.
    Celsius,
    /// Watts.
    Watts,
    /// 1 (true) or 0 (false).
    Flag,
    /// An error code (GPU XID; 0 = none).
    Code,
    /// A plain number without a fixed unit (configuration values).
    Number,
}

impl Unit {
    /// Short name for listings (`kvtop rules list --explain`).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Ratio => "ratio 0..1",
            Unit::Count => "count",
            Unit::PerSecond => "per second",
            Unit::TokensPerSecond => "tokens/s",
            Unit::Tokens => "tokens",
            Unit::Cores => "cores",
            Unit::Celsius => "°C",
            Unit::Watts => "W",
            Unit::Flag => "1/0",
            Unit::Code => "code",
            Unit::Number => "number",
        }
    }

    /// What a literal needs to look like to be compared with a value in this unit, if the unit
    /// restricts it (a time for seconds, a percentage or a plain number for ratios).
    pub(crate) fn dimension(self) -> Dimension {
        match self {
            Unit::Seconds => Dimension::Time,
            Unit::Ratio => Dimension::Ratio,
            _ => Dimension::Plain,
        }
    }

    /// A value in this unit for people: `512ms`, `1.25s`, `91.0%`, `12`, `1.5k tok/s`, `1/0`.
    pub fn format(self, value: f64) -> String {
        Shown(self, value).to_string()
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value with its unit, displayed for people (see [`Unit::format`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub Unit, pub f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Shown(unit, v) = *self;
        // An endpoint's NaN or infinity is no value; one too large to print whole (1e308
        // would take 300 digits) is printed in scientific notation.
        let scaled = match unit {
            Unit::Seconds if v.abs() < 1.0 => v * 1000.0,
            Unit::Ratio => v * 100.0,
            _ => v,
        };
        if !scaled.is_finite() {
            return f.write_str(crate::format::UNKNOWN);
        }
        if scaled.abs() >= HUGE {
            return write!(f, "{scaled:.3e}{}", suffix(unit));
        }
        match unit {
            Unit::Seconds if v.abs() < 1.0 => write!(f, "{}ms", trim(v * 1000.0, 1)),
            Unit::Seconds => write!(f, "{}s", trim(v, 2)),
            Unit::Ratio => write!(f, "{}%", trim(v * 100.0, 1)),
            Unit::TokensPerSecond => write!(f, "{} tok/s", trim(v, 1)),
            Unit::PerSecond => write!(f, "{}/s", trim(v, 3)),
            Unit::Cores => write!(f, "{} cores", trim(v, 2)),
            Unit::Celsius => write!(f, "{}°C", trim(v, 0)),
            Unit::Watts => write!(f, "{} W", trim(v, 0)),
            Unit::Count | Unit::Tokens | Unit::Flag | Unit::Code | Unit::Number => {
                write!(f, "{}", trim(v, 3))
            }
        }
    }
}

/// Magnitude from which a value is printed in scientific notation.
const HUGE: f64 = 1e15;

/// What follows a value of `unit` in scientific notation.
fn suffix(unit: Unit) -> &'static str {
    match unit {
        Unit::Seconds => "s",
        Unit::Ratio => "%",
        Unit::TokensPerSecond => " tok/s",
        Unit::PerSecond => "/s",
        Unit::Cores => " cores",
        Unit::Celsius => "°C",
        Unit::Watts => " W",
        Unit::Count | Unit::Tokens | Unit::Flag | Unit::Code | Unit::Number => "",
    }
}

/// `v` with at most `decimals` decimals and no trailing zeros (`1.50` → `1.5`, `2.00` → `2`).
fn trim(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    if text == "-0" { "0".to_owned() } else { text }
}

/// What kind of quantity an operand is, for checking comparisons such as `kv_usage > 500ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dimension {
    /// Seconds: signals in seconds and literals with `ms`, `s`, `m`, `h`.
    Time,
    /// A share: ratio signals and `%` literals.
    Ratio,
    /// Anything else: counts, rates, tokens, configuration values.
    Plain,
    /// A plain number literal, or arithmetic that mixes units: fits every dimension.
    Any,
}

impl Dimension {
    /// The dimension of `a op b` for `+`/`-` (same dimension, or `Any` absorbed).
    pub(crate) fn join(self, other: Dimension) -> Option<Dimension> {
        match (self, other) {
            (Dimension::Any, d) | (d, Dimension::Any) => Some(d),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }

    /// Wording for error messages: "expected {a time such as 500ms}".
    pub(crate) fn example(self) -> &'static str {
        match self {
            Dimension::Time => "a time such as 500ms or 2s",
            Dimension::Ratio => "a ratio such as 90% or 0.9",
            Dimension::Plain => "a plain number such as 50",
            Dimension::Any => "a number",
        }
    }

    /// Wording for error messages: "found {a time}".
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Dimension::Time => "a time",
            Dimension::Ratio => "a percentage",
            Dimension::Plain => "a plain value",
            Dimension::Any => "a number",
        }
    }
}

/// The suffix of a number literal in an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LiteralUnit {
    None,
    Millis,
    Seconds,
    Minutes,
    Hours,
    Percent,
}

impl LiteralUnit {
    /// The suffix as written, if it is one of the known ones.
    pub(crate) fn parse(suffix: &str) -> Option<LiteralUnit> {
        Some(match suffix {
            "" => LiteralUnit::None,
            "ms" => LiteralUnit::Millis,
            "s" => LiteralUnit::Seconds,
            "m" => LiteralUnit::Minutes,
            "h" => LiteralUnit::Hours,
            "%" => LiteralUnit::Percent,
            _ => return None,
        })
    }

    pub(crate) fn dimension(self) -> Dimension {
        match self {
            LiteralUnit::None => Dimension::Any,
            LiteralUnit::Percent => Dimension::Ratio,
            _ => Dimension::Time,
        }
    }

    /// The value of `digits` (`"79.2"`) in this unit, in base units (seconds, 0..1).
    ///
    /// Milliseconds and percentages move the decimal point in the text before converting, so
    /// `79.2%` is exactly the double nearest 0.792, the same as writing `0.792`.
    pub(crate) fn value(self, digits: &str) -> Option<f64> {
        let value = match self {
            LiteralUnit::None | LiteralUnit::Seconds => digits.parse::<f64>().ok()?,
            LiteralUnit::Millis => shift_left(digits, 3).parse::<f64>().ok()?,
            LiteralUnit::Percent => shift_left(digits, 2).parse::<f64>().ok()?,
            LiteralUnit::Minutes => digits.parse::<f64>().ok()? * 60.0,
            LiteralUnit::Hours => digits.parse::<f64>().ok()? * 3600.0,
        };
        value.is_finite().then_some(value)
    }
}

/// Divide the decimal number in `digits` (digits with at most one `.`) by 10^`places`, in text.
fn shift_left(digits: &str, places: usize) -> String {
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let padded = format!("{}{int}", "0".repeat(places));
    let split = padded.len() - places;
    let (head, moved) = padded.split_at(split);
    format!("{head}.{moved}{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_values_in_base_units() {
        assert_eq!(LiteralUnit::Millis.value("500"), Some(0.5));
        assert_eq!(LiteralUnit::Millis.value("2.5"), Some(0.0025));
        assert_eq!(LiteralUnit::Percent.value("90"), Some(0.9));
        assert_eq!(LiteralUnit::Percent.value("79.2"), Some(0.792));
        assert_eq!(LiteralUnit::Percent.value("150"), Some(1.5));
        assert_eq!(LiteralUnit::Minutes.value("1"), Some(60.0));
        assert_eq!(LiteralUnit::Hours.value("2"), Some(7200.0));
        assert_eq!(LiteralUnit::Seconds.value("15"), Some(15.0));
        assert_eq!(LiteralUnit::None.value("0.4"), Some(0.4));
    }

    #[test]
    fn values_shown_for_people() {
        assert_eq!(Unit::Seconds.format(0.512), "512ms");
        assert_eq!(Unit::Seconds.format(1.25), "1.25s");
        assert_eq!(Unit::Ratio.format(0.9), "90%");
        assert_eq!(Unit::Ratio.format(0.9126), "91.3%");
        assert_eq!(Unit::Count.format(51.0), "51");
        assert_eq!(Unit::PerSecond.format(1.5), "1.5/s");
        assert_eq!(Unit::TokensPerSecond.format(1234.0), "1234 tok/s");
        assert_eq!(Unit::Flag.format(0.0), "0");
    }

    #[test]
    fn outside_values_are_unknown_or_bounded() {
        assert_eq!(Unit::Ratio.format(1e308), "–");
        assert_eq!(Unit::Ratio.format(f64::NAN), "–");
        assert_eq!(Unit::Seconds.format(f64::INFINITY), "–");
        assert_eq!(Unit::Ratio.format(-0.0), "0%");
        assert_eq!(Unit::Count.format(1e300), "1.000e300");
        assert_eq!(Unit::TokensPerSecond.format(-2e20), "-2.000e20 tok/s");
    }

    #[test]
    fn dimensions_join_for_sums() {
        assert_eq!(Dimension::Any.join(Dimension::Time), Some(Dimension::Time));
        assert_eq!(
            Dimension::Ratio.join(Dimension::Ratio),
            Some(Dimension::Ratio)
        );
        assert_eq!(Dimension::Ratio.join(Dimension::Time), None);
    }
}
