//! # chat-core
//!
//! The types and the contracts of the chat-rs runtime, and nothing else: no
//! I/O, no async runtime, no HTTP client. State backends (`chat-state-memory`,
//! `chat-state-redis`) implement [`StateBackend`]; platform adapters (`chat-slack`,
//! `chat-linear`) implement [`PlatformAdapter`]; `chat-runtime` drives both.
//!
//! * **Identity** ([`id`]): [`Platform`], [`TenantId`], [`ThreadRef`], [`ScopeKey`],
//!   [`EventId`], [`DedupeKey`].
//! * **Events** ([`event`]): one normalized, serializable [`Event`].
//! * **Strategies** ([`concurrency`]): [`Concurrency`] and its options.
//! * **State** ([`state`]): [`StateBackend`], whose [`admit`](StateBackend::admit)
//!   is the whole ack path in one atomic step.
//! * **Adapters** ([`adapter`]): [`PlatformAdapter`] and the [`Verdict`]s it answers.
//! * **Installations** ([`installation`]): [`Installation`] and the
//!   [`InstallationStore`] contract, for a bot installed in many workspaces.
//!
//! ```
//! use std::sync::Arc;
//! use chat_core::{
//!     AdmitRequest, Author, Concurrency, DedupeKey, Event, EventId, EventKind, Message,
//!     MessageChange, Platform, ThreadRef,
//! };
//!
//! let thread = ThreadRef::new(Platform::Slack, "T024BE7LD", "C2147483705", "1355517523.000005");
//! let event = Event {
//!     id: EventId::new("Ev0PV52K21"),
//!     // The user's action, not the delivery: both twins of one post share it.
//!     dedupe_key: DedupeKey::new("C2147483705:1355517523.000005"),
//!     thread: thread.clone(),
//!     received_at_ms: 0,
//!     attempt: 0,
//!     retry_reason: None,
//!     kind: EventKind::Message(Message {
//!         id: "1355517523.000005".into(),
//!         author: Author { id: "U2147483697".into(), ..Author::default() },
//!         text: "<@U0LAN0Z89> is it everything a river should be?".into(),
//!         change: MessageChange::Posted,
//!         is_mention: true,
//!         is_dm: false,
//!     }),
//!     raw: Default::default(),
//! };
//!
//! // What the runtime asks a state backend on the ack path:
//! let request = AdmitRequest::new(event, thread.thread_scope(), Concurrency::queue());
//! assert_eq!(request.scope.to_string(), "slack:T024BE7LD:C2147483705:t:1355517523.000005");
//! assert_eq!(request.concurrency.name(), "queue");
//! ```

#![forbid(unsafe_code)]

pub mod adapter;
pub mod clock;
pub mod concurrency;
pub mod error;
pub mod event;
pub mod id;
pub mod installation;
pub mod state;

pub use adapter::{
    DefaultLockScope, Inbound, MessageRef, OutboundMessage, PlatformAdapter, ReplyKey, Resolution,
    TextFormat, Verdict,
};
pub use clock::{Clock, SystemClock};
pub use concurrency::{
    BurstMode, BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions, OnFull, QueueOptions,
};
pub use error::{AdapterError, BoxError, StateError, WebhookError};
pub use event::{
    Action, AgentSession, AgentSessionAction, Author, Event, EventKind, Message, MessageChange,
    Modal, OtherEvent, Reaction, SlashCommand,
};
pub use id::{DedupeKey, EventId, Platform, ScopeKey, ScopePart, ScopeTag, TenantId, ThreadRef};
pub use installation::{Installation, InstallationError, InstallationStore, Secret};
pub use state::{
    Admission, AdmitRequest, Batch, CancelOutcome, CancelRequest, Decision, DropReason, Fate, Gate,
    Handoff, Lease, LeaseKind, LeaseToken, Recovered, Release, Renewal, Report, SetMode, SlotGrant,
    StateBackend, Waiting,
};
