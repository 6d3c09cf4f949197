//! Runtime scenarios, each run on every backend: on the memory backend under
//! tokio's paused clock, where every timing below is exact, and on Redis (one
//! server and the cluster) in real time, where the harness divides every
//! duration by its scale and checks instants within a margin (see
//! `support/mod.rs`). Durations below are scenario milliseconds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use chat_runtime::{
    BuildError, BurstMode, BurstOptions, CancelCause, Concurrency, ConcurrentOptions,
    DebounceOptions, Dispatch, LockScope, OnFull, Outcome, QueueOptions, RuntimeOptions,
};
use support::{Env, deferred};

on_every_backend!(
    a_duplicate_delivery_runs_once,
    drop_acknowledges_and_drops_an_overlapping_event,
    queue_runs_the_newest_with_the_rest_skipped,
    a_full_queue_drops_the_oldest_or_the_newest,
    a_queued_entry_past_its_ttl_or_budget_expires,
    an_entry_admitted_while_the_holder_finishes_runs,
    debounce_runs_only_the_last_of_a_quick_series,
    burst_collapse_makes_one_call_per_window,
    burst_each_runs_every_member_in_join_order,
    concurrent_waits_for_a_slot_within_the_budget,
    channel_scope_serializes_threads_of_a_channel,
    a_long_handler_keeps_its_lease,
    a_lost_lease_preempts_the_handler,
    a_handler_past_its_budget_is_cancelled,
    at_max_detached_a_delivery_is_refused_and_its_retry_accepted,
    the_per_tenant_cap_refuses_only_that_tenant,
    a_failed_sync_handler_is_retried_by_the_platform,
    shutdown_returns_by_its_deadline,
    every_accepted_delivery_has_exactly_one_outcome,
    follow_ups_typed_before_the_first_run_join_it,
);

fn build(options: RuntimeOptions) -> Result<(), BuildError> {
    let adapter = chat_testkit::ScriptedAdapter::new("test");
    chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter)
        .options(options)
        .build()
        .map(drop)
}

