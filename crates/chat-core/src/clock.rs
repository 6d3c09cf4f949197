//! [`Clock`]: where adapters and install flows read the wall-clock time —
//! signature windows, `received_at_ms`, token expiry, rate-limit reset times.
//! One trait for every crate, so one injected clock drives them all in a test.
//!
//! The runtime's own timing (leases, budgets, debounce) is `tokio::time`,
//! which tests pause; this is the wall clock platforms' timestamps are
//! compared with.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time. Tests inject a fixed clock; any
/// `Fn() -> SystemTime` is a clock.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use chat_core::Clock;
///
/// let fixed = || UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
/// assert_eq!(fixed.now(), UNIX_EPOCH + Duration::from_millis(1_700_000_000_000));
/// assert_eq!(fixed.now_ms(), 1_700_000_000_000);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// The current time in milliseconds since the Unix epoch (0 before it).
    fn now_ms(&self) -> u64 {
        millis(self.now())
    }
}

impl<F> Clock for F
where
    F: Fn() -> SystemTime + Send + Sync + 'static,
{
    fn now(&self) -> SystemTime {
        self()
    }
}

/// The system's wall clock (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// `t` in milliseconds since the Unix epoch: 0 before it, saturating far
/// after it.
pub fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn milliseconds_saturate_at_both_ends() {
        assert_eq!(millis(UNIX_EPOCH - Duration::from_secs(1)), 0);
        assert_eq!(millis(UNIX_EPOCH + Duration::from_millis(1_500)), 1_500);
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
    }
}
