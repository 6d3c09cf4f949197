//! [`KvStore`]: a small key-value store with expiry, for what is not the
//! runtime's protocol state — installations (`chat-installations`), caches.
//!
//! A trait of its own, so that a store of installations needs nothing else;
//! and required of every [`StateBackend`](crate::StateBackend) (its
//! supertrait), because the runtime keeps shared records there too — the
//! user-lookup cache, the inspector's sessions — that every replica must see
//! (ADR 0019). The memory and Redis backends implement both; their KV lives
//! beside the protocol state under the same key prefix.
//!
//! # Contract
//!
//! * Each call is one atomic step: a `set` is seen whole or not at all.
//! * An entry with a TTL is gone (reads `None`, `delete` answers `false`,
//!   `IfAbsent` may write it again) once the TTL has passed on the store's clock.
//! * Keys are opaque UTF-8 strings chosen by the caller; the store may prefix
//!   them, never interpret them.
//! * Errors are [`StateError`]s of the store itself; [`StateError::Timeout`] and
//!   [`StateError::Unavailable`] say nothing about whether a `set` or `delete`
//!   ran. Every call is safe to repeat.
//!
//! `chat-testkit`'s `kv_store_conformance!` checks these rules.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::StateError;

/// How a [`KvStore::set`] writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SetMode {
    /// Always write.
    #[default]
    Always,
    /// Write only if the key is absent (or expired).
    IfAbsent,
    /// Write only if the entry's current value is exactly these bytes: a
    /// compare-and-set, for records several replicas update (an absent or
    /// expired entry never matches; use [`IfAbsent`](Self::IfAbsent) for
    /// the first write).
    IfEquals(Bytes),
}

/// A key-value store with optional expiry. Object-safe: users hold an
/// `Arc<dyn KvStore>`.
#[async_trait]
pub trait KvStore: Send + Sync + 'static {
    /// Reads an entry; `None` when absent or expired.
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError>;

    /// Writes an entry, with an optional TTL. Returns whether it was written
    /// (always `true` under [`SetMode::Always`]).
    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError>;

    /// Deletes an entry; returns whether a live one existed.
    async fn delete(&self, key: &str) -> Result<bool, StateError>;
}

/// A shared store is a store (`Arc<RedisState>`, `Arc<dyn KvStore>`).
#[async_trait]
impl<T: KvStore + ?Sized> KvStore for std::sync::Arc<T> {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        (**self).get(key).await
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        (**self).set(key, value, ttl, mode).await
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        (**self).delete(key).await
    }
}
