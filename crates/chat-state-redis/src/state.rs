//! [`RedisState`]: the [`StateBackend`] on Redis. Each protocol step is one
//! script call; the rest are single commands.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, Concurrency, Decision, DedupeKey,
    DropReason, Gate, Handoff, Lease, LeaseKind, LeaseToken, OnFull, Renewal, ScopeKey, SetMode,
    StateBackend, StateError, Take, ThreadRef,
};
use futures_util::future::join_all;
use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, ScriptInvocation, Value};

use crate::builder::RedisStateBuilder;
use crate::error::{bad_reply, breaks_connection, from_pool, from_redis};
use crate::keys::{BUCKETS, Keys, ScopeKeys};
use crate::pool::{Conn, Pools};
use crate::reply::{Reply, encode_event, ms, optional_fence, text};
use crate::scripts::Scripts;

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
            .field("pool_size", &self.pools.max_size())
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

    /// Connects to one server with the defaults (prefix `chat`, 16 connections,
    /// 1 s for `admit`, 5 s for the rest).
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

    /// A pooled connection.
    async fn conn(&self, timeout: Duration) -> Result<Conn, StateError> {
        self.pools.get().await.map_err(|e| from_pool(e, timeout))
    }

    async fn eval(
        &self,
        invocation: &ScriptInvocation<'_>,
        timeout: Duration,
    ) -> Result<Value, StateError> {
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let r = invocation.invoke_async::<Value>(&mut conn).await;
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

    /// Phase one of a sweep: the scopes of every bucket whose lease lapsed (by
    /// the index's score, against the server's clock) while entries wait.
    async fn orphan_candidates(&self, limit: usize) -> Result<Vec<String>, StateError> {
        let timeout = self.timeout;
        within(timeout, async {
            let mut conn = self.conn(timeout).await?;
            let r = async {
                let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
                let now = secs * 1000 + micros / 1000;
                match &conn {
                    Conn::Single(o) => read_buckets(&**o, &self.keys, now, limit).await,
                    Conn::Cluster(o) => read_buckets(&**o, &self.keys, now, limit).await,
                }
            }
            .await;
            settle(conn, r, timeout)
        })
        .await
    }
}

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
/// the pool, so the next call gets a fresh one.
fn settle<T>(conn: Conn, r: redis::RedisResult<T>, timeout: Duration) -> Result<T, StateError> {
    r.map_err(|e| {
        if breaks_connection(&e) {
            conn.discard();
        }
        from_redis(e, timeout)
    })
}

