//! [`PostgresState`]: the pool, the prepared SQL, and the call wrapper
//! every operation goes through.

use std::future::Future;
use std::time::Duration;

use chat_core::StateError;
use deadpool_postgres::{Object, Pool};

use crate::error::from_pool;
use crate::migrate::quote;

/// The state backend on PostgreSQL. Cheap to share (`Arc`); its `Debug`
/// never shows a password.
pub struct PostgresState {
    pub(crate) pool: Pool,
    pub(crate) sql: Sql,
    pub(crate) namespace: String,
    pub(crate) url: String,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for PostgresState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresState")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .field("pool_size", &self.pool.status().max_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresState {
    /// A builder: URL, schema, namespace, pool size, timeout.
    pub fn builder() -> crate::PostgresStateBuilder {
        crate::PostgresStateBuilder::default()
    }

    /// Runs `call` with a pooled connection, the whole of it (the wait for a
    /// connection included) bounded by the timeout.
    pub(crate) async fn with<T, F, Fut>(&self, call: F) -> Result<T, StateError>
    where
        F: FnOnce(Object) -> Fut,
        Fut: Future<Output = Result<T, StateError>>,
    {
        let timeout = self.timeout;
        tokio::time::timeout(timeout, async {
            let client = self.pool.get().await.map_err(|e| from_pool(e, timeout))?;
            call(client).await
        })
        .await
        .map_err(|_| StateError::Timeout(timeout))?
    }
}

/// Every statement the backend sends, written once for its schema.
#[derive(Debug)]
pub(crate) struct Sql {
    pub(crate) kv_get: String,
    pub(crate) kv_set: String,
    pub(crate) kv_set_if_absent: String,
    pub(crate) kv_set_if_equals: String,
    pub(crate) kv_delete: String,
}

impl Sql {
    pub(crate) fn new(schema: &str) -> Self {
        let s = quote(schema);
        let expiry = format!("CASE WHEN $4::bigint IS NULL THEN NULL ELSE {s}.now_ms() + $4 END");
        let live = format!("(kv.expires_ms IS NULL OR kv.expires_ms > {s}.now_ms())");
        Self {
            kv_get: format!(
                "SELECT value FROM {s}.kv WHERE ns = $1 AND key = $2 AND {live}"
            ),
            kv_set: format!(
                "INSERT INTO {s}.kv AS kv (ns, key, value, expires_ms) VALUES ($1, $2, $3, {expiry})
                 ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms"
            ),
            kv_set_if_absent: format!(
                "INSERT INTO {s}.kv AS kv (ns, key, value, expires_ms) VALUES ($1, $2, $3, {expiry})
                 ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms
                 WHERE NOT {live}"
            ),
            kv_set_if_equals: format!(
                "UPDATE {s}.kv AS kv SET value = $3, expires_ms = {expiry}
                 WHERE ns = $1 AND key = $2 AND value = $5 AND {live}"
            ),
            kv_delete: format!(
                "DELETE FROM {s}.kv AS kv WHERE ns = $1 AND key = $2 RETURNING {live}"
            ),
        }
    }
}

/// A duration in whole milliseconds, at least 1, as the database takes it.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}
