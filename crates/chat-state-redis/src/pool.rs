//! Shared connections: a few multiplexed connections that every call shares.
//!
//! A multiplexed connection carries any number of calls at once: the requests
//! of calls made while others are in flight go out together in one write, and
//! Redis reads them in one read and answers them in one write. A pool that
//! lends each connection to one call at a time makes every call its own read,
//! write and wake-up on the server — at high rates most of what Redis spends
//! outside the scripts (docs/benchmarks.md, "Shared connections"). So a call
//! takes a clone of one of `size` connections, in turn, and never waits for
//! another call to finish.
//!
//! A connection that fails a call with a connection error leaves its slot, and
//! the next call on that slot connects again; calls already on it finish or
//! fail on their own. So does one that stalls: a call abandoned at its timeout
//! when nothing at all was answered on its connection since the call was sent
//! (a half-open socket, a proxy that stopped forwarding). A server that is
//! merely slow keeps answering other calls, and keeps its connections.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::time::Instant;

use crate::error::breaks_connection;

/// Gauge: calls in flight on the shared connections, set as each starts and
/// ends.
pub(crate) const POOL_IN_USE: &str = "chat_redis_pool_in_use";
/// Gauge: calls waiting for a connection to be made, set as each starts and
/// stops waiting.
pub(crate) const POOL_WAITING: &str = "chat_redis_pool_waiting";

/// How to make a connection.
pub(crate) enum Connector {
    Single {
        client: redis::Client,
        config: AsyncConnectionConfig,
    },
    Cluster(ClusterClient),
}

impl Connector {
    async fn connect(&self) -> RedisResult<Link> {
        match self {
            Self::Single { client, config } => Ok(Link::Single(
                client
                    .get_multiplexed_async_connection_with_config(config)
                    .await?,
            )),
            Self::Cluster(client) => Ok(Link::Cluster(client.get_async_connection().await?)),
        }
    }
}

/// One multiplexed connection (to a server, or through a cluster client to
/// every node); clones share it.
#[derive(Clone)]
pub(crate) enum Link {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
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

/// One of the shared connections: absent until a call needs it, and again
/// after it broke.
struct Slot {
    live: Mutex<Option<(u64, Link)>>,
    /// Held while connecting, so the calls that find the slot empty at once
    /// make one connection between them.
    connecting: tokio::sync::Mutex<()>,
    generation: AtomicU64,
    /// When a reply last arrived on the live connection (µs since the pool's
    /// start).
    last_reply_us: AtomicU64,
}

impl Slot {
    fn live(&self) -> Option<(u64, Link)> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Empties the slot if it still holds connection `generation`.
    fn discard(&self, generation: u64) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if live.as_ref().is_some_and(|(g, _)| *g == generation) {
            *live = None;
        }
    }
}

/// The connections of a [`RedisState`](crate::RedisState).
pub(crate) struct Pools {
    connector: Connector,
    slots: Box<[Arc<Slot>]>,
    next: AtomicUsize,
    in_flight: Arc<AtomicUsize>,
    waiting: AtomicUsize,
    start: Instant,
}

impl Pools {
    /// `size` shared connections (at least one), made on first use.
    pub(crate) fn new(connector: Connector, size: usize) -> Self {
        let slots = (0..size.max(1))
            .map(|_| {
                Arc::new(Slot {
                    live: Mutex::new(None),
                    connecting: tokio::sync::Mutex::new(()),
                    generation: AtomicU64::new(0),
                    last_reply_us: AtomicU64::new(0),
                })
            })
            .collect();
        Self {
            connector,
            slots,
            next: AtomicUsize::new(0),
            in_flight: Arc::new(AtomicUsize::new(0)),
            waiting: AtomicUsize::new(0),
            start: Instant::now(),
        }
    }

    /// A clone of the next shared connection, connecting it if its slot is
    /// empty. A call abandoned after half of `stall_after` (its timeout) with
    /// no reply on its connection meanwhile takes the connection out of its
    /// slot.
    pub(crate) async fn get(&self, stall_after: Duration) -> RedisResult<Conn> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let slot = &self.slots[i];
        let (generation, link) = match slot.live() {
            Some(live) => live,
            None => {
                // Counted while waiting, also when the caller gives up.
                let _waiting = Counted::new(&self.waiting);
                self.connect(slot).await?
            }
        };
        let in_flight = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        metrics::gauge!(POOL_IN_USE).set(in_flight as f64);
        Ok(Conn {
            link,
            slot: Arc::clone(slot),
            generation,
            in_flight: Arc::clone(&self.in_flight),
            start: self.start,
            sent: Instant::now(),
            stall_after,
            answered: false,
        })
    }

    async fn connect(&self, slot: &Slot) -> RedisResult<(u64, Link)> {
        let _one = slot.connecting.lock().await;
        if let Some(live) = slot.live() {
            return Ok(live);
        }
        let link = self.connector.connect().await?;
        let generation = slot.generation.fetch_add(1, Ordering::Relaxed) + 1;
        slot.last_reply_us
            .store(micros(self.start.elapsed()), Ordering::Relaxed);
        *slot.live.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((generation, link.clone()));
        Ok((generation, link))
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.connector, Connector::Cluster(_))
    }

    /// How many connections the calls share.
    pub(crate) fn size(&self) -> usize {
        self.slots.len()
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One more in a count for as long as it lives.
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        let n = count.fetch_add(1, Ordering::Relaxed) + 1;
        metrics::gauge!(POOL_WAITING).set(n as f64);
        Self(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        let n = self.0.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
        metrics::gauge!(POOL_WAITING).set(n as f64);
    }
}

/// A call's clone of a shared connection.
pub(crate) struct Conn {
    link: Link,
    slot: Arc<Slot>,
    generation: u64,
    in_flight: Arc<AtomicUsize>,
    start: Instant,
    sent: Instant,
    stall_after: Duration,
    answered: bool,
}

impl Conn {
    /// Takes the connection out of its slot (after a connection error), so the
    /// next call on the slot makes a fresh one.
    pub(crate) fn discard(mut self) {
        self.answered = true;
        self.slot.discard(self.generation);
    }

    /// The connection itself, for calls that clone it further.
    pub(crate) fn link(&mut self) -> &mut Link {
        &mut self.link
    }

    fn replied<T>(&mut self, r: &RedisResult<T>) {
        let broke = r.as_ref().err().is_some_and(breaks_connection);
        if !broke {
            self.answered();
        }
    }

    /// Records that an answer arrived on the connection (also for calls made
    /// on clones of [`Conn::link`]).
    pub(crate) fn answered(&mut self) {
        self.answered = true;
        self.slot
            .last_reply_us
            .store(micros(self.start.elapsed()), Ordering::Relaxed);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let in_flight = self
            .in_flight
            .fetch_sub(1, Ordering::Relaxed)
            .saturating_sub(1);
        metrics::gauge!(POOL_IN_USE).set(in_flight as f64);
        // Abandoned at its timeout (its timer started just before the call
        // took the connection: half of it is the threshold), or cancelled that
        // late: if nothing was answered on the connection since this call was
        // sent, the connection is stalled.
        if self.answered || self.sent.elapsed() < self.stall_after / 2 {
            return;
        }
        let sent_us = micros(self.sent.duration_since(self.start));
        if self.slot.last_reply_us.load(Ordering::Relaxed) < sent_us {
            self.slot.discard(self.generation);
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let r = self.link.req_packed_command(cmd).await;
            self.replied(&r);
            r
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let r = self.link.req_packed_commands(pipeline, offset, count).await;
            self.replied(&r);
            r
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}
