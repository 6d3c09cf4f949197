//! Durable runs: every call is safe to repeat (a lost reply), in-flight batches
//! outlive their holder and are adopted, reports reach the next holder.

use chat_core::{Concurrency, Decision, DropReason, Handoff, QueueOptions, Release, Renewal};

use crate::conformance::control::recovered_scopes;
use crate::harness::{Harness, expect_batch, expect_handoff_run, expect_hold, expect_run, ids};

/// An admit repeated with the same request (its reply was lost) answers the same
/// `Run` — same token, same fence — instead of `Duplicate`, and grants nothing
/// more; another request for the same event is a duplicate.
pub async fn replay_admit_returns_the_same_run(h: Harness) {
    let t = h.thread("1");
    let req = h.request(h.event(&t, "a"), Concurrency::queue());
    let first = expect_run(&h.admit_req(req.clone()).await);
    let again = expect_run(&h.admit_req(req).await);
    assert_eq!(first, again);
    assert_eq!(first.token(), &again.token().clone());
    assert!(matches!(
        h.admit(&t, "a", Concurrency::queue()).await.decision,
        Decision::Duplicate
    ));
    // Still one holder: the next event queues behind it.
    assert!(matches!(
        h.admit(&t, "b", Concurrency::queue()).await.decision,
        Decision::Queued { depth: 1 }
    ));
}

/// A repeat after the lease the admit granted has lapsed answers `Stored`: the
/// event is in flight and recovery owns it.
pub async fn replay_admit_after_its_lease_lapsed_is_stored(h: Harness) {
    let t = h.thread("1");
    let req = h.request(h.event(&t, "a"), Concurrency::Drop);
    expect_run(&h.admit_req(req.clone()).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let again = h.admit_req(req).await;
    assert!(
        matches!(again.decision, Decision::Stored),
        "got {:?}",
        again.decision
    );
}

/// Repeats of the other decisions answer them again, changing nothing.
pub async fn replay_admit_of_queued_and_dropped_decisions(h: Harness) {
    let t = h.thread("1");
    let full = Concurrency::Queue(
        QueueOptions::default()
            .max_size(1)
            .on_full(chat_core::OnFull::DropNewest),
    );
    let mut lease = expect_run(&h.admit(&t, "a", full).await);
    let queued = h.request(h.event(&t, "b"), full);
    assert!(matches!(
        h.admit_req(queued.clone()).await.decision,
        Decision::Queued { depth: 1 }
    ));
    assert!(matches!(
        h.admit_req(queued).await.decision,
        Decision::Queued { depth: 1 }
    ));
    let dropped = h.request(h.event(&t, "c"), full);
    for _ in 0..2 {
        assert!(matches!(
            h.admit_req(dropped.clone()).await.decision,
            Decision::Dropped(DropReason::QueueFull)
        ));
    }
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["b"]);
}

/// A finish repeated with the same seq (its reply was lost) hands over the same
/// batch again; the holder's next finish acknowledges it.
pub async fn replay_finish_hands_over_the_same_batch(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    let held = lease.clone();
    let first = expect_batch(h.finish(&mut lease).await);
    h.admit(&t, "c", Concurrency::queue()).await;
    let again = expect_batch(h.finish_as(&held).await);
    assert_eq!(first.seq, again.seq);
    assert_eq!(ids(&first.entries), ids(&again.entries));
    assert_eq!(ids(&again.entries), ["b"]);
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["c"]);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// A finish with an older seq than the holder's (a late copy) changes nothing.
pub async fn replay_stale_finish_changes_nothing(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    let first = lease.clone();
    h.admit(&t, "b", Concurrency::queue()).await;
    expect_batch(h.finish(&mut lease).await);
    h.admit(&t, "c", Concurrency::queue()).await;
    expect_batch(h.finish(&mut lease).await);
    h.admit(&t, "d", Concurrency::queue()).await;
    assert!(matches!(h.finish_as(&first).await, Handoff::Lost));
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["d"]);
}

