//! Connection pools: deadpool over deadpool-redis's managers, for one server or a
//! cluster.
//!
//! deadpool-redis checks every connection it hands out with a `PING`, which
//! would make each state call two round trips. The managers here check only a
//! connection that sat idle for a while; a connection that fails a call is
//! dropped from the pool instead (see [`Conn::discard`]), so `admit` stays one
//! round trip.

use std::time::Duration;

use deadpool::managed::{self, Metrics, Object, Pool, RecycleResult};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, Value};

/// A connection unused for longer than this is checked with a `PING` before it
/// is handed out again.
pub(crate) const IDLE_CHECK: Duration = Duration::from_secs(10);

/// Connections to one server.
pub(crate) struct SingleManager {
    pub(crate) inner: deadpool_redis::Manager,
}

impl managed::Manager for SingleManager {
    type Type = MultiplexedConnection;
    type Error = RedisError;

    async fn create(&self) -> Result<MultiplexedConnection, RedisError> {
        managed::Manager::create(&self.inner).await
    }

    async fn recycle(
        &self,
        conn: &mut MultiplexedConnection,
        metrics: &Metrics,
    ) -> RecycleResult<RedisError> {
        if metrics.last_used() < IDLE_CHECK {
            return Ok(());
        }
        managed::Manager::recycle(&self.inner, conn, metrics).await
    }
}

/// Connections to a cluster (each one reaches every node and follows slot
/// moves by itself).
pub(crate) struct ClusterManager {
    pub(crate) inner: deadpool_redis::cluster::Manager,
}

impl managed::Manager for ClusterManager {
    type Type = ClusterConnection;
    type Error = RedisError;

    async fn create(&self) -> Result<ClusterConnection, RedisError> {
        managed::Manager::create(&self.inner).await
    }

    async fn recycle(
        &self,
        conn: &mut ClusterConnection,
        metrics: &Metrics,
    ) -> RecycleResult<RedisError> {
        if metrics.last_used() < IDLE_CHECK {
            return Ok(());
        }
        managed::Manager::recycle(&self.inner, conn, metrics).await
    }
}

/// Gauge: pooled connections in use, sampled at each checkout.
pub(crate) const POOL_IN_USE: &str = "chat_redis_pool_in_use";
/// Gauge: callers waiting for a pooled connection, sampled at each checkout.
pub(crate) const POOL_WAITING: &str = "chat_redis_pool_waiting";

/// The pool of a [`RedisState`](crate::RedisState).
pub(crate) enum Pools {
    Single(Pool<SingleManager>),
    Cluster(Pool<ClusterManager>),
}

impl Pools {
    pub(crate) async fn get(&self) -> Result<Conn, managed::PoolError<RedisError>> {
        let conn = match self {
            Self::Single(p) => Conn::Single(p.get().await?),
            Self::Cluster(p) => Conn::Cluster(p.get().await?),
        };
        let status = match self {
            Self::Single(p) => p.status(),
            Self::Cluster(p) => p.status(),
        };
        // Sampled at each checkout: connections handed out (this one
        // included), and callers queued for one.
        let in_use = status.size.saturating_sub(status.available);
        metrics::gauge!(POOL_IN_USE).set(in_use as f64);
        metrics::gauge!(POOL_WAITING).set(status.waiting as f64);
        Ok(conn)
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }

    pub(crate) fn max_size(&self) -> usize {
        match self {
            Self::Single(p) => p.status().max_size,
            Self::Cluster(p) => p.status().max_size,
        }
    }
}

/// A pooled connection, back in the pool when dropped.
pub(crate) enum Conn {
    Single(Object<SingleManager>),
    Cluster(Object<ClusterManager>),
}

impl Conn {
    /// Takes the connection out of the pool for good (after a connection
    /// error), so the next call gets a fresh one.
    pub(crate) fn discard(self) {
        match self {
            Self::Single(o) => drop(Object::take(o)),
            Self::Cluster(o) => drop(Object::take(o)),
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}
