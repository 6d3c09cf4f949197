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
//! * **State** ([`state`]): [`StateBackend`], whose [`admit`](Coordination::admit)
//!   is the whole ack path in one atomic step.
//! * **Adapters** ([`adapter`]): [`PlatformAdapter`] and the [`Verdict`]s it answers;
//!   [`Reply`], a handler's answer to its interaction ([`reply`]).
//! * **Installations** ([`installation`]): [`Installation`] and the
//!   [`InstallationStore`] contract, for a bot installed in many workspaces.
//! * **Key-value** ([`kv`]): [`KvStore`], a small store with expiry that
//!   installations and caches keep their entries in.
//!
//! ```
//! use std::sync::Arc;
//! use chat_core::{AdmitRequest, Author, Concurrency, Event, EventKind, Message, Platform, ThreadRef};
//!
//! let thread = ThreadRef::new(Platform::SLACK, "T024BE7LD", "C2147483705", "1355517523.000005");
//! let text = "<@U0LAN0Z89> is it everything a river should be?";
//! let message = Message::new("1355517523.000005", Author::new("U2147483697"), text)
//!     .with_mention(true);
//! let event = Event::new(
//!     "Ev0PV52K21",
//!     // The user's action, not the delivery: both twins of one post share it.
//!     "C2147483705:1355517523.000005",
//!     thread.clone(),
//!     EventKind::Message(message),
//! );
//!
//! // What the runtime asks a state backend on the ack path:
//! let request = AdmitRequest::new(event, thread.thread_scope(), Concurrency::queue());
//! assert_eq!(request.scope.to_string(), "slack:T024BE7LD:C2147483705:t:1355517523.000005");
//! assert_eq!(request.concurrency.name(), "queue");
//! ```

//! # Stability
//!
//! chat-core is what adapters and backends are written against, so it
//! changes least. Until 1.0, and as the rule after it:
//!
//! * **A minor release may add**: a variant to a `#[non_exhaustive]` enum
//!   (every public enum is one — match with a wildcard arm), a field to a
//!   `#[non_exhaustive]` struct (build them with their constructors), a
//!   trait method *with a default*, a type, a function, a route constructor.
//! * **A minor release may not** remove or rename anything public, change a
//!   signature, add a trait method without a default, or weaken a documented
//!   guarantee of a contract (`StateBackend`'s atomicity, `PlatformAdapter`'s
//!   verify-before-parse) — those wait for a major release.
//! * Until 1.0 a minor release (0.x) may break, and then says so: every
//!   change of a contract is in the repository's `CHANGELOG.md` with what an
//!   implementation written against the previous version must change.
//! * The serialized form of an [`Event`] is read back by other replicas and
//!   later versions (queued and in-flight events): a field is only ever added
//!   with a default, and one dropped is said in the changelog.

#![forbid(unsafe_code)]

pub mod adapter;
pub mod card;
pub mod clock;
pub mod concurrency;
pub mod content;
pub mod emoji;
pub mod error;
pub mod event;
pub mod id;
pub mod inspect;
pub mod installation;
pub mod kv;
pub mod outbound;
pub mod reply;
pub mod route;
pub mod state;
pub mod view;

pub use adapter::{
    Capabilities, Capability, DefaultLockScope, DirectMessages, Downloads, Ephemeral, History,
    Inbound, MessageRef, Messaging, Modals, OutboundMessage, PlatformAdapter, PostKey, Resolution,
    Scheduling, Status, Streams, TextFormat, Unreact, Uploads, Users, Verdict, Webhook,
};
pub use card::Card;
pub use clock::{Clock, SystemClock};
pub use concurrency::{
    BurstMode, BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions, OnFull, QueueOptions,
};
pub use content::{Attachment, Download, Link, Mention};
pub use error::{AdapterError, BoxError, StateError, WebhookError};
pub use event::{
    Action, AgentSession, AgentSessionAction, Author, Event, EventKind, Handle, Message,
    MessageChange, Modal, OtherEvent, Reaction, SlashCommand,
};
pub use id::{
    DedupeKey, EventId, InvalidPlatform, Platform, ScopeKey, ScopePart, ScopeTag, TenantId,
    ThreadRef,
};
pub use inspect::{EntryView, ForceRelease, HolderView, ScopeFilter, ScopeView};
pub use installation::{Installation, InstallationError, InstallationStore, Secret};
pub use kv::{KvStore, SetMode};
pub use outbound::{
    FileUpload, HistoryMessage, HistoryOrder, HistoryPage, ScheduledMessage, UserInfo,
};
pub use reply::{Reply, Visibility};
pub use route::Route;
pub use state::{
    Admission, AdmitRequest, Batch, CancelOutcome, CancelRequest, DEFAULT_DEDUPE_TTL,
    DEFAULT_SUBSCRIPTION_TTL, Decision, DropReason, Fate, Gate, Handoff, Lease, LeaseKind,
    LeaseToken, Recovered, Release, Renewal, Report, SlotGrant, StateBackend, Sweep, Waiting,
};
pub use state::{Coordination, Inspection, Subscriptions};
