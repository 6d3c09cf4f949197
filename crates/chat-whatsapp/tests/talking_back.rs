//! The portable thread handle on WhatsApp, against the fake Cloud API and
//! the limits it enforces: WhatsApp's formatting, long texts split, cards as
//! reply buttons or lists (checked before the call), the 24-hour window as a
//! typed error and templates past it, no edits (a stream posted whole),
//! reactions, read receipts with typing, files, rate limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::card::{Button, Card, Select};
use chat_core::{
    AdapterError, Attachment, Downloads as _, FileUpload, Messaging as _, OutboundMessage,
    TenantId, ThreadRef,
};
use chat_runtime::{Bot, BoxError, Ctx, Event};
use chat_state_memory::MemoryState;
use chat_testkit::FakeWhatsApp;
use chat_testkit::signed::WhatsAppDeliveries;
use chat_whatsapp::{SERVICE_WINDOW, Status, Template, WHATSAPP, WhatsAppAdapter};
use serde_json::json;

const PHONE: &str = "106540352242922";
const USER: &str = "16505551234";

fn adapter(fake: &FakeWhatsApp) -> WhatsAppAdapter {
    WhatsAppAdapter::builder()
        .app_secret("s")
        .verify_token("v")
        .access_token("EAAG-test")
        .phone_number_id(PHONE)
        .api_url(fake.api_url())
        .build()
        .unwrap()
}

fn chat() -> ThreadRef {
    ThreadRef::new(WHATSAPP, PHONE, USER, "")
}

