//! The ack path: verify, parse, resolve, admission, one `admit`, respond — and, under sync
//! dispatch, the handler before the response.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use chat_core::{
    AdmitRequest, CancelOutcome, CancelRequest, Concurrency, Decision, Event, EventKind, Gate,
    Inbound, LeaseToken, PlatformAdapter, Resolution, ScopeKey, Verdict,
};
use http::request::Parts;
use tokio::time::Instant;
use tracing::Instrument;

use crate::holder::{Holder, SyncEnd};
use crate::options::{Dispatch, LockScope, ScopeChoice};
use crate::outcome::{Outcome, OutcomeRecord};
use crate::response::DeliveryResponse;
use crate::retry::repeat;
use crate::router::Plan;
use crate::shared::Shared;
use crate::slots::SlotWait;
use crate::work::RunItem;

/// Runs the ack path on a task of its own, so a client that hangs up mid-way
/// cannot abandon an event between its admission and its hand-off to a handler.
pub(crate) async fn deliver_detached(
    shared: &Arc<Shared>,
    adapter: Arc<dyn PlatformAdapter>,
    parts: Parts,
    body: Bytes,
) -> http::Response<Bytes> {
    let received = Instant::now();
    crate::sweep::start_sweeper(shared);
    let task_inner = Arc::clone(shared);
    let task_adapter = Arc::clone(&adapter);
    let answer = DeliveryResponse::default();
    let task_answer = answer.clone();
    // Boxed: the delivery's future is about 5 KB, which a task's cell would
    // otherwise copy as it is spawned and again as it completes.
    let task = shared.tracker().spawn(Box::pin(async move {
        deliver(&task_inner, &task_adapter, &parts, body, &task_answer).await
    }));
    // The platform must hear back inside its deadline. Past `timeouts.ack` it is
    // told to retry (or, for what it never retries, that the answer will
    // follow), while the delivery goes on: whatever `admit` decided still
    // happens (a handler that got the lease runs; the retry is then a duplicate).
    let (response, verdict) = match tokio::time::timeout(shared.options().timeouts.ack, task).await
    {
        Ok(Ok(response)) => (response, answer.verdict().unwrap_or("accepted")),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "delivery task failed");
            let verdict = Verdict::Failed;
            let response = adapter.respond(answer.event().map(|e| &**e), &verdict);
            (response, verdict.name())
        }
        Err(_) => {
            let verdict = answer.timed_out();
            tracing::warn!(name: "ack-timeout", adapter = adapter.name(), verdict = verdict.name(), "answered before the delivery finished");
            let response = adapter.respond(answer.event().map(|e| &**e), &verdict);
            (response, verdict.name())
        }
    };
    crate::telemetry::delivery(adapter.platform(), verdict, received.elapsed());
    response
}

/// The adapter's answer to `verdict`, noted for the delivery's metrics.
fn respond(
    answer: &DeliveryResponse,
    adapter: &Arc<dyn PlatformAdapter>,
    event: Option<&Event>,
    verdict: &Verdict,
) -> http::Response<Bytes> {
    answer.answered(verdict.name());
    adapter.respond(event, verdict)
}

/// A delivery refused at the door (bad signature, malformed): one line per
/// second at most, each with how many it stands for, so that a flood of
/// unsigned requests is not a flood of log lines.
fn log_rejected(shared: &Shared, adapter: &dyn PlatformAdapter, e: &chat_core::WebhookError) {
    if let Some(suppressed) = shared.log_rejection() {
        tracing::info!(name: "webhook-rejected", adapter = adapter.name(), error = %e, suppressed);
    }
}

/// The tenant removed the app: its subscriptions go, in the background (the
/// walk may take a while on a large store; the acknowledgement does not wait).
fn forget_tenant(shared: &Arc<Shared>, event: &chat_core::Event) {
    let state = shared.state().clone();
    let platform = event.platform();
    let tenant = event.thread.tenant.clone();
    shared.tracker().spawn(async move {
        match state.unsubscribe_tenant(platform, &tenant).await {
            Ok(removed) => {
                tracing::info!(name: "tenant-unsubscribed", platform = %platform, tenant = %tenant, removed);
            }
            Err(e) => {
                tracing::warn!(name: "tenant-unsubscribe-failed", platform = %platform, tenant = %tenant, error = %e, "removing an uninstalled tenant's subscriptions failed; they expire with their TTL");
            }
        }
    });
}

