//! The built echo-bot binary on Telegram and WhatsApp, driven over HTTP as
//! the platforms drive it: deliveries with Telegram's secret token and
//! Meta's `X-Hub-Signature-256` in, calls to a `FakeTelegram` at
//! `TELEGRAM_API_URL` and a `FakeWhatsApp` at `WHATSAPP_API_URL` out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use chat_testkit::{FakeTelegram, FakeWhatsApp};
use common::{PATIENCE, echo_bot, stop};
use examples::drive::{self, Delivery};
use serde_json::{Value, json};

/// Telegram's bot id, of [`drive::TELEGRAM_BOT_TOKEN`].
const BOT_ID: i64 = 777_000;

/// The texts of the messages the bot sent into Telegram chat `chat`, once
/// `count` `sendMessage` calls arrived.
async fn telegram_texts(fake: &FakeTelegram, chat: i64, count: usize) -> Vec<String> {
    fake.wait_for_calls("sendMessage", count, PATIENCE).await;
    fake.messages(chat)
        .iter()
        .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn telegram_messages_commands_cards_and_clicks_follow_the_echo_contract() {
    let fake = FakeTelegram::start().await;
    let bot = echo_bot("telegram-contract")
        .telegram(&fake.api_url())
        .spawn()
        .await
        .unwrap();
    let private = drive::telegram().private();
    let answer = bot
        .deliver(&private.message(1, 1, "hello there").into())
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(
        telegram_texts(&fake, private.chat_id(), 1).await,
        ["echo: hello there"]
    );

    // A slash command is answered as a reply to it.
    let answer = bot
        .deliver(&private.message(2, 2, "/echo status please").into())
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    let texts = telegram_texts(&fake, private.chat_id(), 2).await;
    assert_eq!(texts[1], "echo: status please");
    let reply = &fake.messages(private.chat_id())[1];
    assert_eq!(reply["reply_parameters"]["message_id"], 2);

    // In a group, a mention gets a card whose button echoes again.
    let group = drive::telegram();
    bot.deliver(&group.message(3, 3, "@fake_bot card: Deploy").into())
        .await
        .unwrap();
    fake.wait_for_calls("sendMessage", 3, PATIENCE).await;
    let card = fake.messages(group.chat_id())[0].clone();
    assert!(card["text"].as_str().unwrap().contains("Deploy"));
    let button = &card["reply_markup"]["inline_keyboard"][0][0];
    assert_eq!(button["text"], "Again");
    let data = button["callback_data"].as_str().unwrap();
    let answer = bot
        .deliver(
            &group
                .callback(4, "cbq-1", card["message_id"].as_i64().unwrap(), data)
                .into(),
        )
        .await
        .unwrap();
    let toast: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(
        toast,
        json!({ "method": "answerCallbackQuery", "callback_query_id": "cbq-1" })
    );
    let texts = telegram_texts(&fake, group.chat_id(), 4).await;
    assert_eq!(texts[1], "again: Deploy");

    // In a group, where nothing is shown to one member only, a command is
    // answered in the channel.
    bot.deliver(&group.message(5, 5, "/echo@fake_bot to all").into())
        .await
        .unwrap();
    let texts = telegram_texts(&fake, group.chat_id(), 5).await;
    assert_eq!(texts[2], "echo: to all");

    // stream: in a private chat goes as a draft, then one message.
    bot.deliver(&private.message(6, 6, "stream: one two three").into())
        .await
        .unwrap();
    let texts = telegram_texts(&fake, private.chat_id(), 6).await;
    assert_eq!(texts.last().unwrap(), "echo: one two three");
    assert!(!fake.calls_of("sendMessageDraft").is_empty());
    stop(bot).await;
}

#[tokio::test]
async fn telegram_refuses_a_wrong_secret_and_runs_a_redelivered_update_once() {
    let fake = FakeTelegram::start().await;
    let bot = echo_bot("telegram-refuse")
        .telegram(&fake.api_url())
        .spawn()
        .await
        .unwrap();
    let private = drive::telegram().private();
    let update =
        json!({ "update_id": 9, "message": private.message_object(9, "forged", &json!([])) });
    let forged = bot
        .deliver(&private.with_token(&update, "not-the-secret").into())
        .await
        .unwrap();
    assert_eq!(forged.status, 401);
    let not_json = Delivery::unsigned("/webhooks/telegram", "application/json", b"{ nope".to_vec())
        .header("x-telegram-bot-api-secret-token", "not-the-secret");
    assert_eq!(bot.deliver(&not_json).await.unwrap().status, 401);
    for _ in 0..3 {
        let answer = bot
            .deliver(&private.message(10, 10, "once").into())
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    bot.wait_for_outcomes("message-duplicate", 2, PATIENCE)
        .await
        .unwrap();
    let sends = fake.calls_of("sendMessage");
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].body["text"], "echo: once");
    assert_eq!(sends[0].token, drive::TELEGRAM_BOT_TOKEN);
    assert!(
        !fake
            .calls()
            .iter()
            .any(|c| c.body.to_string().contains("forged"))
    );
    stop(bot).await;
}

