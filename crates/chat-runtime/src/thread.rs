//! [`Thread`]: the portable handle a handler talks back through — post (text,
//! Markdown, cards), edit, delete, react, ephemeral messages, history, user
//! lookups — and [`SentMessage`], a posted message to edit, delete and react
//! to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use chat_core::view::View;
use chat_core::{
    AdapterError, Capability, HistoryMessage, KvStore, MessageRef, OutboundMessage,
    PlatformAdapter, PostKey, SetMode, StateBackend, Streams, ThreadRef, UserInfo,
};
use futures_util::Stream;
use tokio::time::Instant;

use crate::cancel::Cancel;
use crate::keeper::LeaseState;

/// How often the fallback of [`Thread::stream`] edits its message at most.
pub const DEFAULT_STREAM_INTERVAL: Duration = Duration::from_millis(500);

/// How many messages [`Thread::history`] asks for per page.
const HISTORY_PAGE: usize = 200;

/// What a run has posted through its thread handles: the next reply's
/// position, and whether a post began after the run was cancelled (the
/// handler's own last word on a stop).
#[derive(Debug, Default)]
pub(crate) struct Posts {
    next: AtomicU32,
    after_cancel: AtomicBool,
}

impl Posts {
    /// Whether the handler posted something it began after its cancellation.
    pub(crate) fn spoke_after_cancel(&self) -> bool {
        self.after_cancel.load(Ordering::SeqCst)
    }
}

/// A conversation to talk in. From [`Ctx::thread`](crate::Ctx::thread).
///
/// Every call is bounded by the run's deadline: a platform call that would wait
/// past it (a rate-limit `Retry-After`, a slow API) is abandoned with
/// [`AdapterError::DeadlineExceeded`]. Calls still work after the run was
/// cancelled, so a handler can post a final word when asked to stop — except
/// once the run's lease is lost (another holder may be running the event
/// again): then every call is refused with [`AdapterError::Cancelled`].
///
/// Each post carries its position in the run ([`PostKey`]): when the event
/// runs again after a holder died, the adapter returns the reply an earlier
/// attempt already posted at that position instead of posting it twice.
///
/// What each call is on each platform; the capability column names the
/// [`Capability`] a call needs (a platform without it answers
/// [`AdapterError::Unsupported`]), and a test checks this table against
/// what the adapters declare.
///
/// | method | capability | Slack | Linear |
/// |---|---|---|---|
/// | [`post`](Self::post) | — | `chat.postMessage` (cards as Block Kit) | agent activity `response` (sessions) or a reply comment; cards as Markdown |
/// | [`post_ephemeral`](Self::post_ephemeral) | ephemeral | `chat.postEphemeral` | unsupported |
/// | [`SentMessage::edit`] / [`delete`](SentMessage::delete) | — | `chat.update` / `chat.delete` | comments only |
/// | [`SentMessage::react`] | — | `reactions.add` | comments: `reactionCreate` |
/// | [`SentMessage::unreact`] | unreact | `reactions.remove` | unsupported |
/// | [`history`](Self::history) | history | `conversations.replies`, cursor pages | a comment thread's replies or a session's activities, cursor pages |
/// | [`user`](Self::user) | users | `users.info`, cached | the `user` query, cached |
/// | [`open_modal`](Self::open_modal) / [`update_modal`](Self::update_modal) / [`push_modal`](Self::push_modal) | modals | `views.open` / `views.update` / `views.push` | unsupported |
/// | [`upload`](Self::upload) | uploads | `files.getUploadURLExternal` + `files.completeUploadExternal` | unsupported |
/// | [`download`](Self::download) | downloads | the file's `url_private` with the bot token, streamed and capped | unsupported |
/// | [`set_status`](Self::set_status) | status | `assistant.threads.setStatus` | a session's `thought` |
/// | [`stream`](Self::stream) | streams | `chat.startStream` / `appendStream` / `stopStream` (fallback: post + edits) | sessions: thoughts, then a response; comments: one comment edited |
#[derive(Clone)]
pub struct Thread {
    adapter: Arc<dyn PlatformAdapter>,
    state: Arc<dyn StateBackend>,
    thread: ThreadRef,
    posted: Arc<AtomicBool>,
    deadline: Option<Instant>,
    user_ttl: Duration,
    replies: Option<Replies>,
    /// The user the run answers (the event's author), for a stream.
    recipient: Option<String>,
}