async fn deliver(
    shared: &Arc<Shared>,
    adapter: &Arc<dyn PlatformAdapter>,
    parts: &Parts,
    body: Bytes,
    answer: &DeliveryResponse,
) -> http::Response<Bytes> {
    if let Err(e) = adapter.verify(parts, &body) {
        log_rejected(shared, adapter.as_ref(), &e);
        return respond(answer, adapter, None, &Verdict::Rejected(e));
    }
    let event = match adapter.parse(parts, &body) {
        Err(e) => {
            log_rejected(shared, adapter.as_ref(), &e);
            return respond(answer, adapter, None, &Verdict::Rejected(e));
        }
        Ok(Inbound::Response(response)) => {
            answer.answered("reply");
            return response;
        }
        Ok(Inbound::Ignored { reason }) => {
            tracing::debug!(name: "message-ignored", adapter = adapter.name(), reason = reason.as_str());
            shared.recorder().record(OutcomeRecord {
                event_id: chat_core::EventId::new(""),
                thread: None,
                outcome: Outcome::Ignored,
                reason: "adapter",
                ran_for: None,
                cancel_latency: None,
                ended_at: None,
            });
            return respond(answer, adapter, None, &Verdict::Ignored);
        }
        Ok(Inbound::Event(event)) => event,
        Ok(Inbound::Events(events)) => {
            // In order: a batch's messages are turns of their conversations.
            let mut worst = None;
            let mut last = None;
            for event in events {
                let (event, verdict) =
                    deliver_event(shared, adapter, Box::new(event), answer).await;
                // One answer cannot carry each event's reply, and a worse
                // verdict of a later event would drop it: each goes out on
                // its own.
                let verdict = match (verdict, &event) {
                    (Verdict::Reply(reply), Some(replied)) => {
                        reply_later(shared, adapter, replied, reply);
                        Verdict::Accepted
                    }
                    (verdict, _) => verdict,
                };
                last = event.or(last);
                worst = Some(match worst {
                    Some(w) => worse(w, verdict),
                    None => verdict,
                });
            }
            let verdict = worst.unwrap_or(Verdict::Ignored);
            return respond(answer, adapter, last.as_deref(), &verdict);
        }
        Ok(_) => return respond(answer, adapter, None, &Verdict::Ignored),
    };
    let (event, verdict) = deliver_event(shared, adapter, event, answer).await;
    respond(answer, adapter, event.as_deref(), &verdict)
}

/// Sends `reply` to `event` after the response, on the bot's tracker (so
/// shutdown waits for it like for a handler).
fn reply_later(
    shared: &Arc<Shared>,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
    reply: chat_core::Reply,
) {
    let (adapter, event) = (Arc::clone(adapter), Arc::clone(event));
    shared.tracker().spawn(async move {
        if let Err(e) = adapter.reply_later(&event, &reply).await {
            tracing::warn!(error = %e, event_id = %event.id, "a reply after the response could not be sent");
        }
    });
}

/// The verdict a batch of events is answered with: the one that most needs
/// the platform to send it again — failed, then at capacity, then still
/// running — else accepted, then duplicate, then ignored. Deduplication makes
/// what already ran a duplicate of the retry.
fn worse(a: Verdict, b: Verdict) -> Verdict {
    fn rank(v: &Verdict) -> u8 {
        match v {
            Verdict::Rejected(_) => 7,
            Verdict::Failed => 6,
            Verdict::AtCapacity => 5,
            Verdict::Working => 4,
            Verdict::Reply(_) => 3,
            Verdict::Accepted => 2,
            Verdict::Duplicate => 1,
            _ => 0,
        }
    }
    if rank(&b) > rank(&a) { b } else { a }
}

