//! One handler run: routed, given its context, kept alive by its lease,
//! cancelled with a cause (lease lost, budget, shutdown, stop request), and
//! ended in what the holder does next.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chat_core::{Event, EventKind, PlatformAdapter};
use futures_util::FutureExt;
use tokio::time::Instant;
use tracing::Instrument;

use crate::cancel::{Cancel, CancelCause};
use crate::ctx::{Ctx, CtxParts};
use crate::handler::SharedHandler;
use crate::outcome::{Outcome, OutcomeRecord};
use crate::shared::{RunHandle, Shared};
use crate::thread::Posts;
use crate::work::{HeldLease, RunItem};

/// How a run ended, for its holder.
pub(crate) enum RunEnd {
    /// A final outcome, recorded once the batch is acknowledged.
    Done(OutcomeRecord),
    /// The lease was lost: the batch runs again under the next holder.
    Lost,
    /// Cancelled by shutdown: the batch is handed back for another replica.
    HandBack,
}

/// Runs one event's handler under `held` (kept alive by its keeper),
/// cancelled on lease loss, deadline, shutdown or a stop request.
pub(crate) async fn run(
    shared: &Shared,
    adapter: &Arc<dyn PlatformAdapter>,
    work: RunItem,
    held: Option<&HeldLease>,
) -> RunEnd {
    let event = Arc::clone(&work.event);
    // Under sync dispatch the run answers the delivery itself.
    let sync = work.response.is_some();
    let Some(handler) = route(shared, &work).await else {
        return RunEnd::Done(record(&event, Outcome::Ignored, "no-handler", None, None));
    };
    let cancel = Cancel::new();
    let posts: Arc<Posts> = Arc::default();
    let scope = held.map(|h| h.lease.scope());
    if let (Some(scope), Some(held)) = (scope, held) {
        shared.run_started(
            scope,
            RunHandle {
                cancel: cancel.clone(),
                seen: Arc::clone(&held.seen_cancels),
                event: Arc::clone(&event),
                started: Instant::now(),
            },
        );
    }
    let ctx = Ctx::new(CtxParts {
        state: Arc::clone(shared.state()),
        adapter: Arc::clone(adapter),
        event: Arc::clone(&event),
        skipped: work.skipped,
        deadline: work.deadline,
        cancel: cancel.clone(),
        fence: held.map(|h| h.lease.fence()),
        attempt: work.attempt,
        lease: held.map(|h| Arc::clone(h.state())),
        posts: Arc::clone(&posts),
        posted: work.posted,
        response: work.response,
        data: shared.data().clone(),
        retention: shared.options().retention.clone(),
        tracker: shared.tracker().clone(),
    });
    let started = Instant::now();
    crate::telemetry::run_started(event.platform(), waited(&event));
    let mut cancelled_at = None;
    let span = tracing::info_span!(
        "handler",
        event_id = %event.id,
        thread = %event.thread,
        fence = held.map(|h| h.lease.fence()),
        attempt = work.attempt,
        skipped = ctx.skipped().len(),
    );
    // A handler that panics while making its future panics here, not in
    // the future: catch both.
    let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
        handler.call(ctx, (*event).clone()).instrument(span)
    }));
    let result = match made {
        Err(_) => Err(()),
        Ok(fut) => {
            let mut fut = AssertUnwindSafe(fut).catch_unwind();
            let never = tokio_util::sync::CancellationToken::new();
            let lost = held.map_or_else(|| never.clone(), |h| h.state().lost().clone());
            let mut requests = held.map(|h| h.state().cancel_requests());
            let seen = held.map(|h| Arc::clone(&h.seen_cancels));
            loop {
                let armed = cancelled_at.is_none();
                tokio::select! {
                    r = &mut fut => break r.map_err(|_| ()),
                    () = sleep_until_opt(work.deadline), if armed => cancel.cancel(CancelCause::DeadlineExceeded),
                    () = lost.cancelled(), if armed => cancel.cancel(CancelCause::Preempted),
                    () = shared.signals().shutdown().cancelled(), if armed => cancel.cancel(CancelCause::Shutdown),
                    () = cancel.token().cancelled(), if armed => {}
                    Some(count) = next_request(requests.as_mut()), if armed => {
                        // A stop request this run has not acted on yet.
                        if let Some(seen) = &seen
                            && seen.fetch_max(count, Ordering::SeqCst) < count
                        {
                            cancel.cancel(CancelCause::StopRequested);
                        }
                    }
                }
                if cancel.is_cancelled() && cancelled_at.is_none() {
                    cancelled_at = Some(Instant::now());
                }
            }
        }
    };
    if let Some(scope) = scope {
        shared.run_ended(scope, &cancel);
    }
    let now = Instant::now();
    let ran_for = Some(now - started);
    let cancel_latency = cancelled_at.map(|at| now - at);
    let (outcome, reason) = match (cancel.cause(), &result) {
        (Some(CancelCause::Preempted), _) => {
            tracing::warn!(name: "run-preempted", event_id = %event.id, thread = %event.thread, "lease lost; the event runs again under the scope's next holder");
            crate::telemetry::lease_lost(event.platform());
            return RunEnd::Lost;
        }
        (Some(CancelCause::Shutdown), _) => {
            shared.cancelled_by_shutdown();
            if !shared.state().shared() && !sync {
                // Nobody else could run it (under sync dispatch, the
                // platform's retry does): it ends here, cancelled.
                (Outcome::Cancelled, "shutdown")
            } else {
                tracing::info!(name: "run-handed-back", event_id = %event.id, thread = %event.thread, "cancelled by shutdown; handed back to run elsewhere");
                return RunEnd::HandBack;
            }
        }
        (Some(CancelCause::DeadlineExceeded), _) => (Outcome::DeadlineExceeded, "budget"),
        (Some(CancelCause::StopRequested), _) => {
            if !posts.spoke_after_cancel() {
                // The handler said nothing after the stop: the platform's
                // closing word (Linear's final activity).
                let adapter = Arc::clone(adapter);
                let event = Arc::clone(&event);
                shared
                    .tracker()
                    .spawn(async move { adapter.stopped(&event).await });
            }
            (Outcome::Cancelled, "stop-requested")
        }
        (_, Ok(Ok(()))) => (Outcome::Ran, "ok"),
        (_, Ok(Err(e))) => {
            tracing::warn!(error = %e, event_id = %event.id, "handler failed");
            (Outcome::Failed, "error")
        }
        (_, Err(())) => {
            tracing::error!(event_id = %event.id, "handler panicked");
            (Outcome::Failed, "panic")
        }
    };
    RunEnd::Done(record(&event, outcome, reason, ran_for, cancel_latency))
}