// 1. Each invalid option combination has its own build error. Validation happens
//    before any backend is touched, so this one runs once.
#[tokio::test]
async fn invalid_option_combinations_are_build_errors() {
    let d = RuntimeOptions::default;
    let cases: Vec<(RuntimeOptions, BuildError)> = vec![
        (
            {
                let mut options = d();
                options.dispatch.mode = Dispatch::Deferred;
                options
            },
            BuildError::DetachTimeoutRequired("deferred dispatch"),
        ),
        (
            {
                let mut options = d();
                options.admission.max_detached = 0;
                options
            },
            BuildError::MaxDetachedZero,
        ),
        (
            {
                let mut options = d();
                options.admission.max_detached_per_tenant = Some(0);
                options
            },
            BuildError::MaxDetachedPerTenantZero,
        ),
        (
            {
                let mut options = deferred(Concurrency::Drop);
                options.concurrency =
                    Concurrency::Debounce(DebounceOptions::default().interval(Duration::ZERO));
                options
            },
            BuildError::ZeroDebounceInterval,
        ),
        (
            deferred(Concurrency::Burst(
                BurstOptions::default().window(Duration::ZERO),
            )),
            BuildError::ZeroBurstWindow,
        ),
        (
            deferred(Concurrency::Concurrent(ConcurrentOptions::default().max(0))),
            BuildError::ZeroMaxConcurrent,
        ),
        (
            {
                let mut options = d();
                options.concurrency = Concurrency::debounce();
                options
            },
            BuildError::StrategyNeedsDeferred("debounce"),
        ),
        (
            {
                let mut options = d();
                options.concurrency = Concurrency::burst();
                options
            },
            BuildError::StrategyNeedsDeferred("burst"),
        ),
        (
            {
                let mut options = d();
                options.concurrency = Concurrency::queue();
                options
            },
            BuildError::DetachTimeoutRequired("the queue strategy"),
        ),
        (
            {
                let mut options = deferred(Concurrency::debounce());
                options.dispatch.detach_timeout = Duration::from_millis(1500);
                options
            },
            BuildError::DetachTimeoutNotAboveDebounce {
                detach_timeout: Duration::from_millis(1500),
                interval: Duration::from_millis(1500),
            },
        ),
        (
            {
                let mut options = deferred(Concurrency::burst());
                options.dispatch.detach_timeout = Duration::from_millis(1500);
                options
            },
            BuildError::DetachTimeoutNotAboveBurstWindow {
                detach_timeout: Duration::from_millis(1500),
                window: Duration::from_millis(1500),
            },
        ),
        (
            {
                let mut options = d();
                options.retention.dedupe_ttl = Some(Duration::ZERO);
                options
            },
            BuildError::ZeroDedupeTtl,
        ),
        (
            {
                let mut options = d();
                options.recovery.sweep_interval = Some(Duration::ZERO);
                options
            },
            BuildError::ZeroSweepInterval,
        ),
        (
            {
                let mut options = d();
                options.leases.max_lifetime = Duration::MAX;
                options
            },
            BuildError::DurationTooLong("leases.max_lifetime"),
        ),
        (
            {
                let mut options = deferred(Concurrency::Drop);
                options.dispatch.detach_timeout = Duration::MAX;
                options
            },
            BuildError::DurationTooLong("dispatch.detach_timeout"),
        ),
        (
            {
                let mut options = d();
                options.recovery.max_attempts = 0;
                options
            },
            BuildError::ZeroMaxAttempts,
        ),
    ];
    for (options, expected) in cases {
        assert_eq!(build(options), Err(expected.clone()), "expected {expected}");
    }
    let adapter = chat_testkit::ScriptedAdapter::new("test");
    let no_state = chat_runtime::Bot::builder()
        .adapter(adapter.clone())
        .build();
    assert_eq!(no_state.err(), Some(BuildError::NoState));
    let no_adapter = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .build();
    assert_eq!(no_adapter.err(), Some(BuildError::NoAdapter));
    let twice = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter.clone())
        .adapter(adapter)
        .build();
    assert_eq!(
        twice.err(),
        Some(BuildError::DuplicateAdapter("test".into()))
    );
    let bad_regex = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(chat_testkit::ScriptedAdapter::new("test"))
        .on_new_message("(", |_c, _e| async { Ok::<(), chat_runtime::BoxError>(()) })
        .build();
    assert_eq!(
        bad_regex.err(),
        Some(BuildError::InvalidPattern("(".into()))
    );
    assert_eq!(build(deferred(Concurrency::queue())), Ok(()));
    // Burst-each members have their own budget each: no window bound.
    assert_eq!(
        build({
            let mut options = deferred(Concurrency::Burst(
                BurstOptions::default().mode(chat_runtime::BurstMode::Each),
            ));
            options.dispatch.detach_timeout = Duration::from_millis(1500);
            options
        }),
        Ok(())
    );
    // The longest durations the options take still build (and never overflow
    // a clock reading).
    assert_eq!(
        build({
            let mut options = deferred(Concurrency::Drop);
            options.leases.max_lifetime = chat_runtime::MAX_DURATION;
            options.dispatch.detach_timeout = chat_runtime::MAX_DURATION;
            options
        }),
        Ok(())
    );
}

