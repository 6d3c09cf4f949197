//! The coordination protocol, subscriptions and inspection: each call one
//! prepared `SELECT` of a function of `migrations/0002_protocol.sql`, whose
//! JSON answer is read here.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chat_core::{
    Admission, AdmitRequest, Batch, CancelOutcome, CancelRequest, Concurrency, ConcurrentOptions,
    Coordination, DedupeKey, EntryView, Event, EventId, Fate, ForceRelease, Gate, Handoff,
    HolderView, Inspection, Lease, LeaseKind, LeaseToken, OnFull, Platform, Recovered, Release,
    Renewal, Report, ScopeFilter, ScopeKey, ScopeView, SlotGrant, StateBackend, StateError,
    Subscriptions, Sweep, TenantId, ThreadRef, Waiting,
};
use serde::Deserialize;
use tokio_postgres::types::ToSql;

use crate::state::{PostgresState, ms};

/// A function's answer: a verdict and what goes with it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Answer {
    v: String,
    sub: bool,
    fence: Option<u64>,
    depth: Option<u64>,
    replaced: Option<bool>,
    reason: Option<String>,
    ms: Option<u64>,
    cancels: Option<i64>,
    count: Option<i64>,
    seq: Option<u64>,
    attempt: Option<u32>,
    lapses: Option<u32>,
    handed: Option<i64>,
    items: Vec<Item>,
    max: Option<i64>,
    id: Option<String>,
    th: Option<String>,
    at: Option<i64>,
    b: Option<String>,
}

/// One stored item: an entry (`k` = `E`) or a report (`R`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Item {
    k: String,
    f: Option<String>,
    id: String,
    th: String,
    at: Option<i64>,
    ex: Option<i64>,
    b: Option<String>,
}

/// An inspected entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Seen {
    id: String,
    th: String,
    at: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SeenHolder {
    token: String,
    fence: u64,
    left: i64,
}

/// `inspect()`'s answer.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Inspected {
    now: i64,
    holder: Option<SeenHolder>,
    run: Option<Vec<Seen>>,
    queue: Option<Vec<Seen>>,
    pending: Option<Vec<Seen>>,
    burst: Option<Vec<Seen>>,
    slots: Option<Vec<SeenHolder>>,
    slot_runs: Option<Vec<Seen>>,
}

fn bad(what: &'static str) -> StateError {
    StateError::Codec(what.into())
}

fn read<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, StateError> {
    serde_json::from_str(text).map_err(|e| StateError::Codec(Box::new(e)))
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The scope's row key: its JSON.
fn scope_id(scope: &ScopeKey) -> Result<String, StateError> {
    serde_json::to_string(scope).map_err(|e| StateError::Codec(Box::new(e)))
}

/// A dedupe mark's identity: a digest of the tag and the key, so a key of
/// any length or byte is one fixed-size column.
fn mark_of(scope: &ScopeKey, key: &DedupeKey) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [
        scope.platform.as_str(),
        scope.tenant.as_str(),
        scope.channel.as_str(),
        key.as_str(),
    ] {
        ctx.update(part.as_bytes());
        ctx.update(&[0]);
    }
    ctx.finish().as_ref()[..16].to_vec()
}

fn tag_mismatch() -> StateError {
    StateError::InvalidRequest("the scope's tag differs from its event's thread")
}

/// A stored item, judged at `handed` (server ms): an entry whose event
/// cannot be read is an `Undecodable` report, never an error.
fn item(it: Item, handed: i64, scope: &ScopeKey) -> Result<Result<Waiting, Report>, StateError> {
    let thread = ThreadRef::new(
        scope.platform,
        scope.tenant.as_str(),
        scope.channel.as_str(),
        it.th,
    );
    let id = EventId::new(it.id);
    if it.k == "R" {
        let fate = match it.f.as_deref() {
            Some("e") => Fate::Evicted,
            Some("s") => Fate::Superseded,
            _ => Fate::Undecodable,
        };
        return Ok(Err(Report::new(id, Some(thread), fate)));
    }
    let at = it
        .at
        .ok_or_else(|| bad("an entry without its admission time"))?;
    let Some(event) =
        it.b.as_deref()
            .and_then(|b| serde_json::from_str::<Event>(b).ok())
    else {
        return Ok(Err(Report::new(id, Some(thread), Fate::Undecodable)));
    };
    let expired = it.ex.is_some_and(|ex| ex <= handed);
    Ok(Ok(Waiting::new(
        Arc::new(event),
        millis(handed - at),
        expired,
    )))
}

