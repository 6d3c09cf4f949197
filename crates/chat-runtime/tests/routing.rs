//! Routing, control events, sync replies, the max lock lifetime and recovery, on
//! every backend: the memory backend under the paused clock, and Redis in real
//! time with the harness's scale (durations below are scenario milliseconds;
//! see `support/mod.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::{
    AdmitRequest, AgentSessionAction, Author, Concurrency, Decision, EventKind, Modal, StateBackend,
};
use chat_runtime::{
    Bot, BotBuilder, CancelCause, Ctx, Event, Outcome, OutcomeRecord, RuntimeOptions,
    TimeoutOptions,
};
use chat_testkit::{EventBuilder, ScriptedAdapter};
use support::{Clock, Env, deferred};

on_every_backend!(
    messages_route_as_the_typescript_sdk_does,
    other_kinds_route_by_name,
    a_sync_handler_can_answer_the_delivery,
    interactions_answer_inline_under_deferred_dispatch,
    direct_messages_action_lists_and_inline_routes,
    a_stop_request_cancels_the_running_turn_here,
    a_stop_request_reaches_a_holder_on_another_replica_at_renewal,
    the_max_lock_lifetime_preempts_a_hung_handler,
    the_sweep_runs_entries_a_dead_holder_left_behind,
    a_slow_sync_handler_is_answered_in_time_and_runs_once,
);

type Seen = Arc<Mutex<Vec<(String, String, Option<CancelCause>)>>>;

/// A handler that logs `(tag, event id, cancel cause)`; it waits for
/// cancellation when the event's text is `wait-cancel`.
fn tagged(seen: &Seen, tag: &'static str) -> impl chat_runtime::Handler {
    let seen = Arc::clone(seen);
    move |ctx: Ctx, e: Event| {
        let seen = Arc::clone(&seen);
        async move {
            if e.text() == Some("wait-cancel") {
                ctx.cancelled().await;
            }
            if e.text() == Some("subscribe") {
                ctx.subscribe().await?;
            }
            if e.text() == Some("reply") {
                ctx.reply(chat_core::Reply::platform(
                    serde_json::json!({ "text": "pong" }),
                ));
            }
            seen.lock()
                .unwrap()
                .push((tag.to_owned(), e.id.to_string(), ctx.cancel_cause()));
            Ok::<(), chat_runtime::BoxError>(())
        }
    }
}

struct World {
    bot: Bot,
    adapter: ScriptedAdapter,
    seen: Seen,
    outcomes: Arc<Mutex<Vec<OutcomeRecord>>>,
    clock: Clock,
}

impl World {
    /// A bot on a fresh store of `env`.
    async fn new(env: &Env, options: RuntimeOptions) -> Self {
        Self::on(env.store().await, env.clock, options)
    }

    /// A bot on `state`; `options` in scenario milliseconds.
    fn on(state: Arc<dyn StateBackend>, clock: Clock, options: RuntimeOptions) -> Self {
        let adapter = ScriptedAdapter::new("test");
        let seen = Seen::default();
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let o = Arc::clone(&outcomes);
        let b: BotBuilder = Bot::builder()
            .state_arc(state)
            .adapter(adapter.clone())
            .options(clock.options(options))
            .observer(move |r: &OutcomeRecord| o.lock().unwrap().push(r.clone()))
            .on_new_mention(tagged(&seen, "mention"))
            .on_subscribed_message(tagged(&seen, "subscribed"))
            .on_new_message("^deploy ", tagged(&seen, "pattern"))
            .on_reaction_emoji("eyes", tagged(&seen, "reaction"))
            .on_action("approve", tagged(&seen, "action"))
            .on_slash_command("/echo", tagged(&seen, "command"))
            .on_modal_submit(Some("form"), tagged(&seen, "submit"))
            .on_modal_close(None, tagged(&seen, "close"))
            .on(
                chat_core::Route::agent_session(chat_core::AgentSessionAction::Created),
                tagged(&seen, "created"),
            )
            .on(
                chat_core::Route::agent_session(chat_core::AgentSessionAction::Prompted),
                tagged(&seen, "prompted"),
            );
        Self {
            bot: b.build().unwrap(),
            adapter,
            seen,
            outcomes,
            clock,
        }
    }

