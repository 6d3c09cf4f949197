//! [`Thread`]: the portable handle a handler (or a program outside one)
//! talks back through — post (text, Markdown, cards), edit, delete, react,
//! ephemeral messages, history, user lookups, scheduled messages — and
//! [`SentMessage`], a posted message to edit, delete and react to. Streaming
//! is in `stream`, history and transcripts in `history`, idempotent posts
//! in `once`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::view::View;
use chat_core::{
    AdapterError, Capability, FileUpload, KvStore, MessageRef, OutboundMessage, PlatformAdapter,
    PostKey, ScheduledMessage, SetMode, StateBackend, ThreadRef, UserInfo,
};
use serde::Serialize;
use tokio::time::Instant;

use crate::cancel::Cancel;
use crate::keeper::LeaseState;
use crate::options::RetentionOptions;

pub(crate) mod history;
mod once;
pub(crate) mod stream;

/// How often the fallback of [`Thread::stream`] edits its message at most.
pub const DEFAULT_STREAM_INTERVAL: Duration = Duration::from_millis(500);

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

/// A conversation to talk in. From [`Ctx::thread`](crate::Ctx::thread) in a
/// handler, or [`Bot::thread`](crate::Bot::thread) /
/// [`Bot::open_dm`](crate::Bot::open_dm) outside one (a cron job, a CI hook).
///
/// In a run, every call is bounded by the run's deadline: a platform call
/// that would wait past it (a rate-limit `Retry-After`, a slow API) is
/// abandoned with [`AdapterError::DeadlineExceeded`]. Calls still work after
/// the run was cancelled, so a handler can post a final word when asked to
/// stop — except once the run's lease is lost (another holder may be running
/// the event again): then every call is refused with
/// [`AdapterError::Cancelled`].
///
/// Each post of a run carries its position in the run ([`PostKey`]): when
/// the event runs again after a holder died, the adapter returns the reply an
/// earlier attempt already posted at that position instead of posting it
/// twice. Outside a run, [`post_once`](Self::post_once) takes a key of the
/// caller's for the same purpose.
///
/// A handle serializes as its [`ThreadRef`] (and deserializes as one): store
/// it in a workflow, and act later — on any replica — with
/// [`Bot::thread`](crate::Bot::thread).
///
/// What each call is on each platform; the capability column names the
/// [`Capability`] a call needs (a platform without it answers
/// [`AdapterError::Unsupported`]), and a test checks this table against
/// what the adapters declare (a cell that begins "unsupported" is where
/// the adapter lacks the capability; what follows says what the call does
/// instead).
///
/// | method | capability | Slack | Linear | Telegram | WhatsApp |
/// |---|---|---|---|---|---|
/// | [`post`](Self::post) | — | `chat.postMessage` (cards as Block Kit) | agent activity `response` (sessions) or a reply comment; cards as Markdown | `sendMessage` (Markdown as entities, split at 4,096; cards with an inline keyboard) | `/messages` text in WhatsApp's formatting, split at 4,096; cards as reply buttons or a list |
/// | [`post_once`](Self::post_once) | — | `chat.postMessage` with the key in its metadata | as `post`, with a client-side id | as `post` (at least once after a crash) | as `post` (at least once after a crash) |
/// | [`post_ephemeral`](Self::post_ephemeral) | ephemeral | `chat.postEphemeral` | unsupported | unsupported | unsupported |
/// | [`post_ephemeral_or_dm`](Self::post_ephemeral_or_dm) | — | `chat.postEphemeral` | unsupported (neither) | a post in the user's private chat | a post (every chat is one user's) |
/// | [`SentMessage::edit`] / [`delete`](SentMessage::delete) | — | `chat.update` / `chat.delete` | comments only | `editMessageText` / `deleteMessage` | unsupported (no edits, no deletes) |
/// | [`SentMessage::react`] | — | `reactions.add` | comments: `reactionCreate` | `setMessageReaction` (Telegram's reaction set) | a `reaction` message |
/// | [`SentMessage::unreact`] | unreact | `reactions.remove` | comments: `reactionDelete` of the bot's reaction | `setMessageReaction` with none | a `reaction` message with no emoji |
/// | [`history`](Self::history) / [`history_newest`](Self::history_newest) | history | `conversations.replies` (a channel: `conversations.history`), cursor pages | a comment thread's replies or a session's activities, cursor pages | unsupported | unsupported |
/// | [`message`](Self::message) | history | `conversations.replies` bounded to the message | the comment or activity | unsupported | unsupported |
/// | [`transcript`](Self::transcript) | history | the history as turns | the history as turns | unsupported | unsupported |
/// | [`user`](Self::user) | users | `users.info`, cached | the `user` query, cached | `getChat` | the profile name the webhook carried |
/// | [`open_modal`](Self::open_modal) / [`update_modal`](Self::update_modal) / [`push_modal`](Self::push_modal) | modals | `views.open` / `views.update` / `views.push` | unsupported | unsupported | unsupported |
/// | [`upload`](Self::upload) / [`upload_files`](Self::upload_files) | uploads | `files.getUploadURLExternal` + `files.completeUploadExternal` (several files in one message) | unsupported | `sendDocument` | `/media`, then a `document` message |
/// | [`download`](Self::download) | downloads | the file's `url_private` with the bot token, streamed and capped | `uploads.linear.app` with the token, streamed and capped | `getFile`, then the file server, capped at 20 MB | `/{media-id}`, then Meta's media host with the token, capped |
/// | [`set_status`](Self::set_status) | status | `assistant.threads.setStatus` | a session's `thought` | `sendChatAction` typing | the last message marked read, with the typing indicator |
/// | [`stream`](Self::stream) | streams | `chat.startStream` / `appendStream` / `stopStream` (fallback: post + edits) | sessions: thoughts, then a response; comments: one comment edited | private chats: `sendMessageDraft`, then the message; elsewhere post + edits | unsupported natively: posted whole, once |
/// | [`schedule`](Self::schedule) / [`cancel_scheduled`](Self::cancel_scheduled) | scheduling | `chat.scheduleMessage` / `chat.deleteScheduledMessage` | unsupported | unsupported | unsupported |
/// | [`Bot::open_dm`](crate::Bot::open_dm) | direct-messages | `conversations.open` | unsupported | the user's private chat | the user's chat with the number |
#[derive(Clone)]
pub struct Thread {
    adapter: Arc<dyn PlatformAdapter>,
    state: Arc<dyn StateBackend>,
    thread: ThreadRef,
    posted: Arc<AtomicBool>,
    deadline: Option<Instant>,
    retention: RetentionOptions,
    replies: Option<Replies>,
    /// The user the run answers (the event's author), for a stream.
    recipient: Option<String>,
}

