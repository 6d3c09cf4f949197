//! [`RuntimeOptions`], their defaults, and the checks `build()` runs on them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chat_core::concurrency::InvalidConcurrency;
use chat_core::{Concurrency, Event};

/// When the handler runs relative to the platform's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Dispatch {
    /// The handler runs before the acknowledgement; a failure is answered so the
    /// platform retries. For fast handlers.
    #[default]
    Sync,
    /// The acknowledgement is sent at once; the handler runs detached, with a
    /// budget of [`DispatchOptions::detach_timeout`].
    Deferred,
}

/// What one lease serializes.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum LockScope {
    /// The adapter's default (thread for Slack and Linear).
    #[default]
    Adapter,
    /// One lease per thread.
    Thread,
    /// One lease per channel: every thread of a channel waits for the others.
    Channel,
    /// Chosen per event.
    Function(Arc<dyn Fn(&Event) -> ScopeChoice + Send + Sync>),
}

impl LockScope {
    /// A lock scope chosen per event by `f`.
    pub fn function(f: impl Fn(&Event) -> ScopeChoice + Send + Sync + 'static) -> Self {
        Self::Function(Arc::new(f))
    }
}

impl fmt::Debug for LockScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Adapter => f.write_str("Adapter"),
            Self::Thread => f.write_str("Thread"),
            Self::Channel => f.write_str("Channel"),
            Self::Function(_) => f.write_str("Function(..)"),
        }
    }
}

/// What a [`LockScope::Function`] picks for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeChoice {
    /// The event's thread.
    Thread,
    /// The event's whole channel.
    Channel,
}

/// How [`Bot::shutdown`](crate::Bot::shutdown) treats running handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ShutdownMode {
    /// Let running handlers finish for most of the deadline, then cancel the
    /// rest and hand their events back to run on another replica.
    #[default]
    Drain,
    /// Cancel running handlers at once and hand their events back (the seed
    /// runtime's abort-on-shutdown, without the loss).
    Cancel,
}

/// Every setting of the runtime, in groups: when handlers run
/// ([`DispatchOptions`]), the strategy for overlapping events
/// ([`Concurrency`]), how much work a process takes in ([`AdmissionOptions`]),
/// what a lease is ([`LeaseOptions`]), how long the runtime waits
/// ([`TimeoutOptions`]), how lost work comes back ([`RecoveryOptions`]), how
/// long marks and caches live ([`RetentionOptions`]) and what metrics carry
/// ([`TelemetryOptions`]). Each group has its defaults, its setters and its own
/// `validate`; [`RuntimeOptions::validate`] runs them all, then the checks
/// that span groups. Start from [`RuntimeOptions::default()`] and change what
/// you need, so nothing is silently reset:
///
/// ```
/// use std::time::Duration;
/// use chat_runtime::{AdmissionOptions, Concurrency, DispatchOptions, RuntimeOptions};
///
/// let options = RuntimeOptions::default()
///     .dispatch(DispatchOptions::deferred(Duration::from_secs(300)))
///     .concurrency(Concurrency::queue())
///     .admission(AdmissionOptions::default().max_detached_per_tenant(64));
/// assert_eq!(options.admission.max_detached, 1024);
/// assert!(options.validate().is_ok());
///
/// // A field can also be changed in place.
/// let mut options = options;
/// options.timeouts.ack = Duration::from_secs(2);
/// ```
///
/// Every struct here is `#[non_exhaustive]`: options are only ever added, with
/// a default, in a minor release.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RuntimeOptions {
    /// When the handler runs relative to the acknowledgement, and its budget.
    pub dispatch: DispatchOptions,
    /// The strategy for overlapping events on one scope. Default `Drop`.
    pub concurrency: Concurrency,
    /// The caps on work in this process.
    pub admission: AdmissionOptions,
    /// What a lease serializes and how long it lives.
    pub leases: LeaseOptions,
    /// How long the runtime waits for the platform, the client and the state.
    pub timeouts: TimeoutOptions,
    /// How work whose holder is gone comes back, and shutdown.
    pub recovery: RecoveryOptions,
    /// How long dedupe marks, subscriptions and cached users live.
    pub retention: RetentionOptions,
    /// What the metrics carry.
    pub telemetry: TelemetryOptions,
}