    /// Lets `ms` scenario milliseconds pass.
    async fn pass(&self, ms: u64) {
        self.clock.pass(ms).await;
    }

    /// Lets time pass, 100 scenario ms at a time, until `done` holds or
    /// `limit` ms have passed: for a step whose timing in real time depends on
    /// how busy the machine is (a sweep), bounded far past its scenario time.
    async fn pass_until(&self, limit: u64, done: impl Fn(&Self) -> bool) {
        let mut passed = 0;
        while !done(self) && passed < limit {
            self.clock.pass(100).await;
            passed += 100;
        }
    }

    fn thread(&self, t: &str) -> chat_core::ThreadRef {
        self.adapter.thread("T1", "C1", t)
    }

    async fn send(&self, e: &Event) -> http::Response<bytes::Bytes> {
        self.bot.handle("test", self.adapter.request(e)).await
    }

    fn seen(&self) -> Vec<(String, String)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(t, id, _)| (t.clone(), id.clone()))
            .collect()
    }

    fn outcome(&self, id: &str) -> Vec<(Outcome, &'static str)> {
        self.outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.event_id.as_str() == id)
            .map(|r| (r.outcome, r.reason))
            .collect()
    }
}

fn pair(tag: &str, id: &str) -> (String, String) {
    (tag.to_owned(), id.to_owned())
}

async fn messages_route_as_the_typescript_sdk_does(env: Env) {
    let w = World::new(&env, RuntimeOptions::default()).await;
    let t = w.thread("1");
    // Our own message: ignored without a run.
    let me = Author::new("UBOT").with_me(true).with_bot(true);
    w.send(
        &EventBuilder::new(t.clone())
            .id("own")
            .mention("hi")
            .author(me)
            .build(),
    )
    .await;
    // A plain message in an unsubscribed thread: nobody wants it.
    w.send(
        &EventBuilder::new(t.clone())
            .id("plain")
            .message("hello")
            .build(),
    )
    .await;
    // A DM counts as a mention.
    w.send(
        &EventBuilder::new(w.thread("2"))
            .id("dm")
            .dm("hello")
            .build(),
    )
    .await;
    // A regex match routes a plain message.
    w.send(
        &EventBuilder::new(t.clone())
            .id("deploy")
            .message("deploy prod")
            .build(),
    )
    .await;
    // A mention that subscribes; afterwards plain messages and mentions in the
    // thread go to the subscribed handler.
    w.send(
        &EventBuilder::new(t.clone())
            .id("sub")
            .mention("subscribe")
            .build(),
    )
    .await;
    w.send(
        &EventBuilder::new(t.clone())
            .id("after")
            .message("hello again")
            .build(),
    )
    .await;
    w.send(
        &EventBuilder::new(t.clone())
            .id("mention2")
            .mention("and you")
            .build(),
    )
    .await;
    assert_eq!(
        w.seen(),
        [
            pair("mention", "dm"),
            pair("pattern", "deploy"),
            pair("mention", "sub"),
            pair("subscribed", "after"),
            pair("subscribed", "mention2")
        ]
    );
    assert_eq!(w.outcome("own"), [(Outcome::Ignored, "own-message")]);
    assert_eq!(w.outcome("plain"), [(Outcome::Ignored, "not-subscribed")]);
    // Not marked: once the thread is subscribed, the same delivery is admitted.
    w.send(
        &EventBuilder::new(t.clone())
            .id("plain")
            .message("hello")
            .build(),
    )
    .await;
    assert_eq!(w.seen().last().unwrap(), &pair("subscribed", "plain"));
}

