//! What one run of the checker explores: the bounds, the protocol, the strategy,
//! the faults it may inject and the properties it checks.

/// Which version of the scripts and of the runtime is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// The protocol before durable runs: admit and finish carry no request
    /// identity, the running event is stored nowhere, evicted and superseded
    /// events exist only in the admit reply, finish pops what waits and its reply
    /// is the only copy, outcomes are recorded as soon as a handler returns, a
    /// failed admit is recorded `Rejected` (the platform retries), and a failed
    /// finish is sent again with the same token.
    Legacy,
    /// The protocol as implemented now: request ids replayed from the dedupe
    /// mark, the in-flight batch, the outbox, `finish(token, seq)` with
    /// acknowledgements remembered, outcomes recorded once `finish` (or
    /// `release`) acknowledged their batch, and every call repeated with the
    /// same identity while its outcome is unknown.
    Durable,
}

/// The scope's strategy for overlapping events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// `Queue` with `max_size` and drop-oldest: the holder takes every queued
    /// entry, runs the newest and records the older ones `Superseded`.
    Queue,
    /// `Debounce`: one pending event that a newer one replaces; it runs once
    /// the scope has been quiet (a nondeterministic step of the model).
    Debounce,
}

/// The state calls a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Calls {
    /// `admit` (the ack path; also the only call a client re-send hits).
    pub admit: bool,
    /// `finish` (acknowledge the batch, take the next one).
    pub finish: bool,
    /// `release` (shutdown).
    pub release: bool,
    /// `renew` (the lease keeper).
    pub renew: bool,
    /// `claim` (the recovery sweep).
    pub claim: bool,
}

impl Calls {
    /// Every call.
    pub const ALL: Self = Self {
        admit: true,
        finish: true,
        release: true,
        renew: true,
        claim: true,
    };
    /// No call.
    pub const NONE: Self = Self {
        admit: false,
        finish: false,
        release: false,
        renew: false,
        claim: false,
    };
}

/// The faults the checker may inject, all drawn from one budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Faults {
    /// A call's reply is lost: the caller gets an error, and the request runs
    /// at some later step or never.
    pub lost_reply: bool,
    /// A call runs and answers, and a copy of it runs again at a later step.
    pub duplicate: bool,
    /// A client re-send (Redis Cluster): `admit` runs, its reply is lost, and
    /// the client sends it again; the caller gets the second reply.
    pub resend: bool,
    /// The repeats of a call whose outcome is unknown keep failing until the
    /// caller gives up (a delivery then leaves the event to the platform's
    /// retry; a holder discards its batch's outcomes and stops).
    pub give_up: bool,
    /// A replica loses all its local state at any step (and starts again).
    pub crash: bool,
    /// A replica takes no step while time goes on, then resumes.
    pub stall: bool,
    /// A replica shuts down: it stops admitting; its holders finish their run
    /// and release, or are cancelled at the drain deadline and hand back. At
    /// least one replica stays up (work left by a deployment that stops every
    /// replica waits for the next one).
    pub shutdown: bool,
    /// The calls that lost replies, duplicates and re-sends can hit.
    pub calls: Calls,
}

impl Faults {
    /// No fault.
    pub const NONE: Self = Self {
        lost_reply: false,
        duplicate: false,
        resend: false,
        give_up: false,
        crash: false,
        stall: false,
        shutdown: false,
        calls: Calls::NONE,
    };

    /// Lost replies, duplicate executions and re-sends on every call, and
    /// giving a call up.
    pub const CALLS: Self = Self {
        lost_reply: true,
        duplicate: true,
        resend: true,
        give_up: true,
        calls: Calls::ALL,
        ..Self::NONE
    };
}

/// Pieces of the durable protocol that a run can take away, to show that each
/// one is needed (the checker then finds a counterexample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ablations {
    /// `admit` grants `Run` without storing the event in flight.
    pub run_not_stored: bool,
    /// `finish` acknowledges whatever the token has in flight, whatever its seq,
    /// and never replays.
    pub finish_ignores_seq: bool,
    /// The next holder's `finish` deletes a batch left in flight instead of
    /// adopting it.
    pub orphans_deleted: bool,
    /// The sweep claims a scope only when entries wait on it, as the legacy
    /// claim did: an in-flight batch or reports alone are never claimed.
    pub claim_needs_waiting: bool,
}

