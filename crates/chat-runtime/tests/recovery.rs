//! Recovery of every kind of event on every dispatch path: runs cut short —
//! a replica cut off mid-run, a redeploy, an operator's force-release — after
//! their delivery may have been answered run again under the scope's next
//! holder, and exactly once; the unlocked kinds (reactions, clicks, slash
//! commands, modal submissions) under the concurrency they were admitted
//! with, whatever the bot's strategy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value,
    missing_docs
)]

mod support;

use std::time::Duration;

use chat_runtime::{
    AdmissionOptions, CancelCause, Concurrency, Dispatch, DispatchOptions, Event, Outcome,
    RecoveryOptions, RuntimeOptions, TimeoutOptions,
};
use support::{Env, Scenario, Unlocked, deferred};

on_every_backend!(
    an_unlocked_run_cut_off_mid_run_runs_again_elsewhere,
    a_run_cut_by_a_redeploy_after_its_answer_runs_again_elsewhere,
    a_force_released_run_inside_its_request_runs_again,
);

/// Two replicas' options: a 3 s lease, a sweep every 500 ms, the bot's
/// strategy `Drop` (not `Concurrent`), on `dispatch`.
fn options(dispatch: Dispatch) -> RuntimeOptions {
    let base = match dispatch {
        Dispatch::Deferred => deferred(Concurrency::Drop),
        _ => RuntimeOptions::default(),
    };
    {
        let mut options = base;
        options.leases.ttl = Duration::from_secs(3);
        options.recovery.sweep_interval = Some(Duration::from_millis(500));
        options
    }
}

/// Every event a scenario sends, by kind: a mention (serialized) and each
/// unlocked kind.
fn kinds() -> Vec<Option<Unlocked>> {
    std::iter::once(None)
        .chain(Unlocked::ALL.into_iter().map(Some))
        .collect()
}

fn event(s: &Scenario, kind: Option<Unlocked>, id: &str, script: &str) -> Event {
    match kind {
        Some(k) => k.event(s, "1", id, script),
        None => s.event("1", id, script),
    }
}

/// Sends `e` to `s` on a task of its own (a sync delivery is answered only
/// after its run, or at `ack_timeout`), returning its status when answered.
fn send_in_background(s: &Scenario, e: &Event) -> tokio::task::JoinHandle<u16> {
    let (bot, request) = (s.bot.clone(), s.adapter.request(e));
    tokio::spawn(async move { bot.handle("test", request).await.status().as_u16() })
}

/// `id` has its outcome and none of its runs is still going.
fn settled(s: &Scenario, id: &str) -> bool {
    s.outcome(id).is_some() && s.runs().iter().all(|r| r.id != id || r.end.is_some())
}

/// `id` ran again on a later attempt and ended `Ran` once, across replicas; its
/// first attempt was cut with `cause`; its reply was posted once.
///
/// In real time (Redis, a tenth of the scenario's time) a claim answered late
/// on a loaded machine can leave an attempt past its believed expiry: it is
/// preempted before it does anything, and the next sweep runs the event
/// again. Those attempts in between are allowed.
fn ran_again_once(s: &Scenario, id: &str, cause: CancelCause, what: &str) {
    let runs: Vec<_> = s.runs().into_iter().filter(|r| r.id == id).collect();
    assert!(runs.len() >= 2, "{what}: {runs:?}");
    assert_eq!(
        (runs[0].attempt, runs[0].cause),
        (1, Some(cause)),
        "{what}: {runs:?}"
    );
    let finished: Vec<_> = runs[1..].iter().filter(|r| r.cause.is_none()).collect();
    assert_eq!(finished.len(), 1, "{what}: {runs:?}");
    assert!(finished[0].attempt >= 2, "{what}: {runs:?}");
    assert!(
        runs[1..]
            .iter()
            .all(|r| r.cause.is_none() || r.cause == Some(CancelCause::Preempted)),
        "{what}: {runs:?}"
    );
    let outcomes = s.outcomes().remove(id).unwrap_or_default();
    assert_eq!(outcomes, [Outcome::Ran], "{what}");
    let replies: Vec<String> = s
        .adapter
        .posts()
        .into_iter()
        .filter(|p| *p == format!("reply:{id}"))
        .collect();
    assert_eq!(replies.len(), 1, "{what}: posts {:?}", s.adapter.posts());
}

