//! One scope's record: its lease, its in-flight batch, its outbox, and whatever
//! waits on it under the strategy in use (a queue, a pending debounce event,
//! burst windows, concurrency slots and their waiters).

use std::collections::VecDeque;

use foldhash::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    AdmitRequest, Batch, Concurrency, ConcurrentOptions, Decision, DropReason, EntryView, Event,
    Fate, ForceRelease, Handoff, HolderView, Lease, LeaseKind, LeaseToken, OnFull, Recovered,
    Release, Renewal, Report, ScopeKey, ScopeView, SlotGrant, Waiting,
};
use tokio::time::Instant;

use crate::acked::Acked;

#[derive(Debug)]
struct Held {
    token: LeaseToken,
    expires_at: Instant,
    fence: u64,
    /// The batch the holder holds.
    seq: u64,
    /// Stop requests since the batch was handed out.
    cancels: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    event: Arc<Event>,
    admitted_at: Instant,
    /// Queue entries only: after this the entry is `Expired`.
    expires_at: Option<Instant>,
}

impl Entry {
    pub(crate) fn new(event: Arc<Event>, now: Instant, ttl: Option<Duration>) -> Self {
        Self {
            event,
            admitted_at: now,
            expires_at: ttl.map(|ttl| now + ttl),
        }
    }

    /// The entry as handed out at `handed_at`: wait and expiry are judged then,
    /// so a batch handed out again reads the same.
    fn waiting(&self, handed_at: Instant) -> Waiting {
        let expired = self.expires_at.is_some_and(|t| t <= handed_at);
        Waiting::new(
            Arc::clone(&self.event),
            handed_at.saturating_duration_since(self.admitted_at),
            expired,
        )
    }

    fn report(&self, fate: Fate) -> Report {
        Report::new(self.event.id.clone(), Some(self.event.thread.clone()), fate)
    }
}

/// A batch handed out and not yet acknowledged.
#[derive(Debug)]
struct InFlight {
    owner: LeaseToken,
    seq: u64,
    attempt: u32,
    lapses: u32,
    /// Given back by a holder that shut down: adopting it is not a lapse.
    handed_back: bool,
    handed_at: Instant,
    entries: Vec<Entry>,
    reports: Vec<Report>,
}

impl InFlight {
    fn batch(&self) -> Batch {
        Batch::new(
            self.seq,
            self.entries
                .iter()
                .map(|e| e.waiting(self.handed_at))
                .collect(),
            self.reports.clone(),
        )
        .attempts(self.attempt, self.lapses)
    }

    /// Adopted by `owner` as its batch `seq`.
    fn adopt(&mut self, owner: &LeaseToken, seq: u64) {
        self.owner = owner.clone();
        self.seq = seq;
        self.attempt += 1;
        self.lapses += u32::from(!self.handed_back);
        self.handed_back = false;
    }
}

#[derive(Debug)]
struct Pending {
    entry: Entry,
    /// The quiet interval ends here unless another event replaces this one.
    ready_at: Instant,
}

#[derive(Debug)]
struct Window {
    /// The window's fixed end.
    seals_at: Instant,
    /// Sealed early by `max_batch`.
    full: bool,
    members: Vec<Entry>,
}

impl Window {
    fn sealed(&self, now: Instant) -> bool {
        self.full || self.seals_at <= now
    }
}

#[derive(Debug)]
struct Slot {
    expires_at: Instant,
    fence: u64,
    cancels: u32,
}

/// A concurrency-slot run's event, from admission until its slot is released.
#[derive(Debug)]
struct SlotRun {
    entry: Entry,
    /// The concurrency it was admitted with, for its recovery.
    concurrency: ConcurrentOptions,
    attempt: u32,
    lapses: u32,
    handed_back: bool,
}

