//! Outcomes: every accepted delivery ends in exactly one, recorded as a `tracing`
//! event with a stable name and handed to the registered [`Observer`]s.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chat_core::{Event, EventId, ThreadRef};

/// How one delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler ran and returned `Ok`.
    Ran,
    /// The handler ran and returned an error (or panicked).
    Failed,
    /// The delivery was seen before.
    Duplicate,
    /// Acknowledged and not kept: scope busy under `Drop`, queue full, or evicted.
    Dropped,
    /// A newer event ran in its place (queue, debounce, burst collapse); it was
    /// handed to that run as skipped where the strategy does so.
    Superseded,
    /// It waited longer than its queue entry TTL or its budget allowed.
    Expired,
    /// Its handler lost the lease (renewal failed or the lease expired) and was
    /// cancelled. Not a final outcome any more: the event stays in flight and
    /// runs again under the scope's next holder. Kept for observers written
    /// against earlier versions; the runtime no longer records it.
    Preempted,
    /// Its handler ran past the budget and was cancelled.
    DeadlineExceeded,
    /// Its handler was cancelled by shutdown or a stop request.
    Cancelled,
    /// Refused before the acknowledgement (at capacity, a bound, shutting down, a
    /// failure before the ack): the platform will retry it.
    Rejected,
    /// No handler wants it (or it is the bot's own message).
    Ignored,
}

impl Outcome {
    /// The stable name of the outcome's `tracing` event.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ran => "handler-ran",
            Self::Failed => "handler-failed",
            Self::Duplicate => "message-duplicate",
            Self::Dropped => "message-dropped",
            Self::Superseded => "message-superseded",
            Self::Expired => "message-expired",
            Self::Preempted => "message-preempted",
            Self::DeadlineExceeded => "message-deadline-exceeded",
            Self::Cancelled => "message-cancelled",
            Self::Rejected => "message-rejected",
            Self::Ignored => "message-ignored",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One recorded outcome.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OutcomeRecord {
    /// The delivery's event id (empty when it was refused before parsing).
    pub event_id: EventId,
    /// Its thread, when known.
    pub thread: Option<ThreadRef>,
    /// How it ended.
    pub outcome: Outcome,
    /// A short machine-readable reason (`busy`, `queue-full`, `at-capacity`, …).
    pub reason: &'static str,
    /// For handler runs: how long the handler ran.
    pub ran_for: Option<Duration>,
    /// For cancelled handler runs: how long the handler took to return after it
    /// was cancelled.
    pub cancel_latency: Option<Duration>,
    /// For handler runs: when the handler returned, by the wall clock. A run's
    /// outcome is recorded once its batch is acknowledged, which can be later
    /// (the last member of a burst-each batch).
    pub ended_at: Option<std::time::SystemTime>,
}

impl OutcomeRecord {
    /// The record of `event`'s outcome.
    pub(crate) fn of(event: &Event, outcome: Outcome, reason: &'static str) -> Self {
        Self {
            event_id: event.id.clone(),
            thread: Some(event.thread.clone()),
            outcome,
            reason,
            ran_for: None,
            cancel_latency: None,
            ended_at: None,
        }
    }
}

/// Receives every outcome. Register with
/// [`BotBuilder::observer`](crate::BotBuilder::observer); tests use it to count.
/// Called inline: keep it quick and never block.
pub trait Observer: Send + Sync + 'static {
    /// Called once per outcome.
    fn on_outcome(&self, record: &OutcomeRecord);
}

impl<F: Fn(&OutcomeRecord) + Send + Sync + 'static> Observer for F {
    fn on_outcome(&self, record: &OutcomeRecord) {
        self(record);
    }
}

/// Records outcomes: a `tracing` event with the outcome's stable name, then each
/// observer.
#[derive(Clone, Default)]
pub(crate) struct Recorder {
    observers: Vec<Arc<dyn Observer>>,
    /// Whether outcome metrics carry the tenant.
    tenant_label: bool,
    /// The last [`RECENT_OUTCOMES`] outcomes, oldest first (for operators).
    /// Each shared with the rest of [`Recorder::record`] (its log line,
    /// metrics and observers), so keeping one costs no copy of its ids.
    recent: Arc<Mutex<VecDeque<Arc<OutcomeRecord>>>>,
}

