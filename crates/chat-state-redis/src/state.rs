//! [`RedisState`]: the [`StateBackend`] on Redis. Each protocol step is one
//! script call; the rest are single commands.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, Concurrency, ConcurrentOptions,
    Coordination, Decision, DedupeKey, DropReason, ForceRelease, Gate, Handoff, Inspection,
    KvStore, Lease, LeaseKind, LeaseToken, OnFull, Platform, Recovered, Release, Renewal,
    ScopeFilter, ScopeKey, ScopeView, SetMode, SlotGrant, StateBackend, StateError, Subscriptions,
    Sweep, TenantId, ThreadRef,
};
use futures_util::future::join_all;
use redis::aio::ConnectionLike;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, FromRedisValue, Value};

use crate::builder::RedisStateBuilder;
use crate::error::{bad_reply, breaks_connection, from_redis};
use crate::keys::{BUCKETS, Keys, ScopeKeys, hash_tag};
use crate::pool::{Conn, Link, Pools};
use crate::reply::{Reply, encode_event, encode_run_first, ms};
use crate::scripts::{Invocation, Scripts, is_missing};

/// The [`StateBackend`] on Redis or Redis Cluster. Cheap to share: wrap it in an
/// `Arc`.
pub struct RedisState {
    pub(crate) pools: Pools,
    pub(crate) scripts: Arc<Scripts>,
    pub(crate) keys: Keys,
    pub(crate) ack_timeout: Duration,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for RedisState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisState")
            .field("cluster", &self.pools.is_cluster())
            .field("pool_size", &self.pools.size())
            .field("ack_timeout", &self.ack_timeout)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisState {
    /// A builder: URL or cluster nodes, key prefix, pool size, timeouts.
    pub fn builder() -> RedisStateBuilder {
        RedisStateBuilder::default()
    }

    /// Connects to one server with the defaults (prefix `chat`, one shared
    /// connection, 5 s for `admit` and for the rest).
    ///
    /// # Errors
    ///
    /// As [`RedisStateBuilder::build`].
    pub async fn connect(url: &str) -> Result<Self, StateError> {
        Self::builder().url(url).build().await
    }

    /// Connects to a Redis Cluster through any of its nodes, with the defaults.
    ///
    /// # Errors
    ///
    /// As [`RedisStateBuilder::build`].
    pub async fn connect_cluster<I, S>(urls: I) -> Result<Self, StateError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder().cluster(urls).build().await
    }

    /// A clone of one of the shared connections; a call still unanswered at
    /// `timeout` with its connection silent meanwhile drops the connection.
    async fn conn(&self, timeout: Duration) -> Result<Conn, StateError> {
        self.pools
            .get(timeout)
            .await
            .map_err(|e| from_redis(e, timeout))
    }

