//! A log line at most once per interval, with a count of what it stood for:
//! a flood of unsigned requests must not become a flood of log lines.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How often a throttled line may be written.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(crate) struct Throttle {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    /// `Some(n)` when a line may be written now, `n` being how many were held
    /// back since the last one; `None` (counted) otherwise.
    pub(crate) fn admit(&self) -> Option<u64> {
        let now = Instant::now();
        let mut s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if s.next.is_some_and(|next| now < next) {
            s.suppressed += 1;
            return None;
        }
        s.next = Some(now + LOG_INTERVAL);
        Some(std::mem::take(&mut s.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_line_per_interval_carries_the_count_it_held_back() {
        let t = Throttle::default();
        assert_eq!(t.admit(), Some(0));
        for _ in 0..99 {
            assert_eq!(t.admit(), None);
        }
        tokio::time::advance(LOG_INTERVAL).await;
        assert_eq!(t.admit(), Some(99));
        assert_eq!(t.admit(), None);
    }
}