/// Reads every bucket's orphan index on clones of one connection; the requests
/// are pipelined (one server) or spread over the nodes (cluster).
async fn read_buckets<C>(
    conn: &C,
    keys: &Keys,
    now: i64,
    limit: usize,
) -> redis::RedisResult<Vec<String>>
where
    C: ConnectionLike + Clone + Send,
{
    let reads = (0..BUCKETS).map(|b| {
        let mut c = conn.clone();
        let key = keys.bucket(b).orphans;
        async move {
            redis::cmd("ZRANGEBYSCORE")
                .arg(key)
                .arg("-inf")
                .arg(now)
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
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

fn validate(c: &Concurrency) -> Result<(), StateError> {
    let bad = match c {
        Concurrency::Queue(q) => (q.max_size == 0).then_some("a queue max_size of zero"),
        Concurrency::Debounce(d) => d.interval.is_zero().then_some("a zero debounce interval"),
        Concurrency::Burst(b) if b.window.is_zero() => Some("a zero burst window"),
        Concurrency::Burst(b) if b.max_batch == Some(0) => Some("a burst max_batch of zero"),
        Concurrency::Burst(b) if b.max_waiting == 0 => Some("a burst max_waiting of zero"),
        Concurrency::Concurrent(c) if c.max == Some(0) => Some("a concurrent max of zero"),
        _ => None,
    };
    bad.map_or(Ok(()), |why| Err(StateError::InvalidRequest(why)))
}

/// Reads an admit reply into the decision.
fn admission(
    value: Value,
    scope: &ScopeKey,
    token: LeaseToken,
    kind: LeaseKind,
    ttl: Duration,
) -> Result<Admission, StateError> {
    let mut r = Reply::new(value)?;
    let verdict = r.text()?;
    let subscribed = r.flag()?;
    let lease = |fence| Lease::new(scope.clone(), token, fence, kind, ttl);
    let decision = match verdict.as_str() {
        "duplicate" => Decision::Duplicate,
        "not-subscribed" => Decision::NotSubscribed,
        "full" => Decision::Full,
        "unlocked" => Decision::Unlocked,
        "waiting-for-slot" => Decision::WaitingForSlot,
        "run" => Decision::Run(lease(r.fence()?)),
        "hold" => {
            let fence = r.fence()?;
            let now = r.int()?;
            Decision::Hold {
                lease: lease(fence),
                superseded: r.entry(now)?,
            }
        }
        "queued" => {
            let depth = usize::try_from(r.int()?).map_err(|_| bad_reply("negative depth"))?;
            let now = r.int()?;
            Decision::Queued {
                depth,
                evicted: r.entry(now)?,
            }
        }
        "pending" => {
            let now = r.int()?;
            Decision::Pending {
                superseded: r.entry(now)?,
            }
        }
        "dropped" => match r.text()?.as_str() {
            "busy" => Decision::Dropped(DropReason::Busy),
            "queue-full" => Decision::Dropped(DropReason::QueueFull),
            _ => return Err(bad_reply("unknown drop reason")),
        },
        _ => return Err(bad_reply("unknown admit verdict")),
    };
    Ok(Admission::new(decision, subscribed))
}

/// What `finish` and `take` found.
enum Next {
    Lost,
    Released,
    Empty,
    Wait(Duration),
    Run(Vec<chat_core::Waiting>),
}

fn next(value: Value) -> Result<Next, StateError> {
    let mut r = Reply::new(value)?;
    Ok(match r.text()?.as_str() {
        "lost" => Next::Lost,
        "released" => Next::Released,
        "empty" => Next::Empty,
        "wait" => Next::Wait(r.millis()?),
        "run" => {
            let now = r.int()?;
            Next::Run(r.entries(now)?)
        }
        _ => return Err(bad_reply("unknown handoff verdict")),
    })
}

fn renewal(value: Value) -> Result<Renewal, StateError> {
    let mut r = Reply::new(value)?;
    Ok(match r.text()?.as_str() {
        "lost" => Renewal::Lost,
        "renewed" => Renewal::Renewed {
            cancel_requested: r.flag()?,
        },
        _ => return Err(bad_reply("unknown renewal verdict")),
    })
}

fn tag_mismatch() -> StateError {
    StateError::InvalidRequest("the scope's tag differs from its event's thread")
}

impl RedisState {
    async fn release_slot(&self, lease: &Lease) -> Result<bool, StateError> {
        let keys = self.keys.scope(lease.scope());
        let mut inv = self.scripts.release_slot.prepare_invoke();
        inv.key(&keys.slots)
            .key(&keys.slot_cancels)
            .arg(lease.token().as_str());
        let v = self.eval(&inv, self.timeout).await?;
        Ok(crate::reply::int(v)? == 1)
    }

    fn exclusive<'s>(
        &'s self,
        script: &'s redis::Script,
        keys: &ScopeKeys,
        lease: &Lease,
    ) -> ScriptInvocation<'s> {
        let mut inv = script.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.orphans)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .key(&keys.burst_meta)
            .arg(lease.token().as_str())
            .arg(ms(lease.ttl()))
            .arg(&keys.member);
        inv
    }
}

#[async_trait]
impl StateBackend for RedisState {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        let event = &request.event;
        if request.scope.tag() != event.thread.thread_scope().tag() {
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
        let token = LeaseToken::generate();
        let lease_ttl = ms(request.lease_ttl);
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
            .arg(ms(request.dedupe_ttl))
            .arg(token.as_str())
            .arg(lease_ttl);
        match request.concurrency {
            Concurrency::Queue(q) => {
                let on_full = match q.on_full {
                    OnFull::DropNewest => "drop-newest",
                    _ => "drop-oldest",
                };
                inv.key(&keys.lease)
                    .key(&keys.fence)
                    .key(&keys.orphans)
                    .key(&keys.queue)
                    .arg(&keys.member)
                    .arg(q.max_size)
                    .arg(on_full)
                    .arg(ms(q.entry_ttl))
                    .arg(encode_event(event)?);
            }
            Concurrency::Debounce(d) => {
                inv.key(&keys.lease)
                    .key(&keys.fence)
                    .key(&keys.orphans)
                    .key(&keys.pending)
                    .arg(&keys.member)
                    .arg(ms(d.interval))
                    .arg(encode_event(event)?);
            }
            Concurrency::Burst(b) => {
                inv.key(&keys.lease)
                    .key(&keys.fence)
                    .key(&keys.orphans)
                    .key(&keys.burst)
                    .key(&keys.burst_meta)
                    .arg(&keys.member)
                    .arg(ms(b.window))
                    .arg(b.max_batch.unwrap_or(0))
                    .arg(b.max_waiting)
                    .arg(encode_event(event)?);
            }
            Concurrency::Concurrent(c) => {
                kind = LeaseKind::Slot;
                inv.key(&keys.slots)
                    .key(&keys.slot_cancels)
                    .key(&keys.fence)
                    .arg(c.max.unwrap_or(0));
            }
            _ => {
                inv.key(&keys.lease).key(&keys.fence);
            }
        }
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
                .arg(lease.token().as_str())
                .arg(ms(ttl));
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
            return Ok(if self.release_slot(lease).await? {
                Handoff::Released
            } else {
                Handoff::Lost
            });
        }
        let keys = self.keys.scope(lease.scope());
        let inv = self.exclusive(&self.scripts.finish, &keys, lease);
        Ok(match next(self.eval(&inv, self.timeout).await?)? {
            Next::Lost => Handoff::Lost,
            Next::Released | Next::Empty => Handoff::Released,
            Next::Wait(d) => Handoff::Wait(d),
            Next::Run(entries) => Handoff::Run(entries),
        })
    }

    async fn take(&self, lease: &Lease) -> Result<Take, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return Ok(Take::Empty);
        }
        let keys = self.keys.scope(lease.scope());
        let inv = self.exclusive(&self.scripts.take, &keys, lease);
        Ok(match next(self.eval(&inv, self.timeout).await?)? {
            Next::Lost => Take::Lost,
            Next::Released | Next::Empty => Take::Empty,
            Next::Wait(d) => Take::Wait(d),
            Next::Run(entries) => Take::Run(entries),
        })
    }

    async fn release(&self, lease: &Lease) -> Result<bool, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return self.release_slot(lease).await;
        }
        let keys = self.keys.scope(lease.scope());
        let mut inv = self.scripts.release.prepare_invoke();
        inv.key(&keys.lease)
            .key(&keys.orphans)
            .key(&keys.queue)
            .key(&keys.pending)
            .key(&keys.burst)
            .arg(lease.token().as_str())
            .arg(&keys.member);
        let v = self.eval(&inv, self.timeout).await?;
        Ok(crate::reply::int(v)? == 1)
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        let mark = self.keys.thread(thread).dedupe(key);
        let removed: i64 = self.query(redis::cmd("DEL").arg(mark)).await?;
        Ok(removed > 0)
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        max: usize,
        ttl: Duration,
    ) -> Result<Option<Lease>, StateError> {
        if max == 0 {
            return Err(StateError::InvalidRequest("a slot maximum of zero"));
        }
        let keys = self.keys.scope(scope);
        let token = LeaseToken::generate();
        let mut inv = self.scripts.acquire_slot.prepare_invoke();
        inv.key(&keys.slots)
            .key(&keys.slot_cancels)
            .key(&keys.fence)
            .arg(token.as_str())
            .arg(ms(ttl))
            .arg(max);
        let fence = optional_fence(self.eval(&inv, self.timeout).await?)?;
        Ok(fence.map(|f| Lease::new(scope.clone(), token, f, LeaseKind::Slot, ttl)))
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        if request.scope.tag() != request.thread.thread_scope().tag() {
            return Err(tag_mismatch());
        }
        let tag = self.keys.tag(request.scope.tag());
        let keys = tag.scope(&request.scope);
        let mut inv = self.scripts.request_cancel.prepare_invoke();
        inv.key(tag.dedupe(&request.dedupe_key))
            .key(&keys.lease)
            .key(&keys.slots)
            .key(&keys.slot_cancels)
            .arg(ms(request.dedupe_ttl));
        match text(self.eval(&inv, self.timeout).await?)?.as_str() {
            "duplicate" => Ok(CancelOutcome::Duplicate),
            "recorded" => Ok(CancelOutcome::Recorded),
            "no-holder" => Ok(CancelOutcome::NoHolder),
            _ => Err(bad_reply("unknown cancel verdict")),
        }
    }

    async fn sweep(&self, lease_ttl: Duration, limit: usize) -> Result<Vec<Lease>, StateError> {
        let mut leases = Vec::new();
        if limit == 0 {
            return Ok(leases);
        }
        for member in self.orphan_candidates(limit).await? {
            if leases.len() >= limit {
                break;
            }
            let Ok(scope) = serde_json::from_str::<ScopeKey>(&member) else {
                tracing::warn!("chat-state-redis: unreadable scope in an orphan index");
                continue;
            };
            let keys = self.keys.scope(&scope);
            let token = LeaseToken::generate();
            let mut inv = self.scripts.claim.prepare_invoke();
            inv.key(&keys.lease)
                .key(&keys.fence)
                .key(&keys.orphans)
                .key(&keys.queue)
                .key(&keys.pending)
                .key(&keys.burst)
                .arg(&member)
                .arg(token.as_str())
                .arg(ms(lease_ttl));
            if let Some(fence) = optional_fence(self.eval(&inv, self.timeout).await?)? {
                leases.push(Lease::new(
                    scope,
                    token,
                    fence,
                    LeaseKind::Exclusive,
                    lease_ttl,
                ));
            }
        }
        Ok(leases)
    }

    async fn subscribe(&self, thread: &ThreadRef) -> Result<(), StateError> {
        let key = self.keys.thread(thread).subscription(&thread.thread);
        let _: Value = self.query(redis::cmd("SET").arg(key).arg("1")).await?;
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

    async fn kv_get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        let v: Option<Vec<u8>> = self.query(redis::cmd("GET").arg(self.keys.kv(key))).await?;
        Ok(v.map(Bytes::from))
    }

    async fn kv_set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.keys.kv(key)).arg(value.as_ref());
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(ms(ttl));
        }
        if mode == SetMode::IfAbsent {
            cmd.arg("NX");
        }
        let reply: Value = self.query(&cmd).await?;
        Ok(!matches!(reply, Value::Nil))
    }

    async fn kv_delete(&self, key: &str) -> Result<bool, StateError> {
        let removed: i64 = self.query(redis::cmd("DEL").arg(self.keys.kv(key))).await?;
        Ok(removed > 0)
    }

    async fn health(&self) -> Result<(), StateError> {
        let _: Value = self.query(&redis::cmd("PING")).await?;
        Ok(())
    }
}