#[derive(Debug, Default)]
pub(crate) struct ScopeState {
    lease: Option<Held>,
    inflight: Option<InFlight>,
    /// Reports of events whose outcome an admit decided, for the next batch.
    outbox: Vec<Report>,
    queue: VecDeque<Entry>,
    pending: Option<Pending>,
    windows: VecDeque<Window>,
    /// Threads with work waiting here (kept until nothing waits): plain
    /// messages of these threads pass the subscription gate.
    waiting_threads: HashSet<String>,
    slots: HashMap<LeaseToken, Slot>,
    /// Waiters for a slot: their reservation's expiry.
    slot_waiters: HashMap<LeaseToken, Instant>,
    slot_runs: HashMap<LeaseToken, SlotRun>,
}

/// What is ready for the holder.
enum Next {
    Run(Vec<Entry>),
    Wait(Duration),
    Empty,
}

/// What an admission stored, for a repeat of the same request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Recorded {
    Run,
    Hold,
    Queued,
    Pending,
    Dropped(DropReason),
    Slot,
    WaitingForSlot,
    /// A control event's mark ([`request_cancel`](chat_core::Coordination::request_cancel)).
    Cancel,
}

impl ScopeState {
    fn live_lease(&mut self, now: Instant) -> Option<&mut Held> {
        // Expired == absent, as with Redis `PX`.
        if self.lease.as_ref().is_some_and(|l| l.expires_at <= now) {
            self.lease = None;
        }
        self.lease.as_mut()
    }

    fn owned_by(&mut self, token: &LeaseToken, now: Instant) -> Option<&mut Held> {
        self.live_lease(now).filter(|h| h.token == *token)
    }

    fn tidy(&mut self, now: Instant) {
        self.slots.retain(|_, s| s.expires_at > now);
        self.slot_waiters.retain(|_, t| *t > now);
    }

    fn has_waiting(&self) -> bool {
        !self.queue.is_empty() || self.pending.is_some() || !self.windows.is_empty()
    }

    /// Work on the scope that needs a holder.
    fn has_work(&self) -> bool {
        self.has_waiting() || self.inflight.is_some() || !self.outbox.is_empty()
    }

    fn slot_orphans(&self) -> Vec<LeaseToken> {
        self.slot_runs
            .keys()
            .filter(|t| !self.slots.contains_key(*t) && !self.slot_waiters.contains_key(*t))
            .cloned()
            .collect()
    }

    pub(crate) fn waiting_in_windows(&self) -> usize {
        self.windows.iter().map(|b| b.members.len()).sum()
    }

    pub(crate) fn depth(&self) -> usize {
        self.queue.len() + self.waiting_in_windows()
    }

    pub(crate) fn thread_waits(&self, thread: &str) -> bool {
        self.waiting_threads.contains(thread)
    }

    /// The scope as an operator sees it; `None` when idle.
    pub(crate) fn view(&mut self, scope: &ScopeKey, now: Instant) -> Option<ScopeView> {
        if self.is_idle(now) {
            return None;
        }
        let entry = |e: &Entry| {
            EntryView::new(
                e.event.id.clone(),
                e.event.thread.thread.clone(),
                now.saturating_duration_since(e.admitted_at),
            )
        };
        let mut view = ScopeView::new(scope.clone());
        view.holder = self.live_lease(now).map(|h| {
            HolderView::new(
                h.token.as_str(),
                h.fence,
                h.expires_at.saturating_duration_since(now),
            )
        });
        let mut slots: Vec<_> = self.slots.iter().collect();
        slots.sort_by_key(|(_, s)| s.fence);
        view.slots = slots
            .into_iter()
            .map(|(t, s)| {
                HolderView::new(
                    t.as_str(),
                    s.fence,
                    s.expires_at.saturating_duration_since(now),
                )
            })
            .collect();
        if let Some(f) = &self.inflight {
            view.in_flight.extend(f.entries.iter().map(entry));
        }
        view.in_flight
            .extend(self.slot_runs.values().map(|r| entry(&r.entry)));
        view.queued = self.queue.iter().map(entry).collect();
        view.pending = self.pending.iter().map(|p| entry(&p.entry)).collect();
        view.burst = self
            .windows
            .iter()
            .flat_map(|w| w.members.iter().map(entry))
            .collect();
        Some(view)
    }

