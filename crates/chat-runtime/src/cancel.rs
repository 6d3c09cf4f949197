//! Cancellation with a cause: a `CancellationToken` paired with the reason set
//! before it fires, so a handler learns *why* it should stop.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Why a handler's context was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelCause {
    /// The lease was lost (renewal answered lost, or the backend failed until the
    /// lease expired, or the max lock lifetime passed). Someone else may own the
    /// scope now: stop.
    Preempted,
    /// The budget ([`DispatchOptions::detach_timeout`](crate::DispatchOptions::detach_timeout)) ran out.
    DeadlineExceeded,
    /// The runtime is shutting down.
    Shutdown,
    /// The user asked the agent to stop (Linear `signal: stop`).
    StopRequested,
}

/// A cancellation token with a cause; the first cause set wins.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cancel {
    token: CancellationToken,
    cause: Arc<OnceLock<CancelCause>>,
}

impl Cancel {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn cancel(&self, cause: CancelCause) {
        let _ = self.cause.set(cause);
        self.token.cancel();
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub(crate) fn cause(&self) -> Option<CancelCause> {
        self.cause.get().copied()
    }

    /// Whether both are the same run's cancellation.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cause, &other.cause)
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}
