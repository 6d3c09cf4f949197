//! The progress events users build dashboards on, by their stable names. On
//! its own in this test binary: a `tracing` subscriber set for one thread sees
//! callsites whose interest other tests' threads did not cache.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::DebounceOptions;
use chat_runtime::Concurrency;
use support::{Scenario, deferred};

/// The progress events users build dashboards on, by their stable names.
#[tokio::test(start_paused = true)]
async fn progress_events_carry_their_stable_names() {
    use tracing_subscriber::layer::SubscriberExt;

    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let layer = Names(Arc::clone(&seen));
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let q = Scenario::new(deferred(Concurrency::queue()));
    q.send("1", "a", "sleep:100").await;
    q.send("1", "b", "ok").await;
    q.pass(1000).await;
    let d = Scenario::new(deferred(Concurrency::Debounce(
        DebounceOptions::default().interval(Duration::from_millis(300)),
    )));
    d.send("1", "x", "sleep:500").await;
    d.pass(400).await;
    d.send("1", "y", "ok").await;
    d.send("1", "z", "ok").await;
    d.pass(2000).await;

    let seen = seen.lock().unwrap().clone();
    let has = |name: &str, field: &str| seen.iter().any(|(n, f)| n == name && f.contains(field));
    assert!(has("message-queued", "queue_depth=1"), "{seen:?}");
    assert!(has("message-dequeued", "skipped_count=0"), "{seen:?}");
    assert!(has("message-debouncing", "interval_ms=300"), "{seen:?}");
    assert!(has("message-debounce-reset", "interval_ms=300"), "{seen:?}");
    assert!(has("handler-ran", "outcome=\"handler-ran\""), "{seen:?}");
    assert!(has("message-superseded", "reason=\"debounce\""), "{seen:?}");
}

/// With an `info` filter, a healthy bot logs one outcome line per handled
/// delivery (`handler-ran`), and nothing for a duplicate.
#[tokio::test(start_paused = true)]
async fn at_info_each_handled_delivery_is_one_outcome_line() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;

    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let layer = Names(Arc::clone(&seen)).with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let q = Scenario::new(deferred(Concurrency::queue()));
    q.send("1", "a", "ok").await;
    q.send("2", "b", "ok").await;
    q.send("2", "b", "ok").await; // a retry: a duplicate, logged at DEBUG only
    q.pass(1000).await;

    let seen = seen.lock().unwrap().clone();
    let outcomes: Vec<&str> = seen
        .iter()
        .filter(|(_, fields)| fields.contains("outcome="))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(outcomes, ["handler-ran", "handler-ran"], "{seen:?}");
}

/// A flood of unsigned requests is one `webhook-rejected` line per second,
/// each saying how many it stands for.
#[tokio::test(start_paused = true)]
async fn a_flood_of_unsigned_requests_is_one_log_line_per_second() {
    use chat_testkit::ScriptedAdapter;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;

    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let layer = Names(Arc::clone(&seen)).with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let adapter = ScriptedAdapter::new("test");
    let bot = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter.clone())
        .build()
        .unwrap();
    let unsigned = || adapter.raw_request(bytes::Bytes::from_static(b"{}"), false);
    for _ in 0..500 {
        assert_eq!(bot.handle("test", unsigned()).await.status(), 401);
    }
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(bot.handle("test", unsigned()).await.status(), 401);

    let lines: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(name, _)| name == "webhook-rejected")
        .map(|(_, fields)| fields.clone())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("suppressed=0"), "{lines:?}");
    assert!(lines[1].contains("suppressed=499"), "{lines:?}");
}

/// Records every event's name and fields.
struct Names(Arc<Mutex<Vec<(String, String)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Names {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={value:?} ", field.name()));
            }
        }
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0
            .lock()
            .unwrap()
            .push((event.metadata().name().to_owned(), fields.0));
    }
}
