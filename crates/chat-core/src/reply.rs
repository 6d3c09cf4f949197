//! [`Reply`]: a handler's answer to the interaction its run is for — a slash
//! command, a click, a modal submission — which the event's adapter renders in
//! its platform's form; and [`Handle`](crate::Handle), the opaque capabilities an adapter
//! hands out with an interaction (where to answer it later, how to open a
//! modal from it).
//!
//! Neither names a platform's fields: the runtime keeps and passes them, and
//! only the adapter that made a handle reads it.
//!
//! ```
//! use chat_core::{OutboundMessage, Reply, Visibility};
//!
//! let private = Reply::ephemeral("only you see this");
//! let public = Reply::message(OutboundMessage::markdown("**done**"), Visibility::InChannel)
//!     .replacing_original();
//! assert!(matches!(public, Reply::Message { replace_original: true, .. }));
//! assert_ne!(private, public);
//! ```

use serde::{Deserialize, Serialize};

use crate::outbound::OutboundMessage;
use crate::view::ModalAnswer;

/// Who sees a [`Reply::Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Visibility {
    /// Only the user who acted.
    #[default]
    Ephemeral,
    /// Everyone in the conversation.
    InChannel,
}

/// A handler's answer to its interaction, given with `Ctx::reply`: in the
/// delivery's HTTP answer while that is still open, otherwise later through
/// the interaction's follow-up [`Handle`](crate::Handle)
/// ([`Webhook::reply_later`](crate::Webhook::reply_later)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reply {
    /// A message — text, Markdown or a card — to the user who acted or to
    /// the conversation, optionally in place of the message the interaction
    /// came from (a clicked button's).
    Message {
        /// The content.
        message: Box<OutboundMessage>,
        /// Who sees it.
        visibility: Visibility,
        /// Whether it replaces the message the interaction came from.
        replace_original: bool,
    },
    /// A modal submission's answer (field errors, update, push, clear).
    Modal(Box<ModalAnswer>),
    /// The platform's own answer body, sent as it is: the way down for what
    /// the portable forms do not cover.
    Platform(serde_json::Value),
}

impl Reply {
    /// `text` only the user who acted sees.
    pub fn ephemeral(text: impl Into<String>) -> Self {
        Self::message(OutboundMessage::text(text), Visibility::Ephemeral)
    }

    /// `text` everyone in the conversation sees.
    pub fn in_channel(text: impl Into<String>) -> Self {
        Self::message(OutboundMessage::text(text), Visibility::InChannel)
    }

    /// `message`, seen as `visibility` says.
    pub fn message(message: impl Into<OutboundMessage>, visibility: Visibility) -> Self {
        Self::Message {
            message: Box::new(message.into()),
            visibility,
            replace_original: false,
        }
    }

    /// The same message, in place of the one the interaction came from.
    #[must_use]
    pub fn replacing_original(self) -> Self {
        match self {
            Self::Message {
                message,
                visibility,
                ..
            } => Self::Message {
                message,
                visibility,
                replace_original: true,
            },
            other => other,
        }
    }

    /// The platform's own body, sent as it is.
    pub fn platform(body: serde_json::Value) -> Self {
        Self::Platform(body)
    }
}

impl From<ModalAnswer> for Reply {
    fn from(answer: ModalAnswer) -> Self {
        Self::Modal(Box::new(answer))
    }
}

impl From<&str> for Reply {
    /// Ephemeral text.
    fn from(text: &str) -> Self {
        Self::ephemeral(text)
    }
}

impl From<String> for Reply {
    /// Ephemeral text.
    fn from(text: String) -> Self {
        Self::ephemeral(text)
    }
}
