//! Human-readable durations (`250ms`, `1.5s`, `1m30s`) and sizes (`8MiB`, `512KiB`, `1000000`).
//!
//! Decimal fractions are parsed exactly (no floating point), so `0.3s` is 300 ms, not 299.999 ms.

use std::time::Duration;

/// Why a duration or size string was rejected. The `Display` text is meant for the user and
/// already quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{0:?} is not a duration (use e.g. 250ms, 1s, 2m)")]
    NotADuration(String),
    #[error("{0:?} is not a duration: add a unit (ms, s, m, h or d), e.g. \"{0}s\"")]
    MissingDurationUnit(String),
    #[error("{0:?} is too long a duration")]
    DurationTooLong(String),
    #[error("{0:?} is not a size (use e.g. 512KiB, 8MiB, or a number of bytes)")]
    NotASize(String),
    #[error("{0:?} is too large a size")]
    SizeTooLarge(String),
}

const NANOS_PER_MS: u128 = 1_000_000;
const NANOS_PER_S: u128 = 1_000 * NANOS_PER_MS;

/// Parses a duration: one or more `<number><unit>` terms, with units `ms`, `s`, `m`, `h`, `d`
/// and an optional decimal fraction (`250ms`, `1.5s`, `2m`, `1h30m`). Surrounding whitespace is
/// ignored. Zero is accepted here; callers enforce their own minimums.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let not_a_duration = || UnitError::NotADuration(text.to_owned());
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(not_a_duration());
    }
    if matches!(split_number(trimmed), Some((_, ""))) {
        return Err(UnitError::MissingDurationUnit(trimmed.to_owned()));
    }
    let mut rest = trimmed;
    let mut total_nanos: u128 = 0;
    while !rest.is_empty() {
        let (number, after_number) = split_number(rest).ok_or_else(not_a_duration)?;
        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, after_unit) = after_number.split_at(unit_len);
        let unit_nanos = match unit {
            "ms" => NANOS_PER_MS,
            "s" => NANOS_PER_S,
            "m" => 60 * NANOS_PER_S,
            "h" => 3_600 * NANOS_PER_S,
            "d" => 86_400 * NANOS_PER_S,
            _ => return Err(not_a_duration()),
        };
        let term = number
            .scaled(unit_nanos)
            .ok_or_else(|| UnitError::DurationTooLong(text.to_owned()))?;
        total_nanos = total_nanos
            .checked_add(term)
            .ok_or_else(|| UnitError::DurationTooLong(text.to_owned()))?;
        rest = after_unit;
    }
    let nanos =
        u64::try_from(total_nanos).map_err(|_| UnitError::DurationTooLong(text.to_owned()))?;
    Ok(Duration::from_nanos(nanos))
}

/// Parses a size in bytes: a plain number of bytes (`1000000`), or a number with a unit:
/// binary `KiB`, `MiB`, `GiB` (powers of 1024), decimal `kB`/`KB`, `MB`, `GB` (powers of 1000),
/// or `B`. Fractions are allowed (`1.5MiB`) and rounded down to whole bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let not_a_size = || UnitError::NotASize(text.to_owned());
    let trimmed = text.trim();
    let (number, unit) = split_number(trimmed).ok_or_else(not_a_size)?;
    let multiplier: u128 = match unit.trim_start() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(not_a_size()),
    };
    let bytes = number
        .scaled(multiplier)
        .ok_or_else(|| UnitError::SizeTooLarge(text.to_owned()))?;
    u64::try_from(bytes).map_err(|_| UnitError::SizeTooLarge(text.to_owned()))
}

/// Formats a duration the way a user would write it (`250ms`, `1s`, `1.5s`, `1m30s`, `1h`).
/// The output parses back to the same value for whole milliseconds.
pub fn format_duration(duration: Duration) -> String {
    let total_ms = duration.as_millis();
    if total_ms == 0 {
        if duration.is_zero() {
            return "0s".to_owned();
        }
        let fraction = format!("{:06}", duration.as_nanos());
        return format!("0.{}ms", fraction.trim_end_matches('0'));
    }
    if total_ms < 1_000 {
        return format!("{total_ms}ms");
    }
    let (hours, rem) = (total_ms / 3_600_000, total_ms % 3_600_000);
    let (minutes, rem) = (rem / 60_000, rem % 60_000);
    let (seconds, millis) = (rem / 1_000, rem % 1_000);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if millis > 0 {
        let fraction = format!("{millis:03}");
        out.push_str(&format!("{seconds}.{}s", fraction.trim_end_matches('0')));
    } else if seconds > 0 {
        out.push_str(&format!("{seconds}s"));
    }
    out
}

/// Formats a byte count with the largest binary unit that divides it exactly (`8MiB`,
/// `512KiB`, `1000001`), so the output parses back to the same value.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (factor, unit) in UNITS {
        if bytes >= factor && bytes % factor == 0 {
            return format!("{}{unit}", bytes / factor);
        }
    }
    bytes.to_string()
}

/// A non-negative decimal number kept as digits, so scaling by a unit is exact.
struct Decimal<'a> {
    whole: &'a str,
    fraction: &'a str,
}

