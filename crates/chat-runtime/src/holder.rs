//! The holder loop: runs the batch a lease holds, acknowledges it with `finish`
//! and takes the next, until the scope is released — recording each batch's
//! outcomes only once the backend has acknowledged the batch.
//!
//! A holder that loses its lease stops without acknowledging: its batch stays
//! in flight and the scope's next holder runs it again. At shutdown a holder
//! finishes what it runs (the drain), then gives its lease back without taking
//! new work; a run cancelled at the drain deadline hands its batch back.

use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    Batch, BurstMode, Concurrency, Fate, Handoff, Lease, PlatformAdapter, Release, StateError,
    Waiting,
};
use tokio::time::Instant;

use crate::admission::Permit;
use crate::keeper::{Keeper, KeeperConfig};
use crate::outcome::{Outcome, OutcomeRecord, Records};
use crate::retry::repeat;
use crate::run::{RunEnd, run};
use crate::shared::Shared;
use crate::work::{HeldLease, RunItem};

/// What a holder does after acknowledging its batch.
enum AfterBatch {
    /// Run these, then acknowledge them (recording these outcomes too).
    Batch(Vec<RunItem>, Records),
    /// Entries wait that are not ready: look again after this.
    Wait(Duration),
    /// The scope is released, or no longer this holder's.
    Done,
}

/// Runs work for one adapter under one strategy.
#[derive(Clone)]
pub(crate) struct Holder {
    pub(crate) shared: Arc<Shared>,
    pub(crate) adapter: Arc<dyn PlatformAdapter>,
    pub(crate) concurrency: Concurrency,
}

