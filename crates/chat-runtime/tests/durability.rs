//! Durable runs, from the runtime's side: state calls whose replies are lost,
//! that run twice or late, replicas cut off mid-run and redeployed, stop
//! requests, hung renewals and the attempts bound — on the memory backend under
//! the paused clock, and on Redis and Redis Cluster in real time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value,
    missing_docs
)]

mod support;

use std::time::Duration;

use chat_core::AgentSessionAction;
use chat_runtime::{
    BurstMode, BurstOptions, CancelCause, Concurrency, Outcome, RecoveryOptions, RuntimeOptions,
};
use chat_testkit::{EventBuilder, Fault, Op};
use support::{Env, Scenario, deferred};

on_every_backend!(
    a_lost_admit_reply_is_repeated_and_the_event_runs_once,
    an_admit_run_twice_answers_its_own_decision,
    an_admit_stalled_past_the_ack_deadline_runs_the_event_once,
    a_lost_finish_reply_hands_the_same_batch_over_again,
    a_finish_run_twice_never_frees_the_scope_under_its_holder,
    a_replica_cut_off_mid_run_is_replaced_and_replies_once,
    a_redeploy_hands_running_work_to_another_replica,
    a_stop_request_stops_the_running_member_only,
    a_hung_renewal_preempts_at_the_believed_expiry,
    a_run_lost_max_attempts_times_is_abandoned,
);

/// Every outcome recorded for `id`, across replicas.
fn outcomes(s: &Scenario, id: &str) -> Vec<Outcome> {
    s.outcomes().remove(id).unwrap_or_default()
}

async fn a_lost_admit_reply_is_repeated_and_the_event_runs_once(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.faults.inject(Op::Admit, Fault::LoseReply);
    assert_eq!(s.send("1", "a", "ok").await, 200);
    s.pass(1000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
    assert_eq!(s.faults.pending(), 0);
}

async fn an_admit_run_twice_answers_its_own_decision(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.faults.inject(Op::Admit, Fault::RunTwice);
    assert_eq!(s.send("1", "a", "ok").await, 200);
    s.pass(1000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    // Not a duplicate of itself.
    s.assert_one_outcome_each(&["a"]);
    assert_eq!(s.outcome("a"), Some(Outcome::Ran));
}

async fn an_admit_stalled_past_the_ack_deadline_runs_the_event_once(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::queue());
            options.timeouts.ack = Duration::from_secs(2);
            options
        })
        .await;
    s.faults.inject(Op::Admit, Fault::Stall(s.ms(5000)));
    // The platform hears "retry" at the ack deadline while the admit is stuck …
    assert_eq!(s.send("1", "a", "ok").await, 503);
    // … retries, and its retry runs the event; the stuck admit lands later and
    // finds the event taken.
    assert_eq!(s.send("1", "a", "ok").await, 200);
    s.pass(6000).await;
    assert_eq!(s.ran_ids(), ["a"]);
    let mut o = outcomes(&s, "a");
    o.sort_by_key(|o| o.name());
    assert_eq!(o, [Outcome::Ran, Outcome::Duplicate]);
}

async fn a_lost_finish_reply_hands_the_same_batch_over_again(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.send("1", "a", "sleep:500").await;
    s.send("1", "b", "ok").await;
    s.faults.inject(Op::Finish, Fault::LoseReply);
    s.pass(2000).await;
    assert_eq!(s.ran_ids(), ["a", "b"]);
    s.assert_one_outcome_each(&["a", "b"]);
    s.assert_no_overlap();
}

async fn a_finish_run_twice_never_frees_the_scope_under_its_holder(env: Env) {
    let s = env.scenario(deferred(Concurrency::queue())).await;
    s.send("1", "a", "sleep:300").await;
    s.send("1", "b", "sleep:1000").await;
    // a's finish runs twice: the copy is a repeat of the same call, which hands
    // b over again instead of releasing the scope while b runs.
    s.faults.inject(Op::Finish, Fault::RunTwice);
    s.pass(600).await;
    assert_eq!(s.send("1", "c", "ok").await, 200);
    s.pass(3000).await;
    assert_eq!(s.ran_ids(), ["a", "b", "c"]);
    s.assert_one_outcome_each(&["a", "b", "c"]);
    s.assert_no_overlap();
}

fn replica_options() -> RuntimeOptions {
    {
        let mut options = deferred(Concurrency::queue());
        options.leases.ttl = Duration::from_secs(3);
        options.recovery.sweep_interval = Some(Duration::from_millis(500));
        options
    }
}

