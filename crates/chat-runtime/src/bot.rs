//! [`Bot`] and its builder.

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chat_core::{
    AdapterError, Capabilities, Capability, ForceRelease, PlatformAdapter, Route, ScopeKey,
    StateBackend, StateError,
};
use regex::Regex;

use crate::data::AppData;
use crate::handler::{Handler, SharedHandler};
use crate::options::{BuildError, RuntimeOptions};
use crate::outcome::{Observer, OutcomeRecord, Recorder};
use crate::router::Handlers;
use crate::shared::Shared;
use crate::thread::Thread;
use crate::webhook::WebhookService;

/// A configured bot: handlers, adapters, a state backend and options. Cheap to
/// clone; every clone is the same bot.
#[derive(Clone)]
pub struct Bot {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Bot {
    /// The mounted adapters and the options.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shared.fmt(f)
    }
}

/// A handler run in progress in this process (see [`Bot::runs`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunInfo {
    /// The scope it holds.
    pub scope: ScopeKey,
    /// The event it runs.
    pub event_id: chat_core::EventId,
    /// Its thread.
    pub thread: chat_core::ThreadRef,
    /// How long it has been running.
    pub running_for: Duration,
}

impl Bot {
    /// Starts a builder.
    pub fn builder() -> BotBuilder {
        BotBuilder::default()
    }

    /// The webhook endpoint of the adapter named `adapter`: a
    /// `tower::Service<http::Request<B>>` for any body type, to mount in axum
    /// (`route_service`) or serve with hyper. An unknown name answers 404.
    pub fn webhook(&self, adapter: &str) -> WebhookService {
        WebhookService::new(Arc::clone(&self.shared), adapter)
    }

    /// Handles one webhook request whose body was already read, as the webhook
    /// service does after reading it (size cap included).
    pub async fn handle(
        &self,
        adapter: &str,
        request: http::Request<Bytes>,
    ) -> http::Response<Bytes> {
        let Some(adapter) = self.shared.adapter(adapter) else {
            return crate::webhook::not_found();
        };
        let (parts, body) = request.into_parts();
        crate::dispatch::deliver_detached(&self.shared, adapter, parts, body).await
    }

    /// Delivers an event that did not come through a webhook — a socket feed
    /// (Slack Socket Mode, a gateway connection) that received and
    /// authenticated it — to the adapter named `adapter`, which owns its
    /// platform: the same path as a webhook's after `parse` (resolve,
    /// dedupe and admission, the strategy, the run, durability). Returns
    /// within `timeouts.ack` the [`Verdict`](chat_core::Verdict) the feed
    /// acknowledges by its protocol (past it, `Working` for an admitted event
    /// still running). An unknown adapter name is `Rejected`.
    pub async fn deliver(&self, adapter: &str, event: chat_core::Event) -> chat_core::Verdict {
        let Some(adapter) = self.shared.adapter(adapter) else {
            return chat_core::Verdict::Rejected(chat_core::WebhookError::Malformed(format!(
                "no adapter named {adapter}"
            )));
        };
        crate::dispatch::deliver_event_detached(&self.shared, adapter, event).await
    }

    /// The conversation `thread` names, to post into outside any handler —
    /// a cron job, a CI result, an approval, a workflow that stored a
    /// [`Thread`] (it serializes as its [`ThreadRef`](chat_core::ThreadRef))
    /// and acts later: the same handle a handler gets, through the adapter
    /// of the thread's platform, on any replica. Its calls have no run
    /// deadline (each platform call has the adapter's own timeouts); for a
    /// job that may be retried, post with
    /// [`post_once`](Thread::post_once) and a key of the job's.
    ///
    /// ```
    /// # async fn job(bot: chat_runtime::Bot) -> Result<(), chat_runtime::BoxError> {
    /// use chat_runtime::core::{Platform, ThreadRef};
    ///
    /// let thread = bot.thread(&ThreadRef::new(Platform::SLACK, "T024BE7LD", "C2147483705", ""))?;
    /// thread.post_once("nightly-2026-12-06", "The nightly build passed.").await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`](chat_core::AdapterError::Unsupported)
    /// when no adapter of the bot serves the thread's platform.
    pub fn thread(&self, thread: &chat_core::ThreadRef) -> Result<Thread, AdapterError> {
        let adapter = self
            .shared
            .adapter_for(&thread.platform)
            .ok_or(AdapterError::Unsupported("no adapter serves this platform"))?;
        Ok(Thread::new(
            adapter,
            Arc::clone(self.shared.state()),
            thread.clone(),
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
            None,
            self.shared.options().retention.clone(),
        ))
    }