impl RuntimeOptions {
    /// Replaces the dispatch group.
    #[must_use]
    pub fn dispatch(mut self, dispatch: DispatchOptions) -> Self {
        self.dispatch = dispatch;
        self
    }

    /// Sets the strategy for overlapping events.
    #[must_use]
    pub fn concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Replaces the admission group.
    #[must_use]
    pub fn admission(mut self, admission: AdmissionOptions) -> Self {
        self.admission = admission;
        self
    }

    /// Replaces the lease group.
    #[must_use]
    pub fn leases(mut self, leases: LeaseOptions) -> Self {
        self.leases = leases;
        self
    }

    /// Replaces the timeout group.
    #[must_use]
    pub fn timeouts(mut self, timeouts: TimeoutOptions) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Replaces the recovery group.
    #[must_use]
    pub fn recovery(mut self, recovery: RecoveryOptions) -> Self {
        self.recovery = recovery;
        self
    }

    /// Replaces the retention group.
    #[must_use]
    pub fn retention(mut self, retention: RetentionOptions) -> Self {
        self.retention = retention;
        self
    }

    /// Replaces the telemetry group.
    #[must_use]
    pub fn telemetry(mut self, telemetry: TelemetryOptions) -> Self {
        self.telemetry = telemetry;
        self
    }
}

/// When handlers run, and the budget of detached work.
///
/// ```
/// use std::time::Duration;
/// use chat_runtime::{Dispatch, DispatchOptions};
///
/// let deferred = DispatchOptions::deferred(Duration::from_secs(120));
/// assert_eq!(deferred.mode, Dispatch::Deferred);
/// assert!(DispatchOptions::default().validate().is_ok());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DispatchOptions {
    /// Sync (default) or deferred dispatch.
    pub mode: Dispatch,
    /// The budget of detached work, from acceptance: waiting (queue, debounce,
    /// slot) and running. Required (non-zero) under deferred dispatch, and under
    /// sync dispatch with `Queue` (handed-off entries run detached). Default zero.
    pub detach_timeout: Duration,
    /// Under deferred dispatch, run slash commands and modal submissions / closes
    /// before the acknowledgement anyway, so their handlers can answer the
    /// delivery itself with [`Ctx::reply`](crate::Ctx::reply) (Slack shows a
    /// slash command's answer and a modal's `response_action` only from the HTTP
    /// response). They still pass admission. Default `true`.
    pub inline_interactions: bool,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        Self {
            mode: Dispatch::Sync,
            detach_timeout: Duration::ZERO,
            inline_interactions: true,
        }
    }
}

impl DispatchOptions {
    /// Deferred dispatch with `detach_timeout` as the budget of each event.
    pub fn deferred(detach_timeout: Duration) -> Self {
        Self {
            mode: Dispatch::Deferred,
            detach_timeout,
            ..Self::default()
        }
    }

    /// Sets the dispatch mode.
    #[must_use]
    pub fn mode(mut self, mode: Dispatch) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the budget of detached work.
    #[must_use]
    pub fn detach_timeout(mut self, detach_timeout: Duration) -> Self {
        self.detach_timeout = detach_timeout;
        self
    }

    /// Sets whether slash commands and modals run inline under deferred dispatch.
    #[must_use]
    pub fn inline_interactions(mut self, inline: bool) -> Self {
        self.inline_interactions = inline;
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        at_most("dispatch.detach_timeout", Some(self.detach_timeout))?;
        if self.mode == Dispatch::Deferred && self.detach_timeout.is_zero() {
            return Err(BuildError::DetachTimeoutRequired("deferred dispatch"));
        }
        Ok(())
    }
}

