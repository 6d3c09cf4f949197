//! # examples
//!
//! Runnable chat-rs bots. `echo-bot` (in `src/bin/echo_bot.rs`) is an axum server
//! with the Slack, Linear, Telegram and WhatsApp adapters that echoes what it is told, so every
//! concurrency strategy is visible from outside; `cargo xtask demo`, the
//! benchmarks and the reliability harness drive it over HTTP.
//!
//! The pieces live here so they can be tested and reused:
//!
//! * [`config`]: every setting as a flag and an environment variable.
//! * [`echo`]: the handlers.
//! * [`slack`]: the Slack adapter, in single-token or installation mode, and
//!   the install flow's routes.
//! * [`telegram`], [`whatsapp`], [`github`]: those adapters from their settings.
//! * [`stats`]: outcome counters for `GET /stats`.
//! * [`notify`]: `POST /notify`, posting outside any webhook.
//! * [`ledger`]: the outcome ledger, written by echo-bot and read by the demo,
//!   the tests and the reliability harness.
//!
//! ```
//! use examples::echo::echo_text;
//! use chat_testkit::EventBuilder;
//! use chat_core::{Platform, ThreadRef};
//!
//! let thread = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0");
//! let b = EventBuilder::new(thread.clone()).id("b").mention("<@U0BOT> second").build();
//! let a = std::sync::Arc::new(EventBuilder::new(thread).id("a").message("first").build());
//! assert_eq!(echo_text(&b, &[a]), "echo: first | second");
//! ```

#![forbid(unsafe_code)]

pub mod config;
pub mod demo;
pub mod drive;
pub mod echo;
pub mod github;
pub mod ledger;
pub mod linear;
pub mod notify;
pub mod slack;
pub mod stats;
pub mod telegram;
pub mod whatsapp;

/// The guides in `docs/`, compiled as doctests so that every code block in them
/// keeps compiling.
#[cfg(doctest)]
pub mod guides {
    #[doc = include_str!("../../docs/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../../docs/strategies.md")]
    pub struct Strategies;
    #[doc = include_str!("../../docs/deferred-dispatch.md")]
    pub struct DeferredDispatch;
    #[doc = include_str!("../../docs/replicas.md")]
    pub struct Replicas;
    #[doc = include_str!("../../docs/state-backends.md")]
    pub struct StateBackends;
    #[doc = include_str!("../../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../../docs/multi-workspace.md")]
    pub struct MultiWorkspace;
    #[doc = include_str!("../../docs/production.md")]
    pub struct Production;
    #[doc = include_str!("../../docs/talking-back.md")]
    pub struct TalkingBack;
    #[doc = include_str!("../../docs/receiving.md")]
    pub struct Receiving;
    #[doc = include_str!("../../docs/operations.md")]
    pub struct Operations;
}
