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
    order: Chunks<(Instant, (u64, u64))>,
}

/// How many entries one chunk of [`Chunks`] holds.
const CHUNK: usize = 4096;

/// A first-in first-out queue in chunks: growing it allocates a chunk and
/// never copies what it holds (a `VecDeque` of hundreds of thousands of
/// memos copies all of them when it grows, under the shard's lock); a chunk
/// drained at the front is freed.
#[derive(Debug)]
struct Chunks<T> {
    chunks: VecDeque<VecDeque<T>>,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Self {
            chunks: VecDeque::new(),
        }
    }
}

impl<T: Copy> Chunks<T> {
    fn push_back(&mut self, item: T) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < CHUNK => last.push_back(item),
            _ => {
                let mut chunk = VecDeque::with_capacity(CHUNK);
                chunk.push_back(item);
                self.chunks.push_back(chunk);
            }
        }
    }

    fn front(&self) -> Option<T> {
        self.chunks.front()?.front().copied()
    }

    /// Removes the front item; whether that freed a chunk.
    fn pop_front(&mut self) -> bool {
        let Some(first) = self.chunks.front_mut() else {
            return false;
        };
        first.pop_front();
        if first.is_empty() {
            self.chunks.pop_front();
            return true;
        }
        false
    }
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
        let mut freed = false;
        while let Some((at, key)) = self.order.front() {
            if at > now {
                break;
            }
            freed |= self.order.pop_front();
            if self.until.get(&key).is_some_and(|t| *t <= now) {
                self.until.remove(&key);
            }
        }
        // After a burst, give the memory back: the drained chunks are gone;
        // the map's parts shrink once few memos are left.
        if freed && self.order.chunks.len() <= 1 {
            self.until.retain(|_| true);
        }
    }
}