/// An event, however it came in (a webhook, a socket feed): resolved,
/// routed, admitted and run or handed over; the verdict the platform is to
/// hear, with the event as resolved.
async fn deliver_event(
    shared: &Arc<Shared>,
    adapter: &Arc<dyn PlatformAdapter>,
    mut event: Box<Event>,
    answer: &DeliveryResponse,
) -> (Option<Arc<Event>>, Verdict) {
    let event = match adapter.resolve(&mut event).await {
        Ok(Resolution::Ignored { reason }) => {
            tracing::debug!(name: "message-ignored", adapter = adapter.name(), reason);
            shared.recorder().event(&event, Outcome::Ignored, reason);
            return (Some(Arc::new(*event)), Verdict::Ignored);
        }
        Ok(Resolution::Uninstalled { reason }) => {
            tracing::info!(name: "app-uninstalled", adapter = adapter.name(), tenant = %event.tenant(), reason);
            shared.recorder().event(&event, Outcome::Ignored, reason);
            forget_tenant(shared, &event);
            return (Some(Arc::new(*event)), Verdict::Ignored);
        }
        Ok(_) => {
            let event = Arc::new(*event);
            answer.parsed(&event);
            event
        }
        Err(e) => {
            tracing::warn!(adapter = adapter.name(), event_id = %event.id, error = %e, "resolving the event failed; the platform will retry");
            shared
                .recorder()
                .event(&event, Outcome::Rejected, "resolve-failed");
            return (Some(Arc::new(*event)), Verdict::Failed);
        }
    };
    let span = tracing::info_span!(
        "delivery",
        platform = %event.platform(),
        tenant = %event.tenant(),
        event_id = %event.id,
        scope = %scope_of(shared, adapter.as_ref(), &event),
    );
    let decide = async {
        match shared.handlers().plan(&event) {
            Plan::Ignore(reason) => {
                shared.recorder().event(&event, Outcome::Ignored, reason);
                Verdict::Ignored
            }
            Plan::Control => stop(shared, adapter, &event).await,
            Plan::Admit {
                gate,
                serialized,
                inline,
                handler,
            } => {
                let route = Routed {
                    gate,
                    serialized,
                    inline,
                    handler,
                };
                admit(shared, adapter, &event, route, answer).await
            }
        }
    };
    let verdict = answer.finish(decide.instrument(span).await);
    (Some(event), verdict)
}

/// The entry below HTTP: an event a socket feed (Slack Socket Mode, a
/// gateway) received and authenticated itself goes the way of a webhook's —
/// resolve, dedupe and admission, the strategy, the run — on a task of its
/// own, and the verdict comes back within `timeouts.ack` for the feed to
/// acknowledge as its protocol says (past it: `Working` for an admitted
/// event still running, else `AtCapacity`).
pub(crate) async fn deliver_event_detached(
    shared: &Arc<Shared>,
    adapter: Arc<dyn PlatformAdapter>,
    event: Event,
) -> Verdict {
    let received = Instant::now();
    crate::sweep::start_sweeper(shared);
    let (task_shared, task_adapter) = (Arc::clone(shared), Arc::clone(&adapter));
    let answer = DeliveryResponse::default();
    let task_answer = answer.clone();
    // Boxed, as in `deliver_detached`.
    let task = shared.tracker().spawn(Box::pin(async move {
        deliver_event(&task_shared, &task_adapter, Box::new(event), &task_answer)
            .await
            .1
    }));
    let verdict = match tokio::time::timeout(shared.options().timeouts.ack, task).await {
        Ok(Ok(verdict)) => verdict,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "delivery task failed");
            Verdict::Failed
        }
        Err(_) => answer.timed_out(),
    };
    crate::telemetry::delivery(adapter.platform(), verdict.name(), received.elapsed());
    verdict
}

/// The scope `event` is serialized on.
pub(crate) fn scope_of(shared: &Shared, adapter: &dyn PlatformAdapter, event: &Event) -> ScopeKey {
    match &shared.options().leases.scope {
        LockScope::Thread => event.thread.thread_scope(),
        LockScope::Channel => event.thread.channel_scope(),
        LockScope::Function(f) => match f(event) {
            ScopeChoice::Channel => event.thread.channel_scope(),
            ScopeChoice::Thread => event.thread.thread_scope(),
        },
        _ => adapter.lock_scope_of(event).scope_of(&event.thread),
    }
}

