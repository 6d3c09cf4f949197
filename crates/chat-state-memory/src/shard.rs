//! One shard: the dedupe marks, subscriptions and scope records of the scope tags
//! that hash to it. Every method runs inside the shard's lock.

use foldhash::HashMap;
use std::time::Duration;

use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, Concurrency, Decision, DedupeKey,
    ForceRelease, Gate, Handoff, Lease, LeaseToken, Platform, Recovered, Release, Renewal,
    ScopeFilter, ScopeKey, ScopeTag, ScopeView, SlotGrant, StateError, Sweep, TenantId, ThreadRef,
};
use tokio::time::Instant;

use crate::acked::Acked;
use crate::marks::{Marks, Seen};
use crate::scope::{Recorded, ScopeState};

#[derive(Debug, Default)]
pub(crate) struct Shard {
    /// Dedupe marks, 32 bytes each (see [`Marks`]).
    marks: Marks,
    /// Subscribed threads, with when each subscription lapses.
    subscriptions: HashMap<ThreadRef, Instant>,
    scopes: HashMap<ScopeKey, ScopeState>,
    acked: Acked,
}

impl Shard {
    pub(crate) fn unmark(&mut self, tag: ScopeTag<'_>, key: &DedupeKey, now: Instant) -> bool {
        let slot = self.marks.slot(tag, key);
        self.marks.remove(slot, now)
    }

    /// Drops the scope's record once nothing is left in it.
    fn tidy(&mut self, scope: &ScopeKey, now: Instant) {
        if self.scopes.get_mut(scope).is_some_and(|s| s.is_idle(now)) {
            self.scopes.remove(scope);
        }
    }

    pub(crate) fn admit(
        &mut self,
        req: &AdmitRequest,
        now: Instant,
        next_fence: impl FnOnce() -> u64,
    ) -> Result<Admission, StateError> {
        validate(&req.concurrency)?;
        self.marks.purge(now);
        // Activity keeps a live subscription alive: renewed in place, in the
        // lookup that finds it.
        let subscribed = match self.subscriptions.get_mut(&req.event.thread) {
            Some(until) if *until > now => {
                *until = now + req.subscription_ttl;
                true
            }
            _ => false,
        };
        let slot = self.marks.slot(req.scope.tag(), &req.event.dedupe_key);
        match self.marks.seen(slot, &req.id, now) {
            None => {}
            Some(Seen::Other) => return Ok(Admission::new(Decision::Duplicate, subscribed)),
            Some(Seen::Same(recorded)) => {
                let state = self.scopes.entry(req.scope.clone()).or_default();
                let decision = state.replay(&req.scope, &req.id, recorded, req.lease_ttl, now);
                self.tidy(&req.scope, now);
                return Ok(Admission::new(decision, subscribed));
            }
        }
        let in_progress = self
            .scopes
            .get(&req.scope)
            .is_some_and(|s| s.thread_waits(&req.event.thread.thread));
        if req.gate == Gate::Subscribed && !subscribed && !in_progress {
            return Ok(Admission::new(Decision::NotSubscribed, subscribed));
        }
        let state = self.scopes.entry(req.scope.clone()).or_default();
        if let Concurrency::Burst(opts) = req.concurrency
            && state.waiting_in_windows() >= opts.max_waiting
        {
            self.tidy(&req.scope, now);
            return Ok(Admission::new(Decision::Full, subscribed));
        }
        let (decision, recorded) = state.admit(req, now, next_fence);
        self.marks.set(slot, req.dedupe_ttl, now, &req.id, recorded);
        self.tidy(&req.scope, now);
        Ok(Admission::new(decision, subscribed))
    }

    pub(crate) fn renew(&mut self, lease: &Lease, ttl: Duration, now: Instant) -> Renewal {
        match self.scopes.get_mut(lease.scope()) {
            Some(state) => state.renew(lease, ttl, now),
            None => Renewal::Lost,
        }
    }

    pub(crate) fn finish(&mut self, lease: &Lease, now: Instant) -> Handoff {
        self.acked.purge(now);
        let handoff = match self.scopes.get_mut(lease.scope()) {
            Some(state) => state.finish(lease, now, &mut self.acked),
            None if self.acked.contains(lease.token(), lease.seq(), now) => Handoff::Released,
            None => Handoff::Lost,
        };
        self.tidy(lease.scope(), now);
        handoff
    }

    pub(crate) fn release(&mut self, lease: &Lease, how: Release, now: Instant) -> bool {
        self.acked.purge(now);
        let released = match self.scopes.get_mut(lease.scope()) {
            Some(state) => state.release(lease, how, now, &mut self.acked),
            None => how == Release::Done && self.acked.contains(lease.token(), lease.seq(), now),
        };
        self.tidy(lease.scope(), now);
        released
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
        let grant = match self.scopes.get_mut(scope) {
            Some(state) => state.acquire_slot(scope, token, max, ttl, now, next_fence),
            None => SlotGrant::Gone,
        };
        self.tidy(scope, now);
        grant
    }

