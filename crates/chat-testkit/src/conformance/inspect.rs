//! Inspection: busy scopes, one scope in full, and the fenced force-release.

use chat_core::{
    BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions, EntryView, ForceRelease,
    Handoff, Renewal, ScopeFilter, ScopeView,
};

use super::control::recovered_scopes;
use crate::harness::{Harness, expect_handoff_run, expect_hold, expect_run, ids, ok};

fn names(entries: &[EntryView]) -> Vec<&str> {
    entries.iter().map(|e| e.event_id.as_str()).collect()
}

async fn busy(h: &Harness, filter: &ScopeFilter) -> Vec<ScopeView> {
    ok("busy_scopes", h.backend().busy_scopes(filter, 100).await)
}

/// The view of a scope that must be busy.
async fn view_of(h: &Harness, scope: &chat_core::ScopeKey) -> ScopeView {
    match ok("inspect_scope", h.backend().inspect_scope(scope).await) {
        Some(view) => view,
        None => panic!("{scope} is idle"),
    }
}

fn mine(h: &Harness) -> ScopeFilter {
    ScopeFilter::tenant(crate::ScriptedAdapter::PLATFORM, h.tenant())
}

/// A held scope with a queue shows its holder (fence, time left), its
/// in-flight event and its queue in join order, in the tenant's list and by
/// itself; a channel filter leaves it out of another channel's list; once its
/// work is done it is idle and listed nowhere.
pub async fn inspect_shows_a_held_scope_with_its_queue(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    h.admit(&t, "c", Concurrency::queue()).await;
    let idle = h.thread("2");
    let scope = h.scope(&t);

    let listed = busy(&h, &mine(&h)).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let view = &listed[0];
    assert_eq!(view.scope, scope);
    let Some(holder) = view.holder.as_ref() else {
        panic!("no holder in {view:?}");
    };
    assert_eq!(holder.fence, lease.fence());
    assert!(holder.expires_in > std::time::Duration::ZERO && holder.expires_in <= h.lease_ttl());
    assert!(lease.token().as_str().starts_with(&holder.holder));
    assert_eq!(names(&view.in_flight), ["a"]);
    assert_eq!(names(&view.queued), ["b", "c"]);
    assert_eq!(view.queued[0].thread, t.thread);
    assert!(view.pending.is_empty() && view.burst.is_empty() && view.slots.is_empty());
    let one = ok("inspect_scope", h.backend().inspect_scope(&scope).await);
    assert_eq!(one.as_ref().map(|v| names(&v.queued)), Some(vec!["b", "c"]));
    assert_eq!(
        ok(
            "inspect_scope",
            h.backend().inspect_scope(&h.scope(&idle)).await
        ),
        None
    );
    let elsewhere = ScopeFilter::channel(crate::ScriptedAdapter::PLATFORM, h.tenant(), "C2");
    assert!(busy(&h, &elsewhere).await.is_empty());

    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut lease).await)),
        ["b", "c"]
    );
    assert!(matches!(h.finish(&mut lease).await, Handoff::Released));
    assert!(busy(&h, &mine(&h)).await.is_empty());
    assert_eq!(
        ok("inspect_scope", h.backend().inspect_scope(&scope).await),
        None
    );
}

/// A debounce event waiting for quiet and the members of a burst window show
/// as pending and burst entries, with their age.
pub async fn inspect_shows_pending_and_burst_entries(h: Harness) {
    let d = h.thread("1");
    let debounce = Concurrency::Debounce(DebounceOptions::default().interval(h.t(4)));
    expect_hold(&h.admit(&d, "p", debounce).await);
    let b = h.thread("2");
    let burst = Concurrency::Burst(BurstOptions::default().window(h.t(4)));
    expect_hold(&h.admit(&b, "x", burst).await);
    h.admit(&b, "y", burst).await;
    h.advance(h.t(1)).await;

    let pending = view_of(&h, &h.scope(&d)).await;
    assert_eq!(names(&pending.pending), ["p"]);
    assert!(pending.pending[0].age >= h.t(1), "{pending:?}");
    let window = view_of(&h, &h.scope(&b)).await;
    assert_eq!(names(&window.burst), ["x", "y"]);
    assert_eq!(busy(&h, &mine(&h)).await.len(), 2);
}

