//! The units a holder works with: [`RunItem`], one event to run, and [`HeldLease`], a
//! lease as its holder holds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use chat_core::{Event, Lease};
use tokio::time::Instant;

use crate::keeper::{Keeper, LeaseState};

/// One event to run.
pub(crate) struct RunItem {
    pub(crate) event: Arc<Event>,
    pub(crate) skipped: Vec<Arc<Event>>,
    /// The end of its budget; `None` under sync dispatch.
    pub(crate) deadline: Option<Instant>,
    /// Whether its thread was subscribed at admission; `None`: ask at run time.
    pub(crate) subscribed: Option<bool>,
    /// Set once the handler posted into the thread (for the adapter's
    /// first-response duty).
    pub(crate) posted: Arc<AtomicBool>,
    /// Under sync dispatch (and inline interactions): the delivery's answer,
    /// which the handler may give itself.
    pub(crate) response: Option<crate::response::DeliveryResponse>,
    /// How many times the event has been handed out to run, this time included.
    pub(crate) attempt: u32,
    /// The handler the ack path routed it to; `None` for work handed over by
    /// the backend, routed when it runs.
    pub(crate) handler: Option<crate::handler::SharedHandler>,
}

impl RunItem {
    /// A run handed over by the backend.
    pub(crate) fn handed(
        event: Arc<Event>,
        skipped: Vec<Arc<Event>>,
        deadline: Option<Instant>,
        attempt: u32,
    ) -> Self {
        Self {
            event,
            skipped,
            deadline,
            subscribed: None,
            posted: Arc::default(),
            response: None,
            attempt,
            handler: None,
        }
    }
}

/// A lease as its holder holds it: the lease at its current batch, its keeper,
/// and the stop requests already acted on in this batch.
pub(crate) struct HeldLease {
    pub(crate) lease: Lease,
    pub(crate) keeper: Keeper,
    pub(crate) seen_cancels: Arc<AtomicU32>,
}

impl HeldLease {
    pub(crate) fn state(&self) -> &Arc<LeaseState> {
        self.keeper.state()
    }

    /// `finish` (sent at `at`) handed over batch `seq`.
    pub(crate) fn next_batch(&mut self, seq: u64, at: Instant) {
        self.lease = self.lease.clone().at(seq);
        self.keeper.new_batch(at);
        self.seen_cancels.store(0, Ordering::SeqCst);
    }
}
