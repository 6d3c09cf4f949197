//! The model: its steps (actions), how each changes the state, and the
//! properties checked.

use std::fmt;
use std::sync::Mutex;

use stateright::{Model, Property};

use crate::backend::{AdmitReply, Batch, Handoff, Reply, Verdict, classify, execute};
use crate::config::{Config, Strategy};
use crate::normalize::{fresh_token, normalize};
use crate::state::{
    AdmitPhase, Backend, Call, Delivery, Ev, Fence, Ghost, Holder, How, Phase, Platform, Replica,
    State, Task, Tok,
};

/// How a state call goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// It runs and answers.
    Ok,
    /// Its reply is lost: the caller gets an error; the request runs at some
    /// later step, or never.
    LostReply,
    /// It runs and answers, and a copy runs again at some later step.
    Duplicate,
    /// It runs, its reply is lost, and the client sends it again: the caller
    /// gets the reply of that second execution (a later step).
    Resend,
}

/// What kind of call a fault would hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Admit,
    Finish,
    Release,
    Renew,
    Claim,
}

/// One step of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The platform delivers an event to a replica, whose ack path calls
    /// `admit` with a new request id.
    Deliver {
        /// The replica.
        replica: u8,
        /// The event.
        ev: Ev,
        /// How the admit call goes.
        mode: Mode,
    },
    /// A delivery repeats its admit with the same request id (durable).
    RepeatAdmit {
        /// The replica.
        replica: u8,
        /// The request id.
        rid: Tok,
        /// How the call goes.
        mode: Mode,
    },
    /// The client's re-send of an admit runs; its reply reaches the caller.
    Resent {
        /// The replica.
        replica: u8,
        /// The request id.
        rid: Tok,
    },
    /// The ack deadline passes: the platform is told to retry while the
    /// delivery goes on.
    AckDeadline {
        /// The replica.
        replica: u8,
        /// The request id.
        rid: Tok,
    },
    /// A delivery stops repeating its admit (its bound passed).
    GiveUpAdmit {
        /// The replica.
        replica: u8,
        /// The request id.
        rid: Tok,
    },
    /// A handler returns.
    Complete {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
    },
    /// The keeper's believed expiry passed: the run is preempted.
    Preempt {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
    },
    /// A holder calls `finish`.
    Finish {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
        /// How the call goes.
        mode: Mode,
    },
    /// A holder stops repeating `finish` (its bound passed).
    GiveUpFinish {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
    },
    /// A waiting holder (debounce) wakes up.
    Wake {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
    },
    /// A holder calls `release`.
    Release {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
        /// How the call goes.
        mode: Mode,
    },
    /// A holder stops repeating `release` (its bound passed).
    GiveUpRelease {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
    },
    /// A holder's keeper calls `renew`.
    Renew {
        /// The replica.
        replica: u8,
        /// The holder's token.
        token: Tok,
        /// How the call goes.
        mode: Mode,
    },
    /// A replica's recovery sweep claims the scope (lease free, work left).
    Sweep {
        /// The replica.
        replica: u8,
        /// How the claim goes.
        mode: Mode,
    },
    /// A travelling request runs; its reply reaches no one.
    GhostRuns(Call),
    /// A lost reply's request never arrives.
    GhostVanishes(Call),
    /// Debounce: the scope has been quiet long enough for the pending event.
    Quiet,
    /// Time advances one tick.
    Tick,
    /// A replica crashes (and starts again with no state).
    Crash(u8),
    /// A replica stalls.
    Stall(u8),
    /// A stalled replica resumes.
    Resume(u8),
    /// A replica starts shutting down.
    Shutdown(u8),
    /// A shutting-down replica's drain deadline passes.
    DrainDeadline(u8),
}

impl Action {
    /// Whether the step injects a fault (the checker needs none of them to make
    /// progress).
    pub fn is_fault(&self) -> bool {
        match self {
            Self::Deliver { mode, .. }
            | Self::RepeatAdmit { mode, .. }
            | Self::Finish { mode, .. }
            | Self::Release { mode, .. }
            | Self::Renew { mode, .. }
            | Self::Sweep { mode, .. } => *mode != Mode::Ok,
            Self::Crash(_) | Self::Stall(_) | Self::Shutdown(_) => true,
            _ => false,
        }
    }