/// The handler for a run. A plain message is only ever admitted in a
/// subscribed thread or one whose conversation is in progress (it joined
/// work waiting there, such as a mention's burst window): either way it
/// goes to the subscribed-message handler.
async fn route(shared: &Shared, work: &RunItem) -> Option<SharedHandler> {
    let handlers = shared.handlers();
    if let Some(planned) = &work.handler {
        // Chosen on the ack path; a message admitted in a subscribed thread
        // goes to the subscribed-message handler instead.
        if work.subscribed == Some(true)
            && let Some(h) = handlers.subscribed_for(&work.event)
        {
            return Some(h);
        }
        return Some(planned.clone());
    }
    let subscribed = match work.subscribed {
        Some(s) => s,
        None => subscribed_now(shared, &work.event).await,
    };
    handlers
        .route(&work.event, subscribed)
        .or_else(|| handlers.route(&work.event, true))
}

async fn subscribed_now(shared: &Shared, event: &Event) -> bool {
    if !matches!(event.kind, EventKind::Message(_)) || shared.handlers().subscribed.is_empty() {
        return false;
    }
    shared
        .state()
        .is_subscribed(&event.thread)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "is_subscribed failed; routing as unsubscribed");
            false
        })
}

/// How long ago `event` was received, by the wall clock (0 when unknown).
fn waited(event: &Event) -> std::time::Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    match event.received_at_ms {
        0 => std::time::Duration::ZERO,
        at => now.saturating_sub(std::time::Duration::from_millis(at)),
    }
}

fn record(
    event: &Event,
    outcome: Outcome,
    reason: &'static str,
    ran_for: Option<std::time::Duration>,
    cancel_latency: Option<std::time::Duration>,
) -> OutcomeRecord {
    OutcomeRecord {
        ran_for,
        cancel_latency,
        ended_at: ran_for.map(|_| std::time::SystemTime::now()),
        ..OutcomeRecord::of(event, outcome, reason)
    }
}

async fn next_request(rx: Option<&mut tokio::sync::watch::Receiver<u32>>) -> Option<u32> {
    let rx = rx?;
    match rx.changed().await {
        Ok(()) => Some(*rx.borrow_and_update()),
        Err(_) => std::future::pending().await,
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
