//! The concurrent strategy: unbounded, bounded slots, waiting, expiry, and the
//! recovery of a slot run whose holder is gone.

use chat_core::{
    Concurrency, ConcurrentOptions, Decision, Handoff, LeaseKind, Recovered, Release, Renewal,
    SlotGrant,
};

use crate::harness::{Harness, expect_run, ok};

fn bounded(max: usize) -> Concurrency {
    Concurrency::Concurrent(ConcurrentOptions::default().max(max))
}

/// Unbounded concurrency: every event runs at once, each under its own slot
/// lease (so its run is recorded until it finishes).
pub async fn concurrent_unbounded_runs_everything(h: Harness) {
    let t = h.thread("1");
    let mut leases = Vec::new();
    for id in ["a", "b", "c"] {
        let lease = expect_run(&h.admit(&t, id, Concurrency::concurrent()).await);
        assert_eq!(lease.kind(), LeaseKind::Slot);
        leases.push(lease);
    }
    for mut lease in leases {
        assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    }
}

/// At most `max` slot leases at once; the next event waits, marked, and its
/// own id stays full while the slots are taken.
pub async fn concurrent_slots_are_bounded(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(2)).await);
    let b = expect_run(&h.admit(&t, "b", bounded(2)).await);
    assert_eq!(a.kind(), LeaseKind::Slot);
    assert_ne!(a.token(), b.token());
    let req = h.request(h.event(&t, "c"), bounded(2));
    let id = req.id.clone();
    assert!(matches!(
        h.admit_req(req).await.decision,
        Decision::WaitingForSlot
    ));
    assert!(matches!(
        h.admit(&t, "c", bounded(2)).await.decision,
        Decision::Duplicate
    ));
    let slot = ok(
        "acquire_slot",
        h.backend()
            .acquire_slot(&h.scope(&t), &id, Some(2), h.lease_ttl())
            .await,
    );
    assert!(matches!(slot, SlotGrant::Full), "got {slot:?}");
}

/// A released slot goes to a waiter; asking again returns the same grant.
pub async fn concurrent_released_slot_goes_to_a_waiter(h: Harness) {
    let t = h.thread("1");
    let mut a = expect_run(&h.admit(&t, "a", bounded(1)).await);
    let req = h.request(h.event(&t, "b"), bounded(1));
    let id = req.id.clone();
    assert!(matches!(
        h.admit_req(req).await.decision,
        Decision::WaitingForSlot
    ));
    assert!(matches!(h.finish(&mut a).await, Handoff::Released));
    let acquire = || async {
        ok(
            "acquire_slot",
            h.backend()
                .acquire_slot(&h.scope(&t), &id, Some(1), h.lease_ttl())
                .await,
        )
    };
    let SlotGrant::Granted(slot) = acquire().await else {
        panic!("the freed slot was not granted")
    };
    assert!(slot.fence() > a.fence());
    assert!(matches!(h.renew(&slot).await, Renewal::Renewed { .. }));
    let SlotGrant::Granted(again) = acquire().await else {
        panic!("a repeated acquire lost the grant")
    };
    assert_eq!((again.token(), again.fence()), (slot.token(), slot.fence()));
}

/// A slot whose holder stopped renewing expires and frees its place; its run is
/// recovered by the sweep, which hands it to a new waiter at attempt 2.
pub async fn concurrent_slot_expires_and_its_run_is_recovered(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(1)).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    assert!(matches!(h.renew(&a).await, Renewal::Lost));
    let mut b = expect_run(&h.admit(&t, "b", bounded(1)).await);
    let recovered = ok("sweep", h.backend().sweep(&h.sweep_request()).await);
    let Some((scope, token, batch)) = recovered.into_iter().find_map(|r| match r {
        Recovered::Slot {
            scope,
            token,
            batch,
            ..
        } if scope == h.scope(&t) => Some((scope, token, batch)),
        _ => None,
    }) else {
        panic!("the lapsed slot run was not recovered")
    };
    assert_eq!(crate::harness::ids(&batch.entries), ["a"]);
    assert_eq!((batch.attempt, batch.lapses), (2, 1));
    let acquire = || async {
        ok(
            "acquire_slot",
            h.backend()
                .acquire_slot(&scope, &token, Some(1), h.lease_ttl())
                .await,
        )
    };
    assert!(matches!(acquire().await, SlotGrant::Full));
    assert!(matches!(h.finish(&mut b).await, Handoff::Released));
    let SlotGrant::Granted(mut again) = acquire().await else {
        panic!("the recovered run got no slot")
    };
    assert!(matches!(h.finish(&mut again).await, Handoff::Released));
    // The old holder cannot acknowledge a run that was adopted.
    assert!(matches!(h.finish(&mut a.clone()).await, Handoff::Lost));
}

/// A slot run handed back (shutdown) is recovered without counting a lapse.
pub async fn concurrent_handed_back_run_is_recovered_at_once(h: Harness) {
    let t = h.thread("1");
    let a = expect_run(&h.admit(&t, "a", bounded(1)).await);
    assert!(h.release(&a, Release::HandBack).await);
    let recovered = ok("sweep", h.backend().sweep(&h.sweep_request()).await);
    let batch = recovered
        .into_iter()
        .find_map(|r| match r {
            Recovered::Slot { scope, batch, .. } if scope == h.scope(&t) => Some(batch),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the handed-back run was not recovered"));
    assert_eq!((batch.attempt, batch.lapses), (2, 0));
}

/// A recovered slot run comes back with the concurrency it was admitted
/// with — whatever strategy the process that recovers it runs — so it takes
/// its slot under the same bound: a bounded run's bound, and none for a run
/// admitted unbounded (an unlocked kind: a click, a reaction, a command).
pub async fn concurrent_recovered_run_keeps_the_concurrency_it_was_admitted_with(h: Harness) {
    let (t1, t2) = (h.thread("1"), h.thread("2"));
    let a = expect_run(&h.admit(&t1, "a", bounded(3)).await);
    let b = expect_run(&h.admit(&t2, "b", Concurrency::concurrent()).await);
    // One run lapses, the other is handed back: both are recovered.
    assert!(h.release(&b, Release::HandBack).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    assert!(matches!(h.renew(&a).await, Renewal::Lost));
    let recovered = ok("sweep", h.backend().sweep(&h.sweep_request()).await);
    let bound_of = |id: &str| {
        recovered.iter().find_map(|r| match r {
            Recovered::Slot {
                batch, concurrency, ..
            } if crate::harness::ids(&batch.entries) == [id] => Some(concurrency.max),
            _ => None,
        })
    };
    assert_eq!(bound_of("a"), Some(Some(3)), "{recovered:?}");
    assert_eq!(bound_of("b"), Some(None), "{recovered:?}");
}

/// Slots are per scope.
pub async fn concurrent_slots_are_per_scope(h: Harness) {
    expect_run(&h.admit(&h.thread("1"), "a", bounded(1)).await);
    expect_run(&h.admit(&h.thread("2"), "b", bounded(1)).await);
}
