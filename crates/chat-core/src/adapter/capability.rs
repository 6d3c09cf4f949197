//! What only some platforms can do, one trait each. An adapter implements
//! the ones its platform has and says so through
//! [`PlatformAdapter`](super::PlatformAdapter)'s `as_*` accessors, so a bot
//! knows at build time what it may call ([`Capabilities`](super::Capabilities)),
//! and a call to a missing one is a typed
//! [`AdapterError::Unsupported`] rather than a surprise at the platform.

use async_trait::async_trait;
use bytes::Bytes;

use crate::content::{Attachment, Download};
use crate::error::AdapterError;
use crate::id::{TenantId, ThreadRef};
use crate::outbound::{
    FileUpload, HistoryMessage, HistoryOrder, HistoryPage, MessageRef, OutboundMessage,
    ScheduledMessage, UserInfo,
};
use crate::view::View;

/// Modal views opened, updated and pushed with an interaction's trigger.
#[async_trait]
pub trait Modals: Send + Sync {
    /// Opens a modal with an interaction's `trigger` (its trigger
    /// [`Handle`](crate::Handle)'s value; Slack's is valid about 3 s);
    /// returns the view's id.
    async fn open_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &View,
    ) -> Result<String, AdapterError>;

    /// Replaces the open view `view_id`.
    async fn update_modal(
        &self,
        tenant: &TenantId,
        view_id: &str,
        view: &View,
    ) -> Result<(), AdapterError>;

    /// Pushes a view onto the open modal with a `trigger`; returns its id.
    async fn push_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &View,
    ) -> Result<String, AdapterError>;
}

/// Native streaming: a message (or a run of them) that grows as text is
/// appended. Without it the runtime streams by one post and throttled edits.
#[async_trait]
pub trait Streams: Send + Sync {
    /// Starts a stream in the thread with `text` (Markdown) as its first
    /// content; `recipient` is the user the answer is for (Slack needs it
    /// outside direct messages). Returns the stream's message.
    ///
    /// The platform's [`AdapterError::Api`] refusal (or
    /// [`AdapterError::Unsupported`] for this thread) is not a failure of
    /// the stream: the runtime then streams by one post and throttled edits.
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError>;

    /// Appends `text` (Markdown) to a stream [`start_stream`](Self::start_stream)
    /// opened.
    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError>;

    /// Ends a stream; `full_text` is everything it carried, for a platform that
    /// posts the final answer apart from what it showed while streaming.
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError>;

    /// The longest text one [`start_stream`](Self::start_stream) or
    /// [`append_stream`](Self::append_stream) takes, in UTF-16 code units of
    /// its Markdown (Slack: 12,000). The runtime sends a longer text in
    /// several appends, which the stream joins. Default: `None` (no limit).
    fn max_stream_text_len(&self) -> Option<usize> {
        None
    }

    /// How long a stream may stay open: the runtime stops it and goes on in a
    /// new one before then (Slack expires a stream after about five
    /// minutes). Default: no limit.
    fn stream_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A thread's earlier messages.
///
/// A [`ThreadRef`] whose thread part is empty names a channel (or a
/// conversation without threads): its history is the channel's.
#[async_trait]
pub trait History: Send + Sync {
    /// One page of the thread's earlier messages, oldest first: the first page
    /// with `cursor` `None`, the next with the previous page's
    /// [`next`](HistoryPage::next); at most `limit` messages a page (the
    /// platform may cap it lower).
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError>;

    /// One page in `order`. The platform's native reads only: an order it
    /// cannot read is [`AdapterError::Unsupported`], and the runtime then
    /// reads the other order and turns it around. Default: `OldestFirst` is
    /// [`history`](Self::history), `NewestFirst` unsupported.
    async fn history_in(
        &self,
        thread: &ThreadRef,
        order: HistoryOrder,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        match order {
            HistoryOrder::NewestFirst => Err(AdapterError::Unsupported("newest-first history")),
            _ => self.history(thread, cursor, limit).await,
        }
    }

