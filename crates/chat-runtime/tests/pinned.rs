//! What users rely on, pinned: every default, the corners of each strategy
//! (a lone burst message, budgets under debounce and burst, a lease lost in the
//! middle of a burst-each batch), the sync slot wait, a lock scope chosen from
//! the event. (The progress events by name: `progress_events.rs`.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value,
    missing_docs
)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use chat_core::{BurstOptions, DebounceOptions, OnFull, QueueOptions};
use chat_runtime::{
    BurstMode, CancelCause, Concurrency, ConcurrentOptions, Dispatch, LockScope, Outcome,
    RuntimeOptions, ScopeChoice, ShutdownMode,
};
use support::{Env, Scenario, deferred};

on_every_backend!(
    a_lone_burst_message_runs_alone,
    a_debounced_event_past_its_budget_expires,
    a_burst_batch_past_its_budget_expires,
    a_lease_lost_in_the_middle_of_a_burst_each_batch_runs_the_batch_again,
    a_sync_delivery_waits_for_a_concurrency_slot_within_its_request,
);

/// Every default the documentation names.
#[test]
fn every_default_is_as_documented() {
    let o = RuntimeOptions::default();
    assert_eq!(o.dispatch.mode, Dispatch::Sync);
    assert_eq!(o.concurrency, Concurrency::Drop);
    assert_eq!(o.dispatch.detach_timeout, Duration::ZERO);
    assert_eq!(o.admission.max_detached, 1024);
    assert_eq!(o.admission.max_detached_per_tenant, None);
    assert_eq!(o.retention.dedupe_ttl, None, "each platform's own");
    assert_eq!(o.leases.ttl, Duration::from_secs(30));
    assert_eq!(o.leases.max_lifetime, Duration::from_secs(10 * 60));
    assert!(matches!(o.leases.scope, LockScope::Adapter));
    assert_eq!(o.timeouts.sync_slot_wait, Duration::from_secs(2));
    assert_eq!(o.timeouts.ack, Duration::from_millis(2500));
    assert_eq!(o.timeouts.body, Duration::from_secs(1));
    assert_eq!(o.admission.max_inline, 256);
    assert_eq!(
        o.retention.subscription_ttl,
        Duration::from_secs(30 * 24 * 60 * 60)
    );
    assert_eq!(o.admission.max_inline_per_tenant, None);
    assert!(o.dispatch.inline_interactions);
    assert_eq!(o.recovery.sweep_interval, Some(Duration::from_secs(30)));
    assert_eq!(o.recovery.max_attempts, 3);
    assert_eq!(o.recovery.shutdown, ShutdownMode::Drain);
    assert_eq!(o.timeouts.state_retry, Duration::from_secs(30));
    assert_eq!(o.retention.user_cache_ttl, Duration::from_secs(60 * 60));
    assert!(!o.telemetry.tenant_label);

    let q = QueueOptions::default();
    assert_eq!(
        (q.max_size, q.on_full, q.entry_ttl),
        (10, OnFull::DropOldest, Duration::from_secs(90))
    );
    let d = DebounceOptions::default();
    assert_eq!(
        (d.interval, d.entry_ttl),
        (Duration::from_millis(1500), Duration::from_secs(90))
    );
    let b = BurstOptions::default();
    assert_eq!(
        (b.window, b.max_batch, b.max_waiting, b.mode, b.entry_ttl),
        (
            Duration::from_millis(1500),
            None,
            100,
            BurstMode::Collapse,
            Duration::from_secs(90)
        )
    );
    assert_eq!(ConcurrentOptions::default().max, None);
}

async fn a_lone_burst_message_runs_alone(env: Env) {
    let c = Concurrency::Burst(BurstOptions::default().window(Duration::from_millis(500)));
    let s = env.scenario(deferred(c)).await;
    s.send("1", "a", "ok").await;
    s.pass(2000).await;
    let runs = s.runs();
    assert_eq!(s.ran_ids(), ["a"]);
    assert!(runs[0].skipped.is_empty());
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
}

async fn a_debounced_event_past_its_budget_expires(env: Env) {
    let c = Concurrency::Debounce(DebounceOptions::default().interval(Duration::from_millis(500)));
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.dispatch.detach_timeout = Duration::from_secs(2);
            options
        })
        .await;
    // a runs at 0.5 s and ignores its cancellation at its budget (2 s) until
    // 3.5 s; b, pending from 0.6 s, is handed over then, past its budget.
    s.send("1", "a", "stubborn:3000").await;
    s.pass(600).await;
    s.send("1", "b", "ok").await;
    s.pass(6000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::DeadlineExceeded));
    let reason = s
        .log
        .outcomes
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.event_id.as_str() == "b")
        .map(|r| (r.outcome, r.reason));
    assert_eq!(reason, Some((Outcome::Expired, "budget")));
}

async fn a_burst_batch_past_its_budget_expires(env: Env) {
    let c = Concurrency::Burst(BurstOptions::default().window(Duration::from_millis(500)));
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.dispatch.detach_timeout = Duration::from_secs(1);
            options
        })
        .await;
    s.send("1", "a", "stubborn:3000").await;
    s.pass(600).await;
    s.send("1", "b", "ok").await;
    s.pass(6000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::DeadlineExceeded));
    assert_eq!(s.outcome("b"), Some(Outcome::Expired));
}