async fn a_replica_cut_off_mid_run_is_replaced_and_replies_once(env: Env) {
    let replicas = env.replicas(2, replica_options()).await;
    let (r0, r1) = (&replicas[0], &replicas[1]);
    assert_eq!(r0.send("1", "a", "post+first-wait-cancel").await, 200);
    r0.pass(500).await;
    // r0 loses the backend: its lease lapses, and r1's sweep runs the event
    // again, where the reply the first attempt posted is found, not repeated.
    for op in [Op::Renew, Op::Finish, Op::Release, Op::Sweep, Op::Admit] {
        r0.faults.cut(op);
    }
    // The lease lapses within 3 s and r1's sweep runs every 500 ms: 8 s are
    // plenty in scenario time; on Redis (real time) a busy machine may take
    // longer, so the wait ends when a's outcome is recorded, within 30 s.
    r0.pass(8000).await;
    r0.pass_until(22_000, || r1.outcome("a").is_some()).await;
    let runs = r1.runs();
    assert!(runs.len() >= 2, "{runs:?}");
    assert_eq!(runs[0].cause, Some(CancelCause::Preempted), "{runs:?}");
    if env.clock.is_real() {
        // In real time at a tenth of the scenario's (a 300 ms lease), a claim
        // answered late on a busy machine can leave an attempt past its
        // believed expiry: it is preempted before it does anything, and the
        // next sweep runs the event again.
        assert!(
            runs[1..runs.len() - 1]
                .iter()
                .all(|r| r.cause == Some(CancelCause::Preempted)),
            "{runs:?}"
        );
    } else {
        assert_eq!(runs.len(), 2, "{runs:?}");
    }
    let last = &runs[runs.len() - 1];
    assert_eq!(
        (last.attempt as usize, last.cause),
        (runs.len(), None),
        "{runs:?}"
    );
    assert_eq!(r1.outcome("a"), Some(Outcome::Ran));
    assert_eq!(r1.adapter.posts(), ["reply:a"]);
}

async fn a_redeploy_hands_running_work_to_another_replica(env: Env) {
    let replicas = env.replicas(2, replica_options()).await;
    let (r0, r1) = (&replicas[0], &replicas[1]);
    r0.send("1", "a", "post+first-wait-cancel").await;
    r0.send("1", "b", "ok").await;
    r0.pass(100).await;
    // The drain takes 80 % of the deadline (the handler waits for its
    // cancellation); the rest is for handing the run back, a Redis Cluster
    // round trip in real time: 200 ms of it on Redis.
    let report = r0.bot.shutdown(r0.ms(10_000)).await;
    assert_eq!(report.cancelled, 1);
    assert!(report.finished, "{report:?}");
    // r1 runs a again at once (its next sweep), then b. (One sweep reads every
    // bucket of the store, which on a cluster takes a while in real time.)
    r1.pass(10_000).await;
    r1.pass_until(22_000, || r1.outcome("b").is_some()).await;
    let runs = r1.runs();
    // As in the cut-off case: in real time (a 300 ms lease) a claim answered
    // late on a busy machine can leave an attempt past its believed expiry,
    // preempted before it does anything; the next sweep runs it again. In
    // scenario time no attempt is preempted.
    let (preempted, kept): (Vec<_>, Vec<_>) = runs
        .iter()
        .partition(|r| r.cause == Some(CancelCause::Preempted));
    assert!(env.clock.is_real() || preempted.is_empty(), "{runs:?}");
    let attempts = |id: &str| runs.iter().filter(|r| r.id == id).count();
    let kept: Vec<(&str, usize, Option<CancelCause>)> = kept
        .iter()
        .map(|r| (r.id.as_str(), r.attempt as usize, r.cause))
        .collect();
    assert_eq!(
        kept,
        [
            ("a", 1, Some(CancelCause::Shutdown)),
            ("a", attempts("a"), None),
            ("b", attempts("b"), None)
        ],
        "{runs:?}"
    );
    r1.assert_one_outcome_each(&["a", "b"]);
    assert_eq!(r1.outcome("a"), Some(Outcome::Ran));
    assert_eq!(r1.adapter.posts(), ["reply:a"]);
}

