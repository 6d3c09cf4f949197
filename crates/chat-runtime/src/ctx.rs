//! [`Ctx`]: what a handler gets besides its event — the thread to answer in,
//! subscriptions, the events it supersedes, its deadline and its cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use chat_core::{
    AdapterError, Event, MessageRef, OutboundMessage, PlatformAdapter, ReplyKey, StateBackend,
    StateError, ThreadRef,
};
use tokio::time::Instant;

use crate::cancel::{Cancel, CancelCause};
use crate::data::AppData;
use crate::keeper::LeaseState;

/// The context of one handler run. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<CtxInner>,
}

impl std::fmt::Debug for Ctx {
    /// The run's event (by id and thread), attempt, fence and deadline.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.inner;
        f.debug_struct("Ctx")
            .field("event", &i.event.id)
            .field("thread", &i.event.thread)
            .field("skipped", &i.skipped.len())
            .field("attempt", &i.attempt)
            .field("fence", &i.fence)
            .field("deadline", &i.deadline)
            .finish_non_exhaustive()
    }
}

struct CtxInner {
    state: Arc<dyn StateBackend>,
    adapter: Arc<dyn PlatformAdapter>,
    event: Arc<Event>,
    skipped: Vec<Arc<Event>>,
    deadline: Option<Instant>,
    cancel: Cancel,
    fence: Option<u64>,
    attempt: u32,
    lease: Option<Arc<LeaseState>>,
    posts: Arc<Posts>,
    posted: Arc<AtomicBool>,
    reply: Option<crate::answer::Answer>,
    data: AppData,
    subscription_ttl: std::time::Duration,
}

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

pub(crate) struct CtxParts {
    pub(crate) state: Arc<dyn StateBackend>,
    pub(crate) adapter: Arc<dyn PlatformAdapter>,
    pub(crate) event: Arc<Event>,
    pub(crate) skipped: Vec<Arc<Event>>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) cancel: Cancel,
    pub(crate) fence: Option<u64>,
    pub(crate) attempt: u32,
    pub(crate) lease: Option<Arc<LeaseState>>,
    pub(crate) posts: Arc<Posts>,
    pub(crate) posted: Arc<AtomicBool>,
    pub(crate) reply: Option<crate::answer::Answer>,
    pub(crate) data: AppData,
    pub(crate) subscription_ttl: std::time::Duration,
}

impl Ctx {
    pub(crate) fn new(p: CtxParts) -> Self {
        Self {
            inner: Arc::new(CtxInner {
                state: p.state,
                adapter: p.adapter,
                event: p.event,
                skipped: p.skipped,
                deadline: p.deadline,
                cancel: p.cancel,
                fence: p.fence,
                attempt: p.attempt,
                lease: p.lease,
                posts: p.posts,
                posted: p.posted,
                reply: p.reply,
                data: p.data,
                subscription_ttl: p.subscription_ttl,
            }),
        }
    }

    /// The thread the event belongs to, to answer in.
    pub fn thread(&self) -> Thread {
        Thread {
            adapter: Arc::clone(&self.inner.adapter),
            thread: self.inner.event.thread.clone(),
            posted: Arc::clone(&self.inner.posted),
            deadline: self.inner.deadline,
            replies: Some(Replies {
                event_id: self.inner.event.id.clone(),
                attempt: self.inner.attempt,
                posts: Arc::clone(&self.inner.posts),
                cancel: self.inner.cancel.clone(),
                lease: self.inner.lease.clone(),
            }),
        }
    }

    /// How many times this event has been handed out to run, this time
    /// included: 1 normally; more when an earlier run's holder died, was killed,
    /// paused past its lease, or was shut down before it finished, and the event
    /// runs again here. Replies posted through [`thread`](Self::thread) are
    /// deduplicated across attempts; a handler with other side effects can use
    /// this and [`fence`](Self::fence) to deduplicate its own.
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// Subscribes the bot to this thread: later plain messages in it go to the
    /// subscribed-message handler. The subscription lasts
    /// [`subscription_ttl`](crate::RuntimeOptions::subscription_ttl) and every
    /// later event of the thread renews it.
    pub async fn subscribe(&self) -> Result<(), StateError> {
        self.inner
            .state
            .subscribe(&self.inner.event.thread, self.inner.subscription_ttl)
            .await
    }

