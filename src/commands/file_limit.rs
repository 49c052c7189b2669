//! The open-file limit: a large simulated fleet (one listener per endpoint) or a console scraping
//! many targets (one socket per target) needs more descriptors than the usual soft limit of 1,024.

/// What raising the soft open-file limit achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileLimit {
    /// The soft limit already covered the need (or was raised to cover it); holds the limit.
    Enough(u64),
    /// Even the hard limit is below the need; the soft limit was raised to it.
    TooLow { hard: u64 },
}

/// Raise this process's soft `RLIMIT_NOFILE` to its hard limit when the soft limit is below
/// `needed`. Returns what the limit now is; `None` when the limit cannot be read or set (the
/// caller then proceeds and reports the failure to open descriptors where it happens).
pub(crate) fn raise_open_file_limit(needed: u64) -> Option<FileLimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    // `rlim_t` is u64 on 64-bit Linux but not on every target.
    #[allow(clippy::useless_conversion)]
    let (soft, hard) = (u64::from(limit.rlim_cur), u64::from(limit.rlim_max));
    if soft >= needed {
        return Some(FileLimit::Enough(soft));
    }
    if hard > soft {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit only reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return None;
        }
    }
    Some(if hard >= needed {
        FileLimit::Enough(hard)
    } else {
        FileLimit::TooLow { hard }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_below_the_current_limit_changes_nothing() {
        assert!(matches!(
            raise_open_file_limit(1),
            Some(FileLimit::Enough(n)) if n >= 1
        ));
    }

    #[test]
    fn an_impossible_need_reports_the_hard_limit() {
        // No system allows u64::MAX descriptors (RLIM_INFINITY is not a usable file count).
        match raise_open_file_limit(u64::MAX) {
            Some(FileLimit::TooLow { hard }) => assert!(hard < u64::MAX),
            Some(FileLimit::Enough(_)) => panic!("u64::MAX descriptors cannot be enough"),
            None => {} // the limit cannot be read in this sandbox: nothing to check
        }
    }
}