async fn a_stop_request_stops_the_running_member_only(env: Env) {
    let c = Concurrency::Burst(
        BurstOptions::default()
            .window(Duration::from_millis(500))
            .mode(BurstMode::Each),
    );
    let replicas = env
        .replicas(2, {
            let mut options = deferred(c);
            options.leases.ttl = Duration::from_secs(3);
            options
        })
        .await;
    let (r0, r1) = (&replicas[0], &replicas[1]);
    r0.send("1", "a", "wait-cancel").await;
    r0.send("1", "b", "wait-cancel").await;
    r0.send("1", "c", "ok").await;
    r0.pass(700).await;
    // The stop lands on the holder's replica, which stops a at once; its
    // renewals then keep reporting the request, which must not stop b or c.
    let stop = EventBuilder::new(r0.adapter.thread("T1", "C1", "1"))
        .id("stop")
        .agent_session(AgentSessionAction::StopRequested, None)
        .build();
    assert_eq!(r0.send_event(&stop).await, 200);
    // A second stop, on the other replica, reaches b through the holder's
    // renewal — and only b.
    r0.pass(1500).await;
    let second_stop = tokio::time::Instant::now();
    let again = EventBuilder::new(r0.adapter.thread("T1", "C1", "1"))
        .id("stop-2")
        .agent_session(AgentSessionAction::StopRequested, None)
        .build();
    assert_eq!(r1.send_event(&again).await, 200);
    r0.pass(6000).await;
    let runs = r0.runs();
    assert_eq!(r0.ran_ids(), ["a", "b", "c"]);
    assert_eq!(runs[0].cause, Some(CancelCause::StopRequested));
    assert_eq!(runs[1].cause, Some(CancelCause::StopRequested));
    assert_eq!(runs[2].cause, None, "a stop carried over to c");
    // b was stopped by the second request, not by the first one carrying over.
    let b_end = runs[1].end.unwrap();
    assert!(b_end >= second_stop, "b was stopped before the second stop");
    assert!(
        b_end <= second_stop + r0.ms(1000) + r0.clock.margins().1,
        "b was stopped later than one renewal after the second stop"
    );
    assert_eq!(r0.outcome("a"), Some(Outcome::Cancelled));
    assert_eq!(r0.outcome("b"), Some(Outcome::Cancelled));
    assert_eq!(r0.outcome("c"), Some(Outcome::Ran));
}

async fn a_hung_renewal_preempts_at_the_believed_expiry(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::queue());
            options.leases.ttl = Duration::from_secs(3);
            options
        })
        .await;
    // The first renewal (at 1 s) never answers.
    s.faults.inject(Op::Renew, Fault::Stall(s.ms(60_000)));
    s.send("1", "a", "wait-cancel").await;
    s.pass(4000).await;
    let run = &s.runs()[0];
    assert_eq!(run.cause, Some(CancelCause::Preempted));
    s.clock.assert_near(
        run.end.unwrap() - run.start,
        3000,
        "preempted when the lease, dated from its grant, expired",
    );
    assert_eq!(s.outcome("a"), None);
}

async fn a_run_lost_max_attempts_times_is_abandoned(env: Env) {
    let s = env
        .scenario({
            let mut options = deferred(Concurrency::queue());
            options.leases.ttl = Duration::from_secs(1);
            options.recovery.sweep_interval = Some(Duration::from_millis(500));
            options.recovery.max_attempts = 2;
            options
        })
        .await;
    // No renewal ever lands: every holder loses the lease while it runs.
    s.faults.cut(Op::Renew);
    s.send("1", "a", "wait-cancel").await;
    s.pass(20_000).await;
    let runs = s.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r.cause == Some(CancelCause::Preempted)));
    let records = s.log.outcomes.lock().unwrap().clone();
    let a: Vec<_> = records
        .iter()
        .filter(|r| r.event_id.as_str() == "a")
        .map(|r| (r.outcome, r.reason))
        .collect();
    assert_eq!(a, [(Outcome::Failed, "abandoned")]);
}

/// A bot with one mention handler, on the memory backend.
fn bot_with<H: chat_runtime::Handler>(
    options: RuntimeOptions,
    handler: H,
) -> (
    chat_runtime::Bot,
    chat_testkit::ScriptedAdapter,
    support::Log,
) {
    let adapter = chat_testkit::ScriptedAdapter::new("test");
    let log = support::Log::default();
    let outcomes = log.outcomes.clone();
    let bot = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter.clone())
        .options(options)
        .observer(move |r: &chat_runtime::OutcomeRecord| outcomes.lock().unwrap().push(r.clone()))
        .on_new_mention(handler)
        .build()
        .unwrap();
    (bot, adapter, log)
}

fn recorded(log: &support::Log) -> Vec<(String, Outcome, &'static str)> {
    log.outcomes
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.event_id.to_string(), r.outcome, r.reason))
        .collect()
}

