//! The ack path: verify, parse, resolve, admission, one `admit`, respond — and, under sync
//! dispatch, the handler before the response.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use chat_core::{
    AdmitRequest, CancelOutcome, CancelRequest, Concurrency, Decision, Event, EventKind, Gate,
    Inbound, PlatformAdapter, Resolution, ScopeKey, Verdict,
};
use http::request::Parts;
use tokio::time::Instant;
use tracing::Instrument;

use crate::bot::{BotInner, lock};
use crate::cancel::CancelCause;
use crate::holder::{self, ReplySlot, Work};
use crate::options::{Dispatch, LockScope, ScopeChoice};
use crate::outcome::{Outcome, OutcomeRecord};
use crate::router::Plan;

/// Runs the ack path on a task of its own, so a client that hangs up mid-way
/// cannot abandon an event between its admission and its hand-off to a handler.
pub(crate) async fn deliver_detached(
    inner: &Arc<BotInner>,
    adapter: Arc<dyn PlatformAdapter>,
    parts: Parts,
    body: Bytes,
) -> http::Response<Bytes> {
    crate::holder::start_sweeper(inner);
    let task_inner = Arc::clone(inner);
    let task_adapter = Arc::clone(&adapter);
    let task = inner
        .tracker
        .spawn(async move { deliver(&task_inner, &task_adapter, &parts, body).await });
    // The platform must hear back inside its deadline. Past `ack_timeout` it is
    // told to retry, while the delivery goes on: whatever `admit` decided still
    // happens (a handler that got the lease runs; the retry is then a duplicate).
    match tokio::time::timeout(inner.options.ack_timeout, task).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "delivery task failed");
            adapter.respond(None, &Verdict::Failed)
        }
        Err(_) => {
            tracing::warn!(name: "ack-timeout", adapter = adapter.name(), "answered before the delivery finished; the platform will retry");
            adapter.respond(None, &Verdict::AtCapacity)
        }
    }
}

async fn deliver(
    inner: &Arc<BotInner>,
    adapter: &Arc<dyn PlatformAdapter>,
    parts: &Parts,
    body: Bytes,
) -> http::Response<Bytes> {
    if let Err(e) = adapter.verify(parts, &body) {
        tracing::info!(name: "webhook-rejected", adapter = adapter.name(), error = %e);
        return adapter.respond(None, &Verdict::Rejected(e));
    }
    let event = match adapter.parse(parts, &body) {
        Err(e) => {
            tracing::info!(name: "webhook-rejected", adapter = adapter.name(), error = %e);
            return adapter.respond(None, &Verdict::Rejected(e));
        }
        Ok(Inbound::Reply(response)) => return response,
        Ok(Inbound::Ignored { reason }) => {
            tracing::debug!(name: "message-ignored", adapter = adapter.name(), reason = reason.as_str());
            inner.recorder.record(&OutcomeRecord {
                event_id: chat_core::EventId::new(""),
                thread: None,
                outcome: Outcome::Ignored,
                reason: "adapter",
                ran_for: None,
                cancel_latency: None,
            });
            return adapter.respond(None, &Verdict::Ignored);
        }
        Ok(Inbound::Event(mut event)) => match adapter.resolve(&mut event).await {
            Ok(Resolution::Ignored { reason }) => {
                tracing::debug!(name: "message-ignored", adapter = adapter.name(), reason);
                inner.recorder.event(&event, Outcome::Ignored, reason);
                return adapter.respond(Some(&event), &Verdict::Ignored);
            }
            Ok(_) => Arc::new(*event),
            Err(e) => {
                tracing::warn!(adapter = adapter.name(), event_id = %event.id, error = %e, "resolving the event failed; the platform will retry");
                inner
                    .recorder
                    .event(&event, Outcome::Rejected, "resolve-failed");
                return adapter.respond(Some(&event), &Verdict::Failed);
            }
        },
        Ok(_) => return adapter.respond(None, &Verdict::Ignored),
    };
    let span = tracing::info_span!(
        "delivery",
        platform = %event.platform(),
        tenant = %event.tenant(),
        event_id = %event.id,
        scope = %scope_of(inner, adapter.as_ref(), &event),
    );
    let decide = async {
        match inner.handlers.plan(&event) {
            Plan::Ignore(reason) => {
                inner.recorder.event(&event, Outcome::Ignored, reason);
                Verdict::Ignored
            }
            Plan::Control => stop(inner, adapter, &event).await,
            Plan::Admit { gate, serialized } => {
                admit(inner, adapter, &event, gate, serialized).await
            }
        }
    };
    let verdict = decide.instrument(span).await;
    adapter.respond(Some(&event), &verdict)
}

