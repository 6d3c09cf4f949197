//! Open routing: a handler registered with `BotBuilder::on` for a route takes
//! a platform's own events (nothing in the runtime names them), routes are
//! tried in order with fallbacks last, and a delivery is matched against the
//! routes once.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::{EventKind, OtherEvent, Route};
use chat_runtime::{
    Bot, Concurrency, Ctx, Dispatch, DispatchOptions, Event, Outcome, OutcomeRecord, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::{EventBuilder, ScriptedAdapter};

type Seen = Arc<Mutex<Vec<(&'static str, String)>>>;

fn tag(seen: &Seen, name: &'static str) -> impl chat_runtime::Handler {
    let seen = Arc::clone(seen);
    move |_ctx: Ctx, e: Event| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().unwrap().push((name, e.id.to_string()));
            Ok::<(), chat_runtime::BoxError>(())
        }
    }
}

fn other(adapter: &ScriptedAdapter, id: &str, name: &str) -> Event {
    let mut e = EventBuilder::new(adapter.thread("T1", "C1", ""))
        .id(id)
        .build();
    e.kind = EventKind::Other(OtherEvent::new(name, serde_json::json!({ "user": "U1" })));
    e
}

/// A platform-only event (an `app_home_opened`) reaches the handler of its
/// route, where it used to be ignored as having no handler; one no route
/// takes is still ignored.
#[tokio::test(start_paused = true)]
async fn a_platform_event_reaches_the_handler_of_its_route() {
    let adapter = ScriptedAdapter::new("test");
    let seen = Seen::default();
    let outcomes: Arc<Mutex<Vec<OutcomeRecord>>> = Arc::default();
    let o = Arc::clone(&outcomes);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .observer(move |r: &OutcomeRecord| o.lock().unwrap().push(r.clone()))
        .on(Route::other("app_home_opened"), tag(&seen, "home"))
        .on(
            Route::other("member_joined_channel").serialized(),
            tag(&seen, "joined"),
        )
        .build()
        .unwrap();
    for e in [
        other(&adapter, "e1", "app_home_opened"),
        other(&adapter, "e2", "member_joined_channel"),
        other(&adapter, "e3", "pin_added"),
    ] {
        assert_eq!(bot.handle("test", adapter.request(&e)).await.status(), 200);
    }
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert_eq!(
        *seen.lock().unwrap(),
        [("home", "e1".to_owned()), ("joined", "e2".to_owned())]
    );
    let ignored: Vec<_> = outcomes
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.event_id.as_str() == "e3")
        .map(|r| (r.outcome, r.reason))
        .collect();
    assert_eq!(ignored, [(Outcome::Ignored, "no-handler")]);
}

/// Routes are tried in registration order, fallbacks after every other: an
/// `on_any_slash_command` registered first still leaves `/deploy` to its own
/// route.
#[tokio::test(start_paused = true)]
async fn routes_are_tried_in_order_with_fallbacks_last() {
    let adapter = ScriptedAdapter::new("test");
    let seen = Seen::default();
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .on_any_slash_command(tag(&seen, "any"))
        .on_slash_command("/deploy", tag(&seen, "deploy"))
        .on(
            Route::new("first", |e: &Event| e.id.as_str() == "x1"),
            tag(&seen, "first"),
        )
        .on(
            Route::new("second", |e: &Event| {
                matches!(e.kind, EventKind::Reaction(_))
            }),
            tag(&seen, "second"),
        )
        .build()
        .unwrap();
    let thread = adapter.thread("T1", "C1", "1");
    let events = [
        EventBuilder::new(thread.clone())
            .id("c1")
            .slash_command("/deploy", "")
            .build(),
        EventBuilder::new(thread.clone())
            .id("c2")
            .slash_command("/other", "")
            .build(),
        EventBuilder::new(thread.clone())
            .id("x1")
            .reaction("eyes", "1")
            .build(),
        EventBuilder::new(thread)
            .id("x2")
            .reaction("eyes", "1")
            .build(),
    ];
    for e in &events {
        bot.handle("test", adapter.request(e)).await;
    }
    assert!(bot.idle(Duration::from_secs(5)).await);
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    assert_eq!(
        got,
        [
            ("any", "c2".to_owned()),
            ("deploy", "c1".to_owned()),
            ("first", "x1".to_owned()),
            ("second", "x2".to_owned()),
        ]
    );
}

/// The ack path matches a delivery against the routes once and hands the
/// handler it chose to the run: a route's predicate is asked once per
/// delivery, on both dispatch paths.
#[tokio::test(start_paused = true)]
async fn a_delivery_is_matched_against_the_routes_once() {
    for dispatch in [Dispatch::Sync, Dispatch::Deferred] {
        let adapter = ScriptedAdapter::new("test");
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&asked);
        let seen = Seen::default();
        let bot = Bot::builder()
            .state(MemoryState::new())
            .adapter(adapter.clone())
            .options(
                RuntimeOptions::default()
                    .dispatch(
                        DispatchOptions::default()
                            .mode(dispatch)
                            .detach_timeout(Duration::from_secs(60)),
                    )
                    .concurrency(Concurrency::queue()),
            )
            .on(
                Route::new("counted", move |e: &Event| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    matches!(e.kind, EventKind::Reaction(_))
                })
                .serialized(),
                tag(&seen, "counted"),
            )
            .build()
            .unwrap();
        let e = EventBuilder::new(adapter.thread("T1", "C1", "1"))
            .id("r1")
            .reaction("eyes", "1")
            .build();
        assert_eq!(bot.handle("test", adapter.request(&e)).await.status(), 200);
        assert!(bot.idle(Duration::from_secs(5)).await);
        assert_eq!(seen.lock().unwrap().len(), 1, "{dispatch:?}");
        assert_eq!(asked.load(Ordering::SeqCst), 1, "{dispatch:?}");
    }
}
