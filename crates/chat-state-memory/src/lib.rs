//! # chat-state-memory
//!
//! A [`StateBackend`] in process memory: the reference semantics of the contract,
//! for single-process bots and for tests. Time is `tokio::time`, so tests that
//! pause the clock (`#[tokio::test(start_paused = true)]`) drive lease, queue,
//! debounce and burst expiry deterministically.
//!
//! State is split into shards by scope tag (platform, tenant, channel): every key
//! one operation touches lives in one shard, so each operation is one short
//! critical section with no `.await` inside, and work on one scope never waits
//! behind another shard.
//!
//! ```
//! use std::sync::Arc;
//! use chat_core::{AdmitRequest, Concurrency, Coordination, Decision};
//! use chat_state_memory::MemoryState;
//! # use chat_core::{Author, Event, EventKind, Message, Platform, ThreadRef};
//! # fn event(id: &str) -> Event {
//! #     let thread = ThreadRef::new(Platform::new("test"), "T1", "C1", "1.0");
//! #     let text = Message::new(id, Author::default(), id).with_mention(true);
//! #     Event::new(id, id, thread, EventKind::Message(text))
//! # }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
//! let state = MemoryState::new();
//! let a = event("a");
//! let scope = a.thread.thread_scope();
//!
//! // The first event on an idle scope gets the lease …
//! let first = state.admit(AdmitRequest::new(a, scope.clone(), Concurrency::queue())).await?;
//! let Decision::Run(lease) = first.decision else { panic!("expected the lease") };
//!
//! // … the next one waits in the scope's queue …
//! let second = state.admit(AdmitRequest::new(event("b"), scope, Concurrency::queue())).await?;
//! assert!(matches!(second.decision, Decision::Queued { depth: 1, .. }));
//!
//! // … and is handed to the holder when it finishes, in the same atomic step.
//! let handoff = state.finish(&lease).await?;
//! assert!(matches!(handoff, chat_core::Handoff::Run(ref batch) if batch.entries.len() == 1));
//! # Ok::<_, Box<dyn std::error::Error>>(()) })
//! # }
//! ```

#![forbid(unsafe_code)]

mod acked;
mod marks;
mod scope;
mod shard;
mod split;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, Coordination, DedupeKey, ForceRelease,
    Handoff, Inspection, KvStore, Lease, LeaseToken, Platform, Recovered, Release, Renewal,
    ScopeFilter, ScopeKey, ScopeTag, ScopeView, SetMode, SlotGrant, StateBackend, StateError,
    Subscriptions, Sweep, TenantId, ThreadRef,
};
use tokio::time::Instant;

use crate::shard::Shard;

/// Number of shards when none is given: enough that two busy scopes rarely share
/// one on a many-core machine.
const DEFAULT_SHARDS: usize = 64;

/// The in-memory [`StateBackend`]. Cheap to share: wrap it in an `Arc`.
#[derive(Debug)]
pub struct MemoryState {
    shards: Box<[Mutex<Shard>]>,
    hasher: ShardHasher,
    /// Fencing numbers come from one counter, so they grow across every grant on
    /// every scope — and so, in particular, per scope — even after a scope's
    /// record is dropped when it goes idle. It starts at the wall clock in
    /// microseconds, like the Redis backend's floor, so fences keep growing
    /// across restarts of a process that writes them to its own store.
    fence: AtomicU64,
    kv: Mutex<HashMap<String, KvEntry>>,
    /// Where the next sweep starts in the list of recoverable scopes.
    sweep_start: AtomicUsize,
}

/// Picks a scope's shard (ADR 0032); its `Debug` leaves out the seed.
#[derive(Default)]
struct ShardHasher(foldhash::fast::RandomState);

impl std::fmt::Debug for ShardHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShardHasher { .. }")
    }
}

#[derive(Debug)]
struct KvEntry {
    value: Bytes,
    expires_at: Option<Instant>,
}

impl KvEntry {
    fn live(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|t| t > now)
    }
}

impl Default for MemoryState {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryState {
    /// An empty backend with the default number of shards.
    pub fn new() -> Self {
        Self::with_shards(DEFAULT_SHARDS)
    }

