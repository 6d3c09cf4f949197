//! Detached work: the holder loop that runs an event under its lease and then
//! drives `finish` until the scope is released, the handler runs themselves, the
//! slot waiter, and the recovery sweep.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use chat_core::{
    BurstMode, Concurrency, Event, EventKind, Handoff, Lease, PlatformAdapter, ScopeKey, Waiting,
};
use futures_util::FutureExt;
use tokio::time::Instant;
use tracing::Instrument;

use crate::admission::Permit;
use crate::bot::{BotInner, lock};
use crate::cancel::{Cancel, CancelCause};
use crate::ctx::{Ctx, CtxParts};
use crate::keeper::{Keeper, KeeperConfig};
use crate::outcome::{Outcome, OutcomeRecord};

/// One event to run.
pub(crate) struct Work {
    pub(crate) event: Arc<Event>,
    pub(crate) skipped: Vec<Arc<Event>>,
    /// The end of its budget; `None` under sync dispatch.
    pub(crate) deadline: Option<Instant>,
    /// Whether its thread was subscribed at admission; `None`: ask at run time.
    pub(crate) subscribed: Option<bool>,
    /// Set once the handler posted into the thread (for the adapter's
    /// first-response duty).
    pub(crate) posted: Arc<AtomicBool>,
    /// Under sync dispatch: where the handler's direct answer goes.
    pub(crate) reply: Option<ReplySlot>,
}

/// A sync handler's direct answer to the delivery.
pub(crate) type ReplySlot = Arc<std::sync::Mutex<Option<serde_json::Value>>>;

impl Work {
    /// A run handed over by the backend.
    fn handed(event: Arc<Event>, skipped: Vec<Arc<Event>>, deadline: Option<Instant>) -> Self {
        Self {
            event,
            skipped,
            deadline,
            subscribed: None,
            posted: Arc::default(),
            reply: None,
        }
    }
}

/// Runs work for one adapter under one strategy.
#[derive(Clone)]
pub(crate) struct Holder {
    inner: Arc<BotInner>,
    adapter: Arc<dyn PlatformAdapter>,
    concurrency: Concurrency,
}

impl Holder {
    pub(crate) fn new(
        inner: &Arc<BotInner>,
        adapter: &Arc<dyn PlatformAdapter>,
        concurrency: Concurrency,
    ) -> Self {
        Self {
            inner: Arc::clone(inner),
            adapter: Arc::clone(adapter),
            concurrency,
        }
    }

    fn keeper_config(&self) -> KeeperConfig {
        KeeperConfig {
            ttl: self.inner.options.lock_ttl,
            max_lifetime: self.inner.options.max_lock_lifetime,
        }
    }

    fn keeper(&self, lease: &Lease) -> Keeper {
        Keeper::spawn(
            Arc::clone(&self.inner.state),
            lease.clone(),
            &self.keeper_config(),
            self.inner.abandon.clone(),
        )
    }

    /// Holds `lease`: runs `first`, then whatever `finish` hands over, until the
    /// scope is released. The permit is dropped when the loop ends.
    pub(crate) fn spawn_holder(&self, lease: Lease, first: Option<Work>, permit: Option<Permit>) {
        self.spawn_holder_with(lease, first.into_iter().collect(), permit);
    }

    fn spawn_holder_with(&self, lease: Lease, first: Vec<Work>, permit: Option<Permit>) {
        let this = self.clone();
        self.inner.hold(&lease);
        self.inner.tracker.spawn(async move {
            this.hold(&lease, first).await;
            this.inner.unhold(&lease);
            drop(permit);
        });
    }

    /// Sync dispatch: runs the work inside the request and finishes before the
    /// answer, so the scope is free (or handed on) by the time the platform hears
    /// back — a retry of a failed handler must find it free. Whatever `finish`
    /// hands over runs detached.
    pub(crate) async fn run_sync(&self, lease: Lease, work: Work) -> Outcome {
        self.inner.hold(&lease);
        let (outcome, lost) = self.run(work, Some(&lease)).await;
        self.inner.unhold(&lease);
        if lost {
            return outcome;
        }
        let handoff = self.inner.state.finish(&lease).await;
        if lease.kind() == chat_core::LeaseKind::Slot {
            self.inner.slot_freed.notify_waiters();
        }
        match handoff {
            Ok(Handoff::Released | Handoff::Lost) => {}
            Ok(Handoff::Run(entries)) => {
                let works = self.plan(entries);
                self.spawn_holder_with(lease, works, None);
            }
            // A wait, an answer this version does not know, or an error: the
            // holder loop takes it from here and retries `finish`.
            Ok(_) | Err(_) => self.spawn_holder(lease, None, None),
        }
        outcome
    }