async fn other_kinds_route_by_name(env: Env) {
    let w = World::new(&env, RuntimeOptions::default()).await;
    let t = w.thread("1");
    let b = || EventBuilder::new(t.clone());
    w.send(&b().id("r1").reaction("eyes", "m1").build()).await;
    w.send(&b().id("r2").reaction("tada", "m1").build()).await;
    w.send(&b().id("a1").action("approve", Some("yes")).build())
        .await;
    w.send(&b().id("a2").action("reject", None).build()).await;
    w.send(&b().id("c1").slash_command("/echo", "hi").build())
        .await;
    w.send(&b().id("c2").slash_command("/other", "hi").build())
        .await;
    let modal = |callback: &str| Modal::new(callback, "V1", Author::default());
    let mut submit = b().id("m1").build();
    submit.kind = EventKind::ModalSubmit(modal("form"));
    w.send(&submit).await;
    let mut close = b().id("m2").build();
    close.kind = EventKind::ModalClose(modal("anything"));
    w.send(&close).await;
    w.send(
        &b().id("s1")
            .agent_session(AgentSessionAction::Created, None)
            .build(),
    )
    .await;
    w.send(
        &b().id("s2")
            .agent_session(AgentSessionAction::Prompted, Some("more"))
            .build(),
    )
    .await;
    assert_eq!(
        w.seen(),
        [
            pair("reaction", "r1"),
            pair("action", "a1"),
            pair("command", "c1"),
            pair("submit", "m1"),
            pair("close", "m2"),
            pair("created", "s1"),
            pair("prompted", "s2"),
        ]
    );
    for id in ["r2", "a2", "c2"] {
        assert_eq!(w.outcome(id), [(Outcome::Ignored, "no-handler")], "{id}");
    }
}

async fn a_sync_handler_can_answer_the_delivery(env: Env) {
    let w = World::new(&env, RuntimeOptions::default()).await;
    let e = EventBuilder::new(w.thread("1"))
        .id("c")
        .slash_command("/echo", "reply")
        .build();
    let r = w.send(&e).await;
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
    assert_eq!(body, serde_json::json!({ "text": "pong" }));
}

async fn interactions_answer_inline_under_deferred_dispatch(env: Env) {
    let w = World::new(&env, deferred(Concurrency::queue())).await;
    let e = EventBuilder::new(w.thread("1"))
        .id("c")
        .slash_command("/echo", "reply")
        .build();
    let r = w.send(&e).await;
    let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
    assert_eq!(body, serde_json::json!({ "text": "pong" }));
    // Turned off, the command runs detached and cannot answer.
    let w = World::new(&env, {
        let mut options = deferred(Concurrency::queue());
        options.dispatch.inline_interactions = false;
        options
    })
    .await;
    let e = EventBuilder::new(w.thread("1"))
        .id("c")
        .slash_command("/echo", "reply")
        .build();
    let r = w.send(&e).await;
    assert!(r.body().is_empty());
    w.pass(500).await;
    assert_eq!(w.seen(), [pair("command", "c")]);
}

/// A direct-message handler takes every DM (a subscribed one too) and no
/// mention; a list of action ids routes each of them; an action no route
/// names goes to the catch-all; a route marked inline answers in the HTTP
/// response under deferred dispatch.
async fn direct_messages_action_lists_and_inline_routes(env: Env) {
    let adapter = ScriptedAdapter::new("test");
    let seen = Seen::default();
    let options = env.clock.options(deferred(Concurrency::queue()));
    let bot = Bot::builder()
        .state_arc(env.store().await)
        .adapter(adapter.clone())
        .options(options)
        .on_new_mention(tagged(&seen, "mention"))
        .on_subscribed_message(tagged(&seen, "subscribed"))
        .on_direct_message(tagged(&seen, "dm"))
        .on_actions(["approve", "reject"], tagged(&seen, "decision"))
        .on_any_action(tagged(&seen, "any-action"))
        .on(
            chat_core::Route::new(
                "lookup",
                |e: &Event| matches!(&e.kind, EventKind::Other(o) if o.name == "lookup"),
            )
            .inline(),
            {
                let seen = Arc::clone(&seen);
                move |ctx: Ctx, e: Event| {
                    let seen = Arc::clone(&seen);
                    async move {
                        ctx.reply(chat_core::Reply::platform(
                            serde_json::json!({ "options": ["a"] }),
                        ));
                        seen.lock()
                            .unwrap()
                            .push(("lookup".to_owned(), e.id.to_string(), None));
                        Ok::<(), chat_runtime::BoxError>(())
                    }
                }
            },
        )
        .build()
        .unwrap();
    let send = |e: Event| {
        let (bot, adapter) = (bot.clone(), adapter.clone());
        async move { bot.handle("test", adapter.request(&e)).await }
    };
    let t = |id: &str| adapter.thread("T1", "D1", id);
    send(EventBuilder::new(t("1")).id("dm1").dm("subscribe").build()).await;
    send(EventBuilder::new(t("1")).id("dm2").dm("again").build()).await;
    send(
        EventBuilder::new(adapter.thread("T1", "C1", "2"))
            .id("m")
            .mention("hello")
            .build(),
    )
    .await;
    for (id, action) in [("a1", "approve"), ("a2", "reject"), ("a3", "other")] {
        send(
            EventBuilder::new(adapter.thread("T1", "C1", "3"))
                .id(id)
                .action(action, None)
                .build(),
        )
        .await;
    }
    let mut lookup = EventBuilder::new(adapter.thread("T1", "C1", ""))
        .id("l")
        .build();
    lookup.kind = EventKind::Other(chat_core::OtherEvent::new("lookup", serde_json::json!({})));
    lookup.dedupe_key = chat_core::DedupeKey::new("l");
    let r = send(lookup).await;
    // Ran before the answer: what it gave `reply` is the body.
    let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
    assert_eq!(body, serde_json::json!({ "options": ["a"] }));
    env.clock.pass(500).await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let mut got: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(t, id, _)| (t.clone(), id.clone()))
        .collect();
    got.sort();
    let mut want = vec![
        pair("dm", "dm1"),
        pair("dm", "dm2"),
        pair("mention", "m"),
        pair("decision", "a1"),
        pair("decision", "a2"),
        pair("any-action", "a3"),
        pair("lookup", "l"),
    ];
    want.sort();
    assert_eq!(got, want);
}