// 2. One event delivered twice, and twice concurrently: the handler runs once.
async fn a_duplicate_delivery_runs_once(env: Env) {
    for dispatch in [Dispatch::Sync, Dispatch::Deferred] {
        let s = env
            .scenario({
                let mut options = deferred(Concurrency::Drop);
                options.dispatch.mode = dispatch;
                options
            })
            .await;
        assert_eq!(s.send("1", "a", "ok").await, 200);
        assert_eq!(s.send("1", "a", "ok").await, 200);
        let e = s.event("2", "b", "ok");
        let (x, y) = tokio::join!(s.send_event(&e), s.send_event(&e));
        assert_eq!((x, y), (200, 200));
        s.pass(500).await;
        let mut ran = s.ran_ids();
        ran.sort();
        assert_eq!(ran, ["a", "b"], "{dispatch:?}");
        // One run and one duplicate per event; under deferred dispatch the
        // duplicate may be recorded before the run ends.
        let o = s.outcomes();
        for id in ["a", "b"] {
            let mut list = o[id].clone();
            list.sort_by_key(|x| x.name());
            assert_eq!(
                list,
                [Outcome::Ran, Outcome::Duplicate],
                "{dispatch:?} {id}"
            );
        }
    }
}

// 3. Drop: A running, B arrives → B acknowledged and recorded Dropped.
async fn drop_acknowledges_and_drops_an_overlapping_event(env: Env) {
    let s = env.scenario(deferred(Concurrency::Drop)).await;
    assert_eq!(s.send("1", "a", "sleep:1000").await, 200);
    s.pass(10).await;
    assert_eq!(s.send("1", "b", "ok").await, 200);
    s.pass(2000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
    assert_eq!(s.outcome("b"), Some(Outcome::Dropped));
    s.assert_one_outcome_each(&["a", "b"]);
    s.assert_scope_idle("1").await;
}

// 4. Queue: A running, B, C, D arrive → after A, D runs with skipped [B, C].
async fn queue_runs_the_newest_with_the_rest_skipped(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.send("1", "a", "sleep:1000").await;
    s.pass(10).await;
    for id in ["b", "c", "d"] {
        s.send("1", id, "ok").await;
        s.pass(10).await;
    }
    s.pass(2000).await;
    let runs = s.runs();
    assert_eq!(s.ran_ids(), ["a", "d"]);
    assert_eq!(runs[1].skipped, ["b", "c"]);
    assert_eq!(s.outcome("b"), Some(Outcome::Superseded));
    assert_eq!(s.outcome("c"), Some(Outcome::Superseded));
    assert_eq!(s.outcome("d"), Some(Outcome::Ran));
    s.assert_one_outcome_each(&["a", "b", "c", "d"]);
    s.assert_no_overlap();
    s.assert_scope_idle("1").await;
}

// 5. Queue full under DropOldest and DropNewest → the right one Dropped.
async fn a_full_queue_drops_the_oldest_or_the_newest(env: Env) {
    for (on_full, dropped, runs) in [
        (OnFull::DropOldest, "b", "d"),
        (OnFull::DropNewest, "d", "c"),
    ] {
        let q = QueueOptions::default().max_size(2).on_full(on_full);
        let s = env.scenario(deferred(Concurrency::Queue(q))).await;
        s.send("1", "a", "sleep:1000").await;
        for id in ["b", "c", "d"] {
            s.pass(10).await;
            s.send("1", id, "ok").await;
        }
        s.pass(2000).await;
        assert_eq!(s.outcome(dropped), Some(Outcome::Dropped), "{on_full:?}");
        assert_eq!(s.ran_ids(), ["a", runs], "{on_full:?}");
        s.assert_one_outcome_each(&["a", "b", "c", "d"]);
    }
}

// 6. A queued entry older than its entry TTL, or past its budget → Expired.
async fn a_queued_entry_past_its_ttl_or_budget_expires(env: Env) {
    // Entry TTL.
    let q = QueueOptions::default().entry_ttl(Duration::from_secs(5));
    let s = env.scenario(deferred(Concurrency::Queue(q))).await;
    s.send("1", "a", "sleep:10000").await;
    s.pass(10).await;
    s.send("1", "b", "ok").await;
    s.pass(12_000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("b"), Some(Outcome::Expired));
    s.assert_one_outcome_each(&["a", "b"]);
    // Budget: detach_timeout 5 s, the entry TTL longer.
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::queue());
            options.dispatch.detach_timeout = Duration::from_secs(5);
            options
        })
        .await;
    s.send("1", "a", "stubborn:8000").await;
    s.pass(10).await;
    s.send("1", "b", "ok").await;
    s.pass(12_000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::DeadlineExceeded));
    assert_eq!(s.outcome("b"), Some(Outcome::Expired));
}