impl std::fmt::Debug for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Thread")
            .field("adapter", &self.adapter.name())
            .field("thread", &self.thread)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// What a run's thread handle needs to key its replies and to know it still
/// holds its lease.
#[derive(Clone)]
pub(crate) struct Replies {
    pub(crate) event_id: chat_core::EventId,
    pub(crate) attempt: u32,
    pub(crate) posts: Arc<Posts>,
    pub(crate) cancel: Cancel,
    pub(crate) lease: Option<Arc<LeaseState>>,
}

impl Thread {
    pub(crate) fn new(
        adapter: Arc<dyn PlatformAdapter>,
        state: Arc<dyn StateBackend>,
        thread: ThreadRef,
        posted: Arc<AtomicBool>,
        deadline: Option<Instant>,
        user_ttl: Duration,
    ) -> Self {
        Self {
            adapter,
            state,
            thread,
            posted,
            deadline,
            user_ttl,
            replies: None,
            recipient: None,
        }
    }

    /// With the user the thread's answers are for.
    pub(crate) fn answering(mut self, recipient: Option<String>) -> Self {
        self.recipient = recipient.filter(|r| !r.is_empty());
        self
    }

    /// The handle of one run: its posts are keyed, and refused once the run's
    /// lease is lost.
    pub(crate) fn for_run(mut self, replies: Replies) -> Self {
        self.replies = Some(replies);
        self
    }

    /// The thread's identity.
    pub fn id(&self) -> &ThreadRef {
        &self.thread
    }

    /// The adapter as its concrete type, for platform calls the portable
    /// methods do not cover (see [`Ctx::adapter`](crate::Ctx::adapter)).
    pub fn platform<A: PlatformAdapter>(&self) -> Option<&A> {
        let any: &dyn std::any::Any = self.adapter.as_ref();
        any.downcast_ref::<A>()
    }

    /// Posts a message: plain text from a `&str` / `String`, a
    /// [`Card`](chat_core::Card), or an [`OutboundMessage`] (Markdown).
    ///
    /// # Errors
    /// The adapter's: [`AdapterError::Invalid`] for a card beyond the
    /// platform's limits (before any call), an API error, the deadline.
    pub async fn post(
        &self,
        message: impl Into<OutboundMessage>,
    ) -> Result<SentMessage, AdapterError> {
        let mut message = message.into();
        let after_cancel = self
            .replies
            .as_ref()
            .is_some_and(|r| r.cancel.is_cancelled());
        if let Some(replies) = &self.replies
            && message.post_key.is_none()
        {
            let position = replies.posts.next.fetch_add(1, Ordering::SeqCst);
            message = message.with_post_key(PostKey::new(
                replies.event_id.clone(),
                position,
                replies.attempt,
            ));
        }
        let r = self
            .bounded(self.adapter.post(&self.thread, &message))
            .await;
        if r.is_ok() {
            self.posted.store(true, Ordering::Release);
            if let Some(replies) = &self.replies
                && after_cancel
            {
                replies.posts.after_cancel.store(true, Ordering::SeqCst);
            }
        }
        r.map(|message| SentMessage {
            thread: self.clone(),
            message,
        })
    }

    /// Streams an answer into the thread as its chunks arrive (an LLM's
    /// tokens, say), as Markdown; returns the message that holds it (the last
    /// one, when a long stream was rotated). Edits happen at most every
    /// [`DEFAULT_STREAM_INTERVAL`]; see [`stream_every`](Self::stream_every).
    ///
    /// Natively where the platform streams (Slack `chat.startStream` /
    /// `appendStream` / `stopStream` in threads, rotated before Slack's
    /// stream expiry; Linear agent sessions: ephemeral thoughts, then one
    /// final response); elsewhere, or when the platform refuses to stream,
    /// by one post of the first chunk and throttled edits of the whole text,
    /// each after the previous one completed, and a final edit. Rate limits
    /// are waited out within the run's deadline.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a stream that ends without any text;
    /// the adapter's errors otherwise.
    pub async fn stream<S>(&self, chunks: S) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = String> + Send,
    {
        self.stream_every(chunks, DEFAULT_STREAM_INTERVAL).await
    }