async fn a_stop_request_cancels_the_running_turn_here(env: Env) {
    let w = World::new(&env, deferred(Concurrency::queue())).await;
    let t = w.thread("S1");
    w.send(
        &EventBuilder::new(t.clone())
            .id("s")
            .agent_session(AgentSessionAction::Created, Some("wait-cancel"))
            .build(),
    )
    .await;
    w.send(
        &EventBuilder::new(t.clone())
            .id("p")
            .agent_session(AgentSessionAction::Prompted, Some("queued"))
            .build(),
    )
    .await;
    w.pass(500).await;
    let stop = EventBuilder::new(t)
        .id("stop")
        .agent_session(AgentSessionAction::StopRequested, None)
        .build();
    assert_eq!(w.send(&stop).await.status(), 200);
    w.pass(500).await;
    let seen = w.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0],
        (
            "created".into(),
            "s".into(),
            Some(CancelCause::StopRequested)
        )
    );
    assert_eq!(w.outcome("s"), [(Outcome::Cancelled, "stop-requested")]);
    assert_eq!(w.outcome("stop"), [(Outcome::Ran, "stop-request")]);
    // The stop cancels the turn it was sent for; the prompt queued behind it
    // still runs, and the stop itself starts no handler.
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].1, "p");
    assert_eq!(
        w.send(
            &EventBuilder::new(w.thread("S1"))
                .id("stop")
                .agent_session(AgentSessionAction::StopRequested, None)
                .build()
        )
        .await
        .status(),
        200
    );
    assert_eq!(
        w.outcome("stop").len(),
        2,
        "a redelivered stop is a duplicate"
    );
}

async fn a_stop_request_reaches_a_holder_on_another_replica_at_renewal(env: Env) {
    // Two replicas, each with its own connection to one store.
    let mut stores = env.stores(2).await.into_iter();
    let options = {
        let mut options = deferred(Concurrency::queue());
        options.leases.ttl = Duration::from_secs(3);
        options
    };
    let a = World::on(stores.next().unwrap(), env.clock, options.clone());
    let b = World::on(stores.next().unwrap(), env.clock, options);
    let t = a.thread("S1");
    a.send(
        &EventBuilder::new(t.clone())
            .id("s")
            .agent_session(AgentSessionAction::Created, Some("wait-cancel"))
            .build(),
    )
    .await;
    a.pass(10).await;
    b.send(
        &EventBuilder::new(t)
            .id("stop")
            .agent_session(AgentSessionAction::StopRequested, None)
            .build(),
    )
    .await;
    assert!(a.outcome("s").is_empty(), "replica a cannot know yet");
    // Within one renewal interval (lock TTL / 3 = 1 s).
    a.pass(1010).await;
    a.clock.slack().await;
    assert_eq!(a.outcome("s"), [(Outcome::Cancelled, "stop-requested")]);
    assert_eq!(
        a.seen.lock().unwrap()[0].2,
        Some(CancelCause::StopRequested)
    );
}