    /// One `FCALL`; on a server without the library, loads it and calls again.
    async fn eval(
        &self,
        invocation: &Invocation<'_>,
        timeout: Duration,
    ) -> Result<Value, StateError> {
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let call = invocation.cmd();
            let mut seen = self.scripts.reloads();
            let mut loads = 0;
            let r = loop {
                match call.query_async::<Value>(&mut conn).await {
                    // Not run: the server has no such function. Once it has
                    // the library (loaded here, or by another call since this
                    // one was sent), the same call goes again; missing again
                    // (lost once more since that other load), it is loaded
                    // here.
                    Err(e) if is_missing(&e) && loads < 2 => {
                        tracing::info!(
                            "chat-state-redis: a server has no functions of this version; loading them"
                        );
                        loads += 1;
                        if let Err(e) = self.scripts.reload(&mut conn, seen).await {
                            break Err(e);
                        }
                        seen = self.scripts.reloads();
                    }
                    r => break r,
                }
            };
            settle(conn, r, timeout)
        })
        .await
    }

    async fn query<T: FromRedisValue + Send>(&self, cmd: &Cmd) -> Result<T, StateError> {
        let timeout = self.timeout;
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let r = cmd.query_async::<T>(&mut conn).await;
            settle(conn, r, timeout)
        })
        .await
    }

    /// The address of every master of a cluster (`None` for one server).
    async fn masters(&self) -> Result<Option<Vec<(String, u16)>>, StateError> {
        if !self.pools.is_cluster() {
            return Ok(None);
        }
        let slots: Value = self
            .on_node(None, redis::cmd("CLUSTER").arg("SLOTS").clone())
            .await?;
        let mut masters = Vec::new();
        let Value::Array(ranges) = slots else {
            return Err(bad_reply("CLUSTER SLOTS: not an array"));
        };
        for range in ranges {
            // [start, end, [host, port, id, …], replicas…]
            let master = match range {
                Value::Array(parts) => parts.into_iter().nth(2),
                _ => None,
            };
            let Some(Value::Array(node)) = master else {
                return Err(bad_reply("CLUSTER SLOTS: no master"));
            };
            let mut node = node.into_iter();
            let host = node.next().and_then(|v| String::from_redis_value(v).ok());
            let port = node.next().and_then(|v| u16::from_redis_value(v).ok());
            let (Some(host), Some(port)) = (host, port) else {
                return Err(bad_reply("CLUSTER SLOTS: bad master address"));
            };
            if !masters.contains(&(host.clone(), port)) {
                masters.push((host, port));
            }
        }
        Ok(Some(masters))
    }

    /// A command on one cluster node (or anywhere: `None`, or one server).
    async fn on_node<T: FromRedisValue + Send>(
        &self,
        node: Option<&(String, u16)>,
        cmd: Cmd,
    ) -> Result<T, StateError> {
        let timeout = self.timeout;
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let r = match (conn.link(), node) {
                (Link::Cluster(c), Some((host, port))) => {
                    let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                        host: host.clone(),
                        port: *port,
                    });
                    c.route_command(cmd, routing)
                        .await
                        .and_then(|v| T::from_redis_value(v).map_err(redis::RedisError::from))
                }
                (c, _) => cmd.query_async::<T>(c).await,
            };
            settle(conn, r, timeout)
        })
        .await
    }

    /// Phase one of a sweep: the scopes of every bucket whose lease (or one of
    /// whose slots) lapsed, by the indexes' scores against the server's clock,
    /// while work needs a holder.
    async fn orphan_candidates(&self, limit: usize) -> Result<Vec<String>, StateError> {
        self.indexed(limit, true).await
    }

    /// The members of every bucket's indexes (the scopes held or with work,
    /// see `common.lua`), at most `limit` per index; `lapsed`: only those
    /// whose lease (or slot) lapsed, by the server's clock.
    async fn indexed(&self, limit: usize, lapsed: bool) -> Result<Vec<String>, StateError> {
        let timeout = self.timeout;
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let r = async {
                let until = if lapsed {
                    let (secs, micros): (i64, i64) =
                        redis::cmd("TIME").query_async(&mut conn).await?;
                    (secs * 1000 + micros / 1000).to_string()
                } else {
                    "+inf".to_owned()
                };
                read_buckets(conn.link(), &self.keys, &until, limit).await
            }
            .await;
            settle(conn, r, timeout)
        })
        .await
    }
}

/// Keys a `SCAN` step looks at: a step stays short, the walk needs few
/// round trips.
const SCAN_COUNT: u64 = 1000;

/// Runs `call` within `timeout`.
async fn within<T>(
    timeout: Duration,
    call: impl Future<Output = Result<T, StateError>>,
) -> Result<T, StateError> {
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(StateError::Timeout(timeout)))
}

/// A call's result; a connection that failed with a connection error leaves
/// its slot, so the next call there makes a fresh one.
fn settle<T>(mut conn: Conn, r: redis::RedisResult<T>, timeout: Duration) -> Result<T, StateError> {
    match r {
        Ok(v) => {
            conn.answered();
            Ok(v)
        }
        Err(e) => {
            if breaks_connection(&e) {
                conn.discard();
            } else {
                // The server's own error is an answer too.
                conn.answered();
            }
            Err(from_redis(e, timeout))
        }
    }
}