    /// Whether the step loses a reply (or has a client re-send it) on a call
    /// of this kind: `"admit"`, `"finish"`, `"release"`, `"renew"`, `"claim"`.
    pub fn loses_reply_of(&self, call: &str) -> bool {
        let lost = |m: &Mode| matches!(m, Mode::LostReply | Mode::Resend);
        match self {
            Self::Deliver { mode, .. } | Self::RepeatAdmit { mode, .. } => {
                call == "admit" && lost(mode)
            }
            Self::Finish { mode, .. } => call == "finish" && lost(mode),
            Self::Release { mode, .. } => call == "release" && lost(mode),
            Self::Renew { mode, .. } => call == "renew" && lost(mode),
            Self::Sweep { mode, .. } => call == "claim" && lost(mode),
            _ => false,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = |mode: &Mode| match mode {
            Mode::Ok => "",
            Mode::LostReply => " -- REPLY LOST",
            Mode::Duplicate => " -- runs, and a COPY stays in flight",
            Mode::Resend => " -- runs, reply lost, client RE-SENDS",
        };
        match self {
            Self::Deliver { replica, ev, mode } => {
                write!(f, "r{replica}: deliver e{} -> admit{}", ev + 1, m(mode))
            }
            Self::RepeatAdmit { replica, rid, mode } => {
                write!(f, "r{replica}: repeat admit(t{rid}){}", m(mode))
            }
            Self::Resent { replica, rid } => write!(f, "r{replica}: re-sent admit(t{rid}) runs"),
            Self::AckDeadline { replica, rid } => {
                write!(f, "r{replica}: ack deadline of t{rid}: platform told retry")
            }
            Self::GiveUpAdmit { replica, rid } => write!(f, "r{replica}: gives up admit(t{rid})"),
            Self::Complete { replica, token } => {
                write!(f, "r{replica}: t{token}'s handler returns")
            }
            Self::Preempt { replica, token } => write!(f, "r{replica}: t{token}'s run preempted"),
            Self::Finish {
                replica,
                token,
                mode,
            } => write!(f, "r{replica}: finish(t{token}){}", m(mode)),
            Self::GiveUpFinish { replica, token } => {
                write!(f, "r{replica}: gives up finish(t{token})")
            }
            Self::Wake { replica, token } => write!(f, "r{replica}: t{token} wakes"),
            Self::Release {
                replica,
                token,
                mode,
            } => write!(f, "r{replica}: release(t{token}){}", m(mode)),
            Self::GiveUpRelease { replica, token } => {
                write!(f, "r{replica}: gives up release(t{token})")
            }
            Self::Renew {
                replica,
                token,
                mode,
            } => write!(f, "r{replica}: renew(t{token}){}", m(mode)),
            Self::Sweep { replica, mode } => {
                write!(f, "r{replica}: sweep claims the scope{}", m(mode))
            }
            Self::GhostRuns(c) => write!(f, "travelling {c} runs (reply to nobody)"),
            Self::GhostVanishes(c) => write!(f, "travelling {c} never arrives"),
            Self::Quiet => write!(f, "the pending event is quiet"),
            Self::Tick => write!(f, "tick"),
            Self::Crash(r) => write!(f, "r{r} CRASHES"),
            Self::Stall(r) => write!(f, "r{r} STALLS"),
            Self::Resume(r) => write!(f, "r{r} resumes"),
            Self::Shutdown(r) => write!(f, "r{r} SHUTS DOWN"),
            Self::DrainDeadline(r) => write!(f, "r{r}: drain deadline"),
        }
    }
}

/// Which branch of their script the calls of one step took, when asked for
/// (see [`ProtocolModel::explain`]).
#[derive(Debug, Default)]
struct Notes(Option<Mutex<Vec<String>>>);

impl Notes {
    fn is_on(&self) -> bool {
        self.0.is_some()
    }

    fn push(&self, prefix: &str, what: &str) {
        if let Some(Ok(mut list)) = self.0.as_ref().map(Mutex::lock) {
            list.push(format!("{prefix}{what}"));
        }
    }

