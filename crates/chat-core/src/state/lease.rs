//! Leases and slots: who holds a scope, and the answers of renewing, handing off and releasing.

use super::*;

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

/// The answer to [`Coordination::renew`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Renewal {
    /// Extended by the requested TTL.
    Renewed {
        /// Stop requests recorded on this lease ([`Coordination::request_cancel`])
        /// since its current batch was handed out. A holder cancels its running
        /// handler when the count grows past what it has already acted on, so a
        /// stop reaches the run in progress and not the ones after it.
        cancel_requests: u32,
    },
    /// The token no longer owns the scope (expired, or passed on): stop.
    Lost,
}

/// The answer to [`Coordination::finish`].
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

/// How [`Coordination::release`] leaves the holder's current batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Release {
    /// The holder finished its batch: acknowledge it.
    Done,
    /// The holder did not finish its batch (cancelled by shutdown): leave it in
    /// flight for the next holder, without counting it as a lapse.
    HandBack,
}

/// The answer to [`Coordination::acquire_slot`].
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