#[tokio::test]
async fn telegram_group_with_two_users_is_one_conversation() {
    let fake = FakeTelegram::start().await;
    fake.set_username(&BOT_ID.to_string(), "echo_bot");
    let bot = echo_bot("telegram-group")
        .telegram(&fake.api_url())
        .env("ECHO_DELAY_MS", "400")
        .spawn()
        .await
        .unwrap();
    let ada = drive::telegram();
    let bo = drive::telegram().user(43, "bo");
    // Ada mentions the bot; while it works, Bo and Ada write in the group:
    // the chat is one conversation, so their turns queue behind hers and are
    // answered together (queue strategy).
    bot.deliver(&ada.message(1, 1, "@echo_bot first").into())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    bot.deliver(&bo.message(2, 2, "from bo").into())
        .await
        .unwrap();
    bot.deliver(&ada.message(3, 3, "from ada").into())
        .await
        .unwrap();
    bot.wait_for_outcomes("handler-ran", 2, PATIENCE)
        .await
        .unwrap();
    let texts = telegram_texts(&fake, ada.chat_id(), 2).await;
    assert_eq!(texts, ["echo: first", "echo: from bo | from ada"]);
    stop(bot).await;
}

#[tokio::test]
async fn whatsapp_handshake_echo_card_and_stream() {
    let fake = FakeWhatsApp::start().await;
    let wa = drive::whatsapp();
    fake.user_wrote(wa.phone(), wa.user_id());
    let bot = echo_bot("whatsapp-contract")
        .whatsapp(&fake.api_url())
        .spawn()
        .await
        .unwrap();
    let handshake = bot
        .get(&format!(
            "/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token={}&hub.challenge=1158201444",
            drive::WHATSAPP_VERIFY_TOKEN
        ))
        .await
        .unwrap();
    assert_eq!(
        (handshake.status, handshake.body.as_str()),
        (200, "1158201444")
    );
    let refused = bot
        .get("/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1")
        .await
        .unwrap();
    assert_eq!(refused.status, 401);

    let answer = bot
        .deliver(&wa.text("wamid.E1", "hello").into())
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    fake.wait_for_calls("messages", 1, PATIENCE).await;
    assert_eq!(fake.texts(wa.phone(), wa.user_id()), ["echo: hello"]);

    bot.deliver(&wa.text("wamid.E2", "card: Deploy").into())
        .await
        .unwrap();
    fake.wait_for_calls("messages", 2, PATIENCE).await;
    let card = fake.messages(wa.phone(), wa.user_id())[1].clone();
    assert_eq!(card["interactive"]["type"], "button");
    let button = &card["interactive"]["action"]["buttons"][0]["reply"];
    assert_eq!(button["title"], "Again");
    let id = button["id"].as_str().unwrap();
    bot.deliver(&wa.button_reply("wamid.E3", id, "Again").into())
        .await
        .unwrap();
    bot.deliver(&wa.text("wamid.E4", "stream: one two three").into())
        .await
        .unwrap();
    fake.wait_for_calls("messages", 4, PATIENCE).await;
    let texts = fake.texts(wa.phone(), wa.user_id());
    assert_eq!(
        texts,
        ["echo: hello", "again: Deploy", "echo: one two three"],
        "a stream is posted whole: WhatsApp cannot edit"
    );
    stop(bot).await;
}

#[tokio::test]
async fn whatsapp_refuses_a_wrong_signature_and_runs_a_redelivered_message_once() {
    let fake = FakeWhatsApp::start().await;
    let wa = drive::whatsapp();
    fake.user_wrote(wa.phone(), wa.user_id());
    let bot = echo_bot("whatsapp-refuse")
        .whatsapp(&fake.api_url())
        .spawn()
        .await
        .unwrap();
    let body = wa.wrap(&[wa.value(
        &[wa.message_object("wamid.F", "text", &json!({ "body": "forged" }))],
        &[],
    )]);
    let forged = bot
        .deliver(&wa.signed_with(&body, "not-the-app-secret").into())
        .await
        .unwrap();
    assert_eq!(forged.status, 401);
    let not_json = Delivery::unsigned("/webhooks/whatsapp", "application/json", b"{ nope".to_vec())
        .header("x-hub-signature-256", "sha256=00");
    assert_eq!(bot.deliver(&not_json).await.unwrap().status, 401);
    for _ in 0..3 {
        let answer = bot
            .deliver(&wa.text("wamid.ONCE", "once").into())
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    // A status of the answer is acknowledged and never answered.
    bot.deliver(&wa.status("wamid.OUT1", "delivered").into())
        .await
        .unwrap();
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    bot.wait_for_outcomes("message-duplicate", 2, PATIENCE)
        .await
        .unwrap();
    bot.wait_for_outcomes("message-ignored", 1, PATIENCE)
        .await
        .unwrap();
    let sends = fake.calls_of("messages");
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].token, drive::WHATSAPP_ACCESS_TOKEN);
    assert_eq!(fake.texts(wa.phone(), wa.user_id()), ["echo: once"]);
    stop(bot).await;
}

#[tokio::test]
async fn three_whatsapp_messages_in_the_debounce_window_give_one_answer() {
    let fake = FakeWhatsApp::start().await;
    let wa = drive::whatsapp();
    fake.user_wrote(wa.phone(), wa.user_id());
    let bot = echo_bot("whatsapp-debounce")
        .whatsapp(&fake.api_url())
        .env("CHAT_CONCURRENCY", "debounce")
        .env("CHAT_DEBOUNCE_MS", "600")
        .spawn()
        .await
        .unwrap();
    for (i, text) in ["hey", "quick question", "how do I reset my password?"]
        .iter()
        .enumerate()
    {
        let answer = bot
            .deliver(&wa.text(&format!("wamid.D{i}"), text).into())
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    // Quiet for longer than the window: nothing else comes.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let texts = fake.texts(wa.phone(), wa.user_id());
    assert_eq!(texts.len(), 1, "one answer: {texts:?}");
    assert!(
        texts[0].starts_with("echo: ") && texts[0].ends_with("how do I reset my password?"),
        "{texts:?}"
    );
    stop(bot).await;
}
