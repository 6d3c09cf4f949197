//! # chat-bench
//!
//! The load generator behind `cargo xtask bench` (binary `loadgen`): correctly
//! signed Slack `event_callback` deliveries to a bot on loopback, and what the
//! bot made of them.
//!
//! * [`payload`]: the deliveries: unique event ids, `K` threads so events
//!   overlap, a share of duplicate retries (`X-Slack-Retry-Num: 1`).
//! * [`run`]: open loop at a fixed offered rate (latency from the due time, so
//!   no coordinated omission) or closed loop over `C` connections.
//! * [`probe`]: echo-bot's `GET /stats` before and after, the server's resident
//!   memory, Redis command counts.
//! * [`fake_slack`]: a loopback stand-in for Slack's Web API for the bot's
//!   posts.
//!
//! `loadgen run --help` lists every setting. The report is printed for people,
//! then once more as one flat JSON object on the last line, for tools.
//!
//! Traffic goes to loopback addresses only: a URL that names anything else is
//! refused.
//!
//! The crate by job: [`cli`] (the command line), [`target`] (loopback URLs),
//! [`execute`](mod@execute) (one run), [`report`] (what it found).

#![forbid(unsafe_code)]

pub mod cli;
pub mod execute;
pub mod fake_slack;
pub mod http;
pub mod payload;
pub mod probe;
pub mod report;
pub mod run;
pub mod target;

pub use cli::{Cli, Command, FakeSlackArgs, MAX_DURATION, RunArgs};
pub use execute::execute;
pub use report::Report;
pub use target::{Target, loopback_addr, parse_url};
