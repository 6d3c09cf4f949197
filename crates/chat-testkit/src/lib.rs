//! # chat-testkit
//!
//! Test support for chat-rs bots and backends:
//!
//! * [`conformance`]: the [`StateBackend`](chat_core::StateBackend) conformance
//!   suite. A backend is correct when it passes every case; each backend's tests
//!   run it with [`state_backend_conformance!`].
//! * [`Harness`]: a backend plus a clock (tokio's paused clock, or real time for
//!   backends whose clock is elsewhere), and builders for events on threads no
//!   other test uses.
//! * [`EventBuilder`]: normalized events for handler tests.
//! * [`ScriptedAdapter`]: a platform adapter for runtime tests, whose deliveries
//!   are serialized events and whose posts are recorded.
//! * [`FakeSlack`]: Slack's Web API served in-process on `127.0.0.1`, recording
//!   every call and answering from per-method scripts (`ok:false` errors, 429s).
//! * [`FakeLinear`]: Linear's GraphQL API served in-process on `127.0.0.1`,
//!   recording every request (operation, variables, `Authorization`) and
//!   answering from per-operation scripts (GraphQL errors, rate limits, delays).
//! * [`FakeSlackOAuth`], [`FakeLinearOAuth`]: the platforms' OAuth install
//!   endpoints (authorize, token exchange and refresh, and the identity of a
//!   token), with workspaces that approve installs, for install-flow tests.
//! * [`install_flow`]: the install-flow conformance suite. A platform's
//!   OAuth provider is correct when chat-installations' flow passes every
//!   case with it; each platform's tests run it with
//!   [`install_flow_conformance!`].
//! * [`install_mode`]: the installation-mode conformance suite. A platform
//!   adapter serving many tenants is correct when every case passes with it
//!   (each tenant answered with its own sealed token, unknown tenants
//!   ignored, store failures retried, uninstalls deleting); each platform's
//!   tests run it with [`install_mode_conformance!`].
//!
//! ```
//! use chat_core::{Concurrency, Decision};
//! use chat_testkit::Harness;
//!
//! # fn main() -> std::io::Result<()> {
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?.block_on(async {
//! let h = Harness::paused(chat_state_memory::MemoryState::new());
//! let thread = h.thread("1");
//! let first = h.admit(&thread, "a", Concurrency::Drop).await;
//! assert!(matches!(first.decision, Decision::Run(_)));
//! let second = h.admit(&thread, "b", Concurrency::Drop).await;
//! assert!(matches!(second.decision, Decision::Dropped(_)));
//! # });
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod adapter;
pub mod conformance;
pub mod events;
mod fake_github;
mod fake_linear;
mod fake_oauth;
mod fake_slack;
mod fake_telegram;
mod fake_whatsapp;
mod faulty;
mod flaky_installations;
mod harness;
pub mod install_flow;
pub mod install_mode;
mod replicas;
mod scaffold;
mod server;
pub mod signed;

pub use adapter::{SIGNATURE_HEADER, ScriptedAdapter};
pub use events::{EventBuilder, user};
pub use fake_github::{FakeGitHub, GitHubApi, GitHubCall, GitHubReply};
pub use fake_linear::{FakeLinear, LinearApi, LinearCall, LinearReply, RATELIMIT_RESET_HEADER};
pub use fake_oauth::{
    FakeLinearOAuth, FakeSlackOAuth, LinearOrganization, SlackWorkspace, TokenRequest,
};
pub use fake_slack::{FakeSlack, RetryAfter, SlackApi, SlackCall, SlackReply};
pub use fake_telegram::{FakeTelegram, TelegramApi, TelegramCall, TelegramReply};
pub use fake_whatsapp::{FakeWhatsApp, WhatsAppApi, WhatsAppCall, WhatsAppReply};
pub use faulty::{Fault, Faults, FaultyState, Op};
pub use flaky_installations::FlakyInstallations;
pub use harness::{
    Clock, Harness, KvHarness, expect_batch, expect_handoff_run, expect_hold, expect_run,
    expect_wait, ids, ok,
};
pub use scaffold::Reply;
