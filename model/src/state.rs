//! The model's state: the backend's records, the replicas and their tasks,
//! requests still travelling, and what the platform and the outcome recorder
//! have seen.
//!
//! Identities are small numbers. A token (a request id, which is also the token
//! of the lease it may grant, or a sweep's claim token) is `1..`; `0` stands for
//! a token no task or travelling request holds any more, which no future call
//! can carry. Fences are compared only with each other, so they are kept as
//! ranks. Both are renumbered after every step (see `normalize`), which merges
//! states that differ only in names.

use std::fmt;

/// An event, by its index (`0..events`).
pub type Ev = u8;
/// A token: a request id, the token of the lease it granted, a claim token.
pub type Tok = u8;
/// A fencing number (as a rank among the fences in the state).
pub type Fence = u8;

/// A token no one can present any more.
pub const NOBODY: Tok = 0;

/// The scope's lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lease {
    /// Its owner token.
    pub token: Tok,
    /// The batch its holder holds (durable).
    pub seq: u8,
    /// Ticks until it expires (expired == absent).
    pub left: u8,
    /// Its fence.
    pub fence: Fence,
}

/// A waiting queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    /// The event.
    pub ev: Ev,
    /// Ticks since it was admitted (capped at the entry TTL).
    pub age: u8,
}

/// An entry of a batch as handed out: whether the entry TTL had passed is
/// judged when it was first handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    /// The event.
    pub ev: Ev,
    /// Handed out after its entry TTL: recorded `Expired`, not run.
    pub expired: bool,
}

/// A batch in flight (durable): handed out and not yet acknowledged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InFlight {
    /// The token it was handed to.
    pub owner: Tok,
    /// Its number on that token's lease.
    pub seq: u8,
    /// Entries, oldest first.
    pub items: Vec<Item>,
    /// Reports of events whose outcome an admit decided (evicted, superseded).
    pub reports: Vec<Ev>,
}

/// The debounce strategy's pending event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pending {
    /// The event.
    pub ev: Ev,
    /// The scope has been quiet long enough: it may run.
    pub ready: bool,
}

/// What an admission recorded with its dedupe mark (durable), for a repeat of
/// the same request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Recorded {
    /// `Run`: the event is in flight as batch 0 of the request's lease.
    Run,
    /// `Hold`: the request's lease was granted, the event waits.
    Hold,
    /// `Queued`.
    Queued,
    /// `Pending`.
    Pending,
}

/// An event's dedupe mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// Legacy: marked, by no one in particular.
    Marked,
    /// Durable: marked by a request, with what it recorded.
    By(Tok, Recorded),
}

/// The backend's records for the one scope (and the event marks).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Backend {
    /// The lease, while unexpired.
    pub lease: Option<Lease>,
    /// The in-flight batch (durable).
    pub inflight: Option<InFlight>,
    /// The queue, oldest first.
    pub queue: Vec<Entry>,
    /// The pending debounce event.
    pub pending: Option<Pending>,
    /// Reports waiting for the next batch (durable).
    pub outbox: Vec<Ev>,
    /// Dedupe marks, one slot per event.
    pub marks: Vec<Option<Mark>>,
    /// Acknowledged batches `(token, seq)` (durable).
    pub acked: Vec<(Tok, u8)>,
    /// The fence counter: the last fence granted.
    pub fence: Fence,
}

impl Backend {
    /// Work that needs a holder: waiting entries, an in-flight batch, reports.
    pub fn has_work(&self) -> bool {
        !self.queue.is_empty()
            || self.pending.is_some()
            || self.inflight.is_some()
            || !self.outbox.is_empty()
    }
}

/// How a holder gives its lease up at shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum How {
    /// Its batch is done: acknowledge it.
    Done,
    /// Its run was cancelled: leave the batch in flight for the next holder.
    HandBack,
}

/// One state call, with the identity it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    /// `admit(event, request id)`.
    Admit {
        /// The event.
        ev: Ev,
        /// The request id.
        rid: Tok,
    },
    /// `finish(token, seq)` (legacy: `finish(token)`).
    Finish {
        /// The holder's token.
        tok: Tok,
        /// The batch it acknowledges.
        seq: u8,
    },
    /// `release(token, seq, how)` (legacy: `release(token)`).
    Release {
        /// The holder's token.
        tok: Tok,
        /// The batch it holds.
        seq: u8,
        /// Done or hand back.
        how: How,
    },
    /// `renew(token)`.
    Renew {
        /// The holder's token.
        tok: Tok,
    },
    /// `claim(token)`: the sweep.
    Claim {
        /// The new token.
        tok: Tok,
    },
}