/// A holder that dies while running leaves its event in flight: the sweep gives
/// the scope to a new holder, whose first finish hands the event over again at
/// attempt 2, and the dead holder can no longer acknowledge it.
pub async fn inflight_run_of_a_dead_holder_is_adopted(h: Harness) {
    let t = h.thread("1");
    let mut dead = expect_run(&h.admit(&t, "a", Concurrency::Drop).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    // Under drop, the event still to be run again makes the scope busy.
    assert!(matches!(
        h.admit(&t, "b", Concurrency::Drop).await.decision,
        Decision::Dropped(DropReason::Busy)
    ));
    let mut lease = recovered_scopes(&h, dead.scope())
        .await
        .pop()
        .unwrap_or_else(|| panic!("the in-flight run was not recovered"));
    let batch = expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&batch.entries), ["a"]);
    assert_eq!((batch.attempt, batch.lapses), (2, 1));
    assert!(lease.fence() > dead.fence());
    assert!(matches!(h.finish(&mut dead).await, Handoff::Lost));
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// A batch handed back at shutdown is adopted without counting a lapse, and a
/// batch released as done is never handed out again.
pub async fn released_batches_are_handed_back_or_acknowledged(h: Harness) {
    let t = h.thread("1");
    let back = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    assert!(h.release(&back, Release::HandBack).await);
    let mut next = expect_hold(&h.admit(&t, "b", Concurrency::queue()).await);
    let batch = expect_batch(h.finish(&mut next).await);
    assert_eq!(ids(&batch.entries), ["a"]);
    assert_eq!((batch.attempt, batch.lapses), (2, 0));
    assert!(h.release(&next, Release::Done).await);
    let mut last = expect_hold(&h.admit(&t, "c", Concurrency::queue()).await);
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut last).await)),
        ["b", "c"]
    );
    assert!(matches!(h.finish(&mut last).await, Handoff::Released));
}

/// A holder whose lease lapsed, with nobody adopting its batch, acknowledges it
/// with its finish: the event is not run again.
pub async fn lapsed_holder_acknowledges_its_own_batch(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    assert!(matches!(h.renew(&lease).await, Renewal::Lost));
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    assert!(recovered_scopes(&h, lease.scope()).await.is_empty());
    expect_run(&h.admit(&t, "b", Concurrency::queue()).await);
}

/// A batch handed out again keeps how long its entries had waited and whether
/// they had expired when first handed out.
pub async fn adopted_batches_read_as_first_handed_out(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Queue(QueueOptions::default().entry_ttl(h.t(10)));
    let mut dead = expect_run(&h.admit(&t, "a", c).await);
    h.admit(&t, "b", c).await;
    h.advance(h.t(1)).await;
    let first = expect_batch(h.finish(&mut dead).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut lease = recovered_scopes(&h, dead.scope())
        .await
        .pop()
        .unwrap_or_else(|| panic!("the in-flight batch was not recovered"));
    let again = expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&again.entries), ["b"]);
    assert_eq!(again.attempt, 2);
    assert_eq!(again.entries[0].waited, first.entries[0].waited);
    assert_eq!(again.entries[0].expired, first.entries[0].expired);
}

/// Repeats of a renewal and of a release (their replies lost) change nothing
/// more: the repeated renewal extends the same lease; the repeated release
/// answers the same and leaves the next holder's lease alone.
pub async fn replay_renew_and_release_change_nothing_more(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    assert!(matches!(h.renew(&lease).await, Renewal::Renewed { .. }));
    assert!(matches!(h.renew(&lease).await, Renewal::Renewed { .. }));
    assert!(h.release(&lease, Release::Done).await);
    assert!(
        h.release(&lease, Release::Done).await,
        "a repeat answers the same"
    );
    let mut next = expect_hold(&h.admit(&t, "c", Concurrency::queue()).await);
    assert!(h.release(&lease, Release::Done).await);
    assert!(matches!(h.renew(&next).await, Renewal::Renewed { .. }));
    // a was acknowledged by the release: only what waited is handed over.
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut next).await)),
        ["b", "c"]
    );
}

/// A replayed grant extends the lease as the first answer did: the caller
/// dates its lease from the call that answered, so the lease must live a TTL
/// from the repeat (an admit's `Run`, a finish's hand-over).
pub async fn replays_extend_the_lease_like_the_first_answer(h: Harness) {
    let t = h.thread("1");
    let req = h.request(h.event(&t, "a"), Concurrency::queue());
    let lease = expect_run(&h.admit_req(req.clone()).await);
    h.advance(h.t(2)).await;
    expect_run(&h.admit_req(req).await);
    h.advance(h.t(2)).await;
    assert!(
        matches!(h.renew(&lease).await, Renewal::Renewed { .. }),
        "the replayed admit did not extend the lease"
    );
    h.admit(&t, "b", Concurrency::queue()).await;
    let held = lease.clone();
    let mut lease = lease;
    expect_batch(h.finish(&mut lease).await);
    h.advance(h.t(2)).await;
    expect_batch(h.finish_as(&held).await);
    h.advance(h.t(2)).await;
    assert!(
        matches!(h.renew(&lease).await, Renewal::Renewed { .. }),
        "the replayed finish did not extend the lease"
    );
}
