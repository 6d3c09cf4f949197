//! Where the adapter reads the wall-clock time: the `webhookTimestamp` window,
//! `received_at_ms`, and Linear's rate-limit reset times.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time. Tests inject a fixed clock to check the
/// timestamp window; any `Fn() -> SystemTime` is a clock.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use chat_linear::Clock;
///
/// let fixed = || UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
/// assert_eq!(fixed.now_ms(), 1_700_000_000_000);
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// The current time in milliseconds since the Unix epoch (0 before it).
    fn now_ms(&self) -> u64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
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
