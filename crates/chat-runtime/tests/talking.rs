//! What a handler (or a program outside one) does through its `Thread`,
//! under paused time on the memory backend: a stream from a source that can
//! fail, healed at every intermediate render; the transcript an LLM client
//! takes; handles outside handlers, idempotent across replicas.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::{AdapterError, Platform, StateBackend, ThreadRef};
use chat_runtime::{
    Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, Role, RuntimeOptions, Turn,
};
use chat_state_memory::MemoryState;
use chat_testkit::{EventBuilder, ScriptedAdapter};

type Failed = Arc<Mutex<Vec<String>>>;

#[tokio::test(start_paused = true)]
async fn a_failing_source_ends_the_stream_with_what_arrived_healed() {
    let adapter = ScriptedAdapter::new("test");
    let failed = Failed::default();
    let seen = Arc::clone(&failed);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default().dispatch(DispatchOptions::deferred(Duration::from_secs(60))),
        )
        .on_new_mention(move |ctx: Ctx, _e: Event| {
            let seen = Arc::clone(&seen);
            async move {
                // An LLM client's token stream: pieces a second apart, then a
                // dropped connection.
                let pieces: Vec<Result<String, std::io::Error>> = vec![
                    Ok("Here is **the".to_owned()),
                    Ok(" plan**: run `cargo".to_owned()),
                    Ok(" test` and see [the log](https://ci.exa".to_owned()),
                    Err(std::io::Error::other("connection reset")),
                ];
                let paced = futures_util::StreamExt::then(
                    futures_util::stream::iter(pieces),
                    |p| async move {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        p
                    },
                );
                match ctx
                    .thread()
                    .stream_every(paced, Duration::from_millis(100))
                    .await
                {
                    Err(AdapterError::Source(e)) => seen.lock().unwrap().push(e.to_string()),
                    other => seen.lock().unwrap().push(format!("{other:?}")),
                }
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    let e = adapter.mention("T1", "C1", "1.0", "ev1", "go");
    bot.handle("test", adapter.request(&e)).await;
    assert!(bot.idle(Duration::from_secs(60)).await);
    assert_eq!(*failed.lock().unwrap(), ["connection reset"]);
    // Every render closed what the cut left open.
    assert_eq!(adapter.posts(), ["Here is **the**"]);
    let edits: Vec<String> = adapter.edits().into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        edits,
        [
            "Here is **the plan**: run `cargo`",
            "Here is **the plan**: run `cargo test` and see the log",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_finishes_ends_on_the_text_as_it_came() {
    let adapter = ScriptedAdapter::new("test");
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .on_new_mention(|ctx: Ctx, _e: Event| async move {
            let pieces = futures_util::stream::iter(["an *unfinished", " thought"]);
            ctx.thread().stream(pieces).await?;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    let e = adapter.mention("T1", "C1", "1.0", "ev1", "go");
    bot.handle("test", adapter.request(&e)).await;
    assert!(bot.idle(Duration::from_secs(60)).await);
    assert_eq!(adapter.posts(), ["an *unfinished*"]);
    let last = adapter.edits().pop().map(|(_, t)| t);
    // The author's stray star stays in the final text: only renders before
    // the end are healed.
    assert_eq!(last.as_deref(), Some("an *unfinished thought"));
}

#[tokio::test(start_paused = true)]
async fn a_transcript_folds_in_the_events_the_run_answers() {
    let adapter = ScriptedAdapter::new("test");
    let turns = Arc::new(Mutex::new(Vec::<Turn>::new()));
    let got = Arc::clone(&turns);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
                .concurrency(Concurrency::queue()),
        )
        .on_new_mention(move |ctx: Ctx, e: Event| {
            let got = Arc::clone(&got);
            async move {
                if e.text() == Some("first") {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    return Ok(());
                }
                *got.lock().unwrap() = ctx.transcript(10).await?;
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    for (id, text) in [("e1", "first"), ("e2", "second"), ("e3", "third")] {
        let e = adapter.mention("T1", "C1", "1.0", id, text);
        bot.handle("test", adapter.request(&e)).await;
    }
    assert!(bot.idle(Duration::from_secs(60)).await);
    let turns = turns.lock().unwrap().clone();
    // No history on this platform: the superseded event, then the run's own.
    let texts: Vec<&str> = turns.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(texts, ["second", "third"]);
    assert!(turns.iter().all(|t| t.role == Role::User));
}

fn replica(adapter: &ScriptedAdapter, state: Arc<dyn StateBackend>) -> Bot {
    Bot::builder()
        .state_arc(state)
        .adapter(adapter.clone())
        .on_new_mention(|_ctx: Ctx, _e: Event| async { Ok::<_, BoxError>(()) })
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn handles_outside_handlers_post_once_per_key() {
    let adapter = ScriptedAdapter::new("test");
    let state: Arc<dyn StateBackend> = Arc::new(MemoryState::new());
    let (one, two) = (
        replica(&adapter, Arc::clone(&state)),
        replica(&adapter, Arc::clone(&state)),
    );
    let thread = ThreadRef::new(ScriptedAdapter::PLATFORM, "T1", "C1", "");
    let (a, b) = (one.thread(&thread).unwrap(), two.thread(&thread).unwrap());
    let (x, y) = tokio::join!(a.post_once("job-1", "done"), b.post_once("job-1", "done"));
    assert_eq!(x.unwrap().id(), y.unwrap().id());
    assert_eq!(adapter.posts(), ["done"]);
    a.post("not keyed").await.unwrap();
    a.post("not keyed").await.unwrap();
    assert_eq!(adapter.posts().len(), 3);
    // A platform no adapter serves, and a capability this one lacks.
    let slack = ThreadRef::new(Platform::SLACK, "T1", "C1", "");
    assert!(matches!(
        one.thread(&slack),
        Err(AdapterError::Unsupported(_))
    ));
    assert!(matches!(
        one.open_dm(ScriptedAdapter::PLATFORM, "T1", "U1").await,
        Err(AdapterError::Unsupported("direct-messages"))
    ));
    assert!(matches!(
        a.post_ephemeral_or_dm("U1", "psst").await,
        Err(AdapterError::Unsupported(_))
    ));
    // Without history, a transcript is empty, not an error.
    assert!(a.transcript(10).await.unwrap().is_empty());
    let _ = EventBuilder::new(thread);
}
