//! The [`PlatformAdapter`] contract: how one platform's webhooks are verified,
//! normalized and answered, and how handlers talk back.
//!
//! A new platform is a crate of its own with one type implementing three
//! traits: [`Webhook`] (verify, parse, respond — the rest have defaults),
//! [`Messaging`] (post, edit, delete, react) and [`PlatformAdapter`] (its
//! name and platform). What only some platforms have — modals, native
//! streams, history, users, uploads, ephemeral messages, a status, taking a
//! reaction back — is one [`capability`] trait each, which the adapter
//! implements and returns from the matching `as_*` accessor; the bot reads
//! them as [`Capabilities`] when it is built.
//! Its own event kinds travel as [`EventKind::Other`](crate::EventKind::Other)
//! and are handled through a [`Route`](crate::Route) the crate constructs;
//! a handler's answer to an interaction arrives as a [`Reply`](crate::Reply) to render.
//! The smallest complete adapter:
//!
//! ```
//! use async_trait::async_trait;
//! use bytes::Bytes;
//! use chat_core::{
//!     AdapterError, Author, Capabilities, Event, EventKind, Inbound, Message, MessageRef,
//!     Messaging, OutboundMessage, Platform, PlatformAdapter, Route, ThreadRef, Verdict, Webhook,
//!     WebhookError,
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
//! impl PlatformAdapter for Mine {
//!     fn name(&self) -> &str { "mine" }
//!     fn platform(&self) -> Platform { MINE }
//! }
//!
//! #[async_trait]
//! impl Webhook for Mine {
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
//! }
//!
//! #[async_trait]
//! impl Messaging for Mine {
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
//! assert_eq!(Mine.capabilities(), Capabilities::NONE);
//! # Ok(()) }
//! ```
//!
//! `examples/tests/toy_platform.rs` runs such an adapter end to end in a bot:
//! a platform-only event through its route, a typed reply, posting.

use crate::id::Platform;

pub mod capability;
mod messaging;
mod webhook;

pub use self::capability::{
    DirectMessages, Downloads, Ephemeral, History, Modals, Scheduling, Status, Streams, Unreact,
    Uploads, Users,
};
pub use self::messaging::Messaging;
pub use self::webhook::{
    DefaultLockScope, Inbound, Resolution, Verdict, Webhook, signature_tag, status_response,
};
pub use crate::outbound::{MessageRef, OutboundMessage, PostKey, TextFormat};

/// One platform: its [`Webhook`] side, its [`Messaging`] side, and the
/// [`capability`] traits it opts into. Object-safe: the runtime holds an
/// `Arc<dyn PlatformAdapter>`.
///
/// # Contract
///
/// * [`name`](Self::name) is unique within a bot; it names the webhook route.
/// * An `as_*` accessor returns `Some(self)` exactly when the adapter
///   implements that capability for every thread of its platform; the
///   answer does not change over the adapter's life (the bot reads it once,
///   when it is built).
pub trait PlatformAdapter: Webhook + Messaging + std::any::Any {
    /// The adapter's name, unique within a bot (`slack`, `linear`); it names the
    /// webhook route.
    fn name(&self) -> &str;

    /// The platform.
    fn platform(&self) -> Platform;

    /// Modal views. Default: none.
    fn as_modals(&self) -> Option<&dyn Modals> {
        None
    }

    /// Native streaming. Default: none (the runtime streams by post and edits).
    fn as_streams(&self) -> Option<&dyn Streams> {
        None
    }

    /// A thread's history. Default: none.
    fn as_history(&self) -> Option<&dyn History> {
        None
    }

    /// User lookups. Default: none.
    fn as_users(&self) -> Option<&dyn Users> {
        None
    }

    /// File uploads. Default: none.
    fn as_uploads(&self) -> Option<&dyn Uploads> {
        None
    }

    /// Downloads of attached files. Default: none.
    fn as_downloads(&self) -> Option<&dyn Downloads> {
        None
    }

    /// Ephemeral messages. Default: none.
    fn as_ephemeral(&self) -> Option<&dyn Ephemeral> {
        None
    }

    /// A working status. Default: none (setting one is then nothing to do).
    fn as_status(&self) -> Option<&dyn Status> {
        None
    }