/// Reads every bucket's orphan index on clones of one connection; the requests
/// are pipelined (one server) or spread over the nodes (cluster).
async fn read_buckets<C>(
    conn: &C,
    keys: &Keys,
    until: &str,
    limit: usize,
) -> redis::RedisResult<Vec<String>>
where
    C: ConnectionLike + Clone + Send,
{
    let reads = (0..BUCKETS).flat_map(|b| {
        let bucket = keys.bucket(b);
        [bucket.orphans, bucket.slot_orphans]
    });
    let reads = reads.map(|key| {
        let mut c = conn.clone();
        async move {
            redis::cmd("ZRANGEBYSCORE")
                .arg(key)
                .arg("-inf")
                .arg(until)
                .arg("LIMIT")
                .arg(0)
                // A negative count: all of them.
                .arg(i64::try_from(limit).unwrap_or(-1))
                .query_async::<Vec<String>>(&mut c)
                .await
        }
    });
    let mut out = Vec::new();
    for r in join_all(reads).await {
        out.extend(r?);
    }
    Ok(out)
}

/// The longest dedupe TTL this backend keeps a mark for: `unmark` looks a mark
/// up in every hour of it. Platforms retry for hours (Slack's Delayed Events
/// for a day), so a week is far beyond any of them.
pub const MAX_DEDUPE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

fn dedupe_ttl(ttl: Duration) -> Result<u64, StateError> {
    if ttl > MAX_DEDUPE_TTL {
        return Err(StateError::InvalidRequest(
            "a dedupe TTL longer than the Redis backend's MAX_DEDUPE_TTL (7 days)",
        ));
    }
    Ok(ms(ttl))
}

fn validate(c: &Concurrency) -> Result<(), StateError> {
    c.validate()
        .map_err(|e| StateError::InvalidRequest(e.as_str()))
}

/// Reads an admit reply into the decision.
fn admission(
    value: Value,
    scope: &ScopeKey,
    token: &LeaseToken,
    kind: LeaseKind,
    ttl: Duration,
) -> Result<Admission, StateError> {
    let mut r = Reply::new(value)?;
    let verdict = r.text()?;
    let subscribed = r.flag()?;
    let lease = |fence| Lease::new(scope.clone(), token.clone(), fence, kind, ttl);
    let decision = match verdict.as_str() {
        "duplicate" => Decision::Duplicate,
        "not-subscribed" => Decision::NotSubscribed,
        "full" => Decision::Full,
        "stored" => Decision::Stored,
        "waiting-for-slot" => Decision::WaitingForSlot,
        "run" => Decision::Run(lease(r.fence()?)),
        "hold" => Decision::Hold(lease(r.fence()?)),
        "queued" => Decision::Queued {
            depth: usize::try_from(r.int()?).map_err(|_| bad_reply("negative depth"))?,
        },
        "pending" => Decision::Pending {
            replaced: r.flag()?,
        },
        "dropped" => match r.text()?.as_str() {
            "busy" => Decision::Dropped(DropReason::Busy),
            "queue-full" => Decision::Dropped(DropReason::QueueFull),
            _ => return Err(bad_reply("unknown drop reason")),
        },
        _ => return Err(bad_reply("unknown admit verdict")),
    };
    Ok(Admission::new(decision, subscribed))
}

fn handoff(value: Value, scope: &ScopeKey) -> Result<Handoff, StateError> {
    let mut r = Reply::new(value)?;
    Ok(match r.text()?.as_str() {
        "lost" => Handoff::Lost,
        "released" => Handoff::Released,
        "wait" => Handoff::Wait(r.millis()?),
        "run" => Handoff::Run(r.batch(scope)?),
        _ => return Err(bad_reply("unknown handoff verdict")),
    })
}

fn renewal(value: Value) -> Result<Renewal, StateError> {
    let mut r = Reply::new(value)?;
    Ok(match r.text()?.as_str() {
        "lost" => Renewal::Lost,
        "renewed" => Renewal::Renewed {
            cancel_requests: u32::try_from(r.int()?).unwrap_or(u32::MAX),
        },
        _ => return Err(bad_reply("unknown renewal verdict")),
    })
}

/// The keys of `admit_drop` and `admit_queue`, after the mark and the
/// subscription: an exclusive scope's lease, in-flight batch, waiting entries
/// and outbox.
fn exclusive_keys<'a, 'b>(inv: &'a mut Invocation<'b>, keys: &ScopeKeys) -> &'a mut Invocation<'b> {
    inv.key(&keys.lease)
        .key(&keys.fence)
        .key(&keys.orphans)
        .key(&keys.run)
        .key(&keys.run_items)
        .key(&keys.queue)
        .key(&keys.pending)
        .key(&keys.burst)
        .key(&keys.outbox)
        .key(&keys.waiting_threads)
}

