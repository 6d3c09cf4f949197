//! What handlers read back from a platform through an adapter: a thread's
//! earlier messages ([`HistoryPage`]) and who a user is ([`UserInfo`]).

use serde::{Deserialize, Serialize};

/// One earlier message of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryMessage {
    /// The platform's message id (Slack `ts`, Linear comment / activity id).
    pub id: String,
    /// Who wrote it (its `is_me` set when it is this bot's).
    pub author: crate::Author,
    /// Its text as the platform stores it (Slack mrkdwn, Linear Markdown).
    pub text: String,
    /// When it was posted, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

impl HistoryMessage {
    /// A message of the history.
    pub fn new(
        id: impl Into<String>,
        author: crate::Author,
        text: impl Into<String>,
        at_ms: u64,
    ) -> Self {
        Self {
            id: id.into(),
            author,
            text: text.into(),
            at_ms,
        }
    }

    /// Whether this bot wrote it.
    pub fn is_from_bot(&self) -> bool {
        self.author.is_me
    }
}

/// One page of a thread's history, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HistoryPage {
    /// The messages of the page, oldest first.
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
    /// The email address, when the scopes allow (Slack `users:read.email`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// A bot or app user.
    #[serde(default)]
    pub is_bot: bool,
}

impl UserInfo {
    /// A user known by id and display name.
    pub fn new(id: impl Into<String>, display_name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            display_name: display_name.into(),
            real_name: None,
            email: None,
            is_bot: false,
        }
    }

    /// With a real name.
    #[must_use]
    pub fn with_real_name(mut self, name: impl Into<String>) -> Self {
        self.real_name = Some(name.into());
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
}