async fn the_max_lock_lifetime_preempts_a_hung_handler(env: Env) {
    let w = World::new(&env, {
        let mut options = deferred(Concurrency::queue());
        options.leases.ttl = Duration::from_secs(3);
        options.leases.max_lifetime = Duration::from_secs(5);
        options.dispatch.detach_timeout = Duration::from_secs(600);
        options
    })
    .await;
    w.send(
        &EventBuilder::new(w.thread("1"))
            .id("h")
            .mention("wait-cancel")
            .build(),
    )
    .await;
    // Renewed past its first TTL …
    w.pass(6000).await;
    assert!(w.seen.lock().unwrap().is_empty(), "still holding at 6 s");
    // … but not past the lifetime: the last renewal (at 5 s) lapses by 8 s. The
    // run is cancelled as preempted and records nothing: its event is still in
    // flight, for the scope's next holder to run again.
    w.pass(3000).await;
    assert_eq!(
        w.seen.lock().unwrap().first().map(|s| s.2),
        Some(Some(CancelCause::Preempted))
    );
    assert!(w.outcome("h").is_empty(), "{:?}", w.outcome("h"));
}

async fn the_sweep_runs_entries_a_dead_holder_left_behind(env: Env) {
    let state = env.store().await;
    let w = World::on(Arc::clone(&state), env.clock, {
        let mut options = deferred(Concurrency::queue());
        options.recovery.sweep_interval = Some(Duration::from_secs(1));
        options.leases.ttl = Duration::from_secs(3);
        options
    });
    // A holder on another replica took the scope and died with an entry queued.
    let t = w.thread("1");
    let dead = EventBuilder::new(t.clone()).id("dead").mention("x").build();
    let scope = t.thread_scope();
    let req =
        |e| AdmitRequest::new(e, scope.clone(), Concurrency::queue()).lease_ttl(env.clock.ms(3000));
    assert!(matches!(
        state.admit(req(dead)).await.unwrap().decision,
        Decision::Run(_)
    ));
    let orphan = EventBuilder::new(t).id("orphan").mention("x").build();
    assert!(matches!(
        state.admit(req(orphan)).await.unwrap().decision,
        Decision::Queued { .. }
    ));
    // The dead lease lapses at 3 s and a sweep runs every second; one sweep
    // reads every bucket of the store, which on Redis takes tens of
    // milliseconds of real time. The dead holder's own event runs again first
    // (it never finished), then the entry it left queued. Under the paused
    // clock both are done by 10 s; in real time a busy machine may take longer.
    w.pass(10_000).await;
    if env.clock.is_real() {
        w.pass_until(60_000, |w| {
            !w.outcome("dead").is_empty() && !w.outcome("orphan").is_empty()
        })
        .await;
    }
    assert_eq!(
        w.seen(),
        [pair("mention", "dead"), pair("mention", "orphan")]
    );
    assert_eq!(w.outcome("dead"), [(Outcome::Ran, "ok")]);
    assert_eq!(w.outcome("orphan"), [(Outcome::Ran, "ok")]);
}

async fn a_slow_sync_handler_is_answered_in_time_and_runs_once(env: Env) {
    let w = World::new(
        &env,
        RuntimeOptions::default().timeouts(TimeoutOptions::default().ack(Duration::from_secs(2))),
    )
    .await;
    let seen = Arc::clone(&w.seen);
    let slow = EventBuilder::new(w.thread("1"))
        .id("slow")
        .mention("wait-cancel")
        .build();
    // The handler never returns by itself: the platform still hears back at 2 s…
    let started = tokio::time::Instant::now();
    assert_eq!(w.send(&slow).await.status(), 503);
    w.clock.assert_near(
        tokio::time::Instant::now() - started,
        2000,
        "answered at the ack timeout",
    );
    // … and its retry is a duplicate: the delivery carries on where it was.
    assert_eq!(w.send(&slow).await.status(), 200);
    assert_eq!(w.outcome("slow"), [(Outcome::Duplicate, "duplicate")]);
    assert!(seen.lock().unwrap().is_empty());
}