// 7. An entry admitted exactly while the holder finishes runs.
async fn an_entry_admitted_while_the_holder_finishes_runs(env: Env) {
    let s = Arc::new(env.scenario(deferred(Concurrency::queue())).await);
    let inner = Arc::clone(&s);
    // Right before the holder's finish reaches the backend, B is delivered.
    *s.hooks.before_finish.lock().unwrap() = Some(Box::pin(async move {
        assert_eq!(inner.send("1", "b", "ok").await, 200);
    }));
    s.send("1", "a", "sleep:100").await;
    s.pass(1000).await;
    assert_eq!(s.ran_ids(), ["a", "b"]);
    s.assert_one_outcome_each(&["a", "b"]);
    s.assert_scope_idle("1").await;
}

// 8. Debounce: three events 1 s apart, interval 2 s → only the last runs, 2 s
//    after it arrived.
async fn debounce_runs_only_the_last_of_a_quick_series(env: Env) {
    let c = Concurrency::Debounce(DebounceOptions::default().interval(Duration::from_secs(2)));
    let s = env.scenario(deferred(c)).await;
    let mut arrived = tokio::time::Instant::now();
    for id in ["a", "b", "c"] {
        arrived = tokio::time::Instant::now();
        s.send("1", id, "ok").await;
        s.pass(1000).await;
    }
    s.pass(4000).await;
    assert_eq!(s.ran_ids(), ["c"]);
    let ran_at = s.runs()[0].start - arrived;
    s.clock
        .assert_near(ran_at, 2000, "c ran 2 s after it arrived");
    assert_eq!(s.outcome("a"), Some(Outcome::Superseded));
    assert_eq!(s.outcome("b"), Some(Outcome::Superseded));
    // A lone event runs after the interval.
    let t0 = tokio::time::Instant::now();
    s.send("2", "d", "ok").await;
    s.pass(4000).await;
    let lone = s.runs().into_iter().find(|r| r.id == "d").unwrap();
    s.clock
        .assert_near(lone.start - t0, 2000, "d ran after the interval");
    s.assert_one_outcome_each(&["a", "b", "c", "d"]);
    s.assert_scope_idle("1").await;
}

// 9. Burst collapse: one call per window, skipped in join order; events during
//    the run form the next batch.
async fn burst_collapse_makes_one_call_per_window(env: Env) {
    let c = Concurrency::Burst(BurstOptions::default().window(Duration::from_secs(1)));
    let s = env.scenario(deferred(c)).await;
    s.send("1", "a", "ok").await;
    s.pass(100).await;
    s.send("1", "b", "ok").await;
    s.pass(100).await;
    s.send("1", "c", "sleep:5000").await;
    s.pass(2000).await;
    s.send("1", "d", "ok").await;
    s.pass(100).await;
    s.send("1", "e", "ok").await;
    s.pass(10_000).await;
    let runs = s.runs();
    assert_eq!(s.ran_ids(), ["c", "e"]);
    assert_eq!(runs[0].skipped, ["a", "b"]);
    assert_eq!(runs[1].skipped, ["d"]);
    s.assert_one_outcome_each(&["a", "b", "c", "d", "e"]);
    s.assert_no_overlap();
}

