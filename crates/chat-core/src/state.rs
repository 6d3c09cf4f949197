//! The [`StateBackend`] contract: everything the runtime needs from shared state.
//!
//! # The protocol
//!
//! Every method is **one atomic step** on the backend (one Lua script on Redis, one
//! critical section in memory). The runtime never composes two of them into a
//! decision another replica could interleave with; that is what keeps every
//! accepted event accounted for across replicas.
//!
//! * [`admit`](StateBackend::admit) is the whole ack path in one call: check and mark
//!   the dedupe key, check the subscription gate, and apply the scope's
//!   [`Concurrency`] strategy — grant the lease, or record the event as queued /
//!   pending / joined, or refuse it. A refusal that must let the platform retry
//!   ([`Decision::Full`], [`Decision::NotSubscribed`]) leaves the dedupe key
//!   unmarked.
//! * A [`Lease`] carries an unguessable token and a fencing number that grows with
//!   every grant on the scope. Every later call checks the token: a stale holder
//!   can neither renew nor finish once the lease expired or passed to someone
//!   else, and such a call changes nothing.
//! * [`finish`](StateBackend::finish) is release-or-handoff in one step: if entries
//!   wait on the scope, the holder keeps the lease and gets them (or is told how
//!   long until they are ready); otherwise the lease is deleted. As two steps (take,
//!   then release) an entry admitted in between would be stranded.
//! * Expiry (leases, dedupe marks, queue entries, debounce quiet periods, burst
//!   windows) is judged by the backend's clock, never by the caller's.
//!
//! # Durable runs
//!
//! An accepted event is never kept only in a caller's memory, nor only in a
//! reply:
//!
//! * **Every event runs from an in-flight record.** The event a `Run` admission
//!   grants is stored in flight under the new lease (or slot); entries handed over
//!   by `finish` are *moved* in flight, as [`Batch`] number `seq + 1` of the
//!   lease. The record stays until the holder acknowledges it: the next `finish`
//!   (or a [`Release::Done`]). A holder that dies, is killed, pauses past its TTL
//!   or hands its batch back ([`Release::HandBack`]) leaves the record behind,
//!   and the next holder of the scope — through the next admit that finds the
//!   lease free, or the recovery [`sweep`](StateBackend::sweep) — **adopts** it:
//!   the batch is handed over again, its [`attempt`](Batch::attempt) one higher.
//! * **Outcomes decided for other events go to the scope's outbox**, not only
//!   into a reply: an entry evicted from a full queue, a debounce event replaced
//!   by a newer one. The outbox is handed to the holder with its next batch, as
//!   [`Report`]s.
//! * **Every call is safe to lose and safe to repeat.** A call carries an
//!   identity: an admit its [`AdmitRequest::id`] (which is also the token of the
//!   lease it may grant), a finish or release the lease token and the number of
//!   the batch it acknowledges. Running the same call again returns the same
//!   answer and changes nothing more; an older call changes nothing. So a caller
//!   whose reply was lost (a timeout, a dropped connection, a client that sent the
//!   request twice) repeats the call with the same identity until it gets an
//!   answer.
//!
//! The executable specification of this protocol is the model checker in the
//! repository's `model/` crate (`cargo test -p chat-model`): it explores every
//! interleaving of admits, finishes, renewals, expiry, crashes, pauses, sweeps,
//! lost replies, repeated calls and shutdown for small bounds. `chat-testkit`'s
//! conformance suite checks every backend against the same rules.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rand::RngCore;

use crate::concurrency::{Concurrency, ConcurrentOptions};
use crate::error::StateError;
use crate::event::Event;
use crate::id::{DedupeKey, EventId, Platform, ScopeKey, TenantId, ThreadRef};
use crate::inspect::{ForceRelease, ScopeFilter, ScopeView};
use crate::kv::KvStore;

/// Whether an event needs its thread to be subscribed before it is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Gate {
    /// A handler wants the event whatever the subscription (a mention, a DM, a
    /// regex match, a command, an action).
    #[default]
    Open,
    /// A plain message: admitted only if its thread is subscribed, or if its
    /// scope holds waiting work of that thread (a burst window, a pending
    /// debounce event, a queue: the conversation is in progress); otherwise
    /// [`Decision::NotSubscribed`] and nothing is marked or locked.
    Subscribed,
}

