//! The five strategies for events that overlap on one scope, with their options.
//!
//! Options live inside the variant they belong to, so an option of one strategy can
//! never be given to another. The runtime validates the values (a zero interval is a
//! build error); the state backend applies them atomically in
//! [`Coordination::admit`](crate::Coordination::admit).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What happens to an event that arrives while its scope is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Concurrency {
    /// Acknowledged and recorded `Dropped`; a retry of it is a duplicate.
    #[default]
    Drop,
    /// Waits in the scope's queue; when the holder finishes, the newest waiting
    /// event runs with the older ones as `skipped` (recorded `Superseded`).
    Queue(QueueOptions),
    /// Replaces the pending event; the pending event runs after a quiet interval.
    Debounce(DebounceOptions),
    /// Joins a fixed window's batch; sealed batches run in seal order.
    Burst(BurstOptions),
    /// No lock; at most `max` handlers run on the scope at once, across replicas.
    Concurrent(ConcurrentOptions),
}

impl Concurrency {
    /// The stable lowercase name (`drop`, `queue`, …), used in logs.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Drop => "drop",
            Self::Queue(_) => "queue",
            Self::Debounce(_) => "debounce",
            Self::Burst(_) => "burst",
            Self::Concurrent(_) => "concurrent",
        }
    }

    /// A queue with the default options.
    pub fn queue() -> Self {
        Self::Queue(QueueOptions::default())
    }

    /// A debounce with the default interval.
    pub fn debounce() -> Self {
        Self::Debounce(DebounceOptions::default())
    }

    /// A burst with the default window and mode.
    pub fn burst() -> Self {
        Self::Burst(BurstOptions::default())
    }

    /// Unbounded concurrency: no lock, no slots.
    pub fn concurrent() -> Self {
        Self::Concurrent(ConcurrentOptions::default())
    }

    /// Checks the strategy's own options: the one rule every backend and the
    /// runtime apply, so none repeats it. (How a strategy combines with the
    /// runtime's other options is the runtime's to check.)
    ///
    /// ```
    /// use chat_core::{Concurrency, QueueOptions, concurrency::InvalidConcurrency};
    /// assert!(Concurrency::queue().validate().is_ok());
    /// let empty = Concurrency::Queue(QueueOptions::default().max_size(0));
    /// assert_eq!(empty.validate(), Err(InvalidConcurrency::ZeroQueueSize));
    /// ```
    pub fn validate(&self) -> Result<(), InvalidConcurrency> {
        match self {
            Self::Queue(q) if q.max_size == 0 => Err(InvalidConcurrency::ZeroQueueSize),
            Self::Debounce(d) if d.interval.is_zero() => {
                Err(InvalidConcurrency::ZeroDebounceInterval)
            }
            Self::Burst(b) if b.window.is_zero() => Err(InvalidConcurrency::ZeroBurstWindow),
            Self::Burst(b) if b.max_batch == Some(0) || b.max_waiting == 0 => {
                Err(InvalidConcurrency::ZeroBurstBound)
            }
            Self::Concurrent(c) if c.max == Some(0) => Err(InvalidConcurrency::ZeroMaxConcurrent),
            _ => Ok(()),
        }
    }
}

/// Why a [`Concurrency`] is not valid ([`Concurrency::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidConcurrency {
    /// A queue `max_size` of zero.
    #[error("a queue max_size of zero")]
    ZeroQueueSize,
    /// A zero debounce interval.
    #[error("a zero debounce interval")]
    ZeroDebounceInterval,
    /// A zero burst window.
    #[error("a zero burst window")]
    ZeroBurstWindow,
    /// A burst `max_batch` or `max_waiting` of zero.
    #[error("a burst max_batch or max_waiting of zero")]
    ZeroBurstBound,
    /// A concurrent `max` of zero.
    #[error("a concurrent max of zero")]
    ZeroMaxConcurrent,
}

impl InvalidConcurrency {
    /// The reason, as a static string (for [`StateError::InvalidRequest`](crate::StateError::InvalidRequest)).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ZeroQueueSize => "a queue max_size of zero",
            Self::ZeroDebounceInterval => "a zero debounce interval",
            Self::ZeroBurstWindow => "a zero burst window",
            Self::ZeroBurstBound => "a burst max_batch or max_waiting of zero",
            Self::ZeroMaxConcurrent => "a concurrent max of zero",
        }
    }
}

