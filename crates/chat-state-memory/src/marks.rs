//! Dedupe marks, 32 bytes each: a mark exists for every delivery for the
//! dedupe TTL (hours), so its size is what the backend holds per delivery.
//!
//! A mark is keyed by a 128-bit digest of its tag and dedupe key and holds a
//! 64-bit digest of the request that set it, and its expiry (microseconds since
//! the shard's epoch) with what the admission recorded in the low byte. Both
//! digests are keyed SipHash, keyed at random per process, so no input can be
//! chosen to collide. Expired marks never count; they are dropped in one pass
//! at most once a minute, so purging costs no per-mark bookkeeping.

use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::time::Duration;

use chat_core::{DedupeKey, DropReason, LeaseToken, ScopeTag};
use tokio::time::Instant;

use crate::scope::Recorded;
use crate::split::SplitMap;

/// How often expired marks are dropped.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// Where a mark lives: a digest of its tag and dedupe key.
pub(crate) type Slot = (u64, u64);

#[derive(Debug, Clone, Copy)]
struct Mark {
    request: u64,
    /// Expiry in µs since the epoch, shifted left by 8, and the recorded code.
    until: u64,
}

#[derive(Debug)]
pub(crate) struct Marks {
    marks: SplitMap<Slot, Mark>,
    keys: (RandomState, RandomState),
    requests: RandomState,
    epoch: Instant,
    next_purge: Instant,
}

impl Default for Marks {
    fn default() -> Self {
        let epoch = Instant::now();
        Self {
            marks: SplitMap::default(),
            keys: (RandomState::new(), RandomState::new()),
            requests: RandomState::new(),
            epoch,
            next_purge: epoch + PURGE_EVERY,
        }
    }
}

/// What a live mark tells a new admission of its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seen {
    /// Set by another request: a duplicate.
    Other,
    /// Set by this very request, which recorded this: a repeat to replay.
    Same(Recorded),
}

impl Marks {
    pub(crate) fn slot(&self, tag: ScopeTag<'_>, key: &DedupeKey) -> Slot {
        let part = |h: &RandomState| {
            let mut h = h.build_hasher();
            tag.hash(&mut h);
            key.as_str().hash(&mut h);
            h.finish()
        };
        (part(&self.keys.0), part(&self.keys.1))
    }

    fn micros(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    /// The live mark at `slot`, as seen by `request`.
    pub(crate) fn seen(&self, slot: Slot, request: &LeaseToken, now: Instant) -> Option<Seen> {
        let mark = self.marks.get(&slot)?;
        if mark.until >> 8 <= self.micros(now) {
            return None;
        }
        if mark.request != self.requests.hash_one(request.as_str()) {
            return Some(Seen::Other);
        }
        Some(Seen::Same(decode(mark.until)))
    }

    /// Marks `slot` for `ttl`, by `request`, which recorded `recorded`.
    pub(crate) fn set(
        &mut self,
        slot: Slot,
        ttl: Duration,
        now: Instant,
        request: &LeaseToken,
        recorded: Recorded,
    ) {
        let ttl = u64::try_from(ttl.as_micros()).unwrap_or(u64::MAX);
        // 56 bits of microseconds: two thousand years.
        let expires = self.micros(now).saturating_add(ttl).min(u64::MAX >> 8);
        let mark = Mark {
            request: self.requests.hash_one(request.as_str()),
            until: expires << 8 | u64::from(encode(recorded)),
        };
        self.marks.insert(slot, mark);
    }

    /// Removes the mark at `slot`; whether a live one was there.
    pub(crate) fn remove(&mut self, slot: Slot, now: Instant) -> bool {
        let now = self.micros(now);
        self.marks.remove(&slot).is_some_and(|m| m.until >> 8 > now)
    }

    /// Drops expired marks, at most once every [`PURGE_EVERY`].
    pub(crate) fn purge(&mut self, now: Instant) {
        if now < self.next_purge {
            return;
        }
        self.next_purge = now + PURGE_EVERY;
        let now = self.micros(now);
        self.marks.retain(|m| m.until >> 8 > now);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.marks.len()
    }
}

fn encode(recorded: Recorded) -> u8 {
    match recorded {
        Recorded::Run => 0,
        Recorded::Hold => 1,
        Recorded::Queued => 2,
        Recorded::Pending => 3,
        Recorded::Dropped(DropReason::QueueFull) => 5,
        Recorded::Dropped(_) => 4,
        Recorded::Slot => 6,
        Recorded::WaitingForSlot => 7,
        Recorded::Cancel => 8,
    }
}

fn decode(until: u64) -> Recorded {
    match until & 0xff {
        0 => Recorded::Run,
        1 => Recorded::Hold,
        2 => Recorded::Queued,
        3 => Recorded::Pending,
        5 => Recorded::Dropped(DropReason::QueueFull),
        4 => Recorded::Dropped(DropReason::Busy),
        6 => Recorded::Slot,
        7 => Recorded::WaitingForSlot,
        _ => Recorded::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chat_core::{Platform, TenantId};

    #[test]
    fn a_mark_is_32_bytes_with_its_key() {
        assert_eq!(std::mem::size_of::<(Slot, Mark)>(), 32);
    }

    #[test]
    fn every_recorded_decision_round_trips() {
        for r in [
            Recorded::Run,
            Recorded::Hold,
            Recorded::Queued,
            Recorded::Pending,
            Recorded::Dropped(DropReason::Busy),
            Recorded::Dropped(DropReason::QueueFull),
            Recorded::Slot,
            Recorded::WaitingForSlot,
            Recorded::Cancel,
        ] {
            assert_eq!(
                format!("{:?}", decode(u64::from(encode(r)))),
                format!("{r:?}")
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn marks_expire_to_the_microsecond_and_are_purged_within_a_minute() {
        let mut marks = Marks::default();
        let tenant = TenantId::new("T1");
        let tag = ScopeTag {
            platform: Platform::SLACK,
            tenant: &tenant,
            channel: "C1",
        };
        let slot = marks.slot(tag, &DedupeKey::new("k"));
        let me = LeaseToken::generate();
        let t0 = Instant::now();
        marks.set(slot, Duration::from_millis(1500), t0, &me, Recorded::Queued);
        let later = t0 + Duration::from_micros(1_499_999);
        assert!(matches!(
            marks.seen(slot, &me, later),
            Some(Seen::Same(Recorded::Queued))
        ));
        assert!(matches!(
            marks.seen(slot, &LeaseToken::generate(), later),
            Some(Seen::Other)
        ));
        assert!(
            marks
                .seen(slot, &me, t0 + Duration::from_millis(1500))
                .is_none()
        );
        marks.purge(t0 + Duration::from_secs(2));
        assert_eq!(marks.len(), 1, "not yet a minute since the epoch");
        marks.purge(t0 + PURGE_EVERY);
        assert_eq!(marks.len(), 0);
    }
}
