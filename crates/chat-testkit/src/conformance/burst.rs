//! The burst strategy: fixed windows, early sealing, seal order, the bound.

use chat_core::{BurstOptions, Concurrency, Decision, Handoff};

use crate::harness::{Harness, expect_handoff_run, expect_hold, expect_wait, ids};

fn burst(h: &Harness, window: u32, max_batch: Option<usize>, max_waiting: usize) -> Concurrency {
    let mut o = BurstOptions::default()
        .window(h.t(window))
        .max_waiting(max_waiting);
    if let Some(m) = max_batch {
        o = o.max_batch(m);
    }
    Concurrency::Burst(o)
}

/// Events inside the window join one batch, handed over when the window ends.
pub async fn burst_window_collects_one_batch(h: Harness) {
    let t = h.thread("1");
    let c = burst(&h, 2, None, 10);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    assert!(matches!(
        h.admit(&t, "b", c).await.decision,
        Decision::Queued { depth: 2, .. }
    ));
    assert!(matches!(
        h.admit(&t, "c", c).await.decision,
        Decision::Queued { depth: 3, .. }
    ));
    expect_wait(h.finish(&mut lease).await);
    h.advance(h.t(2)).await;
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["a", "b", "c"]
    );
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// Later arrivals never extend the window: it ends a fixed time after it opened.
pub async fn burst_window_is_not_extended_by_later_arrivals(h: Harness) {
    let t = h.thread("1");
    let c = burst(&h, 2, None, 10);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    h.admit(&t, "b", c).await;
    let wait = expect_wait(h.finish(&mut lease).await);
    assert!(wait <= h.t(1), "window extended: wait {wait:?}");
    h.advance(h.t(1)).await;
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["a", "b"]
    );
}

/// `max_batch` seals a batch early; the next arrival opens a new window.
pub async fn burst_max_batch_seals_early(h: Harness) {
    let t = h.thread("1");
    let c = burst(&h, 2, Some(2), 10);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.admit(&t, "b", c).await;
    h.admit(&t, "c", c).await;
    // Sealed at two members: ready before its window ends.
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["a", "b"]
    );
    expect_wait(h.finish(&mut lease).await);
    h.advance(h.t(2)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["c"]);
}

/// Batches are handed over in the order they sealed.
pub async fn burst_batches_run_in_seal_order(h: Harness) {
    let t = h.thread("1");
    let c = burst(&h, 1, None, 10);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    h.admit(&t, "b", c).await;
    h.admit(&t, "c", c).await;
    h.advance(h.t(1)).await;
    h.renew(&lease).await;
    h.admit(&t, "d", c).await;
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["b", "c"]
    );
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["d"]);
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
}

/// At `max_waiting` the delivery is refused before the ack and left unmarked, so
/// the platform's retry is admitted once there is room.
pub async fn burst_full_refuses_before_the_ack_and_leaves_the_key_unmarked(h: Harness) {
    let t = h.thread("1");
    let c = burst(&h, 1, None, 2);
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.admit(&t, "b", c).await;
    assert!(matches!(h.admit(&t, "c", c).await.decision, Decision::Full));
    h.advance(h.t(1)).await;
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["a", "b"]
    );
    assert!(matches!(
        h.admit(&t, "c", c).await.decision,
        Decision::Queued { depth: 1, .. }
    ));
}

/// A member that waited past its entry TTL while the holder ran earlier
/// batches is handed over expired, whatever the mode.
pub async fn burst_member_past_its_entry_ttl_is_expired(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Burst(
        BurstOptions::default()
            .window(h.t(1))
            .entry_ttl(h.t(2))
            .mode(chat_core::BurstMode::Each),
    );
    let mut lease = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.t(1)).await;
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
    h.admit(&t, "b", c).await;
    h.admit(&t, "c", c).await;
    h.advance(h.t(2)).await;
    h.renew(&lease).await;
    h.advance(h.t(1)).await;
    let entries = expect_handoff_run(h.finish(&mut lease).await);
    assert_eq!(ids(&entries), ["b", "c"]);
    assert!(entries.iter().all(|w| w.expired), "{entries:?}");
}
