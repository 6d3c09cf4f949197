//! Where the Redis tests find their servers.
//!
//! * `REDIS_URL`: one Redis server (`cargo xtask ci` starts one on a free port
//!   when it is not set).
//! * `REDIS_CLUSTER_URLS`: comma-separated nodes of a Redis Cluster (`cargo xtask
//!   redis-cluster up` prints them; `cargo xtask ci` starts one).
//!
//! Without them the tests skip with a notice, except under `CI=true`, where a
//! missing server fails the test. Every harness gets a key prefix of its own, so
//! runs and cases never see each other's keys (sweeps included).

#![allow(dead_code)]
// The skip notice is the point: a skipped Redis test must be seen.
#![allow(clippy::print_stderr)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chat_state_redis::RedisState;
use chat_testkit::Harness;

/// The time unit of the conformance cases: far above a local round trip, so
/// Redis's own clock and the test's sleeps agree.
pub(crate) const UNIT: Duration = Duration::from_millis(200);

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

/// A backend on the single server, under a fresh prefix.
pub(crate) async fn single_state() -> Option<RedisState> {
    let url = server_env("REDIS_URL")?;
    let state = RedisState::builder()
        .url(url)
        .prefix(unique_prefix())
        .pool_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to REDIS_URL: {e} ({e:?})"));
    Some(state)
}

/// A backend on the cluster, under a fresh prefix.
pub(crate) async fn cluster_state() -> Option<RedisState> {
    let urls = server_env("REDIS_CLUSTER_URLS")?;
    let state = RedisState::builder()
        .cluster(urls.split(',').map(str::trim).filter(|u| !u.is_empty()))
        .prefix(unique_prefix())
        .pool_size(4)
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to REDIS_CLUSTER_URLS: {e} ({e:?})"));
    Some(state)
}

/// A conformance harness on the single server.
pub(crate) async fn single() -> Option<Harness> {
    Some(Harness::real_time(Arc::new(single_state().await?), UNIT))
}

/// A conformance harness on the cluster.
pub(crate) async fn cluster() -> Option<Harness> {
    Some(Harness::real_time(Arc::new(cluster_state().await?), UNIT))
}
