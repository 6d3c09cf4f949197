//! Telegram deliveries through a bot, against chat-testkit's fake Bot API:
//! the secret token checked before anything is read, updates deduplicated
//! by `update_id`, commands, mentions, topics and group conversations,
//! button clicks answered in the webhook response, reactions, several bots.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::{EventKind, Installation, InstallationStore, Secret, TenantId};
use chat_runtime::{Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_telegram::{TELEGRAM, TelegramAdapter};
use chat_testkit::FakeTelegram;
use chat_testkit::signed::TelegramDeliveries;
use serde_json::{Value, json};

const TOKEN: &str = "777000:AAFakeTokenForTests";
const BOT_ID: i64 = 777_000;
const SECRET: &str = "test-secret_token";

type Seen = Arc<Mutex<Vec<Event>>>;

fn adapter(fake: &FakeTelegram) -> TelegramAdapter {
    TelegramAdapter::builder()
        .bot_token(TOKEN)
        .secret_token(SECRET)
        .api_url(fake.api_url())
        .build()
        .unwrap()
}

fn bot(fake: &FakeTelegram, options: RuntimeOptions, seen: &Seen) -> Bot {
    let keep = |seen: &Seen| {
        let seen = Arc::clone(seen);
        move |ctx: Ctx, e: Event| {
            let seen = Arc::clone(&seen);
            async move {
                if e.text().is_some_and(|t| t.ends_with("slow")) {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                if let EventKind::SlashCommand(c) = &e.kind {
                    let text = format!("echo: {}", c.text);
                    if c.text == "secret" {
                        // Nothing in a group is shown to one member only.
                        let refused = ctx.reply_ephemeral(text).await;
                        assert!(
                            matches!(refused, Err(chat_core::AdapterError::Unsupported(_))),
                            "{refused:?}"
                        );
                    } else if c.text == "long" {
                        ctx.reply_in_channel("word ".repeat(1000)).await?;
                    } else {
                        ctx.reply_in_channel(text).await?;
                    }
                }
                if let EventKind::Action(a) = &e.kind {
                    ctx.thread()
                        .post(format!("again: {}", a.value.clone().unwrap_or_default()))
                        .await?;
                }
                seen.lock().unwrap().push(e);
                Ok::<_, BoxError>(())
            }
        }
    };
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake))
        .options(options)
        .on_new_mention(keep(seen))
        .on_subscribed_message(keep(seen))
        .on_any_slash_command(keep(seen))
        .on_any_action(keep(seen))
        .on_reaction(keep(seen))
        .on(chat_core::Route::message_edited(), keep(seen))
        .build()
        .unwrap()
}

fn ids(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|e| e.id.to_string())
        .collect()
}

#[tokio::test]
async fn a_wrong_or_missing_secret_is_refused_before_the_body_is_read() {
    let fake = FakeTelegram::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let tg = TelegramDeliveries::new(SECRET).private();
    let not_json = http::Request::post("/webhooks/telegram")
        .header("x-telegram-bot-api-secret-token", "guess")
        .body(bytes::Bytes::from_static(b"{ not json"))
        .unwrap();
    // A body that would not even parse: still 401, never 400.
    assert_eq!(bot.handle("telegram", not_json).await.status(), 401);
    let update = json!({ "update_id": 1, "message": tg.message_object(1, "hi", &json!([])) });
    assert_eq!(
        bot.handle("telegram", tg.with_token(&update, "guess"))
            .await
            .status(),
        401
    );
    let unsigned = http::Request::post("/webhooks/telegram")
        .body(bytes::Bytes::from(update.to_string()))
        .unwrap();
    assert_eq!(bot.handle("telegram", unsigned).await.status(), 401);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert!(seen.lock().unwrap().is_empty());
    assert!(fake.calls().is_empty(), "nothing was asked of Telegram");
}

#[tokio::test]
async fn a_redelivered_update_runs_once() {
    let fake = FakeTelegram::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let tg = TelegramDeliveries::new(SECRET).private();
    for _ in 0..3 {
        assert_eq!(
            bot.handle("telegram", tg.message(100, 5, "hello"))
                .await
                .status(),
            200
        );
    }
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert_eq!(ids(&seen), ["update:100"]);
    let e = seen.lock().unwrap()[0].clone();
    let m = e.message().unwrap();
    assert!(m.is_dm, "a private chat is a DM");
    assert_eq!(e.thread.to_string(), format!("telegram:{BOT_ID}:42:"));
}

