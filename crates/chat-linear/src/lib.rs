//! # chat-linear
//!
//! The Linear [`PlatformAdapter`](chat_core::PlatformAdapter): webhook signing,
//! agent sessions, comment threads and GraphQL activities.
//!
//! This crate is being built; it has no public items yet.
//!
//! ```
//! assert_eq!(chat_core::Platform::Linear.as_str(), "linear");
//! ```

#![forbid(unsafe_code)]