async fn a_lease_lost_in_the_middle_of_a_burst_each_batch_runs_the_batch_again(env: Env) {
    let c = Concurrency::Burst(
        BurstOptions::default()
            .window(Duration::from_millis(500))
            .mode(BurstMode::Each),
    );
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.leases.ttl = Duration::from_secs(3);
            options.recovery.sweep_interval = Some(Duration::from_millis(500));
            options
        })
        .await;
    s.send("1", "a", "ok").await;
    s.send("1", "b", "first-wait-cancel").await;
    s.send("1", "c", "ok").await;
    s.pass(1000).await;
    // b runs: its holder loses the lease. The batch was never acknowledged, so
    // the next holder (the sweep's) runs all of it again: nothing is lost, and
    // each member is recorded once.
    s.hooks
        .renew_lost
        .store(true, std::sync::atomic::Ordering::SeqCst);
    s.pass(3000).await;
    s.hooks
        .renew_lost
        .store(false, std::sync::atomic::Ordering::SeqCst);
    s.pass(10_000).await;
    if env.clock.is_real() {
        s.pass_until(60_000, || s.outcomes().len() == 3).await;
    }
    let runs = s.runs();
    let ids: Vec<(&str, u32)> = runs.iter().map(|r| (r.id.as_str(), r.attempt)).collect();
    if env.clock.is_real() {
        // In real time a busy machine may lose the lease before b started, or
        // preempt a re-run too: the rule still holds that the batch ends as
        // one whole run of a, b and c in order, after runs of a prefix of it.
        let (before, last) = ids.split_at(ids.len().saturating_sub(3));
        let attempt = last.first().map_or(0, |l| l.1);
        assert!(attempt > 1, "{ids:?}");
        assert_eq!(last, [("a", attempt), ("b", attempt), ("c", attempt)]);
        let order = ["a", "b", "c"];
        for (i, (id, _)) in before.iter().enumerate() {
            let start = before[..=i].iter().rposition(|r| r.0 == "a").unwrap_or(0);
            assert_eq!(*id, order[i - start], "{ids:?}");
        }
    } else {
        assert_eq!(ids, [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("c", 2)]);
        assert_eq!(runs[1].cause, Some(CancelCause::Preempted));
    }
    s.assert_one_outcome_each(&["a", "b", "c"]);
    for id in ["a", "b", "c"] {
        assert_eq!(s.outcome(id), Some(Outcome::Ran), "{id}");
    }
}

async fn a_sync_delivery_waits_for_a_concurrency_slot_within_its_request(env: Env) {
    let c = Concurrency::Concurrent(ConcurrentOptions::default().max(1));
    let s = Arc::new(env.scenario(RuntimeOptions::default().concurrency(c)).await);
    // a holds the one slot for 500 ms inside its own request; b's request
    // waits for it (within sync_slot_wait, 2 s) and runs after it.
    let first = {
        let s = Arc::clone(&s);
        tokio::spawn(async move { s.send("1", "a", "sleep:500").await })
    };
    s.pass(50).await;
    assert_eq!(s.send("1", "b", "ok").await, 200);
    assert_eq!(first.await.unwrap(), 200);
    let runs = s.runs();
    assert_eq!(s.ran_ids(), ["a", "b"]);
    assert!(runs[1].start >= runs[0].end.unwrap());
    // c finds the slot taken for longer than it may wait: refused, unmarked,
    // so the platform's retry runs it.
    let long = {
        let s = Arc::clone(&s);
        tokio::spawn(async move { s.send("1", "d", "sleep:2300").await })
    };
    s.pass(50).await;
    assert_eq!(s.send("1", "c", "ok").await, 503);
    assert_eq!(long.await.unwrap(), 200);
    assert_eq!(s.send("1", "c", "ok").await, 200);
    assert_eq!(s.ran_ids(), ["a", "b", "d", "c"]);
}

/// A lock scope chosen from the event: direct messages share the channel's
/// lease, mentions get one per thread.
#[tokio::test(start_paused = true)]
async fn a_lock_scope_function_reads_the_event() {
    let s = Scenario::new({
        let mut options = deferred(Concurrency::Drop);
        options.leases.scope = LockScope::function(|event| match event.message() {
            Some(m) if m.is_dm => ScopeChoice::Channel,
            _ => ScopeChoice::Thread,
        });
        options
    });
    let dm = |thread: &str, id: &str| {
        chat_testkit::EventBuilder::new(s.adapter.thread("T1", "D1", thread))
            .id(id)
            .dm("sleep:500")
            .build()
    };
    s.send_event(&dm("1", "dm1")).await;
    s.send_event(&dm("2", "dm2")).await;
    s.send("1", "m1", "sleep:500").await;
    s.send("2", "m2", "sleep:500").await;
    s.pass(2000).await;
    assert_eq!(s.outcome("dm1"), Some(Outcome::Ran));
    assert_eq!(
        s.outcome("dm2"),
        Some(Outcome::Dropped),
        "one lease per channel"
    );
    assert_eq!(s.outcome("m1"), Some(Outcome::Ran));
    assert_eq!(s.outcome("m2"), Some(Outcome::Ran), "one lease per thread");
}