/// The caps on work in this process: at a cap a delivery is refused before any
/// state is touched, so the platform retries it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdmissionOptions {
    /// The cap on admitted-but-incomplete detached work in this process. At the cap
    /// a delivery is refused before any state is touched. Default 1024.
    pub max_detached: usize,
    /// The cap on one tenant's share of `max_detached`. Default none.
    pub max_detached_per_tenant: Option<usize>,
    /// The cap on handlers running inside their request in this process: every
    /// run under sync dispatch, and slash commands and modal submissions run
    /// before the acknowledgement. At the cap a delivery is refused with the
    /// at-capacity answer before any state is touched, so the platform retries
    /// it. Default 256.
    pub max_inline: usize,
    /// The cap on one tenant's share of `max_inline`. Default none: a bot in
    /// one workspace would only be capped twice; set it when many tenants share
    /// a process.
    pub max_inline_per_tenant: Option<usize>,
}

impl Default for AdmissionOptions {
    fn default() -> Self {
        Self {
            max_detached: 1024,
            max_detached_per_tenant: None,
            max_inline: 256,
            max_inline_per_tenant: None,
        }
    }
}

impl AdmissionOptions {
    /// Sets the cap on detached work.
    #[must_use]
    pub fn max_detached(mut self, max: usize) -> Self {
        self.max_detached = max;
        self
    }

    /// Sets (or, with `None`, removes) one tenant's cap on detached work.
    #[must_use]
    pub fn max_detached_per_tenant(mut self, max: impl Into<Option<usize>>) -> Self {
        self.max_detached_per_tenant = max.into();
        self
    }

    /// Sets the cap on handlers running inside their request.
    #[must_use]
    pub fn max_inline(mut self, max: usize) -> Self {
        self.max_inline = max;
        self
    }

    /// Sets (or, with `None`, removes) one tenant's cap on inline handlers.
    #[must_use]
    pub fn max_inline_per_tenant(mut self, max: impl Into<Option<usize>>) -> Self {
        self.max_inline_per_tenant = max.into();
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        if self.max_detached == 0 {
            return Err(BuildError::MaxDetachedZero);
        }
        if self.max_detached_per_tenant == Some(0) {
            return Err(BuildError::MaxDetachedPerTenantZero);
        }
        if self.max_inline == 0 || self.max_inline_per_tenant == Some(0) {
            return Err(BuildError::MaxInlineZero);
        }
        Ok(())
    }
}

/// What a lease serializes and how long it lives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseOptions {
    /// The lease TTL; the lease is renewed every third of it. Default 30 s.
    pub ttl: Duration,
    /// How long one handler run may keep renewing its lease; after it the lease
    /// lapses at its TTL and the handler is cancelled as preempted. Default 10 min.
    pub max_lifetime: Duration,
    /// What a lease serializes. Default: the adapter's choice.
    pub scope: LockScope,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(30),
            max_lifetime: Duration::from_secs(10 * 60),
            scope: LockScope::Adapter,
        }
    }
}

impl LeaseOptions {
    /// Sets the lease TTL.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets how long one run may keep renewing its lease.
    #[must_use]
    pub fn max_lifetime(mut self, max_lifetime: Duration) -> Self {
        self.max_lifetime = max_lifetime;
        self
    }

    /// Sets what a lease serializes.
    #[must_use]
    pub fn scope(mut self, scope: LockScope) -> Self {
        self.scope = scope;
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        if self.ttl.is_zero() {
            return Err(BuildError::ZeroLockTtl);
        }
        at_most("leases.ttl", Some(self.ttl))?;
        at_most("leases.max_lifetime", Some(self.max_lifetime))
    }
}

