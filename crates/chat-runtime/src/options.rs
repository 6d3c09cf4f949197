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
    /// budget of [`RuntimeOptions::detach_timeout`].
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

/// Every setting of the runtime. Start from [`RuntimeOptions::default()`] and
/// change what you need with struct-update syntax, so nothing is silently reset:
///
/// ```
/// use std::time::Duration;
/// use chat_runtime::{Concurrency, Dispatch, RuntimeOptions};
///
/// let options = RuntimeOptions {
///     dispatch: Dispatch::Deferred,
///     detach_timeout: Duration::from_secs(300),
///     concurrency: Concurrency::queue(),
///     ..RuntimeOptions::default()
/// };
/// assert_eq!(options.max_detached, 1024);
/// ```
///
/// The struct is deliberately exhaustive so that struct-update syntax works; new
/// options are only ever added with a default.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Sync (default) or deferred dispatch.
    pub dispatch: Dispatch,
    /// The strategy for overlapping events on one scope. Default `Drop`.
    pub concurrency: Concurrency,
    /// The budget of detached work, from acceptance: waiting (queue, debounce,
    /// slot) and running. Required (non-zero) under deferred dispatch, and under
    /// sync dispatch with `Queue` (handed-off entries run detached). Default zero.
    pub detach_timeout: Duration,
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
    /// How long an event's dedupe mark lives. Default `None`: each
    /// platform's own retry horizon
    /// ([`Webhook::dedupe_ttl`](chat_core::Webhook::dedupe_ttl):
    /// Slack 3 h, or 25 h with Delayed Events; Linear 7.5 h). A value here
    /// overrides it for every adapter.
    pub dedupe_ttl: Option<Duration>,
    /// The lease TTL; the lease is renewed every third of it. Default 30 s.
    pub lock_ttl: Duration,
    /// How long one handler run may keep renewing its lease; after it the lease
    /// lapses at its TTL and the handler is cancelled as preempted. Default 10 min.
    pub max_lock_lifetime: Duration,
    /// What a lease serializes. Default: the adapter's choice.
    pub lock_scope: LockScope,
    /// How long a sync delivery under `Concurrent{max}` waits for a slot inside its
    /// request before it is refused so the platform retries. Default 2 s.
    pub sync_slot_wait: Duration,
    /// How long the platform waits for its answer before the runtime answers
    /// "retry" (the at-capacity answer) while the delivery carries on: a slow
    /// state backend or a slow sync handler never makes the platform time out.
    /// Default 2.5 s (Slack allows 3 s).
    pub ack_timeout: Duration,
    /// How long a thread stays subscribed without activity: each event of a
    /// subscribed thread renews it, and a thread silent this long is
    /// forgotten (so subscriptions cannot grow without bound). Default 30 days.
    pub subscription_ttl: Duration,
    /// How long a user lookup ([`Thread::user`](crate::Thread::user)) stays
    /// cached in the state backend. Default 1 hour.
    pub user_cache_ttl: Duration,
    /// How long the webhook service waits for a request's body once its
    /// headers arrived; a client that has not sent it all by then is answered
    /// 408 and its connection's work dropped. Platforms send a whole body at
    /// once, so only a slow or hostile client meets it. Default 1 s (well
    /// inside Slack's 3 s).
    pub body_timeout: Duration,
    /// Under deferred dispatch, run slash commands and modal submissions / closes
    /// before the acknowledgement anyway, so their handlers can answer the
    /// delivery itself with [`Ctx::reply`](crate::Ctx::reply) (Slack shows a
    /// slash command's answer and a modal's `response_action` only from the HTTP
    /// response). They still pass admission. Default `true`.
    pub inline_interactions: bool,
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
    /// How long the runtime repeats a state call whose outcome is unknown (a
    /// timeout or a dropped connection: it may have run) before it gives up on
    /// learning it: an `admit` (the event is then in the backend's care, or
    /// retried by the platform), a `finish` (its batch then runs again under
    /// the scope's next holder; at most 50 s, within the minute a backend
    /// remembers an acknowledgement). Keep it above the state backend's
    /// client timeout. Default 30 s.
    pub state_retry: Duration,
    /// Label the per-outcome counter and the detached-runs gauge with the
    /// tenant (one series per installation: mind the cardinality of a
    /// multi-workspace app). Default off.
    pub metrics_tenant_label: bool,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            dispatch: Dispatch::Sync,
            concurrency: Concurrency::Drop,
            detach_timeout: Duration::ZERO,
            max_detached: 1024,
            max_detached_per_tenant: None,
            max_inline: 256,
            max_inline_per_tenant: None,
            dedupe_ttl: None,
            lock_ttl: Duration::from_secs(30),
            max_lock_lifetime: Duration::from_secs(10 * 60),
            lock_scope: LockScope::Adapter,
            sync_slot_wait: Duration::from_secs(2),
            inline_interactions: true,
            ack_timeout: Duration::from_millis(2500),
            body_timeout: Duration::from_secs(1),
            subscription_ttl: chat_core::DEFAULT_SUBSCRIPTION_TTL,
            user_cache_ttl: Duration::from_secs(60 * 60),
            sweep_interval: Some(Duration::from_secs(30)),
            max_attempts: 3,
            shutdown: ShutdownMode::Drain,
            state_retry: Duration::from_secs(30),
            metrics_tenant_label: false,
        }
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
    #[error("detach_timeout must be positive under {0}")]
    DetachTimeoutRequired(&'static str),
    /// `max_detached` is zero.
    #[error("max_detached must be positive")]
    MaxDetachedZero,
    /// `max_detached_per_tenant` is zero.
    #[error("max_detached_per_tenant must be positive when set")]
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
        "detach_timeout ({detach_timeout:?}) must be longer than the debounce interval ({interval:?})"
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
    #[error("max_inline and max_inline_per_tenant must be positive")]
    MaxInlineZero,
    /// A lock TTL of zero.
    #[error("lock_ttl must be positive")]
    ZeroLockTtl,
    /// A user cache TTL of zero.
    #[error("user_cache_ttl must be positive")]
    ZeroUserCacheTtl,
    /// A subscription TTL of zero.
    #[error("subscription_ttl must be positive")]
    ZeroSubscriptionTtl,
    /// A body timeout of zero.
    #[error("body_timeout must be positive")]
    ZeroBodyTimeout,
    /// An ack timeout of zero.
    #[error("ack_timeout must be positive")]
    ZeroAckTimeout,
    /// `max_attempts` of zero: no event could ever run again after a crash.
    #[error("max_attempts must be positive")]
    ZeroMaxAttempts,
    /// A dedupe TTL of zero would let every retry run again.
    #[error("dedupe_ttl must be positive")]
    ZeroDedupeTtl,
    /// A sweep interval of zero (use `None` to turn the sweep off).
    #[error("sweep_interval must be positive (None turns the sweep off)")]
    ZeroSweepInterval,
    /// The budget must outlast the burst window under `Collapse`, or a lone
    /// event would always expire before its window closed.
    #[error(
        "detach_timeout ({detach_timeout:?}) must be longer than the burst window ({window:?})"
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

impl RuntimeOptions {
    /// Checks the combination; `build()` calls this.
    pub fn validate(&self) -> Result<(), BuildError> {
        let deferred = self.dispatch == Dispatch::Deferred;
        if self.max_detached == 0 {
            return Err(BuildError::MaxDetachedZero);
        }
        if self.max_detached_per_tenant == Some(0) {
            return Err(BuildError::MaxDetachedPerTenantZero);
        }
        if self.max_inline == 0 || self.max_inline_per_tenant == Some(0) {
            return Err(BuildError::MaxInlineZero);
        }
        if self.lock_ttl.is_zero() {
            return Err(BuildError::ZeroLockTtl);
        }
        if self.ack_timeout.is_zero() {
            return Err(BuildError::ZeroAckTimeout);
        }
        if self.body_timeout.is_zero() {
            return Err(BuildError::ZeroBodyTimeout);
        }
        if self.subscription_ttl.is_zero() {
            return Err(BuildError::ZeroSubscriptionTtl);
        }
        if self.user_cache_ttl.is_zero() {
            return Err(BuildError::ZeroUserCacheTtl);
        }
        if self.max_attempts == 0 {
            return Err(BuildError::ZeroMaxAttempts);
        }
        if self.dedupe_ttl.is_some_and(|d| d.is_zero()) {
            return Err(BuildError::ZeroDedupeTtl);
        }
        if self.sweep_interval.is_some_and(|d| d.is_zero()) {
            return Err(BuildError::ZeroSweepInterval);
        }
        let entry_ttl = match self.concurrency {
            Concurrency::Queue(q) => Some(q.entry_ttl),
            Concurrency::Debounce(d) => Some(d.entry_ttl),
            Concurrency::Burst(b) => Some(b.entry_ttl),
            _ => None,
        };
        for (name, d) in [
            ("detach_timeout", Some(self.detach_timeout)),
            ("dedupe_ttl", self.dedupe_ttl),
            ("lock_ttl", Some(self.lock_ttl)),
            ("max_lock_lifetime", Some(self.max_lock_lifetime)),
            ("sync_slot_wait", Some(self.sync_slot_wait)),
            ("ack_timeout", Some(self.ack_timeout)),
            ("body_timeout", Some(self.body_timeout)),
            ("subscription_ttl", Some(self.subscription_ttl)),
            ("user_cache_ttl", Some(self.user_cache_ttl)),
            ("sweep_interval", self.sweep_interval),
            ("state_retry", Some(self.state_retry)),
            ("entry_ttl", entry_ttl),
        ] {
            if d.is_some_and(|d| d > MAX_DURATION) {
                return Err(BuildError::DurationTooLong(name));
            }
        }
        if deferred && self.detach_timeout.is_zero() {
            return Err(BuildError::DetachTimeoutRequired("deferred dispatch"));
        }
        self.concurrency.validate().map_err(|e| match e {
            InvalidConcurrency::ZeroQueueSize => BuildError::ZeroQueueSize,
            InvalidConcurrency::ZeroDebounceInterval => BuildError::ZeroDebounceInterval,
            InvalidConcurrency::ZeroBurstWindow => BuildError::ZeroBurstWindow,
            InvalidConcurrency::ZeroBurstBound => BuildError::ZeroBurstBound,
            _ => BuildError::ZeroMaxConcurrent,
        })?;
        match self.concurrency {
            Concurrency::Queue(_) if !deferred && self.detach_timeout.is_zero() => {
                return Err(BuildError::DetachTimeoutRequired("the queue strategy"));
            }
            Concurrency::Debounce(d) => {
                if !deferred {
                    return Err(BuildError::StrategyNeedsDeferred("debounce"));
                }
                if self.detach_timeout <= d.interval {
                    return Err(BuildError::DetachTimeoutNotAboveDebounce {
                        detach_timeout: self.detach_timeout,
                        interval: d.interval,
                    });
                }
            }
            Concurrency::Burst(b) => {
                if !deferred {
                    return Err(BuildError::StrategyNeedsDeferred("burst"));
                }
                if b.mode == chat_core::BurstMode::Collapse && self.detach_timeout <= b.window {
                    return Err(BuildError::DetachTimeoutNotAboveBurstWindow {
                        detach_timeout: self.detach_timeout,
                        window: b.window,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}