    /// An empty backend with `shards` shards (at least one).
    pub fn with_shards(shards: usize) -> Self {
        Self {
            shards: (0..shards.max(1))
                .map(|_| Mutex::new(Shard::default()))
                .collect(),
            hasher: ShardHasher::default(),
            fence: AtomicU64::new(wall_clock_micros()),
            kv: Mutex::new(HashMap::new()),
            sweep_start: AtomicUsize::new(0),
        }
    }

    fn shard(&self, tag: ScopeTag<'_>) -> MutexGuard<'_, Shard> {
        let hash = self.hasher.0.hash_one(tag);
        let index = usize::try_from(hash % self.shards.len() as u64).unwrap_or(0);
        lock(&self.shards[index])
    }

    fn next_fence(&self) -> u64 {
        self.fence.fetch_add(1, Ordering::Relaxed) + 1
    }
}

fn wall_clock_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A panic while a shard was locked cannot leave it half-updated (every update is
/// a few plain assignments), so a poisoned lock is taken over.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl Coordination for MemoryState {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        if request.scope.tag() != request.event.thread.scope_tag() {
            return Err(StateError::InvalidRequest(
                "the scope's tag differs from its event's thread",
            ));
        }
        let mut shard = self.shard(request.scope.tag());
        shard.admit(&request, Instant::now(), || self.next_fence())
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        Ok(self
            .shard(lease.scope().tag())
            .renew(lease, ttl, Instant::now()))
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        Ok(self
            .shard(lease.scope().tag())
            .finish(lease, Instant::now()))
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        Ok(self
            .shard(lease.scope().tag())
            .release(lease, how, Instant::now()))
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        let tag = thread.scope_tag();
        Ok(self.shard(tag).unmark(tag, key, Instant::now()))
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        if max == Some(0) {
            return Err(StateError::InvalidRequest("a slot maximum of zero"));
        }
        Ok(self
            .shard(scope.tag())
            .acquire_slot(scope, token, max, ttl, Instant::now(), || self.next_fence()))
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        if request.scope.tag() != request.thread.scope_tag() {
            return Err(StateError::InvalidRequest(
                "the scope's tag differs from its event's thread",
            ));
        }
        Ok(self
            .shard(request.scope.tag())
            .request_cancel(&request, Instant::now()))
    }

    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError> {
        let now = Instant::now();
        // Expired KV entries go here too, not only when read: a key written
        // once and never read again must not stay for the process's life.
        lock(&self.kv).retain(|_, e| e.live(now));
        let mut scopes: Vec<ScopeKey> = self
            .shards
            .iter()
            .flat_map(|shard| lock(shard).recoverable(request, now))
            .collect();
        // Each sweep starts where the last one stopped, so a limit reached
        // early does not always favour the same scopes.
        if !scopes.is_empty() {
            let start = self.sweep_start.load(Ordering::Relaxed) % scopes.len();
            scopes.rotate_left(start);
        }
        let mut recovered = Vec::new();
        for scope in scopes {
            if recovered.len() >= request.limit {
                break;
            }
            self.sweep_start.fetch_add(1, Ordering::Relaxed);
            let room = request.limit - recovered.len();
            recovered.extend(self.shard(scope.tag()).recover(
                &scope,
                request.lease_ttl,
                room,
                now,
                || self.next_fence(),
            ));
        }
        Ok(recovered)
    }
}

#[async_trait]
impl Subscriptions for MemoryState {
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        self.shard(thread.scope_tag())
            .subscribe(thread, ttl, Instant::now());
        Ok(())
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        Ok(self
            .shard(thread.scope_tag())
            .unsubscribe(thread, Instant::now()))
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        Ok(self
            .shard(thread.scope_tag())
            .is_subscribed(thread, Instant::now()))
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        let now = Instant::now();
        let mut removed = 0;
        // One shard at a time: admissions elsewhere go on meanwhile.
        for shard in &self.shards {
            removed += lock(shard).unsubscribe_tenant(platform, tenant, now);
        }
        Ok(removed)
    }
}

