//! The runtime's channel-scope scenario with Telegram's own scope function,
//! under paused time: while a turn runs, another message in the same group
//! (from another user) is the same conversation and is dropped under the
//! drop strategy; a forum topic, and another private chat, are
//! conversations of their own and run at once. An explicit `leases.scope`
//! overrides the adapter.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_runtime::{
    Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, LockScope, Outcome, OutcomeRecord,
    RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_telegram::TelegramAdapter;
use chat_testkit::signed::TelegramDeliveries;

const SECRET: &str = "scope-secret";
const BOT_ID: i64 = 777_000;

type Outcomes = Arc<Mutex<HashMap<String, Outcome>>>;

fn bot(scope: Option<LockScope>, outcomes: &Outcomes) -> Bot {
    let telegram = TelegramAdapter::builder()
        .bot_token("777000:AAScope")
        .secret_token(SECRET)
        .bot_username("echo_bot")
        // Nothing is called: the handler only works.
        .api_url("http://127.0.0.1:9")
        .build()
        .unwrap();
    let mut options = RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
        .concurrency(Concurrency::Drop);
    if let Some(scope) = scope {
        options.leases.scope = scope;
    }
    let recorded = Arc::clone(outcomes);
    let work = |_c: Ctx, _e: Event| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok::<_, BoxError>(())
    };
    Bot::builder()
        .state(MemoryState::new())
        .adapter(telegram)
        .options(options)
        .observer(move |r: &OutcomeRecord| {
            recorded
                .lock()
                .unwrap()
                .insert(r.event_id.to_string(), r.outcome);
        })
        .on_new_mention(work)
        .on_subscribed_message(work)
        .build()
        .unwrap()
}

async fn play(bot: &Bot, deliveries: Vec<http::Request<bytes::Bytes>>) {
    for d in deliveries {
        assert_eq!(bot.handle("telegram", d).await.status(), 200);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(bot.idle(Duration::from_secs(5)).await);
}

fn outcome(outcomes: &Outcomes, update: i64) -> Option<Outcome> {
    outcomes
        .lock()
        .unwrap()
        .get(&format!("update:{update}"))
        .copied()
}

#[tokio::test(start_paused = true)]
async fn a_group_is_one_conversation_whoever_writes() {
    let outcomes = Outcomes::default();
    let bot = bot(None, &outcomes);
    let ada = TelegramDeliveries::new(SECRET);
    let bo = TelegramDeliveries::new(SECRET).user(43, "bo");
    play(
        &bot,
        vec![
            ada.reply_to_bot(1, 1, 9, BOT_ID, "first"),
            bo.reply_to_bot(2, 2, 9, BOT_ID, "second"),
        ],
    )
    .await;
    assert_eq!(outcome(&outcomes, 1), Some(Outcome::Ran));
    assert_eq!(outcome(&outcomes, 2), Some(Outcome::Dropped));
}

#[tokio::test(start_paused = true)]
async fn forum_topics_and_private_chats_are_conversations_of_their_own() {
    let outcomes = Outcomes::default();
    let bot = bot(None, &outcomes);
    let forum = TelegramDeliveries::new(SECRET).chat(-1_002_000, "supergroup");
    let ada = TelegramDeliveries::new(SECRET).private();
    let bo = TelegramDeliveries::new(SECRET).user(43, "bo").private();
    play(
        &bot,
        vec![
            forum.topic_message(1, 1, 10, "@echo_bot first"),
            forum.topic_message(2, 2, 11, "@echo_bot second"),
            ada.message(3, 3, "hello"),
            bo.message(4, 4, "hello"),
        ],
    )
    .await;
    for update in 1..=4 {
        assert_eq!(outcome(&outcomes, update), Some(Outcome::Ran), "{update}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_explicit_channel_scope_overrides_the_topics() {
    let outcomes = Outcomes::default();
    let bot = bot(Some(LockScope::Channel), &outcomes);
    let forum = TelegramDeliveries::new(SECRET).chat(-1_002_000, "supergroup");
    play(
        &bot,
        vec![
            forum.topic_message(1, 1, 10, "@echo_bot first"),
            forum.topic_message(2, 2, 11, "@echo_bot second"),
        ],
    )
    .await;
    assert_eq!(outcome(&outcomes, 1), Some(Outcome::Ran));
    assert_eq!(outcome(&outcomes, 2), Some(Outcome::Dropped));
}
