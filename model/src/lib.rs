//! An executable model of chat-rs's lease / queue / debounce protocol, checked
//! with [stateright](https://docs.rs/stateright).
//!
//! # What is modelled
//!
//! One scope of the state backend and the runtime replicas that share it:
//!
//! * **The backend**: the scope's lease (token, fence, batch number, ticks
//!   left), its in-flight batch, its queue or pending debounce event, its
//!   outbox of reports, the events' dedupe marks (with the request id and what
//!   the admission recorded), the acknowledged `(token, seq)` pairs, and the
//!   fence counter. Each call (`admit`, `finish`, `release`, `renew`, `claim`)
//!   is one atomic step, with the semantics of the Lua scripts in
//!   `crates/chat-state-redis/src/lua/` (the memory backend implements the same
//!   rules).
//! * **The platform** delivers each event; a delivery answered "retry" (or not
//!   answered) is delivered again with a new request id, an acknowledged one is
//!   not.
//! * **The runtime** on each replica: the ack path (`admit`, repeated with the
//!   same request id while its outcome is unknown; the platform is told to
//!   retry at the ack deadline), holders (run the batch, then `finish`; record
//!   the batch's outcomes only once `finish` acknowledged it, discard them when
//!   the batch is another holder's), the lease keeper (renews while the holder
//!   believes it holds the lease; the believed expiry is the send time of the
//!   last confirmed grant or renewal plus the TTL), shutdown (drain, then
//!   `release`), and the recovery sweep (`claim`, then `finish` from batch 0).
//! * **Faults**, all drawn from one budget: lost replies (the request runs
//!   later, or never), duplicate executions, client re-sends of `admit`,
//!   crashes, stalls and shutdowns.
//!
//! Time is counted in ticks (lease TTL 2, queue entry TTL 3 by default). A
//! replica that is not stalled is timely: it renews its lease before its
//! believed expiry and repeats a failed call before its bound passes; only a
//! stall (or a further fault) breaks that.
//!
//! [`Protocol::Legacy`] models the protocol before durable runs, which loses
//! events; [`Protocol::Durable`] the one implemented now. [`Ablations`] take
//! pieces of the durable protocol away to show each is needed.
//! [`Config::replays_extend_lease`] (on, as the scripts do) makes a replayed
//! `admit` or `finish` answer extend the lease like the first answer did;
//! switched off, a holder can believe in a lease that has already expired,
//! since the runtime dates the lease from the call that answered (I1 fails;
//! see `tests/protocol.rs`).
//!
//! # Properties
//!
//! * [`I1`] mutual exclusion up to expiry; [`I2`] no silent loss; [`I3`]
//!   nothing stranded; [`I2X`] exactly once without crashes and stalls; [`I5`]
//!   re-runs have higher fences; [`PROGRESS`] no state is stuck. See
//!   [`Checks`] for their precise statements.
//!
//! # Running it
//!
//! `cargo test -p chat-model` runs the checks of `tests/protocol.rs`: the
//! legacy protocol's counterexamples, the durable protocol under each family of
//! faults, the ablations and the residual limits; `-- --nocapture` prints the
//! state counts and the traces. The crate is meant to be built with
//! `opt-level = 3` (for it and for stateright) even in debug builds. To explore
//! another configuration:
//!
//! ```no_run
//! use chat_model::{Config, Faults, Protocol, Strategy, check};
//!
//! let cfg = Config {
//!     fault_budget: 2,
//!     ..Config::new(Protocol::Durable, Strategy::Queue).faults(Faults::CALLS)
//! };
//! let report = check(cfg);
//! println!("{} states", report.unique_states);
//! for (property, trace) in &report.counterexamples {
//!     println!("{property}:\n{trace}");
//! }
//! ```

#![forbid(unsafe_code)]

mod backend;
mod config;
mod model;
mod normalize;
mod state;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use stateright::{Checker, HasDiscoveries, Model, Path};

pub use config::{Ablations, Calls, Checks, Config, Faults, Protocol, Strategy};
pub use model::{Action, Mode, ProtocolModel};
pub use state::{
    AdmitPhase, Backend, Call, Delivery, Entry, Ev, Fence, Ghost, Holder, How, InFlight, Item,
    Lease, Mark, NOBODY, Pending, Phase, Platform, Recorded, Replica, State, Task, Tok,
};

