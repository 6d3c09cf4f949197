//! What handlers send and read back through an adapter: messages
//! ([`OutboundMessage`]), a thread's earlier messages ([`HistoryPage`]), who
//! a user is ([`UserInfo`]), scheduled messages and files.

use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::id::{EventId, ThreadRef};

/// One earlier message of a thread, read back through the adapter:
/// normalized as an incoming [`Message`](crate::Message) is (plain text,
/// markup, Markdown, mentions, links, attachments, author), with when it was
/// posted. It dereferences to its message, so `entry.text`, `entry.id` and
/// `entry.author` read as on an event's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryMessage {
    /// The message, normalized (its author's `is_me` set when it is this
    /// bot's).
    pub message: crate::Message,
    /// When it was posted, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

impl HistoryMessage {
    /// A message of the history whose text is plain (no markup to read).
    pub fn new(
        id: impl Into<String>,
        author: crate::Author,
        text: impl Into<String>,
        at_ms: u64,
    ) -> Self {
        Self {
            message: crate::Message::new(id, author, text),
            at_ms,
        }
    }

    /// A message the adapter normalized, posted at `at_ms`.
    pub fn from_message(message: crate::Message, at_ms: u64) -> Self {
        Self { message, at_ms }
    }

    /// Whether this bot wrote it.
    pub fn is_from_bot(&self) -> bool {
        self.message.author.is_me
    }
}

impl std::ops::Deref for HistoryMessage {
    type Target = crate::Message;

    fn deref(&self) -> &crate::Message {
        &self.message
    }
}

/// The order of a history read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum HistoryOrder {
    /// The first message first (a thread's root, then its replies).
    #[default]
    OldestFirst,
    /// The latest message first.
    NewestFirst,
}

/// One page of a thread's history, in the order it was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryPage {
    /// The messages of the page.
    pub messages: Vec<HistoryMessage>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl HistoryPage {
    /// A page.
    pub fn new(messages: Vec<HistoryMessage>, next: Option<String>) -> Self {
        Self { messages, next }
    }
}

/// Who a user is, as far as the bot's scopes let it see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserInfo {
    /// The platform's user id.
    pub id: String,
    /// The name shown in conversations (Slack's display name, else its real
    /// name; Linear's display name).
    pub display_name: String,
    /// The full name, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_name: Option<String>,
    /// The handle people type after `@` (Slack's `name`, Linear's
    /// `displayName`), when the platform has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// The URL of the user's avatar image, when the platform gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    /// The email address, when the scopes allow (Slack `users:read.email`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// A bot or app user.
    #[serde(default)]
    pub is_bot: bool,
    /// How a message mentions this user on the platform (Slack `<@U1>`,
    /// Linear the profile URL), set by the adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mention: Option<String>,
}

impl UserInfo {
    /// A user known by id and display name.
    pub fn new(id: impl Into<String>, display_name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            display_name: display_name.into(),
            real_name: None,
            handle: None,
            avatar_url: None,
            email: None,
            is_bot: false,
            mention: None,
        }
    }

    /// With a real name.
    #[must_use]
    pub fn with_real_name(mut self, name: impl Into<String>) -> Self {
        self.real_name = Some(name.into());
        self
    }

    /// With a handle.
    #[must_use]
    pub fn with_handle(mut self, handle: impl Into<String>) -> Self {
        self.handle = Some(handle.into());
        self
    }

    /// With an avatar URL.
    #[must_use]
    pub fn with_avatar_url(mut self, url: impl Into<String>) -> Self {
        self.avatar_url = Some(url.into());
        self
    }

    /// With an email address.
    #[must_use]
    pub fn with_email(mut self, email: impl Into<String>) -> Self {
        self.email = Some(email.into());
        self
    }

    /// Marked as a bot or app user.
    #[must_use]
    pub fn with_bot(mut self, is_bot: bool) -> Self {
        self.is_bot = is_bot;
        self
    }

    /// With the platform's markup that mentions the user.
    #[must_use]
    pub fn with_mention(mut self, markup: impl Into<String>) -> Self {
        self.mention = Some(markup.into());
        self
    }

    /// The text that mentions this user in a message on their platform
    /// (Slack `<@U1>`, which notifies them), else `@handle`, else
    /// `@display name`.
    ///
    /// ```
    /// use chat_core::UserInfo;
    /// let ann = UserInfo::new("U1", "Ann").with_handle("ann");
    /// assert_eq!(ann.clone().with_mention("<@U1>").mention(), "<@U1>");
    /// assert_eq!(ann.mention(), "@ann");
    /// assert_eq!(UserInfo::new("U2", "Bo").mention(), "@Bo");
    /// ```
    pub fn mention(&self) -> String {
        match (&self.mention, &self.handle) {
            (Some(m), _) => m.clone(),
            (None, Some(h)) => format!("@{h}"),
            (None, None) => format!("@{}", self.display_name),
        }
    }
}