    /// Deletes the live lease or slot with `fence`; everything in the scope's
    /// care stays for the next holder.
    pub(crate) fn force_release(&mut self, fence: u64, now: Instant) -> ForceRelease {
        self.tidy(now);
        if self.live_lease(now).is_some_and(|h| h.fence == fence) {
            self.lease = None;
            return ForceRelease::Released;
        }
        let slot = self
            .slots
            .iter()
            .find(|(_, s)| s.fence == fence)
            .map(|(t, _)| t.clone());
        match slot {
            Some(token) => {
                self.slots.remove(&token);
                ForceRelease::Released
            }
            None => ForceRelease::Stale,
        }
    }

    pub(crate) fn is_idle(&mut self, now: Instant) -> bool {
        self.tidy(now);
        self.live_lease(now).is_none()
            && !self.has_work()
            && self.slots.is_empty()
            && self.slot_runs.is_empty()
    }

    fn grant(
        &mut self,
        scope: &ScopeKey,
        token: &LeaseToken,
        now: Instant,
        ttl: Duration,
        fence: u64,
    ) -> Lease {
        self.lease = Some(Held {
            token: token.clone(),
            expires_at: now + ttl,
            fence,
            seq: 0,
            cancels: 0,
        });
        Lease::new(
            scope.clone(),
            token.clone(),
            fence,
            LeaseKind::Exclusive,
            ttl,
        )
    }

    fn wait_for(&mut self, entry: &Entry) {
        self.waiting_threads
            .insert(entry.event.thread.thread.clone());
    }

    /// The answer to a repeat of an admission that recorded `recorded`.
    pub(crate) fn replay(
        &mut self,
        scope: &ScopeKey,
        id: &LeaseToken,
        recorded: Recorded,
        ttl: Duration,
        now: Instant,
    ) -> Decision {
        self.tidy(now);
        match recorded {
            Recorded::Run | Recorded::Hold => match self.owned_by(id, now) {
                Some(h) if h.seq == 0 => {
                    // Extended as the first answer did: the caller dates its
                    // lease from the call that answered.
                    h.expires_at = now + ttl;
                    let lease = Lease::new(
                        scope.clone(),
                        id.clone(),
                        h.fence,
                        LeaseKind::Exclusive,
                        ttl,
                    );
                    if matches!(recorded, Recorded::Run) {
                        Decision::Run(lease)
                    } else {
                        Decision::Hold(lease)
                    }
                }
                _ => Decision::Stored,
            },
            Recorded::Slot => match self.slots.get_mut(id) {
                Some(slot) => {
                    slot.expires_at = now + ttl;
                    Decision::Run(Lease::new(
                        scope.clone(),
                        id.clone(),
                        slot.fence,
                        LeaseKind::Slot,
                        ttl,
                    ))
                }
                None => Decision::Stored,
            },
            Recorded::WaitingForSlot => {
                if self.slot_waiters.contains_key(id) || self.slots.contains_key(id) {
                    Decision::WaitingForSlot
                } else {
                    Decision::Stored
                }
            }
            Recorded::Queued => Decision::Queued {
                depth: self.depth(),
            },
            Recorded::Pending => Decision::Pending { replaced: false },
            Recorded::Dropped(reason) => Decision::Dropped(reason),
            Recorded::Cancel => Decision::Duplicate,
        }
    }

