//! [`Coordination`]: the protocol that serializes work across replicas —
//! admission, leases, hand-off, slots, stop requests and recovery.

use super::*;

/// The coordination protocol (see the [module docs](super)): every method is
/// one atomic step, and every method that changes state is safe to repeat with
/// the same arguments. Part of every [`StateBackend`].
#[async_trait]
pub trait Coordination: Send + Sync + 'static {
    /// The ack path in one step. In order:
    ///
    /// 1. The request's scope tag must equal the event thread's, else
    ///    [`StateError::InvalidRequest`].
    /// 2. The event's dedupe key is marked: by this same request
    ///    ([`AdmitRequest::id`]) → its recorded decision again (`Run` / `Hold`
    ///    only while the lease it granted is still the request's at batch 0,
    ///    otherwise [`Decision::Stored`]), changing nothing; by another request
    ///    → [`Decision::Duplicate`].
    /// 3. [`Gate::Subscribed`], the thread is not subscribed and no work of the
    ///    thread waits on the scope → [`Decision::NotSubscribed`].
    /// 4. Burst at `max_waiting` → [`Decision::Full`].
    /// 5. Otherwise the dedupe key is marked for `dedupe_ttl` with the request's
    ///    id and decision, and the strategy decides:
    ///    * lease free and nothing left on the scope: drop and queue → `Run`
    ///      (the event stored in flight as batch 0 of the new lease, whose token
    ///      is the request's id and whose fence is above every earlier one);
    ///      debounce and burst → `Hold` (the event stored as pending / in a
    ///      window).
    ///    * lease free with work left on the scope (waiting entries, an
    ///      in-flight batch or reports of a holder that is gone): queue,
    ///      debounce, burst → store the event as usual and `Hold`; drop →
    ///      `Dropped(Busy)` (the recovery sweep adopts the batch). A debounce
    ///      event still pending is replaced and reported `Superseded`.
    ///    * lease held: drop → `Dropped(Busy)`; queue → append (`DropOldest`
    ///      evicts the oldest past `max_size` and reports it `Evicted`;
    ///      `DropNewest` answers `Dropped(QueueFull)`); debounce → replace the
    ///      pending event (reported `Superseded`) and restart the quiet interval
    ///      (`Pending`); burst → join the open window, or open a new one
    ///      (`Queued`), sealing it at `max_batch` members.
    ///    * concurrent: a free slot (always, when unbounded) → `Run` with a slot
    ///      lease whose token is the request's id, the event stored in flight
    ///      under it; else `WaitingForSlot`, the event stored under the id.
    ///      Either way the run's record keeps the request's
    ///      [`ConcurrentOptions`], which recovery hands back with the run
    ///      ([`Recovered::Slot`]).
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError>;

    /// Extends the lease (or slot) by `ttl` if its token still owns it. Never
    /// resurrects an expired lease: once it lapsed, the answer is `Lost` even if
    /// nobody took the scope.
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError>;

    /// Acknowledges the holder's batch ([`Lease::seq`]) and hands over the next,
    /// in one step (see [`Handoff`]). In detail:
    ///
    /// * the token owns the lease at this seq: delete the batch's in-flight
    ///   record; then adopt an in-flight batch another holder left (attempt + 1),
    ///   or take what is ready (plus the outbox's reports) as batch `seq + 1` —
    ///   `Run`; or `Wait` when entries wait that are not ready; or delete the
    ///   lease — `Released`. Clears the lease's stop requests when it hands over
    ///   a batch.
    /// * the token owns the lease at `seq + 1`, holding the batch this call
    ///   handed over before (its reply was lost): that batch again.
    /// * the token no longer owns the lease: if the batch is still in flight
    ///   under the token, delete it (a lapsed holder that did finish its batch)
    ///   — `Released`; if the token's batch at this seq was acknowledged
    ///   within the last minute (or two TTLs, if longer), `Released` again;
    ///   otherwise `Lost`.
    ///
    /// A slot lease's run is acknowledged and its slot freed: `Released` (`Lost`
    /// when the slot had lapsed and its run was adopted).
    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError>;

    /// Gives the lease (or slot) up **without** taking waiting entries
    /// (shutdown): they stay for the next admit on the scope or a
    /// [`sweep`](Self::sweep), so another replica takes over at once. The batch
    /// the holder holds is acknowledged ([`Release::Done`]) or left in flight
    /// for the next holder ([`Release::HandBack`]). Returns whether the token
    /// still owned the scope.
    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError>;

    /// Removes a dedupe mark, so a platform retry of the event runs (sync dispatch,
    /// after a handler failed before the acknowledgement). Returns whether a mark
    /// was removed.
    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError>;

    /// For an event that got [`Decision::WaitingForSlot`] (with the admit
    /// request's id as `token`), or a slot run from [`Recovered::Slot`]: takes
    /// one of `max` slots of `scope` (`None`: unbounded) if one is free. A repeat
    /// after the slot was granted returns the same grant.
    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError>;

    /// A control event: dedupe it, and record a stop request on the scope's current
    /// lease (or every live slot), which its holder learns from its next
    /// [`renew`](Self::renew).
    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError>;

    /// Recovery: finds up to [`limit`](Sweep::limit) runs whose holder is
    /// gone — scopes with waiting, in-flight or reported work and no lease;
    /// slot runs whose slot or reservation lapsed — and gives each to the
    /// caller (see [`Recovered`]), leased for [`lease_ttl`](Sweep::lease_ttl).
    ///
    /// Fair: scopes of a tenant in [`skip_tenants`](Sweep::skip_tenants) are
    /// not claimed (the caller has no room for them), and when more runs wait
    /// than `limit`, successive sweeps do not start from the same ones, so
    /// one tenant's backlog cannot starve everyone else's recovery.
    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError>;
}
