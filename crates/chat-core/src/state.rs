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
//!   can neither renew, finish nor take once the lease expired or passed to
//!   someone else, and such a call changes nothing.
//! * [`finish`](StateBackend::finish) is release-or-handoff in one step: if entries
//!   wait on the scope, the holder keeps the lease and gets them (or is told how
//!   long until they are ready); otherwise the lease is deleted. As two steps (take,
//!   then release) an entry admitted in between would be stranded.
//! * Expiry (leases, dedupe marks, queue entries, debounce quiet periods, burst
//!   windows) is judged by the backend's clock, never by the caller's.
//!
//! The executable specification of the lease / queue / debounce protocol is the
//! model checker in the project's `shared/model/handoff_model.py`; `chat-testkit`'s
//! conformance suite checks every backend against the same rules.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rand::RngCore;

use crate::concurrency::Concurrency;
use crate::error::StateError;
use crate::event::Event;
use crate::id::{DedupeKey, ScopeKey, ThreadRef};

/// Whether an event needs its thread to be subscribed before it is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Gate {
    /// A handler wants the event whatever the subscription (a mention, a DM, a
    /// regex match, a command, an action).
    #[default]
    Open,
    /// A plain message: admitted only if its thread is subscribed; otherwise
    /// [`Decision::NotSubscribed`] and nothing is marked or locked.
    Subscribed,
}

/// One call to [`StateBackend::admit`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdmitRequest {
    /// The event. Backends that queue it keep (a serialized copy of) it.
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
}

impl AdmitRequest {
    /// A request for `event` on `scope` under `concurrency`, with an open gate, a
    /// 24 h dedupe TTL and a 30 s lease TTL.
    pub fn new(event: impl Into<Arc<Event>>, scope: ScopeKey, concurrency: Concurrency) -> Self {
        Self {
            event: event.into(),
            scope,
            concurrency,
            gate: Gate::Open,
            dedupe_ttl: Duration::from_secs(24 * 60 * 60),
            lease_ttl: Duration::from_secs(30),
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
}

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
    /// The dedupe key was already marked: nothing changed.
    Duplicate,
    /// [`Gate::Subscribed`] and the thread is not subscribed: nothing changed.
    NotSubscribed,
    /// The scope's lease was granted and the event was **not** stored: run it now,
    /// then [`finish`](StateBackend::finish). (Drop and queue on an idle scope;
    /// concurrent with a free slot, where the lease is a slot lease.)
    Run(Lease),
    /// The scope's lease was granted and the event was stored with the scope's
    /// waiting entries (debounce, burst; a queue that still held entries of a
    /// holder that died). The caller is now the holder: call
    /// [`finish`](StateBackend::finish) until it answers `Released`.
    Hold {
        /// The lease.
        lease: Lease,
        /// A debounce event left pending by a dead or paused holder, replaced by
        /// this one: record it `Superseded`.
        superseded: Option<Waiting>,
    },
    /// Unbounded concurrency: no lease, no slot; run it now.
    Unlocked,
    /// Queue or burst: the scope is busy and the event waits for the holder.
    Queued {
        /// Entries waiting on the scope, this one included.
        depth: usize,
        /// The oldest entry, evicted to make room (`DropOldest`): record it
        /// `Dropped`.
        evicted: Option<Waiting>,
    },
    /// Debounce: the scope is busy; the event is now the pending one.
    Pending {
        /// The event it replaced: record it `Superseded`.
        superseded: Option<Waiting>,
    },
    /// Acknowledged and not kept: the scope is busy under `Drop`, or the queue is
    /// full under `DropNewest`. The dedupe key stays marked.
    Dropped(DropReason),
    /// Concurrent with every slot taken: the dedupe key is marked and the caller
    /// keeps the event, waiting with [`StateBackend::acquire_slot`].
    WaitingForSlot,
    /// A bound says the delivery must be refused before the acknowledgement (a
    /// burst at its `max_waiting`). Nothing was marked: the platform's retry is new.
    Full,
}

/// Why an event was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// `Drop`: another handler holds the scope.
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
    /// How long it has waited since it was admitted, by the backend's clock.
    pub waited: Duration,
    /// The queue's `entry_ttl` passed: record it `Expired`, do not run it.
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

/// The unguessable owner token of a lease.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LeaseToken(String);

impl LeaseToken {
    /// A fresh token: 128 random bits from the operating system's generator,
    /// hex-encoded.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        let mut s = String::with_capacity(32);
        for b in bytes {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Self(s)
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

const HEX: &[u8; 16] = b"0123456789abcdef";

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
    /// One of the scope's `max` concurrency slots.
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
}

impl Lease {
    /// Builds a lease (for backends).
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
        }
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
}

/// The answer to [`StateBackend::renew`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Renewal {
    /// Extended by the requested TTL.
    Renewed {
        /// A stop was requested for this scope's running turn
        /// ([`StateBackend::request_cancel`]): cancel the handler.
        cancel_requested: bool,
    },
    /// The token no longer owns the scope (expired, or passed on): stop.
    Lost,
}

/// The answer to [`StateBackend::finish`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Handoff {
    /// Nothing waited: the lease is deleted.
    Released,
    /// Entries were ready: they are the holder's now (oldest first), and the lease
    /// is kept and extended by its TTL. Queue: every waiting entry. Debounce: the
    /// pending event once quiet. Burst: the oldest sealed batch.
    Run(Vec<Waiting>),
    /// Entries wait but are not ready yet (a debounce not yet quiet, a burst
    /// window still open): the lease is kept and extended; call again after this.
    Wait(Duration),
    /// The token no longer owns the scope: nothing changed.
    Lost,
}