    /// Unsubscribes from this thread; returns whether it was subscribed.
    pub async fn unsubscribe(&self) -> Result<bool, StateError> {
        self.inner.state.unsubscribe(&self.inner.event.thread).await
    }

    /// Whether this thread is subscribed.
    pub async fn is_subscribed(&self) -> Result<bool, StateError> {
        self.inner
            .state
            .is_subscribed(&self.inner.event.thread)
            .await
    }

    /// The events that arrived while the previous handler was busy and that this
    /// run supersedes, in the order they joined (queue, burst collapse). Empty
    /// otherwise.
    pub fn skipped(&self) -> &[Arc<Event>] {
        &self.inner.skipped
    }

    /// Events received since the last handler ran: `skipped().len() + 1`.
    pub fn total_since_last_handler(&self) -> usize {
        self.inner.skipped.len() + 1
    }

    /// When the run's budget ends (deferred dispatch), on tokio's clock.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Resolves when the run is cancelled; see [`cancel_cause`](Self::cancel_cause).
    /// Cancellation is cooperative: race your work against it.
    pub async fn cancelled(&self) {
        self.inner.cancel.token().cancelled().await;
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Why the run was cancelled, once it was.
    pub fn cancel_cause(&self) -> Option<CancelCause> {
        self.inner.cancel.cause()
    }

    /// The fencing number of the lease this run holds (none for unlocked runs). A
    /// lease is not a fence: a paused holder can outlive its lease, so a handler
    /// writing to its own store should reject writes older than the newest fence.
    pub fn fence(&self) -> Option<u64> {
        self.inner.fence
    }

    /// Answers the delivery itself (a slash command's text, a modal's
    /// `response_action`): the adapter sends `reply` in its platform's form.
    ///
    /// A run before the acknowledgement (sync dispatch, inline interactions)
    /// answers in the HTTP response. When that response has already gone out —
    /// the run outlasted `ack_timeout`, or ran detached — the reply is sent
    /// later instead ([`PlatformAdapter::reply_later`]: Slack posts it to the
    /// interaction's `response_url`), in the background; a failure is logged.
    /// Returns `true` when the reply goes in the HTTP response.
    pub fn reply(&self, reply: serde_json::Value) -> bool {
        let reply = match &self.inner.reply {
            Some(answer) => match answer.reply(reply) {
                Ok(()) => return true,
                Err(reply) => reply,
            },
            None => reply,
        };
        let adapter = Arc::clone(&self.inner.adapter);
        let event = Arc::clone(&self.inner.event);
        tokio::spawn(async move {
            if let Err(e) = adapter.reply_later(&event, &reply).await {
                tracing::warn!(error = %e, event_id = %event.id, "a reply after the response could not be sent");
            }
        });
        false
    }

    /// Answers a slash command (or an interaction) with `text` only its
    /// invoker sees (Slack: `response_type: ephemeral`).
    ///
    /// The answer goes in the HTTP response when that is still open (a run
    /// before the acknowledgement); otherwise — a detached run, or one that
    /// outlasted `ack_timeout` — through the platform's later channel
    /// (Slack: the command's `response_url`), awaited and bounded by the run's
    /// deadline, so a failure reaches the handler instead of being dropped.
    ///
    /// # Errors
    /// The adapter's error when the later answer fails;
    /// [`AdapterError::Unsupported`] when the event has no way to be answered
    /// later (Slack: no `response_url`; Linear: no slash commands).
    pub async fn reply_ephemeral(&self, text: impl Into<String>) -> Result<Replied, AdapterError> {
        self.answer(serde_json::json!({ "response_type": "ephemeral", "text": text.into() }))
            .await
    }

    /// Answers a slash command (or an interaction) with `text` everyone in the
    /// channel sees (Slack: `response_type: in_channel`), as
    /// [`reply_ephemeral`](Self::reply_ephemeral) does.
    ///
    /// # Errors
    /// As [`reply_ephemeral`](Self::reply_ephemeral).
    pub async fn reply_in_channel(&self, text: impl Into<String>) -> Result<Replied, AdapterError> {
        self.answer(serde_json::json!({ "response_type": "in_channel", "text": text.into() }))
            .await
    }

    async fn answer(&self, reply: serde_json::Value) -> Result<Replied, AdapterError> {
        let reply = match &self.inner.reply {
            Some(answer) => match answer.reply(reply) {
                Ok(()) => return Ok(Replied::InResponse),
                Err(reply) => reply,
            },
            None => reply,
        };
        let later = self.inner.adapter.reply_later(&self.inner.event, &reply);
        match self.inner.deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, later)
                .await
                .unwrap_or(Err(AdapterError::DeadlineExceeded))?,
            None => later.await?,
        }
        Ok(Replied::Later)
    }

    /// The state backend.
    pub fn state(&self) -> &Arc<dyn StateBackend> {
        &self.inner.state
    }

    /// The bot's own value of type `T`, registered with
    /// [`BotBuilder::data`](crate::BotBuilder::data); `None` when none was.
    pub fn data<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.inner.data.get()
    }
}