/// A reaction, a click, a slash command or a modal submission whose replica
/// loses the backend mid-run is run again by the other replica's sweep —
/// under the unbounded concurrency it was admitted with, though the bot's
/// strategy is `Drop` — on sync dispatch (where the answer went out at
/// `ack_timeout`) and on deferred dispatch.
async fn an_unlocked_run_cut_off_mid_run_runs_again_elsewhere(env: Env) {
    for dispatch in [Dispatch::Sync, Dispatch::Deferred] {
        for kind in Unlocked::ALL {
            let what = format!("{kind:?} under {dispatch:?}");
            let replicas = env.replicas(2, options(dispatch)).await;
            let (r0, r1) = (&replicas[0], &replicas[1]);
            let e = kind.event(r0, "1", "a", "post+first-wait-cancel");
            let answer = send_in_background(r0, &e);
            r0.pass(500).await;
            for op in [
                chat_testkit::Op::Renew,
                chat_testkit::Op::Finish,
                chat_testkit::Op::Release,
                chat_testkit::Op::Sweep,
                chat_testkit::Op::Admit,
            ] {
                r0.faults.cut(op);
            }
            r0.pass(8000).await;
            r0.pass_until(22_000, || settled(r1, "a")).await;
            // Answered: at once (deferred), or at the ack deadline while it ran.
            assert_ne!(answer.await.unwrap(), 500, "{what}");
            ran_again_once(r1, "a", CancelCause::Preempted, &what);
        }
    }
}

/// A redeploy cuts a run inside its request (sync dispatch) whose delivery
/// was already answered at `ack_timeout`: the run is handed back and the
/// other replica runs it again, for a mention and every unlocked kind.
async fn a_run_cut_by_a_redeploy_after_its_answer_runs_again_elsewhere(env: Env) {
    for kind in kinds() {
        let what = format!("{kind:?}");
        let replicas = env
            .replicas(2, {
                let mut options = options(Dispatch::Sync);
                options.timeouts.ack = Duration::from_secs(1);
                options
            })
            .await;
        let (r0, r1) = (&replicas[0], &replicas[1]);
        let e = event(r0, kind, "a", "post+first-wait-cancel");
        // The platform hears back at the ack deadline, the run going on …
        assert_ne!(r0.send_event(&e).await, 500, "{what}");
        // … and then the replica shuts down with the handler still running.
        let report = r0.bot.shutdown(r0.ms(2000)).await;
        assert_eq!(report.cancelled, 1, "{what}: {report:?}");
        r1.pass(2000).await;
        r1.pass_until(20_000, || settled(r1, "a")).await;
        ran_again_once(r1, "a", CancelCause::Shutdown, &what);
    }
}

/// An operator force-releases the lease (or slot) of a run inside its
/// request after its answer went out: the holder is preempted, and the run
/// is taken over again instead of dropped.
async fn a_force_released_run_inside_its_request_runs_again(env: Env) {
    for kind in [None, Some(Unlocked::SlashCommand)] {
        let what = format!("{kind:?}");
        let replicas = env.replicas(2, options(Dispatch::Sync)).await;
        let (r0, r1) = (&replicas[0], &replicas[1]);
        let e = event(r0, kind, "a", "post+first-wait-cancel");
        let answer = send_in_background(r0, &e);
        r0.pass(500).await;
        let scope = e.thread.thread_scope();
        let view = r0.state.inspect_scope(&scope).await.unwrap().expect("busy");
        let fence = view
            .holder
            .as_ref()
            .or(view.slots.first())
            .map(|h| h.fence)
            .expect("held");
        r1.bot.force_release(&scope, fence).await.unwrap();
        r0.pass(5000).await;
        r0.pass_until(20_000, || settled(r1, "a")).await;
        assert_ne!(answer.await.unwrap(), 500, "{what}");
        ran_again_once(r1, "a", CancelCause::Preempted, &what);
    }
}

