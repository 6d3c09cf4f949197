//! The [`StateBackend`] contract: everything the runtime needs from shared
//! state, in four parts — the [`Coordination`] protocol, [`Subscriptions`],
//! [`Inspection`] and the [`KvStore`] — and [`Intercepted`], the one wrapper
//! that forwards all of them to a backend and lets an [`Interceptor`] see or
//! change each call (metrics, fault injection, test hooks).
//!
//! # The protocol
//!
//! Every method is **one atomic step** on the backend (one Lua script on Redis, one
//! critical section in memory). The runtime never composes two of them into a
//! decision another replica could interleave with; that is what keeps every
//! accepted event accounted for across replicas.
//!
//! * [`admit`](Coordination::admit) is the whole ack path in one call: check and mark
//!   the dedupe key, check the subscription gate, and apply the scope's
//!   [`Concurrency`] strategy — grant the lease, or record the event as queued /
//!   pending / joined, or refuse it. A refusal that must let the platform retry
//!   ([`Decision::Full`], [`Decision::NotSubscribed`]) leaves the dedupe key
//!   unmarked.
//! * A [`Lease`] carries an unguessable token and a fencing number that grows with
//!   every grant on the scope. Every later call checks the token: a stale holder
//!   can neither renew nor finish once the lease expired or passed to someone
//!   else, and such a call changes nothing.
//! * [`finish`](Coordination::finish) is release-or-handoff in one step: if entries
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
//!   lease free, or the recovery [`sweep`](Coordination::sweep) — **adopts** it:
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

mod admit;
mod cancel;
mod inspection;
mod intercept;
mod lease;
mod protocol;
mod recovery;
mod run;
mod subscriptions;

pub use self::admit::*;
pub use self::cancel::*;
pub use self::inspection::Inspection;
pub use self::intercept::{Answer, Call, Intercepted, Interceptor, Op};
pub use self::lease::*;
pub use self::protocol::Coordination;
pub use self::recovery::*;
pub use self::run::*;
pub use self::subscriptions::Subscriptions;

/// Shared state for the runtime, as one object: the [`Coordination`]
/// protocol (deduplication, leases, in-flight and waiting entries, slots,
/// recovery), [`Subscriptions`], [`Inspection`] and — through its [`KvStore`]
/// side — small shared records (the runtime's user lookups). Object-safe: the
/// runtime holds an `Arc<dyn StateBackend>`; a call through it needs the part's
/// trait in scope (`use chat_core::state::Coordination;`).
///
/// Each part is its own trait so that a contract reads in one screen and a
/// wrapper that changes one part ([`Intercepted`]) names only that part. A
/// backend implements all four and this umbrella.
///
/// Methods return [`StateError`] only for failures of the backend itself
/// (unreachable, timed out, corrupt data); every protocol answer — duplicate,
/// lost lease, full queue — is a value. A [`StateError::Timeout`] or
/// [`StateError::Unavailable`] says nothing about whether the call ran.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a chat-rs state backend",
    label = "expected a `StateBackend`",
    note = "use `chat_state_memory::MemoryState` or `chat_state_redis::RedisState`, or any `Arc<T>` of one (an `Arc<dyn StateBackend>` chosen at run time works too)"
)]
#[async_trait]
pub trait StateBackend: Coordination + Subscriptions + Inspection + KvStore {
    /// Whether the backend answers.
    async fn health(&self) -> Result<(), StateError>;

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
impl<T: StateBackend + ?Sized> StateBackend for Arc<T> {
    async fn health(&self) -> Result<(), StateError> {
        (**self).health().await
    }

    fn shared(&self) -> bool {
        (**self).shared()
    }
}

#[async_trait]
impl<T: Coordination + ?Sized> Coordination for Arc<T> {
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
}

#[async_trait]
impl<T: Subscriptions + ?Sized> Subscriptions for Arc<T> {
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
}

#[async_trait]
impl<T: Inspection + ?Sized> Inspection for Arc<T> {
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
}