    /// Applies the strategy to a new event; returns the decision and what to
    /// record with the dedupe mark.
    pub(crate) fn admit(
        &mut self,
        req: &AdmitRequest,
        now: Instant,
        next_fence: impl FnOnce() -> u64,
    ) -> (Decision, Recorded) {
        let (scope, id, lease_ttl) = (&req.scope, &req.id, req.lease_ttl);
        let (event, concurrency) = (Arc::clone(&req.event), req.concurrency);
        self.tidy(now);
        if let Concurrency::Concurrent(opts) = concurrency {
            let entry = Entry::new(event, now, None);
            self.slot_runs.insert(
                id.clone(),
                SlotRun {
                    entry,
                    concurrency: opts,
                    attempt: 1,
                    lapses: 0,
                    handed_back: false,
                },
            );
            if opts.max.is_none_or(|max| self.slots.len() < max) {
                let lease = self.take_slot(scope, id, lease_ttl, now, next_fence());
                return (Decision::Run(lease), Recorded::Slot);
            }
            self.slot_waiters.insert(id.clone(), now + lease_ttl);
            return (Decision::WaitingForSlot, Recorded::WaitingForSlot);
        }
        let free = self.live_lease(now).is_none();
        let left_over = free && self.has_work();
        match concurrency {
            Concurrency::Queue(opts) => {
                let entry = Entry::new(event, now, Some(opts.entry_ttl));
                if free {
                    let lease = self.grant(scope, id, now, lease_ttl, next_fence());
                    if !left_over {
                        self.inflight = Some(InFlight::first(id, entry, now));
                        return (Decision::Run(lease), Recorded::Run);
                    }
                    // Work outlived its holder: the new holder drains it first.
                    self.wait_for(&entry);
                    self.queue.push_back(entry);
                    return (Decision::Hold(lease), Recorded::Hold);
                }
                if self.queue.len() >= opts.max_size && opts.on_full == OnFull::DropNewest {
                    let reason = DropReason::QueueFull;
                    return (Decision::Dropped(reason), Recorded::Dropped(reason));
                }
                self.wait_for(&entry);
                self.queue.push_back(entry);
                if self.queue.len() > opts.max_size
                    && let Some(evicted) = self.queue.pop_front()
                {
                    self.outbox.push(evicted.report(Fate::Evicted));
                }
                (
                    Decision::Queued {
                        depth: self.queue.len(),
                    },
                    Recorded::Queued,
                )
            }
            Concurrency::Debounce(opts) => {
                let entry = Entry::new(event, now, Some(opts.entry_ttl));
                self.wait_for(&entry);
                let replaced = self.pending.replace(Pending {
                    entry,
                    ready_at: now + opts.interval,
                });
                if let Some(p) = &replaced {
                    // Never silently overwritten, also when its holder is gone.
                    self.outbox.push(p.entry.report(Fate::Superseded));
                }
                if free {
                    let lease = self.grant(scope, id, now, lease_ttl, next_fence());
                    (Decision::Hold(lease), Recorded::Hold)
                } else {
                    (
                        Decision::Pending {
                            replaced: replaced.is_some(),
                        },
                        Recorded::Pending,
                    )
                }
            }
            Concurrency::Burst(opts) => {
                let entry = Entry::new(event, now, Some(opts.entry_ttl));
                self.wait_for(&entry);
                match self.windows.back_mut() {
                    Some(open) if !open.sealed(now) => open.members.push(entry),
                    _ => self.windows.push_back(Window {
                        seals_at: now + opts.window,
                        full: false,
                        members: vec![entry],
                    }),
                }
                if let (Some(max), Some(open)) = (opts.max_batch, self.windows.back_mut()) {
                    open.full |= open.members.len() >= max;
                }
                if free {
                    let lease = self.grant(scope, id, now, lease_ttl, next_fence());
                    return (Decision::Hold(lease), Recorded::Hold);
                }
                (
                    Decision::Queued {
                        depth: self.waiting_in_windows(),
                    },
                    Recorded::Queued,
                )
            }
            // `Drop`, and any strategy added later: one handler, no waiting. Work
            // left by a holder that is gone counts as busy: the sweep adopts it.
            _ => {
                if free && !left_over {
                    let lease = self.grant(scope, id, now, lease_ttl, next_fence());
                    self.inflight = Some(InFlight::first(id, Entry::new(event, now, None), now));
                    (Decision::Run(lease), Recorded::Run)
                } else {
                    let reason = DropReason::Busy;
                    (Decision::Dropped(reason), Recorded::Dropped(reason))
                }
            }
        }
    }

