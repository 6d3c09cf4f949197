//! Stop requests.

use super::*;

/// One call to [`Coordination::request_cancel`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CancelRequest {
    /// The thread the control event belongs to.
    pub thread: ThreadRef,
    /// The control event's dedupe key.
    pub dedupe_key: DedupeKey,
    /// How long the dedupe mark lives.
    pub dedupe_ttl: Duration,
    /// The scope whose running turn must stop.
    pub scope: ScopeKey,
    /// The request's identity, kept across repeats: a repeat answers `Recorded`
    /// again instead of `Duplicate`.
    pub id: LeaseToken,
}

impl CancelRequest {
    /// A cancel request for `scope`, deduplicated on `event`'s key (24 h).
    pub fn new(event: &Event, scope: ScopeKey) -> Self {
        Self {
            thread: event.thread.clone(),
            dedupe_key: event.dedupe_key.clone(),
            dedupe_ttl: Duration::from_secs(24 * 60 * 60),
            scope,
            id: LeaseToken::generate(),
        }
    }

    /// Sets the dedupe TTL.
    #[must_use]
    pub fn dedupe_ttl(mut self, ttl: Duration) -> Self {
        self.dedupe_ttl = ttl;
        self
    }
}

/// The answer to [`Coordination::request_cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The control event was seen before.
    Duplicate,
    /// Recorded on the scope's lease (or slots); the holder learns it at its next
    /// renewal. `count` is the lease's count of stop requests after this one (see
    /// [`Renewal::Renewed`]).
    Recorded {
        /// Stop requests recorded on the lease since its batch was handed out.
        count: u32,
    },
    /// No lease is held on the scope: nothing to stop.
    NoHolder,
}
