//! The debounce strategy: replacement, quiet interval judged by the backend,
//! orphaned pending events.

use chat_core::{Concurrency, DebounceOptions, Decision, Handoff};

use crate::harness::{Harness, expect_handoff_run, expect_hold, expect_wait, ids};

fn debounce(h: &Harness, units: u32) -> Concurrency {
    Concurrency::Debounce(DebounceOptions::default().interval(h.t(units)))
}

/// The first event on an idle scope takes the lease and waits out the interval.
pub async fn debounce_first_event_holds_until_quiet(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 2);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    let wait = expect_wait(h.finish(&mut lease).await);
    assert!(wait > h.t(1) && wait <= h.t(2), "wait {wait:?}");
    h.advance(h.t(2)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// A new event replaces the pending one (reported superseded with the next
/// batch) and restarts the quiet interval.
pub async fn debounce_replacement_supersedes_and_restarts_the_interval(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 2);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    match h.admit(&t, "b", c).await.decision {
        Decision::Pending { replaced: true } => {}
        other => panic!("expected a replacement, got {other:?}"),
    }
    h.advance(h.t(1)).await;
    // Two units after a, one after b: not quiet yet.
    let wait = expect_wait(h.finish(&mut lease).await);
    assert!(wait > h.t(1) / 2 && wait <= h.t(1), "wait {wait:?}");
    h.advance(h.t(1)).await;
    let batch = crate::harness::expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&batch.entries), ["b"]);
    assert_eq!(batch.reports.len(), 1);
    assert_eq!(batch.reports[0].event_id.as_str(), "a");
    assert_eq!(batch.reports[0].fate, chat_core::Fate::Superseded);
}

/// An event arriving while the pending one runs becomes pending again, and the
/// holder's `finish` keeps the lease for it.
pub async fn debounce_event_during_a_run_waits_for_the_holder(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 1);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
    assert!(matches!(
        h.admit(&t, "b", c).await.decision,
        Decision::Pending { replaced: false }
    ));
    expect_wait(h.finish(&mut lease).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["b"]);
}

/// A pending event left under a free lease (its holder died) is superseded by the
/// next admit, which becomes the holder and gets the report.
pub async fn debounce_orphaned_pending_is_superseded_by_the_next_admit(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 1);
    let _dead = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut lease = expect_hold(&h.admit(&t, "b", c).await);
    expect_wait(h.finish(&mut lease).await);
    h.advance(h.t(1)).await;
    let batch = crate::harness::expect_batch(h.finish(&mut lease).await);
    assert_eq!(ids(&batch.entries), ["b"]);
    assert_eq!(batch.reports.len(), 1);
    assert_eq!(batch.reports[0].event_id.as_str(), "a");
}

/// A pending event that waited past its entry TTL while the holder was busy is
/// handed over expired (the runtime records it `Expired`, never runs it).
pub async fn debounce_pending_past_its_entry_ttl_is_expired(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Debounce(
        DebounceOptions::default()
            .interval(h.t(1))
            .entry_ttl(h.t(2)),
    );
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
    // a runs for a long while; b arrives and waits past its TTL.
    h.admit(&t, "b", c).await;
    h.advance(h.t(2)).await;
    h.renew(&lease).await;
    h.advance(h.t(1)).await;
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["b"]);
    assert!(entries[0].expired, "b should be expired");
}