/// The scope `event` is serialized on.
pub(crate) fn scope_of(inner: &BotInner, adapter: &dyn PlatformAdapter, event: &Event) -> ScopeKey {
    match &inner.options.lock_scope {
        LockScope::Thread => event.thread.thread_scope(),
        LockScope::Channel => event.thread.channel_scope(),
        LockScope::Function(f) => match f(event) {
            ScopeChoice::Channel => event.thread.channel_scope(),
            ScopeChoice::Thread => event.thread.thread_scope(),
        },
        _ => adapter.lock_scope().scope_of(&event.thread),
    }
}

/// A control event: cancel the scope's running turn here at once, and record the
/// request on the lease so a holder on another replica learns it at renewal.
async fn stop(
    inner: &Arc<BotInner>,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
) -> Verdict {
    let scope = scope_of(inner, adapter.as_ref(), event);
    if let Some(runs) = lock(&inner.runs).get(&scope) {
        for run in runs {
            run.cancel(CancelCause::StopRequested);
        }
    }
    let req = CancelRequest::new(event, scope).dedupe_ttl(inner.options.dedupe_ttl);
    match inner.state.request_cancel(req).await {
        Ok(CancelOutcome::Duplicate) => {
            inner.recorder.event(event, Outcome::Duplicate, "duplicate");
            Verdict::Duplicate
        }
        Ok(_) => {
            inner.recorder.event(event, Outcome::Ran, "stop-request");
            Verdict::Accepted
        }
        Err(e) => {
            tracing::warn!(error = %e, "recording a stop request failed");
            inner
                .recorder
                .event(event, Outcome::Rejected, "state-error");
            Verdict::Failed
        }
    }
}

async fn admit(
    inner: &Arc<BotInner>,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
    gate: Gate,
    serialized: bool,
) -> Verdict {
    let accepted_at = Instant::now();
    if inner.closed.load(Ordering::SeqCst) {
        inner
            .recorder
            .event(event, Outcome::Rejected, "shutting-down");
        return Verdict::AtCapacity;
    }
    let admitted = inner.options.dispatch == Dispatch::Deferred;
    // Interactions that are answered in the HTTP response itself (a slash
    // command's text, a modal's response_action) run before the acknowledgement
    // even under deferred dispatch, unless the options say otherwise.
    let inline = inner.options.inline_interactions
        && matches!(
            event.kind,
            EventKind::SlashCommand(_) | EventKind::ModalSubmit(_) | EventKind::ModalClose(_)
        );
    let deferred = admitted && !inline;
    // Admission comes before any state is touched: a refused delivery is not
    // marked, so the platform's retry is new.
    let permit = if admitted {
        match inner.admission.try_admit(event.tenant()) {
            Some(p) => Some(p),
            None => {
                inner
                    .recorder
                    .event(event, Outcome::Rejected, "at-capacity");
                return Verdict::AtCapacity;
            }
        }
    } else {
        None
    };
    let concurrency = if serialized {
        inner.options.concurrency
    } else {
        Concurrency::concurrent()
    };
    let scope = scope_of(inner, adapter.as_ref(), event);
    let req = AdmitRequest::new(Arc::clone(event), scope.clone(), concurrency)
        .gate(gate)
        .dedupe_ttl(inner.options.dedupe_ttl)
        .lease_ttl(inner.options.lock_ttl);
    let admission = match inner.state.admit(req).await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, event_id = %event.id, "admit failed");
            inner
                .recorder
                .event(event, Outcome::Rejected, "state-error");
            return Verdict::Failed;
        }
    };
    let deadline = deferred.then(|| accepted_at + inner.options.detach_timeout);
    let posted = Arc::new(AtomicBool::new(false));
    let reply: ReplySlot = Arc::default();
    let work = Work {
        event: Arc::clone(event),
        skipped: Vec::new(),
        deadline,
        subscribed: Some(admission.subscribed),
        posted: Arc::clone(&posted),
        reply: (!deferred).then(|| Arc::clone(&reply)),
    };
    let ctx = holder::Holder::new(inner, adapter, concurrency);
    let verdict = decide(
        inner,
        event,
        admission.decision,
        deferred,
        &scope,
        accepted_at,
        &ctx,
        work,
        permit,
        concurrency,
    )
    .await;
    if deferred && verdict == Verdict::Accepted {
        after_ack(inner, adapter, event, posted);
    }
    if verdict == Verdict::Accepted
        && let Some(value) = reply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    {
        return Verdict::Reply(value);
    }
    verdict
}