/// A control event: record the stop request on the scope's lease (so a holder
/// on another replica learns it at renewal), and cancel the scope's running
/// turn here at once.
async fn stop(
    shared: &Arc<Shared>,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
) -> Verdict {
    let scope = scope_of(shared, adapter.as_ref(), event);
    let ttl = shared
        .options()
        .retention
        .dedupe_ttl
        .unwrap_or_else(|| adapter.dedupe_ttl());
    let req = CancelRequest::new(event, scope.clone()).dedupe_ttl(ttl);
    let until = Instant::now() + shared.options().timeouts.ack;
    let answer = repeat("request_cancel", until, || {
        shared.state().request_cancel(req.clone())
    })
    .await;
    let count = match &answer {
        Ok((CancelOutcome::Recorded { count }, _)) => Some(*count),
        _ => None,
    };
    if !matches!(answer, Ok((CancelOutcome::Duplicate, _))) {
        // The holder's renewal will report a recorded request too: it has
        // been acted on here.
        shared.stop_runs(&scope, count);
    }
    if let Ok((CancelOutcome::NoHolder, _)) = answer {
        // Nothing ran: the platform's closing word now.
        let (adapter, event) = (Arc::clone(adapter), Arc::clone(event));
        shared
            .tracker()
            .spawn(async move { adapter.stopped(&event).await });
    }
    match answer {
        Ok((CancelOutcome::Duplicate, _)) => {
            shared
                .recorder()
                .event(event, Outcome::Duplicate, "duplicate");
            Verdict::Duplicate
        }
        Ok(_) => {
            shared.recorder().event(event, Outcome::Ran, "stop-request");
            Verdict::Accepted
        }
        Err(e) => {
            tracing::warn!(error = %e, "recording a stop request failed");
            shared
                .recorder()
                .event(event, Outcome::Rejected, "state-error");
            Verdict::Failed
        }
    }
}

/// A place of `admission` for `event`'s tenant, or the at-capacity answer
/// (recorded).
fn place(
    shared: &Shared,
    admission: &crate::admission::Admission,
    event: &Event,
) -> Result<crate::admission::Permit, Verdict> {
    admission.try_admit(event.tenant()).ok_or_else(|| {
        shared
            .recorder()
            .event(event, Outcome::Rejected, "at-capacity");
        Verdict::AtCapacity
    })
}

/// What routing decided about an event to admit (see `Plan::Admit`).
struct Routed {
    gate: Gate,
    serialized: bool,
    inline: bool,
    handler: Option<crate::handler::SharedHandler>,
}

