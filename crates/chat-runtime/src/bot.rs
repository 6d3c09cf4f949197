//! [`Bot`] and its builder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{Lease, LeaseToken, PlatformAdapter, ScopeKey, StateBackend};
use regex::Regex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::Admission;
use crate::cancel::Cancel;
use crate::handler::{Handler, SharedHandler};
use crate::options::{BuildError, RuntimeOptions};
use crate::outcome::{Observer, Recorder};
use crate::router::Handlers;
use crate::webhook::WebhookService;

/// A configured bot: handlers, adapters, a state backend and options. Cheap to
/// clone; every clone is the same bot.
#[derive(Clone)]
pub struct Bot {
    pub(crate) inner: Arc<BotInner>,
}

pub(crate) struct BotInner {
    pub(crate) state: Arc<dyn StateBackend>,
    pub(crate) adapters: HashMap<String, Arc<dyn PlatformAdapter>>,
    pub(crate) options: RuntimeOptions,
    pub(crate) handlers: Handlers,
    pub(crate) recorder: Recorder,
    pub(crate) admission: Admission,
    pub(crate) tracker: TaskTracker,
    /// Fired when shutdown starts: holders finish what they run and take no
    /// new work.
    pub(crate) draining: CancellationToken,
    /// Fired when the drain ends: every run still going is cancelled with
    /// `Shutdown` and hands its batch back.
    pub(crate) shutdown: CancellationToken,
    /// Fired when shutdown's deadline passed: keepers stop renewing.
    pub(crate) abandon: CancellationToken,
    pub(crate) closed: AtomicBool,
    /// Runs in progress per scope, for stop requests that land on this replica.
    pub(crate) runs: Mutex<HashMap<ScopeKey, Vec<RunHandle>>>,
    /// Leases this process holds, released at shutdown.
    pub(crate) held: Mutex<HashMap<LeaseToken, Lease>>,
    /// Holders waiting on a scope (a burst window, a debounce quiet period), woken
    /// when this process admits an event there that may make them ready early.
    pub(crate) wakers: Mutex<HashMap<ScopeKey, Arc<Notify>>>,
    /// Woken when a local concurrency slot is released.
    pub(crate) slot_freed: Notify,
    pub(crate) sweeper: OnceLock<()>,
    pub(crate) shutdown_cancelled: AtomicUsize,
}

/// A run in progress, as a stop request on this replica reaches it.
pub(crate) struct RunHandle {
    pub(crate) cancel: Cancel,
    /// The stop requests its holder has acted on in this batch.
    pub(crate) seen: Arc<std::sync::atomic::AtomicU32>,
}

impl BotInner {
    pub(crate) fn hold(&self, lease: &Lease) {
        lock(&self.held).insert(lease.token().clone(), lease.clone());
    }

    pub(crate) fn unhold(&self, lease: &Lease) {
        lock(&self.held).remove(lease.token());
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
        WebhookService::new(self.clone(), adapter)
    }

    /// Handles one webhook request whose body was already read, as the webhook
    /// service does after reading it (size cap included).
    pub async fn handle(
        &self,
        adapter: &str,
        request: http::Request<Bytes>,
    ) -> http::Response<Bytes> {
        let Some(adapter) = self.inner.adapters.get(adapter).cloned() else {
            return crate::webhook::not_found();
        };
        let (parts, body) = request.into_parts();
        crate::dispatch::deliver_detached(&self.inner, adapter, parts, body).await
    }

    /// The options in force.
    pub fn options(&self) -> &RuntimeOptions {
        &self.inner.options
    }

    /// The state backend.
    pub fn state(&self) -> &Arc<dyn StateBackend> {
        &self.inner.state
    }