    fn take(&self) -> Vec<String> {
        match self.0.as_ref().map(Mutex::lock) {
            Some(Ok(mut list)) => std::mem::take(&mut *list),
            _ => Vec::new(),
        }
    }
}

/// The protocol model for one [`Config`].
#[derive(Debug)]
pub struct ProtocolModel {
    /// What it explores.
    pub cfg: Config,
    notes: Notes,
}

impl Clone for ProtocolModel {
    fn clone(&self) -> Self {
        Self::new(self.cfg)
    }
}

impl ProtocolModel {
    /// A model of `cfg`.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            notes: Notes::default(),
        }
    }

    /// Which branch of its script each call made by `action` in `state` takes
    /// (`"late "` before a travelling request's): for coverage figures.
    pub fn explain(&self, state: &State, action: &Action) -> Vec<String> {
        let m = Self {
            cfg: self.cfg,
            notes: Notes(Some(Mutex::new(Vec::new()))),
        };
        let mut next = state.clone();
        m.apply(&mut next, action);
        m.notes.take()
    }

    /// The state no step has changed yet.
    pub fn initial(&self) -> State {
        let events = usize::from(self.cfg.events);
        State {
            backend: Backend {
                lease: None,
                inflight: None,
                queue: Vec::new(),
                pending: None,
                outbox: Vec::new(),
                marks: vec![None; events],
                acked: Vec::new(),
                fence: 0,
            },
            replicas: vec![Replica::default(); usize::from(self.cfg.replicas)],
            tasks: Vec::new(),
            ghosts: Vec::new(),
            platform: vec![Platform::Fresh; events],
            outcomes: vec![0; events],
            ran_under: vec![0; events],
            faults_left: self.cfg.fault_budget,
            crashed_or_stalled: false,
            fence_reused: false,
            reran: false,
        }
    }

    fn modes(&self, s: &State, kind: Kind) -> Vec<Mode> {
        let mut modes = vec![Mode::Ok];
        let f = &self.cfg.faults;
        let hit = match kind {
            Kind::Admit => f.calls.admit,
            Kind::Finish => f.calls.finish,
            Kind::Release => f.calls.release,
            Kind::Renew => f.calls.renew,
            Kind::Claim => f.calls.claim,
        };
        if s.faults_left > 0 && hit {
            if f.lost_reply {
                modes.push(Mode::LostReply);
            }
            if f.duplicate {
                modes.push(Mode::Duplicate);
            }
            if f.resend && kind == Kind::Admit {
                modes.push(Mode::Resend);
            }
        }
        modes
    }

    /// Work a sweep would claim.
    fn claimable(&self, b: &Backend) -> bool {
        if self.cfg.durable() && !self.cfg.ablations.claim_needs_waiting {
            b.has_work()
        } else {
            !b.queue.is_empty() || b.pending.is_some()
        }
    }

    /// Nothing can happen any more but faults and time passing to no effect:
    /// no task, no travelling request, no lease, no replica stalled, no event
    /// the platform could deliver, no work a sweep could claim.
    pub fn quiescent(&self, s: &State) -> bool {
        let open = s.replicas.iter().any(|r| !r.draining);
        s.tasks.is_empty()
            && s.ghosts.is_empty()
            && s.backend.lease.is_none()
            && s.replicas.iter().all(|r| !r.stalled)
            && !(open
                && s.platform
                    .iter()
                    .any(|p| matches!(p, Platform::Fresh | Platform::Retry)))
            && !(open && self.claimable(&s.backend))
    }

    // ------------------------------------------------------------------ steps

    /// Runs `call` as `mode` says; `None` when the caller gets no reply.
    fn call(&self, s: &mut State, call: Call, mode: Mode) -> Option<Reply> {
        match mode {
            Mode::Ok => Some(self.execute(s, call, "")),
            Mode::LostReply => {
                s.faults_left = s.faults_left.saturating_sub(1);
                s.ghosts.push(Ghost {
                    call,
                    may_vanish: true,
                });
                None
            }
            Mode::Duplicate => {
                s.faults_left = s.faults_left.saturating_sub(1);
                let reply = self.execute(s, call, "");
                s.ghosts.push(Ghost {
                    call,
                    may_vanish: false,
                });
                Some(reply)
            }
            Mode::Resend => {
                s.faults_left = s.faults_left.saturating_sub(1);
                self.execute(s, call, "");
                None
            }
        }
    }

    /// Runs `call` on the backend, noting which branch it took when notes are
    /// being taken.
    fn execute(&self, s: &mut State, call: Call, prefix: &'static str) -> Reply {
        let before = self.notes.is_on().then(|| s.backend.clone());
        let reply = execute(&self.cfg, &mut s.backend, call);
        if let Some(before) = before {
            self.notes
                .push(prefix, classify(&self.cfg, &before, call, &reply));
        }
        reply
    }

    fn record(s: &mut State, ev: Ev) {
        let n = &mut s.outcomes[usize::from(ev)];
        *n = (*n + 1).min(2);
    }

    fn commit(s: &mut State, h: &mut Holder) {
        for ev in std::mem::take(&mut h.records) {
            Self::record(s, ev);
        }
    }

    /// A handler starts running `ev` under `fence` (I5).
    fn start_run(s: &mut State, ev: Ev, fence: Fence) {
        let last = &mut s.ran_under[usize::from(ev)];
        if *last != 0 {
            s.reran = true;
            if fence <= *last {
                s.fence_reused = true;
            }
        }
        *last = (*last).max(fence);
    }

    /// The admit of `d` answered `reply`.
    fn admitted(&self, s: &mut State, d: &Delivery, reply: AdmitReply) {
        let e = usize::from(d.ev);
        if !d.answered {
            s.platform[e] = Platform::Acked;
        }
        if let Some(carried) = reply.carried {
            // Legacy: the evicted or superseded entry, recorded from the reply.
            Self::record(s, carried);
        }
        let holder = |fence| Holder {
            replica: d.replica,
            token: d.rid,
            seq: 0,
            fence,
            belief: self.cfg.lease_ttl,
            phase: Phase::Finish(None),
            records: Vec::new(),
        };
        match reply.verdict {
            Verdict::Run(fence) => {
                let items = [crate::state::Item {
                    ev: d.ev,
                    expired: false,
                }];
                self.start_batch(s, holder(fence), &items, &[]);
            }
            Verdict::Hold(fence) => self.after_run(s, holder(fence)),
            Verdict::Duplicate | Verdict::Queued | Verdict::Pending | Verdict::Stored => {}
        }
    }

    /// A holder got a batch: plans it (reports and expired entries recorded as
    /// their fate, the newest live entry runs, the older ones `Superseded`) and
    /// starts the run.
    fn start_batch(
        &self,
        s: &mut State,
        mut h: Holder,
        items: &[crate::state::Item],
        reports: &[Ev],
    ) {
        let durable = self.cfg.durable();
        let mut outcomes: Vec<Ev> = reports.to_vec();
        let mut live: Vec<Ev> = Vec::new();
        for it in items {
            if it.expired {
                outcomes.push(it.ev);
            } else {
                live.push(it.ev);
            }
        }
        let newest = live.pop();
        outcomes.extend(live);
        if durable {
            h.records = outcomes;
        } else {
            for ev in outcomes {
                Self::record(s, ev);
            }
        }
        let Some(ev) = newest else {
            return self.after_run(s, h);
        };
        let replica = s.replicas[usize::from(h.replica)];
        if !durable {
            // The old keeper starts with each run.
            h.belief = self.cfg.lease_ttl;
        }
        if replica.cancelled {
            // Shutdown cancels the run at once.
            if durable {
                h.records.clear();
                h.phase = Phase::Release(How::HandBack, None);
            } else {
                Self::record(s, ev);
                h.phase = Phase::Release(How::Done, None);
            }
            s.tasks.push(Task::Holder(h));
            return;
        }
        if h.belief == 0 {
            // The keeper already said the lease is lost: preempted at once.
            return;
        }
        Self::start_run(s, ev, h.fence);
        h.phase = Phase::Run(ev);
        s.tasks.push(Task::Holder(h));
    }

    /// A holder whose batch has no more runs: gives the scope up when shutting
    /// down, else acknowledges the batch.
    fn after_run(&self, s: &mut State, mut h: Holder) {
        h.phase = if s.replicas[usize::from(h.replica)].draining {
            Phase::Release(How::Done, None)
        } else {
            Phase::Finish(None)
        };
        s.tasks.push(Task::Holder(h));
    }

    fn take_holder(s: &mut State, token: Tok) -> Option<Holder> {
        let i = s
            .tasks
            .iter()
            .position(|t| matches!(t, Task::Holder(h) if h.token == token))?;
        match s.tasks.remove(i) {
            Task::Holder(h) => Some(h),
            Task::Delivery(_) => None,
        }
    }

    fn take_delivery(s: &mut State, rid: Tok) -> Option<Delivery> {
        let i = s
            .tasks
            .iter()
            .position(|t| matches!(t, Task::Delivery(d) if d.rid == rid))?;
        match s.tasks.remove(i) {
            Task::Delivery(d) => Some(d),
            Task::Holder(_) => None,
        }
    }

    /// The admit of `d` (sent `age` ticks after its first attempt) goes as
    /// `mode` says.
    fn admit_attempt(&self, s: &mut State, mut d: Delivery, age: u8, mode: Mode) {
        let call = Call::Admit {
            ev: d.ev,
            rid: d.rid,
        };
        match self.call(s, call, mode) {
            Some(Reply::Admit(reply)) => self.admitted(s, &d, reply),
            Some(_) => {}
            None if mode == Mode::Resend => {
                d.phase = AdmitPhase::Resending { age };
                s.tasks.push(Task::Delivery(d));
            }
            None if self.cfg.durable() => {
                // Outcome unknown: repeat the same request.
                d.phase = AdmitPhase::Repeating { age };
                s.tasks.push(Task::Delivery(d));
            }
            None => {
                // Legacy: recorded `Rejected`, answered so the platform retries.
                if !d.answered {
                    s.platform[usize::from(d.ev)] = Platform::Retry;
                }
            }
        }
    }

    /// The holder's `finish` answered (`None`: an error).
    fn finished(&self, s: &mut State, mut h: Holder, age: u8, answer: Option<Handoff>) {
        let durable = self.cfg.durable();
        let ttl = self.cfg.lease_ttl;
        let confirm = |belief: u8| if belief == 0 { 0 } else { belief.max(ttl) };
        match answer {
            Some(Handoff::Run(Batch {
                seq,
                items,
                reports,
            })) => {
                Self::commit(s, &mut h);
                h.seq = seq;
                h.belief = confirm(h.belief);
                self.start_batch(s, h, &items, &reports);
            }
            Some(Handoff::Wait) => {
                Self::commit(s, &mut h);
                h.belief = confirm(h.belief);
                h.phase = Phase::Wait;
                s.tasks.push(Task::Holder(h));
            }
            Some(Handoff::Released) => Self::commit(s, &mut h),
            Some(Handoff::Lost) => {}
            None => {
                if !durable {
                    // The old holder waited for its retry under a new keeper.
                    h.belief = ttl;
                }
                h.phase = Phase::Finish(Some(age));
                s.tasks.push(Task::Holder(h));
            }
        }
    }

    // ---------------------------------------------------------------- time

    /// Whether time may pass: every replica that is not stalled has renewed a
    /// lease it is about to believe lost, and repeated a call about to pass its
    /// bound.
    fn may_tick(&self, s: &State) -> bool {
        s.tasks.iter().all(|t| {
            if s.replicas[usize::from(t.replica())].stalled {
                return true;
            }
            match t {
                Task::Holder(h) => {
                    h.belief != 1
                        && match h.phase {
                            Phase::Finish(Some(a)) => a + 1 < self.cfg.finish_bound(),
                            Phase::Release(_, Some(a)) => a + 1 < self.cfg.release_bound(),
                            _ => true,
                        }
                }
                Task::Delivery(d) => match d.phase {
                    AdmitPhase::Repeating { age } => age + 1 < self.cfg.admit_bound(),
                    AdmitPhase::Resending { .. } => true,
                },
            }
        })
    }

    fn tick(&self, s: &mut State) {
        let ttl = self.cfg.lease_ttl;
        if let Some(l) = s.backend.lease.as_mut() {
            l.left = l.left.saturating_sub(1);
            if l.left == 0 {
                s.backend.lease = None;
            }
        }
        if let Some(ettl) = self.cfg.entry_ttl {
            for e in &mut s.backend.queue {
                e.age = (e.age + 1).min(ettl);
            }
        }
        let (fb, rb, ab) = (
            self.cfg.finish_bound(),
            self.cfg.release_bound(),
            self.cfg.admit_bound(),
        );
        for t in &mut s.tasks {
            match t {
                Task::Holder(h) => {
                    h.belief = h.belief.saturating_sub(1);
                    match &mut h.phase {
                        Phase::Finish(Some(a)) => *a = (*a + 1).min(fb),
                        Phase::Release(_, Some(a)) => *a = (*a + 1).min(rb),
                        _ => {}
                    }
                }
                Task::Delivery(d) => match &mut d.phase {
                    AdmitPhase::Repeating { age } | AdmitPhase::Resending { age } => {
                        *age = (*age + 1).min(ab.max(ttl));
                    }
                },
            }
        }
    }

    // ------------------------------------------------------------ applying

    fn apply(&self, s: &mut State, action: &Action) {
        let durable = self.cfg.durable();
        match *action {
            Action::Deliver { replica, ev, mode } => {
                let rid = fresh_token(s);
                s.platform[usize::from(ev)] = Platform::Out;
                let d = Delivery {
                    replica,
                    rid,
                    ev,
                    answered: false,
                    phase: AdmitPhase::Repeating { age: 0 },
                };
                self.admit_attempt(s, d, 0, mode);
            }
            Action::RepeatAdmit { rid, mode, .. } => {
                if let Some(d) = Self::take_delivery(s, rid) {
                    let age = match d.phase {
                        AdmitPhase::Repeating { age } | AdmitPhase::Resending { age } => age,
                    };
                    self.admit_attempt(s, d, age, mode);
                }
            }
            Action::Resent { rid, .. } => {
                if let Some(d) = Self::take_delivery(s, rid) {
                    let age = match d.phase {
                        AdmitPhase::Repeating { age } | AdmitPhase::Resending { age } => age,
                    };
                    self.admit_attempt(s, d, age, Mode::Ok);
                }
            }
            Action::AckDeadline { rid, .. } => {
                if let Some(mut d) = Self::take_delivery(s, rid) {
                    d.answered = true;
                    let p = &mut s.platform[usize::from(d.ev)];
                    if *p != Platform::Acked {
                        *p = Platform::Retry;
                    }
                    s.tasks.push(Task::Delivery(d));
                }
            }
            Action::GiveUpAdmit { rid, .. } => {
                if let Some(d) = Self::take_delivery(s, rid) {
                    if self.give_up_costs(d_age(&d), self.cfg.admit_bound()) {
                        s.faults_left = s.faults_left.saturating_sub(1);
                    }
                    let p = &mut s.platform[usize::from(d.ev)];
                    if !d.answered && *p != Platform::Acked {
                        *p = Platform::Retry;
                    }
                }
            }
            Action::Complete { token, .. } => {
                if let Some(mut h) = Self::take_holder(s, token)
                    && let Phase::Run(ev) = h.phase
                {
                    if durable {
                        h.records.push(ev);
                    } else {
                        Self::record(s, ev);
                    }
                    self.after_run(s, h);
                }
            }
            Action::Preempt { token, .. } => {
                if let Some(h) = Self::take_holder(s, token)
                    && let Phase::Run(ev) = h.phase
                    && !durable
                {
                    // Legacy: recorded `Preempted`.
                    Self::record(s, ev);
                }
            }
            Action::Finish { token, mode, .. } => {
                if let Some(h) = Self::take_holder(s, token) {
                    let age = match h.phase {
                        Phase::Finish(a) => a.unwrap_or(0),
                        _ => 0,
                    };
                    let call = Call::Finish {
                        tok: h.token,
                        seq: h.seq,
                    };
                    let answer = match self.call(s, call, mode) {
                        Some(Reply::Finish(handoff)) => Some(handoff),
                        _ => None,
                    };
                    self.finished(s, h, age, answer);
                }
            }
            Action::GiveUpFinish { token, .. } => {
                if let Some(h) = Self::take_holder(s, token)
                    && let Phase::Finish(Some(a)) = h.phase
                    && self.give_up_costs(a, self.cfg.finish_bound())
                {
                    s.faults_left = s.faults_left.saturating_sub(1);
                }
            }
            Action::Wake { token, .. } => {
                if let Some(mut h) = Self::take_holder(s, token)
                    && h.belief > 0
                {
                    if s.replicas[usize::from(h.replica)].draining {
                        h.phase = Phase::Release(How::Done, None);
                    } else {
                        h.phase = Phase::Finish(None);
                    }
                    s.tasks.push(Task::Holder(h));
                }
            }
            Action::Release { token, mode, .. } => {
                if let Some(mut h) = Self::take_holder(s, token)
                    && let Phase::Release(how, age) = h.phase
                {
                    let call = Call::Release {
                        tok: h.token,
                        seq: h.seq,
                        how,
                    };
                    match self.call(s, call, mode) {
                        Some(Reply::Release(true)) if how == How::Done => Self::commit(s, &mut h),
                        Some(_) => {}
                        None if durable => {
                            h.phase = Phase::Release(how, Some(age.unwrap_or(0)));
                            s.tasks.push(Task::Holder(h));
                        }
                        None => {}
                    }
                }
            }
            Action::GiveUpRelease { token, .. } => {
                if let Some(h) = Self::take_holder(s, token)
                    && let Phase::Release(_, Some(a)) = h.phase
                    && self.give_up_costs(a, self.cfg.release_bound())
                {
                    s.faults_left = s.faults_left.saturating_sub(1);
                }
            }
            Action::Renew { token, mode, .. } => {
                if let Some(mut h) = Self::take_holder(s, token) {
                    match self.call(s, Call::Renew { tok: h.token }, mode) {
                        Some(Reply::Renew(true)) => h.belief = self.cfg.lease_ttl,
                        Some(_) => {
                            h.belief = 0;
                            match h.phase {
                                // The run is preempted; a waiting holder stops.
                                Phase::Run(ev) => {
                                    if !durable {
                                        Self::record(s, ev);
                                    }
                                    return;
                                }
                                Phase::Wait => return,
                                // Legacy: the finish retry ends with the lease.
                                Phase::Finish(Some(_)) if !durable => return,
                                _ => {}
                            }
                        }
                        None => {}
                    }
                    s.tasks.push(Task::Holder(h));
                }
            }
            Action::Sweep { replica, mode } => {
                let tok = fresh_token(s);
                if let Some(Reply::Claim(Some(fence))) = self.call(s, Call::Claim { tok }, mode) {
                    let h = Holder {
                        replica,
                        token: tok,
                        seq: 0,
                        fence,
                        belief: self.cfg.lease_ttl,
                        phase: Phase::Finish(None),
                        records: Vec::new(),
                    };
                    self.after_run(s, h);
                }
            }
            Action::GhostRuns(call) => {
                if let Some(i) = s.ghosts.iter().position(|g| g.call == call) {
                    s.ghosts.remove(i);
                    self.execute(s, call, "late ");
                }
            }
            Action::GhostVanishes(call) => {
                if let Some(i) = s.ghosts.iter().position(|g| g.call == call && g.may_vanish) {
                    s.ghosts.remove(i);
                }
            }
            Action::Quiet => {
                if let Some(p) = s.backend.pending.as_mut() {
                    p.ready = true;
                }
            }
            Action::Tick => self.tick(s),
            Action::Crash(r) => {
                s.faults_left = s.faults_left.saturating_sub(1);
                s.crashed_or_stalled = true;
                let (gone, kept): (Vec<Task>, Vec<Task>) =
                    s.tasks.drain(..).partition(|t| t.replica() == r);
                s.tasks = kept;
                for t in gone {
                    if let Task::Delivery(d) = t {
                        let p = &mut s.platform[usize::from(d.ev)];
                        if !d.answered && *p != Platform::Acked {
                            *p = Platform::Retry;
                        }
                    }
                }
                s.replicas[usize::from(r)] = Replica::default();
            }
            Action::Stall(r) => {
                s.faults_left = s.faults_left.saturating_sub(1);
                s.crashed_or_stalled = true;
                s.replicas[usize::from(r)].stalled = true;
            }
            Action::Resume(r) => s.replicas[usize::from(r)].stalled = false,
            Action::Shutdown(r) => {
                s.faults_left = s.faults_left.saturating_sub(1);
                s.replicas[usize::from(r)].draining = true;
            }
            Action::DrainDeadline(r) => {
                s.replicas[usize::from(r)].cancelled = true;
                for t in &mut s.tasks {
                    if let Task::Holder(h) = t
                        && h.replica == r
                        && let Phase::Run(ev) = h.phase
                    {
                        if durable {
                            h.records.clear();
                            h.phase = Phase::Release(How::HandBack, None);
                        } else {
                            let n = &mut s.outcomes[usize::from(ev)];
                            *n = (*n + 1).min(2);
                            h.phase = Phase::Release(How::Done, None);
                        }
                    }
                }
            }
        }
    }

    /// Giving a call up before its bound passed means every repeat failed: a
    /// fault. At the bound (reached only across a stall) it is what the
    /// runtime does anyway.
    fn give_up_costs(&self, age: u8, bound: u8) -> bool {
        age < bound
    }

    fn next(&self, s: &State, action: &Action) -> State {
        let mut n = s.clone();
        self.apply(&mut n, action);
        normalize(&mut n);
        n
    }

    /// The steps possible from `s`, each one changing it.
    fn steps(&self, s: &State, out: &mut Vec<Action>) {
        let cfg = &self.cfg;
        let faults = s.faults_left > 0;
        let up = |r: u8| !s.replicas[usize::from(r)].stalled;
        // The platform: first deliveries in event order (events are
        // interchangeable), redeliveries of "retry" in any order.
        for e in 0..cfg.events {
            let p = s.platform[usize::from(e)];
            let first_in_order = e == 0 || s.platform[usize::from(e - 1)] != Platform::Fresh;
            let deliverable = match p {
                Platform::Fresh => first_in_order,
                Platform::Retry => true,
                Platform::Out | Platform::Acked => false,
            };
            if !deliverable {
                continue;
            }
            for r in 0..cfg.replicas {
                let rep = s.replicas[usize::from(r)];
                if rep.stalled || rep.draining {
                    continue;
                }
                for mode in self.modes(s, Kind::Admit) {
                    out.push(Action::Deliver {
                        replica: r,
                        ev: e,
                        mode,
                    });
                }
            }
        }
        for t in &s.tasks {
            let replica = t.replica();
            if !up(replica) {
                continue;
            }
            match t {
                Task::Delivery(d) => {
                    let rid = d.rid;
                    match d.phase {
                        AdmitPhase::Repeating { age } => {
                            if age < cfg.admit_bound() {
                                for mode in self.modes(s, Kind::Admit) {
                                    out.push(Action::RepeatAdmit { replica, rid, mode });
                                }
                            }
                            if (faults && cfg.faults.give_up) || age >= cfg.admit_bound() {
                                out.push(Action::GiveUpAdmit { replica, rid });
                            }
                        }
                        AdmitPhase::Resending { .. } => out.push(Action::Resent { replica, rid }),
                    }
                    if !d.answered {
                        out.push(Action::AckDeadline { replica, rid });
                    }
                }
                Task::Holder(h) => {
                    let token = h.token;
                    match h.phase {
                        Phase::Run(_) => {
                            out.push(Action::Complete { replica, token });
                            if h.belief == 0 {
                                out.push(Action::Preempt { replica, token });
                            }
                        }
                        Phase::Finish(age) => {
                            let bound = cfg.finish_bound();
                            if age.is_none_or(|a| a < bound) {
                                for mode in self.modes(s, Kind::Finish) {
                                    out.push(Action::Finish {
                                        replica,
                                        token,
                                        mode,
                                    });
                                }
                            }
                            if let Some(a) = age
                                && ((faults && cfg.faults.give_up) || a >= bound)
                            {
                                out.push(Action::GiveUpFinish { replica, token });
                            }
                        }
                        Phase::Wait => out.push(Action::Wake { replica, token }),
                        Phase::Release(_, age) => {
                            let bound = cfg.release_bound();
                            if age.is_none_or(|a| a < bound) {
                                for mode in self.modes(s, Kind::Release) {
                                    out.push(Action::Release {
                                        replica,
                                        token,
                                        mode,
                                    });
                                }
                            }
                            if let Some(a) = age
                                && ((faults && cfg.faults.give_up) || a >= bound)
                            {
                                out.push(Action::GiveUpRelease { replica, token });
                            }
                        }
                    }
                    if h.belief > 0 {
                        for mode in self.modes(s, Kind::Renew) {
                            out.push(Action::Renew {
                                replica,
                                token,
                                mode,
                            });
                        }
                    }
                }
            }
        }
        if s.backend.lease.is_none() && self.claimable(&s.backend) {
            for r in 0..cfg.replicas {
                let rep = s.replicas[usize::from(r)];
                if rep.stalled || rep.draining {
                    continue;
                }
                for mode in self.modes(s, Kind::Claim) {
                    out.push(Action::Sweep { replica: r, mode });
                }
            }
        }
        let mut seen: Vec<Ghost> = Vec::new();
        for g in &s.ghosts {
            if seen.contains(g) {
                continue;
            }
            seen.push(*g);
            out.push(Action::GhostRuns(g.call));
            if g.may_vanish {
                out.push(Action::GhostVanishes(g.call));
            }
        }
        if cfg.strategy == Strategy::Debounce && s.backend.pending.is_some_and(|p| !p.ready) {
            out.push(Action::Quiet);
        }
        if self.may_tick(s) {
            let mut t = s.clone();
            self.tick(&mut t);
            if t != *s {
                out.push(Action::Tick);
            }
        }
        for r in 0..cfg.replicas {
            let rep = s.replicas[usize::from(r)];
            if rep.stalled {
                out.push(Action::Resume(r));
            }
            if rep.draining && !rep.cancelled && !rep.stalled {
                out.push(Action::DrainDeadline(r));
            }
            if !faults {
                continue;
            }
            let f = &cfg.faults;
            if f.crash {
                out.push(Action::Crash(r));
            }
            if f.stall && !rep.stalled {
                out.push(Action::Stall(r));
            }
            let others_open = s
                .replicas
                .iter()
                .enumerate()
                .any(|(i, o)| usize::from(r) != i && !o.draining);
            if f.shutdown && !rep.draining && !rep.stalled && others_open {
                out.push(Action::Shutdown(r));
            }
        }
    }
}