/// One call to [`StateBackend::admit`]. Repeating a call whose reply was lost
/// means sending the same request again (a clone): its [`id`](Self::id) is what
/// makes the repeat safe.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdmitRequest {
    /// The event. Backends keep (a serialized copy of) it while it waits or runs.
    pub event: Arc<Event>,
    /// The scope the strategy applies to. Its [`tag`](ScopeKey::tag) must equal the
    /// event thread's (same platform, tenant and channel).
    pub scope: ScopeKey,
    /// The strategy for overlapping events.
    pub concurrency: Concurrency,
    /// Whether the thread must be subscribed.
    pub gate: Gate,
    /// How long the dedupe mark lives.
    pub dedupe_ttl: Duration,
    /// The lease's time to live when one is granted.
    pub lease_ttl: Duration,
    /// How long the event's thread stays subscribed from now, when it is: an
    /// admission in a subscribed thread extends its subscription to this.
    pub subscription_ttl: Duration,
    /// The request's identity, chosen by the caller and kept across repeats. It
    /// is recorded with the dedupe mark, and it is the token of the lease or slot
    /// the admission grants.
    pub id: LeaseToken,
}

impl AdmitRequest {
    /// A request for `event` on `scope` under `concurrency`, with a fresh
    /// identity, an open gate, a 24 h dedupe TTL, a 30 s lease TTL and a 30 day
    /// subscription TTL.
    pub fn new(event: impl Into<Arc<Event>>, scope: ScopeKey, concurrency: Concurrency) -> Self {
        Self {
            event: event.into(),
            scope,
            concurrency,
            gate: Gate::Open,
            dedupe_ttl: DEFAULT_DEDUPE_TTL,
            lease_ttl: Duration::from_secs(30),
            subscription_ttl: DEFAULT_SUBSCRIPTION_TTL,
            id: LeaseToken::generate(),
        }
    }

    /// Sets the subscription gate.
    #[must_use]
    pub fn gate(mut self, gate: Gate) -> Self {
        self.gate = gate;
        self
    }

    /// Sets the dedupe TTL.
    #[must_use]
    pub fn dedupe_ttl(mut self, ttl: Duration) -> Self {
        self.dedupe_ttl = ttl;
        self
    }

    /// Sets the lease TTL.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Sets the subscription TTL an admission in a subscribed thread renews.
    #[must_use]
    pub fn subscription_ttl(mut self, ttl: Duration) -> Self {
        self.subscription_ttl = ttl;
        self
    }
}

/// How long a dedupe mark lives when neither the runtime nor the platform's
/// adapter says otherwise: 24 h.
pub const DEFAULT_DEDUPE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a subscription lives without activity, unless configured: 30 days.
pub const DEFAULT_SUBSCRIPTION_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// What [`StateBackend::admit`] decided, and what it saw.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Admission {
    /// The decision.
    pub decision: Decision,
    /// Whether the event's thread was subscribed when it was admitted (routing
    /// sends messages in subscribed threads to the subscribed handler).
    pub subscribed: bool,
}

impl Admission {
    /// Builds an admission result (for backends).
    pub fn new(decision: Decision, subscribed: bool) -> Self {
        Self {
            decision,
            subscribed,
        }
    }
}

/// The strategy's decision for one admitted event.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Decision {
    /// The dedupe key was already marked by another request: nothing changed.
    Duplicate,
    /// [`Gate::Subscribed`], the thread is not subscribed and no work of it waits
    /// on the scope: nothing changed.
    NotSubscribed,
    /// The lease (or, under `Concurrent`, a slot) was granted with the request's
    /// id as its token, and the event is stored in flight under it as batch 0:
    /// run it now, then [`finish`](StateBackend::finish).
    Run(Lease),
    /// The scope's lease was granted and the event was stored with the scope's
    /// waiting entries (debounce, burst; a queue, or an in-flight batch, that
    /// outlived its holder). The caller is now the holder: call
    /// [`finish`](StateBackend::finish) until it answers `Released`.
    Hold(Lease),
    /// Queue or burst: the scope is busy and the event waits for the holder.
    Queued {
        /// Entries waiting on the scope, this one included.
        depth: usize,
    },
    /// Debounce: the scope is busy; the event is now the pending one.
    Pending {
        /// It replaced an earlier pending event (whose `Superseded` report went
        /// to the scope's outbox).
        replaced: bool,
    },
    /// Acknowledged and not kept: the scope is busy under `Drop`, or the queue is
    /// full under `DropNewest`. The dedupe key stays marked.
    Dropped(DropReason),
    /// Concurrent with every slot taken: the event is stored under the request's
    /// id, which waits with [`StateBackend::acquire_slot`].
    WaitingForSlot,
    /// A bound says the delivery must be refused before the acknowledgement (a
    /// burst at its `max_waiting`). Nothing was marked: the platform's retry is new.
    Full,
    /// A repeat of an admission whose lease or slot has lapsed since: the event
    /// is in the backend's care (in flight or waiting), and recovery runs it.
    /// Nothing to do for the caller.
    Stored,
}