    /// Detached work admitted and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.inner.admission.in_use(self.inner.options.max_detached)
    }

    /// Waits, up to `timeout`, until no delivery or detached work is in progress,
    /// without cancelling anything (tests, and draining before a planned stop).
    /// Not meant to race [`shutdown`](Self::shutdown).
    /// Returns whether it became idle in time.
    pub async fn idle(&self, timeout: Duration) -> bool {
        let inner = &self.inner;
        let until = tokio::time::Instant::now() + timeout;
        loop {
            if inner.tracker.is_empty() {
                return true;
            }
            let wait = async {
                // `wait` needs a closed tracker; closing only affects waiting, and
                // reopening is skipped once shutdown has closed it for good.
                inner.tracker.close();
                inner.tracker.wait().await;
            };
            let done = tokio::time::timeout_at(until, wait).await.is_ok();
            if !inner.closed.load(Ordering::SeqCst) {
                inner.tracker.reopen();
            }
            if !done {
                return inner.tracker.is_empty();
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
        let inner = &self.inner;
        let start = tokio::time::Instant::now();
        let end = start + deadline;
        inner.closed.store(true, Ordering::SeqCst);
        inner.draining.cancel();
        inner.tracker.close();
        let drain_end = match inner.options.shutdown {
            crate::ShutdownMode::Cancel => start,
            _ => start + deadline.mul_f64(0.8),
        };
        let mut finished = tokio::time::timeout_at(drain_end, inner.tracker.wait())
            .await
            .is_ok();
        inner.shutdown.cancel();
        if !finished {
            finished = tokio::time::timeout_at(end, inner.tracker.wait())
                .await
                .is_ok();
        }
        inner.abandon.cancel();
        let leftover: Vec<Lease> = lock(&inner.held).drain().map(|(_, l)| l).collect();
        let mut released = 0;
        for lease in &leftover {
            // Bounded: a stalled backend must not hold shutdown past its deadline
            // by much; the lease then lapses at its TTL instead.
            let r = tokio::time::timeout(
                Duration::from_millis(500),
                inner.state.release(lease, chat_core::Release::HandBack),
            )
            .await;
            released += usize::from(matches!(r, Ok(Ok(true))));
        }
        let report = ShutdownReport {
            cancelled: inner.shutdown_cancelled.load(Ordering::SeqCst),
            finished,
            still_running: inner.tracker.len(),
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
}

impl BotBuilder {
    /// The state backend.
    #[must_use]
    pub fn state(mut self, state: impl StateBackend) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// A shared state backend.
    #[must_use]
    pub fn state_arc(mut self, state: Arc<dyn StateBackend>) -> Self {
        self.state = Some(state);
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

    /// Handles a message that mentions the bot, or a direct message, in a thread
    /// the bot is not subscribed to.
    #[must_use]
    pub fn on_new_mention(mut self, handler: impl Handler) -> Self {
        self.handlers.mention.push(Arc::new(handler));
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

    /// Handles every added or removed reaction.
    #[must_use]
    pub fn on_reaction(mut self, handler: impl Handler) -> Self {
        self.handlers.reaction.push((None, Arc::new(handler)));
        self
    }

    /// Handles reactions with one emoji (name without colons).
    #[must_use]
    pub fn on_reaction_emoji(mut self, emoji: &str, handler: impl Handler) -> Self {
        self.handlers
            .reaction
            .push((Some(emoji.to_owned()), Arc::new(handler)));
        self
    }

    /// Handles clicks on the component with `action_id`.
    #[must_use]
    pub fn on_action(mut self, action_id: &str, handler: impl Handler) -> Self {
        self.handlers
            .action
            .push((action_id.to_owned(), Arc::new(handler)));
        self
    }

    /// Handles a slash command (`/echo`).
    #[must_use]
    pub fn on_slash_command(mut self, command: &str, handler: impl Handler) -> Self {
        self.handlers
            .slash_command
            .push((command.to_owned(), Arc::new(handler)));
        self
    }

    /// Handles every slash command no [`on_slash_command`](Self::on_slash_command)
    /// names (a bot that answers whatever command it is installed with).
    #[must_use]
    pub fn on_any_slash_command(mut self, handler: impl Handler) -> Self {
        self.handlers.any_slash_command = Some(Arc::new(handler));
        self
    }

    /// Handles modal submissions (`Some(callback_id)` for one modal, `None` for all).
    #[must_use]
    pub fn on_modal_submit(mut self, callback_id: Option<&str>, handler: impl Handler) -> Self {
        self.handlers
            .modal_submit
            .push((callback_id.map(str::to_owned), Arc::new(handler)));
        self
    }

    /// Handles modals being closed.
    #[must_use]
    pub fn on_modal_close(mut self, callback_id: Option<&str>, handler: impl Handler) -> Self {
        self.handlers
            .modal_close
            .push((callback_id.map(str::to_owned), Arc::new(handler)));
        self
    }

    /// Handles a new agent session (Linear: the agent was mentioned or delegated).
    #[must_use]
    pub fn on_agent_session_created(mut self, handler: impl Handler) -> Self {
        self.handlers.agent_created.push(Arc::new(handler));
        self
    }

    /// Handles a follow-up prompt in an agent session.
    #[must_use]
    pub fn on_agent_session_prompted(mut self, handler: impl Handler) -> Self {
        self.handlers.agent_prompted.push(Arc::new(handler));
        self
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
        self.options.validate()?;
        let mut handlers = self.handlers;
        for (pattern, h) in self.patterns {
            let re = Regex::new(&pattern).map_err(|_| BuildError::InvalidPattern(pattern))?;
            handlers.pattern.push((re, h));
        }
        let options = self.options;
        let bot = Bot {
            inner: Arc::new(BotInner {
                state,
                adapters,
                admission: Admission::new(options.max_detached, options.max_detached_per_tenant),
                options,
                handlers,
                recorder: Recorder::new(self.observers),
                tracker: TaskTracker::new(),
                draining: CancellationToken::new(),
                shutdown: CancellationToken::new(),
                abandon: CancellationToken::new(),
                closed: AtomicBool::new(false),
                runs: Mutex::default(),
                held: Mutex::default(),
                wakers: Mutex::default(),
                slot_freed: Notify::new(),
                sweeper: OnceLock::new(),
                shutdown_cancelled: AtomicUsize::new(0),
            }),
        };
        // The recovery sweep runs from the start when built inside a runtime;
        // otherwise it starts with the first delivery.
        if tokio::runtime::Handle::try_current().is_ok() {
            crate::sweep::start_sweeper(&bot.inner);
        }
        Ok(bot)
    }
}