    /// [`stream`](Self::stream), with edits of the fallback at most every
    /// `interval`.
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn stream_every<S>(
        &self,
        chunks: S,
        interval: Duration,
    ) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = String> + Send,
    {
        use futures_util::StreamExt;
        let chunks = chunks.filter(|c| std::future::ready(!c.is_empty())).fuse();
        futures_util::pin_mut!(chunks);
        let Some(first) = chunks.next().await else {
            return Err(AdapterError::Invalid(
                "a stream without any text".to_owned(),
            ));
        };
        let Some(streams) = self.adapter.as_streams() else {
            return self.stream_by_edits(first, chunks, interval).await;
        };
        let started = self
            .bounded(streams.start_stream(&self.thread, &first, self.recipient.as_deref()))
            .await;
        match started {
            Ok(stream) => self.stream_natively(streams, stream, first, chunks).await,
            Err(AdapterError::Unsupported(_) | AdapterError::Api { .. }) => {
                self.stream_by_edits(first, chunks, interval).await
            }
            Err(e) => Err(e),
        }
    }

    /// The native stream: each append after the previous one, with what
    /// arrived meanwhile; a new stream before the platform's lifetime ends.
    async fn stream_natively<S>(
        &self,
        streams: &dyn Streams,
        mut stream: MessageRef,
        first: String,
        mut chunks: std::pin::Pin<&mut S>,
    ) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = String> + Send,
    {
        use futures_util::{FutureExt, StreamExt};
        let lifetime = streams.stream_lifetime();
        let mut opened = Instant::now();
        let mut shown = first;
        while let Some(chunk) = chunks.next().await {
            let mut text = chunk;
            // What else is ready joins this append.
            while let Some(Some(more)) = chunks.next().now_or_never() {
                text.push_str(&more);
            }
            if lifetime.is_some_and(|l| opened.elapsed() >= l) {
                self.bounded(streams.stop_stream(&stream, &shown)).await?;
                stream = self
                    .bounded(streams.start_stream(&self.thread, &text, self.recipient.as_deref()))
                    .await?;
                opened = Instant::now();
                shown = text;
                continue;
            }
            self.bounded(streams.append_stream(&stream, &text)).await?;
            shown.push_str(&text);
        }
        self.bounded(streams.stop_stream(&stream, &shown)).await?;
        self.posted.store(true, Ordering::Release);
        Ok(SentMessage {
            thread: self.clone(),
            message: stream,
        })
    }

    /// The fallback: one post, then edits of the whole text at most every
    /// `interval`, each after the previous one completed, and a final edit.
    async fn stream_by_edits<S>(
        &self,
        first: String,
        mut chunks: std::pin::Pin<&mut S>,
        interval: Duration,
    ) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = String> + Send,
    {
        use futures_util::StreamExt;
        let sent = self.post(OutboundMessage::markdown(first.as_str())).await?;
        let mut full = first;
        let mut shown = full.clone();
        let mut next_edit = Instant::now() + interval;
        loop {
            tokio::select! {
                chunk = chunks.next() => match chunk {
                    Some(chunk) => full.push_str(&chunk),
                    None => break,
                },
                () = tokio::time::sleep_until(next_edit), if full != shown => {
                    sent.edit(OutboundMessage::markdown(full.as_str())).await?;
                    shown.clone_from(&full);
                    next_edit = Instant::now() + interval;
                }
            }
        }
        if full != shown {
            // The final edit keeps the spacing too.
            tokio::time::sleep_until(next_edit).await;
            sent.edit(OutboundMessage::markdown(full.as_str())).await?;
        }
        Ok(sent)
    }

    /// Opens a modal with an interaction's `trigger` (see
    /// [`Ctx::trigger`](crate::Ctx::trigger); Slack's is valid for
    /// about 3 s); returns the view's id.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a view beyond the platform's limits;
    /// [`AdapterError::Unsupported`] where there are no modals (Linear).
    pub async fn open_modal(&self, trigger: &str, view: &View) -> Result<String, AdapterError> {
        self.bounded(
            self.modals()?
                .open_modal(&self.thread.tenant, trigger, view),
        )
        .await
    }

    /// Replaces the open view `view_id`.
    ///
    /// # Errors
    /// As [`open_modal`](Self::open_modal).
    pub async fn update_modal(&self, view_id: &str, view: &View) -> Result<(), AdapterError> {
        self.bounded(
            self.modals()?
                .update_modal(&self.thread.tenant, view_id, view),
        )
        .await
    }

