//! # chaos
//!
//! The reliability harness behind `cargo xtask chaos`: three echo-bot replicas on
//! one Redis, a sender that delivers signed Slack events, slash commands and
//! interactions the way Slack does (resending events on timeouts, 5xx and 503;
//! commands and interactions once), faults (Redis paused, stopped, restarted
//! empty; a replica killed or redeployed; floods), and a checker that folds the
//! replicas' outcome ledgers into the invariants of `docs/reliability.md`.
//!
//! ```
//! use chaos::ledger::{Action, Allowances, check};
//! // No ledger lines for an acknowledged action: it was lost.
//! let lost = Action {
//!     event_ids: vec!["Ev1".into()], acked: true, refused: false, retried: true, serialized: true,
//!     statuses: vec![200],
//! };
//! let report = check(&[], &[lost], Allowances::default(), 8);
//! assert_eq!(report.breaches.len(), 1);
//! ```

#![forbid(unsafe_code)]

pub mod bad_input;
pub mod cluster;
pub mod ledger;
pub mod many_threads;
pub mod proxy;
pub mod scenario;
pub mod sender;
pub mod slow_clients;
pub mod store;