fn batch(a: Answer, scope: &ScopeKey) -> Result<Batch, StateError> {
    let handed = a.handed.ok_or_else(|| bad("a batch without its time"))?;
    let mut entries = Vec::new();
    let mut reports = Vec::new();
    for it in a.items {
        match item(it, handed, scope)? {
            Ok(w) => entries.push(w),
            Err(r) => reports.push(r),
        }
    }
    Ok(Batch::new(
        a.seq.ok_or_else(|| bad("a batch without its seq"))?,
        entries,
        reports,
    )
    .attempts(a.attempt.unwrap_or(1), a.lapses.unwrap_or(0)))
}

fn count(n: Option<i64>) -> u32 {
    u32::try_from(n.unwrap_or(0)).unwrap_or(u32::MAX)
}

impl PostgresState {
    /// `SELECT <schema>.<function>($1, …)::text` with `params`; its JSON.
    async fn call_text(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<String>, StateError> {
        let (rows, _) = self.statement(sql, params).await?;
        Ok(rows.first().and_then(|r| r.get::<_, Option<String>>(0)))
    }

    async fn answer(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Answer, StateError> {
        let text = self
            .call_text(sql, params)
            .await?
            .ok_or_else(|| bad("no answer"))?;
        read(&text)
    }

    /// A flag statement on one thread: `($1 namespace, $2 platform, $3
    /// tenant, $4 channel, $5 thread)`.
    async fn thread_flag(&self, sql: &str, thread: &ThreadRef) -> Result<bool, StateError> {
        self.flag(
            sql,
            &[
                &self.namespace,
                &thread.platform.as_str(),
                &thread.tenant.as_str(),
                &thread.channel,
                &thread.thread,
            ],
        )
        .await
    }

    async fn flag(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<bool, StateError> {
        let (rows, _) = self.statement(sql, params).await?;
        Ok(rows
            .first()
            .and_then(|r| r.get::<_, Option<bool>>(0))
            .unwrap_or(false))
    }

    async fn release_slot(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        let scope = lease.scope();
        let id = scope_id(scope)?;
        let hand_back = matches!(how, Release::HandBack);
        self.flag(
            &self.sql.release_slot,
            &[
                &self.namespace,
                &id,
                &scope.platform.as_str(),
                &scope.tenant.as_str(),
                &scope.channel,
                &lease.token().as_str(),
                &hand_back,
                &ms(lease.ttl()),
            ],
        )
        .await
    }

    /// One claim of the sweep, for a fresh token.
    async fn claim(
        &self,
        id: &str,
        scope: ScopeKey,
        lease_ttl: Duration,
    ) -> Result<Option<Recovered>, StateError> {
        let token = LeaseToken::generate();
        let text = self
            .call_text(
                &self.sql.claim,
                &[
                    &self.namespace,
                    &id,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &token.as_str(),
                    &ms(lease_ttl),
                ],
            )
            .await?;
        let Some(text) = text else {
            return Ok(None);
        };
        let a: Answer = read(&text)?;
        Ok(Some(match a.v.as_str() {
            "scope" => Recovered::Scope(Lease::new(
                scope,
                token,
                a.fence.ok_or_else(|| bad("a claim without its fence"))?,
                LeaseKind::Exclusive,
                lease_ttl,
            )),
            "slot" => {
                let concurrency = match a.max {
                    Some(n) if n > 0 => {
                        ConcurrentOptions::default().max(usize::try_from(n).unwrap_or(usize::MAX))
                    }
                    _ => ConcurrentOptions::default(),
                };
                let at = a.at.ok_or_else(|| bad("a slot run without its time"))?;
                let it = Item {
                    k: "E".to_owned(),
                    f: None,
                    id: a.id.unwrap_or_default(),
                    th: a.th.unwrap_or_default(),
                    at: Some(at),
                    ex: None,
                    b: a.b,
                };
                // Judged at its own admission: the wait of a recovered slot
                // run is not counted again.
                let batch = match item(it, at, &scope)? {
                    Ok(w) => Batch::new(0, vec![w], Vec::new()),
                    Err(r) => Batch::new(0, Vec::new(), vec![r]),
                }
                .attempts(a.attempt.unwrap_or(1), a.lapses.unwrap_or(0));
                Recovered::Slot {
                    scope,
                    token,
                    batch,
                    concurrency,
                }
            }
            _ => return Err(bad("unknown claim verdict")),
        }))
    }
}

#[async_trait]
impl Coordination for PostgresState {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        let event = &request.event;
        let scope = &request.scope;
        if scope.tag() != event.thread.scope_tag() {
            return Err(tag_mismatch());
        }
        request
            .concurrency
            .validate()
            .map_err(|e| StateError::InvalidRequest(e.as_str()))?;
        let body =
            serde_json::to_string(event.as_ref()).map_err(|e| StateError::Codec(Box::new(e)))?;
        let id = scope_id(scope)?;
        let mark = mark_of(scope, &event.dedupe_key);
        let gate = match request.gate {
            Gate::Subscribed => "subscribed",
            _ => "open",
        };
        let (mut q_max, mut drop_newest, mut entry_ttl) = (0_i64, false, 1_i64);
        let (mut interval, mut window, mut max_batch, mut max_waiting, mut c_max) =
            (1_i64, 1_i64, 0_i64, 0_i64, 0_i64);
        let mut kind = LeaseKind::Exclusive;
        let strategy = match &request.concurrency {
            Concurrency::Queue(q) => {
                q_max = i64::try_from(q.max_size).unwrap_or(i64::MAX);
                drop_newest = matches!(q.on_full, OnFull::DropNewest);
                entry_ttl = ms(q.entry_ttl);
                "queue"
            }
            Concurrency::Debounce(d) => {
                interval = ms(d.interval);
                entry_ttl = ms(d.entry_ttl);
                "debounce"
            }
            Concurrency::Burst(b) => {
                window = ms(b.window);
                max_batch = b
                    .max_batch
                    .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
                max_waiting = i64::try_from(b.max_waiting).unwrap_or(i64::MAX);
                entry_ttl = ms(b.entry_ttl);
                "burst"
            }
            Concurrency::Concurrent(c) => {
                kind = LeaseKind::Slot;
                c_max = c.max.map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
                "concurrent"
            }
            _ => "drop",
        };
        let a = self
            .answer(
                &self.sql.admit,
                &[
                    &self.namespace,
                    &id,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &mark,
                    &event.thread.thread,
                    &event.id.as_str(),
                    &body,
                    &strategy,
                    &gate,
                    &ms(request.dedupe_ttl),
                    &ms(request.lease_ttl),
                    &ms(request.subscription_ttl),
                    &request.id.as_str(),
                    &q_max,
                    &drop_newest,
                    &entry_ttl,
                    &interval,
                    &window,
                    &max_batch,
                    &max_waiting,
                    &c_max,
                ],
            )
            .await?;
        let lease = |fence: Option<u64>| -> Result<Lease, StateError> {
            Ok(Lease::new(
                scope.clone(),
                request.id.clone(),
                fence.ok_or_else(|| bad("a grant without its fence"))?,
                kind,
                request.lease_ttl,
            ))
        };
        use chat_core::{Decision, DropReason};
        let decision = match a.v.as_str() {
            "duplicate" => Decision::Duplicate,
            "not-subscribed" => Decision::NotSubscribed,
            "full" => Decision::Full,
            "stored" => Decision::Stored,
            "waiting-for-slot" => Decision::WaitingForSlot,
            "run" => Decision::Run(lease(a.fence)?),
            "hold" => Decision::Hold(lease(a.fence)?),
            "queued" => Decision::Queued {
                depth: usize::try_from(a.depth.unwrap_or(0)).unwrap_or(usize::MAX),
            },
            "pending" => Decision::Pending {
                replaced: a.replaced.unwrap_or(false),
            },
            "dropped" => match a.reason.as_deref() {
                Some("busy") => Decision::Dropped(DropReason::Busy),
                Some("queue-full") => Decision::Dropped(DropReason::QueueFull),
                _ => return Err(bad("unknown drop reason")),
            },
            _ => return Err(bad("unknown admit verdict")),
        };
        Ok(Admission::new(decision, a.sub))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        let scope = lease.scope();
        let a = self
            .answer(
                &self.sql.renew,
                &[
                    &self.namespace,
                    &scope_id(scope)?,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &lease.token().as_str(),
                    &(lease.kind() == LeaseKind::Slot),
                    &ms(ttl),
                ],
            )
            .await?;
        Ok(match a.v.as_str() {
            "renewed" => Renewal::Renewed {
                cancel_requests: count(a.cancels),
            },
            _ => Renewal::Lost,
        })
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return Ok(if self.release_slot(lease, Release::Done).await? {
                Handoff::Released
            } else {
                Handoff::Lost
            });
        }
        let scope = lease.scope();
        let seq = i64::try_from(lease.seq()).map_err(|_| bad("a seq past i64"))?;
        let a = self
            .answer(
                &self.sql.finish,
                &[
                    &self.namespace,
                    &scope_id(scope)?,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &lease.token().as_str(),
                    &seq,
                    &ms(lease.ttl()),
                ],
            )
            .await?;
        Ok(match a.v.as_str() {
            "lost" => Handoff::Lost,
            "released" => Handoff::Released,
            "wait" => Handoff::Wait(Duration::from_millis(a.ms.unwrap_or(0))),
            "run" => Handoff::Run(batch(a, scope)?),
            _ => return Err(bad("unknown handoff verdict")),
        })
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        if lease.kind() == LeaseKind::Slot {
            return self.release_slot(lease, how).await;
        }
        let scope = lease.scope();
        let seq = i64::try_from(lease.seq()).map_err(|_| bad("a seq past i64"))?;
        self.flag(
            &self.sql.release,
            &[
                &self.namespace,
                &scope_id(scope)?,
                &scope.platform.as_str(),
                &scope.tenant.as_str(),
                &scope.channel,
                &lease.token().as_str(),
                &seq,
                &matches!(how, Release::HandBack),
                &ms(lease.ttl()),
            ],
        )
        .await
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        let scope = thread.thread_scope();
        self.flag(
            &self.sql.unmark,
            &[
                &self.namespace,
                &scope.platform.as_str(),
                &scope.tenant.as_str(),
                &scope.channel,
                &mark_of(&scope, key),
            ],
        )
        .await
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
        let bound = max.map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let a = self
            .answer(
                &self.sql.acquire_slot,
                &[
                    &self.namespace,
                    &scope_id(scope)?,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &token.as_str(),
                    &bound,
                    &ms(ttl),
                ],
            )
            .await?;
        Ok(match a.v.as_str() {
            "granted" => SlotGrant::Granted(Lease::new(
                scope.clone(),
                token.clone(),
                a.fence.ok_or_else(|| bad("a grant without its fence"))?,
                LeaseKind::Slot,
                ttl,
            )),
            "full" => SlotGrant::Full,
            "gone" => SlotGrant::Gone,
            _ => return Err(bad("unknown slot verdict")),
        })
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        let scope = &request.scope;
        if scope.tag() != request.thread.scope_tag() {
            return Err(tag_mismatch());
        }
        let a = self
            .answer(
                &self.sql.request_cancel,
                &[
                    &self.namespace,
                    &scope_id(scope)?,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &mark_of(scope, &request.dedupe_key),
                    &request.id.as_str(),
                    &ms(request.dedupe_ttl),
                ],
            )
            .await?;
        Ok(match a.v.as_str() {
            "duplicate" => CancelOutcome::Duplicate,
            "recorded" => CancelOutcome::Recorded {
                count: count(a.count),
            },
            "no-holder" => CancelOutcome::NoHolder,
            _ => return Err(bad("unknown cancel verdict")),
        })
    }

    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError> {
        let mut recovered = Vec::new();
        if request.limit == 0 {
            return Ok(recovered);
        }
        // Housekeeping first: what has expired goes, in bounded batches.
        let batch = i32::try_from(request.limit.saturating_mul(16).clamp(64, 4096)).unwrap_or(4096);
        if let Err(e) = self
            .statement(&self.sql.purge, &[&self.namespace, &batch])
            .await
        {
            tracing::warn!(error = %e, "chat-state-postgres: housekeeping failed");
        }
        let skip: Vec<&str> = request.skip_tenants.iter().map(TenantId::as_str).collect();
        let cap = i32::try_from(request.limit.saturating_mul(2).max(request.limit + 16))
            .unwrap_or(i32::MAX);
        let (rows, _) = self
            .statement(&self.sql.sweep_candidates, &[&self.namespace, &skip, &cap])
            .await?;
        for row in rows {
            if recovered.len() >= request.limit {
                break;
            }
            let id: String = row.get(0);
            let Ok(scope) = serde_json::from_str::<ScopeKey>(&id) else {
                tracing::warn!("chat-state-postgres: an unreadable scope");
                continue;
            };
            if !request.wants(&scope) {
                continue;
            }
            // One scope's failure never costs the others their turn.
            match self.claim(&id, scope, request.lease_ttl).await {
                Ok(Some(r)) => recovered.push(r),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "chat-state-postgres: a recovery claim failed");
                }
            }
        }
        Ok(recovered)
    }
}