// 10. Burst each: members run one by one in join order with a full budget each;
//     max batch seals early; batches run in seal order; an error does not stop
//     the batch.
async fn burst_each_runs_every_member_in_join_order(env: Env) {
    let c = Concurrency::Burst(
        BurstOptions::default()
            .window(Duration::from_secs(2))
            .max_batch(3)
            .mode(BurstMode::Each),
    );
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.dispatch.detach_timeout = Duration::from_secs(2);
            options
        })
        .await;
    s.send("1", "a", "sleep:1500").await;
    s.send("1", "b", "fail").await;
    let sealed = tokio::time::Instant::now();
    s.send("1", "c", "sleep:1500").await;
    // Sealed early at three members; the next one opens a second batch.
    s.send("1", "d", "ok").await;
    s.pass(10_000).await;
    assert_eq!(s.ran_ids(), ["a", "b", "c", "d"]);
    let runs = s.runs();
    // Sealed by max_batch: the first batch did not wait for its 2 s window.
    s.clock
        .assert_near(runs[0].start - sealed, 0, "the first batch ran at once");
    // The second batch ran after the first, in seal order.
    assert!(runs[3].start >= runs[2].end.unwrap());
    // Each member had its own full budget from when it started: c started 1.5 s
    // after the batch did and still finished.
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
    assert_eq!(s.outcome("b"), Some(Outcome::Failed));
    assert_eq!(s.outcome("c"), Some(Outcome::Ran));
    assert_eq!(s.outcome("d"), Some(Outcome::Ran));
    // c's budget was set between b's end and c's start (the same instant under
    // the paused clock).
    let c_deadline = runs[2].deadline.unwrap();
    let (b_end, c_start) = (runs[1].end.unwrap(), runs[2].start);
    assert!(
        c_deadline - b_end >= s.ms(2000) && c_deadline - c_start <= s.ms(2000),
        "c's budget counts from its start"
    );
    s.assert_one_outcome_each(&["a", "b", "c", "d"]);
    s.assert_no_overlap();
}

// 11. Concurrent max 2: the third waits for a slot, and its wait counts against
//     its budget.
async fn concurrent_waits_for_a_slot_within_the_budget(env: Env) {
    let c = Concurrency::Concurrent(ConcurrentOptions::default().max(2));
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.dispatch.detach_timeout = Duration::from_secs(5);
            options
        })
        .await;
    s.send("1", "a", "sleep:1000").await;
    s.send("1", "b", "sleep:1000").await;
    let sent = tokio::time::Instant::now();
    s.send("1", "c", "sleep:1000").await;
    let answered = tokio::time::Instant::now();
    s.pass(3000).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 3);
    let c_run = runs.iter().find(|r| r.id == "c").unwrap();
    assert!(
        c_run.start - runs[0].start >= s.ms(1000),
        "c waited for a slot"
    );
    // Its deadline counts from acceptance (between its send and its answer, the
    // same instant under the paused clock), not from when it got the slot.
    let c_deadline = c_run.deadline.unwrap();
    assert!(
        c_deadline - sent >= s.ms(5000) && c_deadline - answered <= s.ms(5000),
        "c's deadline counts from acceptance"
    );
    // With a budget shorter than the wait, it expires without running.
    let s = env
        .scenario({
            let mut options = deferred(c);
            options.dispatch.detach_timeout = Duration::from_millis(500);
            options
        })
        .await;
    s.send("1", "a", "stubborn:1000").await;
    s.send("1", "b", "stubborn:1000").await;
    s.send("1", "c", "ok").await;
    s.pass(3000).await;
    assert_eq!(s.outcome("c"), Some(Outcome::Expired));
    s.assert_one_outcome_each(&["a", "b", "c"]);
}