/// A sweep slower than the lease's TTL (its reads of the orphan indexes
/// stalled on a loaded server) hands what it claimed to a holder that runs it:
/// the recovered lease counts from a renewal, not from before the sweep,
/// whose claim is long past by then. No attempt is preempted at its start.
#[tokio::test(start_paused = true)]
async fn a_sweep_slower_than_the_lease_runs_what_it_recovered() {
    use chat_testkit::{Fault, Op};
    let env = Env::memory();
    let replicas = env.replicas(2, options(Dispatch::Deferred)).await;
    let (r0, r1) = (&replicas[0], &replicas[1]);
    // Every sweep of the replica that recovers stalls 4 s, past the 3 s TTL.
    for _ in 0..8 {
        r1.faults
            .inject(Op::Sweep, Fault::Stall(Duration::from_secs(4)));
    }
    let e = r0.event("1", "a", "post+first-wait-cancel");
    assert_eq!(r0.send_event(&e).await, 200);
    r0.pass(500).await;
    for op in [Op::Renew, Op::Finish, Op::Release, Op::Sweep, Op::Admit] {
        r0.faults.cut(op);
    }
    r0.pass(8000).await;
    r0.pass_until(30_000, || settled(r1, "a")).await;
    let runs: Vec<_> = r1.runs().into_iter().filter(|r| r.id == "a").collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0].attempt, runs[0].cause),
        (1, Some(CancelCause::Preempted)),
        "{runs:?}"
    );
    assert_eq!((runs[1].attempt, runs[1].cause), (2, None), "{runs:?}");
    assert_eq!(
        r1.outcomes().remove("a").unwrap_or_default(),
        [Outcome::Ran]
    );
}

/// With a backend nobody else reads, a sync run cut by shutdown after its
/// answer went out cannot be handed to anyone: it is recorded `Cancelled`,
/// not left without an outcome.
#[tokio::test(start_paused = true)]
async fn a_private_backend_records_a_sync_run_cut_after_its_answer() {
    let s = Scenario::new(
        RuntimeOptions::default().timeouts(TimeoutOptions::default().ack(Duration::from_secs(1))),
    );
    assert_eq!(s.send("1", "a", "wait-cancel").await, 503);
    s.bot.shutdown(s.ms(2000)).await;
    assert_eq!(s.outcome("a"), Some(Outcome::Cancelled));
}

/// Under sync dispatch the queue's hand-offs run detached: they hold places
/// of `max_detached` like deferred runs. With one place, two threads'
/// hand-offs run one after the other, the second taken over by a sweep once
/// the place is free.
#[tokio::test(start_paused = true)]
async fn sync_hand_offs_run_within_max_detached() {
    let s = Scenario::new(
        RuntimeOptions::default()
            .concurrency(Concurrency::queue())
            .dispatch(DispatchOptions::default().detach_timeout(Duration::from_secs(60)))
            .admission(AdmissionOptions::default().max_detached(1))
            .recovery(RecoveryOptions::default().sweep_interval(Duration::from_millis(500))),
    );
    let firsts: Vec<_> = ["1", "2"]
        .into_iter()
        .map(|t| send_in_background(&s, &s.event(t, &format!("a{t}"), "sleep:1000")))
        .collect();
    s.pass(100).await;
    for t in ["1", "2"] {
        assert_eq!(s.send(t, &format!("b{t}"), "sleep:2000").await, 200);
    }
    for first in firsts {
        assert_eq!(first.await.unwrap(), 200);
    }
    s.pass(10_000).await;
    s.assert_one_outcome_each(&["a1", "a2", "b1", "b2"]);
    let runs = s.runs();
    let b: Vec<_> = runs.iter().filter(|r| r.id.starts_with('b')).collect();
    assert_eq!(b.len(), 2, "{runs:?}");
    let (x, y) = (b[0], b[1]);
    assert!(
        x.end.unwrap() <= y.start || y.end.unwrap() <= x.start,
        "two hand-offs ran at once with max_detached 1: {runs:?}"
    );
}

