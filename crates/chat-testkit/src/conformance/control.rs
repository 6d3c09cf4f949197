//! Stop requests and recovery of orphaned scopes.

use chat_core::{
    CancelOutcome, CancelRequest, Concurrency, DebounceOptions, Handoff, Lease, Recovered, Release,
    Renewal, ScopeKey, Sweep, TenantId, ThreadRef,
};

use crate::ScriptedAdapter;
use crate::harness::{Harness, expect_handoff_run, expect_hold, expect_run, ids, ok};

async fn cancel(h: &Harness, thread: &chat_core::ThreadRef, id: &str) -> CancelOutcome {
    let e = h.event(thread, id);
    let req = CancelRequest::new(&e, thread.thread_scope()).dedupe_ttl(h.dedupe_ttl());
    ok("request_cancel", h.backend().request_cancel(req).await)
}

/// A stop request is recorded on the lease and reported at the holder's renewal.
pub async fn cancel_request_reaches_the_holder_at_renewal(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    assert!(matches!(
        h.renew(&lease).await,
        Renewal::Renewed { cancel_requests: 0 }
    ));
    assert_eq!(
        cancel(&h, &t, "stop").await,
        CancelOutcome::Recorded { count: 1 }
    );
    assert!(matches!(
        h.renew(&lease).await,
        Renewal::Renewed { cancel_requests: 1 }
    ));
    // Each stop request counts, so a holder acts on each once.
    assert_eq!(
        cancel(&h, &t, "stop2").await,
        CancelOutcome::Recorded { count: 2 }
    );
    assert!(matches!(
        h.renew(&lease).await,
        Renewal::Renewed { cancel_requests: 2 }
    ));
}

/// A stop request is deduplicated, and with no holder there is nothing to stop.
/// A repeat of the same request (its reply was lost) is recorded once.
pub async fn cancel_request_is_deduplicated_and_needs_a_holder(h: Harness) {
    let t = h.thread("1");
    assert_eq!(cancel(&h, &t, "stop").await, CancelOutcome::NoHolder);
    assert_eq!(cancel(&h, &t, "stop").await, CancelOutcome::Duplicate);
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    let e = h.event(&t, "stop2");
    let req = CancelRequest::new(&e, t.thread_scope()).dedupe_ttl(h.dedupe_ttl());
    let first = ok(
        "request_cancel",
        h.backend().request_cancel(req.clone()).await,
    );
    let again = ok("request_cancel", h.backend().request_cancel(req).await);
    assert_eq!(first, CancelOutcome::Recorded { count: 1 });
    assert_eq!(again, CancelOutcome::Recorded { count: 1 });
    assert!(matches!(
        h.renew(&lease).await,
        Renewal::Renewed { cancel_requests: 1 }
    ));
}

/// Handing out a batch clears the requests: the next turn under the same lease
/// runs.
pub async fn cancel_request_is_cleared_by_finish(h: Harness) {
    let t = h.thread("1");
    let mut lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    cancel(&h, &t, "stop").await;
    expect_handoff_run(h.finish(&mut lease).await);
    assert!(matches!(
        h.renew(&lease).await,
        Renewal::Renewed { cancel_requests: 0 }
    ));
}

/// A sweep grants a lease on a scope whose holder died with entries waiting.
pub async fn sweep_claims_an_orphaned_queue(h: Harness) {
    let t = h.thread("1");
    let dead = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut mine = recovered_scopes(&h, dead.scope()).await;
    assert_eq!(
        mine.len(),
        1,
        "sweep found {} leases on the scope",
        mine.len()
    );
    let lease = &mut mine[0];
    assert!(lease.fence() > dead.fence());
    // The dead holder's own run first, then what waited.
    assert_eq!(ids(&expect_handoff_run(h.finish(lease).await)), ["a"]);
    assert_eq!(ids(&expect_handoff_run(h.finish(lease).await)), ["b"]);
    assert!(matches!(h.finish(lease).await, Handoff::Released));
}

/// A sweep leaves held scopes and scopes with nothing waiting alone.
pub async fn sweep_ignores_held_and_idle_scopes(h: Harness) {
    let held = h.thread("1");
    let idle = h.thread("2");
    let lease = expect_run(&h.admit(&held, "a", Concurrency::queue()).await);
    h.admit(&held, "b", Concurrency::queue()).await;
    let mut l2 = expect_run(&h.admit(&idle, "c", Concurrency::queue()).await);
    h.finish(&mut l2).await;
    let leases = ok("sweep", h.backend().sweep(&h.sweep_request()).await);
    let tenant = h.tenant();
    assert!(
        leases.iter().all(|r| recovered_tenant(r) != tenant),
        "sweep claimed a scope of this case: {leases:?}"
    );
    assert!(matches!(h.renew(&lease).await, Renewal::Renewed { .. }));
}