/// A request that travels on its own: it runs against the backend at a later
/// step, and its reply reaches no one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ghost {
    /// The call.
    pub call: Call,
    /// Whether it may also never arrive (a lost reply's request; a duplicate's
    /// copy does run).
    pub may_vanish: bool,
}

/// Where a delivery whose admit has not answered yet stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AdmitPhase {
    /// The last attempt failed; the runtime repeats the same request (durable).
    Repeating {
        /// Ticks since the first attempt was sent.
        age: u8,
    },
    /// The client re-sends the request whose reply was lost; its reply is the
    /// one the caller gets.
    Resending {
        /// Ticks since the first attempt was sent.
        age: u8,
    },
}

/// A delivery task: the ack path of one delivery whose admit has not answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Delivery {
    /// The replica it runs on.
    pub replica: u8,
    /// Its request id.
    pub rid: Tok,
    /// The event.
    pub ev: Ev,
    /// The platform has been answered already ("retry", at the ack deadline).
    pub answered: bool,
    /// Its call's progress.
    pub phase: AdmitPhase,
}

/// What a holder does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// A handler runs this event.
    Run(Ev),
    /// Acknowledge the batch with `finish`; `Some(age)`: an attempt failed
    /// this many ticks after the first one was sent, and the call is repeated.
    Finish(Option<u8>),
    /// Entries wait that are not ready (debounce): call `finish` again later.
    Wait,
    /// Give the lease up with `release`; `Some(age)` as for `Finish`.
    Release(How, Option<u8>),
}

/// A holder: the loop that holds a lease, runs its batches and acknowledges
/// them, with the keeper that renews the lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Holder {
    /// The replica it runs on.
    pub replica: u8,
    /// The lease token.
    pub token: Tok,
    /// The batch it holds.
    pub seq: u8,
    /// The fence it was granted (what its handlers see).
    pub fence: Fence,
    /// Ticks until its believed expiry; 0: the keeper said the lease is lost.
    pub belief: u8,
    /// What it does next.
    pub phase: Phase,
    /// Outcomes of its batch, buffered until the batch is acknowledged
    /// (durable), as the events they are for.
    pub records: Vec<Ev>,
}

/// A task of a replica.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    /// A delivery whose admit has not answered yet.
    Delivery(Delivery),
    /// A lease holder.
    Holder(Holder),
}

impl Task {
    /// The replica it runs on.
    pub fn replica(&self) -> u8 {
        match self {
            Self::Delivery(d) => d.replica,
            Self::Holder(h) => h.replica,
        }
    }
}

/// A replica of the runtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Replica {
    /// It takes no step (time goes on).
    pub stalled: bool,
    /// It is shutting down: no new deliveries or sweeps; holders release.
    pub draining: bool,
    /// The drain deadline passed: running handlers are cancelled.
    pub cancelled: bool,
}

/// What the platform knows about one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    /// Not delivered yet.
    Fresh,
    /// Delivered; waiting for the answer.
    Out,
    /// Answered "retry" (or no answer): it will be delivered again, with a new
    /// request id.
    Retry,
    /// Acknowledged: never delivered again.
    Acked,
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The backend.
    pub backend: Backend,
    /// The replicas.
    pub replicas: Vec<Replica>,
    /// Their tasks, sorted.
    pub tasks: Vec<Task>,
    /// Requests still travelling, sorted.
    pub ghosts: Vec<Ghost>,
    /// The platform's view, one slot per event.
    pub platform: Vec<Platform>,
    /// Recorded outcomes per event (capped at 2).
    pub outcomes: Vec<u8>,
    /// The highest fence an event has run under (0: never ran).
    pub ran_under: Vec<Fence>,
    /// Faults left in the budget.
    pub faults_left: u8,
    /// A replica crashed or stalled at some point.
    pub crashed_or_stalled: bool,
    /// I5 broke: an event ran again under a fence not above an earlier run's.
    pub fence_reused: bool,
    /// Some event's handler started a second time.
    pub reran: bool,
}

impl State {
    /// The holders.
    pub fn holders(&self) -> impl Iterator<Item = &Holder> {
        self.tasks.iter().filter_map(|t| match t {
            Task::Holder(h) => Some(h),
            Task::Delivery(_) => None,
        })
    }

