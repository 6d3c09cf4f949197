//! Deduplication and the subscription gate.

use chat_core::{Concurrency, Decision, Handoff};

use crate::harness::{Harness, expect_run, ok};

/// The first admit of a key is not a duplicate.
pub async fn dedupe_first_admit_is_new(h: Harness) {
    let t = h.thread("1");
    let a = h.admit(&t, "a", Concurrency::Drop).await;
    expect_run(&a);
}

/// A second admit of the same key is a duplicate, whatever the strategy.
pub async fn dedupe_second_admit_is_duplicate(h: Harness) {
    let t = h.thread("1");
    for c in [
        Concurrency::Drop,
        Concurrency::queue(),
        Concurrency::concurrent(),
    ] {
        let id = h.fresh_id();
        let first = h.admit(&t, &id, c).await;
        assert!(
            !matches!(first.decision, Decision::Duplicate),
            "{c:?}: first admit"
        );
        if let Decision::Run(lease) = &first.decision {
            h.finish(lease).await;
        }
        let again = h.admit(&t, &id, c).await;
        assert!(
            matches!(again.decision, Decision::Duplicate),
            "{c:?}: got {:?}",
            again.decision
        );
    }
}

/// A dedupe mark lives for its TTL, then the key is new again.
pub async fn dedupe_mark_expires_after_ttl(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.finish(&lease).await;
    h.advance(h.dedupe_ttl() - h.t(1)).await;
    assert!(matches!(
        h.admit(&t, "a", Concurrency::Drop).await.decision,
        Decision::Duplicate
    ));
    h.advance(h.t(2)).await;
    expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
}

/// Identical keys in two tenants, or two channels, never collide.
pub async fn dedupe_keys_are_per_tenant_and_channel(h: Harness) {
    let other = h.sibling();
    let l1 = expect_run(&h.admit(&h.thread("1"), "same", Concurrency::Drop).await);
    let l2 = expect_run(
        &other
            .admit(&other.thread("1"), "same", Concurrency::Drop)
            .await,
    );
    let l3 = expect_run(
        &h.admit(&h.thread_in("C2", "1"), "same", Concurrency::Drop)
            .await,
    );
    assert_ne!(l1.scope(), l2.scope());
    assert_ne!(l1.scope(), l3.scope());
}

/// `unmark` removes the mark, so the platform's retry runs.
pub async fn dedupe_unmark_lets_a_retry_run(h: Harness) {
    let t = h.thread("1");
    let e = h.event(&t, "a");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.finish(&lease).await;
    assert!(ok("unmark", h.backend().unmark(&t, &e.dedupe_key).await));
    expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
}

/// `unmark` of a key never marked answers false.
pub async fn dedupe_unmark_of_an_unknown_key_is_false(h: Harness) {
    let t = h.thread("1");
    let e = h.event(&t, "never");
    assert!(!ok("unmark", h.backend().unmark(&t, &e.dedupe_key).await));
}

/// A duplicate changes nothing: it joins no queue.
pub async fn dedupe_duplicate_changes_nothing(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    assert!(matches!(
        h.admit(&t, "b", Concurrency::queue()).await.decision,
        Decision::Queued { depth: 1, .. }
    ));
    assert!(matches!(
        h.admit(&t, "b", Concurrency::queue()).await.decision,
        Decision::Duplicate
    ));
    assert!(matches!(
        h.admit(&t, "a", Concurrency::queue()).await.decision,
        Decision::Duplicate
    ));
    match h.finish(&lease).await {
        Handoff::Run(entries) => assert_eq!(crate::harness::ids(&entries), ["b"]),
        other => panic!("expected the one queued entry, got {other:?}"),
    }
}

/// A plain message in an unsubscribed thread is neither admitted nor marked.
pub async fn gate_unsubscribed_message_is_not_admitted_nor_marked(h: Harness) {
    let t = h.thread("1");
    let a = h.admit_gated(&t, "a").await;
    assert!(
        matches!(a.decision, Decision::NotSubscribed),
        "got {:?}",
        a.decision
    );
    assert!(!a.subscribed);
    // Not marked: once subscribed, the same event is admitted.
    ok("subscribe", h.backend().subscribe(&t).await);
    let again = h.admit_gated(&t, "a").await;
    expect_run(&again);
    assert!(again.subscribed);
}

/// Admission reports whether the thread was subscribed, for every gate.
pub async fn gate_admission_reports_subscription(h: Harness) {
    let t = h.thread("1");
    let u = h.thread("2");
    ok("subscribe", h.backend().subscribe(&t).await);
    assert!(h.admit(&t, "a", Concurrency::concurrent()).await.subscribed);
    assert!(!h.admit(&u, "b", Concurrency::concurrent()).await.subscribed);
}

/// Subscribe, check, unsubscribe; threads are independent.
pub async fn subscriptions_round_trip(h: Harness) {
    let b = h.backend();
    let t = h.thread("1");
    let u = h.thread("2");
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
    ok("subscribe", b.subscribe(&t).await);
    ok("subscribe again", b.subscribe(&t).await);
    assert!(ok("is_subscribed", b.is_subscribed(&t).await));
    assert!(!ok("is_subscribed", b.is_subscribed(&u).await));
    assert!(ok("unsubscribe", b.unsubscribe(&t).await));
    assert!(!ok("unsubscribe again", b.unsubscribe(&t).await));
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
}

/// Subscriptions of identical thread ids in two tenants never collide.
pub async fn subscriptions_are_per_tenant(h: Harness) {
    let other = h.sibling();
    ok("subscribe", h.backend().subscribe(&h.thread("1")).await);
    assert!(!ok(
        "is_subscribed",
        other.backend().is_subscribed(&other.thread("1")).await
    ));
}

/// A request whose scope lies outside its event's channel is refused.
pub async fn admit_rejects_a_scope_outside_the_events_channel(h: Harness) {
    let e = h.event(&h.thread("1"), "a");
    let elsewhere = h.thread_in("C9", "1").thread_scope();
    let req = chat_core::AdmitRequest::new(e, elsewhere, Concurrency::Drop);
    let r = h.backend().admit(req).await;
    assert!(
        matches!(r, Err(chat_core::StateError::InvalidRequest(_))),
        "got {r:?}"
    );
}