fn outside(fake: &FakeWhatsApp) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake))
        .on_new_mention(|_c: Ctx, _e: Event| async { Ok::<_, BoxError>(()) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn markdown_in_whatsapps_formatting_and_a_long_answer_in_parts() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let wa = adapter(&fake);
    wa.post(
        &chat(),
        &OutboundMessage::markdown("**Done**: see [the log](https://ci.example/7), ~~old~~"),
    )
    .await
    .unwrap();
    assert_eq!(
        fake.texts(PHONE, USER),
        ["*Done*: see the log (https://ci.example/7), ~old~"]
    );
    let long = "line of text\n".repeat(700);
    wa.post(&chat(), &OutboundMessage::text(long.clone()))
        .await
        .unwrap();
    let texts = fake.texts(PHONE, USER);
    assert_eq!(texts.len(), 1 + 3);
    assert!(texts[1..].iter().all(|t| t.chars().count() <= 4096));
    assert!(
        texts[1..].join("\n") == long.trim_end(),
        "the parts, cut at line ends, make up the text"
    );
}

#[tokio::test]
async fn cards_are_buttons_or_lists_checked_before_the_call() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let wa = adapter(&fake);
    let card = Card::new().header("Deploy api?").actions([
        Button::new("yes", "Ship it").value("api").into(),
        Button::new("no", "Not now").into(),
        Button::link("Logs", "https://ci.example/7").into(),
    ]);
    wa.post(&chat(), &OutboundMessage::card(card))
        .await
        .unwrap();
    let sent = &fake.messages(PHONE, USER)[0];
    assert_eq!(sent["type"], "interactive");
    assert_eq!(sent["interactive"]["type"], "button");
    let ids: Vec<&str> = sent["interactive"]["action"]["buttons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["reply"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["yes\u{1f}api", "no"]);
    assert!(
        sent["interactive"]["body"]["text"]
            .as_str()
            .unwrap()
            .contains("https://ci.example/7"),
        "a link button goes in the text"
    );
    let list = Card::new().section("Which region?").actions([(0..5)
        .fold(Select::new("region", "Choose"), |s, i| {
            s.option(format!("Region {i}"), format!("r{i}"))
        })
        .into()]);
    wa.post(&chat(), &OutboundMessage::card(list))
        .await
        .unwrap();
    assert_eq!(fake.messages(PHONE, USER)[1]["interactive"]["type"], "list");
    // Four buttons, a long title, eleven rows: refused before any call.
    let calls = fake.calls().len();
    let four = Card::new()
        .section("x")
        .actions((0..4).map(|i| Button::new(format!("b{i}"), "B").into()));
    let long = Card::new()
        .section("x")
        .actions([Button::new("b", "a title longer than twenty").into()]);
    let rows = Card::new().section("x").actions([(0..11)
        .fold(Select::new("s", "Pick"), |s, i| {
            s.option(format!("r{i}"), "v")
        })
        .into()]);
    for card in [four, long, rows] {
        let refused = wa.post(&chat(), &OutboundMessage::card(card)).await;
        assert!(
            matches!(refused, Err(AdapterError::Invalid(_))),
            "{refused:?}"
        );
    }
    assert_eq!(fake.calls().len(), calls);
}

#[tokio::test]
async fn past_the_window_a_reply_is_refused_or_reported_and_a_template_goes_through() {
    let fake = FakeWhatsApp::start().await;
    let refused: Arc<Mutex<Vec<AdapterError>>> = Arc::default();
    let statuses: Arc<Mutex<Vec<Status>>> = Arc::default();
    let (r, st) = (Arc::clone(&refused), Arc::clone(&statuses));
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake))
        .on_new_mention(move |ctx: Ctx, _e: Event| {
            let r = Arc::clone(&r);
            async move {
                if let Err(e) = ctx.thread().post("hello again").await {
                    r.lock().unwrap().push(e);
                }
                Ok::<_, BoxError>(())
            }
        })
        .on(chat_whatsapp::routes::status(), move |_c: Ctx, e: Event| {
            let st = Arc::clone(&st);
            async move {
                st.lock().unwrap().extend(Status::of(&e));
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();

    // Ada last wrote 25 hours ago: the reply is refused before any call.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let old = WhatsAppDeliveries::new("s").sent_at(now - 25 * 3600);
    bot.handle("whatsapp", old.text("wamid.OLD", "hi")).await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let errors = std::mem::take(&mut *refused.lock().unwrap());
    assert!(
        matches!(errors.as_slice(), [AdapterError::WindowClosed { window }] if *window == SERVICE_WINDOW),
        "{errors:?}"
    );
    assert!(
        errors[0].to_string().contains("86400s"),
        "says how long the window is"
    );
    assert!(fake.calls_of("messages").is_empty(), "no call was made");

    // An adapter that never heard the user sends; WhatsApp accepts the
    // message, then reports it failed in a status, which the bot sees.
    let wa = adapter(&fake);
    let sent = wa.post(&chat(), &"hello again".into()).await.unwrap();
    assert!(fake.texts(PHONE, USER).is_empty(), "nothing was delivered");
    let failed: Vec<serde_json::Value> = fake
        .failed_statuses()
        .into_iter()
        .map(|(_, status)| status)
        .collect();
    bot.handle("whatsapp", WhatsAppDeliveries::new("s").statuses(&failed))
        .await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let seen = statuses.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].message_id, sent.id);
    assert_eq!(seen[0].status, "failed");
    assert!(seen[0].window_closed());

    // A template goes through, window or not.
    let template = Template::new("order_update", "en_US").component(json!({
        "type": "body", "parameters": [{"type": "text", "text": "#1234"}],
    }));
    wa.send_template(&chat(), &template).await.unwrap();
    assert_eq!(
        fake.messages(PHONE, USER)[0]["template"]["name"],
        "order_update"
    );
    // Once the user writes, the window is open for 24 hours.
    fake.user_wrote(PHONE, USER);
    wa.post(&chat(), &"welcome back".into()).await.unwrap();
    assert_eq!(fake.texts(PHONE, USER), ["welcome back"]);
}

