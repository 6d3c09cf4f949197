//! The lease keeper: renews a lease every TTL/3 while its holder holds it, and
//! tells the holder when the lease is lost and how many stop requests were
//! recorded on it.
//!
//! The keeper dates the lease from its last *confirmed* grant or renewal: the
//! moment the call that granted or extended it was sent (the backend extended
//! it at some point after that). It believes the lease lives until then plus
//! the TTL, and says it is lost at that instant — also while a renewal is
//! still in flight, so a hung backend never delays `Preempted`.
//!
//! Renewal stops `max_lifetime` after the holder's current batch was handed
//! out; the lease then lapses at its TTL and counts as lost.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chat_core::{Lease, Renewal, StateBackend};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the keeper knows about its lease, shared with the holder and with the
/// thread handle of the run in progress (which refuses to post for a holder
/// that no longer holds the lease).
#[derive(Debug)]
pub(crate) struct LeaseState {
    /// The lease surely lives until here.
    believed_expiry: Mutex<Instant>,
    /// The holder got a new batch (the lease was extended by `finish`): date the
    /// lease from then, and restart the lifetime.
    renewed: Notify,
    lost: CancellationToken,
    cancel_requests: watch::Sender<u32>,
}

impl LeaseState {
    fn new(confirmed_at: Instant, ttl: Duration) -> Self {
        Self {
            believed_expiry: Mutex::new(confirmed_at + ttl),
            renewed: Notify::new(),
            lost: CancellationToken::new(),
            cancel_requests: watch::Sender::new(0),
        }
    }

    fn expiry(&self) -> Instant {
        *self
            .believed_expiry
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn confirm(&self, expiry: Instant) {
        let mut e = self
            .believed_expiry
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *e = (*e).max(expiry);
    }

    /// Whether the holder may still act as the lease's holder now.
    pub(crate) fn held(&self) -> bool {
        !self.lost.is_cancelled() && Instant::now() < self.expiry()
    }

    /// Fires when the lease is lost.
    pub(crate) fn lost(&self) -> &CancellationToken {
        &self.lost
    }

    /// The stop requests recorded on the lease since its batch was handed out.
    pub(crate) fn cancel_requests(&self) -> watch::Receiver<u32> {
        self.cancel_requests.subscribe()
    }
}

pub(crate) struct Keeper {
    shared: Arc<LeaseState>,
    stop: CancellationToken,
    ttl: Duration,
    handle: Option<JoinHandle<()>>,
}

pub(crate) struct KeeperConfig {
    pub(crate) ttl: Duration,
    pub(crate) max_lifetime: Duration,
}

impl Keeper {
    /// Starts renewing `lease`, granted or extended by a call sent at
    /// `confirmed_at`.
    pub(crate) fn spawn(
        state: Arc<dyn StateBackend>,
        lease: Lease,
        confirmed_at: Instant,
        config: &KeeperConfig,
        abandon: CancellationToken,
    ) -> Self {
        let shared = Arc::new(LeaseState::new(confirmed_at, config.ttl));
        let stop = CancellationToken::new();
        let task = renew_loop(
            state,
            lease,
            config.ttl,
            config.max_lifetime,
            Arc::clone(&shared),
            stop.clone(),
            abandon,
        );
        Self {
            shared,
            stop,
            ttl: config.ttl,
            handle: Some(tokio::spawn(task)),
        }
    }

    pub(crate) fn state(&self) -> &Arc<LeaseState> {
        &self.shared
    }

    /// A call sent at `at` extended the lease by its TTL and handed over a new
    /// batch: stop requests start again from zero.
    pub(crate) fn new_batch(&self, at: Instant) {
        self.shared.confirm(at + self.ttl);
        self.shared.cancel_requests.send_replace(0);
        self.shared.renewed.notify_one();
    }

    /// A call sent at `at` extended the lease by its TTL (a `finish` that
    /// answered `Wait`).
    pub(crate) fn extended(&self, at: Instant) {
        self.shared.confirm(at + self.ttl);
        self.shared.renewed.notify_one();
    }

    /// Stops renewing and waits for the renewal task to end. Returns whether the
    /// lease was lost while it ran.
    pub(crate) async fn stop(mut self) -> bool {
        self.stop.cancel();
        if let Some(handle) = self.handle.take() {
            let _ = handle.await;
        }
        self.shared.lost.is_cancelled()
    }
}

impl Drop for Keeper {
    /// A holder dropped without stopping its keeper (its task was dropped, or
    /// it panicked): renewal ends with it, so the lease lapses at its TTL.
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}

async fn renew_loop(
    state: Arc<dyn StateBackend>,
    lease: Lease,
    ttl: Duration,
    max_lifetime: Duration,
    shared: Arc<LeaseState>,
    stop: CancellationToken,
    abandon: CancellationToken,
) {
    let period = (ttl / 3).max(Duration::from_millis(1));
    let mut give_up_at = Instant::now() + max_lifetime;
    let mut next = Instant::now() + period;
    loop {
        let expiry = shared.expiry();
        tokio::select! {
            () = stop.cancelled() => return,
            () = abandon.cancelled() => return,
            () = shared.renewed.notified() => {
                give_up_at = Instant::now() + max_lifetime;
                next = Instant::now() + period;
                continue;
            }
            () = tokio::time::sleep_until(next.min(expiry)) => {}
        }
        let now = Instant::now();
        if now >= shared.expiry() {
            shared.lost.cancel();
            return;
        }
        if now >= give_up_at {
            // Max lock lifetime: stop renewing and let the lease lapse.
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(shared.expiry()) => {
                    shared.lost.cancel();
                    return;
                }
            }
        }
        let sent = Instant::now();
        next = sent + period;
        let answer = tokio::select! {
            () = stop.cancelled() => return,
            // The lease is lost at its believed expiry even while the renewal
            // hangs: the backend may have let it lapse already.
            () = tokio::time::sleep_until(shared.expiry()) => {
                shared.lost.cancel();
                return;
            }
            r = state.renew(&lease, ttl) => r,
        };
        match answer {
            Ok(Renewal::Renewed { cancel_requests }) => {
                shared.confirm(sent + ttl);
                shared.cancel_requests.send_if_modified(|c| {
                    let changed = *c != cancel_requests;
                    *c = cancel_requests;
                    changed
                });
            }
            Ok(_) => {
                shared.lost.cancel();
                return;
            }
            Err(e) => {
                // Keep trying until the lease has surely expired.
                tracing::warn!(error = %e, scope = %lease.scope(), "lease renewal failed");
            }
        }
    }
}
