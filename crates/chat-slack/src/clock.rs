//! Where the adapter reads the time: the signature window and `received_at_ms`.

use std::time::SystemTime;

/// A source of wall-clock time. Tests inject a fixed clock to check the
/// timestamp window; any `Fn() -> SystemTime` is a clock.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use chat_slack::Clock;
///
/// let fixed = || UNIX_EPOCH + Duration::from_secs(1_531_420_618);
/// assert_eq!(fixed.now(), UNIX_EPOCH + Duration::from_secs(1_531_420_618));
/// ```
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
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
