//! Acknowledged batches, remembered for a while so that a repeated call (its
//! first reply lost) is answered `Released` again. One set per shard, apart
//! from the scopes' records, so a scope's record still goes when the scope is
//! idle; expired entries leave in order, so remembering costs O(1) per
//! acknowledgement.

use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};

use chat_core::LeaseToken;
use tokio::time::Instant;

use crate::split::SplitMap;

#[derive(Debug, Default)]
pub(crate) struct Acked {
    hasher: RandomState,
    /// (token digest, seq) → until when.
    until: SplitMap<(u64, u64), Instant>,
    /// The same, oldest first.
    order: VecDeque<(Instant, (u64, u64))>,
}

impl Acked {
    fn key(&self, token: &LeaseToken, seq: u64) -> (u64, u64) {
        (self.hasher.hash_one(token.as_str()), seq)
    }

    /// Remembers that `token`'s batch `seq` was acknowledged, until `until`.
    pub(crate) fn insert(&mut self, token: &LeaseToken, seq: u64, until: Instant) {
        let key = self.key(token, seq);
        self.until.insert(key, until);
        self.order.push_back((until, key));
    }

    /// Whether `token`'s batch `seq` was acknowledged and is still remembered.
    pub(crate) fn contains(&self, token: &LeaseToken, seq: u64, now: Instant) -> bool {
        self.until
            .get(&self.key(token, seq))
            .is_some_and(|t| *t > now)
    }

    /// Forgets what expired.
    pub(crate) fn purge(&mut self, now: Instant) {
        while let Some((at, key)) = self.order.front().copied() {
            if at > now {
                break;
            }
            self.order.pop_front();
            if self.until.get(&key).is_some_and(|t| *t <= now) {
                self.until.remove(&key);
            }
        }
        // After a burst, give the memory back.
        if self.order.capacity() > 64 && self.order.len() * 4 < self.order.capacity() {
            self.until.retain(|_| true);
            self.order.shrink_to(self.order.len() * 2);
        }
    }
}