fn release_mode(how: Release) -> &'static str {
    match how {
        Release::HandBack => "handback",
        _ => "done",
    }
}

fn tag_mismatch() -> StateError {
    StateError::InvalidRequest("the scope's tag differs from its event's thread")
}

impl RedisState {
    async fn release_slot(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        let keys = self.keys.scope(lease.scope());
        let mut inv = self.scripts.release_slot.prepare_invoke();
        inv.key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.slot_waiters)
            .key(&keys.slot_runs)
            .key(&keys.slot_orphans)
            .key(keys.ack(lease.token().as_str(), 0))
            .arg(lease.token().as_str())
            .arg(release_mode(how))
            .arg(ms(lease.ttl()))
            .arg(&keys.member);
        let v = self.eval(&inv, self.timeout).await?;
        Ok(crate::reply::int(v)? == 1)
    }

    /// One claim of the sweep: a scope or a slot run of `member`.
    async fn claim(
        &self,
        member: &str,
        scope: ScopeKey,
        lease_ttl: Duration,
    ) -> Result<Option<Recovered>, StateError> {
        let keys = self.keys.scope(&scope);
        let token = LeaseToken::generate();
        let mut inv = self.scripts.claim.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.fence)
            .key(&keys.orphans)
            .key(&keys.run)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.outbox)
            .key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.slot_waiters)
            .key(&keys.slot_runs)
            .key(&keys.slot_orphans)
            .arg(member)
            .arg(token.as_str())
            .arg(ms(lease_ttl));
        let v = self.eval(&inv, self.timeout).await?;
        if matches!(v, Value::Nil | Value::Boolean(false)) {
            return Ok(None);
        }
        let mut r = Reply::new(v)?;
        Ok(Some(match r.text()?.as_str() {
            "scope" => Recovered::Scope(Lease::new(
                scope,
                token,
                r.fence()?,
                LeaseKind::Exclusive,
                lease_ttl,
            )),
            "slot" => {
                let attempt = u32::try_from(r.int()?).map_err(|_| bad_reply("bad attempt"))?;
                let lapses = u32::try_from(r.int()?).map_err(|_| bad_reply("bad lapses"))?;
                let concurrency = slot_bound(&r.text()?)?;
                let batch = r.slot_entry(&scope)?.attempts(attempt, lapses);
                Recovered::Slot {
                    scope,
                    token,
                    batch,
                    concurrency,
                }
            }
            _ => return Err(bad_reply("unknown claim verdict")),
        }))
    }
}

/// The bound a slot run was admitted with, as its record keeps it: `0` for
/// none; empty for a record written before bounds were kept, recovered as
/// unbounded.
fn slot_bound(max: &str) -> Result<ConcurrentOptions, StateError> {
    match max {
        "" | "0" => Ok(ConcurrentOptions::default()),
        n => n
            .parse()
            .map(|n| ConcurrentOptions::default().max(n))
            .map_err(|_| bad_reply("bad slot bound")),
    }
}