#[async_trait]
impl Inspection for MemoryState {
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        let now = Instant::now();
        let mut out = Vec::new();
        for shard in &self.shards {
            let room = limit.saturating_sub(out.len());
            if room == 0 {
                break;
            }
            out.extend(lock(shard).busy_scopes(filter, room, now));
        }
        Ok(out)
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        Ok(self.shard(scope.tag()).inspect_scope(scope, Instant::now()))
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        Ok(self
            .shard(scope.tag())
            .force_release(scope, fence, Instant::now()))
    }
}

#[async_trait]
impl StateBackend for MemoryState {
    async fn health(&self) -> Result<(), StateError> {
        Ok(())
    }

    /// State in one process: nothing handed back at shutdown would run.
    fn shared(&self) -> bool {
        false
    }
}

#[async_trait]
impl KvStore for MemoryState {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        let now = Instant::now();
        let mut kv = lock(&self.kv);
        match kv.get(key) {
            Some(e) if e.live(now) => Ok(Some(e.value.clone())),
            Some(_) => {
                kv.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let now = Instant::now();
        let mut kv = lock(&self.kv);
        let current = kv.get(key).filter(|e| e.live(now)).map(|e| &e.value);
        let allowed = match &mode {
            SetMode::IfAbsent => current.is_none(),
            SetMode::IfEquals(expected) => current == Some(expected),
            _ => true,
        };
        if !allowed {
            return Ok(false);
        }
        let expires_at = ttl.map(|ttl| now + ttl);
        kv.insert(key.to_owned(), KvEntry { value, expires_at });
        Ok(true)
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        let now = Instant::now();
        Ok(lock(&self.kv).remove(key).is_some_and(|e| e.live(now)))
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use chat_core::{KvStore, SetMode};

    #[tokio::test(start_paused = true)]
    async fn the_sweep_removes_expired_kv_entries_nobody_reads() -> Result<(), StateError> {
        let state = MemoryState::new();
        for i in 0..100 {
            state
                .set(
                    &format!("k{i}"),
                    Bytes::from_static(b"v"),
                    Some(Duration::from_secs(1)),
                    SetMode::Always,
                )
                .await?;
        }
        state
            .set("kept", Bytes::from_static(b"v"), None, SetMode::Always)
            .await?;
        assert_eq!(lock(&state.kv).len(), 101);
        tokio::time::advance(Duration::from_secs(2)).await;
        state
            .sweep(&Sweep::new(Duration::from_secs(30), 10))
            .await?;
        assert_eq!(
            lock(&state.kv).len(),
            1,
            "only the entry without a TTL is left"
        );
        assert!(state.get("kept").await?.is_some());
        Ok(())
    }

    use super::*;
    use chat_core::{AdmitRequest, Concurrency, Decision};
    use chat_testkit::EventBuilder;

    /// The shard hasher's seed decides which scopes share a shard: `Debug`
    /// (in a log line, a panic message) never shows it.
    #[test]
    fn debug_leaves_out_the_shard_hashers_seed() {
        let shown = format!("{:?}", MemoryState::with_shards(2));
        assert!(shown.contains("ShardHasher { .. }"), "{shown}");
        assert!(!shown.contains("seed"), "{shown}");
    }

    /// Fences start from the wall clock (µs), like the Redis backend's floor,
    /// so a new process never hands out a fence an earlier one already used.
    #[tokio::test]
    async fn fences_are_seeded_from_the_wall_clock() -> Result<(), StateError> {
        let before = wall_clock_micros();
        let state = MemoryState::new();
        let thread = chat_core::ThreadRef::new(chat_core::Platform::new("test"), "T", "C", "1");
        let e = EventBuilder::new(thread.clone())
            .id("a")
            .mention("a")
            .build();
        let req = AdmitRequest::new(e, thread.thread_scope(), Concurrency::Drop);
        let Decision::Run(lease) = state.admit(req).await?.decision else {
            panic!("no lease");
        };
        assert!(lease.fence() > before, "fence {} ≤ {before}", lease.fence());
        Ok(())
    }
}