// 12. Channel scope serializes two threads of one channel; thread scope does not.
async fn channel_scope_serializes_threads_of_a_channel(env: Env) {
    let channel = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.leases.scope = LockScope::Channel;
            options
        })
        .await;
    channel.send("1", "a", "sleep:1000").await;
    channel.send("2", "b", "ok").await;
    channel.pass(2000).await;
    assert_eq!(channel.outcome("b"), Some(Outcome::Dropped));
    let thread = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.leases.scope = LockScope::Thread;
            options
        })
        .await;
    thread.send("1", "a", "sleep:1000").await;
    thread.send("2", "b", "ok").await;
    thread.pass(2000).await;
    assert_eq!(thread.outcome("b"), Some(Outcome::Ran));
    let by_fn = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.leases.scope = LockScope::function(|_| chat_runtime::ScopeChoice::Channel);
            options
        })
        .await;
    by_fn.send("1", "a", "sleep:1000").await;
    by_fn.send("2", "b", "ok").await;
    by_fn.pass(2000).await;
    assert_eq!(by_fn.outcome("b"), Some(Outcome::Dropped));
}

// 13. A handler longer than the lock TTL keeps its lease; nothing overlaps it.
async fn a_long_handler_keeps_its_lease(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.leases.ttl = Duration::from_secs(3);
            options
        })
        .await;
    s.send("1", "a", "sleep:20000").await;
    for (i, id) in ["b", "c", "d"].into_iter().enumerate() {
        s.pass(5000).await;
        assert_eq!(s.send("1", id, "ok").await, 200, "delivery {i}");
    }
    s.pass(8000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
    for id in ["b", "c", "d"] {
        assert_eq!(s.outcome(id), Some(Outcome::Dropped));
    }
    s.assert_no_overlap();
}

// 14. Lease lost mid-handler → cancelled with Preempted; the event stays in
//     flight and runs again under the scope's next holder (attempt 2).
async fn a_lost_lease_preempts_the_handler(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::queue());
            options.leases.ttl = Duration::from_secs(3);
            options
        })
        .await;
    s.send("1", "a", "first-wait-cancel").await;
    s.send("1", "b", "ok").await;
    s.pass(500).await;
    s.hooks
        .renew_lost
        .store(true, std::sync::atomic::Ordering::SeqCst);
    s.pass(5000).await;
    let runs = s.runs();
    assert_eq!(runs[0].cause, Some(CancelCause::Preempted));
    assert_eq!(s.outcome("a"), None, "a preempted run records nothing");
    // The preempted holder neither acknowledges its run nor hands its queue
    // off: the next holder (here, the next admit's) runs a again, then the
    // queue.
    s.hooks
        .renew_lost
        .store(false, std::sync::atomic::Ordering::SeqCst);
    s.send("1", "c", "ok").await;
    s.pass(1000).await;
    let runs = s.runs();
    assert_eq!((runs[1].id.as_str(), runs[1].attempt), ("a", 2));
    assert_eq!((runs[2].id.as_str(), runs[2].attempt), ("c", 1));
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
    assert_eq!(s.outcome("b"), Some(Outcome::Superseded));
    assert_eq!(s.outcome("c"), Some(Outcome::Ran));
    s.assert_one_outcome_each(&["a", "b", "c"]);
}

// 15. DetachTimeout passed → DeadlineExceeded.
async fn a_handler_past_its_budget_is_cancelled(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.dispatch.detach_timeout = Duration::from_secs(2);
            options
        })
        .await;
    let sent = tokio::time::Instant::now();
    s.send("1", "a", "wait-cancel").await;
    s.pass(3000).await;
    let run = &s.runs()[0];
    assert_eq!(run.cause, Some(CancelCause::DeadlineExceeded));
    s.clock
        .assert_near(run.end.unwrap() - sent, 2000, "cancelled at the budget");
    assert_eq!(s.outcome("a"), Some(Outcome::DeadlineExceeded));
}