/// A handler that panics while making its future (before any `async` block
/// runs) fails its run like any panic: the scope is not left blocked, and under
/// sync dispatch the platform's retry runs.
#[tokio::test(start_paused = true)]
async fn a_handler_panicking_before_its_future_fails_the_run_and_frees_the_scope() {
    fn handler(
        _ctx: chat_runtime::Ctx,
        e: chat_runtime::Event,
    ) -> futures_util::future::BoxFuture<'static, Result<(), String>> {
        assert!(e.text() != Some("boom"), "panic before the future");
        Box::pin(async { Ok(()) })
    }
    for dispatch in [
        chat_runtime::Dispatch::Deferred,
        chat_runtime::Dispatch::Sync,
    ] {
        let (bot, adapter, log) = bot_with(
            {
                let mut options = deferred(Concurrency::queue());
                options.dispatch.mode = dispatch;
                options
            },
            handler,
        );
        let boom = adapter.mention("T1", "C1", "1", "boom", "boom");
        let status = bot.handle("test", adapter.request(&boom)).await.status();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let ok = adapter.mention("T1", "C1", "1", "next", "fine");
        assert_eq!(bot.handle("test", adapter.request(&ok)).await.status(), 200);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let records = recorded(&log);
        assert!(
            records.contains(&("boom".into(), Outcome::Failed, "panic")),
            "{dispatch:?}: {records:?}"
        );
        assert!(
            records.contains(&("next".into(), Outcome::Ran, "ok")),
            "{dispatch:?}: the scope stayed blocked: {records:?}"
        );
        if dispatch == chat_runtime::Dispatch::Sync {
            // Answered so the platform retries, and the retry is not a duplicate.
            assert_eq!(status, 500);
            bot.handle("test", adapter.request(&boom)).await;
            assert_eq!(
                recorded(&log)
                    .iter()
                    .filter(|r| r.0 == "boom" && r.1 == Outcome::Failed)
                    .count(),
                2
            );
        }
        bot.shutdown(Duration::from_secs(1)).await;
    }
}

/// Under sync dispatch on a backend nobody else reads, a handler cancelled by
/// shutdown before its answer is given back to the platform: answered so the
/// platform retries, recorded `Rejected`, and its mark removed so that retry
/// runs.
#[tokio::test(start_paused = true)]
async fn a_sync_run_cancelled_by_shutdown_is_retried_by_the_platform() {
    let log = support::Log::default();
    let (bot, adapter, outcomes) = bot_with(
        RuntimeOptions::default()
            .recovery(RecoveryOptions::default().shutdown(chat_runtime::ShutdownMode::Cancel)),
        support::handler(log.clone(), support::Clock::Paused),
    );
    let e = adapter.mention("T1", "C1", "1", "a", "first-wait-cancel");
    let request = adapter.request(&e);
    let delivery = tokio::spawn({
        let bot = bot.clone();
        async move { bot.handle("test", request).await.status() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    bot.shutdown(Duration::from_secs(1)).await;
    assert_eq!(delivery.await.unwrap(), 500);
    assert_eq!(
        recorded(&outcomes),
        [("a".to_owned(), Outcome::Rejected, "shutdown")]
    );
    // The platform's retry, on a replica that shares the state, runs it.
    fn quick(
        _ctx: chat_runtime::Ctx,
        _e: chat_runtime::Event,
    ) -> futures_util::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    let retried = support::Log::default();
    let sink = retried.outcomes.clone();
    let again = chat_runtime::Bot::builder()
        .state_arc(bot.state().clone())
        .adapter(adapter.clone())
        .observer(move |r: &chat_runtime::OutcomeRecord| sink.lock().unwrap().push(r.clone()))
        .on_new_mention(quick)
        .build()
        .unwrap();
    assert_eq!(
        again.handle("test", adapter.request(&e)).await.status(),
        200
    );
    assert_eq!(recorded(&retried), [("a".to_owned(), Outcome::Ran, "ok")]);
    let runs = log.runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].cause, Some(CancelCause::Shutdown));
}

/// A handler that answers a stop has the last word: the platform's closing
/// word (`Webhook::stopped`) is sent only for a run that said nothing
/// after it was stopped — however the handler's answer and the runtime's
/// noticing of the stop interleave (its answer is still in flight when the
/// runtime looks; over 16 runs both orders of that race occur).
#[tokio::test(start_paused = true)]
async fn a_handler_that_answers_a_stop_has_the_last_word() {
    let s = Scenario::new(deferred(Concurrency::queue()));
    let answering: Vec<String> = (0..16).map(|i| format!("t{i}")).collect();
    for t in &answering {
        s.send(t, &format!("run-{t}"), "answer-cancel:5").await;
    }
    s.send("silent", "run-silent", "wait-cancel").await;
    s.pass(100).await;
    for t in answering.iter().map(String::as_str).chain(["silent"]) {
        let stop = EventBuilder::new(s.adapter.thread("T1", "C1", t))
            .id(&format!("stop-{t}"))
            .agent_session(AgentSessionAction::StopRequested, None)
            .build();
        assert_eq!(s.send_event(&stop).await, 200);
    }
    s.pass(1000).await;
    assert_eq!(s.ran_ids().len(), 17);
    for run in s.runs() {
        assert_eq!(run.cause, Some(CancelCause::StopRequested), "{}", run.id);
    }
    let mut posts = s.adapter.posts();
    posts.sort();
    let mut expected: Vec<String> = answering
        .iter()
        .map(|t| format!("stopping:run-{t}"))
        .collect();
    expected.sort();
    assert_eq!(posts, expected);
    assert_eq!(s.adapter.stopped(), ["run-silent"]);
}