/// A sweep claims nothing of a tenant it is told to skip (the caller has no
/// room for it), so that tenant's backlog leaves the sweep's places to the
/// others; and when more runs wait than the sweep's limit, successive sweeps
/// do not start from the same ones.
pub async fn sweep_skips_tenants_and_rotates_through_a_backlog(h: Harness) {
    let hot = h.tenant().to_owned();
    let cold = format!("{hot}-cold");
    for i in 0..5 {
        let t = h.thread(&format!("hot{i}"));
        expect_run(&h.admit(&t, &format!("h{i}"), Concurrency::queue()).await);
    }
    let cold_thread = ThreadRef::new(ScriptedAdapter::PLATFORM, cold.as_str(), "C1", "cold");
    expect_run(&h.admit(&cold_thread, "c", Concurrency::queue()).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let ours = |r: &Recovered| [hot.as_str(), cold.as_str()].contains(&recovered_tenant(r));
    // Skipping the hot tenant: the cold one's run, though the hot one's came
    // first in any order.
    let skip = h
        .sweep_request()
        .skip_tenants([TenantId::new(hot.as_str())]);
    let got = ok("sweep", h.backend().sweep(&skip).await);
    assert!(got.iter().all(|r| recovered_tenant(r) != hot), "{got:?}");
    let cold_got: Vec<&Recovered> = got.iter().filter(|r| ours(r)).collect();
    assert_eq!(cold_got.len(), 1, "{got:?}");
    release_all(&h, &got).await;
    // One at a time, each claim handed back: the sweeps do not all pick the
    // same scope.
    let mut seen = std::collections::HashSet::new();
    for _ in 0..40 {
        let one = Sweep::new(h.lease_ttl(), 1).skip_tenants([TenantId::new(cold.as_str())]);
        let got = ok("sweep", h.backend().sweep(&one).await);
        for r in got.iter().filter(|r| ours(r)) {
            if let Recovered::Scope(lease) = r {
                seen.insert(lease.scope().clone());
            }
        }
        release_all(&h, &got).await;
    }
    assert!(seen.len() >= 2, "40 sweeps of one claimed only {seen:?}");
}

/// Hands every recovered run back, for the next sweep.
async fn release_all(h: &Harness, recovered: &[Recovered]) {
    for r in recovered {
        if let Recovered::Scope(lease) = r {
            h.release(lease, Release::HandBack).await;
        }
    }
}

/// A sweep also recovers a debounce event left pending by a dead holder.
pub async fn sweep_claims_an_orphaned_debounce_pending(h: Harness) {
    let t = h.thread("1");
    let c = Concurrency::Debounce(DebounceOptions::default().interval(h.t(1)));
    let dead = expect_hold(&h.admit(&t, "a", c).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut lease = recovered_scopes(&h, dead.scope())
        .await
        .pop()
        .unwrap_or_else(|| panic!("the orphaned pending event was not claimed"));
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut lease).await)), ["a"]);
}

/// The backend answers its health check.
pub async fn health_check_answers(h: Harness) {
    ok("health", h.backend().health().await);
}

/// `release` gives the lease up, acknowledges the finished batch, and leaves
/// waiting entries for the next holder.
pub async fn release_leaves_waiting_entries_for_the_next_holder(h: Harness) {
    let t = h.thread("1");
    let lease = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.admit(&t, "b", Concurrency::queue()).await;
    assert!(h.release(&lease, Release::Done).await);
    assert!(matches!(h.renew(&lease).await, Renewal::Lost));
    let mut next = expect_hold(&h.admit(&t, "c", Concurrency::queue()).await);
    assert_eq!(
        ids(&expect_handoff_run(h.finish(&mut next).await)),
        ["b", "c"]
    );
}

/// `release` with a stale token changes nothing.
pub async fn release_with_a_stale_token_changes_nothing(h: Harness) {
    let t = h.thread("1");
    let old = expect_run(&h.admit(&t, "a", Concurrency::queue()).await);
    h.advance(h.lease_ttl() + h.t(1)).await;
    let mut new = expect_hold(&h.admit(&t, "b", Concurrency::queue()).await);
    // The new holder adopts a; the old one can hand back nothing any more.
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut new).await)), ["a"]);
    assert!(!h.release(&old, Release::HandBack).await);
    assert!(!h.release(&old, Release::Done).await);
    assert!(matches!(h.renew(&new).await, Renewal::Renewed { .. }));
    assert_eq!(ids(&expect_handoff_run(h.finish(&mut new).await)), ["b"]);
}

/// The scopes a sweep recovered on `scope`.
pub(crate) async fn recovered_scopes(h: &Harness, scope: &ScopeKey) -> Vec<Lease> {
    ok("sweep", h.backend().sweep(&h.sweep_request()).await)
        .into_iter()
        .filter_map(|r| match r {
            Recovered::Scope(lease) if lease.scope() == scope => Some(lease),
            _ => None,
        })
        .collect()
}

fn recovered_tenant(r: &Recovered) -> &str {
    match r {
        Recovered::Scope(lease) => lease.scope().tenant.as_str(),
        Recovered::Slot { scope, .. } => scope.tenant.as_str(),
        _ => "",
    }
}