    pub(crate) fn renew(&mut self, lease: &Lease, ttl: Duration, now: Instant) -> Renewal {
        self.tidy(now);
        match lease.kind() {
            LeaseKind::Slot => match self.slots.get_mut(lease.token()) {
                Some(slot) => {
                    slot.expires_at = now + ttl;
                    Renewal::Renewed {
                        cancel_requests: slot.cancels,
                    }
                }
                None => Renewal::Lost,
            },
            _ => match self.owned_by(lease.token(), now) {
                Some(held) => {
                    held.expires_at = now + ttl;
                    Renewal::Renewed {
                        cancel_requests: held.cancels,
                    }
                }
                None => Renewal::Lost,
            },
        }
    }

    /// Pops what is ready for the holder: every queued entry; the pending debounce
    /// event once quiet; the oldest sealed burst window.
    fn next(&mut self, now: Instant) -> Next {
        let next = if !self.queue.is_empty() {
            Next::Run(self.queue.drain(..).collect())
        } else if let Some(p) = &self.pending {
            if p.ready_at > now {
                Next::Wait(p.ready_at - now)
            } else {
                self.pending
                    .take()
                    .map_or(Next::Empty, |p| Next::Run(vec![p.entry]))
            }
        } else if let Some(b) = self.windows.front() {
            if b.sealed(now) {
                self.windows
                    .pop_front()
                    .map_or(Next::Empty, |b| Next::Run(b.members))
            } else {
                Next::Wait(b.seals_at - now)
            }
        } else {
            Next::Empty
        };
        if !self.has_waiting() {
            self.waiting_threads.clear();
        }
        next
    }

    fn ack(
        &mut self,
        acked: &mut Acked,
        token: &LeaseToken,
        seq: u64,
        now: Instant,
        ttl: Duration,
    ) {
        if self
            .inflight
            .as_ref()
            .is_some_and(|f| f.owner == *token && f.seq == seq)
        {
            self.inflight = None;
        }
        // A repeat of this call is answered `Released` for a while.
        acked.insert(token, seq, now + remembered(ttl));
    }

    pub(crate) fn finish(&mut self, lease: &Lease, now: Instant, acked: &mut Acked) -> Handoff {
        self.tidy(now);
        let token = lease.token();
        let seq = lease.seq();
        if lease.kind() == LeaseKind::Slot {
            let live = self.slots.remove(token).is_some();
            if live || self.slot_runs.contains_key(token) {
                self.slot_runs.remove(token);
                acked.insert(token, 0, now + remembered(lease.ttl()));
                return Handoff::Released;
            }
            return repeat_or_lost(acked, token, 0, now);
        }
        let replay = self
            .inflight
            .as_ref()
            .is_some_and(|f| f.owner == *token && f.seq == seq + 1);
        let Some(held) = self.owned_by(token, now) else {
            // A lapsed holder acknowledges the batch it finished, unless someone
            // adopted it since.
            if self
                .inflight
                .as_ref()
                .is_some_and(|f| f.owner == *token && f.seq == seq)
            {
                self.ack(acked, token, seq, now, lease.ttl());
                return Handoff::Released;
            }
            return repeat_or_lost(acked, token, seq, now);
        };
        if held.seq == seq + 1 {
            // A repeat whose first run handed over batch seq + 1: the same
            // again, extended as the first answer did.
            if !replay {
                return Handoff::Lost;
            }
            held.expires_at = now + lease.ttl();
            return self
                .inflight
                .as_ref()
                .map_or(Handoff::Lost, |f| Handoff::Run(f.batch()));
        }
        if held.seq != seq {
            return Handoff::Lost;
        }
        held.expires_at = now + lease.ttl();
        self.ack(acked, token, seq, now, lease.ttl());
        if let Some(orphan) = self.inflight.as_mut() {
            // Left by a holder that is gone: it runs again, first.
            orphan.adopt(token, seq + 1);
            let batch = orphan.batch();
            self.hand_out(seq + 1);
            return Handoff::Run(batch);
        }
        let (entries, wait) = match self.next(now) {
            Next::Run(entries) => (entries, None),
            Next::Wait(d) => (Vec::new(), Some(d)),
            Next::Empty => (Vec::new(), None),
        };
        if entries.is_empty() {
            // Reports go out with the next batch; alone only before a release.
            if let Some(d) = wait {
                return Handoff::Wait(d);
            }
            if self.outbox.is_empty() {
                self.lease = None;
                return Handoff::Released;
            }
        }
        let inflight = InFlight {
            owner: token.clone(),
            seq: seq + 1,
            attempt: 1,
            lapses: 0,
            handed_back: false,
            handed_at: now,
            entries,
            reports: std::mem::take(&mut self.outbox),
        };
        let batch = inflight.batch();
        self.inflight = Some(inflight);
        self.hand_out(seq + 1);
        Handoff::Run(batch)
    }