/// A force-release with a fence that is not the live lease's changes nothing:
/// the holder renews as before.
pub async fn force_release_with_a_stale_fence_changes_nothing(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    let scope = h.scope(&t);
    for stale in [lease.fence() - 1, lease.fence() + 1] {
        assert_eq!(
            ok(
                "force_release",
                h.backend().force_release(&scope, stale).await
            ),
            ForceRelease::Stale
        );
    }
    assert!(matches!(h.renew(&lease).await, Renewal::Renewed { .. }));
    // An idle scope has nothing to release.
    assert_eq!(
        ok(
            "force_release",
            h.backend().force_release(&h.scope(&h.thread("2")), 1).await
        ),
        ForceRelease::Stale
    );
}

/// With the live fence the lease goes, nothing in the scope's care does: the
/// holder's renewal is lost, the sweep hands the in-flight event (again) and
/// then the queue to a new holder with a higher fence, and the released
/// holder's late finish is lost.
pub async fn force_release_hands_the_scopes_work_to_the_next_holder(h: Harness) {
    let t = h.thread("1");
    let mut stuck = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    let scope = h.scope(&t);
    assert_eq!(
        ok(
            "force_release",
            h.backend().force_release(&scope, stuck.fence()).await
        ),
        ForceRelease::Released
    );
    assert!(matches!(h.renew(&stuck).await, Renewal::Lost));
    let view = view_of(&h, &scope).await;
    assert!(view.holder.is_none());
    assert_eq!(names(&view.in_flight), ["a"]);
    assert_eq!(names(&view.queued), ["b"]);

    let mut next = recovered_scopes(&h, &scope).await;
    assert_eq!(next.len(), 1);
    let lease = &mut next[0];
    assert!(lease.fence() > stuck.fence());
    assert_eq!(ids(&expect_handoff_run(h.finish(lease).await)), ["a"]);
    assert!(matches!(h.finish(&mut stuck).await, Handoff::Lost));
    assert_eq!(ids(&expect_handoff_run(h.finish(lease).await)), ["b"]);
    assert!(matches!(h.finish(lease).await, Handoff::Released));
}

/// Under `Concurrent`, each slot shows with its fence; releasing one by its
/// fence frees it and leaves its run for recovery, the other slot untouched.
pub async fn force_release_of_a_slot_leaves_its_run_for_recovery(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Concurrent(ConcurrentOptions::default().max(2));
    let a = expect_run(&h.admit(&t, "a", c).await);
    let b = expect_run(&h.admit(&t, "b", c).await);
    let scope = h.scope(&t);
    let view = view_of(&h, &scope).await;
    let mut fences: Vec<u64> = view.slots.iter().map(|s| s.fence).collect();
    fences.sort_unstable();
    let mut expected = vec![a.fence(), b.fence()];
    expected.sort_unstable();
    assert_eq!(fences, expected);
    let mut running = names(&view.in_flight);
    running.sort_unstable();
    assert_eq!(running, ["a", "b"]);

    assert_eq!(
        ok(
            "force_release",
            h.backend().force_release(&scope, a.fence()).await
        ),
        ForceRelease::Released
    );
    let view = view_of(&h, &scope).await;
    assert_eq!(
        view.slots.iter().map(|s| s.fence).collect::<Vec<_>>(),
        [b.fence()]
    );
    assert_eq!(view.in_flight.len(), 2, "a's run stays for recovery");
    let recovered = ok("sweep", h.backend().sweep(&h.sweep_request()).await);
    let ran_again = recovered.iter().any(|r| match r {
        chat_core::Recovered::Slot {
            scope: s, batch, ..
        } => *s == scope && ids(&batch.entries) == ["a"],
        _ => false,
    });
    assert!(ran_again, "{recovered:?}");
}