/// How many outcomes [`Bot::recent_outcomes`](crate::Bot::recent_outcomes) keeps.
pub const RECENT_OUTCOMES: usize = 100;

impl Recorder {
    pub(crate) fn new(observers: Vec<Arc<dyn Observer>>, tenant_label: bool) -> Self {
        Self {
            observers,
            tenant_label,
            recent: Arc::default(),
        }
    }

    /// The last outcomes, newest first.
    pub(crate) fn recent(&self) -> Vec<OutcomeRecord> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent
            .iter()
            .rev()
            .map(|r| OutcomeRecord::clone(r))
            .collect()
    }

    fn remember(&self, r: Arc<OutcomeRecord>) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.len() == RECENT_OUTCOMES {
            recent.pop_front();
        }
        recent.push_back(r);
    }

    pub(crate) fn event(&self, event: &Event, outcome: Outcome, reason: &'static str) {
        self.record(OutcomeRecord::of(event, outcome, reason));
    }

    /// Logs `r`, keeps it among the recent outcomes, counts it and shows it
    /// to every observer.
    pub(crate) fn record(&self, r: OutcomeRecord) {
        let r = Arc::new(r);
        let id = r.event_id.as_str();
        // Formatted only when the line is written: most outcomes are below the
        // configured level.
        let thread = ThreadField(r.thread.as_ref());
        let reason = r.reason;
        // `tracing` needs the event name as a literal, hence one arm per outcome.
        macro_rules! emit {
            ($level:ident, $name:literal) => {
                tracing::$level!(name: $name, outcome = $name, event_id = id, thread = %thread, reason, ran_for = ?r.ran_for, cancel_latency = ?r.cancel_latency)
            };
        }
        match r.outcome {
            Outcome::Ran => emit!(info, "handler-ran"),
            Outcome::Failed => emit!(warn, "handler-failed"),
            Outcome::Duplicate => emit!(debug, "message-duplicate"),
            Outcome::Dropped => emit!(info, "message-dropped"),
            Outcome::Superseded => emit!(info, "message-superseded"),
            Outcome::Expired => emit!(info, "message-expired"),
            Outcome::Preempted => emit!(warn, "message-preempted"),
            Outcome::DeadlineExceeded => emit!(warn, "message-deadline-exceeded"),
            Outcome::Cancelled => emit!(info, "message-cancelled"),
            Outcome::Rejected => emit!(info, "message-rejected"),
            Outcome::Ignored => emit!(debug, "message-ignored"),
        }
        self.remember(Arc::clone(&r));
        crate::telemetry::outcome(
            r.thread.as_ref().map(|t| t.platform),
            r.thread
                .as_ref()
                .filter(|_| self.tenant_label)
                .map(|t| &t.tenant),
            r.outcome.name(),
            r.reason,
            r.ran_for,
            r.cancel_latency,
        );
        for o in &self.observers {
            o.on_outcome(&r);
        }
    }
}

/// A record's thread as a log field: empty when it has none.
struct ThreadField<'a>(Option<&'a ThreadRef>);

impl fmt::Display for ThreadField<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(t) => t.fmt(f),
            None => Ok(()),
        }
    }
}

/// The outcomes of one batch, recorded once the batch is acknowledged (its
/// `finish` landed): a holder that dies, loses its lease or hands the batch back
/// records nothing, and the holder that runs the batch again records them — so
/// every event's outcome is recorded exactly once across replicas.
#[derive(Default)]
#[must_use = "a batch's outcomes are committed or discarded"]
pub(crate) struct Records(Vec<OutcomeRecord>);

impl Records {
    pub(crate) fn push(&mut self, record: OutcomeRecord) {
        self.0.push(record);
    }

    pub(crate) fn event(&mut self, event: &Event, outcome: Outcome, reason: &'static str) {
        self.push(OutcomeRecord::of(event, outcome, reason));
    }

    /// The batch is acknowledged: record its outcomes.
    pub(crate) fn commit(self, recorder: &Recorder) {
        for r in self.0 {
            recorder.record(r);
        }
    }

    /// The batch is someone else's now (or its fate is unknown): it runs again
    /// there, and its outcomes are recorded there.
    pub(crate) fn discard(self) {
        if !self.0.is_empty() {
            tracing::debug!(
                name: "outcomes-discarded",
                count = self.0.len(),
                "the batch runs again under another holder"
            );
        }
    }
}