    /// The message `id` of the thread, `None` when it is not there (deleted,
    /// or never in this thread). Default: the thread's pages read oldest
    /// first until it is found.
    async fn message(
        &self,
        thread: &ThreadRef,
        id: &str,
    ) -> Result<Option<HistoryMessage>, AdapterError> {
        let mut cursor: Option<String> = None;
        loop {
            let page = self.history(thread, cursor.as_deref(), 200).await?;
            if let Some(found) = page.messages.into_iter().find(|m| m.message.id == id) {
                return Ok(Some(found));
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(None),
            }
        }
    }
}
/// Who a user is.
#[async_trait]
pub trait Users: Send + Sync {
    /// Who user `id` of `tenant` is. Not cached by the adapter (the runtime
    /// caches it).
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError>;
}

/// Files uploaded into a thread.
#[async_trait]
pub trait Uploads: Send + Sync {
    /// Uploads a file named `name` holding `content` into the thread, with
    /// `comment` as its message; returns the platform's file id.
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError>;

    /// Uploads several files into the thread as one post with `comment` as
    /// its message, where the platform can (Slack); returns their ids in
    /// order. Default: one upload after the other, the comment with the
    /// first.
    async fn upload_files(
        &self,
        thread: &ThreadRef,
        files: Vec<FileUpload>,
        comment: Option<&str>,
    ) -> Result<Vec<String>, AdapterError> {
        let mut ids = Vec::with_capacity(files.len());
        for (i, file) in files.into_iter().enumerate() {
            let comment = if i == 0 { comment } else { None };
            ids.push(
                self.upload(thread, &file.name, file.content, comment)
                    .await?,
            );
        }
        Ok(ids)
    }
}

/// The bytes of files attached to incoming messages, read with the
/// tenant's credentials.
///
/// # Contract
///
/// * The credential is sent only to the origin (scheme, host, port) of
///   [`Attachment::source`]; a redirect to another origin is followed
///   without it, or refused.
/// * The answer streams; the [`Download`] is built with `limit`, so a body
///   longer than it ends in [`AdapterError::TooLarge`] without being held.
/// * A source this adapter did not produce is [`AdapterError::Invalid`].
#[async_trait]
pub trait Downloads: Send + Sync {
    /// Starts downloading `file` for `tenant`, at most `limit` bytes.
    async fn download(
        &self,
        tenant: &TenantId,
        file: &Attachment,
        limit: u64,
    ) -> Result<Download, AdapterError>;
}

/// Messages only one user sees.
#[async_trait]
pub trait Ephemeral: Send + Sync {
    /// Posts a message only `user` sees, in the thread.
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &str,
        message: &OutboundMessage,
    ) -> Result<(), AdapterError>;
}

/// A "working on it" status shown in a thread.
#[async_trait]
pub trait Status: Send + Sync {
    /// Shows (or with `None` clears) the status in the thread.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError>;
}

/// The bot's own reactions taken back.
#[async_trait]
pub trait Unreact: Send + Sync {
    /// Removes the bot's reaction (emoji name without colons); a reaction that
    /// is not there is success.
    async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError>;
}

/// Conversations the bot opens itself: a direct message with a user, for a
/// program that must reach someone no event came from.
#[async_trait]
pub trait DirectMessages: Send + Sync {
    /// The direct-message conversation between the bot and `user` of
    /// `tenant` (opened if it was not): a [`ThreadRef`] whose thread part is
    /// empty, to post into.
    async fn open_dm(&self, tenant: &TenantId, user: &str) -> Result<ThreadRef, AdapterError>;
}

/// Messages the platform posts later by itself.
#[async_trait]
pub trait Scheduling: Send + Sync {
    /// Schedules `message` in the thread for `post_at` (seconds since the
    /// Unix epoch). A time the platform refuses (in the past, too far
    /// ahead) is its [`AdapterError::Api`] error.
    async fn schedule(
        &self,
        thread: &ThreadRef,
        post_at: u64,
        message: &OutboundMessage,
    ) -> Result<ScheduledMessage, AdapterError>;

    /// Cancels a scheduled message before it is posted.
    async fn cancel_scheduled(&self, scheduled: &ScheduledMessage) -> Result<(), AdapterError>;
}
