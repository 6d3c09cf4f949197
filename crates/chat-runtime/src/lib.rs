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
//! use chat_runtime::{Bot, Concurrency, Ctx, Dispatch, Event, RuntimeOptions};
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
//!     .options(RuntimeOptions {
//!         dispatch: Dispatch::Deferred,
//!         detach_timeout: Duration::from_secs(60),
//!         concurrency: Concurrency::queue(),
//!         ..RuntimeOptions::default()
//!     })
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
pub use options::{
    BuildError, Dispatch, LockScope, MAX_DURATION, RuntimeOptions, ScopeChoice, ShutdownMode,
};
pub use outcome::{Observer, Outcome, OutcomeRecord, RECENT_OUTCOMES};
pub use signal::shutdown_signal;
pub use thread::{DEFAULT_STREAM_INTERVAL, SentMessage, Thread};
pub use webhook::WebhookService;