async fn admit(
    shared: &Arc<Shared>,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
    routed: Routed,
    answer: &DeliveryResponse,
) -> Verdict {
    let Routed {
        gate,
        serialized,
        inline,
        handler,
    } = routed;
    let accepted_at = Instant::now();
    if shared.signals().is_closed() {
        shared
            .recorder()
            .event(event, Outcome::Rejected, "shutting-down");
        return Verdict::AtCapacity;
    }
    let admitted = shared.options().dispatch.mode == Dispatch::Deferred;
    // Interactions that are answered in the HTTP response itself (a slash
    // command's text, a modal's response_action, an inline route's answer)
    // run before the acknowledgement even under deferred dispatch, unless the
    // options say otherwise.
    let inline = shared.options().dispatch.inline_interactions
        && (inline
            || matches!(
                event.kind,
                EventKind::SlashCommand(_) | EventKind::ModalSubmit(_) | EventKind::ModalClose(_)
            ));
    let deferred = admitted && !inline;
    // Admission comes before any state is touched: a refused delivery is not
    // marked, so the platform's retry is new. A handler that will run inside
    // its request also holds an inline place for as long as this delivery is
    // handled.
    let places = (|| {
        let inline = (!deferred)
            .then(|| place(shared, shared.inline(), event))
            .transpose()?;
        let detached = admitted
            .then(|| place(shared, shared.admission(), event))
            .transpose()?;
        Ok((inline, detached))
    })();
    let (_inline_place, permit) = match places {
        Ok(places) => places,
        Err(verdict) => return verdict,
    };
    let concurrency = if serialized {
        shared.options().concurrency
    } else {
        Concurrency::concurrent()
    };
    let scope = scope_of(shared, adapter.as_ref(), event);
    let req = AdmitRequest::new(Arc::clone(event), scope, concurrency)
        .gate(gate)
        .dedupe_ttl(
            shared
                .options()
                .retention
                .dedupe_ttl
                .unwrap_or_else(|| adapter.dedupe_ttl()),
        )
        .lease_ttl(shared.options().leases.ttl)
        .subscription_ttl(shared.options().retention.subscription_ttl);
    // An admit whose reply is lost may have run: it is repeated, with the same
    // id, until it answers. Meanwhile the platform has been told to retry (at
    // `timeouts.ack`); whichever comes first runs the event, once.
    let until = accepted_at + shared.options().timeouts.state_retry;
    let (admission, sent) = match repeat("admit", until, || shared.state().admit(req.clone())).await
    {
        Ok(a) => a,
        Err(e) if crate::retry::outcome_unknown(&e) => {
            tracing::warn!(name: "admit-outcome-unknown", error = %e, event_id = %event.id, "admit never answered; the event is in the backend's care if it ran, and the platform retries it if not");
            return Verdict::AtCapacity;
        }
        Err(e) => {
            tracing::warn!(error = %e, event_id = %event.id, "admit failed");
            shared
                .recorder()
                .event(event, Outcome::Rejected, "state-error");
            return Verdict::Failed;
        }
    };
    let AdmitRequest { scope, id, .. } = req;
    let deadline = deferred.then(|| accepted_at + shared.options().dispatch.detach_timeout);
    let posted = Arc::new(AtomicBool::new(false));
    answer.admitted();
    let work = RunItem {
        event: Arc::clone(event),
        skipped: Vec::new(),
        deadline,
        subscribed: Some(admission.subscribed),
        posted: Arc::clone(&posted),
        response: (!deferred).then(|| answer.clone()),
        attempt: 1,
        handler,
    };
    let ctx = Holder::new(shared, adapter, concurrency);
    let verdict = decide(
        &ctx,
        event,
        admission.decision,
        Admitted {
            deferred,
            scope: &scope,
            id,
            accepted_at,
            sent,
            permit,
        },
        work,
    )
    .await;
    if deferred && verdict == Verdict::Accepted {
        after_ack(shared, adapter, event, posted);
    }
    verdict
}

/// The first-response duty of the adapter, right after the acknowledgement.
fn after_ack(
    shared: &Shared,
    adapter: &Arc<dyn PlatformAdapter>,
    event: &Arc<Event>,
    posted: Arc<AtomicBool>,
) {
    let adapter = Arc::clone(adapter);
    let event = Arc::clone(event);
    shared.tracker().spawn(async move {
        // Let the response go out first.
        tokio::task::yield_now().await;
        let posted = move || posted.load(Ordering::Acquire);
        adapter.after_ack(&event, &posted).await;
    });
}

/// What the ack path knows about an admitted delivery.
struct Admitted<'a> {
    deferred: bool,
    scope: &'a ScopeKey,
    /// The admit request's id: the token of whatever it was granted.
    id: LeaseToken,
    accepted_at: Instant,
    /// When the answering admit was sent: a granted lease lives at least until
    /// then plus its TTL.
    sent: Instant,
    permit: Option<crate::admission::Permit>,
}