    pub(crate) fn request_cancel(&mut self, req: &CancelRequest, now: Instant) -> CancelOutcome {
        self.marks.purge(now);
        let slot = self.marks.slot(req.scope.tag(), &req.dedupe_key);
        if let Some(seen) = self.marks.seen(slot, &req.id, now) {
            if !matches!(seen, Seen::Same(Recorded::Cancel)) {
                return CancelOutcome::Duplicate;
            }
            let count = self
                .scopes
                .get_mut(&req.scope)
                .map_or(0, |s| s.cancel_count(now));
            return CancelOutcome::Recorded { count };
        }
        self.marks
            .set(slot, req.dedupe_ttl, now, &req.id, Recorded::Cancel);
        match self
            .scopes
            .get_mut(&req.scope)
            .and_then(|state| state.request_cancel(now))
        {
            Some(count) => CancelOutcome::Recorded { count },
            None => CancelOutcome::NoHolder,
        }
    }

    /// Subscribes `thread` until `now + ttl`. A thread already subscribed
    /// (a conversation's every turn renews it) has its expiry set in place,
    /// without a copy of its identity.
    pub(crate) fn subscribe(&mut self, thread: &ThreadRef, ttl: Duration, now: Instant) {
        match self.subscriptions.get_mut(thread) {
            Some(until) => *until = now + ttl,
            None => {
                self.subscriptions.insert(thread.clone(), now + ttl);
            }
        }
    }

    /// Unsubscribes; whether a live subscription was removed.
    pub(crate) fn unsubscribe(&mut self, thread: &ThreadRef, now: Instant) -> bool {
        self.subscriptions
            .remove(thread)
            .is_some_and(|until| until > now)
    }

    /// Removes every subscription of `tenant`; how many were live.
    pub(crate) fn unsubscribe_tenant(
        &mut self,
        platform: Platform,
        tenant: &TenantId,
        now: Instant,
    ) -> u64 {
        let mut removed = 0;
        self.subscriptions.retain(|thread, until| {
            let theirs = thread.platform == platform && thread.tenant == *tenant;
            if theirs && *until > now {
                removed += 1;
            }
            !theirs
        });
        removed
    }

    /// Whether `thread` is subscribed at `now`.
    pub(crate) fn is_subscribed(&self, thread: &ThreadRef, now: Instant) -> bool {
        self.subscriptions
            .get(thread)
            .is_some_and(|until| *until > now)
    }

    /// The scopes here with runs to recover that `request` wants.
    pub(crate) fn recoverable(&mut self, request: &Sweep, now: Instant) -> Vec<ScopeKey> {
        self.subscriptions.retain(|_, until| *until > now);
        self.scopes
            .iter_mut()
            .filter_map(|(scope, state)| {
                (request.wants(scope) && state.needs_recovery(now)).then(|| scope.clone())
            })
            .collect()
    }

    /// Recovers up to `room` runs of `scope`.
    pub(crate) fn recover(
        &mut self,
        scope: &ScopeKey,
        ttl: Duration,
        room: usize,
        now: Instant,
        next_fence: impl FnMut() -> u64,
    ) -> Vec<Recovered> {
        match self.scopes.get_mut(scope) {
            Some(state) => state.recover(scope, ttl, room, now, next_fence),
            None => Vec::new(),
        }
    }
}

impl Shard {
    /// This shard's busy scopes that pass `filter`, at most `limit`.
    pub(crate) fn busy_scopes(
        &mut self,
        filter: &ScopeFilter,
        limit: usize,
        now: Instant,
    ) -> Vec<ScopeView> {
        let mut out = Vec::new();
        for (scope, state) in &mut self.scopes {
            if out.len() >= limit {
                break;
            }
            if filter.matches(scope)
                && let Some(view) = state.view(scope, now)
            {
                out.push(view);
            }
        }
        out
    }

    pub(crate) fn inspect_scope(&mut self, scope: &ScopeKey, now: Instant) -> Option<ScopeView> {
        self.scopes.get_mut(scope)?.view(scope, now)
    }

    pub(crate) fn force_release(
        &mut self,
        scope: &ScopeKey,
        fence: u64,
        now: Instant,
    ) -> ForceRelease {
        let released = self
            .scopes
            .get_mut(scope)
            .map_or(ForceRelease::Stale, |s| s.force_release(fence, now));
        self.tidy(scope, now);
        released
    }
}

fn validate(c: &Concurrency) -> Result<(), StateError> {
    c.validate()
        .map_err(|e| StateError::InvalidRequest(e.as_str()))
}
