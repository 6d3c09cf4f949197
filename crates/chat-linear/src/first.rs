//! The first-activity gate: Linear shows an agent as unresponsive unless a
//! session gets an activity within 10 s of `created`. The adapter sends a
//! "thinking" thought right after the acknowledgement unless the session
//! already has an activity; this gate keeps the two from crossing:
//!
//! * every activity the adapter sends records its session as *settled* first,
//!   and waits while the automatic thought of that session is in flight, so it
//!   lands after the thought;
//! * the automatic thought claims its session only if it is not settled yet.
//!
//! So a session gets the thought first or not at all. The settled set is
//! bounded (oldest forgotten first); forgetting a session only matters if its
//! `created` event is acknowledged after that many other sessions had
//! activities.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

/// How many settled sessions are remembered.
const SETTLED_CAPACITY: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct FirstActivity {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    settled: HashSet<String>,
    order: VecDeque<String>,
    in_flight: HashMap<String, watch::Receiver<()>>,
}

impl Inner {
    fn settle(&mut self, session: &str) {
        if self.settled.insert(session.to_owned()) {
            self.order.push_back(session.to_owned());
            while self.order.len() > SETTLED_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.settled.remove(&old);
                }
            }
        }
    }
}

/// The automatic thought's hold on its session; released when dropped.
pub(crate) struct Claim<'a> {
    gate: &'a FirstActivity,
    session: String,
    _done: watch::Sender<()>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.gate.lock().in_flight.remove(&self.session);
        // `_done` drops after this: every waiter wakes.
    }
}

impl FirstActivity {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Called before an activity is sent in `session`.
    pub(crate) async fn before_activity(&self, session: &str) {
        let waiting = {
            let mut inner = self.lock();
            inner.settle(session);
            inner.in_flight.get(session).cloned()
        };
        if let Some(mut done) = waiting {
            // Resolves when the claim's sender is dropped.
            let _ = done.changed().await;
        }
    }

    /// Claims `session` for the automatic thought; `None` when the session
    /// already had an activity.
    pub(crate) fn claim(&self, session: &str) -> Option<Claim<'_>> {
        let mut inner = self.lock();
        if inner.settled.contains(session) {
            return None;
        }
        inner.settle(session);
        let (tx, rx) = watch::channel(());
        inner.in_flight.insert(session.to_owned(), rx);
        Some(Claim {
            gate: self,
            session: session.to_owned(),
            _done: tx,
        })
    }

    /// Whether `session` is remembered as having an activity.
    #[cfg(test)]
    pub(crate) fn is_settled(&self, session: &str) -> bool {
        self.lock().settled.contains(session)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_settled_session_is_not_claimed() {
        let gate = FirstActivity::default();
        gate.before_activity("s1").await;
        assert!(gate.claim("s1").is_none());
        assert!(gate.claim("s2").is_some());
        assert!(gate.claim("s2").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn an_activity_waits_for_the_thought_in_flight() {
        let gate = Arc::new(FirstActivity::default());
        let claim = gate.claim("s1");
        assert!(claim.is_some());
        let waiter = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.before_activity("s1").await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(claim);
        let woken = tokio::time::timeout(Duration::from_secs(1), waiter).await;
        assert!(matches!(woken, Ok(Ok(()))), "not woken: {woken:?}");
    }

    #[test]
    fn the_settled_set_is_bounded() {
        let gate = FirstActivity::default();
        for i in 0..SETTLED_CAPACITY + 10 {
            gate.lock().settle(&format!("s{i}"));
        }
        assert!(!gate.is_settled("s0"));
        assert!(gate.is_settled(&format!("s{}", SETTLED_CAPACITY + 9)));
        assert_eq!(gate.lock().settled.len(), SETTLED_CAPACITY);
    }
}