/// I1: never two handlers running while both their holders believe they hold
/// an unexpired lease.
pub const I1: &str = "I1 mutual exclusion up to expiry";
/// I2: in every quiescent state, every event acknowledged to the platform has a
/// recorded outcome.
pub const I2: &str = "I2 no silent loss";
/// I3: no quiescent state has waiting, in-flight or reported work.
pub const I3: &str = "I3 nothing stranded";
/// I2x: without a crash or a stall, no event has two recorded outcomes.
pub const I2X: &str = "I2x exactly once without crash or stall";
/// I5: an event run again runs under a higher fence.
pub const I5: &str = "I5 re-runs have higher fences";
/// Every state that is not quiescent has a step that injects no fault.
pub const PROGRESS: &str = "progress";
/// Example: every event acknowledged and recorded, nothing left.
pub const CAN_FINISH: &str = "example: every event handled";
/// Example: an event's handler started a second time (a re-run).
pub const CAN_RERUN: &str = "example: an event runs again";

/// What one run of the checker found.
#[derive(Debug)]
pub struct Report {
    /// Unique states explored.
    pub unique_states: usize,
    /// The longest path explored.
    pub max_depth: usize,
    /// How long the run took.
    pub elapsed: Duration,
    /// Each property with a counterexample (or an example, for a `sometimes`
    /// property), with the path as a readable trace.
    pub counterexamples: BTreeMap<&'static str, String>,
    /// The same paths, as actions.
    pub paths: BTreeMap<&'static str, Vec<Action>>,
}

impl Report {
    /// The properties that failed (invariants with a counterexample).
    pub fn failed(&self) -> Vec<&'static str> {
        self.counterexamples
            .keys()
            .copied()
            .filter(|p| !p.starts_with("example"))
            .collect()
    }

    /// Whether the `sometimes` property `name` found its example.
    pub fn found(&self, name: &str) -> bool {
        self.counterexamples.contains_key(name)
    }
}

/// Checks every property of `cfg` by breadth-first search over all states.
///
/// The search records the last counterexample it met for each property; each
/// failed property is then searched again on its own, which stops at the end
/// of the first block of states holding one, so its trace is (nearly) a
/// shortest one.
pub fn check(cfg: Config) -> Report {
    let mut report = run(cfg, HasDiscoveries::All);
    for property in report.failed() {
        let short = find(cfg, property);
        if let (Some(t), Some(p)) = (
            short.counterexamples.get(property),
            short.paths.get(property),
        ) {
            report.counterexamples.insert(property, t.clone());
            report.paths.insert(property, p.clone());
        }
    }
    report
}

/// Searches breadth-first until `property` has a counterexample (or every
/// state was explored).
pub fn find(cfg: Config, property: &'static str) -> Report {
    run(cfg, HasDiscoveries::AnyOf([property].into_iter().collect()))
}

fn run(cfg: Config, until: HasDiscoveries) -> Report {
    let started = Instant::now();
    let model = ProtocolModel::new(cfg);
    let checker = model.checker().finish_when(until).spawn_bfs().join();
    let mut counterexamples = BTreeMap::new();
    let mut paths = BTreeMap::new();
    for (name, path) in checker.discoveries() {
        counterexamples.insert(name, trace(&path));
        paths.insert(name, path.into_actions());
    }
    Report {
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        elapsed: started.elapsed(),
        counterexamples,
        paths,
    }
}

/// A path as numbered lines: each step, then the state after it.
pub fn trace(path: &Path<State, Action>) -> String {
    let steps = path.clone().into_vec();
    let mut out = String::new();
    if let Some((first, _)) = steps.first() {
        out.push_str(&format!("     {first}\n"));
    }
    for (i, (_, action)) in steps.iter().enumerate() {
        if let (Some(a), Some((after, _))) = (action, steps.get(i + 1)) {
            out.push_str(&format!("{:3}. {a}\n     {after}\n", i + 1));
        }
    }
    out
}