    /// Pushes a view onto the open modal; returns its id.
    ///
    /// # Errors
    /// As [`open_modal`](Self::open_modal).
    pub async fn push_modal(&self, trigger: &str, view: &View) -> Result<String, AdapterError> {
        self.bounded(
            self.modals()?
                .push_modal(&self.thread.tenant, trigger, view),
        )
        .await
    }

    /// Uploads a file named `name` holding `content` into the thread, with
    /// `comment` as its message; returns the platform's file id.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] where the platform takes no uploads
    /// (Linear).
    pub async fn upload(
        &self,
        name: &str,
        content: impl Into<Bytes>,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        let uploads = self
            .adapter
            .as_uploads()
            .ok_or(Capability::Uploads.unsupported())?;
        let r = self
            .bounded(uploads.upload(&self.thread, name, content.into(), comment))
            .await;
        if r.is_ok() {
            self.posted.store(true, Ordering::Release);
        }
        r
    }

    /// Posts a message only `user` (a platform user id) sees.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] where the platform has none (Linear).
    pub async fn post_ephemeral(
        &self,
        user: &str,
        message: impl Into<OutboundMessage>,
    ) -> Result<(), AdapterError> {
        let message = message.into();
        let ephemeral = self
            .adapter
            .as_ephemeral()
            .ok_or(Capability::Ephemeral.unsupported())?;
        self.bounded(ephemeral.post_ephemeral(&self.thread, user, &message))
            .await
    }

    /// Up to `limit` of the thread's messages, oldest first (the thread's
    /// first message included, on Slack the root), read page by page.
    ///
    /// # Errors
    /// The adapter's; [`AdapterError::Unsupported`] where the platform has no
    /// history to read.
    pub async fn history(&self, limit: usize) -> Result<Vec<HistoryMessage>, AdapterError> {
        use futures_util::TryStreamExt;
        let mut out = Vec::new();
        let pages = self.history_pages(HISTORY_PAGE.min(limit.max(1)));
        futures_util::pin_mut!(pages);
        while out.len() < limit {
            match pages.try_next().await? {
                Some(page) => out.extend(page),
                None => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// The thread's messages page by page (`page_size` at most each), oldest
    /// first, following the platform's cursor; each page is one call bounded
    /// by the run's deadline.
    pub fn history_pages(
        &self,
        page_size: usize,
    ) -> impl Stream<Item = Result<Vec<HistoryMessage>, AdapterError>> + Send + '_ {
        // The cursor of the next page: `Some(None)` for the first page,
        // `None` once the last page was read.
        futures_util::stream::try_unfold(Some(None::<String>), move |cursor| async move {
            let Some(cursor) = cursor else {
                return Ok(None);
            };
            let history = self
                .adapter
                .as_history()
                .ok_or(Capability::History.unsupported())?;
            let page = self
                .bounded(history.history(&self.thread, cursor.as_deref(), page_size))
                .await?;
            let next = page.next.clone().map(Some);
            Ok(Some((page.messages, next)))
        })
    }

    /// Who `user` (a platform user id of the thread's tenant) is: display
    /// name, real name, email where the scopes allow, bot or not. Cached in
    /// the state backend for
    /// [`user_cache_ttl`](crate::RetentionOptions::user_cache_ttl); a cache
    /// that cannot be read or written only costs a platform call.
    ///
    /// # Errors
    /// The adapter's, when the user is not cached.
    pub async fn user(&self, user: &str) -> Result<UserInfo, AdapterError> {
        let key = format!(
            "user:{}:{}:{user}",
            self.thread.platform.as_str(),
            self.thread.tenant.as_str()
        );
        let kv: &dyn KvStore = self.state.as_ref();
        if let Ok(Some(bytes)) = kv.get(&key).await
            && let Ok(info) = serde_json::from_slice::<UserInfo>(&bytes)
        {
            return Ok(info);
        }
        let users = self
            .adapter
            .as_users()
            .ok_or(Capability::Users.unsupported())?;
        let info = self.bounded(users.user(&self.thread.tenant, user)).await?;
        if let Ok(bytes) = serde_json::to_vec(&info)
            && let Err(e) = kv
                .set(
                    &key,
                    Bytes::from(bytes),
                    Some(self.user_ttl),
                    SetMode::Always,
                )
                .await
        {
            tracing::debug!(error = %e, "caching a user lookup failed");
        }
        Ok(info)
    }

    async fn bounded<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, AdapterError>>,
    ) -> Result<T, AdapterError> {
        if let Some(lease) = self.replies.as_ref().and_then(|r| r.lease.as_ref())
            && !lease.held()
        {
            return Err(AdapterError::Cancelled);
        }
        match self.deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, call)
                .await
                .unwrap_or(Err(AdapterError::DeadlineExceeded)),
            None => call.await,
        }
    }

    /// Replaces a message the bot posted.
    pub async fn edit(
        &self,
        message: &MessageRef,
        content: impl Into<OutboundMessage>,
    ) -> Result<(), AdapterError> {
        let content = content.into();
        self.bounded(self.adapter.edit(message, &content)).await
    }

    /// Deletes a message the bot posted.
    pub async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        self.bounded(self.adapter.delete(message)).await
    }

    /// Reacts to a message (emoji name without colons).
    pub async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        self.bounded(self.adapter.react(message, emoji)).await
    }

    /// Removes the bot's reaction from a message.
    pub async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let unreact = self
            .adapter
            .as_unreact()
            .ok_or(Capability::Unreact.unsupported())?;
        self.bounded(unreact.unreact(message, emoji)).await
    }

    /// Shows a "working on it" status, or clears it with `None`.
    pub async fn set_status(&self, status: Option<&str>) -> Result<(), AdapterError> {
        match self.adapter.as_status() {
            Some(s) => self.bounded(s.set_status(&self.thread, status)).await,
            None => Ok(()),
        }
    }

    /// Starts downloading `file` (an [`Attachment`](chat_core::Attachment)
    /// of an incoming message in this thread's tenant) through the adapter,
    /// with the tenant's credentials: a stream of chunks that fails with
    /// [`AdapterError::TooLarge`] past `limit` bytes, so a bot reading a
    /// screenshot needs no HTTP client of its own and never holds more than
    /// it allowed. Read it whole with
    /// [`Download::bytes`](chat_core::Download::bytes).
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] when the platform has no downloads; the
    /// adapter's, when the download cannot start.
    pub async fn download(
        &self,
        file: &chat_core::Attachment,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        let downloads = self
            .adapter
            .as_downloads()
            .ok_or(Capability::Downloads.unsupported())?;
        self.bounded(downloads.download(&self.thread.tenant, file, limit))
            .await
    }

    /// Whether this thread's platform can do `capability`: what
    /// [`Capabilities`](chat_core::Capabilities) its adapter declared. The
    /// calls of a missing one answer [`AdapterError::Unsupported`].
    pub fn supports(&self, capability: Capability) -> bool {
        self.adapter.capabilities().contains(capability)
    }

    fn modals(&self) -> Result<&dyn chat_core::Modals, AdapterError> {
        self.adapter
            .as_modals()
            .ok_or(Capability::Modals.unsupported())
    }
}