impl Decimal<'_> {
    /// `self × unit`, rounded down; `None` on overflow.
    fn scaled(&self, unit: u128) -> Option<u128> {
        let whole: u128 = if self.whole.is_empty() {
            0
        } else {
            self.whole.parse().ok()?
        };
        let mut value = whole.checked_mul(unit)?;
        // Beyond 18 digits a fraction cannot change the result for any unit used here (the
        // largest, a day, is under 10^14 ns), and 18 digits keep the product below 2^128.
        let fraction = self.fraction.get(..self.fraction.len().min(18))?;
        if !fraction.is_empty() {
            let numerator: u128 = fraction.parse().ok()?;
            let denominator = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
            value = value.checked_add(numerator.checked_mul(unit)? / denominator)?;
        }
        Some(value)
    }
}

/// Splits a leading decimal number (`12`, `1.5`, `.5`) off `text`; `None` if there is none.
fn split_number(text: &str) -> Option<(Decimal<'_>, &str)> {
    let whole_len = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (whole, rest) = text.split_at(whole_len);
    let (fraction, rest) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let len = after_dot
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after_dot.len());
            after_dot.split_at(len)
        }
        None => ("", rest),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    Some((Decimal { whole, fraction }, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(ms(250)));
        assert_eq!(parse_duration("1s"), Ok(ms(1_000)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1_500)));
        assert_eq!(parse_duration("2m"), Ok(ms(120_000)));
        assert_eq!(parse_duration("1h"), Ok(ms(3_600_000)));
        assert_eq!(parse_duration("1d"), Ok(ms(86_400_000)));
        assert_eq!(parse_duration(" 10s "), Ok(ms(10_000)));
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(parse_duration("1m30s"), Ok(ms(90_000)));
        assert_eq!(parse_duration("1h5m"), Ok(ms(3_900_000)));
        assert_eq!(parse_duration("1s500ms"), Ok(ms(1_500)));
    }

    #[test]
    fn fractions_are_exact() {
        // 0.3 is not representable in binary floating point; 300 ms exactly is expected.
        assert_eq!(parse_duration("0.3s"), Ok(ms(300)));
        assert_eq!(parse_duration(".5s"), Ok(ms(500)));
        assert_eq!(parse_duration("0.1ms"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("1.25m"), Ok(ms(75_000)));
    }

    #[test]
    fn bad_durations_are_rejected_with_the_input_quoted() {
        for bad in [
            "", "5x", "s", ".", "1.s.", "-1s", "1 s", "1sec", "1.2.3s", "ms",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        assert_eq!(
            parse_duration("5x").map_err(|e| e.to_string()),
            Err("\"5x\" is not a duration (use e.g. 250ms, 1s, 2m)".to_owned())
        );
        assert_eq!(
            parse_duration("10"),
            Err(UnitError::MissingDurationUnit("10".into()))
        );
    }

    #[test]
    fn absurd_durations_do_not_overflow() {
        assert_eq!(
            parse_duration("99999999999999999999999999999999999999999d"),
            Err(UnitError::DurationTooLong(
                "99999999999999999999999999999999999999999d".into()
            ))
        );
        assert!(matches!(
            parse_duration("300000d"),
            Err(UnitError::DurationTooLong(_))
        ));
    }

    #[test]
    fn sizes_in_every_unit() {
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert_eq!(parse_size("512KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("8MiB"), Ok(8 * 1024 * 1024));
        assert_eq!(parse_size("1GiB"), Ok(1_073_741_824));
        assert_eq!(parse_size("1.5MiB"), Ok(1_572_864));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("3kB"), Ok(3_000));
        assert_eq!(parse_size("64 KiB"), Ok(65_536));
        assert_eq!(parse_size("10B"), Ok(10));
    }

    #[test]
    fn bad_sizes_are_rejected() {
        for bad in ["", "MiB", "8mib", "8 MiBs", "-1", "1.2.3", "eight"] {
            assert_eq!(
                parse_size(bad),
                Err(UnitError::NotASize(bad.into())),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_size("99999999999999999999GiB"),
            Err(UnitError::SizeTooLarge(_))
        ));
    }

    #[test]
    fn durations_format_as_written() {
        assert_eq!(format_duration(ms(250)), "250ms");
        assert_eq!(format_duration(ms(1_000)), "1s");
        assert_eq!(format_duration(ms(1_500)), "1.5s");
        assert_eq!(format_duration(ms(800)), "800ms");
        assert_eq!(format_duration(ms(120_000)), "2m");
        assert_eq!(format_duration(ms(90_000)), "1m30s");
        assert_eq!(format_duration(ms(3_600_000)), "1h");
        assert_eq!(format_duration(ms(3_601_250)), "1h1.25s");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(Duration::from_micros(250)), "0.25ms");
    }

    #[test]
    fn formatted_durations_parse_back() {
        for millis in [
            1, 250, 999, 1_000, 1_001, 59_999, 61_000, 3_599_999, 7_200_000,
        ] {
            let d = ms(millis);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{millis}");
        }
    }

    #[test]
    fn sizes_format_with_exact_units() {
        assert_eq!(format_size(8 * 1024 * 1024), "8MiB");
        assert_eq!(format_size(512 * 1024), "512KiB");
        assert_eq!(format_size(1_000_000), "1000000");
        assert_eq!(format_size(1 << 30), "1GiB");
        assert_eq!(format_size(0), "0");
    }
}