async fn decide(
    holder: &Holder,
    event: &Arc<Event>,
    decision: Decision,
    a: Admitted<'_>,
    work: RunItem,
) -> Verdict {
    let shared = &holder.shared;
    match decision {
        Decision::Duplicate => {
            shared
                .recorder()
                .event(event, Outcome::Duplicate, "duplicate");
            Verdict::Duplicate
        }
        Decision::NotSubscribed => {
            shared
                .recorder()
                .event(event, Outcome::Ignored, "not-subscribed");
            Verdict::Ignored
        }
        Decision::Full => {
            shared.recorder().event(event, Outcome::Rejected, "full");
            Verdict::AtCapacity
        }
        Decision::Dropped(reason) => {
            shared
                .recorder()
                .event(event, Outcome::Dropped, reason.as_str());
            Verdict::Accepted
        }
        Decision::Queued { depth } => {
            tracing::info!(name: "message-queued", thread = %event.thread, message_id = %event.id, queue_depth = depth);
            if let Concurrency::Burst(b) = holder.concurrency
                && b.max_batch.is_some()
            {
                // The batch may have just sealed early: let a local holder look.
                shared.wake(a.scope);
            }
            Verdict::Accepted
        }
        Decision::Pending { replaced } => {
            debouncing(holder.concurrency, event, replaced);
            Verdict::Accepted
        }
        Decision::Hold(lease) => {
            debouncing(holder.concurrency, event, false);
            holder.spawn_holder(lease, a.sent, None, a.permit);
            Verdict::Accepted
        }
        Decision::Run(lease) => {
            if a.deferred {
                holder.spawn_holder(lease, a.sent, Some(work), a.permit);
                Verdict::Accepted
            } else {
                sync_verdict(shared, event, holder.run_sync(lease, a.sent, work).await).await
            }
        }
        Decision::WaitingForSlot => {
            if a.deferred {
                holder.spawn_slot_waiter(a.scope.clone(), a.id, work, a.permit);
                return Verdict::Accepted;
            }
            let until = a.accepted_at + shared.options().timeouts.sync_slot_wait;
            match holder.wait_for_slot_sync(a.scope, &a.id, until).await {
                SlotWait::Granted(lease, at) => {
                    sync_verdict(shared, event, holder.run_sync(lease, at, work).await).await
                }
                SlotWait::Gone => Verdict::Accepted,
                SlotWait::TimedOut => {
                    // Refused after all: unmark, so the platform's retry runs.
                    unmark(shared, event).await;
                    shared.recorder().event(event, Outcome::Rejected, "no-slot");
                    Verdict::AtCapacity
                }
            }
        }
        // A repeat of an admission whose lease lapsed since: the event is in
        // the backend's care and recovery runs it.
        Decision::Stored => Verdict::Accepted,
        _ => {
            shared
                .recorder()
                .event(event, Outcome::Rejected, "unknown-decision");
            Verdict::Failed
        }
    }
}

/// The progress event of a debounced message: it is now the pending one (its
/// quiet interval starts), or it replaced the pending one.
fn debouncing(concurrency: Concurrency, event: &Event, replaced: bool) {
    let Concurrency::Debounce(d) = concurrency else {
        return;
    };
    let interval_ms = u64::try_from(d.interval.as_millis()).unwrap_or(u64::MAX);
    if replaced {
        tracing::info!(name: "message-debounce-reset", thread = %event.thread, message_id = %event.id, interval_ms);
    } else {
        tracing::info!(name: "message-debouncing", thread = %event.thread, message_id = %event.id, interval_ms);
    }
}

/// Sync dispatch: a failed handler's dedupe mark is removed and the platform is
/// answered so it retries; so is a run cut short that was given back to the
/// platform. A run cut short and left in the backend's care runs again
/// elsewhere: the delivery is answered as one still running.
async fn sync_verdict(shared: &Shared, event: &Event, end: SyncEnd) -> Verdict {
    match end {
        SyncEnd::Ran(Outcome::Failed) | SyncEnd::GivenBack => {
            unmark(shared, event).await;
            Verdict::Failed
        }
        SyncEnd::Continues => Verdict::Working,
        SyncEnd::Ran(_) => Verdict::Accepted,
    }
}

async fn unmark(shared: &Shared, event: &Event) {
    if let Err(e) = shared
        .state()
        .unmark(&event.thread, &event.dedupe_key)
        .await
    {
        tracing::warn!(error = %e, event_id = %event.id, "unmark failed; the platform's retry will be a duplicate");
    }
}