/// A message the bot posted through a [`Thread`]: edit it, delete it, react to
/// it. Dereferences to its [`MessageRef`] (which the thread's `edit`,
/// `delete` and `react` take too).
#[derive(Debug, Clone)]
pub struct SentMessage {
    thread: Thread,
    message: MessageRef,
}

impl SentMessage {
    /// The message's reference (thread and platform id).
    pub fn message_ref(&self) -> &MessageRef {
        &self.message
    }

    /// The platform's message id (Slack `ts`, Linear comment / activity id).
    pub fn id(&self) -> &str {
        &self.message.id
    }

    /// Replaces its content.
    pub async fn edit(&self, content: impl Into<OutboundMessage>) -> Result<(), AdapterError> {
        self.thread.edit(&self.message, content).await
    }

    /// Deletes it.
    pub async fn delete(&self) -> Result<(), AdapterError> {
        self.thread.delete(&self.message).await
    }

    /// Reacts to it (emoji name without colons).
    pub async fn react(&self, emoji: &str) -> Result<(), AdapterError> {
        self.thread.react(&self.message, emoji).await
    }

    /// Removes the bot's reaction.
    pub async fn unreact(&self, emoji: &str) -> Result<(), AdapterError> {
        self.thread.unreact(&self.message, emoji).await
    }
}

impl std::ops::Deref for SentMessage {
    type Target = MessageRef;

    fn deref(&self) -> &MessageRef {
        &self.message
    }
}

impl From<SentMessage> for MessageRef {
    fn from(sent: SentMessage) -> Self {
        sent.message
    }
}
