//! The [`PlatformAdapter`] contract: how one platform's webhooks are verified,
//! normalized and answered, and how handlers talk back.
//!
//! A new platform is a crate of its own with one type implementing the
//! trait: nine methods are required (name, platform, verify, parse, respond,
//! post, edit, delete, react); every other has a default — most an
//! [`AdapterError::Unsupported`] — so the platform opts into what it has.
//! Its own event kinds travel as [`EventKind::Other`](crate::EventKind::Other)
//! and are handled through a [`Route`](crate::Route) the crate constructs;
//! a handler's answer to an interaction arrives as a [`Reply`] to render.
//! The smallest complete adapter:
//!
//! ```
//! use async_trait::async_trait;
//! use bytes::Bytes;
//! use chat_core::{
//!     AdapterError, Author, Event, EventKind, Inbound, Message, MessageRef, OutboundMessage,
//!     Platform, PlatformAdapter, Route, ThreadRef, Verdict, WebhookError,
//! };
//!
//! const MINE: Platform = Platform::new("mine");
//!
//! /// The platform's own event, for `BotBuilder::on`.
//! pub fn ping() -> Route {
//!     Route::other("mine.ping")
//! }
//!
//! struct Mine;
//!
//! #[async_trait]
//! impl PlatformAdapter for Mine {
//!     fn name(&self) -> &str { "mine" }
//!     fn platform(&self) -> Platform { MINE }
//!
//!     // First, over the raw bytes, in constant time (here a header token).
//!     fn verify(&self, parts: &http::request::Parts, _body: &Bytes) -> Result<(), WebhookError> {
//!         let token = parts.headers.get("x-mine-token").ok_or(WebhookError::MissingHeader("x-mine-token"))?;
//!         let ok = token.as_bytes().len() == 6
//!             && token.as_bytes().iter().zip(b"secret").fold(0, |a, (x, y)| a | (x ^ y)) == 0;
//!         if ok { Ok(()) } else { Err(WebhookError::BadSignature) }
//!     }
//!
//!     // Never panics; the dedupe key names the user's action.
//!     fn parse(&self, _parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
//!         let v: serde_json::Value =
//!             serde_json::from_slice(body).map_err(|e| WebhookError::Malformed(e.to_string()))?;
//!         let (id, room) = (v["id"].as_str().unwrap_or(""), v["room"].as_str().unwrap_or(""));
//!         let kind = match v["text"].as_str() {
//!             Some(text) => EventKind::Message(Message::new(id, Author::new("u"), text).with_mention(true)),
//!             None => EventKind::Other(chat_core::OtherEvent::new("mine.ping", v.clone())),
//!         };
//!         Ok(Inbound::Event(Box::new(Event::new(id, id, ThreadRef::new(MINE, "w", room, ""), kind))))
//!     }
//!
//!     // How each verdict is said to this platform.
//!     fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
//!         let mut r = http::Response::new(Bytes::new());
//!         *r.status_mut() = match verdict {
//!             Verdict::Rejected(e) => e.status(),
//!             Verdict::AtCapacity | Verdict::Working | Verdict::Failed => http::StatusCode::SERVICE_UNAVAILABLE,
//!             _ => http::StatusCode::OK,
//!         };
//!         r
//!     }
//!
//!     async fn post(&self, thread: &ThreadRef, _m: &OutboundMessage) -> Result<MessageRef, AdapterError> {
//!         Ok(MessageRef { thread: thread.clone(), id: "1".into() })
//!     }
//!     async fn edit(&self, _: &MessageRef, _: &OutboundMessage) -> Result<(), AdapterError> {
//!         Err(AdapterError::Unsupported("editing"))
//!     }
//!     async fn delete(&self, _: &MessageRef) -> Result<(), AdapterError> {
//!         Err(AdapterError::Unsupported("deleting"))
//!     }
//!     async fn react(&self, _: &MessageRef, _: &str) -> Result<(), AdapterError> {
//!         Err(AdapterError::Unsupported("reactions"))
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (parts, ()) = http::Request::post("/").header("x-mine-token", "secret").body(())?.into_parts();
//! let body = Bytes::from_static(br#"{"id":"e1","room":"r1"}"#);
//! Mine.verify(&parts, &body)?;
//! let Inbound::Event(event) = Mine.parse(&parts, &body)? else { return Err("not an event".into()) };
//! assert!(ping().matches(&event));
//! # Ok(()) }
//! ```
//!
//! `examples/tests/toy_platform.rs` runs such an adapter end to end in a bot:
//! a platform-only event through its route, a typed reply, posting.

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::{AdapterError, BoxError, WebhookError};
use crate::event::Event;
use crate::id::{Platform, ScopeKey, TenantId, ThreadRef};
use crate::outbound::{HistoryPage, UserInfo};
pub use crate::outbound::{MessageRef, OutboundMessage, ReplyKey, TextFormat};
use crate::reply::Reply;
use crate::view::View;

