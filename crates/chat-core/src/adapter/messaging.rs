//! The messaging side of a platform: what every adapter can do in a thread
//! ([`Messaging`]).

use async_trait::async_trait;

use crate::error::AdapterError;
use crate::id::ThreadRef;
use crate::outbound::{MessageRef, OutboundMessage};

/// Posting into a thread and changing what was posted: the calls every chat
/// platform has. Called from handlers, inside their deadline; failures are
/// typed [`AdapterError`]s. What only some platforms have is a capability
/// trait of its own ([`capability`](super::capability)).
#[async_trait]
pub trait Messaging: Send + Sync + 'static {
    /// Posts a message into a thread.
    ///
    /// When the message carries a [`PostKey`](crate::PostKey) with an
    /// attempt above 1 (its run is a repeat after a holder died), the adapter
    /// first looks for a message it posted earlier under the same key, and
    /// returns that one instead of posting again. Adapters record the key
    /// with every post they make.
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

    /// Whether [`edit`](Self::edit) works on this platform. Without it
    /// (WhatsApp), the runtime never streams by editing: a streamed answer
    /// is posted once, whole. Default: `true`.
    fn can_edit(&self) -> bool {
        true
    }

    /// The longest text one message holds, in UTF-16 code units of its
    /// Markdown (Telegram: 4,096), when the platform has a limit a streamed
    /// answer can reach. A stream by edits that grows past it goes on in a
    /// new message instead of failing its next edit. Default: `None`.
    fn max_text_len(&self) -> Option<usize> {
        None
    }

    /// The text that mentions user `user_id` in a message on this platform,
    /// when the id alone says it (Slack `<@U1>`). Default: `None` — the
    /// runtime then looks the user up ([`UserInfo::mention`](crate::UserInfo::mention)).
    fn mention(&self, user_id: &str) -> Option<String> {
        let _ = user_id;
        None
    }
}