    fn hand_out(&mut self, seq: u64) {
        if let Some(held) = self.lease.as_mut() {
            held.seq = seq;
            held.cancels = 0;
        }
    }

    pub(crate) fn release(
        &mut self,
        lease: &Lease,
        how: Release,
        now: Instant,
        acked: &mut Acked,
    ) -> bool {
        self.tidy(now);
        let token = lease.token();
        if lease.kind() == LeaseKind::Slot {
            let live = self.slots.remove(token).is_some();
            self.slot_waiters.remove(token);
            return match how {
                Release::HandBack => match self.slot_runs.get_mut(token) {
                    Some(run) => {
                        run.handed_back = true;
                        true
                    }
                    None => live,
                },
                _ => {
                    let done = self.slot_runs.remove(token).is_some();
                    if done {
                        acked.insert(token, 0, now + remembered(lease.ttl()));
                    }
                    live || done || acked.contains(token, 0, now)
                }
            };
        }
        let seq = lease.seq();
        let own = self
            .inflight
            .as_ref()
            .is_some_and(|f| f.owner == *token && f.seq == seq);
        let held = self.owned_by(token, now).is_some();
        let mut answer = own || held;
        match how {
            Release::HandBack => {
                if let (true, Some(f)) = (own, self.inflight.as_mut()) {
                    f.handed_back = true;
                }
            }
            _ => {
                answer |= acked.contains(token, seq, now);
                if own || held {
                    self.ack(acked, token, seq, now, lease.ttl());
                }
            }
        }
        if held {
            self.lease = None;
        }
        answer
    }

    fn take_slot(
        &mut self,
        scope: &ScopeKey,
        token: &LeaseToken,
        ttl: Duration,
        now: Instant,
        fence: u64,
    ) -> Lease {
        self.slots.insert(
            token.clone(),
            Slot {
                expires_at: now + ttl,
                fence,
                cancels: 0,
            },
        );
        Lease::new(scope.clone(), token.clone(), fence, LeaseKind::Slot, ttl)
    }

    pub(crate) fn acquire_slot(
        &mut self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
        now: Instant,
        next_fence: impl FnOnce() -> u64,
    ) -> SlotGrant {
        self.tidy(now);
        if let Some(slot) = self.slots.get_mut(token) {
            slot.expires_at = now + ttl;
            return SlotGrant::Granted(Lease::new(
                scope.clone(),
                token.clone(),
                slot.fence,
                LeaseKind::Slot,
                ttl,
            ));
        }
        if !self.slot_waiters.contains_key(token) {
            return SlotGrant::Gone;
        }
        if max.is_some_and(|max| self.slots.len() >= max) {
            self.slot_waiters.insert(token.clone(), now + ttl);
            return SlotGrant::Full;
        }
        self.slot_waiters.remove(token);
        SlotGrant::Granted(self.take_slot(scope, token, ttl, now, next_fence()))
    }

