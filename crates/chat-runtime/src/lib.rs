//! # chat-runtime
//!
//! The runtime of chat-rs: it takes webhook deliveries from platform adapters,
//! verifies and deduplicates them, serializes work per conversation with leases in
//! a [`StateBackend`](chat_core::StateBackend), acknowledges inside the platform's deadline, and runs your
//! handlers — before the acknowledgement ([`Dispatch::Sync`]) or detached after it
//! with a budget and a cancellation cause ([`Dispatch::Deferred`]) — while one of
//! five [`Concurrency`] strategies decides what happens to overlapping messages.
//!
//! ```
//! use std::time::Duration;
//! use chat_runtime::{Bot, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
//! use chat_state_memory::MemoryState;
//! use chat_testkit::ScriptedAdapter;
//!
//! async fn on_mention(ctx: Ctx, event: Event) -> Result<(), chat_runtime::BoxError> {
//!     ctx.subscribe().await?;
//!     // Everything that arrived while the previous turn was busy, oldest first.
//!     let mut texts: Vec<&str> = ctx.skipped().iter().filter_map(|e| e.text()).collect();
//!     texts.push(event.text().unwrap_or_default());
//!     ctx.thread().post(format!("echo: {}", texts.join(" | "))).await?;
//!     Ok(())
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let adapter = ScriptedAdapter::new("test");
//! let bot = Bot::builder()
//!     .state(MemoryState::new())
//!     .adapter(adapter.clone())
//!     .options(
//!         RuntimeOptions::default()
//!             .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
//!             .concurrency(Concurrency::queue()),
//!     )
//!     .on_new_mention(on_mention)
//!     .on_subscribed_message(on_mention)
//!     .build()?;
//!
//! // Mount `bot.webhook("test")` in axum with `route_service`, or serve it with
//! // hyper. Here a scripted delivery goes straight in:
//! let request = adapter.request(&adapter.mention("T1", "C1", "1.0", "ev1", "hello"));
//! let response = bot.handle("test", request).await;
//! assert_eq!(response.status(), 200);
//!
//! assert!(bot.idle(Duration::from_secs(5)).await);
//! assert_eq!(adapter.posts(), ["echo: hello"]);
//! let report = bot.shutdown(Duration::from_secs(5)).await;
//! assert_eq!(report.cancelled, 0);
//! # Ok::<_, Box<dyn std::error::Error>>(()) })
//! # }
//! ```
//!
//! ## The ack path
//!
//! On the request's own task, in order: read the body with a size cap (413),
//! `verify` (401), `parse` (400, or an immediate reply), admission (deferred:
//! `max_detached` and `max_detached_per_tenant`, refused before any state is
//! touched), one `admit` round trip, then the adapter's answer for the verdict.
//! Under sync dispatch the handler runs before the answer; under deferred dispatch
//! it is spawned as the answer is produced.
//!
//! ## Inside the runtime
//!
//! For a reader of the source, the path of one delivery through the modules:
//!
//! | module | what it holds |
//! |---|---|
//! | `webhook` | the `tower::Service` per adapter: body cap and timeout, then `dispatch` |
//! | `dispatch` | the ack path: verify, parse, route once, in-process admission, one `admit`, the response |
//! | `admission` | the in-process caps (`max_detached`, `max_inline`, per tenant) as permits |
//! | `holder` | a `Holder` holds a scope's lease as a `HeldLease`: it runs the batch, acknowledges it with `finish`, and takes the next (`AfterBatch`) until the scope is released |
//! | `work` | `RunItem` (one event to run, with its deadline, attempt and routed handler) and `HeldLease` (the lease, its keeper and the stop requests seen) |
//! | `run` | one handler run: builds its `Ctx`, races it against lease loss, deadline, shutdown and stop requests, and says how it ended (`RunEnd`) |
//! | `keeper` | renews a held lease every third of its TTL and tells the run when it is lost |
//! | `slots` | `Concurrent{max}`: waiting for and holding a slot instead of the scope's lease |
//! | `sweep` | the recovery sweep: work whose holder is gone, claimed and run here |
//! | `shared` | `Shared`, what every part of one bot reads: options, state, adapters, handlers, recorder, caps, task tracker and shutdown signals |
//! | `ctx`, `thread`, `response` | what a handler gets: the context, the thread handle, the delivery's pending response |
//!
//! ## Outcomes
//!
//! Every accepted delivery ends in exactly one [`Outcome`], recorded as a
//! `tracing` event with a stable name and handed to every [`Observer`].

#![forbid(unsafe_code)]

mod admission;
mod bot;
mod cancel;
mod ctx;
mod data;
mod dispatch;
mod handler;
mod heal;
mod holder;
mod keeper;
mod metered;
mod options;
mod outcome;
mod response;
mod retry;
mod router;
mod run;
#[cfg(feature = "server")]
pub mod server;
mod shared;
mod signal;
mod slots;
mod sweep;
pub mod telemetry;
mod thread;
mod throttle;
mod webhook;
mod work;

pub use bot::{Bot, BotBuilder, RunInfo, ShutdownReport};
pub use cancel::CancelCause;
pub use chat_core as core;
pub use chat_core::{
    BoxError, BurstMode, BurstOptions, Capabilities, Capability, Concurrency, ConcurrentOptions,
    DebounceOptions, Event, EventKind, OnFull, QueueOptions,
};
pub use ctx::{Ctx, Replied};
pub use handler::{Handler, HandlerFuture};
pub use heal::heal_markdown;
pub use options::{
    AdmissionOptions, BuildError, Dispatch, DispatchOptions, LeaseOptions, LockScope, MAX_DURATION,
    RecoveryOptions, RetentionOptions, RuntimeOptions, ScopeChoice, ShutdownMode, TelemetryOptions,
    TimeoutOptions,
};
pub use outcome::{Observer, Outcome, OutcomeRecord, RECENT_OUTCOMES};
pub use signal::shutdown_signal;
pub use thread::history::{MAX_TURNED_AROUND, Role, Turn};
pub use thread::stream::Chunk;
pub use thread::{DEFAULT_STREAM_INTERVAL, Private, SentMessage, Thread};
pub use webhook::WebhookService;