/// Why an event was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// `Drop`: another handler holds the scope (or an in-flight batch of a lapsed
    /// holder waits to run again).
    Busy,
    /// `Queue` with `DropNewest`: the queue is full.
    QueueFull,
}

impl DropReason {
    /// A stable name for logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::QueueFull => "queue-full",
        }
    }
}

/// An event that waited on a scope, as handed to the holder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Waiting {
    /// The event.
    pub event: Arc<Event>,
    /// How long it had waited when its batch was first handed out, by the
    /// backend's clock.
    pub waited: Duration,
    /// The queue's `entry_ttl` had passed when its batch was first handed out:
    /// record it `Expired`, do not run it.
    pub expired: bool,
}

impl Waiting {
    /// Builds a waiting entry (for backends).
    pub fn new(event: Arc<Event>, waited: Duration, expired: bool) -> Self {
        Self {
            event,
            waited,
            expired,
        }
    }
}

/// An outcome the backend decided for an event while admitting another, handed
/// to the scope's holder to record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The event's id (empty when even that could not be read).
    pub event_id: EventId,
    /// Its thread, when known.
    pub thread: Option<ThreadRef>,
    /// What happened to it.
    pub fate: Fate,
}

impl Report {
    /// Builds a report (for backends).
    pub fn new(event_id: EventId, thread: Option<ThreadRef>, fate: Fate) -> Self {
        Self {
            event_id,
            thread,
            fate,
        }
    }
}

/// What happened to a reported event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fate {
    /// Evicted from a full queue (`DropOldest`): record it `Dropped`.
    Evicted,
    /// Replaced by a newer debounce event: record it `Superseded`.
    Superseded,
    /// A stored entry that could not be decoded: record it `Failed`.
    Undecodable,
}

/// What a holder gets from [`StateBackend::finish`] (or a recovered slot run from
/// [`StateBackend::sweep`]): a numbered batch, in flight under its lease until
/// the holder's next call acknowledges it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Batch {
    /// The batch's number on its lease: the holder now holds the lease at this
    /// [`seq`](Lease::seq) ([`Lease::at`]).
    pub seq: u64,
    /// How many times the batch has been handed out, this time included: 1 the
    /// first time, more when it was adopted from a holder that did not finish it.
    pub attempt: u32,
    /// How many of its holders lost it without handing it back (died, were
    /// killed, or paused past their TTL). Runtimes bound it (max attempts).
    pub lapses: u32,
    /// The entries to plan and run, oldest first. Queue: every waiting entry.
    /// Debounce: the pending event once quiet. Burst: the oldest sealed batch.
    pub entries: Vec<Waiting>,
    /// Outcomes decided for other events (the scope's outbox).
    pub reports: Vec<Report>,
}

impl Batch {
    /// A first hand-out (for backends).
    pub fn new(seq: u64, entries: Vec<Waiting>, reports: Vec<Report>) -> Self {
        Self {
            seq,
            attempt: 1,
            lapses: 0,
            entries,
            reports,
        }
    }

    /// Sets the attempt count and lapses (for backends handing a batch out
    /// again).
    #[must_use]
    pub fn attempts(mut self, attempt: u32, lapses: u32) -> Self {
        self.attempt = attempt;
        self.lapses = lapses;
        self
    }
}

/// The unguessable owner token of a lease, and the identity of an admit request.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseToken(String);