fn d_age(d: &Delivery) -> u8 {
    match d.phase {
        AdmitPhase::Repeating { age } | AdmitPhase::Resending { age } => age,
    }
}

impl Model for ProtocolModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.steps(state, actions);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        Some(self.next(last, &action))
    }

    fn format_action(&self, action: &Action) -> String {
        action.to_string()
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let c = &self.cfg.checks;
        let mut p = Vec::new();
        if c.mutual_exclusion {
            p.push(Property::always(crate::I1, |_, s: &State| {
                s.holders()
                    .filter(|h| matches!(h.phase, Phase::Run(_)) && h.belief > 0)
                    .count()
                    <= 1
            }));
        }
        if c.no_silent_loss {
            p.push(Property::always(crate::I2, |m: &Self, s: &State| {
                !m.quiescent(s)
                    || s.platform
                        .iter()
                        .zip(&s.outcomes)
                        .all(|(p, n)| *p != Platform::Acked || *n > 0)
            }));
        }
        if c.nothing_stranded {
            p.push(Property::always(crate::I3, |m: &Self, s: &State| {
                !m.quiescent(s) || !s.backend.has_work()
            }));
        }
        if c.exactly_once {
            p.push(Property::always(crate::I2X, |m: &Self, s: &State| {
                (s.crashed_or_stalled && !m.cfg.checks.exactly_once_despite_crashes)
                    || s.outcomes.iter().all(|n| *n <= 1)
            }));
        }
        if c.fences_grow {
            p.push(Property::always(crate::I5, |_, s: &State| !s.fence_reused));
        }
        if c.progress {
            p.push(Property::always(crate::PROGRESS, |m: &Self, s: &State| {
                if m.quiescent(s) {
                    return true;
                }
                let mut actions = Vec::new();
                m.steps(s, &mut actions);
                actions.iter().any(|a| !a.is_fault())
            }));
        }
        if c.can_finish {
            p.push(Property::sometimes(
                crate::CAN_FINISH,
                |m: &Self, s: &State| {
                    m.quiescent(s)
                        && s.platform.iter().all(|p| *p == Platform::Acked)
                        && s.outcomes.iter().all(|n| *n > 0)
                },
            ));
        }
        if c.can_rerun {
            p.push(Property::sometimes(crate::CAN_RERUN, |_, s: &State| {
                s.reran
            }));
        }
        p
    }
}