    /// A channel (or conversation) of `tenant` on `platform`, to post into
    /// as new top-level messages outside any handler: [`thread`](Self::thread)
    /// of the channel without a thread part.
    ///
    /// # Errors
    /// As [`thread`](Self::thread).
    pub fn channel(
        &self,
        platform: chat_core::Platform,
        tenant: &str,
        channel: &str,
    ) -> Result<Thread, AdapterError> {
        self.thread(&chat_core::ThreadRef::new(platform, tenant, channel, ""))
    }

    /// The direct-message conversation between the bot and `user` of
    /// `tenant` on `platform` (opened if it was not; Slack
    /// `conversations.open`), to post into outside any handler.
    ///
    /// # Errors
    /// As [`thread`](Self::thread);
    /// [`AdapterError::Unsupported`](chat_core::AdapterError::Unsupported)
    /// where the platform opens no direct messages (Linear); the adapter's.
    pub async fn open_dm(
        &self,
        platform: chat_core::Platform,
        tenant: &str,
        user: &str,
    ) -> Result<Thread, AdapterError> {
        let adapter = self
            .shared
            .adapter_for(&platform)
            .ok_or(AdapterError::Unsupported("no adapter serves this platform"))?;
        let dms = adapter
            .as_direct_messages()
            .ok_or(Capability::DirectMessages.unsupported())?;
        let dm = dms.open_dm(&chat_core::TenantId::new(tenant), user).await?;
        self.thread(&dm)
    }

    /// What the adapter named `adapter` can do beyond posting
    /// ([`PlatformAdapter::capabilities`]); `None` for an unknown name.
    pub fn capabilities(&self, adapter: &str) -> Option<Capabilities> {
        self.shared.adapter(adapter).map(|a| a.capabilities())
    }

    /// The options in force.
    pub fn options(&self) -> &RuntimeOptions {
        self.shared.options()
    }

    /// The state backend.
    pub fn state(&self) -> &Arc<dyn StateBackend> {
        self.shared.state()
    }

