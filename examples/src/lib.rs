//! Runnable chat-rs bots. The echo bot and `cargo xtask demo` live here.
//!
//! ```
//! // Every example speaks the core contracts.
//! assert_eq!(chat_core::Platform::Slack.to_string(), "slack");
//! ```

#![forbid(unsafe_code)]