#[async_trait]
impl Coordination for RedisState {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        let event = &request.event;
        if request.scope.tag() != event.thread.scope_tag() {
            return Err(tag_mismatch());
        }
        validate(&request.concurrency)?;
        let tag = self.keys.tag(request.scope.tag());
        let keys = tag.scope(&request.scope);
        let mark = tag.dedupe(&event.dedupe_key);
        let subscription = tag.subscription(&event.thread.thread);
        let gate = match request.gate {
            Gate::Subscribed => "subscribed",
            _ => "open",
        };
        let token = &request.id;
        let lease_ttl = ms(request.lease_ttl);
        let encoded = match request.concurrency {
            Concurrency::Debounce(_) | Concurrency::Burst(_) | Concurrency::Concurrent(_) => {
                encode_event(event)?
            }
            _ => encode_run_first(event)?,
        };
        let s = &self.scripts;
        let mut kind = LeaseKind::Exclusive;
        let mut inv = match request.concurrency {
            Concurrency::Queue(_) => s.admit_queue.prepare_invoke(),
            Concurrency::Debounce(_) => s.admit_debounce.prepare_invoke(),
            Concurrency::Burst(_) => s.admit_burst.prepare_invoke(),
            Concurrency::Concurrent(_) => s.admit_concurrent.prepare_invoke(),
            _ => s.admit_drop.prepare_invoke(),
        };
        inv.key(&mark)
            .key(&subscription)
            .arg(gate)
            .arg(dedupe_ttl(request.dedupe_ttl)?)
            .arg(token.as_str())
            .arg(lease_ttl);
        match request.concurrency {
            Concurrency::Queue(q) => {
                let on_full = match q.on_full {
                    OnFull::DropNewest => "drop-newest",
                    _ => "drop-oldest",
                };
                exclusive_keys(&mut inv, &keys)
                    .arg(&keys.member)
                    .arg(&event.thread.thread)
                    .arg(&encoded)
                    .arg(q.max_size)
                    .arg(on_full)
                    .arg(ms(q.entry_ttl));
            }
            Concurrency::Debounce(d) => {
                inv.key(&keys.lease)
                    .key(&keys.fence)
                    .key(&keys.orphans)
                    .key(&keys.pending)
                    .key(&keys.outbox)
                    .key(&keys.waiting_threads)
                    .key(&keys.queue)
                    .arg(&keys.member)
                    .arg(&event.thread.thread)
                    .arg(&encoded)
                    .arg(ms(d.interval))
                    .arg(ms(d.entry_ttl));
            }
            Concurrency::Burst(b) => {
                inv.key(&keys.lease)
                    .key(&keys.fence)
                    .key(&keys.orphans)
                    .key(&keys.burst)
                    .key(&keys.burst_meta)
                    .key(&keys.waiting_threads)
                    .arg(&keys.member)
                    .arg(&event.thread.thread)
                    .arg(&encoded)
                    .arg(ms(b.window))
                    .arg(b.max_batch.unwrap_or(0))
                    .arg(b.max_waiting)
                    .arg(ms(b.entry_ttl));
            }
            Concurrency::Concurrent(c) => {
                kind = LeaseKind::Slot;
                inv.key(&keys.slots)
                    .key(&keys.slot_cancels)
                    .key(&keys.slot_waiters)
                    .key(&keys.slot_runs)
                    .key(&keys.fence)
                    .key(&keys.slot_orphans)
                    .key(&keys.waiting_threads)
                    .arg(c.max.unwrap_or(0))
                    .arg(&keys.member)
                    .arg(&event.thread.thread)
                    .arg(&encoded);
            }
            _ => {
                exclusive_keys(&mut inv, &keys)
                    .arg(&keys.member)
                    .arg(&event.thread.thread)
                    .arg(&encoded);
            }
        }
        // Last, whatever the strategy: the scripts read it as ARGV[#ARGV].
        inv.arg(ms(request.subscription_ttl));
        let reply = self.eval(&inv, self.ack_timeout).await?;
        admission(reply, &request.scope, token, kind, request.lease_ttl)
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        let keys = self.keys.scope(lease.scope());
        let mut inv;
        if lease.kind() == LeaseKind::Slot {
            inv = self.scripts.renew_slot.prepare_invoke();
            inv.key(&keys.slots)
                .key(&keys.slot_cancels)
                .key(&keys.slot_waiters)
                .key(&keys.slot_runs)
                .key(&keys.slot_orphans)
                .arg(lease.token().as_str())
                .arg(ms(ttl))
                .arg(&keys.member);
        } else {
            inv = self.scripts.renew.prepare_invoke();
            inv.key(&keys.lease)
                .key(&keys.orphans)
                .arg(lease.token().as_str())
                .arg(ms(ttl))
                .arg(&keys.member);
        }
        renewal(self.eval(&inv, self.timeout).await?)
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return Ok(if self.release_slot(lease, Release::Done).await? {
                Handoff::Released
            } else {
                Handoff::Lost
            });
        }
        let keys = self.keys.scope(lease.scope());
        let mut inv = self.scripts.finish.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.orphans)
            .key(&keys.run)
            .key(&keys.run_items)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.burst_meta)
            .key(&keys.outbox)
            .key(keys.ack(lease.token().as_str(), lease.seq()))
            .key(&keys.waiting_threads)
            .arg(lease.token().as_str())
            .arg(lease.seq())
            .arg(ms(lease.ttl()))
            .arg(&keys.member);
        handoff(self.eval(&inv, self.timeout).await?, lease.scope())
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return self.release_slot(lease, how).await;
        }
        let keys = self.keys.scope(lease.scope());
        let mut inv = self.scripts.release.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.orphans)
            .key(&keys.run)
            .key(&keys.run_items)
            .key(keys.ack(lease.token().as_str(), lease.seq()))
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.outbox)
            .arg(lease.token().as_str())
            .arg(lease.seq())
            .arg(release_mode(how))
            .arg(ms(lease.ttl()))
            .arg(&keys.member);
        let v = self.eval(&inv, self.timeout).await?;
        Ok(crate::reply::int(v)? == 1)
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        let mut inv = self.scripts.unmark.prepare_invoke();
        inv.key(self.keys.thread(thread).dedupe(key))
            .arg(ms(MAX_DEDUPE_TTL));
        Ok(crate::reply::int(self.eval(&inv, self.timeout).await?)? == 1)
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        if max == Some(0) {
            return Err(StateError::InvalidRequest("a slot maximum of zero"));
        }
        let keys = self.keys.scope(scope);
        let mut inv = self.scripts.acquire_slot.prepare_invoke();
        inv.key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.slot_waiters)
            .key(&keys.slot_runs)
            .key(&keys.fence)
            .key(&keys.slot_orphans)
            .arg(token.as_str())
            .arg(ms(ttl))
            .arg(max.unwrap_or(0))
            .arg(&keys.member);
        let mut r = Reply::new(self.eval(&inv, self.timeout).await?)?;
        Ok(match r.text()?.as_str() {
            "granted" => SlotGrant::Granted(Lease::new(
                scope.clone(),
                token.clone(),
                r.fence()?,
                LeaseKind::Slot,
                ttl,
            )),
            "full" => SlotGrant::Full,
            "gone" => SlotGrant::Gone,
            _ => return Err(bad_reply("unknown slot verdict")),
        })
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        if request.scope.tag() != request.thread.scope_tag() {
            return Err(tag_mismatch());
        }
        let tag = self.keys.tag(request.scope.tag());
        let keys = tag.scope(&request.scope);
        let mut inv = self.scripts.request_cancel.prepare_invoke();
        inv.key(tag.dedupe(&request.dedupe_key))
            .key(&keys.lease)
            .key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.slot_waiters)
            .arg(dedupe_ttl(request.dedupe_ttl)?)
            .arg(request.id.as_str());
        let mut r = Reply::new(self.eval(&inv, self.timeout).await?)?;
        match r.text()?.as_str() {
            "duplicate" => Ok(CancelOutcome::Duplicate),
            "recorded" => Ok(CancelOutcome::Recorded {
                count: u32::try_from(r.int()?).unwrap_or(u32::MAX),
            }),
            "no-holder" => Ok(CancelOutcome::NoHolder),
            _ => Err(bad_reply("unknown cancel verdict")),
        }
    }

    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError> {
        let (lease_ttl, limit) = (request.lease_ttl, request.limit);
        let mut recovered = Vec::new();
        if limit == 0 {
            return Ok(recovered);
        }
        // Read past the limit by the skipped tenants' share, so that their
        // scopes do not crowd out the others'.
        let mut members = self
            .orphan_candidates(limit.saturating_mul(2).max(limit + 16))
            .await?;
        members.sort();
        members.dedup();
        // Claims start at a random place of the list, so a limit reached
        // early does not favour the same scopes sweep after sweep.
        if !members.is_empty() {
            let start = usize::try_from(rand::random::<u64>() % members.len() as u64).unwrap_or(0);
            members.rotate_left(start);
        }
        for member in members {
            if recovered.len() >= limit {
                break;
            }
            let Ok(scope) = serde_json::from_str::<ScopeKey>(&member) else {
                tracing::warn!("chat-state-redis: unreadable scope in an orphan index");
                continue;
            };
            if !request.wants(&scope) {
                continue;
            }
            // One scope's failure (a lost reply: the claim may have run, and its
            // lease lapses in one TTL) never costs the others their turn.
            match self.claim(&member, scope, lease_ttl).await {
                Ok(Some(r)) => recovered.push(r),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "chat-state-redis: a recovery claim failed"),
            }
        }
        Ok(recovered)
    }
}