impl LeaseToken {
    /// A fresh token: 128 random bits from the operating system's generator,
    /// hex-encoded.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        Self(hex::encode(bytes))
    }

    /// Wraps a token read back from a backend.
    pub fn from_string(token: String) -> Self {
        Self(token)
    }

    /// The token as a string slice (for backends; never log it).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token is a capability: never print it whole.
        let prefix = self.0.get(..6).unwrap_or("");
        write!(f, "LeaseToken({prefix}…)")
    }
}

/// What a lease grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseKind {
    /// The scope's exclusive lease (drop, queue, debounce, burst).
    Exclusive,
    /// One of the scope's concurrency slots.
    Slot,
}

/// The right to run on a scope, until its TTL passes without renewal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    scope: ScopeKey,
    token: LeaseToken,
    fence: u64,
    kind: LeaseKind,
    ttl: Duration,
    seq: u64,
}

impl Lease {
    /// Builds a lease at batch 0 (for backends).
    pub fn new(
        scope: ScopeKey,
        token: LeaseToken,
        fence: u64,
        kind: LeaseKind,
        ttl: Duration,
    ) -> Self {
        Self {
            scope,
            token,
            fence,
            kind,
            ttl,
            seq: 0,
        }
    }

    /// The same lease, holding batch `seq` (after [`Handoff::Run`]).
    #[must_use]
    pub fn at(mut self, seq: u64) -> Self {
        self.seq = seq;
        self
    }

    /// The scope it serializes.
    pub fn scope(&self) -> &ScopeKey {
        &self.scope
    }

    /// The owner token.
    pub fn token(&self) -> &LeaseToken {
        &self.token
    }

    /// The fencing number: greater than that of every earlier grant on the scope.
    /// A handler writing to its own store can reject writes with a smaller one,
    /// since a paused holder may still run after its lease passed on.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// Exclusive lease or concurrency slot.
    pub fn kind(&self) -> LeaseKind {
        self.kind
    }

    /// The time to live it was granted (or last renewed) with.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The number of the batch the holder holds: 0 for the grant (the admitted
    /// event of a `Run`, nothing for a `Hold` or a recovered scope), then the
    /// [`seq`](Batch::seq) of each batch `finish` handed over.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// The answer to [`StateBackend::renew`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Renewal {
    /// Extended by the requested TTL.
    Renewed {
        /// Stop requests recorded on this lease ([`StateBackend::request_cancel`])
        /// since its current batch was handed out. A holder cancels its running
        /// handler when the count grows past what it has already acted on, so a
        /// stop reaches the run in progress and not the ones after it.
        cancel_requests: u32,
    },
    /// The token no longer owns the scope (expired, or passed on): stop.
    Lost,
}

/// The answer to [`StateBackend::finish`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Handoff {
    /// The holder's batch is acknowledged and nothing else is ready for it: the
    /// lease is deleted (or had already lapsed with nobody adopting the batch).
    Released,
    /// The holder's batch is acknowledged, and the next batch is the holder's
    /// now, in flight under the lease at [`Batch::seq`]; the lease is extended by
    /// its TTL. An in-flight batch left by an earlier holder is adopted first.
    Run(Batch),
    /// The holder's batch is acknowledged; entries wait but are not ready yet (a
    /// debounce not yet quiet, a burst window still open): the lease is kept and
    /// extended; call again after this.
    Wait(Duration),
    /// The token no longer owns the scope and its batch is not its own to
    /// acknowledge any more (another holder adopted it): nothing changed.
    Lost,
}

/// How [`StateBackend::release`] leaves the holder's current batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Release {
    /// The holder finished its batch: acknowledge it.
    Done,
    /// The holder did not finish its batch (cancelled by shutdown): leave it in
    /// flight for the next holder, without counting it as a lapse.
    HandBack,
}

/// The answer to [`StateBackend::acquire_slot`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SlotGrant {
    /// The slot is the waiter's: run its event under this lease.
    Granted(Lease),
    /// Every slot is taken: the waiter's reservation is extended; ask again.
    Full,
    /// The waiter's reservation lapsed and recovery owns the event now: stop
    /// waiting.
    Gone,
}