#[async_trait]
impl Subscriptions for PostgresState {
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        self.statement(
            &self.sql.subscribe,
            &[
                &self.namespace,
                &thread.platform.as_str(),
                &thread.tenant.as_str(),
                &thread.channel,
                &thread.thread,
                &ms(ttl),
            ],
        )
        .await
        .map(drop)
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        self.thread_flag(&self.sql.unsubscribe, thread).await
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        self.thread_flag(&self.sql.is_subscribed, thread).await
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        let (rows, _) = self
            .statement(
                &self.sql.unsubscribe_tenant,
                &[&self.namespace, &platform.as_str(), &tenant.as_str()],
            )
            .await?;
        Ok(rows
            .first()
            .map_or(0, |r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)))
    }
}

fn entry_views(seen: Option<Vec<Seen>>, now: i64) -> Vec<EntryView> {
    seen.unwrap_or_default()
        .into_iter()
        .map(|s| EntryView::new(EventId::new(s.id), s.th, millis(now - s.at)))
        .collect()
}

#[async_trait]
impl Inspection for PostgresState {
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        let platform = filter.platform.map(|p| p.as_str().to_owned());
        let tenant = filter.tenant.as_ref().map(|t| t.as_str().to_owned());
        let (rows, _) = self
            .statement(
                &self.sql.busy_candidates,
                &[&self.namespace, &platform, &tenant, &filter.channel],
            )
            .await?;
        let mut out = Vec::new();
        for row in rows {
            if out.len() >= limit {
                break;
            }
            let id: String = row.get(0);
            let Ok(scope) = serde_json::from_str::<ScopeKey>(&id) else {
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
        let text = self
            .call_text(&self.sql.inspect, &[&self.namespace, &scope_id(scope)?])
            .await?
            .ok_or_else(|| bad("no answer"))?;
        let i: Inspected = read(&text)?;
        let mut view = ScopeView::new(scope.clone());
        if let Some(h) = i.holder {
            view.holder = Some(HolderView::new(&h.token, h.fence, millis(h.left)));
        }
        for s in i.slots.unwrap_or_default() {
            view.slots
                .push(HolderView::new(&s.token, s.fence, millis(s.left)));
        }
        view.in_flight = entry_views(i.run, i.now);
        view.in_flight.extend(entry_views(i.slot_runs, i.now));
        view.queued = entry_views(i.queue, i.now);
        view.pending = entry_views(i.pending, i.now);
        view.burst = entry_views(i.burst, i.now);
        Ok((!view.is_idle()).then_some(view))
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        let Ok(fence) = i64::try_from(fence) else {
            return Ok(ForceRelease::Stale);
        };
        let released = self
            .flag(
                &self.sql.force_release,
                &[
                    &self.namespace,
                    &scope_id(scope)?,
                    &scope.platform.as_str(),
                    &scope.tenant.as_str(),
                    &scope.channel,
                    &fence,
                ],
            )
            .await?;
        Ok(if released {
            ForceRelease::Released
        } else {
            ForceRelease::Stale
        })
    }
}

#[async_trait]
impl StateBackend for PostgresState {
    async fn health(&self) -> Result<(), StateError> {
        self.statement("SELECT 1", &[]).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_per_tag_and_key_and_fixed_size() {
        let t = |channel: &str| {
            ThreadRef::new(Platform::new("test"), "T1", channel, "1").thread_scope()
        };
        let key = DedupeKey::new("ev1");
        assert_eq!(mark_of(&t("C1"), &key).len(), 16);
        assert_eq!(mark_of(&t("C1"), &key), mark_of(&t("C1"), &key));
        assert_ne!(mark_of(&t("C1"), &key), mark_of(&t("C2"), &key));
        // The separator keeps "C1"+"x" and "C"+"1x" apart.
        assert_ne!(
            mark_of(&t("C1"), &DedupeKey::new("x")),
            mark_of(&t("C"), &DedupeKey::new("1x"))
        );
    }

    #[test]
    fn an_entry_that_cannot_be_read_is_reported_not_an_error() {
        let scope = ThreadRef::new(Platform::new("test"), "T1", "C1", "1").thread_scope();
        let it = Item {
            k: "E".to_owned(),
            id: "ev1".to_owned(),
            th: "1".to_owned(),
            at: Some(1000),
            b: Some("not json".to_owned()),
            ..Item::default()
        };
        match item(it, 2000, &scope) {
            Ok(Err(r)) => assert_eq!(r.fate, Fate::Undecodable),
            other => panic!("{other:?}"),
        }
    }
}
