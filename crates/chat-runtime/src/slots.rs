//! `Concurrent{max}`: waiting for a slot. The waiting event is stored in the
//! backend under its admit request's id; the waiter polls for a slot with that
//! id (woken early when a local slot frees) and then holds the slot like a
//! lease. The wait counts against the event's budget.

use std::time::Duration;

use chat_core::{Concurrency, Lease, LeaseKind, LeaseToken, Release, ScopeKey, SlotGrant};
use tokio::time::Instant;

use crate::admission::Permit;
use crate::holder::Holder;
use crate::outcome::{Outcome, Records};
use crate::work::RunItem;

/// How a wait for a slot ended.
pub(crate) enum SlotWait {
    /// The slot, granted by a call sent at the instant.
    Granted(Lease, Instant),
    /// The waiter's reservation lapsed and recovery owns the event.
    Gone,
    /// The wait ran out (its budget, or shutdown).
    TimedOut,
}

impl Holder {
    /// The waiter's reservation, as a slot lease (to release it).
    fn reservation(&self, scope: &ScopeKey, token: &LeaseToken) -> Lease {
        Lease::new(
            scope.clone(),
            token.clone(),
            0,
            LeaseKind::Slot,
            self.shared.options().leases.ttl,
        )
    }

    /// Deferred `Concurrent{max}`: waits for a slot, then runs.
    pub(crate) fn spawn_slot_waiter(
        &self,
        scope: ScopeKey,
        token: LeaseToken,
        work: RunItem,
        permit: Option<Permit>,
    ) {
        let this = self.clone();
        // Boxed, as the holder loop inside it (`Holder::spawn_hold`).
        self.shared.tracker().spawn(Box::pin(async move {
            match this.wait_for_slot(&scope, &token, work.deadline).await {
                SlotWait::Granted(lease, at) => {
                    let held = this.take(lease, at);
                    this.hold(held, vec![work], Records::default()).await;
                }
                SlotWait::Gone => {}
                SlotWait::TimedOut if this.shared.signals().draining().is_cancelled() => {
                    // Handed back: another replica's sweep runs it.
                    let reservation = this.reservation(&scope, &token);
                    this.release(&reservation, Release::HandBack).await;
                }
                SlotWait::TimedOut => {
                    let reservation = this.reservation(&scope, &token);
                    if this.release(&reservation, Release::Done).await {
                        this.shared
                            .recorder()
                            .event(&work.event, Outcome::Expired, "budget");
                    }
                }
            }
            drop(permit);
        }));
    }

    /// Polls for a slot until `until` (`None`: a run without a budget, until
    /// shutdown), woken early when a local slot frees.
    pub(crate) async fn wait_for_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        until: Option<Instant>,
    ) -> SlotWait {
        let Concurrency::Concurrent(opts) = self.concurrency else {
            return SlotWait::TimedOut;
        };
        let ttl = self.shared.options().leases.ttl;
        let mut backoff = Duration::from_millis(10);
        loop {
            let freed = self.shared.slot_freed().notified();
            let sent = Instant::now();
            match self
                .shared
                .state()
                .acquire_slot(scope, token, opts.max, ttl)
                .await
            {
                Ok(SlotGrant::Granted(lease)) => return SlotWait::Granted(lease, sent),
                Ok(SlotGrant::Full) => {}
                Ok(_) => return SlotWait::Gone,
                Err(e) => tracing::warn!(error = %e, "acquire_slot failed"),
            }
            let now = Instant::now();
            if until.is_some_and(|u| now >= u) || self.shared.signals().draining().is_cancelled() {
                return SlotWait::TimedOut;
            }
            let wake = until.map_or(now + backoff, |u| (now + backoff).min(u));
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep_until(wake) => {}
                () = self.shared.signals().draining().cancelled() => {}
            }
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// Sync `Concurrent{max}`: the wait happens inside the request; a waiter
    /// that gets no slot in time is released so the platform's retry runs.
    pub(crate) async fn wait_for_slot_sync(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        until: Instant,
    ) -> SlotWait {
        let r = self.wait_for_slot(scope, token, Some(until)).await;
        if let SlotWait::TimedOut = r {
            let reservation = self.reservation(scope, token);
            if !self.release(&reservation, Release::Done).await {
                return SlotWait::Gone;
            }
        }
        r
    }
}