/// How long the runtime waits for the platform, the client and the state.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TimeoutOptions {
    /// How long the platform waits for its answer before the runtime answers
    /// "retry" (the at-capacity answer) while the delivery carries on: a slow
    /// state backend or a slow sync handler never makes the platform time out.
    /// Default 2.5 s (Slack allows 3 s).
    pub ack: Duration,
    /// How long the webhook service waits for a request's body once its
    /// headers arrived; a client that has not sent it all by then is answered
    /// 408 and its connection's work dropped. Platforms send a whole body at
    /// once, so only a slow or hostile client meets it. Default 1 s (well
    /// inside Slack's 3 s).
    pub body: Duration,
    /// How long a sync delivery under `Concurrent{max}` waits for a slot inside its
    /// request before it is refused so the platform retries. Default 2 s.
    pub sync_slot_wait: Duration,
    /// How long the runtime repeats a state call whose outcome is unknown (a
    /// timeout or a dropped connection: it may have run) before it gives up on
    /// learning it: an `admit` (the event is then in the backend's care, or
    /// retried by the platform), a `finish` (its batch then runs again under
    /// the scope's next holder; at most 50 s, within the minute a backend
    /// remembers an acknowledgement). Keep it above the state backend's
    /// client timeout. Default 30 s.
    pub state_retry: Duration,
}

impl Default for TimeoutOptions {
    fn default() -> Self {
        Self {
            ack: Duration::from_millis(2500),
            body: Duration::from_secs(1),
            sync_slot_wait: Duration::from_secs(2),
            state_retry: Duration::from_secs(30),
        }
    }
}

impl TimeoutOptions {
    /// Sets how long the platform may wait for its answer.
    #[must_use]
    pub fn ack(mut self, ack: Duration) -> Self {
        self.ack = ack;
        self
    }

    /// Sets how long a request's body may take.
    #[must_use]
    pub fn body(mut self, body: Duration) -> Self {
        self.body = body;
        self
    }

    /// Sets how long a sync delivery waits for a concurrency slot.
    #[must_use]
    pub fn sync_slot_wait(mut self, wait: Duration) -> Self {
        self.sync_slot_wait = wait;
        self
    }

    /// Sets how long a state call of unknown outcome is repeated.
    #[must_use]
    pub fn state_retry(mut self, retry: Duration) -> Self {
        self.state_retry = retry;
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        if self.ack.is_zero() {
            return Err(BuildError::ZeroAckTimeout);
        }
        if self.body.is_zero() {
            return Err(BuildError::ZeroBodyTimeout);
        }
        at_most("timeouts.ack", Some(self.ack))?;
        at_most("timeouts.body", Some(self.body))?;
        at_most("timeouts.sync_slot_wait", Some(self.sync_slot_wait))?;
        at_most("timeouts.state_retry", Some(self.state_retry))
    }
}

/// How work whose holder is gone comes back, and what shutdown does with
/// running handlers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecoveryOptions {
    /// How often the runtime looks for work whose holder is gone — a scope
    /// with entries waiting or a run in flight and no lease, a slot run whose
    /// slot lapsed — and runs it. `None` turns the sweep off. Default 30 s.
    pub sweep_interval: Option<Duration>,
    /// How many times an event's run may be lost by a holder that died, was
    /// killed or paused past its lease before the event is given up and
    /// recorded `Failed` (`abandoned`). Runs handed back at shutdown do not
    /// count. Default 3.
    pub max_attempts: u32,
    /// Drain (default) or cancel at shutdown.
    pub shutdown: ShutdownMode,
}

impl Default for RecoveryOptions {
    fn default() -> Self {
        Self {
            sweep_interval: Some(Duration::from_secs(30)),
            max_attempts: 3,
            shutdown: ShutdownMode::Drain,
        }
    }
}

impl RecoveryOptions {
    /// Sets (or, with `None`, turns off) the sweep's interval.
    #[must_use]
    pub fn sweep_interval(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.sweep_interval = interval.into();
        self
    }

