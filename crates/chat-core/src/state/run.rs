//! A run's report and the batch it works on.

use super::*;

/// An outcome the backend decided for an event while admitting another, handed
/// to the scope's holder to record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The event's id (empty when even that could not be read).
    pub event_id: EventId,
    /// Its thread, when known.
    pub thread: Option<ThreadRef>,
    /// What happened to it.
    pub fate: Fate,
}

impl Report {
    /// Builds a report (for backends).
    pub fn new(event_id: EventId, thread: Option<ThreadRef>, fate: Fate) -> Self {
        Self {
            event_id,
            thread,
            fate,
        }
    }
}

/// What happened to a reported event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fate {
    /// Evicted from a full queue (`DropOldest`): record it `Dropped`.
    Evicted,
    /// Replaced by a newer debounce event: record it `Superseded`.
    Superseded,
    /// A stored entry that could not be decoded: record it `Failed`.
    Undecodable,
}

/// What a holder gets from [`Coordination::finish`] (or a recovered slot run from
/// [`Coordination::sweep`]): a numbered batch, in flight under its lease until
/// the holder's next call acknowledges it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Batch {
    /// The batch's number on its lease: the holder now holds the lease at this
    /// [`seq`](Lease::seq) ([`Lease::at`]).
    pub seq: u64,
    /// How many times the batch has been handed out, this time included: 1 the
    /// first time, more when it was adopted from a holder that did not finish it.
    pub attempt: u32,
    /// How many of its holders lost it without handing it back (died, were
    /// killed, or paused past their TTL). Runtimes bound it (max attempts).
    pub lapses: u32,
    /// The entries to plan and run, oldest first. Queue: every waiting entry.
    /// Debounce: the pending event once quiet. Burst: the oldest sealed batch.
    pub entries: Vec<Waiting>,
    /// Outcomes decided for other events (the scope's outbox).
    pub reports: Vec<Report>,
}

impl Batch {
    /// A first hand-out (for backends).
    pub fn new(seq: u64, entries: Vec<Waiting>, reports: Vec<Report>) -> Self {
        Self {
            seq,
            attempt: 1,
            lapses: 0,
            entries,
            reports,
        }
    }

    /// Sets the attempt count and lapses (for backends handing a batch out
    /// again).
    #[must_use]
    pub fn attempts(mut self, attempt: u32, lapses: u32) -> Self {
        self.attempt = attempt;
        self.lapses = lapses;
        self
    }
}