#[tokio::test]
async fn mentions_replies_and_commands_in_a_group() {
    let fake = FakeTelegram::start().await;
    fake.set_username(&BOT_ID.to_string(), "echo_bot");
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let tg = TelegramDeliveries::new(SECRET);
    let sent = [
        // Not for the bot: a plain message, another bot's mention.
        tg.message(1, 1, "just chatting"),
        tg.message(2, 2, "@other_bot hi"),
        // For it: its @username (learned with getMe), a reply to its message.
        tg.message(3, 3, "@echo_bot hello there"),
        tg.reply_to_bot(4, 4, 99, BOT_ID, "thanks"),
        // Commands: bare, addressed to it, addressed to another bot.
        tg.message(5, 5, "/echo one"),
        tg.message(6, 6, "/echo@echo_bot two"),
        tg.message(7, 7, "/echo@other_bot three"),
    ];
    let mut answers = Vec::new();
    for request in sent {
        answers.push(bot.handle("telegram", request).await);
    }
    assert!(bot.idle(Duration::from_secs(5)).await);
    let mut got = ids(&seen);
    got.sort();
    assert_eq!(got, ["update:3", "update:4", "update:5", "update:6"]);
    let seen = seen.lock().unwrap().clone();
    let hello = seen.iter().find(|e| e.id.as_str() == "update:3").unwrap();
    let m = hello.message().unwrap();
    assert_eq!(m.text_after_mention(), "hello there");
    assert!(m.mentions[0].is_me);
    let EventKind::SlashCommand(c) = &seen
        .iter()
        .find(|e| e.id.as_str() == "update:6")
        .unwrap()
        .kind
    else {
        panic!("a command");
    };
    assert_eq!((c.command.as_str(), c.text.as_str()), ("/echo", "two"));
    // A command's reply is a call of its own (Telegram says nothing of a
    // call in the webhook answer), replying to the command.
    assert!(answers[4].body().is_empty());
    let sends = fake.calls_of("sendMessage");
    let one = sends
        .iter()
        .find(|c| c.body["text"] == "echo: one")
        .unwrap();
    assert_eq!(one.body["chat_id"], tg.chat_id());
    assert_eq!(one.body["reply_parameters"]["message_id"], 5);
    assert_eq!(
        fake.calls_of("getMe").len(),
        1,
        "the username is asked once"
    );
}

#[tokio::test]
async fn a_group_is_one_conversation_and_a_forum_topic_its_own() {
    let fake = FakeTelegram::start().await;
    let seen = Seen::default();
    let options = RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
        .concurrency(Concurrency::queue());
    let bot = bot(&fake, options, &seen);
    let ada = TelegramDeliveries::new(SECRET);
    let bo = TelegramDeliveries::new(SECRET).user(43, "bo");
    // Two users in one group: their turns queue on the chat.
    bot.handle("telegram", ada.reply_to_bot(1, 1, 9, BOT_ID, "slow"))
        .await;
    bot.handle("telegram", bo.reply_to_bot(2, 2, 9, BOT_ID, "second"))
        .await;
    bot.handle("telegram", ada.reply_to_bot(3, 3, 9, BOT_ID, "third"))
        .await;
    // Two forum topics of another chat run side by side.
    let forum = TelegramDeliveries::new(SECRET).chat(-1_002_000, "supergroup");
    bot.handle("telegram", forum.topic_message(4, 4, 10, "@fake_bot slow"))
        .await;
    bot.handle("telegram", forum.topic_message(5, 5, 11, "@fake_bot other"))
        .await;
    assert!(bot.idle(Duration::from_secs(10)).await);
    let order = ids(&seen);
    assert!(
        !order.contains(&"update:2".to_owned()),
        "superseded: {order:?}"
    );
    let at = |id: &str| order.iter().position(|x| x == id).unwrap();
    assert!(at("update:3") > at("update:1"));
    assert!(
        at("update:5") < at("update:4"),
        "topics do not wait: {order:?}"
    );
    let third = seen
        .lock()
        .unwrap()
        .iter()
        .find(|e| e.id.as_str() == "update:3")
        .cloned()
        .unwrap();
    assert_eq!(third.thread.thread, "", "a group's thread is the chat");
}

