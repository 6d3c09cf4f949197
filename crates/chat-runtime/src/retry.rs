//! Repeating state calls whose outcome is unknown.
//!
//! A call that timed out or lost its connection may have run: an error says
//! nothing about it. Every state call is safe to repeat with the same identity
//! (the [`StateBackend`](chat_core::StateBackend) contract), so the runtime
//! repeats it until it gets an answer or a bound passes, and only then decides.

use std::future::Future;
use std::time::Duration;

use chat_core::StateError;
use tokio::time::Instant;

/// Whether the call may have run although it failed: anything but a request the
/// backend refused before running it.
pub(crate) fn outcome_unknown(e: &StateError) -> bool {
    !matches!(e, StateError::InvalidRequest(_))
}

/// Calls `call` until it answers, repeating it after an error that leaves its
/// outcome unknown, with backoff, as long as the next attempt would start before
/// `until`. Returns the answer and when the answering attempt was sent, or the
/// last error.
pub(crate) async fn repeat<T, F, Fut>(
    what: &'static str,
    until: Instant,
    mut call: F,
) -> Result<(T, Instant), StateError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StateError>>,
{
    let mut backoff = Duration::from_millis(50);
    loop {
        let sent = Instant::now();
        match call().await {
            Ok(v) => return Ok((v, sent)),
            Err(e) if outcome_unknown(&e) && Instant::now() + backoff < until => {
                tracing::warn!(error = %e, call = what, "state call failed; repeating it");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn repeats_until_an_answer() {
        let calls = AtomicU32::new(0);
        let until = Instant::now() + Duration::from_secs(5);
        let r = repeat("test", until, || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 3 {
                Err(StateError::Timeout(Duration::from_secs(1)))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(r.map(|(v, _)| v).ok(), Some(7));
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_at_the_bound_and_never_repeats_a_refused_request() {
        let until = Instant::now() + Duration::from_secs(2);
        let started = Instant::now();
        let r: Result<((), Instant), _> = repeat("test", until, || async {
            Err(StateError::Timeout(Duration::from_secs(1)))
        })
        .await;
        assert!(matches!(r, Err(StateError::Timeout(_))));
        assert!(Instant::now() <= started + Duration::from_secs(2));
        let calls = AtomicU32::new(0);
        let r: Result<((), Instant), _> = repeat("test", until, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StateError::InvalidRequest("no"))
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
