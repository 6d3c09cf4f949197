//! A hash map in 64 parts, chosen by the top bits of the key's first digest
//! word. A `HashMap` that grows rehashes every entry at once, under the
//! shard's lock: with hundreds of thousands of dedupe marks that is a pause
//! of tens of milliseconds for every delivery of the shard. In parts, a
//! growth rehashes one part, a sixty-fourth of it. Keys are keyed digests,
//! so the parts fill evenly.

use foldhash::{HashMap, HashMapExt};
use std::hash::Hash;

const PARTS: usize = 64;

/// A key made of digest words: the first one's top bits pick its part.
pub(crate) trait Digested {
    fn part(&self) -> usize;
}

impl Digested for (u64, u64) {
    fn part(&self) -> usize {
        usize::try_from(self.0 >> 58).unwrap_or(0) % PARTS
    }
}

#[derive(Debug)]
pub(crate) struct SplitMap<K, V> {
    parts: Vec<HashMap<K, V>>,
}

impl<K, V> Default for SplitMap<K, V> {
    fn default() -> Self {
        Self {
            parts: (0..PARTS).map(|_| HashMap::new()).collect(),
        }
    }
}

impl<K: Digested + Hash + Eq, V> SplitMap<K, V> {
    fn part(&self, key: &K) -> &HashMap<K, V> {
        &self.parts[key.part()]
    }

    fn part_mut(&mut self, key: &K) -> &mut HashMap<K, V> {
        &mut self.parts[key.part()]
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.part(key).get(key)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) {
        self.part_mut(&key).insert(key, value);
    }

    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        self.part_mut(key).remove(key)
    }

    /// Keeps the entries `keep` says to, and gives back the room of parts
    /// left mostly empty.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        for part in &mut self.parts {
            part.retain(|_, v| keep(v));
            if part.capacity() > 64 && part.len() * 4 < part.capacity() {
                part.shrink_to(part.len() * 2);
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_the_parts_and_read_back() {
        let mut map = SplitMap::default();
        for i in 0..6400_u64 {
            let key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i);
            map.insert(key, i);
        }
        assert_eq!(map.len(), 6400);
        assert!(map.parts.iter().all(|p| p.len() > 50), "uneven parts");
        let key = (7_u64.wrapping_mul(0x9E37_79B9_7F4A_7C15), 7);
        assert_eq!(map.get(&key), Some(&7));
        assert_eq!(map.remove(&key), Some(7));
        map.retain(|v| v % 2 == 0);
        assert_eq!(map.len(), 3200);
    }
}
