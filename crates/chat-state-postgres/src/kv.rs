//! [`KvStore`] on the `kv` table: each call one statement; an expired entry
//! is absent to every statement (judged by the server's clock) until a
//! sweep deletes it.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{KvStore, SetMode, StateError};

use crate::error::from_pg;
use crate::state::{PostgresState, ms};

#[async_trait]
impl KvStore for PostgresState {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        self.with(|client| async move {
            let statement = client
                .prepare_cached(&self.sql.kv_get)
                .await
                .map_err(from_pg)?;
            let row = client
                .query_opt(&statement, &[&self.namespace, &key])
                .await
                .map_err(from_pg)?;
            Ok(row.map(|r| Bytes::from(r.get::<_, Vec<u8>>(0))))
        })
        .await
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let ttl = ttl.map(ms);
        self.with(|client| async move {
            let value: &[u8] = &value;
            let written = match &mode {
                SetMode::IfEquals(expected) => {
                    let statement = client
                        .prepare_cached(&self.sql.kv_set_if_equals)
                        .await
                        .map_err(from_pg)?;
                    let expected: &[u8] = expected;
                    client
                        .execute(
                            &statement,
                            &[&self.namespace, &key, &value, &ttl, &expected],
                        )
                        .await
                        .map_err(from_pg)?
                }
                SetMode::IfAbsent => {
                    let statement = client
                        .prepare_cached(&self.sql.kv_set_if_absent)
                        .await
                        .map_err(from_pg)?;
                    client
                        .execute(&statement, &[&self.namespace, &key, &value, &ttl])
                        .await
                        .map_err(from_pg)?
                }
                _ => {
                    let statement = client
                        .prepare_cached(&self.sql.kv_set)
                        .await
                        .map_err(from_pg)?;
                    client
                        .execute(&statement, &[&self.namespace, &key, &value, &ttl])
                        .await
                        .map_err(from_pg)?
                }
            };
            Ok(written == 1)
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        self.with(|client| async move {
            let statement = client
                .prepare_cached(&self.sql.kv_delete)
                .await
                .map_err(from_pg)?;
            let row = client
                .query_opt(&statement, &[&self.namespace, &key])
                .await
                .map_err(from_pg)?;
            Ok(row.is_some_and(|r| r.get::<_, bool>(0)))
        })
        .await
    }
}
