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
            h.finish(&mut lease.clone()).await;
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
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.finish(&mut lease).await;
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
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.finish(&mut lease).await;
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
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
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
    match h.finish(&mut lease).await {
        Handoff::Run(batch) => assert_eq!(crate::harness::ids(&batch.entries), ["b"]),
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
    ok("subscribe", h.backend().subscribe(&t, h.t(1000)).await);
    let again = h.admit_gated(&t, "a").await;
    expect_run(&again);
    assert!(again.subscribed);
}

/// Admission reports whether the thread was subscribed, for every gate.
pub async fn gate_admission_reports_subscription(h: Harness) {
    let t = h.thread("1");
    let u = h.thread("2");
    ok("subscribe", h.backend().subscribe(&t, h.t(1000)).await);
    assert!(h.admit(&t, "a", Concurrency::concurrent()).await.subscribed);
    assert!(!h.admit(&u, "b", Concurrency::concurrent()).await.subscribed);
}

/// Subscribe, check, unsubscribe; threads are independent.
pub async fn subscriptions_round_trip(h: Harness) {
    let b = h.backend();
    let t = h.thread("1");
    let u = h.thread("2");
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
    ok("subscribe", b.subscribe(&t, h.t(1000)).await);
    ok("subscribe again", b.subscribe(&t, h.t(1000)).await);
    assert!(ok("is_subscribed", b.is_subscribed(&t).await));
    assert!(!ok("is_subscribed", b.is_subscribed(&u).await));
    assert!(ok("unsubscribe", b.unsubscribe(&t).await));
    assert!(!ok("unsubscribe again", b.unsubscribe(&t).await));
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
}

/// A subscription lapses after its TTL of silence: the thread is no longer
/// subscribed and its plain messages are not admitted.
pub async fn subscriptions_expire_after_their_ttl(h: Harness) {
    let b = h.backend();
    let t = h.thread("1");
    ok("subscribe", b.subscribe(&t, h.t(2)).await);
    assert!(ok("is_subscribed", b.is_subscribed(&t).await));
    h.advance(h.t(3)).await;
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
    let a = h.admit_gated(&t, "late").await;
    assert!(
        matches!(a.decision, Decision::NotSubscribed),
        "{:?}",
        a.decision
    );
}

/// Every admission in a subscribed thread renews its subscription to the
/// request's subscription TTL: an active thread stays subscribed.
pub async fn subscriptions_are_renewed_by_activity(h: Harness) {
    let b = h.backend();
    let t = h.thread("1");
    ok("subscribe", b.subscribe(&t, h.t(3)).await);
    h.advance(h.t(2)).await;
    let req = h
        .request(h.event(&t, "active"), Concurrency::concurrent())
        .gate(chat_core::Gate::Subscribed)
        .subscription_ttl(h.t(3));
    assert!(h.admit_req(req).await.subscribed);
    // Past the first TTL, within the renewed one.
    h.advance(h.t(2)).await;
    assert!(ok("is_subscribed", b.is_subscribed(&t).await));
    h.advance(h.t(2)).await;
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
}

/// Subscribing a thread already subscribed sets its expiry anew, to the
/// second call's TTL: a handler that subscribes on every turn keeps its
/// thread, and a shorter TTL given later is the one that holds.
pub async fn subscribing_again_sets_the_expiry_anew(h: Harness) {
    let b = h.backend();
    let t = h.thread("1");
    ok("subscribe", b.subscribe(&t, h.t(3)).await);
    h.advance(h.t(2)).await;
    ok("subscribe again", b.subscribe(&t, h.t(3)).await);
    // Past the first TTL, within the renewed one.
    h.advance(h.t(2)).await;
    assert!(ok("is_subscribed", b.is_subscribed(&t).await));
    // A shorter TTL replaces the longer one.
    ok("subscribe shorter", b.subscribe(&t, h.t(1)).await);
    h.advance(h.t(2)).await;
    assert!(!ok("is_subscribed", b.is_subscribed(&t).await));
}