#[tokio::test]
async fn no_edits_so_a_stream_is_posted_whole() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let wa = adapter(&fake);
    let sent = wa.post(&chat(), &"draft".into()).await.unwrap();
    assert!(matches!(
        wa.edit(&sent, &"changed".into()).await,
        Err(AdapterError::Unsupported(_))
    ));
    assert!(matches!(
        wa.delete(&sent).await,
        Err(AdapterError::Unsupported(_))
    ));
    let bot = outside(&fake);
    let t = bot.thread(&chat()).unwrap();
    let pieces = futures_util::stream::iter(["Thinking", " about", " **it**"]);
    t.stream_every(pieces, Duration::from_millis(1))
        .await
        .unwrap();
    assert_eq!(fake.texts(PHONE, USER), ["draft", "Thinking about *it*"]);
}

#[tokio::test]
async fn reactions_and_a_rate_limit_waited_out() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let wa = adapter(&fake);
    let sent = wa.post(&chat(), &"hello".into()).await.unwrap();
    wa.react(&sent, "thumbsup").await.unwrap();
    wa.react(&sent, "🎉").await.unwrap();
    assert!(matches!(
        wa.react(&sent, "no such emoji").await,
        Err(AdapterError::Invalid(_))
    ));
    chat_core::Unreact::unreact(&wa, &sent, "🎉").await.unwrap();
    let reactions: Vec<String> = fake
        .messages(PHONE, USER)
        .iter()
        .filter(|m| m["type"] == "reaction")
        .map(|m| {
            assert_eq!(m["reaction"]["message_id"], sent.id.as_str());
            m["reaction"]["emoji"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(reactions, ["👍", "🎉", ""]);
    fake.rate_limit("messages", 2);
    wa.post(&chat(), &"after the limit".into()).await.unwrap();
    let statuses: Vec<u16> = fake
        .calls_of("messages")
        .iter()
        .rev()
        .take(3)
        .map(|c| c.status.as_u16())
        .collect();
    assert_eq!(statuses, [200, 400, 400]);
}

#[tokio::test]
async fn files_up_and_down_read_receipts_users_and_dms() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let bot = outside(&fake);
    let t = bot.thread(&chat()).unwrap();
    t.upload_files(
        vec![FileUpload::new("report.pdf", "%PDF-1.7")],
        Some("here"),
    )
    .await
    .unwrap();
    let upload = &fake.calls_of("media")[0];
    assert_eq!(upload.body["type"], "application/pdf");
    assert_eq!(upload.body["file"]["filename"], "report.pdf");
    let document = &fake.messages(PHONE, USER)[0];
    assert_eq!(document["document"]["filename"], "report.pdf");
    assert_eq!(document["document"]["caption"], "here");

    // A file the user sent, downloaded with the token, capped.
    let wa = adapter(&fake);
    let media = fake.add_media("photo.jpg", "image/jpeg", vec![7u8; 2048]);
    let file = Attachment::new(media.clone(), "photo.jpg", media);
    let tenant = TenantId::new(PHONE);
    let body = wa
        .download(&tenant, &file, 10_000)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(body.len(), 2048);
    assert_eq!(fake.calls_of("download")[0].token, "EAAG-test");
    assert!(matches!(
        wa.download(&tenant, &file, 100).await,
        Err(AdapterError::TooLarge { .. })
    ));

    // The chat's last message: marked read, with the typing indicator.
    let seen = WhatsAppDeliveries::new("s");
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake))
        .on_new_mention(|ctx: Ctx, _e: Event| async move {
            ctx.thread().set_status(Some("thinking")).await?;
            let who = ctx.thread().user(USER).await?;
            ctx.thread()
                .post(format!("hi {}", who.display_name))
                .await?;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    bot.handle("whatsapp", seen.text("wamid.IN1", "hello"))
        .await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert_eq!(
        fake.read_receipts(),
        [(PHONE.to_owned(), "wamid.IN1".to_owned(), true)]
    );
    assert_eq!(fake.texts(PHONE, USER).last().unwrap(), "hi Ada");

    // A DM is the user's chat with the number.
    let dm = bot.open_dm(WHATSAPP, PHONE, USER).await.unwrap();
    assert_eq!(dm.id(), &chat());
}
