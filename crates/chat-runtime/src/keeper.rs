//! The lease keeper: renews a lease every TTL/3 while its holder works, up to the
//! max lock lifetime, and says when the lease is lost or a stop was requested.

use std::sync::Arc;
use std::time::Duration;

use chat_core::{Lease, Renewal, StateBackend};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) struct Keeper {
    stop: CancellationToken,
    lost: CancellationToken,
    stop_requested: CancellationToken,
    handle: JoinHandle<()>,
}

pub(crate) struct KeeperConfig {
    pub(crate) ttl: Duration,
    /// Renewal stops this long after the keeper starts; the lease then lapses at
    /// its TTL and counts as lost.
    pub(crate) max_lifetime: Duration,
}

impl Keeper {
    /// Starts renewing `lease`, which the caller just got or extended by its TTL.
    pub(crate) fn spawn(
        state: Arc<dyn StateBackend>,
        lease: Lease,
        config: &KeeperConfig,
        abandon: CancellationToken,
    ) -> Self {
        let stop = CancellationToken::new();
        let lost = CancellationToken::new();
        let stop_requested = CancellationToken::new();
        let task = renew_loop(
            state,
            lease,
            config.ttl,
            config.max_lifetime,
            stop.clone(),
            abandon,
            lost.clone(),
            stop_requested.clone(),
        );
        Self {
            stop,
            lost,
            stop_requested,
            handle: tokio::spawn(task),
        }
    }

    /// Fires when the lease is lost.
    pub(crate) fn lost(&self) -> &CancellationToken {
        &self.lost
    }

    /// Fires when a renewal reported a stop request.
    pub(crate) fn stop_requested(&self) -> &CancellationToken {
        &self.stop_requested
    }

    /// Stops renewing and waits for the renewal task to end. Returns whether the
    /// lease was lost while it ran.
    pub(crate) async fn stop(self) -> bool {
        self.stop.cancel();
        let _ = self.handle.await;
        self.lost.is_cancelled()
    }
}

#[allow(clippy::too_many_arguments)]
async fn renew_loop(
    state: Arc<dyn StateBackend>,
    lease: Lease,
    ttl: Duration,
    max_lifetime: Duration,
    stop: CancellationToken,
    abandon: CancellationToken,
    lost: CancellationToken,
    stop_requested: CancellationToken,
) {
    let started = Instant::now();
    let give_up_at = started + max_lifetime;
    // What this process can be sure of: the lease lives at least until here.
    let mut believed_expiry = started + ttl;
    let period = (ttl / 3).max(Duration::from_millis(1));
    loop {
        let next = (Instant::now() + period).min(believed_expiry);
        tokio::select! {
            () = stop.cancelled() => return,
            () = abandon.cancelled() => return,
            () = tokio::time::sleep_until(next) => {}
        }
        let now = Instant::now();
        if now >= believed_expiry {
            lost.cancel();
            return;
        }
        if now >= give_up_at {
            // Max lock lifetime: stop renewing and let the lease lapse.
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(believed_expiry) => {
                    lost.cancel();
                    return;
                }
            }
        }
        let sent = Instant::now();
        let answer = tokio::select! {
            () = stop.cancelled() => return,
            r = state.renew(&lease, ttl) => r,
        };
        match answer {
            Ok(Renewal::Renewed { cancel_requested }) => {
                believed_expiry = sent + ttl;
                if cancel_requested {
                    stop_requested.cancel();
                }
            }
            Ok(_) => {
                lost.cancel();
                return;
            }
            Err(e) => {
                // Keep trying until the lease has surely expired.
                tracing::warn!(error = %e, scope = %lease.scope(), "lease renewal failed");
            }
        }
    }
}