/// `unsubscribe_tenant` removes every subscription of one tenant — in every
/// channel, however many — and nothing else: not another tenant's, not the
/// same tenant id's on another platform, not the tenant's waiting work.
pub async fn unsubscribing_a_tenant_removes_its_subscriptions_only(h: Harness) {
    let b = h.backend();
    let other = h.sibling();
    let tenant = chat_core::TenantId::new(h.tenant());
    let mut mine = Vec::new();
    for i in 0..300 {
        let channel = if i % 2 == 0 { "C1" } else { "C:2{x}*" };
        mine.push(h.thread_in(channel, &format!("{i}.0")));
    }
    for t in &mine {
        ok("subscribe", b.subscribe(t, h.t(1000)).await);
    }
    let theirs = other.thread("0.0");
    ok("subscribe", b.subscribe(&theirs, h.t(1000)).await);
    let same_id = chat_core::ThreadRef::new(chat_core::Platform::SLACK, h.tenant(), "C1", "0.0");
    ok("subscribe", b.subscribe(&same_id, h.t(1000)).await);
    // Work of the tenant waits on a scope.
    let busy = h.thread("busy");
    let mut lease = expect_run(&h.admit(&busy, "run", Concurrency::queue()).await);
    h.admit(&busy, "queued", Concurrency::queue()).await;

    let removed = ok(
        "unsubscribe_tenant",
        b.unsubscribe_tenant(crate::ScriptedAdapter::PLATFORM, &tenant)
            .await,
    );
    assert_eq!(removed, 300);
    for t in &mine {
        assert!(!ok("is_subscribed", b.is_subscribed(t).await), "{t:?}");
    }
    assert!(ok("is_subscribed", b.is_subscribed(&theirs).await));
    assert!(ok("is_subscribed", b.is_subscribed(&same_id).await));
    let next = crate::harness::expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(crate::harness::ids(&next), ["queued"]);
    let again = ok(
        "unsubscribe_tenant again",
        b.unsubscribe_tenant(crate::ScriptedAdapter::PLATFORM, &tenant)
            .await,
    );
    assert_eq!(again, 0);
}

/// Subscriptions of identical thread ids in two tenants never collide.
pub async fn subscriptions_are_per_tenant(h: Harness) {
    let other = h.sibling();
    ok(
        "subscribe",
        h.backend().subscribe(&h.thread("1"), h.t(1000)).await,
    );
    assert!(!ok(
        "is_subscribed",
        other.backend().is_subscribed(&other.thread("1")).await
    ));
}

/// A plain message in an unsubscribed thread whose scope holds waiting work of
/// that thread (a burst window here) joins it: the conversation is in
/// progress. A plain message of another thread does not, and once nothing of
/// the thread waits, the gate is closed again.
pub async fn gate_plain_message_joins_waiting_work_of_its_thread(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Burst(chat_core::BurstOptions::default().window(h.t(2)));
    let mut lease = crate::harness::expect_hold(&h.admit(&t, "a", c).await);
    let plain = |id: &str, thread: &chat_core::ThreadRef| {
        h.request(h.event(thread, id), c)
            .gate(chat_core::Gate::Subscribed)
    };
    let b = h.admit_req(plain("b", &t)).await;
    assert!(
        matches!(b.decision, Decision::Queued { depth: 2 }),
        "got {:?}",
        b.decision
    );
    assert!(!b.subscribed);
    let other = h.thread("2");
    assert!(matches!(
        h.admit_req(plain("x", &other)).await.decision,
        Decision::NotSubscribed
    ));
    h.advance(h.t(2)).await;
    let entries = crate::harness::expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(crate::harness::ids(&entries), ["a", "b"]);
    assert!(matches!(
        h.admit_req(plain("c", &t)).await.decision,
        Decision::NotSubscribed
    ));
}

/// The same rule for a queue and for a pending debounce event.
pub async fn gate_plain_message_joins_a_queue_or_a_pending_event(h: Harness) {
    let q = h.thread("q");
    let queue = Concurrency::queue();
    expect_run(&h.admit(&q, "a", queue).await);
    h.admit(&q, "b", queue).await;
    let joined = h
        .admit_req(
            h.request(h.event(&q, "c"), queue)
                .gate(chat_core::Gate::Subscribed),
        )
        .await;
    assert!(
        matches!(joined.decision, Decision::Queued { depth: 2 }),
        "got {:?}",
        joined.decision
    );
    let d = h.thread("d");
    let debounce = Concurrency::Debounce(chat_core::DebounceOptions::default().interval(h.t(2)));
    crate::harness::expect_hold(&h.admit(&d, "x", debounce).await);
    let joined = h
        .admit_req(
            h.request(h.event(&d, "y"), debounce)
                .gate(chat_core::Gate::Subscribed),
        )
        .await;
    assert!(
        matches!(joined.decision, Decision::Pending { replaced: true }),
        "got {:?}",
        joined.decision
    );
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