    /// Operators: the handler runs in progress in this process, longest
    /// running first.
    pub fn runs(&self) -> Vec<RunInfo> {
        let now = tokio::time::Instant::now();
        let mut runs: Vec<RunInfo> = self
            .shared
            .runs()
            .into_iter()
            .map(|(scope, event, started)| RunInfo {
                scope,
                event_id: event.id.clone(),
                thread: event.thread.clone(),
                running_for: now.saturating_duration_since(started),
            })
            .collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.running_for));
        runs
    }

    /// Operators: the last [`RECENT_OUTCOMES`](crate::RECENT_OUTCOMES)
    /// outcomes this process recorded, newest first.
    pub fn recent_outcomes(&self) -> Vec<OutcomeRecord> {
        self.shared.recorder().recent()
    }

    /// Operators: releases a stuck holder of `scope`, fenced — only if its
    /// live lease (or slot) still carries `fence`, the number the operator
    /// saw ([`chat_core::state::Inspection::force_release`]). When it was released, a recovery
    /// sweep runs here at once, so the scope's work (its in-flight batch, as a
    /// further attempt, then what waits) is taken over without waiting for
    /// the next periodic sweep.
    pub async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        let released = self.shared.state().force_release(scope, fence).await?;
        tracing::warn!(name: "force-release", scope = %scope, fence, released = ?released, "operator force-release");
        if released == ForceRelease::Released {
            crate::sweep::sweep_now(&self.shared).await;
        }
        Ok(released)
    }

    /// Detached work admitted and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.shared
            .admission()
            .in_use(self.shared.options().admission.max_detached)
    }

    /// Waits, up to `timeout`, until no delivery or detached work is in progress,
    /// without cancelling anything (tests, and draining before a planned stop).
    /// Not meant to race [`shutdown`](Self::shutdown).
    /// Returns whether it became idle in time.
    pub async fn idle(&self, timeout: Duration) -> bool {
        let shared = &self.shared;
        let until = tokio::time::Instant::now() + timeout;
        loop {
            if shared.tracker().is_empty() {
                return true;
            }
            let wait = async {
                // `wait` needs a closed tracker; closing only affects waiting, and
                // reopening is skipped once shutdown has closed it for good.
                shared.tracker().close();
                shared.tracker().wait().await;
            };
            let done = tokio::time::timeout_at(until, wait).await.is_ok();
            if !shared.signals().is_closed() {
                shared.tracker().reopen();
            }
            if !done {
                return shared.tracker().is_empty();
            }
        }
    }

    /// Shuts down within `deadline`, without losing what was accepted:
    ///
    /// 1. Admission closes: new deliveries get the at-capacity answer, so
    ///    platforms retry them on another replica.
    /// 2. The drain: running handlers go on until four fifths of the deadline
    ///    (under [`ShutdownMode::Drain`](crate::ShutdownMode::Drain), the
    ///    default); holders then acknowledge what they ran and give their
    ///    scopes up without taking waiting entries, so another replica takes
    ///    over at once. Nothing waiting is taken only to be cancelled.
    /// 3. What still runs is cancelled with
    ///    [`CancelCause::Shutdown`](crate::CancelCause::Shutdown) and its batch
    ///    handed back, in flight, for another replica's next admit or sweep to
    ///    run again (counted in [`ShutdownReport::cancelled`]).
    /// 4. At the deadline, leases still held (handlers ignoring cancellation)
    ///    are given back the same way.
    ///
    /// Idempotent; returns by its deadline even if a handler ignores
    /// cancellation.
    pub async fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        let shared = &self.shared;
        let start = tokio::time::Instant::now();
        let end = start + deadline;
        shared.signals().close();
        shared.tracker().close();
        let drain_end = match shared.options().recovery.shutdown {
            crate::ShutdownMode::Cancel => start,
            _ => start + deadline.mul_f64(0.8),
        };
        let mut finished = tokio::time::timeout_at(drain_end, shared.tracker().wait())
            .await
            .is_ok();
        shared.signals().shutdown().cancel();
        if !finished {
            finished = tokio::time::timeout_at(end, shared.tracker().wait())
                .await
                .is_ok();
        }
        shared.signals().abandon().cancel();
        let leftover = shared.take_held();
        let mut released = 0;
        for lease in &leftover {
            // Bounded: a stalled backend must not hold shutdown past its deadline
            // by much; the lease then lapses at its TTL instead.
            let r = tokio::time::timeout(
                Duration::from_millis(500),
                shared.state().release(lease, chat_core::Release::HandBack),
            )
            .await;
            released += usize::from(matches!(r, Ok(Ok(true))));
        }
        let report = ShutdownReport {
            cancelled: shared.shutdown_cancelled(),
            finished,
            still_running: shared.tracker().len(),
            leases_released: released,
        };
        tracing::info!(
            name: "runtime-shutdown",
            cancelled = report.cancelled,
            finished = report.finished,
            still_running = report.still_running,
            leases_released = report.leases_released,
        );
        report
    }
}

/// What [`Bot::shutdown`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Runs cancelled by the shutdown, their events handed back to run on
    /// another replica.
    pub cancelled: usize,
    /// Every detached task ended before the deadline.
    pub finished: bool,
    /// Tasks still running at the deadline (handlers ignoring cancellation).
    pub still_running: usize,
    /// Leases of those tasks released at the deadline.
    pub leases_released: usize,
}

/// Builds a [`Bot`]. See the [crate docs](crate) for a complete example.
#[derive(Default)]
pub struct BotBuilder {
    state: Option<Arc<dyn StateBackend>>,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    options: RuntimeOptions,
    observers: Vec<Arc<dyn Observer>>,
    handlers: Handlers,
    patterns: Vec<(String, SharedHandler)>,
    required: Vec<(Option<String>, Capability)>,
    data: AppData,
}

impl std::fmt::Debug for BotBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let adapters: Vec<&str> = self.adapters.iter().map(|a| a.name()).collect();
        f.debug_struct("BotBuilder")
            .field("state", &self.state.is_some())
            .field("adapters", &adapters)
            .field("options", &self.options)
            .field("observers", &self.observers.len())
            .field("data", &self.data.len())
            .finish_non_exhaustive()
    }
}