    pub(crate) fn spawn_unlocked(&self, work: Work, permit: Option<Permit>) {
        let this = self.clone();
        self.inner.tracker.spawn(async move {
            this.run(work, None).await;
            drop(permit);
        });
    }

    pub(crate) async fn run_unlocked(&self, work: Work) -> Outcome {
        self.run(work, None).await.0
    }

    /// Deferred `Concurrent{max}`: waits for a slot (the wait counts against the
    /// budget), then runs.
    pub(crate) fn spawn_slot_waiter(&self, scope: ScopeKey, work: Work, permit: Option<Permit>) {
        let this = self.clone();
        self.inner.tracker.spawn(async move {
            let until = work.deadline.unwrap_or_else(Instant::now);
            tokio::select! {
                slot = this.wait_for_slot(&scope, until) => match slot {
                    Some(lease) => {
                        this.inner.hold(&lease);
                        this.hold(&lease, vec![work]).await;
                        this.inner.unhold(&lease);
                    }
                    None => this.inner.recorder.event(&work.event, Outcome::Expired, "budget"),
                },
                () = this.inner.shutdown.cancelled() => {
                    this.inner.shutdown_cancelled.fetch_add(1, Ordering::SeqCst);
                    this.inner.recorder.event(&work.event, Outcome::Cancelled, "shutdown");
                }
            }
            drop(permit);
        });
    }

    /// Polls for a slot until `until`, woken early when a local slot frees.
    pub(crate) async fn wait_for_slot(&self, scope: &ScopeKey, until: Instant) -> Option<Lease> {
        let Concurrency::Concurrent(opts) = self.concurrency else {
            return None;
        };
        let max = opts.max.unwrap_or(usize::MAX);
        let mut backoff = Duration::from_millis(10);
        loop {
            let freed = self.inner.slot_freed.notified();
            match self
                .inner
                .state
                .acquire_slot(scope, max, self.inner.options.lock_ttl)
                .await
            {
                Ok(Some(lease)) => return Some(lease),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "acquire_slot failed"),
            }
            let now = Instant::now();
            if now >= until {
                return None;
            }
            let wake = (now + backoff).min(until);
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep_until(wake) => {}
            }
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// The holder loop.
    async fn hold(&self, lease: &Lease, first: Vec<Work>) {
        let state = Arc::clone(&self.inner.state);
        let mut pending: Vec<Work> = first;
        loop {
            // Run what this holder has, in order.
            let mut works = std::mem::take(&mut pending).into_iter();
            while let Some(mut work) = works.next() {
                if self.inner.shutdown.is_cancelled() {
                    self.record_rest(Some(work), works, Outcome::Cancelled, "shutdown");
                    self.release(lease).await;
                    return;
                }
                if self.fresh_budget() {
                    work.deadline = Some(Instant::now() + self.inner.options.detach_timeout);
                }
                let (_, lost) = self.run(work, Some(lease)).await;
                if lost {
                    self.record_rest(None, works, Outcome::Preempted, "lease-lost");
                    return;
                }
            }
            if self.inner.shutdown.is_cancelled() {
                self.release(lease).await;
                return;
            }
            let handoff = state.finish(lease).await;
            if lease.kind() == chat_core::LeaseKind::Slot {
                self.inner.slot_freed.notify_waiters();
            }
            match handoff {
                Ok(Handoff::Run(entries)) => pending = self.plan(entries),
                Ok(Handoff::Wait(d)) => {
                    if !self.wait(lease, d).await {
                        return;
                    }
                }
                Ok(Handoff::Released | Handoff::Lost) | Ok(_) => return,
                Err(e) => {
                    tracing::warn!(error = %e, scope = %lease.scope(), "finish failed; retrying");
                    // The lease stays ours until it expires; retry while it may.
                    if !self.wait(lease, self.inner.options.lock_ttl / 6).await {
                        return;
                    }
                }
            }
        }
    }

