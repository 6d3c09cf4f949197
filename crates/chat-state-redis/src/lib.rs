//! # chat-state-redis
//!
//! A [`StateBackend`](chat_core::StateBackend) on Redis and Redis Cluster, for
//! bots that run as several replicas. It behaves exactly like the in-memory
//! reference backend and passes the same conformance suite.
//!
//! * **One round trip per step.** Every multi-step operation is one Lua
//!   function (`src/lua/`) of a library loaded once per server and called by
//!   name; `admit`, the whole ack path, is one `FCALL` for every strategy.
//! * **Redis judges time.** Leases, slots and dedupe marks expire with `PX`;
//!   queue entry TTLs, debounce quiet periods and burst windows are judged with
//!   the server's `TIME`. Replicas with skewed clocks agree.
//! * **Cluster-ready.** Every key of one (platform, tenant, channel) shares one
//!   hash tag, so each script touches a single slot and runs unchanged on
//!   Redis Cluster ([`RedisStateBuilder::cluster`]).
//! * **Durable runs.** The event a holder runs stays in Redis, in flight, until
//!   its `finish` acknowledges it; every script call carries an identity and is
//!   safe to repeat when its reply is lost or a cluster client re-sends it.
//! * **Recovery.** A scope left with a run or waiting entries by a holder that
//!   died is taken over by the next `admit` on it, or by
//!   [`sweep`](chat_core::Coordination::sweep), which reads a fixed number of
//!   per-bucket indexes instead of one global key.
//! * **Fencing.** Each lease carries a number above every earlier grant on its
//!   scope, even after the scope went idle.
//!
//! The key layout and every script are explained in
//! `docs/adr/0002-redis-keys-and-scripts.md`; `docs/state-backends.md` tells how
//! to configure Redis (use `maxmemory-policy noeviction`: the backend warns at
//! start otherwise). Requires Redis 7.0 or newer.
//!
//! ```no_run
//! use chat_core::{AdmitRequest, Concurrency, Coordination, Decision, Handoff};
//! use chat_state_redis::RedisState;
//! # use chat_core::{Author, Event, EventKind, Message, Platform, ThreadRef};
//! # fn event(id: &str) -> Event {
//! #     let thread = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0");
//! #     let text = Message::new(id, Author::default(), id).with_mention(true);
//! #     Event::new(id, id, thread, EventKind::Message(text))
//! # }
//!
//! # async fn run() -> Result<(), chat_core::StateError> {
//! let state = RedisState::connect("redis://127.0.0.1:6379").await?;
//! // Or: RedisState::connect_cluster(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]).await?;
//!
//! let a = event("a");
//! let scope = a.thread.thread_scope();
//! let first = state.admit(AdmitRequest::new(a, scope.clone(), Concurrency::queue())).await?;
//! let Decision::Run(lease) = first.decision else { return Ok(()) };
//!
//! // Another replica's event on the same thread waits in the scope's queue …
//! let second = state.admit(AdmitRequest::new(event("b"), scope, Concurrency::queue())).await?;
//! assert!(matches!(second.decision, Decision::Queued { depth: 1, .. }));
//!
//! // … and the holder gets it from `finish`, in the same atomic step that would
//! // otherwise release the lease.
//! let handoff = state.finish(&lease).await?;
//! assert!(matches!(handoff, Handoff::Run(ref batch) if batch.entries.len() == 1));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod builder;
mod error;
mod keys;
#[cfg(test)]
mod live_tests;
mod pool;
mod reply;
mod scripts;
mod state;

pub use builder::{
    DEFAULT_ACK_TIMEOUT, DEFAULT_POOL_SIZE, DEFAULT_PREFIX, DEFAULT_TIMEOUT, RedisStateBuilder,
};
pub use state::{MAX_DEDUPE_TTL, RedisState};