    /// The delivery tasks.
    pub fn deliveries(&self) -> impl Iterator<Item = &Delivery> {
        self.tasks.iter().filter_map(|t| match t {
            Task::Delivery(d) => Some(d),
            Task::Holder(_) => None,
        })
    }
}

fn ev_name(e: Ev) -> String {
    format!("e{}", u32::from(e) + 1)
}

fn tok_name(t: Tok) -> String {
    if t == NOBODY {
        "t-".to_owned()
    } else {
        format!("t{t}")
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Admit { ev, rid } => write!(f, "admit({}, {})", ev_name(ev), tok_name(rid)),
            Self::Finish { tok, seq } => write!(f, "finish({}, s{seq})", tok_name(tok)),
            Self::Release { tok, seq, how } => {
                write!(f, "release({}, s{seq}, {how:?})", tok_name(tok))
            }
            Self::Renew { tok } => write!(f, "renew({})", tok_name(tok)),
            Self::Claim { tok } => write!(f, "claim({})", tok_name(tok)),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let again = |age: &Option<u8>| match age {
            Some(a) => format!(" (repeating, first sent {a} ago)"),
            None => String::new(),
        };
        match self {
            Self::Run(ev) => write!(f, "runs {}", ev_name(*ev)),
            Self::Finish(age) => write!(f, "to finish{}", again(age)),
            Self::Wait => write!(f, "waits"),
            Self::Release(how, age) => write!(f, "to release {how:?}{}", again(age)),
        }
    }
}

fn evs(list: impl IntoIterator<Item = Ev>) -> String {
    list.into_iter().map(ev_name).collect::<Vec<_>>().join(",")
}

impl fmt::Display for State {
    /// One line per part of the state, for traces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.backend;
        match &b.lease {
            Some(l) => write!(
                f,
                "lease={} s{} f{} ({} left)",
                tok_name(l.token),
                l.seq,
                l.fence,
                l.left
            )?,
            None => write!(f, "lease=-")?,
        }
        if let Some(i) = &b.inflight {
            write!(
                f,
                " inflight={}:s{}[{}]",
                tok_name(i.owner),
                i.seq,
                evs(i.items.iter().map(|x| x.ev))
            )?;
            if !i.reports.is_empty() {
                write!(f, "+reports[{}]", evs(i.reports.iter().copied()))?;
            }
        }
        if !b.queue.is_empty() {
            write!(f, " queue=[{}]", evs(b.queue.iter().map(|e| e.ev)))?;
        }
        if let Some(p) = &b.pending {
            let ready = if p.ready { " ready" } else { "" };
            write!(f, " pending={}{ready}", ev_name(p.ev))?;
        }
        if !b.outbox.is_empty() {
            write!(f, " outbox=[{}]", evs(b.outbox.iter().copied()))?;
        }
        for t in &self.tasks {
            match t {
                Task::Delivery(d) => {
                    let (what, age) = match d.phase {
                        AdmitPhase::Repeating { age } => ("repeats", age),
                        AdmitPhase::Resending { age } => ("awaits the re-send of", age),
                    };
                    write!(
                        f,
                        " | r{} {what} admit({}, {}) (first sent {age} ago{})",
                        d.replica,
                        ev_name(d.ev),
                        tok_name(d.rid),
                        if d.answered {
                            ", platform told retry"
                        } else {
                            ""
                        }
                    )?;
                }
                Task::Holder(h) => {
                    write!(
                        f,
                        " | r{} holds {} s{} f{} believes {} {}",
                        h.replica,
                        tok_name(h.token),
                        h.seq,
                        h.fence,
                        h.belief,
                        h.phase
                    )?;
                    if !h.records.is_empty() {
                        write!(f, " buffered[{}]", evs(h.records.iter().copied()))?;
                    }
                }
            }
        }
        for g in &self.ghosts {
            write!(f, " | travelling {}", g.call)?;
        }
        let platform: Vec<String> = self
            .platform
            .iter()
            .enumerate()
            .map(|(e, p)| {
                let name = ev_name(Ev::try_from(e).unwrap_or(Ev::MAX));
                format!("{name}:{p:?}/{}", self.outcomes[e])
            })
            .collect();
        write!(f, " | events(platform/outcomes) {}", platform.join(" "))?;
        for (r, rep) in self.replicas.iter().enumerate() {
            if rep.stalled {
                write!(f, " | r{r} stalled")?;
            }
            if rep.cancelled {
                write!(f, " | r{r} past its drain deadline")?;
            } else if rep.draining {
                write!(f, " | r{r} draining")?;
            }
        }
        Ok(())
    }
}