// 16. MaxDetached 1 with a blocked handler → refused before dedupe marking; the
//     same event is accepted when retried later.
async fn at_max_detached_a_delivery_is_refused_and_its_retry_accepted(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.admission.max_detached = 1;
            options
        })
        .await;
    assert_eq!(s.send("1", "a", "sleep:1000").await, 200);
    assert_eq!(s.send("2", "b", "ok").await, 503);
    s.pass(2000).await;
    assert_eq!(s.bot.in_flight(), 0);
    assert_eq!(s.send("2", "b", "ok").await, 200);
    s.pass(500).await;
    assert_eq!(s.ran_ids(), ["a", "b"]);
    let o = s.outcomes();
    assert_eq!(o["b"], [Outcome::Rejected, Outcome::Ran]);
}

// 17. MaxDetachedPerTenant 1 → the same tenant refused, another admitted.
async fn the_per_tenant_cap_refuses_only_that_tenant(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::Drop);
            options.admission.max_detached_per_tenant = Some(1);
            options
        })
        .await;
    assert_eq!(s.send("1", "a", "sleep:1000").await, 200);
    assert_eq!(s.send("2", "b", "ok").await, 503);
    let other = s.adapter.mention("T2", "C1", "1", "c", "ok");
    assert_eq!(s.send_event(&other).await, 200);
    s.pass(2000).await;
    assert_eq!(s.outcome("b"), Some(Outcome::Rejected));
    assert_eq!(s.outcome("c"), Some(Outcome::Ran));
}

// 18. Sync handler error → dedupe unmarked; the platform's retry runs the handler.
async fn a_failed_sync_handler_is_retried_by_the_platform(env: Env) {
    let s = env.scenario(RuntimeOptions::default()).await;
    assert_eq!(s.send("1", "a", "fail").await, 500);
    // The platform retries the same event (same id and dedupe key).
    assert_eq!(s.send("1", "a", "fail").await, 500);
    assert_eq!(s.runs().len(), 2);
    let o = s.outcomes();
    assert_eq!(o["a"], [Outcome::Failed, Outcome::Failed]);
    // A panic is a failure too. The default panic hook may capture a backtrace,
    // which in a debug build can outlast the scaled ack timeout: keep it quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let status = s.send("1", "p", "panic").await;
    std::panic::set_hook(hook);
    assert_eq!(status, 500);
    assert_eq!(s.outcomes()["p"], [Outcome::Failed]);
}

// 18b. Under sync dispatch the scope is free by the time a delivery is answered:
//     the next delivery on the thread runs, and so does the platform's retry of
//     a failed one. On the memory backend with a `finish` that takes a round
//     trip (1 ms), as every call to Redis does; deterministic under the paused
//     clock.
#[tokio::test(start_paused = true)]
async fn a_sync_delivery_is_answered_once_its_scope_is_free() {
    let s = support::Scenario::new(RuntimeOptions::default());
    *s.hooks.finish_latency.lock().unwrap() = Duration::from_millis(1);
    assert_eq!(s.send("1", "a", "ok").await, 200);
    assert_eq!(s.send("1", "b", "ok").await, 200);
    assert_eq!(s.send("1", "c", "fail").await, 500);
    assert_eq!(s.send("1", "c", "fail").await, 500);
    assert_eq!(s.ran_ids(), ["a", "b", "c", "c"], "{:?}", s.outcomes());
}

// 19. Shutdown with a handler that ignores cancellation → returns by its
//     deadline, leases released, new deliveries refused.
async fn shutdown_returns_by_its_deadline(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.send("1", "a", "stubborn:60000").await;
    s.send("2", "b", "wait-cancel").await;
    s.pass(10).await;
    let started = tokio::time::Instant::now();
    let report = s.bot.shutdown(s.ms(2000)).await;
    assert!(tokio::time::Instant::now() - started <= s.ms(2500));
    assert!(!report.finished);
    assert_eq!(report.still_running, 1);
    assert_eq!(report.leases_released, 1);
    assert_eq!(s.send("3", "c", "ok").await, 503);
    assert_eq!(s.runs()[1].cause, Some(CancelCause::Shutdown));
    assert_eq!(s.outcome("a"), None);
    if chat_core::StateBackend::shared(s.state.as_ref()) {
        // Both runs are handed back, in flight, for another replica at once;
        // they record nothing here.
        s.assert_recoverable_now(&["1", "2"]).await;
        assert_eq!(s.outcome("b"), None);
    } else {
        // State private to this process: nobody else could run b, so it ends
        // here, cancelled; its scope is free.
        assert_eq!(s.outcome("b"), Some(Outcome::Cancelled));
        s.assert_scope_idle("2").await;
        s.assert_recoverable_now(&["1"]).await;
    }
    // Idempotent.
    let again = s.bot.shutdown(s.ms(10)).await;
    assert_eq!(again.leases_released, 0);
}