impl Holder {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        adapter: &Arc<dyn PlatformAdapter>,
        concurrency: Concurrency,
    ) -> Self {
        Self {
            shared: Arc::clone(shared),
            adapter: Arc::clone(adapter),
            concurrency,
        }
    }

    /// Starts holding `lease`, granted (or extended) by a call sent at
    /// `confirmed_at`.
    pub(crate) fn take(&self, lease: Lease, confirmed_at: Instant) -> HeldLease {
        let keeper = Keeper::spawn(
            Arc::clone(self.shared.state()),
            lease.clone(),
            confirmed_at,
            &KeeperConfig {
                ttl: self.shared.options().leases.ttl,
                max_lifetime: self.shared.options().leases.max_lifetime,
            },
            self.shared.signals().abandon().clone(),
        );
        self.shared.hold(&lease);
        HeldLease {
            lease,
            keeper,
            seen_cancels: Arc::default(),
        }
    }

    async fn let_go(&self, held: HeldLease) {
        self.shared.unhold(&held.lease);
        held.keeper.stop().await;
    }

    /// Holds `lease` on a task of its own: runs `first`, then whatever `finish`
    /// hands over, until the scope is released. The permit is dropped when the
    /// loop ends.
    pub(crate) fn spawn_holder(
        &self,
        lease: Lease,
        confirmed_at: Instant,
        first: Option<RunItem>,
        permit: Option<Permit>,
    ) {
        let held = self.take(lease, confirmed_at);
        self.spawn_hold(
            held,
            first.into_iter().collect(),
            Records::default(),
            permit,
        );
    }

    /// Runs [`hold`](Self::hold) in a task of its own, which drops `permit`
    /// when the loop ends. Boxed: the loop's future (a run's inside it) is
    /// about 2 KB, which a task's cell would otherwise copy as it is spawned
    /// and again as it completes.
    fn spawn_hold(
        &self,
        held: HeldLease,
        items: Vec<RunItem>,
        records: Records,
        permit: Option<Permit>,
    ) {
        let this = self.clone();
        self.shared.tracker().spawn(Box::pin(async move {
            this.hold(held, items, records).await;
            drop(permit);
        }));
    }

    /// The holder loop.
    pub(crate) async fn hold(
        &self,
        mut held: HeldLease,
        mut items: Vec<RunItem>,
        mut records: Records,
    ) {
        loop {
            for mut work in items {
                if self.each() {
                    // Each member of a burst-each batch has its own full budget,
                    // from when it starts.
                    work.deadline =
                        Some(Instant::now() + self.shared.options().dispatch.detach_timeout);
                }
                match run(&self.shared, &self.adapter, work, Some(&held)).await {
                    RunEnd::Done(record) => records.push(record),
                    RunEnd::Lost => {
                        records.discard();
                        return self.let_go(held).await;
                    }
                    RunEnd::HandBack => {
                        records.discard();
                        self.release(&held.lease, Release::HandBack).await;
                        return self.let_go(held).await;
                    }
                }
            }
            if self.shared.signals().draining().is_cancelled() {
                // Shutting down: acknowledge the batch and give the scope up
                // without taking what waits, so another replica runs it now.
                match self.release(&held.lease, Release::Done).await {
                    true => records.commit(self.shared.recorder()),
                    false => records.discard(),
                }
                return self.let_go(held).await;
            }
            match self.acknowledge(&mut held, records).await {
                AfterBatch::Batch(next, next_records) => {
                    items = next;
                    records = next_records;
                }
                AfterBatch::Wait(d) => {
                    items = Vec::new();
                    records = Records::default();
                    if !self.wait(&held, d).await {
                        return self.let_go(held).await;
                    }
                }
                AfterBatch::Done => return self.let_go(held).await,
            }
        }
    }

    /// Acknowledges the held batch with `finish` and takes what it hands over;
    /// the batch's outcomes are recorded once the acknowledgement landed, and
    /// discarded when the batch is another holder's now.
    async fn acknowledge(&self, held: &mut HeldLease, records: Records) -> AfterBatch {
        let ended = Instant::now();
        let answer = self.finish(&held.lease).await;
        if held.lease.kind() == chat_core::LeaseKind::Slot {
            self.shared.slot_freed().notify_waiters();
        }
        match answer {
            Ok((Handoff::Run(batch), sent)) => {
                records.commit(self.shared.recorder());
                held.next_batch(batch.seq, sent);
                self.shared.hold(&held.lease);
                let mut next = Records::default();
                let items = self.plan(batch, &mut next);
                crate::telemetry::handed_over(self.adapter.platform(), ended.elapsed());
                AfterBatch::Batch(items, next)
            }
            Ok((Handoff::Wait(d), sent)) => {
                records.commit(self.shared.recorder());
                held.keeper.extended(sent);
                AfterBatch::Wait(d)
            }
            Ok((Handoff::Released, _)) => {
                records.commit(self.shared.recorder());
                AfterBatch::Done
            }
            Ok(_) | Err(_) => {
                // Lost, or never learned: the batch is (or will be) the next
                // holder's, who runs it again.
                records.discard();
                AfterBatch::Done
            }
        }
    }

    /// `finish`, repeated while its outcome is unknown, for up to
    /// `state_retry` — and within the minute a backend remembers an
    /// acknowledgement for a repeat of its call.
    pub(crate) async fn finish(&self, lease: &Lease) -> Result<(Handoff, Instant), StateError> {
        let retry = self
            .shared
            .options()
            .timeouts
            .state_retry
            .min(Duration::from_secs(50));
        let until = Instant::now() + retry;
        let r = repeat("finish", until, || self.shared.state().finish(lease)).await;
        if let Err(e) = &r {
            tracing::warn!(error = %e, scope = %lease.scope(), "finish failed; the batch runs again under the scope's next holder");
        }
        r
    }

    /// `release`, repeated while its outcome is unknown, within the lease's TTL.
    /// Returns whether the batch ended as asked.
    pub(crate) async fn release(&self, lease: &Lease, how: Release) -> bool {
        let until = Instant::now() + lease.ttl();
        match repeat("release", until, || self.shared.state().release(lease, how)).await {
            Ok((done, _)) => done,
            Err(e) => {
                tracing::warn!(error = %e, scope = %lease.scope(), "release failed; the lease lapses at its TTL");
                false
            }
        }
    }

    /// Waits `d` while keeping the lease. Returns false if the lease was lost or
    /// shutdown started (the scope was then given up).
    async fn wait(&self, held: &HeldLease, d: Duration) -> bool {
        let d = match self.concurrency {
            // A burst batch can seal early at `max_batch` on another replica too:
            // look again a few times per window.
            Concurrency::Burst(b) if b.max_batch.is_some() => d.min(b.window / 4),
            _ => d,
        };
        let scope = held.lease.scope();
        let waker = self.shared.waker(scope);
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = waker.notified() => {}
            () = held.state().lost().cancelled() => {}
            () = self.shared.signals().draining().cancelled() => {}
        }
        self.shared.forget_waker(scope);
        if held.state().lost().is_cancelled() {
            return false;
        }
        if self.shared.signals().draining().is_cancelled() {
            self.release(&held.lease, Release::Done).await;
            return false;
        }
        true
    }

    fn each(&self) -> bool {
        matches!(self.concurrency, Concurrency::Burst(b) if b.mode == BurstMode::Each)
    }

    /// Turns a handed-over batch into runs, buffering the outcomes it decides:
    /// reports as their fate says; expired entries `Expired`; under queue and
    /// burst-collapse the newest live entry runs with the others as skipped
    /// (each `Superseded`); under burst-each every member runs in join order. A
    /// batch whose holders lapsed `max_attempts` times is abandoned: each of its
    /// events is recorded `Failed`.
    pub(crate) fn plan(&self, batch: Batch, records: &mut Records) -> Vec<RunItem> {
        for report in &batch.reports {
            let (outcome, reason) = match report.fate {
                Fate::Evicted => (Outcome::Dropped, "evicted"),
                Fate::Superseded => (Outcome::Superseded, "debounce"),
                _ => (Outcome::Failed, "undecodable"),
            };
            if outcome == Outcome::Failed {
                tracing::error!(event_id = %report.event_id, "a stored event could not be decoded");
            }
            records.push(OutcomeRecord {
                event_id: report.event_id.clone(),
                thread: report.thread.clone(),
                outcome,
                reason,
                ran_for: None,
                cancel_latency: None,
                ended_at: None,
            });
        }
        if batch.lapses >= self.shared.options().recovery.max_attempts {
            for w in &batch.entries {
                tracing::error!(event_id = %w.event.id, attempts = batch.attempt - 1, "abandoned after its holders lapsed max_attempts times");
                records.event(&w.event, Outcome::Failed, "abandoned");
            }
            return Vec::new();
        }
        let detach = self.shared.options().dispatch.detach_timeout;
        let now = Instant::now();
        let each = self.each();
        let mut live: Vec<Waiting> = Vec::with_capacity(batch.entries.len());
        for w in batch.entries {
            if w.expired {
                records.event(&w.event, Outcome::Expired, "entry-ttl");
            } else if !each && !detach.is_zero() && w.waited >= detach {
                records.event(&w.event, Outcome::Expired, "budget");
            } else {
                live.push(w);
            }
        }
        let attempt = batch.attempt;
        if each {
            return live
                .into_iter()
                .map(|w| RunItem::handed(w.event, Vec::new(), None, attempt))
                .collect();
        }
        let Some(newest) = live.pop() else {
            return Vec::new();
        };
        for w in &live {
            records.event(&w.event, Outcome::Superseded, self.concurrency.name());
        }
        tracing::info!(
            name: "message-dequeued",
            thread = %newest.event.thread,
            message_id = %newest.event.id,
            skipped_count = live.len(),
            attempt,
        );
        let deadline = (!detach.is_zero()).then(|| now + detach.saturating_sub(newest.waited));
        vec![RunItem::handed(
            newest.event,
            live.into_iter().map(|w| w.event).collect(),
            deadline,
            attempt,
        )]
    }

    /// Sync dispatch (and inline interactions): runs the work inside the
    /// request and finishes before the answer, so the scope is free (or handed
    /// on) by the time the platform hears back. Whatever `finish` hands over
    /// runs detached, within `max_detached`.
    ///
    /// A run cut short (its lease lost, or shutdown) is never dropped while it
    /// may have been acknowledged: the platform may have been answered already
    /// (`timeouts.ack` passed: a slash command heard "the answer will follow",
    /// an event's retry was a duplicate), and some kinds are never retried.
    /// It stays in the backend's care — in flight, or handed back — and runs
    /// again under the scope's next holder (`ctx.attempt()` > 1), as under
    /// deferred dispatch. Only a run that nobody else can run (a backend
    /// private to this process, shutting down) is given back to the platform,
    /// while its answer can still say so.
    pub(crate) async fn run_sync(
        &self,
        lease: Lease,
        confirmed_at: Instant,
        work: RunItem,
    ) -> SyncEnd {
        let answer = work.response.clone();
        let event = Arc::clone(&work.event);
        let mut held = self.take(lease, confirmed_at);
        match run(&self.shared, &self.adapter, work, Some(&held)).await {
            RunEnd::Done(record) => {
                let outcome = record.outcome;
                let mut records = Records::default();
                records.push(record);
                match self.acknowledge(&mut held, records).await {
                    AfterBatch::Batch(items, next) => self.detach_bounded(held, items, next).await,
                    AfterBatch::Wait(_) => {
                        self.detach_bounded(held, Vec::new(), Records::default())
                            .await;
                    }
                    AfterBatch::Done => self.let_go(held).await,
                }
                SyncEnd::Ran(outcome)
            }
            RunEnd::Lost => {
                // The lease lapsed: the batch is in flight for the next holder
                // (here or elsewhere), which runs it again.
                self.let_go(held).await;
                SyncEnd::Continues
            }
            RunEnd::HandBack if self.shared.state().shared() => {
                self.release(&held.lease, Release::HandBack).await;
                self.let_go(held).await;
                SyncEnd::Continues
            }
            RunEnd::HandBack => {
                // Shutting down with a backend nobody else reads: the platform
                // is the only one left to carry the event.
                let dropped = self.release(&held.lease, Release::Done).await;
                self.let_go(held).await;
                if !dropped {
                    // Adopted already (by this process's sweep): it runs there.
                    return SyncEnd::Continues;
                }
                if answer
                    .as_ref()
                    .is_some_and(crate::response::DeliveryResponse::give_back)
                {
                    self.shared
                        .recorder()
                        .event(&event, Outcome::Rejected, "shutdown");
                    SyncEnd::GivenBack
                } else {
                    self.shared
                        .recorder()
                        .event(&event, Outcome::Cancelled, "shutdown");
                    SyncEnd::Ran(Outcome::Cancelled)
                }
            }
        }
    }

    /// Goes on holding detached after a sync run, with a place of
    /// `max_detached` for its tenant; without one, the handed-over batch is
    /// handed back in flight, for a sweep with room (here or on another
    /// replica) to run.
    async fn detach_bounded(&self, held: HeldLease, items: Vec<RunItem>, records: Records) {
        match self
            .shared
            .admission()
            .try_admit(&held.lease.scope().tenant)
        {
            Some(permit) => self.spawn_hold(held, items, records, Some(permit)),
            None => {
                tracing::info!(name: "handoff-deferred", scope = %held.lease.scope(), "max_detached reached: the handed-over work waits for a sweep with room");
                records.discard();
                self.release(&held.lease, Release::HandBack).await;
                self.let_go(held).await;
            }
        }
    }
}

/// How a run inside its request ended, for the delivery's answer.
pub(crate) enum SyncEnd {
    /// It ran to this outcome (recorded once its batch was acknowledged).
    Ran(Outcome),
    /// Cut short and left in the backend's care: it runs again under the
    /// scope's next holder.
    Continues,
    /// Cut short by shutdown with nobody else to run it: its batch was dropped
    /// and the answer says retry; the caller removes the dedupe mark.
    GivenBack,
}