/// A tenant at its `max_detached_per_tenant` cap does not starve the others'
/// recovery: its orphaned runs are left out of the sweep instead of taking
/// every place of it only to be handed back.
#[tokio::test(start_paused = true)]
async fn a_tenant_at_its_cap_does_not_starve_the_recovery_of_others() {
    let env = Env::memory();
    let stores = env.stores(2).await;
    let (log, adapter) = (
        support::Log::default(),
        chat_testkit::ScriptedAdapter::new("test"),
    );
    let base = {
        let mut options = deferred(Concurrency::queue());
        options.leases.ttl = Duration::from_secs(3);
        options.recovery.sweep_interval = Some(Duration::from_millis(500));
        options
    };
    let r0 = Scenario::replica(
        stores[0].clone(),
        env.clock,
        base.clone(),
        log.clone(),
        adapter.clone(),
        true,
    );
    let r1 = Scenario::replica(
        stores[1].clone(),
        env.clock,
        {
            let mut options = base;
            // One place for the busy run, one for a recovery per sweep.
            options.admission.max_detached = 2;
            options.admission.max_detached_per_tenant = Some(1);
            options
        },
        log,
        adapter,
        true,
    );
    // The other replica is busy with one run of the hot tenant: at its cap.
    assert_eq!(r1.send("busy", "busy", "sleep:60000").await, 200);
    for i in 0..400 {
        let id = format!("h{i}");
        assert_eq!(r0.send(&id, &id, "first-wait-cancel").await, 200);
    }
    let cold = r0
        .adapter
        .mention("T2", "C1", "cold", "cold", "first-wait-cancel");
    assert_eq!(r0.send_event(&cold).await, 200);
    for op in [
        chat_testkit::Op::Renew,
        chat_testkit::Op::Finish,
        chat_testkit::Op::Release,
        chat_testkit::Op::Sweep,
        chat_testkit::Op::Admit,
    ] {
        r0.faults.cut(op);
    }
    // The leases lapse 3 s after their last renewal; the first sweep after
    // that (every 500 ms) recovers the cold tenant's run.
    r1.pass(4_000).await;
    assert_eq!(r1.outcome("cold"), Some(Outcome::Ran));
}

/// A reply a handler gives after its delivery's response went out is sent
/// by a task of the bot's: shutdown waits for it instead of cutting it.
#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_a_reply_sent_after_the_response() {
    let adapter = chat_testkit::ScriptedAdapter::new("test");
    adapter.set_later_reply_latency(Duration::from_millis(500));
    let bot = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter.clone())
        .options({
            let mut options = deferred(Concurrency::Drop);
            options.dispatch.inline_interactions = false;
            options
        })
        .on_any_slash_command(|ctx: chat_runtime::Ctx, _e: Event| async move {
            // Detached: the response went out, so the reply goes later.
            assert!(!ctx.reply("done"));
            Ok::<(), chat_runtime::BoxError>(())
        })
        .build()
        .unwrap();
    let e = chat_testkit::EventBuilder::new(adapter.thread("T1", "C1", "1"))
        .id("cmd")
        .slash_command("/go", "now")
        .build();
    assert_eq!(bot.handle("test", adapter.request(&e)).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let report = bot.shutdown(Duration::from_secs(5)).await;
    assert!(report.finished, "{report:?}");
    assert_eq!(
        adapter.later_replies(),
        [chat_core::Reply::ephemeral("done")]
    );
}