// 20 is checked inside each scenario above (`assert_one_outcome_each`); this one
// checks it over a mixed run of every strategy.
async fn every_accepted_delivery_has_exactly_one_outcome(env: Env) {
    for c in [
        Concurrency::Drop,
        Concurrency::queue(),
        Concurrency::Debounce(DebounceOptions::default().interval(Duration::from_millis(50))),
        Concurrency::Burst(BurstOptions::default().window(Duration::from_millis(50))),
        Concurrency::Concurrent(ConcurrentOptions::default().max(1)),
    ] {
        let s = env.scenario(deferred(c)).await;
        let mut ids = Vec::new();
        for i in 0..12 {
            let id = format!("e{i}");
            let text = if i % 3 == 0 { "sleep:70" } else { "ok" };
            s.send(&format!("{}", i % 2), &id, text).await;
            ids.push(id);
            s.pass(15).await;
        }
        s.pass(3000).await;
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        s.assert_one_outcome_each(&refs);
        s.assert_no_overlap();
        s.assert_scope_idle("0").await;
        s.assert_scope_idle("1").await;
    }
}

// Follow-ups typed in a thread before its first run — plain messages in a
// thread nobody subscribed yet — join the work waiting there: a burst runs
// once with all of them (the newest as the event, the mention skipped), a
// debounce runs the last. A plain message in another thread is not admitted.
async fn follow_ups_typed_before_the_first_run_join_it(env: Env) {
    let burst = Concurrency::Burst(BurstOptions::default().window(Duration::from_secs(1)));
    let s = env.scenario(deferred(burst)).await;
    s.send("1", "A", "ok").await;
    for (i, id) in ["B", "C", "D"].into_iter().enumerate() {
        s.pass(100 + 50 * i as u64).await;
        let plain = s.adapter.message("T1", "C1", "1", id, "ok");
        assert_eq!(s.send_event(&plain).await, 200);
    }
    let elsewhere = s.adapter.message("T1", "C1", "2", "X", "ok");
    s.send_event(&elsewhere).await;
    s.pass(3000).await;
    let runs = s.runs();
    assert_eq!(s.ran_ids(), ["D"], "{runs:?}");
    assert_eq!(runs[0].skipped, ["A", "B", "C"]);
    assert_eq!(s.outcome("D"), Some(Outcome::Ran));
    for id in ["A", "B", "C"] {
        assert_eq!(s.outcome(id), Some(Outcome::Superseded), "{id}");
    }
    assert_eq!(s.outcome("X"), Some(Outcome::Ignored));

    let debounce =
        Concurrency::Debounce(DebounceOptions::default().interval(Duration::from_millis(500)));
    let s = env.scenario(deferred(debounce)).await;
    s.send("1", "A", "ok").await;
    s.pass(200).await;
    let plain = s.adapter.message("T1", "C1", "1", "B", "ok");
    assert_eq!(s.send_event(&plain).await, 200);
    s.pass(2000).await;
    assert_eq!(s.ran_ids(), ["B"]);
    assert_eq!(s.outcome("A"), Some(Outcome::Superseded));
    assert_eq!(s.outcome("B"), Some(Outcome::Ran));
}