/// How an answer to the delivery went out ([`Ctx::reply_ephemeral`],
/// [`Ctx::reply_in_channel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replied {
    /// In the delivery's HTTP response.
    InResponse,
    /// After the response, through the platform's later channel (Slack's
    /// `response_url`).
    Later,
}

/// A conversation to post into. From [`Ctx::thread`].
///
/// Every call is bounded by the run's deadline: a platform call that would wait
/// past it (a rate-limit `Retry-After`, a slow API) is abandoned with
/// [`AdapterError::DeadlineExceeded`]. Calls still work after the run was
/// cancelled, so a handler can post a final word when asked to stop — except
/// once the run's lease is lost (another holder may be running the event
/// again): then every call is refused with [`AdapterError::Cancelled`].
///
/// Each post carries its position in the run ([`ReplyKey`]): when the event
/// runs again after a holder died, the adapter returns the reply an earlier
/// attempt already posted at that position instead of posting it twice.
#[derive(Clone)]
pub struct Thread {
    adapter: Arc<dyn PlatformAdapter>,
    thread: ThreadRef,
    posted: Arc<AtomicBool>,
    deadline: Option<Instant>,
    replies: Option<Replies>,
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
struct Replies {
    event_id: chat_core::EventId,
    attempt: u32,
    posts: Arc<Posts>,
    cancel: Cancel,
    lease: Option<Arc<LeaseState>>,
}

impl Thread {
    /// The thread's identity.
    pub fn id(&self) -> &ThreadRef {
        &self.thread
    }

    /// Posts a message (plain text from a `&str` / `String`, or an
    /// [`OutboundMessage`] for Markdown).
    pub async fn post(
        &self,
        message: impl Into<OutboundMessage>,
    ) -> Result<MessageRef, AdapterError> {
        let mut message = message.into();
        let after_cancel = self
            .replies
            .as_ref()
            .is_some_and(|r| r.cancel.is_cancelled());
        if let Some(replies) = &self.replies
            && message.reply_key.is_none()
        {
            let position = replies.posts.next.fetch_add(1, Ordering::SeqCst);
            message = message.with_reply_key(ReplyKey::new(
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
        r
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

    /// Shows a "working on it" status, or clears it with `None`.
    pub async fn set_status(&self, status: Option<&str>) -> Result<(), AdapterError> {
        self.bounded(self.adapter.set_status(&self.thread, status))
            .await
    }
}