impl Serialize for Thread {
    /// As its [`ThreadRef`].
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.thread.serialize(s)
    }
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
        retention: RetentionOptions,
    ) -> Self {
        Self {
            adapter,
            state,
            thread,
            posted,
            deadline,
            retention,
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

    /// The thread's identity (what the handle serializes as).
    pub fn id(&self) -> &ThreadRef {
        &self.thread
    }

    /// The thread's channel itself: posts go there as new top-level
    /// messages, and its history is the channel's (newest first where the
    /// platform reads channels that way).
    #[must_use]
    pub fn in_channel(&self) -> Thread {
        let mut channel = self.clone();
        channel.thread.thread = String::new();
        channel
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

    /// Uploads several files into the thread as one message where the
    /// platform can (Slack), else one after the other; `comment` is the
    /// message. Returns the platform's file ids, in order.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] where the platform takes no uploads
    /// (Linear).
    pub async fn upload_files(
        &self,
        files: Vec<FileUpload>,
        comment: Option<&str>,
    ) -> Result<Vec<String>, AdapterError> {
        let uploads = self
            .adapter
            .as_uploads()
            .ok_or(Capability::Uploads.unsupported())?;
        let r = self
            .bounded(uploads.upload_files(&self.thread, files, comment))
            .await;
        if r.is_ok() {
            self.posted.store(true, Ordering::Release);
        }
        r
    }

    /// Posts a message only `user` sees: an ephemeral message where the
    /// platform has them, else a direct message to them
    /// ([`Bot::open_dm`](crate::Bot::open_dm)'s conversation).
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] where the platform has neither
    /// (Linear); the adapter's otherwise.
    pub async fn post_ephemeral_or_dm(
        &self,
        user: &str,
        message: impl Into<OutboundMessage>,
    ) -> Result<Private, AdapterError> {
        let message = message.into();
        if self.adapter.as_ephemeral().is_some() {
            self.post_ephemeral(user, message).await?;
            return Ok(Private::Ephemeral);
        }
        let dms = self
            .adapter
            .as_direct_messages()
            .ok_or(AdapterError::Unsupported("ephemeral or direct messages"))?;
        let dm = self.bounded(dms.open_dm(&self.thread.tenant, user)).await?;
        let mut thread = self.clone();
        thread.thread = dm;
        Ok(Private::DirectMessage(Box::new(
            thread.post(message).await?,
        )))
    }

    /// The text that mentions user `user_id` in a message on this platform:
    /// Slack `<@U1>` (which notifies them), else the looked-up user's
    /// [`UserInfo::mention`] (Linear: their profile URL, which Linear shows
    /// as a mention), else `@user_id`.
    pub async fn mention(&self, user_id: &str) -> String {
        if let Some(markup) = self.adapter.mention(user_id) {
            return markup;
        }
        match self.user(user_id).await {
            Ok(user) => user.mention(),
            Err(_) => format!("@{user_id}"),
        }
    }

    /// `message` with the users it mentions named: each mention the
    /// platform sent without a name (Slack's `<@U1>`, read as `@U1`) looked
    /// up ([`user`](Self::user), cached) and written as `@display name` in
    /// the plain text and the Markdown, its [`Mention::name`](chat_core::Mention::name)
    /// set. A user who cannot be looked up keeps their id; a platform
    /// without user lookups changes nothing.
    pub async fn resolve_mentions(&self, message: &chat_core::Message) -> chat_core::Message {
        let mut named = message.clone();
        if !self.supports(Capability::Users) {
            return named;
        }
        for mention in named.mentions.iter_mut().filter(|m| m.name.is_none()) {
            let Ok(user) = self.user(&mention.user_id).await else {
                continue;
            };
            let (id, name) = (
                format!("@{}", mention.user_id),
                format!("@{}", user.display_name),
            );
            named.text = replace_token(&named.text, &id, &name);
            named.markdown = replace_token(&named.markdown, &id, &name);
            mention.name = Some(user.display_name);
        }
        named
    }

    /// Schedules `message` to be posted in the thread at `at` by the
    /// platform itself (Slack `chat.scheduleMessage`: at most 120 days
    /// ahead); keep the answer to cancel it.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] where the platform schedules nothing
    /// (Linear); [`AdapterError::Invalid`] for a time before the Unix
    /// epoch; the platform's refusal of the time otherwise.
    pub async fn schedule(
        &self,
        at: SystemTime,
        message: impl Into<OutboundMessage>,
    ) -> Result<ScheduledMessage, AdapterError> {
        let message = message.into();
        let scheduling = self
            .adapter
            .as_scheduling()
            .ok_or(Capability::Scheduling.unsupported())?;
        let post_at = at
            .duration_since(UNIX_EPOCH)
            .map_err(|_| AdapterError::Invalid("a time before 1970".to_owned()))?
            .as_secs();
        self.bounded(scheduling.schedule(&self.thread, post_at, &message))
            .await
    }

    /// Cancels a message [`schedule`](Self::schedule) scheduled.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub async fn cancel_scheduled(&self, scheduled: &ScheduledMessage) -> Result<(), AdapterError> {
        let scheduling = self
            .adapter
            .as_scheduling()
            .ok_or(Capability::Scheduling.unsupported())?;
        self.bounded(scheduling.cancel_scheduled(scheduled)).await
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
                    Some(self.retention.user_cache_ttl),
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

/// `text` with every `token` that stands alone (not followed by a letter,
/// a digit or `_`: `@U1` but not `@U12`) replaced by `with`.
fn replace_token(text: &str, token: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(token) {
        let after = &rest[at + token.len()..];
        let whole = after
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&rest[..at]);
        out.push_str(if whole { with } else { token });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// How [`Thread::post_ephemeral_or_dm`] reached its user.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Private {
    /// As an ephemeral message in the thread.
    Ephemeral,
    /// As a direct message: the message posted there.
    DirectMessage(Box<SentMessage>),
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