#[tokio::test]
async fn a_click_is_answered_in_the_response_and_reactions_are_events() {
    let fake = FakeTelegram::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let tg = TelegramDeliveries::new(SECRET);
    let data = chat_telegram::keyboard::callback_data("echo-again", Some("Hello")).unwrap();
    let answer = bot
        .handle("telegram", tg.callback(1, "cbq-1", 50, &data))
        .await;
    let body: Value = serde_json::from_slice(answer.body()).unwrap();
    assert_eq!(
        body,
        json!({ "method": "answerCallbackQuery", "callback_query_id": "cbq-1" })
    );
    bot.handle("telegram", tg.reaction(2, 50, &[], &["👀", "🔥"]))
        .await;
    bot.handle("telegram", tg.reaction(3, 50, &["👀", "🔥"], &["🔥"]))
        .await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let seen = seen.lock().unwrap().clone();
    let EventKind::Action(a) = &seen[0].kind else {
        panic!("an action")
    };
    assert_eq!(
        (a.action_id.as_str(), a.value.as_deref()),
        ("echo-again", Some("Hello"))
    );
    let sent = fake.messages(tg.chat_id());
    assert_eq!(sent[0]["text"], "again: Hello");
    let reactions: Vec<(String, bool)> = seen[1..]
        .iter()
        .map(|e| match &e.kind {
            EventKind::Reaction(r) => (r.emoji.clone(), r.added),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reactions,
        [
            ("eyes".to_owned(), true),
            ("fire".to_owned(), true),
            ("eyes".to_owned(), false)
        ]
    );
}

#[tokio::test]
async fn several_bots_each_with_their_token_and_secret() {
    let fake = FakeTelegram::start().await;
    let store: Arc<dyn InstallationStore> =
        Arc::new(chat_installations::MemoryInstallations::new());
    for token in ["111:AAone", "222:AAtwo"] {
        let bot_id = token.split(':').next().unwrap();
        store
            .put(&Installation::new(TELEGRAM, bot_id, Secret::new(token)).with_bot_user_id(bot_id))
            .await
            .unwrap();
    }
    let telegram = TelegramAdapter::builder()
        .installations(Arc::clone(&store))
        .webhook_secret("a webhook secret of some length")
        .api_url(fake.api_url())
        .build()
        .unwrap();
    let secrets: Vec<String> = ["111", "222", "333"]
        .iter()
        .map(|b| telegram.secret_token_for(b))
        .collect();
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(telegram)
        .on_new_mention(|ctx: Ctx, e: Event| async move {
            ctx.thread()
                .post(format!("echo: {}", e.text().unwrap_or_default()))
                .await?;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    for (i, secret) in secrets.iter().enumerate() {
        let tg = TelegramDeliveries::new(secret.clone()).private();
        let answer = bot
            .handle("telegram", tg.message(1, 1, &format!("to bot {i}")))
            .await;
        assert_eq!(answer.status(), 200);
    }
    // One bot's secret does not open another's deliveries.
    let forged = secrets[0].replacen("111", "222", 1);
    let tg = TelegramDeliveries::new(forged).private();
    assert_eq!(
        bot.handle("telegram", tg.message(9, 9, "x")).await.status(),
        401
    );
    assert!(bot.idle(Duration::from_secs(5)).await);
    let sends = fake.calls_of("sendMessage");
    let mut by_token: Vec<(String, String)> = sends
        .iter()
        .map(|c| (c.token.clone(), c.body["text"].as_str().unwrap().to_owned()))
        .collect();
    by_token.sort();
    // Bot 333 is not installed: acknowledged, not answered.
    assert_eq!(
        by_token,
        [
            ("111:AAone".to_owned(), "echo: to bot 0".to_owned()),
            ("222:AAtwo".to_owned(), "echo: to bot 1".to_owned())
        ]
    );
    let _ = TenantId::new("111");
}

#[tokio::test]
async fn a_long_reply_is_split_and_an_ephemeral_one_in_a_group_is_refused() {
    let fake = FakeTelegram::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let group = TelegramDeliveries::new(SECRET);
    bot.handle("telegram", group.message(1, 1, "/echo long"))
        .await;
    bot.handle("telegram", group.message(2, 2, "/echo secret"))
        .await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let sent: Vec<String> = fake
        .messages(group.chat_id())
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent.len(), 2, "5,000 characters in two messages");
    assert!(sent.iter().all(|t| t.encode_utf16().count() <= 4096));
    assert_eq!(sent.concat().split_whitespace().count(), 1000);
    assert!(
        !sent.iter().any(|t| t.contains("secret")),
        "nothing meant for one member was posted to the group"
    );
    assert!(
        ids(&seen).contains(&"update:2".to_owned()),
        "the handler saw Unsupported and went on"
    );
}

#[tokio::test]
async fn a_mention_that_cannot_be_told_ours_yet_is_sent_again() {
    let fake = FakeTelegram::start().await;
    fake.set_username(&BOT_ID.to_string(), "echo_bot");
    fake.fail("getMe", 401, "Unauthorized", 1);
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let group = TelegramDeliveries::new(SECRET);
    let first = bot
        .handle("telegram", group.message(1, 1, "/echo@other_bot hi"))
        .await;
    assert_eq!(first.status(), 500, "Telegram is told to send it again");
    let again = bot
        .handle("telegram", group.message(1, 1, "/echo@other_bot hi"))
        .await;
    assert_eq!(again.status(), 200);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert!(
        seen.lock().unwrap().is_empty(),
        "another bot's command did not run here"
    );
}
