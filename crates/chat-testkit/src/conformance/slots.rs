//! The concurrent strategy: unbounded, bounded slots, waiting, expiry.

use chat_core::{Concurrency, ConcurrentOptions, Decision, Handoff, LeaseKind, Renewal};

use crate::harness::{Harness, expect_run, ok};

fn bounded(max: usize) -> Concurrency {
    Concurrency::Concurrent(ConcurrentOptions::default().max(max))
}

/// Unbounded concurrency needs no lease: every event runs.
pub async fn concurrent_unbounded_runs_everything_unlocked(h: Harness) {
    let t = h.thread("1");
    for id in ["a", "b", "c"] {
        assert!(matches!(
            h.admit(&t, id, Concurrency::concurrent()).await.decision,
            Decision::Unlocked
        ));
    }
}

/// At most `max` slot leases at once; the next event waits, marked.
pub async fn concurrent_slots_are_bounded(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(2)).await);
    let b = expect_run(&h.admit(&t, "b", bounded(2)).await);
    assert_eq!(a.kind(), LeaseKind::Slot);
    assert_ne!(a.token(), b.token());
    assert!(matches!(
        h.admit(&t, "c", bounded(2)).await.decision,
        Decision::WaitingForSlot
    ));
    assert!(matches!(
        h.admit(&t, "c", bounded(2)).await.decision,
        Decision::Duplicate
    ));
    let slot = ok(
        "acquire_slot",
        h.backend()
            .acquire_slot(&h.scope(&t), 2, h.lease_ttl())
            .await,
    );
    assert!(slot.is_none(), "a third slot was granted");
}

/// A released slot goes to a waiter.
pub async fn concurrent_released_slot_goes_to_a_waiter(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(1)).await);
    assert!(matches!(
        h.admit(&t, "b", bounded(1)).await.decision,
        Decision::WaitingForSlot
    ));
    assert!(matches!(h.finish(&a).await, Handoff::Released));
    let slot = ok(
        "acquire_slot",
        h.backend()
            .acquire_slot(&h.scope(&t), 1, h.lease_ttl())
            .await,
    );
    let slot = slot.unwrap_or_else(|| panic!("the freed slot was not granted"));
    assert!(slot.fence() > a.fence());
    assert!(matches!(h.renew(&slot).await, Renewal::Renewed { .. }));
}

/// A slot whose holder stopped renewing expires and frees its place.
pub async fn concurrent_slot_expires_without_renewal(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(1)).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    assert!(matches!(h.renew(&a).await, Renewal::Lost));
    expect_run(&h.admit(&t, "b", bounded(1)).await);
}

/// Slots are per scope.
pub async fn concurrent_slots_are_per_scope(h: Harness) {
    expect_run(&h.admit(&h.thread("1"), "a", bounded(1)).await);
    expect_run(&h.admit(&h.thread("2"), "b", bounded(1)).await);
}
