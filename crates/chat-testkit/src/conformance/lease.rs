//! Leases: conflict, release, expiry, renewal, tokens and fencing.

use chat_core::{Concurrency, Decision, DropReason, Handoff, LeaseKind, Renewal};

use crate::harness::{Harness, expect_run};

/// Drop: a second event on a held scope is dropped as busy.
pub async fn lease_conflict_drops_the_second_event(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    assert_eq!(lease.kind(), LeaseKind::Exclusive);
    let b = h.admit(&t, "b", Concurrency::Drop).await;
    assert!(
        matches!(b.decision, Decision::Dropped(DropReason::Busy)),
        "got {:?}",
        b.decision
    );
}

/// A dropped event stays marked: its retry is a duplicate.
pub async fn lease_dropped_event_stays_marked(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.admit(&t, "b", Concurrency::Drop).await;
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    assert!(matches!(
        h.admit(&t, "b", Concurrency::Drop).await.decision,
        Decision::Duplicate
    ));
}

/// Other scopes are not affected by a held lease.
pub async fn lease_scopes_are_independent(h: Harness) {
    expect_run(&h.admit(&h.thread("1"), "a", Concurrency::Drop).await);
    expect_run(&h.admit(&h.thread("2"), "b", Concurrency::Drop).await);
}

/// After `finish` releases, the next event gets the lease.
pub async fn lease_finish_releases(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    expect_run(&h.admit(&t, "b", Concurrency::Drop).await);
}

/// An unrenewed lease expires after its TTL: the next admit gets the scope (and
/// the work its holder left, which runs first).
pub async fn lease_expires_after_its_ttl(h: Harness) {
    let t = h.thread("1");
    expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.advance(h.lease_ttl() - h.t(1)).await;
    assert!(matches!(
        h.admit(&t, "b", Concurrency::queue()).await.decision,
        Decision::Queued { .. }
    ));
    h.advance(h.t(2)).await;
    crate::harness::expect_hold(&h.admit(&t, "c", Concurrency::queue()).await);
}

/// Renewal extends the lease past its first TTL.
pub async fn lease_renew_extends(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    for _ in 0..3 {
        h.advance(h.t(2)).await;
        assert!(matches!(
            h.renew(&lease).await,
            Renewal::Renewed { cancel_requests: 0 }
        ));
    }
    assert!(matches!(
        h.admit(&t, "b", Concurrency::Drop).await.decision,
        Decision::Dropped(_)
    ));
}

/// An expired lease is never resurrected, even if nobody took the scope; its
/// holder may still acknowledge the batch it ran, since nobody adopted it.
pub async fn lease_renew_after_expiry_is_lost(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    assert!(matches!(h.renew(&lease).await, Renewal::Lost));
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    expect_run(&h.admit(&t, "b", Concurrency::Drop).await);
}

/// A stale holder can neither renew, finish nor take once a newer holder exists,
/// and its attempts change nothing.
pub async fn lease_stale_holder_cannot_touch_a_newer_lease(h: Harness) {
    let t = h.thread("1");
    let mut old = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut new = crate::harness::expect_hold(&h.admit(&t, "b", Concurrency::queue()).await);
    // The new holder adopts the batch the old one never acknowledged.
    let adopted = crate::harness::expect_handoff_run(h.finish(&mut new).await);
    assert_eq!(crate::harness::ids(&adopted), ["a"]);
    assert!(matches!(
        h.admit(&t, "c", Concurrency::queue()).await.decision,
        Decision::Queued { depth: 2 }
    ));
    assert!(matches!(h.renew(&old).await, Renewal::Lost));
    assert!(matches!(h.finish(&mut old).await, Handoff::Lost));
    // The newer holder still owns the scope and its queue.
    assert!(matches!(h.renew(&new).await, Renewal::Renewed { .. }));
    let entries = crate::harness::expect_handoff_run(h.finish(&mut new).await);
    assert_eq!(crate::harness::ids(&entries), ["b", "c"]);
}

/// Every grant on a scope has a larger fencing number than the grants before it.
pub async fn lease_fence_grows_with_every_grant(h: Harness) {
    let t = h.thread("1");
    let mut last = 0;
    for _ in 0..4 {
        let id = h.fresh_id();
        let mut lease = expect_run(&h.admit(&t, &id, Concurrency::Drop).await);
        assert!(
            lease.fence() > last,
            "fence {} not above {last}",
            lease.fence()
        );
        last = lease.fence();
        h.finish(&mut lease).await;
    }
    // Also across expiry.
    let id = h.fresh_id();
    let lease = expect_run(&h.admit(&t, &id, Concurrency::queue()).await);
    assert!(lease.fence() > last);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let id = h.fresh_id();
    let next = crate::harness::expect_hold(&h.admit(&t, &id, Concurrency::queue()).await);
    assert!(next.fence() > lease.fence());
}

/// Tokens are long, random and distinct.
pub async fn lease_tokens_are_unguessable(h: Harness) {
    let a = expect_run(&h.admit(&h.thread("1"), "a", Concurrency::Drop).await);
    let b = expect_run(&h.admit(&h.thread("2"), "b", Concurrency::Drop).await);
    assert_ne!(a.token(), b.token());
    for l in [&a, &b] {
        assert!(l.token().as_str().len() >= 32, "token too short");
    }
    assert!(
        !format!("{:?}", a.token()).contains(a.token().as_str()),
        "Debug prints the token"
    );
}

/// Finishing twice (a repeat whose first reply was lost): the second call
/// answers `Released` again and changes nothing.
pub async fn lease_finish_twice_is_released_once(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    let mut next = expect_run(&h.admit(&t, "b", Concurrency::Drop).await);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    assert!(matches!(h.renew(&next).await, Renewal::Renewed { .. }));
    assert!(matches!(h.finish(&mut next).await, Handoff::Released));
}