/// A message scheduled to be posted later
/// ([`Scheduling`](crate::Scheduling)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScheduledMessage {
    /// The platform's id of the scheduled message (Slack
    /// `scheduled_message_id`), to cancel it.
    pub id: String,
    /// Where it will be posted.
    pub thread: ThreadRef,
    /// When, in seconds since the Unix epoch, as the platform accepted it.
    pub post_at: u64,
}

impl ScheduledMessage {
    /// A scheduled message.
    pub fn new(id: impl Into<String>, thread: ThreadRef, post_at: u64) -> Self {
        Self {
            id: id.into(),
            thread,
            post_at,
        }
    }
}

/// A file to upload ([`Uploads::upload_files`](crate::Uploads::upload_files)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileUpload {
    /// The file name.
    pub name: String,
    /// Its bytes.
    pub content: bytes::Bytes,
}

impl FileUpload {
    /// A file named `name` holding `content`.
    pub fn new(name: impl Into<String>, content: impl Into<bytes::Bytes>) -> Self {
        Self {
            name: name.into(),
            content: content.into(),
        }
    }
}

/// A message the bot sends: text (plain or Markdown), or a [`Card`] whose
/// plain-text fallback is the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutboundMessage {
    /// The text; for a card, its plain-text fallback.
    pub text: String,
    /// How the text is marked up.
    pub format: TextFormat,
    /// The rich content, rendered by the adapter (Slack: Block Kit; Linear:
    /// Markdown); `text` stands for it where it cannot show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<Card>,
    /// The reply's identity within its handler run, set by the runtime's thread
    /// handle: adapters use it so a run repeated after a crash does not post
    /// the same reply twice (see [`Messaging::post`](crate::Messaging::post)).
    #[serde(default, alias = "reply_key", skip_serializing_if = "Option::is_none")]
    pub post_key: Option<PostKey>,
}

impl OutboundMessage {
    /// Plain text, sent as is.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            format: TextFormat::Plain,
            card: None,
            post_key: None,
        }
    }

    /// A card; its [`fallback_text`](Card::fallback_text) is the message's
    /// text.
    pub fn card(card: Card) -> Self {
        Self {
            text: card.fallback_text(),
            format: TextFormat::Plain,
            card: Some(card),
            post_key: None,
        }
    }

    /// CommonMark, converted by the adapter to its platform's markup.
    pub fn markdown(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            format: TextFormat::Markdown,
            card: None,
            post_key: None,
        }
    }

    /// The same message as the reply `key` of its run.
    #[must_use]
    pub fn with_post_key(mut self, key: PostKey) -> Self {
        self.post_key = Some(key);
        self
    }
}

/// The stable identity of one reply: the event its run answers, and the reply's
/// position among the run's posts. The same on every attempt of the run, so an
/// adapter can tell a reply it already posted on an earlier attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PostKey {
    /// The event the run answers.
    pub event_id: EventId,
    /// The reply's position in the run: 0 for its first post.
    pub position: u32,
    /// The run's attempt (1 the first time). On an attempt above 1 an adapter
    /// first looks for the reply among what is already posted.
    pub attempt: u32,
}

impl PostKey {
    /// Builds a reply key.
    pub fn new(event_id: EventId, position: u32, attempt: u32) -> Self {
        Self {
            event_id,
            position,
            attempt,
        }
    }
}

impl From<&str> for OutboundMessage {
    fn from(s: &str) -> Self {
        Self::text(s)
    }
}

impl From<Card> for OutboundMessage {
    fn from(card: Card) -> Self {
        Self::card(card)
    }
}

impl From<String> for OutboundMessage {
    fn from(s: String) -> Self {
        Self::text(s)
    }
}

/// Markup of an [`OutboundMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TextFormat {
    /// Sent as is.
    Plain,
    /// CommonMark.
    Markdown,
}

/// A message the bot posted, to edit, delete or react to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MessageRef {
    /// The thread it was posted in.
    pub thread: ThreadRef,
    /// The platform's message id.
    pub id: String,
}
