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
    pub(crate) admit: String,
    pub(crate) renew: String,
    pub(crate) finish: String,
    pub(crate) release: String,
    pub(crate) release_slot: String,
    pub(crate) unmark: String,
    pub(crate) acquire_slot: String,
    pub(crate) request_cancel: String,
    pub(crate) claim: String,
    pub(crate) sweep_candidates: String,
    pub(crate) purge: String,
    pub(crate) subscribe: String,
    pub(crate) unsubscribe: String,
    pub(crate) is_subscribed: String,
    pub(crate) unsubscribe_tenant: String,
    pub(crate) busy_candidates: String,
    pub(crate) inspect: String,
    pub(crate) force_release: String,
}

/// `SELECT <schema>.<function>($1, …, $n)`.
fn call(schema: &str, function: &str, n: usize) -> String {
    let params: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
    format!("SELECT {schema}.{function}({})", params.join(", "))
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
            admit: call(&s, "admit", 23),
            renew: call(&s, "renew", 8),
            finish: call(&s, "finish", 8),
            release: call(&s, "release", 9),
            release_slot: call(&s, "release_slot", 8),
            unmark: call(&s, "unmark", 5),
            acquire_slot: call(&s, "acquire_slot", 8),
            request_cancel: call(&s, "request_cancel", 8),
            claim: call(&s, "claim", 7),
            sweep_candidates: format!("SELECT * FROM {s}.sweep_candidates($1, $2, $3)"),
            purge: call(&s, "purge", 2),
            subscribe: format!(
                "INSERT INTO {s}.subscriptions (ns, platform, tenant, channel, thread, expires_ms)
                 VALUES ($1, $2, $3, $4, $5, {s}.now_ms() + $6)
                 ON CONFLICT (ns, platform, tenant, channel, thread)
                 DO UPDATE SET expires_ms = EXCLUDED.expires_ms"
            ),
            unsubscribe: format!(
                "DELETE FROM {s}.subscriptions
                 WHERE ns = $1 AND platform = $2 AND tenant = $3 AND channel = $4 AND thread = $5
                 RETURNING expires_ms > {s}.now_ms()"
            ),
            is_subscribed: format!(
                "SELECT EXISTS (SELECT 1 FROM {s}.subscriptions
                 WHERE ns = $1 AND platform = $2 AND tenant = $3 AND channel = $4 AND thread = $5
                   AND expires_ms > {s}.now_ms())"
            ),
            unsubscribe_tenant: format!(
                "WITH d AS (DELETE FROM {s}.subscriptions
                            WHERE ns = $1 AND platform = $2 AND tenant = $3 RETURNING expires_ms)
                 SELECT count(*) FILTER (WHERE expires_ms > {s}.now_ms()) FROM d"
            ),
            busy_candidates: format!("SELECT * FROM {s}.busy_candidates($1, $2, $3, $4)"),
            inspect: call(&s, "inspect", 2),
            force_release: call(&s, "force_release", 6),
        }
    }
}

/// A duration in whole milliseconds, at least 1, as the database takes it.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}
