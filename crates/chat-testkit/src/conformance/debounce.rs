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
    let lease = expect_hold(&h.admit(&t, "a", c).await);
    let wait = expect_wait(h.finish(&lease).await);
    assert!(wait > h.t(1) && wait <= h.t(2), "wait {wait:?}");
    h.advance(h.t(2)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&lease).await)), ["a"]);
    assert!(matches!(h.finish(&lease).await, Handoff::Released));
}

/// A new event replaces the pending one (returned as superseded) and restarts
/// the quiet interval.
pub async fn debounce_replacement_supersedes_and_restarts_the_interval(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 2);
    let lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    match h.admit(&t, "b", c).await.decision {
        Decision::Pending {
            superseded: Some(w),
        } => assert_eq!(w.event.id.as_str(), "a"),
        other => panic!("expected a superseded, got {other:?}"),
    }
    h.advance(h.t(1)).await;
    // Two units after a, one after b: not quiet yet.
    let wait = expect_wait(h.finish(&lease).await);
    assert!(wait > h.t(1) / 2 && wait <= h.t(1), "wait {wait:?}");
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&lease).await)), ["b"]);
}

/// An event arriving while the pending one runs becomes pending again, and the
/// holder's `finish` keeps the lease for it.
pub async fn debounce_event_during_a_run_waits_for_the_holder(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 1);
    let lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&lease).await)), ["a"]);
    assert!(matches!(
        h.admit(&t, "b", c).await.decision,
        Decision::Pending { superseded: None }
    ));
    expect_wait(h.finish(&lease).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&lease).await)), ["b"]);
}

/// A pending event left under a free lease (its holder died) is superseded by the
/// next admit, which becomes the holder.
pub async fn debounce_orphaned_pending_is_superseded_by_the_next_admit(h: Harness) {
    let t = h.thread("1");
    let c = debounce(&h, 1);
    let _dead = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    match h.admit(&t, "b", c).await.decision {
        Decision::Hold {
            superseded: Some(w),
            ..
        } => assert_eq!(w.event.id.as_str(), "a"),
        other => panic!("expected Hold with a superseded, got {other:?}"),
    }
}