impl BotBuilder {
    /// The state backend.
    #[must_use]
    pub fn state(mut self, state: impl StateBackend) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// A shared state backend (the same as [`state`](Self::state) with an
    /// `Arc`, without wrapping it again).
    #[must_use]
    pub fn state_arc(mut self, state: Arc<dyn StateBackend>) -> Self {
        self.state = Some(state);
        self
    }

    /// Registers a value of the bot's own — a database pool, an HTTP or LLM
    /// client, configuration — that every handler reads with
    /// [`Ctx::data`](crate::Ctx::data), by its type. One value per type; a
    /// later one replaces an earlier one. Wrap what must be shared mutably in
    /// a `Mutex` or use a type that is already shared (a pool).
    ///
    /// ```
    /// use chat_runtime::{Bot, BoxError, Ctx, Event};
    ///
    /// struct Greeting(String);
    ///
    /// async fn greet(ctx: Ctx, _event: Event) -> Result<(), BoxError> {
    ///     let greeting = ctx.data::<Greeting>().ok_or("no Greeting registered")?;
    ///     ctx.thread().post(greeting.0.clone()).await?;
    ///     Ok(())
    /// }
    ///
    /// let builder = Bot::builder()
    ///     .data(Greeting("hello!".to_owned()))
    ///     .on_new_mention(greet);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn data<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.data.insert(value);
        self
    }

    /// Adds a platform adapter; its [`name`](PlatformAdapter::name) names its
    /// webhook.
    #[must_use]
    pub fn adapter(mut self, adapter: impl PlatformAdapter) -> Self {
        self.adapters.push(Arc::new(adapter));
        self
    }

    /// Adds a shared platform adapter.
    #[must_use]
    pub fn adapter_arc(mut self, adapter: Arc<dyn PlatformAdapter>) -> Self {
        self.adapters.push(adapter);
        self
    }

    /// Replaces the options (start from `RuntimeOptions::default()`).
    #[must_use]
    pub fn options(mut self, options: RuntimeOptions) -> Self {
        self.options = options;
        self
    }

    /// Registers an outcome observer.
    #[must_use]
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Requires `capability` of every adapter: [`build`](Self::build) fails
    /// with [`BuildError::MissingCapability`] if one lacks it, so a bot that
    /// opens modals or reads history learns it cannot before it serves
    /// anything, not from a handler's [`AdapterError::Unsupported`](chat_core::AdapterError::Unsupported).
    #[must_use]
    pub fn require(mut self, capability: Capability) -> Self {
        self.required.push((None, capability));
        self
    }

    /// Requires `capability` of the adapter named `adapter` only (a bot on
    /// Slack and Linear that opens modals on Slack).
    /// [`build`](Self::build) fails with [`BuildError::UnknownAdapter`] when
    /// no adapter has that name.
    #[must_use]
    pub fn require_on(mut self, adapter: &str, capability: Capability) -> Self {
        self.required.push((Some(adapter.to_owned()), capability));
        self
    }

    /// Handles a message that mentions the bot, or a direct message, in a thread
    /// the bot is not subscribed to.
    #[must_use]
    pub fn on_new_mention(mut self, handler: impl Handler) -> Self {
        self.handlers.mention.push(Arc::new(handler));
        self
    }

    /// Handles every direct message to the bot (subscribed or not), instead
    /// of the mention and subscribed-message handlers. Without one, a DM
    /// counts as a mention.
    #[must_use]
    pub fn on_direct_message(mut self, handler: impl Handler) -> Self {
        self.handlers.direct.push(Arc::new(handler));
        self
    }

    /// Handles every message in a thread the bot subscribed to.
    #[must_use]
    pub fn on_subscribed_message(mut self, handler: impl Handler) -> Self {
        self.handlers.subscribed.push(Arc::new(handler));
        self
    }

    /// Handles a message whose text matches `pattern` (a regular expression) in a
    /// thread the bot is not subscribed to. An invalid pattern is a build error.
    #[must_use]
    pub fn on_new_message(mut self, pattern: &str, handler: impl Handler) -> Self {
        self.patterns.push((pattern.to_owned(), Arc::new(handler)));
        self
    }

    /// Handles the events `route` takes: a portable route
    /// ([`Route::reaction`](chat_core::Route::reaction),
    /// [`Route::action`](chat_core::Route::action), …), a platform's own from
    /// its adapter crate (`chat_slack::routes::app_home_opened()`,
    /// `chat_linear::routes::agent_session_created()`), or one of your own
    /// ([`Route::new`](chat_core::Route::new)). Routes are tried in the order
    /// they were registered, fallbacks after the others; the first that takes
    /// an event gets it. Messages go to the mention, pattern and
    /// subscribed-message handlers first.
    #[must_use]
    pub fn on(mut self, route: Route, handler: impl Handler) -> Self {
        self.handlers.routes.push((route, Arc::new(handler)));
        self
    }

    /// Handles every added or removed reaction ([`Route::reaction`](chat_core::Route::reaction)).
    #[must_use]
    pub fn on_reaction(self, handler: impl Handler) -> Self {
        self.on(Route::reaction(None), handler)
    }

    /// Handles reactions with one emoji (name without colons).
    #[must_use]
    pub fn on_reaction_emoji(self, emoji: &str, handler: impl Handler) -> Self {
        self.on(Route::reaction(Some(emoji)), handler)
    }

    /// Handles clicks on the component with `action_id`.
    #[must_use]
    pub fn on_action(self, action_id: &str, handler: impl Handler) -> Self {
        self.on(Route::action(action_id), handler)
    }

    /// Handles clicks on any of the components `action_ids`.
    #[must_use]
    pub fn on_actions<I, S>(self, action_ids: I, handler: impl Handler) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.on(Route::actions(action_ids), handler)
    }

    /// Handles every click no other route takes.
    #[must_use]
    pub fn on_any_action(self, handler: impl Handler) -> Self {
        self.on(Route::any_action(), handler)
    }

    /// Handles a slash command (`/echo`).
    #[must_use]
    pub fn on_slash_command(self, command: &str, handler: impl Handler) -> Self {
        self.on(Route::slash_command(command), handler)
    }

    /// Handles every slash command no other route takes (a bot that answers
    /// whatever command it is installed with).
    #[must_use]
    pub fn on_any_slash_command(self, handler: impl Handler) -> Self {
        self.on(Route::any_slash_command(), handler)
    }

    /// Handles modal submissions (`Some(callback_id)` for one modal, `None` for all).
    #[must_use]
    pub fn on_modal_submit(self, callback_id: Option<&str>, handler: impl Handler) -> Self {
        self.on(Route::modal_submit(callback_id), handler)
    }

    /// Handles modals being closed.
    #[must_use]
    pub fn on_modal_close(self, callback_id: Option<&str>, handler: impl Handler) -> Self {
        self.on(Route::modal_close(callback_id), handler)
    }

    /// Checks the configuration and builds the bot. Each invalid combination has
    /// its own [`BuildError`].
    pub fn build(self) -> Result<Bot, BuildError> {
        let state = self.state.ok_or(BuildError::NoState)?;
        if self.adapters.is_empty() {
            return Err(BuildError::NoAdapter);
        }
        let mut adapters = HashMap::new();
        for a in self.adapters {
            let name = a.name().to_owned();
            if adapters.insert(name.clone(), a).is_some() {
                return Err(BuildError::DuplicateAdapter(name));
            }
        }
        for (name, capability) in &self.required {
            let wanted: Vec<&Arc<dyn PlatformAdapter>> = match name {
                Some(name) => vec![
                    adapters
                        .get(name)
                        .ok_or_else(|| BuildError::UnknownAdapter(name.clone()))?,
                ],
                None => adapters.values().collect(),
            };
            if let Some(a) = wanted
                .into_iter()
                .find(|a| !a.capabilities().contains(*capability))
            {
                return Err(BuildError::MissingCapability {
                    adapter: a.name().to_owned(),
                    capability: *capability,
                });
            }
        }
        self.options.validate()?;
        let mut handlers = self.handlers;
        for (pattern, h) in self.patterns {
            let re = Regex::new(&pattern).map_err(|_| BuildError::InvalidPattern(pattern))?;
            handlers.pattern.push((re, h));
        }
        let options = self.options;
        let tenant_label = options.telemetry.tenant_label;
        let bot = Bot {
            shared: Arc::new(Shared::new(
                state,
                adapters,
                options,
                handlers,
                Recorder::new(self.observers, tenant_label),
                self.data,
            )),
        };
        // The recovery sweep runs from the start when built inside a runtime;
        // otherwise it starts with the first delivery.
        if tokio::runtime::Handle::try_current().is_ok() {
            crate::sweep::start_sweeper(&bot.shared);
        }
        Ok(bot)
    }
}