/// The adapter's first-response duty, right after the acknowledgement.
fn after_ack(
    inner: &BotInner,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
    posted: Arc<AtomicBool>,
) {
    let adapter = Arc::clone(adapter);
    let event = Arc::clone(event);
    inner.tracker.spawn(async move {
        // Let the response go out first.
        tokio::task::yield_now().await;
        let posted = move || posted.load(Ordering::Acquire);
        adapter.after_ack(&event, &posted).await;
    });
}

#[allow(clippy::too_many_arguments)]
async fn decide(
    inner: &Arc<BotInner>,
    event: &Arc<Event>,
    decision: Decision,
    deferred: bool,
    scope: &ScopeKey,
    accepted_at: Instant,
    ctx: &holder::Holder,
    work: Work,
    permit: Option<crate::admission::Permit>,
    concurrency: Concurrency,
) -> Verdict {
    match decision {
        Decision::Duplicate => {
            inner.recorder.event(event, Outcome::Duplicate, "duplicate");
            Verdict::Duplicate
        }
        Decision::NotSubscribed => {
            inner
                .recorder
                .event(event, Outcome::Ignored, "not-subscribed");
            Verdict::Ignored
        }
        Decision::Full => {
            inner.recorder.event(event, Outcome::Rejected, "full");
            Verdict::AtCapacity
        }
        Decision::Dropped(reason) => {
            inner
                .recorder
                .event(event, Outcome::Dropped, reason.as_str());
            Verdict::Accepted
        }
        Decision::Queued { depth, evicted } => {
            tracing::info!(name: "message-queued", thread = %event.thread, message_id = %event.id, queue_depth = depth);
            if let Concurrency::Burst(b) = concurrency
                && b.max_batch.is_some()
                && let Some(waker) = lock(&inner.wakers).get(scope)
            {
                // The batch may have just sealed early: let a local holder look.
                waker.notify_one();
            }
            if let Some(w) = evicted {
                inner.recorder.event(&w.event, Outcome::Dropped, "evicted");
            }
            Verdict::Accepted
        }
        Decision::Pending { superseded } => {
            match superseded {
                Some(w) => {
                    tracing::info!(name: "message-debounce-reset", thread = %event.thread, message_id = %event.id);
                    inner
                        .recorder
                        .event(&w.event, Outcome::Superseded, "debounce");
                }
                None => {
                    tracing::info!(name: "message-debouncing", thread = %event.thread, message_id = %event.id);
                }
            }
            Verdict::Accepted
        }
        Decision::Hold { lease, superseded } => {
            if let Some(w) = superseded {
                inner
                    .recorder
                    .event(&w.event, Outcome::Superseded, "orphaned-pending");
            }
            if matches!(concurrency, Concurrency::Debounce(_)) {
                tracing::info!(name: "message-debouncing", thread = %event.thread, message_id = %event.id);
            }
            ctx.spawn_holder(lease, None, permit);
            Verdict::Accepted
        }
        Decision::Run(lease) => {
            if deferred {
                ctx.spawn_holder(lease, Some(work), permit);
                Verdict::Accepted
            } else {
                sync_verdict(inner, event, ctx.run_sync(lease, work).await).await
            }
        }
        Decision::Unlocked => {
            if deferred {
                ctx.spawn_unlocked(work, permit);
                Verdict::Accepted
            } else {
                sync_verdict(inner, event, ctx.run_unlocked(work).await).await
            }
        }
        Decision::WaitingForSlot => {
            if deferred {
                ctx.spawn_slot_waiter(scope.clone(), work, permit);
                Verdict::Accepted
            } else {
                match ctx
                    .wait_for_slot(scope, accepted_at + inner.options.sync_slot_wait)
                    .await
                {
                    Some(lease) => {
                        sync_verdict(inner, event, ctx.run_sync(lease, work).await).await
                    }
                    None => {
                        // Refused after all: unmark, so the platform's retry runs.
                        unmark(inner, event).await;
                        inner.recorder.event(event, Outcome::Rejected, "no-slot");
                        Verdict::AtCapacity
                    }
                }
            }
        }
        _ => {
            inner
                .recorder
                .event(event, Outcome::Rejected, "unknown-decision");
            Verdict::Failed
        }
    }
}

/// Sync dispatch: a failed handler's dedupe mark is removed and the platform is
/// answered so it retries.
async fn sync_verdict(inner: &BotInner, event: &Event, outcome: Outcome) -> Verdict {
    match outcome {
        Outcome::Failed => {
            unmark(inner, event).await;
            Verdict::Failed
        }
        _ => Verdict::Accepted,
    }
}

async fn unmark(inner: &BotInner, event: &Event) {
    if let Err(e) = inner.state.unmark(&event.thread, &event.dedupe_key).await {
        tracing::warn!(error = %e, event_id = %event.id, "unmark failed; the platform's retry will be a duplicate");
    }
}
