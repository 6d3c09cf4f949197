//! What a bot author reaches for on day one: values of the bot's own in
//! handlers (`BotBuilder::data` / `Ctx::data`), a state backend chosen at run
//! time (`Arc<dyn StateBackend>` wherever a backend goes), and handlers that
//! capture shared values or are types of their own.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chat_runtime::core::StateBackend;
use chat_runtime::{
    Bot, BoxError, Ctx, Dispatch, DispatchOptions, Event, Handler, HandlerFuture, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;

fn sync() -> RuntimeOptions {
    RuntimeOptions::default().dispatch(DispatchOptions::default().mode(Dispatch::Sync))
}

/// A connection pool stand-in: counts what handlers ask of it.
#[derive(Default)]
struct Pool {
    queries: AtomicUsize,
}

struct Greeting(&'static str);

async fn greet(ctx: Ctx, _event: Event) -> Result<(), BoxError> {
    let pool = ctx.data::<Arc<Pool>>().ok_or("no pool registered")?;
    pool.queries.fetch_add(1, Ordering::SeqCst);
    let greeting = ctx.data::<Greeting>().ok_or("no greeting registered")?;
    ctx.thread().post(greeting.0).await?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn handlers_read_the_bots_own_values_by_type() {
    let adapter = ScriptedAdapter::new("test");
    let pool = Arc::new(Pool::default());
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(sync())
        .data(Arc::clone(&pool))
        .data(Greeting("hello from the bot"))
        .on_new_mention(greet)
        .build()
        .unwrap();
    for id in ["a", "b"] {
        let event = adapter.mention("T1", "C1", id, id, "hi");
        assert_eq!(
            bot.handle("test", adapter.request(&event)).await.status(),
            200
        );
    }
    assert_eq!(
        adapter.posts(),
        ["hello from the bot", "hello from the bot"]
    );
    assert_eq!(pool.queries.load(Ordering::SeqCst), 2, "one pool, shared");
    bot.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_value_is_none_not_a_panic() {
    let adapter = ScriptedAdapter::new("test");
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(sync())
        .on_new_mention(greet)
        .build()
        .unwrap();
    let event = adapter.mention("T1", "C1", "1", "a", "hi");
    bot.handle("test", adapter.request(&event)).await;
    assert!(
        adapter.posts().is_empty(),
        "the handler failed with its own error"
    );
    bot.shutdown(Duration::from_secs(1)).await;
}

/// The backend picked at run time (Redis or memory, from configuration) is an
/// `Arc<dyn StateBackend>`; `.state(..)` takes it like any backend.
#[tokio::test(start_paused = true)]
async fn a_backend_chosen_at_run_time_is_a_backend() {
    let chosen: Arc<dyn StateBackend> = if std::env::var_os("NEVER_SET_IN_TESTS").is_some() {
        unreachable!()
    } else {
        Arc::new(MemoryState::new())
    };
    let adapter = ScriptedAdapter::new("test");
    let bot = Bot::builder()
        .state(Arc::clone(&chosen))
        .adapter(adapter.clone())
        .options(sync())
        .on_new_mention(|ctx: Ctx, _e: Event| async move {
            ctx.thread().post("ok").await?;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    let event = adapter.mention("T1", "C1", "1", "a", "hi");
    assert_eq!(
        bot.handle("test", adapter.request(&event)).await.status(),
        200
    );
    assert_eq!(adapter.posts(), ["ok"]);
    // The same backend: the event is marked in it.
    let again = bot.handle("test", adapter.request(&event)).await;
    assert_eq!(again.status(), 200);
    assert_eq!(adapter.posts(), ["ok"], "the retry is a duplicate");
    assert!(chosen.health().await.is_ok());
    bot.shutdown(Duration::from_secs(1)).await;
}

/// A closure clones what it captures before its `async move` block; a type of
/// its own implements `Handler`.
#[tokio::test(start_paused = true)]
async fn closures_and_handler_types_carry_their_own_state() {
    struct Counted {
        seen: Arc<AtomicUsize>,
    }

    impl Handler for Counted {
        fn call(&self, ctx: Ctx, _event: Event) -> HandlerFuture {
            let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move {
                ctx.thread().post(format!("struct {n}")).await?;
                Ok(())
            })
        }
    }

    let adapter = ScriptedAdapter::new("test");
    let prefix = Arc::new(String::from("closure"));
    let seen = Arc::new(AtomicUsize::new(0));
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(sync())
        .on_new_mention(move |ctx: Ctx, _e: Event| {
            let prefix = Arc::clone(&prefix);
            async move {
                ctx.thread().post(format!("{prefix} ran")).await?;
                Ok::<_, BoxError>(())
            }
        })
        .on_subscribed_message(Counted {
            seen: Arc::clone(&seen),
        })
        .build()
        .unwrap();
    let mention = adapter.mention("T1", "C1", "1", "a", "hi");
    bot.handle("test", adapter.request(&mention)).await;
    bot.state()
        .subscribe(
            &adapter.thread("T1", "C1", "1"),
            chat_runtime::core::DEFAULT_SUBSCRIPTION_TTL,
        )
        .await
        .unwrap();
    let follow_up = adapter.message("T1", "C1", "1", "b", "more");
    bot.handle("test", adapter.request(&follow_up)).await;
    assert_eq!(adapter.posts(), ["closure ran", "struct 1"]);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    bot.shutdown(Duration::from_secs(1)).await;
}