#[async_trait]
impl Subscriptions for RedisState {
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        let key = self.keys.thread(thread).subscription(&thread.thread);
        let _: Value = self
            .query(redis::cmd("SET").arg(key).arg("1").arg("PX").arg(ms(ttl)))
            .await?;
        Ok(())
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        let key = self.keys.thread(thread).subscription(&thread.thread);
        let removed: i64 = self.query(redis::cmd("DEL").arg(key)).await?;
        Ok(removed > 0)
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        let key = self.keys.thread(thread).subscription(&thread.thread);
        let n: i64 = self.query(redis::cmd("EXISTS").arg(key)).await?;
        Ok(n > 0)
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        let nodes = match self.masters().await? {
            None => vec![None],
            Some(masters) => masters.into_iter().map(Some).collect(),
        };
        let tenant_keys = self.keys.tenant(platform, tenant);
        let mut removed = 0;
        for node in nodes {
            let mut cursor = 0_u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(&tenant_keys.pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT);
                let (next, found): (u64, Vec<String>) = self.on_node(node.as_ref(), scan).await?;
                // One UNLINK per hash tag: a cluster refuses a command whose
                // keys live in different slots.
                let mut by_tag: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
                for key in found.iter().filter(|k| tenant_keys.is_subscription(k)) {
                    by_tag.entry(hash_tag(key)).or_default().push(key);
                }
                for keys in by_tag.values() {
                    let n: u64 = self.query(redis::cmd("UNLINK").arg(keys)).await?;
                    removed += n;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(removed)
    }
}

#[async_trait]
impl Inspection for RedisState {
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        // Every held or working scope is in its bucket's index (see
        // common.lua): read them all, on every node, and look at each.
        let mut members = self.indexed(usize::MAX, false).await?;
        members.sort();
        members.dedup();
        let mut out = Vec::new();
        for member in members {
            if out.len() >= limit {
                break;
            }
            let Ok(scope) = serde_json::from_str::<ScopeKey>(&member) else {
                continue;
            };
            if filter.matches(&scope)
                && let Some(view) = self.inspect_scope(&scope).await?
            {
                out.push(view);
            }
        }
        Ok(out)
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        let keys = self.keys.scope(scope);
        let mut inv = self.scripts.inspect.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.run_items)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.slots)
            .key(&keys.slot_runs)
            .key(&keys.run);
        crate::reply::scope_view(self.eval(&inv, self.timeout).await?, scope)
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        let keys = self.keys.scope(scope);
        let mut inv = self.scripts.force_release.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.orphans)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.run)
            .key(&keys.outbox)
            .key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.slot_waiters)
            .key(&keys.slot_runs)
            .key(&keys.slot_orphans)
            .arg(fence)
            .arg(&keys.member);
        match crate::reply::text(self.eval(&inv, self.timeout).await?)?.as_str() {
            "released" => Ok(ForceRelease::Released),
            "stale" => Ok(ForceRelease::Stale),
            _ => Err(bad_reply("unknown force-release verdict")),
        }
    }
}

#[async_trait]
impl StateBackend for RedisState {
    async fn health(&self) -> Result<(), StateError> {
        let _: Value = self.query(&redis::cmd("PING")).await?;
        Ok(())
    }
}

#[async_trait]
impl KvStore for RedisState {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        let v: Option<Vec<u8>> = self.query(redis::cmd("GET").arg(self.keys.kv(key))).await?;
        Ok(v.map(Bytes::from))
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let key = self.keys.kv(key);
        if let SetMode::IfEquals(expected) = &mode {
            let mut inv = self.scripts.kv_set_if_equals.prepare_invoke();
            inv.key(&key)
                .arg(expected.as_ref())
                .arg(value.as_ref())
                .arg(ttl.map_or(0, ms));
            let written = self.eval(&inv, self.timeout).await?;
            return Ok(matches!(written, Value::Int(1)));
        }
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(value.as_ref());
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(ms(ttl));
        }
        if mode == SetMode::IfAbsent {
            cmd.arg("NX");
        }
        let reply: Value = self.query(&cmd).await?;
        Ok(!matches!(reply, Value::Nil))
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        let removed: i64 = self.query(redis::cmd("DEL").arg(self.keys.kv(key))).await?;
        Ok(removed > 0)
    }
}
