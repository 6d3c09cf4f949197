//! # chat-state-redis
//!
//! A [`StateBackend`](chat_core::StateBackend) on Redis and Redis Cluster: one Lua
//! script per multi-step operation, every key of a script under one hash tag.
//!
//! This crate is being built; it has no public items yet.
//!
//! ```
//! // The contract this backend implements:
//! fn assert_backend<B: chat_core::StateBackend>() {}
//! ```

#![forbid(unsafe_code)]
