//! Where the Redis tests find their servers. Shared by this crate's tests and
//! chat-runtime's scenario tests (which include this file by path).
//!
//! * `REDIS_URL`: one Redis server (`cargo xtask ci` starts one on a free port
//!   when it is not set).
//! * `REDIS_CLUSTER_URLS`: comma-separated nodes of a Redis Cluster (`cargo xtask
//!   redis-cluster up` prints them; `cargo xtask ci` starts one).
//!
//! Without them the tests skip with a notice, except under `CI=true`, where a
//! missing server fails the test. Every backend gets a key prefix of its own
//! (or shares one on purpose, as replicas do), so runs and cases never see each
//! other's keys (sweeps included); nothing is ever flushed.

#![allow(dead_code)]
// The skip notice is the point: a skipped Redis test must be seen.
#![allow(clippy::print_stderr)]

use std::sync::atomic::{AtomicU64, Ordering};

use chat_state_redis::RedisState;

fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The value of `var`, or `None` after a loud notice (a failure under CI).
pub(crate) fn server_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if is_ci() => panic!("{var} is not set and CI=true: the Redis tests must run in CI"),
        _ => {
            eprintln!(
                "\n!!! SKIPPED: {var} is not set, so this Redis test did not run.\n\
                 !!! Run `cargo xtask ci` (it starts Redis itself) or set {var}.\n"
            );
            None
        }
    }
}

/// A key prefix no other harness, test or run uses.
pub(crate) fn unique_prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "chat-test-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        chat_core::LeaseToken::generate()
            .as_str()
            .get(..8)
            .unwrap_or("")
    )
}

/// A configured Redis deployment.
#[derive(Debug, Clone)]
pub(crate) enum Server {
    /// One server (`REDIS_URL`).
    Single(String),
    /// A Redis Cluster, through these nodes (`REDIS_CLUSTER_URLS`).
    Cluster(Vec<String>),
}

impl Server {
    /// The single server, or `None` after the skip notice.
    pub(crate) fn single() -> Option<Self> {
        Some(Self::Single(server_env("REDIS_URL")?))
    }

    /// The cluster, or `None` after the skip notice.
    pub(crate) fn cluster() -> Option<Self> {
        let urls = server_env("REDIS_CLUSTER_URLS")?;
        Some(Self::Cluster(
            urls.split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned)
                .collect(),
        ))
    }

    /// A backend (with a connection pool of its own) under `prefix`.
    pub(crate) async fn connect(&self, prefix: &str) -> RedisState {
        let (builder, var) = match self {
            Self::Single(url) => (RedisState::builder().url(url.as_str()), "REDIS_URL"),
            Self::Cluster(urls) => (
                RedisState::builder().cluster(urls.iter().cloned()),
                "REDIS_CLUSTER_URLS",
            ),
        };
        builder
            .prefix(prefix)
            .pool_size(4)
            .build()
            .await
            .unwrap_or_else(|e| panic!("connecting to {var}: {e} ({e:?})"))
    }
}

/// A backend on the single server, under a fresh prefix.
pub(crate) async fn single_state() -> Option<RedisState> {
    Some(Server::single()?.connect(&unique_prefix()).await)
}

/// A backend on the cluster, under a fresh prefix.
pub(crate) async fn cluster_state() -> Option<RedisState> {
    Some(Server::cluster()?.connect(&unique_prefix()).await)
}
