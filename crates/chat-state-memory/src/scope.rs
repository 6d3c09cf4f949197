//! One scope's record: its lease, and whatever waits on it under the strategy in
//! use (a queue, a pending debounce event, burst batches, concurrency slots).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    Concurrency, Decision, DropReason, Event, Handoff, Lease, LeaseKind, LeaseToken, OnFull,
    Renewal, ScopeKey, Take, Waiting,
};
use tokio::time::Instant;

#[derive(Debug)]
struct Held {
    token: LeaseToken,
    expires_at: Instant,
    cancel_requested: bool,
}

#[derive(Debug)]
struct Entry {
    event: Arc<Event>,
    admitted_at: Instant,
    /// Queue entries only: after this the entry is `Expired`.
    expires_at: Option<Instant>,
}

impl Entry {
    fn new(event: Arc<Event>, now: Instant, ttl: Option<Duration>) -> Self {
        Self {
            event,
            admitted_at: now,
            expires_at: ttl.map(|ttl| now + ttl),
        }
    }

    fn waiting(self, now: Instant) -> Waiting {
        let expired = self.expires_at.is_some_and(|t| t <= now);
        Waiting::new(self.event, now - self.admitted_at, expired)
    }
}

#[derive(Debug)]
struct Pending {
    entry: Entry,
    /// The quiet interval ends here unless another event replaces this one.
    ready_at: Instant,
}

#[derive(Debug)]
struct Batch {
    /// The window's fixed end.
    seals_at: Instant,
    /// Sealed early by `max_batch`.
    full: bool,
    members: Vec<Entry>,
}

impl Batch {
    fn sealed(&self, now: Instant) -> bool {
        self.full || self.seals_at <= now
    }
}

#[derive(Debug)]
struct Slot {
    expires_at: Instant,
    cancel_requested: bool,
}

#[derive(Debug, Default)]
pub(crate) struct ScopeState {
    lease: Option<Held>,
    queue: VecDeque<Entry>,
    pending: Option<Pending>,
    batches: VecDeque<Batch>,
    slots: HashMap<LeaseToken, Slot>,
}

/// What `finish` and `take` found ready.
enum Next {
    Run(Vec<Waiting>),
    Wait(Duration),
    Empty,
}

impl ScopeState {
    fn live_lease(&mut self, now: Instant) -> Option<&mut Held> {
        // Expired == absent, as with Redis `PX`.
        if self.lease.as_ref().is_some_and(|l| l.expires_at <= now) {
            self.lease = None;
        }
        self.lease.as_mut()
    }

    fn owned_by(&mut self, lease: &Lease, now: Instant) -> Option<&mut Held> {
        self.live_lease(now).filter(|h| h.token == *lease.token())
    }

    fn has_waiting(&self) -> bool {
        !self.queue.is_empty() || self.pending.is_some() || !self.batches.is_empty()
    }

    pub(crate) fn waiting_in_batches(&self) -> usize {
        self.batches.iter().map(|b| b.members.len()).sum()
    }

    pub(crate) fn is_idle(&mut self, now: Instant) -> bool {
        self.slots.retain(|_, s| s.expires_at > now);
        self.live_lease(now).is_none() && !self.has_waiting() && self.slots.is_empty()
    }

    /// Waiting entries, and nobody holding the scope to run them.
    pub(crate) fn is_orphaned(&mut self, now: Instant) -> bool {
        self.live_lease(now).is_none() && self.has_waiting()
    }

    pub(crate) fn grant(
        &mut self,
        scope: &ScopeKey,
        ttl: Duration,
        now: Instant,
        fence: u64,
    ) -> Lease {
        let token = LeaseToken::generate();
        self.lease = Some(Held {
            token: token.clone(),
            expires_at: now + ttl,
            cancel_requested: false,
        });
        Lease::new(scope.clone(), token, fence, LeaseKind::Exclusive, ttl)
    }

    pub(crate) fn admit(
        &mut self,
        scope: &ScopeKey,
        event: Arc<Event>,
        concurrency: Concurrency,
        lease_ttl: Duration,
        now: Instant,
        next_fence: impl FnOnce() -> u64,
    ) -> Decision {
        if let Concurrency::Concurrent(opts) = concurrency {
            let Some(max) = opts.max else {
                return Decision::Unlocked;
            };
            return match self.acquire_slot(scope, max, lease_ttl, now, next_fence) {
                Some(lease) => Decision::Run(lease),
                None => Decision::WaitingForSlot,
            };
        }
        let free = self.live_lease(now).is_none();
        match concurrency {
            Concurrency::Queue(opts) => {
                let entry = Entry::new(event, now, Some(opts.entry_ttl));
                if free {
                    let lease = self.grant(scope, lease_ttl, now, next_fence());
                    if self.queue.is_empty() {
                        return Decision::Run(lease);
                    }
                    // Entries outlived their holder: the new holder drains them
                    // together with this event.
                    self.queue.push_back(entry);
                    return Decision::Hold {
                        lease,
                        superseded: None,
                    };
                }
                if self.queue.len() >= opts.max_size && opts.on_full == OnFull::DropNewest {
                    return Decision::Dropped(DropReason::QueueFull);
                }
                self.queue.push_back(entry);
                let evicted = (self.queue.len() > opts.max_size)
                    .then(|| self.queue.pop_front())
                    .flatten()
                    .map(|e| e.waiting(now));
                Decision::Queued {
                    depth: self.queue.len(),
                    evicted,
                }
            }
            Concurrency::Debounce(opts) => {
                let replaced = self.pending.replace(Pending {
                    entry: Entry::new(event, now, None),
                    ready_at: now + opts.interval,
                });
                let superseded = replaced.map(|p| p.entry.waiting(now));
                if free {
                    // A pending event under a free lease is the orphan of a dead
                    // or paused holder: it is superseded, never silently lost.
                    let lease = self.grant(scope, lease_ttl, now, next_fence());
                    Decision::Hold { lease, superseded }
                } else {
                    Decision::Pending { superseded }
                }
            }
            Concurrency::Burst(opts) => {
                let entry = Entry::new(event, now, None);
                match self.batches.back_mut() {
                    Some(open) if !open.sealed(now) => open.members.push(entry),
                    _ => self.batches.push_back(Batch {
                        seals_at: now + opts.window,
                        full: false,
                        members: vec![entry],
                    }),
                }
                if let (Some(max), Some(open)) = (opts.max_batch, self.batches.back_mut()) {
                    open.full |= open.members.len() >= max;
                }
                if free {
                    let lease = self.grant(scope, lease_ttl, now, next_fence());
                    return Decision::Hold {
                        lease,
                        superseded: None,
                    };
                }
                Decision::Queued {
                    depth: self.waiting_in_batches(),
                    evicted: None,
                }
            }
            // `Drop`, and any strategy added later: one handler, no waiting.
            _ => {
                if free {
                    Decision::Run(self.grant(scope, lease_ttl, now, next_fence()))
                } else {
                    Decision::Dropped(DropReason::Busy)
                }
            }
        }
    }