/// What [`PlatformAdapter::parse`] made of a verified delivery.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// An event for the runtime to admit and dispatch.
    Event(Box<Event>),
    /// A delivery that needs no handler and has a fixed answer
    /// (Slack `url_verification`, `ssl_check`).
    Reply(http::Response<Bytes>),
    /// A delivery the bot does not act on (its own messages, unknown event kinds):
    /// acknowledged and recorded as ignored.
    Ignored {
        /// A stable reason for logs (`own-message`, `unsupported:app_rate_limited`).
        reason: String,
    },
}

/// What [`PlatformAdapter::resolve`] made of a parsed event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resolution {
    /// Go on: route, admit and dispatch the event (which `resolve` may have
    /// completed, for example by marking the bot's own message).
    Proceed,
    /// Acknowledge the delivery and record it as ignored: an event from a
    /// tenant the bot is not installed in, the installation's own message, or
    /// a lifecycle event (uninstall) the adapter handled itself.
    Ignored {
        /// A stable reason for logs and outcome observers
        /// (`unknown-installation`, `own-message`, `user-tokens-revoked`).
        reason: &'static str,
    },
    /// The event's tenant removed the app (an uninstall, a revoked bot
    /// token): the adapter deleted the installation. The runtime
    /// acknowledges, records the delivery as ignored with `reason`, and
    /// removes the tenant's subscriptions in the background
    /// ([`StateBackend::unsubscribe_tenant`](crate::StateBackend::unsubscribe_tenant)).
    Uninstalled {
        /// A stable reason (`app-uninstalled`, `tokens-revoked`,
        /// `app-revoked`).
        reason: &'static str,
    },
}

/// What the runtime decided about a delivery; the adapter says it to its platform
/// ([`PlatformAdapter::respond`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Admitted: running, queued, pending, or acknowledged and dropped by the
    /// strategy. Slack: empty 200. Linear: exactly 200.
    Accepted,
    /// Seen before: acknowledged so the platform stops retrying.
    Duplicate,
    /// No handler wants it: acknowledged.
    Ignored,
    /// Refused before the acknowledgement because the runtime is at capacity (or
    /// shutting down, or a bound said so). Nothing was marked: a retry is new.
    AtCapacity,
    /// Failed before the acknowledgement (state backend error, sync handler
    /// error); the dedupe key was unmarked so the platform's retry runs.
    Failed,
    /// The delivery was refused at the door.
    Rejected(WebhookError),
    /// The handler answered the delivery itself (a slash command's text, a
    /// modal submission's errors): the adapter renders the [`Reply`] in its
    /// platform's form.
    Reply(Reply),
    /// Accepted, and its handler is still running at the acknowledgement
    /// deadline (an inline slash command, a slow sync handler). A delivery the
    /// platform would retry is told to retry, like [`AtCapacity`](Self::AtCapacity)
    /// (the retry is a duplicate of the work in progress); one it never
    /// retries (a Slack slash command) is answered that the answer will follow,
    /// and the handler's reply goes out later ([`PlatformAdapter::reply_later`]).
    Working,
}

impl Verdict {
    /// A stable name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
            Self::Ignored => "ignored",
            Self::AtCapacity => "at-capacity",
            Self::Failed => "failed",
            Self::Rejected(_) => "rejected",
            Self::Reply(_) => "reply",
            Self::Working => "working",
        }
    }
}

/// How an adapter's events are serialized by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DefaultLockScope {
    /// One lease per thread (Slack, Linear).
    #[default]
    Thread,
    /// One lease per channel (platforms where conversations are channel-level).
    Channel,
}

impl DefaultLockScope {
    /// The scope of `thread` under this default.
    pub fn scope_of(self, thread: &ThreadRef) -> ScopeKey {
        match self {
            Self::Thread => thread.thread_scope(),
            Self::Channel => thread.channel_scope(),
        }
    }
}

