//! Two installations of one bot — two tenants — with identical channel and
//! thread ids (a Slack channel id and message `ts` repeat across workspaces;
//! a bot in many workspaces must not mistake one's thread for another's)
//! never collide in Redis: not in dedupe marks, leases, queues, concurrency
//! slots, stop requests or subscriptions. On the single server and on the
//! cluster; skips like the conformance suite without `REDIS_URL` /
//! `REDIS_CLUSTER_URLS` (and fails without them under `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    AdmitRequest, CancelOutcome, CancelRequest, Concurrency, ConcurrentOptions, Decision,
    DedupeKey, Event, Gate, Handoff, Platform, StateBackend, ThreadRef,
};
use chat_testkit::{EventBuilder, expect_run, ids};

const CHANNEL: &str = "C0SAME";
const THREAD: &str = "1700000000.000100";

/// The same channel and thread in two tenants.
fn threads(run: &str) -> (ThreadRef, ThreadRef) {
    // The run id keeps parallel runs apart; both tenants share it.
    let channel = format!("{CHANNEL}-{run}");
    (
        ThreadRef::new(Platform::SLACK, "T-A", channel.as_str(), THREAD),
        ThreadRef::new(Platform::SLACK, "T-B", channel.as_str(), THREAD),
    )
}

/// An event on `thread` whose dedupe key is the same in every tenant, as a
/// Slack post's `{channel}:{ts}` is.
fn event(thread: &ThreadRef, id: &str, dedupe: &str) -> Event {
    EventBuilder::new(thread.clone())
        .id(id)
        .dedupe(dedupe)
        .mention("hello")
        .build()
}

async fn admit(
    state: &dyn StateBackend,
    thread: &ThreadRef,
    id: &str,
    dedupe: &str,
    concurrency: Concurrency,
) -> Decision {
    let request = AdmitRequest::new(
        event(thread, id, dedupe),
        thread.thread_scope(),
        concurrency,
    )
    .lease_ttl(Duration::from_secs(30));
    state.admit(request).await.unwrap().decision
}

async fn tenants_never_collide(state: Arc<dyn StateBackend>) {
    let run = chat_core::LeaseToken::generate().as_str()[..8].to_owned();
    let (a, b) = threads(&run);
    let state = state.as_ref();

    // Dedupe and leases: the same dedupe key and scope in both tenants runs
    // in both (neither is a duplicate of, nor busy behind, the other).
    let lease_a = expect_run(&admit_req(state, &a, "a1", "post", Concurrency::queue()).await);
    let lease_b = expect_run(&admit_req(state, &b, "b1", "post", Concurrency::queue()).await);
    assert_ne!(lease_a.scope(), lease_b.scope());
    // Within a tenant, the key is still a duplicate.
    assert!(matches!(
        admit(state, &a, "a1-again", "post", Concurrency::queue()).await,
        Decision::Duplicate
    ));

    // Queues: each tenant's waiting entries are its own.
    for (thread, prefix) in [(&a, "a"), (&b, "b")] {
        for n in 2..=3 {
            let d = admit(
                state,
                thread,
                &format!("{prefix}{n}"),
                &format!("post-{n}"),
                Concurrency::queue(),
            )
            .await;
            assert!(
                matches!(d, Decision::Queued { depth, .. } if depth == n - 1),
                "{prefix}{n}: {d:?}"
            );
        }
    }
    let handed_a = chat_testkit::expect_batch(state.finish(&lease_a).await.unwrap());
    assert_eq!(ids(&handed_a.entries), ["a2", "a3"]);
    let handed_b = chat_testkit::expect_batch(state.finish(&lease_b).await.unwrap());
    assert_eq!(ids(&handed_b.entries), ["b2", "b3"]);
    let (lease_a, lease_b) = (lease_a.at(handed_a.seq), lease_b.at(handed_b.seq));
    assert!(matches!(
        state.finish(&lease_a).await.unwrap(),
        Handoff::Released
    ));
    assert!(matches!(
        state.finish(&lease_b).await.unwrap(),
        Handoff::Released
    ));

    // Unmarking in one tenant leaves the other's mark.
    assert!(state.unmark(&a, &DedupeKey::new("post")).await.unwrap());
    assert!(matches!(
        admit(state, &b, "b1-again", "post", Concurrency::Drop).await,
        Decision::Duplicate
    ));

    // Subscriptions: subscribing in one tenant subscribes nothing in the other.
    state
        .subscribe(&a, chat_core::DEFAULT_SUBSCRIPTION_TTL)
        .await
        .unwrap();
    assert!(state.is_subscribed(&a).await.unwrap());
    assert!(!state.is_subscribed(&b).await.unwrap());
    let gated = |thread: &ThreadRef, id: &str| {
        AdmitRequest::new(
            event(thread, id, id),
            thread.thread_scope(),
            Concurrency::Drop,
        )
        .gate(Gate::Subscribed)
    };
    let in_b = state.admit(gated(&b, "b-plain")).await.unwrap().decision;
    assert!(matches!(in_b, Decision::NotSubscribed), "{in_b:?}");
    let in_a = state.admit(gated(&a, "a-plain")).await.unwrap().decision;
    let plain_a = expect_run(&chat_core::Admission::new(in_a, true));
    assert!(!state.unsubscribe(&b).await.unwrap());
    assert!(state.is_subscribed(&a).await.unwrap());

    // Stop requests: a stop in tenant B does not reach tenant A's holder.
    let stop = event(&b, "b-stop", "b-stop");
    let outcome = state
        .request_cancel(CancelRequest::new(&stop, b.thread_scope()))
        .await
        .unwrap();
    assert_eq!(outcome, CancelOutcome::NoHolder);
    let renewed = state
        .renew(&plain_a, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(
        matches!(
            renewed,
            chat_core::Renewal::Renewed {
                cancel_requests: 0,
                ..
            }
        ),
        "{renewed:?}"
    );
    state.finish(&plain_a).await.unwrap();

    // Concurrency slots: a full scope in one tenant is empty in the other.
    let one = Concurrency::Concurrent(ConcurrentOptions::default().max(1));
    let slot_a = expect_run(&admit_req(state, &a, "a-slot", "slot-1", one).await);
    let other_a = admit(state, &a, "a-slot-2", "slot-2", one).await;
    assert!(matches!(other_a, Decision::WaitingForSlot), "{other_a:?}");
    let slot_b = expect_run(&admit_req(state, &b, "b-slot", "slot-1", one).await);
    state.finish(&slot_a).await.unwrap();
    state.finish(&slot_b).await.unwrap();
}

/// `admit` as an `Admission`, for the testkit's `expect_run`.
async fn admit_req(
    state: &dyn StateBackend,
    thread: &ThreadRef,
    id: &str,
    dedupe: &str,
    concurrency: Concurrency,
) -> chat_core::Admission {
    let request = AdmitRequest::new(
        event(thread, id, dedupe),
        thread.thread_scope(),
        concurrency,
    )
    .lease_ttl(Duration::from_secs(30));
    state.admit(request).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_with_identical_ids_never_collide_on_one_server() {
    let Some(h) = common::single().await else {
        return;
    };
    tenants_never_collide(Arc::clone(h.backend())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_with_identical_ids_never_collide_on_a_cluster() {
    let Some(h) = common::cluster().await else {
        return;
    };
    tenants_never_collide(Arc::clone(h.backend())).await;
}