/// The properties checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Checks {
    /// I1: never two handlers running whose holders both believe they hold an
    /// unexpired lease.
    pub mutual_exclusion: bool,
    /// I2: in a quiescent state, every event acknowledged to the platform has at
    /// least one recorded outcome.
    pub no_silent_loss: bool,
    /// I3: no quiescent state has waiting, in-flight or reported work.
    pub nothing_stranded: bool,
    /// I2x: while no replica crashed or stalled, no event has two outcomes.
    pub exactly_once: bool,
    /// Check I2x in runs with crashes and stalls too. A re-run handler's
    /// outcome is discarded when its batch was acknowledged by another
    /// holder, so the durable protocol records one outcome per event even
    /// then (unless a crash hits a holder between an acknowledgement and its
    /// record, which takes a lost reply and a crash).
    pub exactly_once_despite_crashes: bool,
    /// I5: an event run again runs under a higher fence than before.
    pub fences_grow: bool,
    /// Every state that is not quiescent has a step that is not a fault.
    pub progress: bool,
    /// Sometimes: a quiescent state where every event was acknowledged and
    /// recorded (the model can finish its work).
    pub can_finish: bool,
    /// Sometimes: an event's handler started a second time (a re-run after a
    /// crash or a stall).
    pub can_rerun: bool,
}

impl Checks {
    /// Every invariant, and the `can_finish` example.
    pub const ALL: Self = Self {
        mutual_exclusion: true,
        no_silent_loss: true,
        nothing_stranded: true,
        exactly_once: true,
        exactly_once_despite_crashes: false,
        fences_grow: true,
        progress: true,
        can_finish: true,
        can_rerun: false,
    };
}

/// One run of the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Replicas of the runtime (each takes deliveries, holds leases, sweeps).
    pub replicas: u8,
    /// Events the platform delivers, all to the one modelled scope.
    pub events: u8,
    /// Scripts and runtime.
    pub protocol: Protocol,
    /// The scope's strategy.
    pub strategy: Strategy,
    /// Queue `max_size` (drop-oldest).
    pub max_size: u8,
    /// Lease TTL, in ticks (at least 2: a keeper renews before the last tick
    /// of its believed lease).
    pub lease_ttl: u8,
    /// Queue entry TTL, in ticks (`None`: entries never expire).
    pub entry_ttl: Option<u8>,
    /// The faults that may happen.
    pub faults: Faults,
    /// How many faults of any kind one run may contain.
    pub fault_budget: u8,
    /// A replayed answer (an admit repeat answered `Run` or `Hold` again, a
    /// finish repeat handed the same batch again) extends the lease, as the
    /// first execution did — as the scripts do. Off, it shows why: the
    /// runtime dates the lease from the send time of the call that answered,
    /// so a holder would believe in a lease that had already expired.
    pub replays_extend_lease: bool,
    /// Pieces of the durable protocol taken away.
    pub ablations: Ablations,
    /// The properties checked.
    pub checks: Checks,
}

impl Config {
    /// Two replicas, three events, queue of one with drop-oldest, lease TTL 2,
    /// entry TTL 3, no fault, budget 1, the protocol as the scripts implement
    /// it, every invariant.
    pub const fn new(protocol: Protocol, strategy: Strategy) -> Self {
        Self {
            replicas: 2,
            events: 3,
            protocol,
            strategy,
            max_size: 1,
            lease_ttl: 2,
            entry_ttl: Some(3),
            faults: Faults::NONE,
            fault_budget: 1,
            replays_extend_lease: true,
            ablations: Ablations {
                run_not_stored: false,
                finish_ignores_seq: false,
                orphans_deleted: false,
                claim_needs_waiting: false,
            },
            checks: Checks::ALL,
        }
    }

    /// The same, with these faults.
    #[must_use]
    pub const fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// How long `admit` is repeated (`state_retry`, one lease TTL by default).
    pub(crate) fn admit_bound(&self) -> u8 {
        self.lease_ttl
    }

    /// How long `finish` is repeated: twice the lease TTL.
    pub(crate) fn finish_bound(&self) -> u8 {
        self.lease_ttl.saturating_mul(2)
    }

    /// How long `release` is repeated: one lease TTL.
    pub(crate) fn release_bound(&self) -> u8 {
        self.lease_ttl
    }

    pub(crate) fn durable(&self) -> bool {
        self.protocol == Protocol::Durable
    }
}