    /// Records a stop request on whoever holds the scope; the lease's count after
    /// it, or `None` if nobody holds it.
    pub(crate) fn request_cancel(&mut self, now: Instant) -> Option<u32> {
        self.tidy(now);
        if let Some(held) = self.live_lease(now) {
            held.cancels += 1;
            return Some(held.cancels);
        }
        let mut count = None;
        for slot in self.slots.values_mut() {
            slot.cancels += 1;
            count = Some(count.unwrap_or(0).max(slot.cancels));
        }
        count
    }

    /// The scope's current stop-request count (a repeated cancel request).
    pub(crate) fn cancel_count(&mut self, now: Instant) -> u32 {
        self.tidy(now);
        if let Some(held) = self.live_lease(now) {
            return held.cancels;
        }
        self.slots.values().map(|s| s.cancels).max().unwrap_or(0)
    }

    /// Recovery: the scope's runs without a holder, each given to a new token.
    pub(crate) fn recover(
        &mut self,
        scope: &ScopeKey,
        ttl: Duration,
        room: usize,
        now: Instant,
        mut next_fence: impl FnMut() -> u64,
    ) -> Vec<Recovered> {
        self.tidy(now);
        let mut out = Vec::new();
        if room == 0 {
            return out;
        }
        if self.live_lease(now).is_none() && self.has_work() {
            let token = LeaseToken::generate();
            let lease = self.grant(scope, &token, now, ttl, next_fence());
            out.push(Recovered::Scope(lease));
        }
        for old in self.slot_orphans() {
            if out.len() >= room {
                break;
            }
            let Some(mut run) = self.slot_runs.remove(&old) else {
                continue;
            };
            run.attempt += 1;
            run.lapses += u32::from(!run.handed_back);
            run.handed_back = false;
            let token = LeaseToken::generate();
            let batch = Batch::new(0, vec![run.entry.waiting(now)], Vec::new())
                .attempts(run.attempt, run.lapses);
            self.slot_waiters.insert(token.clone(), now + ttl);
            let concurrency = run.concurrency;
            self.slot_runs.insert(token.clone(), run);
            out.push(Recovered::Slot {
                scope: scope.clone(),
                token,
                batch,
                concurrency,
            });
        }
        out
    }

    /// Whether the sweep has anything to recover here.
    pub(crate) fn needs_recovery(&mut self, now: Instant) -> bool {
        self.tidy(now);
        (self.live_lease(now).is_none() && self.has_work()) || !self.slot_orphans().is_empty()
    }
}

/// How long an acknowledgement is remembered for a repeat of its call: two
/// lease TTLs, and at least a minute (a caller may take several client
/// timeouts to get through to the backend again).
fn remembered(ttl: Duration) -> Duration {
    (ttl * 2).max(Duration::from_secs(60))
}

impl InFlight {
    fn first(owner: &LeaseToken, entry: Entry, now: Instant) -> Self {
        Self {
            owner: owner.clone(),
            seq: 0,
            attempt: 1,
            lapses: 0,
            handed_back: false,
            handed_at: now,
            entries: vec![entry],
            reports: Vec::new(),
        }
    }
}

/// The answer to a finish whose token no longer holds its batch: `Released` if
/// that batch was acknowledged moments ago (a repeat), `Lost` otherwise.
fn repeat_or_lost(acked: &Acked, token: &LeaseToken, seq: u64, now: Instant) -> Handoff {
    if acked.contains(token, seq, now) {
        Handoff::Released
    } else {
        Handoff::Lost
    }
}
