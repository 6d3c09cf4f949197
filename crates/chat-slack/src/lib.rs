//! # chat-slack
//!
//! The Slack [`PlatformAdapter`](chat_core::PlatformAdapter): request signing,
//! Events API, slash commands, interactivity and the Web API.
//!
//! This crate is being built; it has no public items yet.
//!
//! ```
//! assert_eq!(chat_core::Platform::Slack.as_str(), "slack");
//! ```

#![forbid(unsafe_code)]