    pub(crate) fn renew(&mut self, lease: &Lease, ttl: Duration, now: Instant) -> Renewal {
        match lease.kind() {
            LeaseKind::Slot => match self.slots.get_mut(lease.token()) {
                Some(slot) if slot.expires_at > now => {
                    slot.expires_at = now + ttl;
                    Renewal::Renewed {
                        cancel_requested: slot.cancel_requested,
                    }
                }
                _ => Renewal::Lost,
            },
            _ => match self.owned_by(lease, now) {
                Some(held) => {
                    held.expires_at = now + ttl;
                    Renewal::Renewed {
                        cancel_requested: held.cancel_requested,
                    }
                }
                None => Renewal::Lost,
            },
        }
    }

    /// Pops what is ready for the holder: every queued entry; the pending debounce
    /// event once quiet; the oldest sealed burst batch.
    fn next(&mut self, now: Instant) -> Next {
        if !self.queue.is_empty() {
            return Next::Run(self.queue.drain(..).map(|e| e.waiting(now)).collect());
        }
        if let Some(p) = &self.pending {
            if p.ready_at > now {
                return Next::Wait(p.ready_at - now);
            }
            return match self.pending.take() {
                Some(p) => Next::Run(vec![p.entry.waiting(now)]),
                None => Next::Empty,
            };
        }
        if let Some(b) = self.batches.front() {
            if !b.sealed(now) {
                return Next::Wait(b.seals_at - now);
            }
            return match self.batches.pop_front() {
                Some(b) => Next::Run(b.members.into_iter().map(|e| e.waiting(now)).collect()),
                None => Next::Empty,
            };
        }
        Next::Empty
    }

    pub(crate) fn finish(&mut self, lease: &Lease, now: Instant) -> Handoff {
        if lease.kind() == LeaseKind::Slot {
            return match self.slots.remove(lease.token()) {
                Some(slot) if slot.expires_at > now => Handoff::Released,
                _ => Handoff::Lost,
            };
        }
        let Some(held) = self.owned_by(lease, now) else {
            return Handoff::Lost;
        };
        held.cancel_requested = false;
        held.expires_at = now + lease.ttl();
        match self.next(now) {
            Next::Run(entries) => Handoff::Run(entries),
            Next::Wait(d) => Handoff::Wait(d),
            Next::Empty => {
                self.lease = None;
                Handoff::Released
            }
        }
    }

    pub(crate) fn release(&mut self, lease: &Lease, now: Instant) -> bool {
        if lease.kind() == LeaseKind::Slot {
            return self
                .slots
                .remove(lease.token())
                .is_some_and(|s| s.expires_at > now);
        }
        if self.owned_by(lease, now).is_none() {
            return false;
        }
        self.lease = None;
        true
    }

    pub(crate) fn take(&mut self, lease: &Lease, now: Instant) -> Take {
        if lease.kind() == LeaseKind::Slot {
            return Take::Empty;
        }
        let Some(held) = self.owned_by(lease, now) else {
            return Take::Lost;
        };
        held.expires_at = now + lease.ttl();
        match self.next(now) {
            Next::Run(entries) => Take::Run(entries),
            Next::Wait(d) => Take::Wait(d),
            Next::Empty => Take::Empty,
        }
    }

    pub(crate) fn acquire_slot(
        &mut self,
        scope: &ScopeKey,
        max: usize,
        ttl: Duration,
        now: Instant,
        next_fence: impl FnOnce() -> u64,
    ) -> Option<Lease> {
        self.slots.retain(|_, s| s.expires_at > now);
        if self.slots.len() >= max {
            return None;
        }
        let token = LeaseToken::generate();
        self.slots.insert(
            token.clone(),
            Slot {
                expires_at: now + ttl,
                cancel_requested: false,
            },
        );
        Some(Lease::new(
            scope.clone(),
            token,
            next_fence(),
            LeaseKind::Slot,
            ttl,
        ))
    }

    /// Records a stop request on whoever holds the scope; `false` if nobody does.
    pub(crate) fn request_cancel(&mut self, now: Instant) -> bool {
        if let Some(held) = self.live_lease(now) {
            held.cancel_requested = true;
            return true;
        }
        let mut any = false;
        for slot in self.slots.values_mut().filter(|s| s.expires_at > now) {
            slot.cancel_requested = true;
            any = true;
        }
        any
    }
}
