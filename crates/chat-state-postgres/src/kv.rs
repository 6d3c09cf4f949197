//! [`KvStore`] on the `kv` table: each call one prepared statement; an
//! expired entry is absent to every statement (judged by the server's
//! clock) until housekeeping deletes it.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{KvStore, SetMode, StateError};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::from_pg;
use crate::state::{PostgresState, ms};

impl PostgresState {
    /// Runs prepared statement `sql` with `params`: the rows it returned,
    /// or (for a statement without `RETURNING`) none and the count it
    /// changed.
    pub(crate) async fn statement(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<(Vec<Row>, u64), StateError> {
        self.with(|client| async move {
            let statement = client.prepare_cached(sql).await.map_err(from_pg)?;
            if statement.columns().is_empty() {
                let n = client.execute(&statement, params).await.map_err(from_pg)?;
                Ok((Vec::new(), n))
            } else {
                let rows = client.query(&statement, params).await.map_err(from_pg)?;
                let n = rows.len() as u64;
                Ok((rows, n))
            }
        })
        .await
    }
}

#[async_trait]
impl KvStore for PostgresState {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        let (rows, _) = self
            .statement(&self.sql.kv_get, &[&self.namespace, &key])
            .await?;
        Ok(rows.first().map(|r| Bytes::from(r.get::<_, Vec<u8>>(0))))
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let ttl = ttl.map(ms);
        let value: &[u8] = &value;
        let (_, written) = match &mode {
            SetMode::IfEquals(expected) => {
                let expected: &[u8] = expected;
                self.statement(
                    &self.sql.kv_set_if_equals,
                    &[&self.namespace, &key, &value, &ttl, &expected],
                )
                .await?
            }
            SetMode::IfAbsent => {
                self.statement(
                    &self.sql.kv_set_if_absent,
                    &[&self.namespace, &key, &value, &ttl],
                )
                .await?
            }
            _ => {
                self.statement(&self.sql.kv_set, &[&self.namespace, &key, &value, &ttl])
                    .await?
            }
        };
        Ok(written == 1)
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        let (rows, _) = self
            .statement(&self.sql.kv_delete, &[&self.namespace, &key])
            .await?;
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }
}
