//! # chat-github
//!
//! The GitHub [`PlatformAdapter`](chat_core::PlatformAdapter) for chat-rs:
//! agents that answer in issues, pull requests and review threads.
//!
//! * **Verify** ([`signature`]): every delivery's `X-Hub-Signature-256`
//!   (HMAC-SHA256 of the raw body with the webhook secret), in constant
//!   time, before anything is parsed.
//! * **Parse**: comments, issues and pull requests opened, assignments and
//!   review requests to the bot, review comments in their own threads,
//!   reviews, discussion comments — each in its [`conversation`]; `ping`
//!   answered; what the bot itself did ignored. The event id is
//!   `X-GitHub-Delivery`, which a redelivery repeats: a delivery runs once
//!   however often it is redelivered within [`DEDUPE_TTL`].
//! * **Answer**: 200 for what was taken, within GitHub's 10 seconds (the
//!   runtime's deferred dispatch); GitHub never resends a failed delivery by
//!   itself.
//! * **Authenticate** ([`app_auth`]): as a GitHub App — a JSON Web Token
//!   signed with the App's key (RS256) buys an installation token, kept per
//!   installation (each a tenant) and refreshed before it expires, one fetch
//!   for any number of concurrent callers — or with a personal access token.
//! * **Talk back** ([`GitHubClient`]): comments created, edited, deleted;
//!   reactions; replies in review threads; a conversation's comments as
//!   history; the status as an `eyes` reaction; check runs
//!   ([`GitHubAdapter::create_check_run`]); rate limits waited out as GitHub
//!   says ([`client`]).
//!
//! ```
//! use bytes::Bytes;
//! use chat_core::{EventKind, Inbound, Webhook};
//! use chat_github::{GitHubAdapter, signature::{SIGNATURE_HEADER, sign}};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let github = GitHubAdapter::builder()
//!     .webhook_secret("webhook-secret")
//!     .token("github_pat_…")
//!     .login("triage-bot")
//!     .build()?;
//!
//! let body = Bytes::from_static(br#"{"action": "created",
//!     "issue": {"number": 42, "title": "Crash on start"},
//!     "comment": {"id": 1001, "body": "@triage-bot what broke?", "user": {"login": "ada", "id": 1, "type": "User"}},
//!     "repository": {"id": 5, "full_name": "octo/hello"},
//!     "sender": {"login": "ada", "id": 1, "type": "User"}}"#);
//! let (parts, ()) = http::Request::post("/webhooks/github")
//!     .header(SIGNATURE_HEADER, sign("webhook-secret", &body))
//!     .header("x-github-event", "issue_comment")
//!     .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
//!     .body(())?
//!     .into_parts();
//! github.verify(&parts, &body)?;
//! let Inbound::Event(event) = github.parse(&parts, &body)? else { panic!("one event") };
//! assert_eq!(event.thread.to_string(), "github:octo:octo/hello:42");
//! let EventKind::Message(message) = &event.kind else { panic!("a message") };
//! assert!(message.is_mention);
//!
//! // A body signed with another secret is refused before it is parsed.
//! let (forged, ()) = http::Request::post("/webhooks/github")
//!     .header(SIGNATURE_HEADER, sign("guess", &body))
//!     .body(())?
//!     .into_parts();
//! assert!(github.verify(&forged, &body).is_err());
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod adapter;
pub mod app_auth;
pub mod checks;
pub mod client;
pub mod conversation;
mod error;
mod inbound;
mod payload;
pub mod signature;

pub use adapter::{
    DEDUPE_TTL, DELIVERY_HEADER, EVENT_HEADER, GitHubAdapter, GitHubAdapterBuilder, HOOK_HEADER,
    MAX_BODY, MAX_COMMENT_CHARS,
};
pub use checks::{CheckConclusion, CheckRun, CheckStatus};
pub use client::GitHubClient;
pub use conversation::Conversation;
pub use error::BuildError;

use chat_core::Platform;

/// GitHub.
pub const GITHUB: Platform = Platform::new("github");
