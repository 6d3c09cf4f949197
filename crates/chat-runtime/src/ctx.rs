//! [`Ctx`]: what a handler gets besides its event — the thread to answer in,
//! subscriptions, the events it supersedes, its deadline and its cancellation.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use chat_core::view::ModalAnswer;
use chat_core::{AdapterError, Event, PlatformAdapter, Reply, StateBackend, StateError};
use tokio::time::Instant;

use crate::cancel::{Cancel, CancelCause};
use crate::data::AppData;
use crate::keeper::LeaseState;
use crate::thread::{Posts, Replies, Thread};

/// The context of one handler run. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<CtxParts>,
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

/// Everything a run's [`Ctx`] holds, filled in by the run that makes it.
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
    pub(crate) response: Option<crate::response::DeliveryResponse>,
    pub(crate) data: AppData,
    pub(crate) retention: crate::options::RetentionOptions,
    /// The bot's tasks: what runs after the handler (a later reply) is one,
    /// so shutdown waits for it.
    pub(crate) tracker: tokio_util::task::TaskTracker,
}

impl Ctx {
    pub(crate) fn new(parts: CtxParts) -> Self {
        Self {
            inner: Arc::new(parts),
        }
    }

    /// The thread the event belongs to, to answer in.
    pub fn thread(&self) -> Thread {
        let i = &self.inner;
        Thread::new(
            Arc::clone(&i.adapter),
            Arc::clone(&i.state),
            i.event.thread.clone(),
            Arc::clone(&i.posted),
            i.deadline,
            i.retention.clone(),
        )
        .answering(recipient_of(&i.event))
        .for_run(self.replies())
    }

    /// The run's replies: every post through a handle of this run carries its
    /// position among them, so a repeated run finds what it posted.
    fn replies(&self) -> Replies {
        let i = &self.inner;
        Replies {
            event_id: i.event.id.clone(),
            attempt: i.attempt,
            posts: Arc::clone(&i.posts),
            cancel: i.cancel.clone(),
            lease: i.lease.clone(),
        }
    }

    /// A channel of the event's workspace to post into (as a new message,
    /// not in a thread): for answers that belong elsewhere than the event's
    /// thread, such as a modal submission's result in the channel its
    /// command came from. Posts are bounded by the run's deadline like the
    /// thread's, and are replies of the run like the thread's: a run repeated
    /// after a crash finds what an earlier attempt posted there instead of
    /// posting it again (where the adapter can look it up).
    pub fn channel(&self, channel: &str) -> Thread {
        let i = &self.inner;
        let thread = chat_core::ThreadRef::new(
            i.event.thread.platform,
            i.event.thread.tenant.as_str(),
            channel,
            "",
        );
        Thread::new(
            Arc::clone(&i.adapter),
            Arc::clone(&i.state),
            thread,
            Arc::clone(&i.posted),
            i.deadline,
            i.retention.clone(),
        )
        .for_run(self.replies())
    }

    /// The event's trigger for opening a modal (from a slash command or a
    /// click; Slack's lives about 3 s), if it has one: pass it to
    /// [`Thread::open_modal`].
    pub fn trigger(&self) -> Option<&str> {
        match &self.inner.event.kind {
            chat_core::EventKind::SlashCommand(c) => c.trigger.as_ref(),
            chat_core::EventKind::Action(a) => a.trigger.as_ref(),
            _ => None,
        }
        .map(chat_core::Handle::as_str)
    }

    /// Answers a modal submission ([`ModalAnswer`]: field errors, update,
    /// push, clear) in the delivery's HTTP response, as
    /// [`reply`](Self::reply) does. Returns whether it went in the response.
    ///
    /// # Errors
    /// The adapter's: [`AdapterError::Invalid`] for a view beyond the
    /// platform's limits; [`AdapterError::Unsupported`] without modals.
    pub fn answer_modal(&self, answer: &ModalAnswer) -> Result<bool, AdapterError> {
        let reply = Reply::from(answer.clone());
        self.inner.adapter.check_reply(&reply)?;
        Ok(self.reply(reply))
    }

