//! The one place that reads the wall clock. Pure code receives `now` from here.

use crate::fleet::Ts;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, as the fleet model counts time.
pub fn unix_now() -> Ts {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