/// One platform: inbound webhooks (verify → parse → respond) and outbound calls.
/// Object-safe: the runtime holds an `Arc<dyn PlatformAdapter>`.
///
/// # Contract
///
/// * [`verify`](Self::verify) runs first, over the **raw** body bytes exactly as
///   received, with a constant-time comparison and the platform's timestamp
///   window. Nothing is parsed before it passes.
/// * [`parse`](Self::parse) never panics on any input; malformed input is
///   [`WebhookError::Malformed`].
/// * [`resolve`](Self::resolve) runs after `parse` and before anything else
///   on the ack path; it may complete the event or turn it into an ignore,
///   and a failure of it is answered so the platform retries.
/// * [`respond`](Self::respond) decides how each [`Verdict`] is said to this
///   platform for this delivery kind (a Slack slash command at capacity is a 200
///   with a visible message; a Slack event at capacity is a 503).
/// * Outbound methods are called from handlers, inside their deadline; they
///   return typed [`AdapterError`]s.
#[async_trait]
pub trait PlatformAdapter: std::any::Any + Send + Sync + 'static {
    /// The adapter's name, unique within a bot (`slack`, `linear`); it names the
    /// webhook route.
    fn name(&self) -> &str;

    /// The platform.
    fn platform(&self) -> Platform;

    /// The largest body accepted, checked before it is read in full. Default 1 MiB.
    fn max_body_bytes(&self) -> usize {
        1024 * 1024
    }

    /// The default lock scope for this platform's events.
    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Thread
    }

    /// Checks the delivery's signature over the raw body.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError>;

    /// Turns a verified delivery into an event, a fixed reply, or an ignore.
    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError>;

    /// The asynchronous step of the ack path, between [`parse`](Self::parse)
    /// and admission: the runtime calls it once per parsed event, before it
    /// routes the event or touches any state. Adapters in installation mode
    /// look up the event's tenant here (an unknown tenant is
    /// [`Resolution::Ignored`]), apply the installation's own-message filter,
    /// and handle lifecycle events (an uninstall deletes the installation).
    ///
    /// An `Err` means the event could not be resolved *now* (the installation
    /// store is unreachable): the runtime answers [`Verdict::Failed`], so the
    /// platform retries the delivery, and nothing is marked. The error is
    /// logged; it must not carry secrets.
    ///
    /// Default: [`Resolution::Proceed`], with nothing looked up.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let _ = event;
        Ok(Resolution::Proceed)
    }

    /// The HTTP answer for a verdict. `event` is `None` when the delivery was
    /// refused before it was parsed.
    fn respond(&self, event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes>;

    /// Posts a message into a thread.
    ///
    /// When the message carries a [`ReplyKey`] with an attempt above 1 (its run
    /// is a repeat after a holder died), the adapter first looks for a message
    /// it posted earlier under the same key, and returns that one instead of
    /// posting again. Adapters record the key with every post they make.
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError>;

    /// Replaces the content of a message the bot posted.
    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError>;

    /// Deletes a message the bot posted.
    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError>;

    /// Adds a reaction (emoji name without colons).
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError>;

    /// How long an event's dedupe mark must live to catch every redelivery of
    /// it: the platform's documented retry horizon, with a margin. The
    /// runtime's `dedupe_ttl` option overrides it. Default
    /// [`DEFAULT_DEDUPE_TTL`](crate::state::DEFAULT_DEDUPE_TTL) (24 h).
    fn dedupe_ttl(&self) -> std::time::Duration {
        crate::state::DEFAULT_DEDUPE_TTL
    }

    /// Removes the bot's reaction (emoji name without colons); a reaction that
    /// is not there is success. Default: [`AdapterError::Unsupported`].
    async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let _ = (message, emoji);
        Err(AdapterError::Unsupported("removing a reaction"))
    }

    /// Posts a message only `user` sees, in the thread. Default:
    /// [`AdapterError::Unsupported`].
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &str,
        message: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        let _ = (thread, user, message);
        Err(AdapterError::Unsupported("ephemeral messages"))
    }

    /// One page of the thread's earlier messages, oldest first: the first page
    /// with `cursor` `None`, the next with the previous page's
    /// [`next`](HistoryPage::next); at most `limit` messages a page (the
    /// platform may cap it lower). Default: [`AdapterError::Unsupported`].
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        let _ = (thread, cursor, limit);
        Err(AdapterError::Unsupported("reading a thread's history"))
    }

    /// Who user `id` of `tenant` is. Not cached by the adapter (the runtime
    /// caches it). Default: [`AdapterError::Unsupported`].
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        let _ = (tenant, id);
        Err(AdapterError::Unsupported("looking users up"))
    }

    /// Opens a modal with an interaction's `trigger` (its trigger
    /// [`Handle`](crate::Handle)'s value; Slack's is valid about 3 s);
    /// returns the view's id. Default: [`AdapterError::Unsupported`].
    async fn open_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &View,
    ) -> Result<String, AdapterError> {
        let _ = (tenant, trigger, view);
        Err(AdapterError::Unsupported("modals"))
    }

    /// Replaces the open view `view_id`. Default: [`AdapterError::Unsupported`].
    async fn update_modal(
        &self,
        tenant: &TenantId,
        view_id: &str,
        view: &View,
    ) -> Result<(), AdapterError> {
        let _ = (tenant, view_id, view);
        Err(AdapterError::Unsupported("modals"))
    }

    /// Pushes a view onto the open modal with a `trigger`; returns its id.
    /// Default: [`AdapterError::Unsupported`].
    async fn push_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &View,
    ) -> Result<String, AdapterError> {
        let _ = (tenant, trigger, view);
        Err(AdapterError::Unsupported("modals"))
    }

    /// Whether this adapter can render `reply` (a view within the platform's
    /// limits, a kind of reply it has), checked before the handler gives it:
    /// [`AdapterError::Invalid`] or [`AdapterError::Unsupported`] say why
    /// not. Default: every reply but a modal's answer.
    fn check_reply(&self, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Modal(_) => Err(AdapterError::Unsupported("modals")),
            _ => Ok(()),
        }
    }

    /// Uploads a file named `name` holding `content` into the thread, with
    /// `comment` as its message; returns the platform's file id. Default:
    /// [`AdapterError::Unsupported`].
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        let _ = (thread, name, content, comment);
        Err(AdapterError::Unsupported("uploading files"))
    }

    /// Starts a native stream in the thread: a message (or a run of them)
    /// that grows as text is appended, with `text` (Markdown) as its first
    /// content; `recipient` is the user the answer is for (Slack needs it
    /// outside direct messages). Returns the stream's message.
    ///
    /// Refusing — [`AdapterError::Unsupported`] (the default: no native
    /// streaming) or the platform's [`AdapterError::Api`] refusal — is not a
    /// failure of the stream: the runtime then streams by one post and
    /// throttled edits.
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError> {
        let _ = (thread, text, recipient);
        Err(AdapterError::Unsupported("native streaming"))
    }

    /// Appends `text` (Markdown) to a stream [`start_stream`](Self::start_stream)
    /// opened. Default: [`AdapterError::Unsupported`].
    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError> {
        let _ = (stream, text);
        Err(AdapterError::Unsupported("native streaming"))
    }

    /// Ends a stream; `full_text` is everything it carried, for a platform that
    /// posts the final answer apart from what it showed while streaming.
    /// Default: [`AdapterError::Unsupported`].
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError> {
        let _ = (stream, full_text);
        Err(AdapterError::Unsupported("native streaming"))
    }

    /// How long a native stream may stay open: the runtime stops it and goes
    /// on in a new one before then (Slack expires a stream after about five
    /// minutes). Default: no limit.
    fn stream_lifetime(&self) -> Option<std::time::Duration> {
        None
    }

    /// Shows (or with `None` clears) a "working on it" status in the thread, where
    /// the platform has one. Default: nothing to do.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        let _ = (thread, status);
        Ok(())
    }

    /// Answers `event` after its HTTP response went out: a handler's
    /// [`Reply`] that could not go inline (its run outlasted the
    /// acknowledgement deadline, or ran detached), through the interaction's
    /// follow-up [`Handle`](crate::Handle) (Slack posts to it). Default:
    /// [`AdapterError::Unsupported`].
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        let _ = (event, reply);
        Err(AdapterError::Unsupported(
            "answering a delivery after its response",
        ))
    }

    /// Called by the runtime when a stop request ended a turn (the running
    /// handler was cancelled with `StopRequested` and did not post anything
    /// after it), or arrived while nothing ran: `event` is the stopped turn's
    /// event, or the stop request itself. The place for a platform's closing
    /// duty (Linear ends the session with a final activity, or it stays
    /// "working"). Failures are the adapter's to log. Default: nothing to do.
    async fn stopped(&self, event: &Event) {
        let _ = event;
    }

    /// Called by the runtime right after an event was acknowledged as accepted
    /// under deferred dispatch, before its handler may have posted anything: the
    /// place for a platform's first-response duty (Linear's first activity within
    /// 10 s). `posted` tells whether the handler already posted into the thread.
    /// Default: nothing to do.
    async fn after_ack(&self, event: &Event, posted: &(dyn Fn() -> bool + Send + Sync)) {
        let _ = (event, posted);
    }
}
