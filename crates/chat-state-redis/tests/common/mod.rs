//! The Redis tests' harnesses; where they find their servers is in
//! `servers.rs`.

#![allow(dead_code)]

pub(crate) mod servers;

use std::sync::Arc;
use std::time::Duration;

use chat_testkit::{Harness, KvHarness};

use servers::{cluster_state, single_state};

/// The time unit of the conformance cases: far above a local round trip, so
/// Redis's own clock and the test's sleeps agree.
pub(crate) const UNIT: Duration = Duration::from_millis(200);

/// A conformance harness on the single server.
pub(crate) async fn single() -> Option<Harness> {
    Some(Harness::real_time(Arc::new(single_state().await?), UNIT))
}

/// A conformance harness on the cluster.
pub(crate) async fn cluster() -> Option<Harness> {
    Some(Harness::real_time(Arc::new(cluster_state().await?), UNIT))
}

/// A KV conformance harness on the single server.
pub(crate) async fn single_kv() -> Option<KvHarness> {
    Some(KvHarness::real_time(Arc::new(single_state().await?), UNIT))
}

/// A KV conformance harness on the cluster.
pub(crate) async fn cluster_kv() -> Option<KvHarness> {
    Some(KvHarness::real_time(Arc::new(cluster_state().await?), UNIT))
}
