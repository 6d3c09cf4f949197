//! The PostgreSQL the tests use: `DATABASE_URL` (`cargo xtask ci` starts
//! one); without it a test skips with a notice, and fails under `CI=true`.
//! Every case works in one schema, `chat_conformance`, under a namespace
//! of its own, so nothing is ever dropped on a server the tests did not
//! start.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use chat_state_postgres::PostgresState;
use chat_testkit::{Harness, KvHarness};

/// The schema the tests migrate and share.
pub(crate) const SCHEMA: &str = "chat_conformance";

/// One time unit of the real-time cases.
pub(crate) const UNIT: Duration = Duration::from_millis(200);

/// A store under a namespace of its own, or `None` (skipped).
pub(crate) async fn state() -> Option<PostgresState> {
    state_in(&chat_test_postgres::unique_schema()).await
}

/// A store (a pool of its own) under `namespace`, or `None` (skipped).
pub(crate) async fn state_in(namespace: &str) -> Option<PostgresState> {
    let url = chat_test_postgres::database_url()?;
    let state = PostgresState::builder()
        .url(url)
        .schema(SCHEMA)
        .namespace(namespace)
        .pool_size(4)
        .build()
        .await;
    match state {
        Ok(s) => Some(s),
        Err(e) => panic!("DATABASE_URL is set but the store cannot be built: {e:?}"),
    }
}

/// A KV harness on a store of its own, or `None` (skipped).
pub(crate) async fn kv() -> Option<KvHarness> {
    Some(KvHarness::real_time(Arc::new(state().await?), UNIT))
}

/// A conformance harness on a store of its own, or `None` (skipped).
pub(crate) async fn harness() -> Option<Harness> {
    Some(Harness::real_time(Arc::new(state().await?), UNIT))
}
