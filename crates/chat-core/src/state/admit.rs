//! Admission: the request the ack path makes, and what the backend decided.

use super::*;

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

/// One call to [`Coordination::admit`]. Repeating a call whose reply was lost
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

/// What [`Coordination::admit`] decided, and what it saw.
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
    /// run it now, then [`finish`](Coordination::finish).
    Run(Lease),
    /// The scope's lease was granted and the event was stored with the scope's
    /// waiting entries (debounce, burst; a queue, or an in-flight batch, that
    /// outlived its holder). The caller is now the holder: call
    /// [`finish`](Coordination::finish) until it answers `Released`.
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
    /// id, which waits with [`Coordination::acquire_slot`].
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
