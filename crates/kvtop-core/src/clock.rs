//! The one place that reads the wall clock. Pure code receives `now` from here.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch: the one time type of the pure code.
pub type Ts = f64;

/// Seconds since the Unix epoch, as the fleet model counts time.
pub fn unix_now() -> Ts {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The UTC calendar time of a Unix time, to the second. A time that is not finite, before 1970
/// or beyond the calendar's range reads as the epoch.
pub fn utc_datetime(at: Ts) -> DateTime {
    let stamp = if at.is_finite() && at > 0.0 {
        Timestamp::from_second(at.floor() as i64).unwrap_or(Timestamp::UNIX_EPOCH)
    } else {
        Timestamp::UNIX_EPOCH
    };
    stamp.to_zoned(TimeZone::UTC).datetime()
}

/// Unix seconds of an RFC 3339 time (`2026-11-26T03:12:00Z`, `…+01:00`).
pub fn parse_utc(text: &str) -> Result<Ts, String> {
    let stamp: Timestamp = text
        .trim()
        .parse()
        .map_err(|e: jiff::Error| e.to_string())?;
    Ok(stamp.as_millisecond() as f64 / 1000.0)
}

/// A Unix time as `2026-11-21 12:30:59Z`.
pub fn utc(at: Ts) -> String {
    utc_datetime(at).strftime("%Y-%m-%d %H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(at: Ts) -> (i16, i8, i8, i8, i8, i8) {
        let d = utc_datetime(at);
        (
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minute(),
            d.second(),
        )
    }

    #[test]
    fn rfc3339_times_parse_to_unix_seconds() {
        assert_eq!(parse_utc("2024-08-12T10:15:32Z"), Ok(1_723_457_732.0));
        assert_eq!(
            parse_utc("2024-08-12T12:15:32.5+02:00"),
            Ok(1_723_457_732.5)
        );
        assert!(parse_utc("03:12").is_err());
    }

    #[test]
    fn unix_times_become_utc_calendar_times() {
        // 2024-08-12 10:15:32 UTC.
        assert_eq!(parts(1_723_457_732.4), (2024, 8, 12, 10, 15, 32));
        // 2000-02-29 23:59:59 UTC (a leap day).
        assert_eq!(parts(951_868_799.0), (2000, 2, 29, 23, 59, 59));
        assert_eq!(parts(f64::NAN), (1970, 1, 1, 0, 0, 0));
        assert_eq!(parts(-5.0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(parts(1e300), (1970, 1, 1, 0, 0, 0));
        // 2023-12-31 23:59:59 and the next second.
        assert_eq!(parts(1_704_067_199.0), (2023, 12, 31, 23, 59, 59));
        assert_eq!(parts(1_704_067_200.0), (2024, 1, 1, 0, 0, 0));
        assert_eq!(utc(1_723_457_732.4), "2024-08-12 10:15:32Z");
    }
}
