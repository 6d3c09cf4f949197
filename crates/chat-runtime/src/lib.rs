//! # chat-runtime
//!
//! The runtime that drives a [`StateBackend`](chat_core::StateBackend) and
//! [`PlatformAdapter`](chat_core::PlatformAdapter)s: the `Bot` builder, the webhook
//! `tower::Service`, sync and deferred dispatch, the five concurrency strategies,
//! admission control, lease renewal and shutdown.
//!
//! This crate is being built; today it re-exports the core contracts it drives.
//!
//! ```
//! use chat_runtime::core::Concurrency;
//! assert_eq!(Concurrency::default().name(), "drop");
//! ```

#![forbid(unsafe_code)]

pub use chat_core as core;
