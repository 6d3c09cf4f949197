//! The portable thread handle on Telegram, against the fake Bot API and the
//! limits it enforces: Markdown as entities, long texts split, cards as
//! inline keyboards (callback data checked first), edits, reactions,
//! streams (drafts in private chats, edits elsewhere), files, rate limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chat_core::card::{Button, Card};
use chat_core::{
    AdapterError, Attachment, Downloads as _, FileUpload, MessageRef, Messaging as _,
    OutboundMessage, Platform, TenantId, ThreadRef,
};
use chat_runtime::{Bot, BoxError, Ctx, Event};
use chat_state_memory::MemoryState;
use chat_telegram::{TELEGRAM, TelegramAdapter};
use chat_testkit::FakeTelegram;

const TOKEN: &str = "777000:AAFakeTokenForTests";
const GROUP: i64 = -1_001_000;
const PRIVATE: i64 = 42;

fn adapter(fake: &FakeTelegram) -> TelegramAdapter {
    TelegramAdapter::builder()
        .bot_token(TOKEN)
        .secret_token("s")
        .api_url(fake.api_url())
        .build()
        .unwrap()
}

fn thread(chat: i64) -> ThreadRef {
    ThreadRef::new(TELEGRAM, "777000", chat.to_string(), "")
}

fn outside(fake: &FakeTelegram) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake))
        .on_new_mention(|_c: Ctx, _e: Event| async { Ok::<_, BoxError>(()) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn markdown_goes_as_entities_and_a_long_answer_in_parts() {
    let fake = FakeTelegram::start().await;
    let tg = adapter(&fake);
    tg.post(
        &thread(GROUP),
        &OutboundMessage::markdown("**Done**: see [the log](https://ci.example/7) and `make`"),
    )
    .await
    .unwrap();
    let sent = fake.messages(GROUP);
    assert_eq!(sent[0]["text"], "Done: see the log and make");
    let kinds: Vec<&str> = sent[0]["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["bold", "text_link", "code"]);
    // Characters a MarkdownV2 body would have to escape need nothing here.
    tg.post(
        &thread(GROUP),
        &OutboundMessage::markdown("1.5 - (a) [b] {c} #d!"),
    )
    .await
    .unwrap();
    assert_eq!(fake.messages(GROUP)[1]["text"], "1.5 - (a) [b] {c} #d!");
    // 9,000 characters: three messages, none over the limit (the fake
    // refuses one that is).
    let long = "word ".repeat(1_800);
    let sent = tg
        .post(&thread(GROUP), &OutboundMessage::text(long))
        .await
        .unwrap();
    let all = fake.messages(GROUP);
    assert_eq!(all.len(), 2 + 3);
    assert_eq!(sent.id, all[4]["message_id"].to_string());
}

#[tokio::test]
async fn a_card_is_text_and_an_inline_keyboard_checked_before_the_call() {
    let fake = FakeTelegram::start().await;
    let tg = adapter(&fake);
    let card = Card::new()
        .header("Deploy")
        .section("api is **live**")
        .actions([
            Button::new("again", "Again").value("1.2").into(),
            Button::link("Open", "https://e.x").into(),
        ]);
    tg.post(&thread(GROUP), &OutboundMessage::card(card))
        .await
        .unwrap();
    let m = &fake.messages(GROUP)[0];
    assert_eq!(m["text"], "Deploy\n\napi is live");
    assert_eq!(
        m["reply_markup"]["inline_keyboard"][0][1]["url"],
        "https://e.x"
    );
    let too_long = Card::new().actions([Button::new("go", "Go").value("v".repeat(70)).into()]);
    let refused = tg
        .post(&thread(GROUP), &OutboundMessage::card(too_long))
        .await;
    assert!(matches!(refused, Err(AdapterError::Invalid(_))));
    assert_eq!(
        fake.calls_of("sendMessage").len(),
        1,
        "refused before any call"
    );
}

#[tokio::test]
async fn edits_deletes_reactions() {
    let fake = FakeTelegram::start().await;
    let tg = adapter(&fake);
    let sent = tg.post(&thread(GROUP), &"first".into()).await.unwrap();
    tg.edit(&sent, &"second".into()).await.unwrap();
    // The same text again: Telegram says "not modified", which is success.
    tg.edit(&sent, &"second".into()).await.unwrap();
    assert_eq!(fake.messages(GROUP)[0]["text"], "second");
    tg.react(&sent, "eyes").await.unwrap();
    assert_eq!(fake.messages(GROUP)[0]["reaction"][0]["emoji"], "👀");
    assert!(matches!(
        tg.react(&sent, "white_check_mark").await,
        Err(AdapterError::Invalid(_))
    ));
    tg.delete(&sent).await.unwrap();
    assert!(fake.messages(GROUP).is_empty());
    let gone = MessageRef {
        thread: thread(GROUP),
        id: "999".into(),
    };
    assert!(matches!(
        tg.edit(&gone, &"x".into()).await,
        Err(AdapterError::Api { .. })
    ));
}

#[tokio::test]
async fn a_429_waits_its_retry_after() {
    let fake = FakeTelegram::start().await;
    let tg = adapter(&fake);
    fake.rate_limit("sendMessage", 1, 1);
    let started = tokio::time::Instant::now();
    tg.post(&thread(GROUP), &"hello".into()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    let calls = fake.calls_of("sendMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].status, 429);
    assert!(calls[1].at - calls[0].at >= Duration::from_secs(1));
}

async fn stream_into(bot: &Bot, chat: i64) {
    let t = bot.thread(&thread(chat)).unwrap();
    let pieces = futures_util::stream::iter(["Thinking", " about", " **it**"]);
    t.stream_every(pieces, Duration::from_millis(10))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_private_chat_streams_a_draft_then_sends_the_message() {
    let fake = FakeTelegram::start().await;
    let bot = outside(&fake);
    stream_into(&bot, PRIVATE).await;
    let drafts = fake.calls_of("sendMessageDraft");
    assert!(!drafts.is_empty());
    assert!(
        drafts
            .iter()
            .all(|d| d.body["draft_id"] == drafts[0].body["draft_id"])
    );
    let sent = fake.messages(PRIVATE);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["text"], "Thinking about it");
    // A group has no drafts: one message, edited.
    stream_into(&bot, GROUP).await;
    let sent = fake.messages(GROUP);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["text"], "Thinking about it");
    assert!(!fake.calls_of("editMessageText").is_empty());
}

#[tokio::test]
async fn files_up_and_down_status_users_and_dms() {
    let fake = FakeTelegram::start().await;
    let tg = adapter(&fake);
    let bot = outside(&fake);
    let t = bot.thread(&thread(GROUP)).unwrap();
    t.upload_files(vec![FileUpload::new("a.txt", "alpha")], Some("here"))
        .await
        .unwrap();
    let doc = &fake.calls_of("sendDocument")[0];
    assert_eq!(doc.body["document"]["filename"], "a.txt");
    assert_eq!(doc.body["caption"], "here");
    let id = fake.add_file("report.pdf", vec![1u8; 300]);
    let file = Attachment::new(id.clone(), "report.pdf", id);
    let tenant = TenantId::new("777000");
    let bytes = tg
        .download(&tenant, &file, 1000)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.len(), 300);
    assert!(matches!(
        tg.download(&tenant, &file, 100).await,
        Err(AdapterError::TooLarge { limit: 100 })
    ));
    t.set_status(Some("thinking")).await.unwrap();
    assert_eq!(fake.calls_of("sendChatAction")[0].body["action"], "typing");
    let user = t.user("42").await.unwrap();
    assert_eq!(user.handle.as_deref(), Some("ada"));
    assert_eq!(user.mention(), "@ada");
    let dm = bot.open_dm(TELEGRAM, "777000", "42").await.unwrap();
    dm.post("just you").await.unwrap();
    assert_eq!(fake.messages(42)[0]["text"], "just you");
    // What Telegram has not: history, ephemeral messages (a DM instead).
    assert!(matches!(
        t.history(10).await,
        Err(AdapterError::Unsupported(_))
    ));
    let private = t.post_ephemeral_or_dm("42", "psst").await.unwrap();
    assert!(matches!(private, chat_runtime::Private::DirectMessage(_)));
    let _ = Platform::SLACK;
}

#[tokio::test]
async fn a_stream_longer_than_a_message_goes_on_in_the_next() {
    let fake = FakeTelegram::start().await;
    let bot = outside(&fake);
    let t = bot.thread(&thread(GROUP)).unwrap();
    let words: Vec<String> = (0..1200).map(|i| format!("w{i:04} ")).collect();
    t.stream_every(futures_util::stream::iter(words), Duration::from_millis(1))
        .await
        .unwrap();
    let sent: Vec<String> = fake
        .messages(GROUP)
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent.len(), 2, "7,200 characters in two messages");
    assert!(sent.iter().all(|m| m.encode_utf16().count() <= 4096));
    let words_seen: Vec<&str> = sent.iter().flat_map(|m| m.split_whitespace()).collect();
    assert_eq!(words_seen.len(), 1200, "every word, once");
    assert_eq!(words_seen[0], "w0000");
    assert_eq!(words_seen[1199], "w1199");
}
