//! Where the Redis tests find their servers: `chat-test-redis` reads
//! `REDIS_URL` / `REDIS_CLUSTER_URLS` (skipping with a notice without them,
//! failing under `CI=true`); this connects a backend to one under a key prefix
//! of its own, so runs and cases never see each other's keys (sweeps
//! included); nothing is ever flushed.

#![allow(dead_code)]

use chat_state_redis::RedisState;
#[allow(unused_imports)]
pub(crate) use chat_test_redis::{Deployment, server_env, unique_prefix};

/// A backend (with a connection pool of its own) on `deployment` under `prefix`.
pub(crate) async fn connect(deployment: &Deployment, prefix: &str) -> RedisState {
    let builder = match deployment {
        Deployment::Single(url) => RedisState::builder().url(url.as_str()),
        Deployment::Cluster(urls) => RedisState::builder().cluster(urls.iter().cloned()),
    };
    builder
        .prefix(prefix)
        .pool_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to {}: {e} ({e:?})", deployment.var()))
}

/// A backend on the single server, under a fresh prefix.
pub(crate) async fn single_state() -> Option<RedisState> {
    Some(connect(&Deployment::single()?, &unique_prefix()).await)
}

/// A backend on the cluster, under a fresh prefix.
pub(crate) async fn cluster_state() -> Option<RedisState> {
    Some(connect(&Deployment::cluster()?, &unique_prefix()).await)
}