/// A run the recovery [`sweep`](StateBackend::sweep) found without a holder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Recovered {
    /// A scope with waiting or in-flight work and no lease: the caller holds it
    /// now and drives it with [`finish`](StateBackend::finish) from batch 0.
    Scope(Lease),
    /// A concurrency-slot run whose holder is gone: the caller waits for a slot
    /// with `token` ([`acquire_slot`](StateBackend::acquire_slot)) and runs the
    /// batch's event.
    Slot {
        /// The scope.
        scope: ScopeKey,
        /// The waiter's new reservation.
        token: LeaseToken,
        /// The event, with its attempt count.
        batch: Batch,
        /// The concurrency the run was admitted with
        /// ([`AdmitRequest::concurrency`]): its slot is taken under the same
        /// bound, whatever strategy the recovering process has. A run of an
        /// unlocked kind (a reaction, a click, a command) is unbounded.
        concurrency: ConcurrentOptions,
    },
}

/// One call to [`StateBackend::sweep`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sweep {
    /// The TTL of the leases (and reservations) the recovered runs get.
    pub lease_ttl: Duration,
    /// The most runs to recover.
    pub limit: usize,
    /// Tenants whose runs the caller has no room for: left for a later sweep
    /// (or another replica).
    pub skip_tenants: Vec<TenantId>,
}

impl Sweep {
    /// Up to `limit` runs, leased for `lease_ttl`, of every tenant.
    pub fn new(lease_ttl: Duration, limit: usize) -> Self {
        Self {
            lease_ttl,
            limit,
            skip_tenants: Vec::new(),
        }
    }

    /// Leaves these tenants' runs alone.
    #[must_use]
    pub fn skip_tenants(mut self, tenants: impl IntoIterator<Item = TenantId>) -> Self {
        self.skip_tenants = tenants.into_iter().collect();
        self
    }

    /// Whether the runs of `scope` may be claimed.
    pub fn wants(&self, scope: &ScopeKey) -> bool {
        !self.skip_tenants.contains(&scope.tenant)
    }
}

/// One call to [`StateBackend::request_cancel`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CancelRequest {
    /// The thread the control event belongs to.
    pub thread: ThreadRef,
    /// The control event's dedupe key.
    pub dedupe_key: DedupeKey,
    /// How long the dedupe mark lives.
    pub dedupe_ttl: Duration,
    /// The scope whose running turn must stop.
    pub scope: ScopeKey,
    /// The request's identity, kept across repeats: a repeat answers `Recorded`
    /// again instead of `Duplicate`.
    pub id: LeaseToken,
}

impl CancelRequest {
    /// A cancel request for `scope`, deduplicated on `event`'s key (24 h).
    pub fn new(event: &Event, scope: ScopeKey) -> Self {
        Self {
            thread: event.thread.clone(),
            dedupe_key: event.dedupe_key.clone(),
            dedupe_ttl: Duration::from_secs(24 * 60 * 60),
            scope,
            id: LeaseToken::generate(),
        }
    }

    /// Sets the dedupe TTL.
    #[must_use]
    pub fn dedupe_ttl(mut self, ttl: Duration) -> Self {
        self.dedupe_ttl = ttl;
        self
    }
}

/// The answer to [`StateBackend::request_cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The control event was seen before.
    Duplicate,
    /// Recorded on the scope's lease (or slots); the holder learns it at its next
    /// renewal. `count` is the lease's count of stop requests after this one (see
    /// [`Renewal::Renewed`]).
    Recorded {
        /// Stop requests recorded on the lease since its batch was handed out.
        count: u32,
    },
    /// No lease is held on the scope: nothing to stop.
    NoHolder,
}