/// Options of [`Concurrency::Queue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueOptions {
    /// Most entries waiting on one scope. Default 10.
    pub max_size: usize,
    /// Which entry gives way when the queue is full. Default [`OnFull::DropOldest`].
    pub on_full: OnFull,
    /// A waiting entry older than this is recorded `Expired` instead of running.
    /// Default 90 s.
    pub entry_ttl: Duration,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            max_size: 10,
            on_full: OnFull::DropOldest,
            entry_ttl: default_entry_ttl(),
        }
    }
}

impl QueueOptions {
    /// Sets the bound on waiting entries.
    #[must_use]
    pub fn max_size(mut self, max_size: usize) -> Self {
        self.max_size = max_size;
        self
    }

    /// Sets which entry gives way when the queue is full.
    #[must_use]
    pub fn on_full(mut self, on_full: OnFull) -> Self {
        self.on_full = on_full;
        self
    }

    /// Sets how long an entry may wait.
    #[must_use]
    pub fn entry_ttl(mut self, entry_ttl: Duration) -> Self {
        self.entry_ttl = entry_ttl;
        self
    }
}

/// Which entry gives way when a queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum OnFull {
    /// The oldest waiting entry is evicted (recorded `Dropped`); the newcomer joins.
    #[default]
    DropOldest,
    /// The newcomer is acknowledged and recorded `Dropped`.
    DropNewest,
}

/// Options of [`Concurrency::Debounce`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DebounceOptions {
    /// The quiet period after the last replacement before the pending event runs.
    /// Default 1.5 s.
    pub interval: Duration,
    /// A pending event older than this when its holder takes it (the holder
    /// was busy with a long run) is recorded `Expired` instead of running.
    /// Default 90 s, as for the queue.
    #[serde(default = "default_entry_ttl")]
    pub entry_ttl: Duration,
}

impl Default for DebounceOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(1500),
            entry_ttl: default_entry_ttl(),
        }
    }
}

impl DebounceOptions {
    /// Sets the quiet interval.
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets how long the pending event may wait.
    #[must_use]
    pub fn entry_ttl(mut self, entry_ttl: Duration) -> Self {
        self.entry_ttl = entry_ttl;
        self
    }
}

/// The default time an entry may wait before it is recorded `Expired`: 90 s.
fn default_entry_ttl() -> Duration {
    Duration::from_secs(90)
}

/// Options of [`Concurrency::Burst`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BurstOptions {
    /// The fixed window the first event on an idle scope opens. Later arrivals
    /// never extend it. Default 1.5 s.
    pub window: Duration,
    /// Seal the batch early once this many members have joined. `None`: only the
    /// window seals it.
    pub max_batch: Option<usize>,
    /// Most events waiting on one scope, over all unsealed and sealed batches. An
    /// event past the bound is refused before the acknowledgement, so the platform
    /// retries it: nothing accepted is dropped. Default 100.
    pub max_waiting: usize,
    /// One handler call per batch, or one per member.
    pub mode: BurstMode,
    /// A member that waited longer than this when its batch is handed over
    /// (the holder was busy with earlier batches) is recorded `Expired`
    /// instead of running, in either mode. Default 90 s, as for the queue.
    #[serde(default = "default_entry_ttl")]
    pub entry_ttl: Duration,
}

impl Default for BurstOptions {
    fn default() -> Self {
        Self {
            window: Duration::from_millis(1500),
            max_batch: None,
            max_waiting: 100,
            mode: BurstMode::Collapse,
            entry_ttl: default_entry_ttl(),
        }
    }
}

impl BurstOptions {
    /// Sets the window length.
    #[must_use]
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Seals a batch early at this many members.
    #[must_use]
    pub fn max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = Some(max_batch);
        self
    }

    /// Sets the bound on waiting events.
    #[must_use]
    pub fn max_waiting(mut self, max_waiting: usize) -> Self {
        self.max_waiting = max_waiting;
        self
    }

    /// Sets the mode.
    #[must_use]
    pub fn mode(mut self, mode: BurstMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets how long a member may wait.
    #[must_use]
    pub fn entry_ttl(mut self, entry_ttl: Duration) -> Self {
        self.entry_ttl = entry_ttl;
        self
    }
}

/// How a sealed burst batch is handed to the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BurstMode {
    /// One call: the newest member as the event, the rest in join order as
    /// `skipped`.
    #[default]
    Collapse,
    /// One call per member, in join order, each with its own budget.
    Each,
}

/// Options of [`Concurrency::Concurrent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConcurrentOptions {
    /// Most handlers running on one scope at once, across all replicas. `None`:
    /// unbounded, and no state is kept beyond deduplication.
    pub max: Option<usize>,
}

impl ConcurrentOptions {
    /// Bounds the handlers per scope.
    #[must_use]
    pub fn max(mut self, max: usize) -> Self {
        self.max = Some(max);
        self
    }
}