    /// Taking the bot's reaction back. Default: none.
    fn as_unreact(&self) -> Option<&dyn Unreact> {
        None
    }

    /// Opening a direct message with a user. Default: none.
    fn as_direct_messages(&self) -> Option<&dyn DirectMessages> {
        None
    }

    /// Scheduled messages. Default: none.
    fn as_scheduling(&self) -> Option<&dyn Scheduling> {
        None
    }

    /// Everything this adapter can do beyond [`Messaging`], read from the
    /// `as_*` accessors.
    fn capabilities(&self) -> Capabilities {
        let mut set = Capabilities::NONE;
        for (has, capability) in [
            (self.as_modals().is_some(), Capability::Modals),
            (self.as_streams().is_some(), Capability::Streams),
            (self.as_history().is_some(), Capability::History),
            (self.as_users().is_some(), Capability::Users),
            (self.as_uploads().is_some(), Capability::Uploads),
            (self.as_ephemeral().is_some(), Capability::Ephemeral),
            (self.as_status().is_some(), Capability::Status),
            (self.as_unreact().is_some(), Capability::Unreact),
            (self.as_downloads().is_some(), Capability::Downloads),
            (
                self.as_direct_messages().is_some(),
                Capability::DirectMessages,
            ),
            (self.as_scheduling().is_some(), Capability::Scheduling),
        ] {
            if has {
                set = set.with(capability);
            }
        }
        set
    }
}

/// One thing only some platforms can do: a [`capability`] trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// [`Modals`].
    Modals,
    /// [`Streams`].
    Streams,
    /// [`History`].
    History,
    /// [`Users`].
    Users,
    /// [`Uploads`].
    Uploads,
    /// [`Ephemeral`].
    Ephemeral,
    /// [`Status`].
    Status,
    /// [`Unreact`].
    Unreact,
    /// [`Downloads`].
    Downloads,
    /// [`DirectMessages`].
    DirectMessages,
    /// [`Scheduling`].
    Scheduling,
}

impl Capability {
    /// Every capability, in declaration order (a slice, so a capability
    /// added later does not change its type).
    pub const ALL: &'static [Capability] = &[
        Self::Modals,
        Self::Streams,
        Self::History,
        Self::Users,
        Self::Uploads,
        Self::Ephemeral,
        Self::Status,
        Self::Unreact,
        Self::Downloads,
        Self::DirectMessages,
        Self::Scheduling,
    ];

    /// A stable name (`modals`, `streams`, …) for messages and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Modals => "modals",
            Self::Streams => "streams",
            Self::History => "history",
            Self::Users => "users",
            Self::Uploads => "uploads",
            Self::Ephemeral => "ephemeral",
            Self::Status => "status",
            Self::Unreact => "unreact",
            Self::Downloads => "downloads",
            Self::DirectMessages => "direct-messages",
            Self::Scheduling => "scheduling",
        }
    }

    /// The [`AdapterError::Unsupported`](crate::AdapterError::Unsupported) a call of this capability answers
    /// on an adapter without it.
    pub fn unsupported(self) -> crate::AdapterError {
        crate::AdapterError::Unsupported(self.name())
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Capability`]s: what one adapter can do.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Capabilities(u16);

impl Capabilities {
    /// No capability: messaging only.
    pub const NONE: Capabilities = Capabilities(0);

    /// This set with `capability` in it.
    #[must_use]
    pub fn with(self, capability: Capability) -> Self {
        Self(self.0 | capability.bit())
    }

    /// Whether `capability` is in the set.
    pub fn contains(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }

    /// The capabilities in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(move |c| self.contains(*c))
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        iter.into_iter().fold(Self::NONE, Self::with)
    }
}

impl std::fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_exactly_what_was_put_in() {
        let set: Capabilities = [Capability::Modals, Capability::Unreact]
            .into_iter()
            .collect();
        for &c in Capability::ALL {
            assert_eq!(
                set.contains(c),
                matches!(c, Capability::Modals | Capability::Unreact),
                "{c}"
            );
        }
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Capability::Modals, Capability::Unreact]
        );
        assert_eq!(format!("{set:?}"), "{Modals, Unreact}");
        assert!(Capabilities::NONE.iter().next().is_none());
    }
}