/// The answer to [`StateBackend::take`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Take {
    /// As [`Handoff::Run`].
    Run(Vec<Waiting>),
    /// As [`Handoff::Wait`].
    Wait(Duration),
    /// Nothing waits; the lease is kept.
    Empty,
    /// The token no longer owns the scope: nothing changed.
    Lost,
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
}

impl CancelRequest {
    /// A cancel request for `scope`, deduplicated on `event`'s key (24 h).
    pub fn new(event: &Event, scope: ScopeKey) -> Self {
        Self {
            thread: event.thread.clone(),
            dedupe_key: event.dedupe_key.clone(),
            dedupe_ttl: Duration::from_secs(24 * 60 * 60),
            scope,
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
    /// Recorded on the scope's lease; the holder learns it at its next renewal.
    Recorded,
    /// No lease is held on the scope: nothing to stop.
    NoHolder,
}

/// How a [`StateBackend::kv_set`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SetMode {
    /// Always write.
    #[default]
    Always,
    /// Write only if the key is absent.
    IfAbsent,
}

/// Shared state for the runtime: deduplication, leases, waiting entries, slots,
/// subscriptions and a small KV. Object-safe: the runtime holds an
/// `Arc<dyn StateBackend>`.
///
/// Every method is one atomic step (see the [module docs](self)). Methods return
/// [`StateError`] only for failures of the backend itself (unreachable, timed out,
/// corrupt data); every protocol answer — duplicate, lost lease, full queue — is a
/// value.
#[async_trait]
pub trait StateBackend: Send + Sync + 'static {
    /// The ack path in one step. In order:
    ///
    /// 1. The request's scope tag must equal the event thread's, else
    ///    [`StateError::InvalidRequest`].
    /// 2. The event's dedupe key is marked → [`Decision::Duplicate`].
    /// 3. [`Gate::Subscribed`] and the thread is not subscribed →
    ///    [`Decision::NotSubscribed`].
    /// 4. Burst at `max_waiting` → [`Decision::Full`].
    /// 5. Otherwise the dedupe key is marked for `dedupe_ttl` and the strategy
    ///    decides:
    ///    * lease free: grant it (new token, fence above every earlier one) →
    ///      `Run` for drop, and for queue when no entry waits; `Hold` (event
    ///      stored) for debounce, burst, and a queue whose entries outlived their
    ///      holder. A debounce event still pending under a free lease is replaced
    ///      and returned as `superseded`.
    ///    * lease held: drop → `Dropped(Busy)`; queue → append (`DropOldest`
    ///      evicts the oldest past `max_size`; `DropNewest` answers
    ///      `Dropped(QueueFull)`); debounce → replace the pending event and
    ///      restart the quiet interval (`Pending`); burst → join the open window,
    ///      or open a new one (`Queued`), sealing it at `max_batch` members.
    ///    * concurrent: `Unlocked` when unbounded; else a free slot → `Run` with a
    ///      slot lease; else `WaitingForSlot`.
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError>;

    /// Extends the lease by `ttl` if its token still owns the scope (or the slot).
    /// Never resurrects an expired lease: once it lapsed, the answer is `Lost` even
    /// if nobody took the scope.
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError>;

    /// Release-or-handoff in one step (see [`Handoff`]). Entries whose queue
    /// `entry_ttl` passed are returned with `expired` set. A slot lease is simply
    /// released. Clears a recorded cancel request.
    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError>;

    /// Like [`finish`](Self::finish), but never releases: for a holder that wants
    /// what is ready while keeping the scope. Only the owner may take.
    async fn take(&self, lease: &Lease) -> Result<Take, StateError>;

    /// Gives the lease up **without** taking waiting entries (shutdown): they stay
    /// for the next admit on the scope or a [`sweep`](Self::sweep), so another
    /// replica takes over at once. Returns whether the token still owned the
    /// scope. The default renews with a 1 ms TTL so the lease lapses at once;
    /// backends override it with a direct, token-checked delete.
    async fn release(&self, lease: &Lease) -> Result<bool, StateError> {
        let r = self.renew(lease, Duration::from_millis(1)).await?;
        Ok(matches!(r, Renewal::Renewed { .. }))
    }

    /// Removes a dedupe mark, so a platform retry of the event runs (sync dispatch,
    /// after a handler failed before the acknowledgement). Returns whether a mark
    /// was removed.
    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError>;

    /// Tries to take one of `max` slots of `scope` for an event that got
    /// [`Decision::WaitingForSlot`]. `None`: still full.
    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        max: usize,
        ttl: Duration,
    ) -> Result<Option<Lease>, StateError>;

    /// A control event: dedupe it, and record a stop request on the scope's current
    /// lease, which its holder learns from its next [`renew`](Self::renew).
    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError>;

    /// Recovery: finds up to `limit` scopes that have waiting entries but no lease
    /// (their holder died or paused past its TTL), grants each a lease, and returns
    /// them; the caller drives each with [`finish`](Self::finish) as their holder.
    async fn sweep(&self, lease_ttl: Duration, limit: usize) -> Result<Vec<Lease>, StateError>;

    /// Subscribes the bot to a thread: later plain messages in it are admitted.
    async fn subscribe(&self, thread: &ThreadRef) -> Result<(), StateError>;

    /// Unsubscribes; returns whether the thread was subscribed.
    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Whether the thread is subscribed.
    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Reads a KV entry.
    async fn kv_get(&self, key: &str) -> Result<Option<Bytes>, StateError>;

    /// Writes a KV entry, with an optional TTL. Returns whether it was written
    /// (always `true` under [`SetMode::Always`]).
    async fn kv_set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError>;

    /// Deletes a KV entry; returns whether it existed.
    async fn kv_delete(&self, key: &str) -> Result<bool, StateError>;

    /// Whether the backend answers.
    async fn health(&self) -> Result<(), StateError>;
}
