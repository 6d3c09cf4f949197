//! The queue strategy: bounds, eviction, entry TTL, release-or-handoff, orphans.

use chat_core::{Concurrency, Decision, DropReason, Handoff, OnFull, QueueOptions};

use crate::harness::{Harness, expect_handoff_run, expect_hold, expect_run, ids};

fn queue(max: usize, on_full: OnFull) -> Concurrency {
    Concurrency::Queue(QueueOptions::default().max_size(max).on_full(on_full))
}

/// Busy scope: each event joins the queue and the depth counts it.
pub async fn queue_busy_events_are_queued_with_depth(h: Harness) {
    let t = h.thread("1");
    expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    for (i, id) in ["b", "c", "d"].into_iter().enumerate() {
        match h.admit(&t, id, Concurrency::queue()).await.decision {
            Decision::Queued { depth } => assert_eq!(depth, i + 1),
            other => panic!("{id}: expected Queued, got {other:?}"),
        }
    }
}

/// `finish` hands every waiting entry to the holder, oldest first, and keeps the
/// lease; the next `finish` releases.
pub async fn queue_finish_hands_off_all_entries_in_join_order(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    for id in ["b", "c", "d"] {
        h.admit(&t, id, Concurrency::queue()).await;
    }
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["b", "c", "d"]);
    assert!(entries.iter().all(|w| !w.expired));
    // The holder kept the scope while it runs them.
    assert!(matches!(
        h.admit(&t, "x", Concurrency::Drop).await.decision,
        Decision::Dropped(_)
    ));
    h.admit(&t, "e", Concurrency::queue()).await;
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["e"]);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// Full under `DropOldest`: the oldest entry is evicted, and reported to the
/// holder with its next batch.
pub async fn queue_full_drop_oldest_evicts_the_oldest(h: Harness) {
    let t = h.thread("1");
    let c = queue(2, OnFull::DropOldest);
    let mut lease = expect_run(&h.admit(&t, "a", c).await);
    h.admit(&t, "b", c).await;
    h.admit(&t, "c", c).await;
    match h.admit(&t, "d", c).await.decision {
        Decision::Queued { depth: 2 } => {}
        other => panic!("expected Queued at depth 2, got {other:?}"),
    }
    let batch = crate::harness::expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&batch.entries), ["c", "d"]);
    assert_eq!(batch.reports.len(), 1, "{:?}", batch.reports);
    assert_eq!(batch.reports[0].event_id.as_str(), "b");
    assert_eq!(batch.reports[0].fate, chat_core::Fate::Evicted);
    assert_eq!(batch.reports[0].thread.as_ref(), Some(&t));
}

/// Full under `DropNewest`: the newcomer is dropped, stays marked, and the queue
/// is unchanged.
pub async fn queue_full_drop_newest_drops_the_newcomer(h: Harness) {
    let t = h.thread("1");
    let c = queue(2, OnFull::DropNewest);
    let mut lease = expect_run(&h.admit(&t, "a", c).await);
    h.admit(&t, "b", c).await;
    h.admit(&t, "c", c).await;
    let d = h.admit(&t, "d", c).await;
    assert!(
        matches!(d.decision, Decision::Dropped(DropReason::QueueFull)),
        "got {:?}",
        d.decision
    );
    assert!(matches!(
        h.admit(&t, "d", c).await.decision,
        Decision::Duplicate
    ));
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["b", "c"]
    );
}

/// An entry older than the queue's entry TTL is handed over marked expired.
pub async fn queue_entry_past_its_ttl_is_expired(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Queue(QueueOptions::default().entry_ttl(h.t(2)));
    let mut lease = expect_run(&h.admit(&t, "a", c).await);
    h.admit(&t, "old", c).await;
    h.advance(h.t(1)).await;
    h.renew(&lease).await;
    h.admit(&t, "new", c).await;
    h.advance(h.t(1) + h.t(1) / 2).await;
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["old", "new"]);
    assert!(entries[0].expired, "old should be expired");
    assert!(!entries[1].expired, "new should be live");
}

/// Entries report how long they waited, by the backend's clock.
pub async fn queue_entries_report_their_wait(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    h.advance(h.t(2)).await;
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    let waited = entries[0].waited;
    assert!(
        waited >= h.t(2) - h.t(1) / 4 && waited <= h.t(3),
        "waited {waited:?}"
    );
}

/// Entries outlive a holder whose lease expired: the next admit on the scope takes
/// the lease and is handed, first, the batch the dead holder was running, then
/// the waiting entries with its own event last.
pub async fn queue_orphaned_entries_go_to_the_next_holder(h: Harness) {
    let t = h.thread("1");
    let _dead = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut lease = expect_hold(&h.admit(&t, "c", Concurrency::queue()).await);
    let again = crate::harness::expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&again.entries), ["a"]);
    assert_eq!((again.attempt, again.lapses), (2, 1));
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["b", "c"]);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}
