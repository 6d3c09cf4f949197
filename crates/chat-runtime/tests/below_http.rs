//! The entry below HTTP: `Bot::deliver` takes an event a socket feed received
//! (no signature, no body) down the webhook's path — dedupe, the strategy,
//! the run — and answers the verdict for the feed to acknowledge.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::Verdict;
use chat_runtime::{Bot, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;

/// Each run's event id and the ids it skipped.
type Runs = Arc<Mutex<Vec<(String, Vec<String>)>>>;

#[tokio::test(start_paused = true)]
async fn a_socket_fed_event_takes_the_webhooks_path() {
    let adapter = ScriptedAdapter::new("feed");
    let runs: Runs = Arc::default();
    let seen = Arc::clone(&runs);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
                .concurrency(Concurrency::queue()),
        )
        .on_new_mention(move |ctx: Ctx, e: Event| {
            let seen = Arc::clone(&seen);
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let skipped = ctx.skipped().iter().map(|s| s.id.to_string()).collect();
                seen.lock().unwrap().push((e.id.to_string(), skipped));
                ctx.thread()
                    .post(format!("echo: {}", e.text().unwrap_or("")))
                    .await?;
                Ok::<(), chat_runtime::BoxError>(())
            }
        })
        .build()
        .unwrap();
    let mention = |id: &str| adapter.mention("T1", "C1", "1", id, id);
    assert_eq!(bot.deliver("feed", mention("a")).await, Verdict::Accepted);
    // The feed redelivers it: a duplicate, as a webhook's retry is.
    assert_eq!(bot.deliver("feed", mention("a")).await, Verdict::Duplicate);
    // While `a` runs, two more queue; the newest runs with the other skipped.
    assert_eq!(bot.deliver("feed", mention("b")).await, Verdict::Accepted);
    assert_eq!(bot.deliver("feed", mention("c")).await, Verdict::Accepted);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert_eq!(
        *runs.lock().unwrap(),
        [
            ("a".to_owned(), vec![]),
            ("c".to_owned(), vec!["b".to_owned()])
        ]
    );
    assert_eq!(adapter.posts(), ["echo: a", "echo: c"]);
    assert!(matches!(
        bot.deliver("nobody", mention("d")).await,
        Verdict::Rejected(_)
    ));
}