/// Shared state for the runtime: deduplication, leases, in-flight and waiting
/// entries, slots and subscriptions — and, through its [`KvStore`] side,
/// small cached records (the runtime's user lookups). Object-safe: the
/// runtime holds an `Arc<dyn StateBackend>`.
///
/// Every method is one atomic step, and every method that changes the protocol's
/// state is safe to repeat with the same arguments (see the [module
/// docs](self)). Methods return [`StateError`] only for failures of the backend
/// itself (unreachable, timed out, corrupt data); every protocol answer —
/// duplicate, lost lease, full queue — is a value. A [`StateError::Timeout`] or
/// [`StateError::Unavailable`] says nothing about whether the call ran.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a chat-rs state backend",
    label = "expected a `StateBackend`",
    note = "use `chat_state_memory::MemoryState` or `chat_state_redis::RedisState`, or any `Arc<T>` of one (an `Arc<dyn StateBackend>` chosen at run time works too)"
)]
#[async_trait]
pub trait StateBackend: KvStore + Send + Sync + 'static {
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

    /// Subscribes the bot to a thread for `ttl`: later plain messages in it are
    /// admitted. Every admission of an event of the thread while it is
    /// subscribed extends the subscription to its request's
    /// [`subscription_ttl`](AdmitRequest::subscription_ttl), so a thread stays
    /// subscribed while it is active and is forgotten after `ttl` of silence.
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError>;

    /// Unsubscribes; returns whether the thread was subscribed.
    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Whether the thread is subscribed.
    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Removes every subscription of one tenant of one platform — after the
    /// tenant removed the app (Slack `app_uninstalled`, Linear `OAuthApp`
    /// revoked), so an uninstalled workspace holds no state for the
    /// subscription TTL. Returns how many subscriptions it removed.
    ///
    /// Not atomic: it walks the store (every node of a cluster, never with a
    /// blocking full-keyspace command) and may run as long as the number of
    /// the tenant's keys says; the runtime calls it in the background. A
    /// subscription made while it runs may survive it. Other tenants'
    /// subscriptions, and every other record (dedupe marks expire on their
    /// own; leases and waiting work finish or expire), are untouched.
    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError>;

    /// Whether the backend answers.
    async fn health(&self) -> Result<(), StateError>;

    /// Inspection: the busy scopes that pass `filter` — held by a lease or a
    /// slot, or with events in their care (in flight, queued, pending, in
    /// burst windows) — at most `limit`, in no particular order, each as
    /// [`inspect_scope`](Self::inspect_scope) would show it. Every scope of
    /// every replica sharing the store (on a cluster, every node; never a
    /// blocking full-keyspace command). Not atomic across scopes: a scope
    /// that changes during the call shows one state or the other.
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError>;

    /// Inspection: one scope in full, read atomically; `None` when it is
    /// idle (no live lease or slot, nothing in its care).
    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError>;

    /// The operator's release of a stuck holder: if the scope's live lease
    /// (or one of its live slots) carries `fence` — the number the operator
    /// saw in [`inspect_scope`](Self::inspect_scope) — it is deleted;
    /// otherwise nothing changes ([`ForceRelease::Stale`]). Nothing in the
    /// scope's care is dropped: its in-flight batch and waiting entries stay,
    /// the scope needs a holder again, and the next
    /// [`sweep`](Self::sweep) (or admit) hands them over — the in-flight
    /// batch as a further attempt. The released holder learns at its next
    /// renewal ([`Renewal::Lost`]); its late `finish` is `Lost`.
    async fn force_release(&self, scope: &ScopeKey, fence: u64)
    -> Result<ForceRelease, StateError>;

    /// Whether other processes share this state, so that work handed back at
    /// shutdown ([`Release::HandBack`]) runs on another replica. A backend
    /// private to one process answers `false`: the runtime then records a run
    /// cancelled by shutdown as cancelled instead of handing it back to nobody.
    /// Default `true`.
    fn shared(&self) -> bool {
        true
    }
}

/// A shared backend is a backend: `Arc<MemoryState>`, or an
/// `Arc<dyn StateBackend>` chosen at run time, goes wherever a backend does.
#[async_trait]
impl<T: StateBackend + ?Sized> StateBackend for std::sync::Arc<T> {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        (**self).admit(request).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        (**self).renew(lease, ttl).await
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        (**self).finish(lease).await
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        (**self).release(lease, how).await
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        (**self).unmark(thread, key).await
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        (**self).acquire_slot(scope, token, max, ttl).await
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        (**self).request_cancel(request).await
    }

    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError> {
        (**self).sweep(request).await
    }

    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        (**self).subscribe(thread, ttl).await
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        (**self).unsubscribe(thread).await
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        (**self).is_subscribed(thread).await
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        (**self).unsubscribe_tenant(platform, tenant).await
    }

    async fn health(&self) -> Result<(), StateError> {
        (**self).health().await
    }

    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        (**self).busy_scopes(filter, limit).await
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        (**self).inspect_scope(scope).await
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        (**self).force_release(scope, fence).await
    }

    fn shared(&self) -> bool {
        (**self).shared()
    }
}