    /// Sets how many lost runs an event survives.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// Sets what shutdown does with running handlers.
    #[must_use]
    pub fn shutdown(mut self, mode: ShutdownMode) -> Self {
        self.shutdown = mode;
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        if self.max_attempts == 0 {
            return Err(BuildError::ZeroMaxAttempts);
        }
        if self.sweep_interval.is_some_and(|d| d.is_zero()) {
            return Err(BuildError::ZeroSweepInterval);
        }
        at_most("recovery.sweep_interval", self.sweep_interval)
    }
}

/// How long the runtime's marks and caches live in the state backend.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RetentionOptions {
    /// How long an event's dedupe mark lives. Default `None`: each
    /// platform's own retry horizon
    /// ([`Webhook::dedupe_ttl`](chat_core::Webhook::dedupe_ttl):
    /// Slack 3 h, or 25 h with Delayed Events; Linear 7.5 h). A value here
    /// overrides it for every adapter.
    pub dedupe_ttl: Option<Duration>,
    /// How long a thread stays subscribed without activity: each event of a
    /// subscribed thread renews it, and a thread silent this long is
    /// forgotten (so subscriptions cannot grow without bound). Default 30 days.
    pub subscription_ttl: Duration,
    /// How long a user lookup ([`Thread::user`](crate::Thread::user)) stays
    /// cached in the state backend. Default 1 hour.
    pub user_cache_ttl: Duration,
    /// How long a post under an idempotency key
    /// ([`Thread::post_once`](crate::Thread::post_once)) is remembered: a
    /// retry with the same key within it returns the first post. Default
    /// 24 hours.
    pub idempotency_ttl: Duration,
}

impl Default for RetentionOptions {
    fn default() -> Self {
        Self {
            dedupe_ttl: None,
            subscription_ttl: chat_core::DEFAULT_SUBSCRIPTION_TTL,
            user_cache_ttl: Duration::from_secs(60 * 60),
            idempotency_ttl: Duration::from_secs(24 * 60 * 60),
        }
    }
}

impl RetentionOptions {
    /// Sets (or, with `None`, leaves to each platform) the dedupe TTL.
    #[must_use]
    pub fn dedupe_ttl(mut self, ttl: impl Into<Option<Duration>>) -> Self {
        self.dedupe_ttl = ttl.into();
        self
    }

    /// Sets how long a silent thread stays subscribed.
    #[must_use]
    pub fn subscription_ttl(mut self, ttl: Duration) -> Self {
        self.subscription_ttl = ttl;
        self
    }

    /// Sets how long a user lookup stays cached.
    #[must_use]
    pub fn user_cache_ttl(mut self, ttl: Duration) -> Self {
        self.user_cache_ttl = ttl;
        self
    }

    /// Sets how long a post under an idempotency key is remembered.
    #[must_use]
    pub fn idempotency_ttl(mut self, ttl: Duration) -> Self {
        self.idempotency_ttl = ttl;
        self
    }

    /// Checks the group on its own.
    pub fn validate(&self) -> Result<(), BuildError> {
        if self.idempotency_ttl.is_zero() {
            return Err(BuildError::ZeroIdempotencyTtl);
        }
        if self.subscription_ttl.is_zero() {
            return Err(BuildError::ZeroSubscriptionTtl);
        }
        if self.user_cache_ttl.is_zero() {
            return Err(BuildError::ZeroUserCacheTtl);
        }
        if self.dedupe_ttl.is_some_and(|d| d.is_zero()) {
            return Err(BuildError::ZeroDedupeTtl);
        }
        at_most("retention.dedupe_ttl", self.dedupe_ttl)?;
        at_most("retention.subscription_ttl", Some(self.subscription_ttl))?;
        at_most("retention.user_cache_ttl", Some(self.user_cache_ttl))?;
        at_most("retention.idempotency_ttl", Some(self.idempotency_ttl))
    }
}