    /// The event's adapter as its concrete type — the typed way down to a
    /// platform for what the portable [`Thread`] does not cover: for example
    /// `ctx.adapter::<SlackAdapter>()` and then its `client_for(tenant)`,
    /// the Web API client with the installation's token. `None` when the
    /// event came through another adapter.
    pub fn adapter<A: PlatformAdapter>(&self) -> Option<&A> {
        let any: &dyn std::any::Any = self.inner.adapter.as_ref();
        any.downcast_ref::<A>()
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
    /// [`subscription_ttl`](crate::RetentionOptions::subscription_ttl) and every
    /// later event of the thread renews it.
    pub async fn subscribe(&self) -> Result<(), StateError> {
        self.inner
            .state
            .subscribe(
                &self.inner.event.thread,
                self.inner.retention.subscription_ttl,
            )
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

    /// The conversation so far as the turns an LLM client takes: the
    /// thread's last `limit` messages ([`Thread::transcript`]), with the
    /// events this run answers — those it supersedes
    /// ([`skipped`](Self::skipped)) and its own — folded in where the
    /// history does not have them yet (a platform without history, a
    /// message not yet readable), in the order they arrived. Oldest first;
    /// the bot's own messages are [`Role::Assistant`](crate::Role::Assistant).
    ///
    /// # Errors
    /// The adapter's, when the history cannot be read.
    pub async fn transcript(&self, limit: usize) -> Result<Vec<crate::Turn>, AdapterError> {
        let mut turns = self.thread().transcript(limit).await?;
        let runs = self
            .inner
            .skipped
            .iter()
            .map(|e| e.as_ref())
            .chain(std::iter::once(self.inner.event.as_ref()));
        for event in runs {
            let Some(turn) = turn_of(event) else {
                continue;
            };
            if !turns.iter().any(|t| t.message_id == turn.message_id) {
                turns.push(turn);
            }
        }
        let extra = turns.len().saturating_sub(limit);
        turns.drain(..extra);
        Ok(turns)
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

    /// The fencing number of the lease (or slot) this run holds: larger than
    /// every earlier grant's on its scope. A lease is not a fence: a paused
    /// holder can outlive its lease, and a Redis failover can lose the last
    /// grants and renewals (docs/reliability.md, "Leases across a Redis
    /// failover"), so two runs of one scope may overlap. The fence is the
    /// defence for a handler's own side effects: keep the largest fence seen
    /// per conversation in your store and refuse writes under a smaller one.
    pub fn fence(&self) -> Option<u64> {
        self.inner.fence
    }

    /// Answers the delivery itself with a [`Reply`] — a message to the user
    /// who acted (`"text"` is ephemeral text) or to the channel, a modal's
    /// answer, or the platform's own body — which the adapter renders in its
    /// platform's form.
    ///
    /// A run before the acknowledgement (sync dispatch, inline interactions)
    /// answers in the HTTP response. When that response has already gone out —
    /// the run outlasted `timeouts.ack`, or ran detached — the reply is sent
    /// later instead, through the interaction's follow-up handle
    /// ([`Webhook::reply_later`](chat_core::Webhook::reply_later)), in the background (a task shutdown
    /// waits for); a failure is logged.
    /// Returns `true` when the reply goes in the HTTP response.
    pub fn reply(&self, reply: impl Into<Reply>) -> bool {
        let reply = reply.into();
        let reply = match self.open_response(&reply) {
            Some(answer) => match answer.reply(reply) {
                Ok(()) => return true,
                Err(reply) => reply,
            },
            None => reply,
        };
        let adapter = Arc::clone(&self.inner.adapter);
        let event = Arc::clone(&self.inner.event);
        // On the bot's tracker: shutdown waits for it like for a handler.
        self.inner.tracker.spawn(async move {
            if let Err(e) = adapter.reply_later(&event, &reply).await {
                tracing::warn!(error = %e, event_id = %event.id, "a reply after the response could not be sent");
            }
        });
        false
    }

    /// Answers a slash command (or an interaction) with `text` only its
    /// invoker sees ([`Reply::ephemeral`]).
    ///
    /// The answer goes in the HTTP response when that is still open (a run
    /// before the acknowledgement); otherwise — a detached run, or one that
    /// outlasted `timeouts.ack` — through the interaction's follow-up handle,
    /// awaited and bounded by the run's deadline, so a failure reaches the
    /// handler instead of being dropped.
    ///
    /// # Errors
    /// The adapter's error when the later answer fails;
    /// [`AdapterError::Unsupported`] when the event has no way to be answered
    /// later (no follow-up handle; Linear: no slash commands).
    pub async fn reply_ephemeral(&self, text: impl Into<String>) -> Result<Replied, AdapterError> {
        self.answer(Reply::ephemeral(text)).await
    }

    /// Answers a slash command (or an interaction) with `text` everyone in the
    /// channel sees ([`Reply::in_channel`]), as
    /// [`reply_ephemeral`](Self::reply_ephemeral) does.
    ///
    /// # Errors
    /// As [`reply_ephemeral`](Self::reply_ephemeral).
    pub async fn reply_in_channel(&self, text: impl Into<String>) -> Result<Replied, AdapterError> {
        self.answer(Reply::in_channel(text)).await
    }

    /// The delivery's response, when `reply` may go in it.
    fn open_response(&self, reply: &Reply) -> Option<&crate::response::DeliveryResponse> {
        self.inner.response.as_ref().filter(|_| {
            self.inner
                .adapter
                .replies_in_response(&self.inner.event, reply)
        })
    }

    async fn answer(&self, reply: Reply) -> Result<Replied, AdapterError> {
        let reply = match self.open_response(&reply) {
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
    /// After the response, through the interaction's follow-up handle.
    Later,
}

/// The transcript turn an event adds: a message, or an agent's prompt.
fn turn_of(event: &Event) -> Option<crate::Turn> {
    match &event.kind {
        chat_core::EventKind::Message(m) if m.change == chat_core::MessageChange::Posted => {
            Some(crate::Turn::of(m))
        }
        chat_core::EventKind::AgentSession(s) => {
            let text = s.text.clone()?;
            let id = s
                .activity_id
                .clone()
                .unwrap_or_else(|| event.id.to_string());
            Some(crate::Turn::of(&chat_core::Message::new(
                id,
                s.user.clone(),
                text,
            )))
        }
        _ => None,
    }
}

/// The user an event's answer is for: its author.
fn recipient_of(event: &Event) -> Option<String> {
    match &event.kind {
        chat_core::EventKind::Message(m) => Some(m.author.id.clone()),
        chat_core::EventKind::SlashCommand(c) => Some(c.user.id.clone()),
        chat_core::EventKind::Action(a) => Some(a.user.id.clone()),
        chat_core::EventKind::AgentSession(s) => Some(s.user.id.clone()),
        _ => None,
    }
}