    /// Waits `d` while keeping the lease. Returns false if the lease was lost or
    /// shutdown started.
    async fn wait(&self, lease: &Lease, d: Duration) -> bool {
        let d = match self.concurrency {
            // A burst batch can seal early at `max_batch` on another replica too:
            // look again a few times per window.
            Concurrency::Burst(b) if b.max_batch.is_some() => d.min(b.window / 4),
            _ => d,
        };
        let waker = Arc::clone(
            lock(&self.inner.wakers)
                .entry(lease.scope().clone())
                .or_default(),
        );
        let keeper = self.keeper(lease);
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = waker.notified() => {}
            () = keeper.lost().cancelled() => {}
            () = self.inner.shutdown.cancelled() => {}
        }
        lock(&self.inner.wakers).remove(lease.scope());
        let lost = keeper.stop().await;
        if self.inner.shutdown.is_cancelled() && !lost {
            self.release(lease).await;
            return false;
        }
        !lost
    }

    async fn release(&self, lease: &Lease) {
        if let Err(e) = self.inner.state.release(lease).await {
            tracing::warn!(error = %e, scope = %lease.scope(), "release failed; the lease lapses at its TTL");
        }
    }

    fn fresh_budget(&self) -> bool {
        matches!(self.concurrency, Concurrency::Burst(b) if b.mode == BurstMode::Each)
    }

    fn record_rest(
        &self,
        first: Option<Work>,
        rest: impl Iterator<Item = Work>,
        outcome: Outcome,
        reason: &'static str,
    ) {
        for w in first.into_iter().chain(rest) {
            if outcome == Outcome::Cancelled {
                self.inner.shutdown_cancelled.fetch_add(1, Ordering::SeqCst);
            }
            self.inner.recorder.event(&w.event, outcome, reason);
        }
    }

    /// Turns handed-over entries into runs: expired entries are recorded
    /// `Expired`; under queue and burst-collapse the newest live entry runs with
    /// the others as skipped (each recorded `Superseded`); under burst-each every
    /// member runs in join order.
    fn plan(&self, entries: Vec<Waiting>) -> Vec<Work> {
        let detach = self.inner.options.detach_timeout;
        let now = Instant::now();
        let each = self.fresh_budget();
        let mut live = Vec::with_capacity(entries.len());
        for w in entries {
            if w.expired {
                self.inner
                    .recorder
                    .event(&w.event, Outcome::Expired, "entry-ttl");
            } else if !each && !detach.is_zero() && w.waited >= detach {
                self.inner
                    .recorder
                    .event(&w.event, Outcome::Expired, "budget");
            } else {
                live.push(w);
            }
        }
        let deadline_of =
            |w: &Waiting| (!detach.is_zero()).then(|| now + detach.saturating_sub(w.waited));
        if each {
            return live
                .into_iter()
                .map(|w| Work::handed(w.event, Vec::new(), None))
                .collect();
        }
        let Some(newest) = live.pop() else {
            return Vec::new();
        };
        for w in &live {
            self.inner
                .recorder
                .event(&w.event, Outcome::Superseded, self.concurrency.name());
        }
        tracing::info!(
            name: "message-dequeued",
            thread = %newest.event.thread,
            message_id = %newest.event.id,
            skipped_count = live.len(),
        );
        let deadline = deadline_of(&newest);
        vec![Work::handed(
            newest.event,
            live.into_iter().map(|w| w.event).collect(),
            deadline,
        )]
    }

    /// Runs one event's handler: with the lease kept alive when there is one,
    /// cancelled on lease loss, deadline, shutdown or a stop request. Returns the
    /// recorded outcome and whether the lease was lost.
    async fn run(&self, work: Work, lease: Option<&Lease>) -> (Outcome, bool) {
        let inner = &self.inner;
        let event = work.event;
        let subscribed = match work.subscribed {
            Some(s) => s,
            None => self.subscribed_now(&event).await,
        };
        let Some(handler) = inner.handlers.route(&event, subscribed) else {
            inner.recorder.event(&event, Outcome::Ignored, "no-handler");
            return (Outcome::Ignored, false);
        };
        let cancel = Cancel::new();
        let scope = lease.map(|l| l.scope().clone());
        if let Some(scope) = &scope {
            lock(&inner.runs)
                .entry(scope.clone())
                .or_default()
                .push(cancel.clone());
        }
        let keeper = lease.map(|l| self.keeper(l));
        let ctx = Ctx::new(CtxParts {
            state: Arc::clone(&inner.state),
            adapter: Arc::clone(&self.adapter),
            thread: event.thread.clone(),
            skipped: work.skipped,
            deadline: work.deadline,
            cancel: cancel.clone(),
            fence: lease.map(Lease::fence),
            posted: work.posted,
            reply: work.reply,
        });
        let started = Instant::now();
        let mut cancelled_at = None;
        let span = tracing::info_span!(
            "handler",
            event_id = %event.id,
            thread = %event.thread,
            fence = lease.map(Lease::fence),
            skipped = ctx.skipped().len(),
        );
        let mut fut =
            AssertUnwindSafe(handler.call(ctx, (*event).clone()).instrument(span)).catch_unwind();
        let never = tokio_util::sync::CancellationToken::new();
        let (lost_token, stop_token) = match &keeper {
            Some(k) => (k.lost().clone(), k.stop_requested().clone()),
            None => (never.clone(), never),
        };
        let result = loop {
            let armed = cancelled_at.is_none();
            tokio::select! {
                r = &mut fut => break r,
                () = sleep_until_opt(work.deadline), if armed => cancel.cancel(CancelCause::DeadlineExceeded),
                () = lost_token.cancelled(), if armed => cancel.cancel(CancelCause::Preempted),
                () = stop_token.cancelled(), if armed => cancel.cancel(CancelCause::StopRequested),
                () = inner.shutdown.cancelled(), if armed => cancel.cancel(CancelCause::Shutdown),
                () = cancel.token().cancelled(), if armed => {}
            }
            if cancel.is_cancelled() && cancelled_at.is_none() {
                cancelled_at = Some(Instant::now());
            }
        };
        let lost = match keeper {
            Some(k) => k.stop().await,
            None => false,
        };
        if let Some(scope) = &scope {
            let mut runs = lock(&inner.runs);
            if let Some(list) = runs.get_mut(scope) {
                list.retain(|c| !c.same_as(&cancel));
                if list.is_empty() {
                    runs.remove(scope);
                }
            }
        }
        let now = Instant::now();
        let (outcome, reason) = match (cancel.cause(), &result) {
            (Some(CancelCause::Preempted), _) => (Outcome::Preempted, "lease-lost"),
            (Some(CancelCause::DeadlineExceeded), _) => (Outcome::DeadlineExceeded, "budget"),
            (Some(CancelCause::Shutdown), _) => {
                inner.shutdown_cancelled.fetch_add(1, Ordering::SeqCst);
                (Outcome::Cancelled, "shutdown")
            }
            (Some(CancelCause::StopRequested), _) => (Outcome::Cancelled, "stop-requested"),
            (_, Ok(Ok(()))) => (Outcome::Ran, "ok"),
            (_, Ok(Err(e))) => {
                tracing::warn!(error = %e, event_id = %event.id, "handler failed");
                (Outcome::Failed, "error")
            }
            (_, Err(_)) => {
                tracing::error!(event_id = %event.id, "handler panicked");
                (Outcome::Failed, "panic")
            }
        };
        inner.recorder.record(&OutcomeRecord {
            event_id: event.id.clone(),
            thread: Some(event.thread.clone()),
            outcome,
            reason,
            ran_for: Some(now - started),
            cancel_latency: cancelled_at.map(|at| now - at),
        });
        (outcome, lost || (outcome == Outcome::Preempted))
    }

    async fn subscribed_now(&self, event: &Event) -> bool {
        if !matches!(event.kind, EventKind::Message(_)) || self.inner.handlers.subscribed.is_empty()
        {
            return false;
        }
        self.inner
            .state
            .is_subscribed(&event.thread)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "is_subscribed failed; routing as unsubscribed");
                false
            })
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The periodic recovery sweep: claims scopes whose holder died with entries
/// waiting, and runs them here.
pub(crate) fn start_sweeper(inner: &Arc<BotInner>) {
    let Some(interval) = inner.options.sweep_interval else {
        return;
    };
    if inner.sweeper.set(()).is_err() {
        return;
    }
    let weak = Arc::downgrade(inner);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            if inner.shutdown.is_cancelled() {
                return;
            }
            let room = inner
                .options
                .max_detached
                .saturating_sub(inner.admission.in_use(inner.options.max_detached));
            if room == 0 {
                continue;
            }
            let leases = match inner
                .state
                .sweep(inner.options.lock_ttl, room.min(64))
                .await
            {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "recovery sweep failed");
                    continue;
                }
            };
            for lease in leases {
                let adapter = inner
                    .adapters
                    .values()
                    .find(|a| a.platform() == lease.scope().platform)
                    .cloned();
                match (adapter, inner.admission.try_admit(&lease.scope().tenant)) {
                    (Some(adapter), Some(permit)) => {
                        let holder = Holder::new(&inner, &adapter, inner.options.concurrency);
                        tracing::info!(name: "scope-recovered", scope = %lease.scope());
                        holder.spawn_holder(lease, None, Some(permit));
                    }
                    _ => {
                        let _ = inner.state.release(&lease).await;
                    }
                }
            }
        }
    });
}