/// What the runtime's metrics carry.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TelemetryOptions {
    /// Label the per-outcome counter and the detached-runs gauge with the
    /// tenant (one series per installation: mind the cardinality of a
    /// multi-workspace app). Default off.
    pub tenant_label: bool,
}

impl TelemetryOptions {
    /// Sets whether metrics carry the tenant.
    #[must_use]
    pub fn tenant_label(mut self, on: bool) -> Self {
        self.tenant_label = on;
        self
    }
}

/// Why [`BotBuilder::build`](crate::BotBuilder::build) refused a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No state backend was given.
    #[error("no state backend: call .state(..)")]
    NoState,
    /// No adapter was given.
    #[error("no platform adapter: call .adapter(..)")]
    NoAdapter,
    /// [`BotBuilder::require_on`](crate::BotBuilder::require_on) names no
    /// adapter of the bot.
    #[error("no adapter is named {0:?}")]
    UnknownAdapter(String),
    /// An adapter lacks a capability the bot requires
    /// ([`BotBuilder::require`](crate::BotBuilder::require)).
    #[error("adapter {adapter:?} has no {capability} capability")]
    MissingCapability {
        /// The adapter's name.
        adapter: String,
        /// What it lacks.
        capability: chat_core::Capability,
    },
    /// Two adapters share a name (webhook routes are named after adapters).
    #[error("two adapters are named {0:?}")]
    DuplicateAdapter(String),
    /// Deferred dispatch (or `Queue` under sync dispatch) needs a budget.
    #[error("dispatch.detach_timeout must be positive under {0}")]
    DetachTimeoutRequired(&'static str),
    /// `max_detached` is zero.
    #[error("admission.max_detached must be positive")]
    MaxDetachedZero,
    /// `max_detached_per_tenant` is zero.
    #[error("admission.max_detached_per_tenant must be positive when set")]
    MaxDetachedPerTenantZero,
    /// A debounce interval of zero.
    #[error("the debounce interval must be positive")]
    ZeroDebounceInterval,
    /// A burst window of zero.
    #[error("the burst window must be positive")]
    ZeroBurstWindow,
    /// A burst `max_batch` or `max_waiting` of zero.
    #[error("burst max_batch and max_waiting must be positive")]
    ZeroBurstBound,
    /// A queue `max_size` of zero.
    #[error("the queue max_size must be positive")]
    ZeroQueueSize,
    /// `Concurrent{max}` with a max of zero would deadlock.
    #[error("max_concurrent must be positive")]
    ZeroMaxConcurrent,
    /// Debounce and burst wait before they run, which only deferred dispatch can.
    #[error("the {0} strategy needs deferred dispatch")]
    StrategyNeedsDeferred(&'static str),
    /// The budget must outlast the debounce interval, or nothing could ever run.
    #[error(
        "dispatch.detach_timeout ({detach_timeout:?}) must be longer than the debounce interval ({interval:?})"
    )]
    DetachTimeoutNotAboveDebounce {
        /// The configured budget.
        detach_timeout: Duration,
        /// The debounce interval.
        interval: Duration,
    },
    /// A `on_new_message` pattern is not a valid regular expression.
    #[error("invalid message pattern {0:?}")]
    InvalidPattern(String),
    /// `max_inline` or `max_inline_per_tenant` is zero.
    #[error("admission.max_inline and admission.max_inline_per_tenant must be positive")]
    MaxInlineZero,
    /// A lock TTL of zero.
    #[error("leases.ttl must be positive")]
    ZeroLockTtl,
    /// A user cache TTL of zero.
    #[error("retention.user_cache_ttl must be positive")]
    ZeroUserCacheTtl,
    /// An idempotency TTL of zero.
    #[error("retention.idempotency_ttl must be positive")]
    ZeroIdempotencyTtl,
    /// A subscription TTL of zero.
    #[error("retention.subscription_ttl must be positive")]
    ZeroSubscriptionTtl,
    /// A body timeout of zero.
    #[error("timeouts.body must be positive")]
    ZeroBodyTimeout,
    /// An ack timeout of zero.
    #[error("timeouts.ack must be positive")]
    ZeroAckTimeout,
    /// `max_attempts` of zero: no event could ever run again after a crash.
    #[error("recovery.max_attempts must be positive")]
    ZeroMaxAttempts,
    /// A dedupe TTL of zero would let every retry run again.
    #[error("retention.dedupe_ttl must be positive")]
    ZeroDedupeTtl,
    /// A sweep interval of zero (use `None` to turn the sweep off).
    #[error("recovery.sweep_interval must be positive (None turns the sweep off)")]
    ZeroSweepInterval,
    /// The budget must outlast the burst window under `Collapse`, or a lone
    /// event would always expire before its window closed.
    #[error(
        "dispatch.detach_timeout ({detach_timeout:?}) must be longer than the burst window ({window:?})"
    )]
    DetachTimeoutNotAboveBurstWindow {
        /// The configured budget.
        detach_timeout: Duration,
        /// The burst window.
        window: Duration,
    },
    /// A duration too long to add to a clock reading (above ten years).
    #[error("{0} is longer than ten years")]
    DurationTooLong(&'static str),
}

/// The longest duration an option may hold: long enough for anything a bot
/// means, short enough that adding it to a clock reading never overflows.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// Fails with [`BuildError::DurationTooLong`] when `d` exceeds [`MAX_DURATION`].
fn at_most(name: &'static str, d: Option<Duration>) -> Result<(), BuildError> {
    if d.is_some_and(|d| d > MAX_DURATION) {
        return Err(BuildError::DurationTooLong(name));
    }
    Ok(())
}

impl RuntimeOptions {
    /// Checks each group, then the combination; `build()` calls this.
    pub fn validate(&self) -> Result<(), BuildError> {
        self.admission.validate()?;
        self.leases.validate()?;
        self.timeouts.validate()?;
        self.retention.validate()?;
        self.recovery.validate()?;
        self.dispatch.validate()?;
        let entry_ttl = match self.concurrency {
            Concurrency::Queue(q) => Some(q.entry_ttl),
            Concurrency::Debounce(d) => Some(d.entry_ttl),
            Concurrency::Burst(b) => Some(b.entry_ttl),
            _ => None,
        };
        at_most("concurrency entry_ttl", entry_ttl)?;
        self.concurrency.validate().map_err(|e| match e {
            InvalidConcurrency::ZeroQueueSize => BuildError::ZeroQueueSize,
            InvalidConcurrency::ZeroDebounceInterval => BuildError::ZeroDebounceInterval,
            InvalidConcurrency::ZeroBurstWindow => BuildError::ZeroBurstWindow,
            InvalidConcurrency::ZeroBurstBound => BuildError::ZeroBurstBound,
            _ => BuildError::ZeroMaxConcurrent,
        })?;
        let deferred = self.dispatch.mode == Dispatch::Deferred;
        let detach_timeout = self.dispatch.detach_timeout;
        match self.concurrency {
            Concurrency::Queue(_) if !deferred && detach_timeout.is_zero() => {
                return Err(BuildError::DetachTimeoutRequired("the queue strategy"));
            }
            Concurrency::Debounce(d) => {
                if !deferred {
                    return Err(BuildError::StrategyNeedsDeferred("debounce"));
                }
                if detach_timeout <= d.interval {
                    return Err(BuildError::DetachTimeoutNotAboveDebounce {
                        detach_timeout,
                        interval: d.interval,
                    });
                }
            }
            Concurrency::Burst(b) => {
                if !deferred {
                    return Err(BuildError::StrategyNeedsDeferred("burst"));
                }
                if b.mode == chat_core::BurstMode::Collapse && detach_timeout <= b.window {
                    return Err(BuildError::DetachTimeoutNotAboveBurstWindow {
                        detach_timeout,
                        window: b.window,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}
