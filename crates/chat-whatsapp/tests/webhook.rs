//! WhatsApp deliveries through a bot, against chat-testkit's fake Cloud API:
//! the handshake, the signature checked before anything is read, messages
//! deduplicated by `wamid`, batched deliveries, statuses observable but
//! never a handler run, three messages in one chat debounced into one
//! answer, button replies and reactions, several phone numbers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::{EventKind, Installation, InstallationStore, Reply, Secret};
use chat_runtime::{Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_testkit::FakeWhatsApp;
use chat_testkit::signed::WhatsAppDeliveries;
use chat_whatsapp::{STATUS_EVENT, WHATSAPP, WhatsAppAdapter};

const APP_SECRET: &str = "test-app-secret";
const VERIFY: &str = "verify-me";
const PHONE: &str = "106540352242922";
const USER: &str = "16505551234";

type Seen = Arc<Mutex<Vec<Event>>>;

fn adapter(fake: &FakeWhatsApp) -> WhatsAppAdapter {
    WhatsAppAdapter::builder()
        .app_secret(APP_SECRET)
        .verify_token(VERIFY)
        .access_token("EAAG-test")
        .phone_number_id(PHONE)
        .api_url(fake.api_url())
        .build()
        .unwrap()
}

fn keep(
    seen: &Seen,
) -> impl Fn(Ctx, Event) -> futures_util::future::BoxFuture<'static, Result<(), BoxError>>
+ Clone
+ Send
+ Sync
+ 'static {
    let seen = Arc::clone(seen);
    move |ctx: Ctx, e: Event| {
        let seen = Arc::clone(&seen);
        Box::pin(async move {
            match &e.kind {
                EventKind::Message(m) => {
                    ctx.thread().post(format!("echo: {}", m.text)).await?;
                }
                EventKind::Action(a) => {
                    // Meta reads nothing of the webhook's answer: the reply
                    // is a message in the chat.
                    ctx.reply(Reply::ephemeral(format!(
                        "again: {}",
                        a.value.clone().unwrap_or_default()
                    )));
                }
                _ => {}
            }
            seen.lock().unwrap().push(e);
            Ok(())
        })
    }
}

fn bot(fake: &FakeWhatsApp, options: RuntimeOptions, seen: &Seen) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake))
        .options(options)
        .on_new_mention(keep(seen))
        .on_subscribed_message(keep(seen))
        .on_any_action(keep(seen))
        .on_reaction(keep(seen))
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
async fn the_handshake_answers_its_challenge_only_with_the_verify_token() {
    let fake = FakeWhatsApp::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    let answer = bot
        .handle("whatsapp", wa.handshake(VERIFY, "1158201444"))
        .await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.body().as_ref(), b"1158201444");
    let wrong = bot
        .handle("whatsapp", wa.handshake("guess", "1158201444"))
        .await;
    assert_eq!(wrong.status(), 401);
    assert_ne!(wrong.body().as_ref(), b"1158201444");
    // Neither PUT nor DELETE is a WhatsApp webhook.
    let mut put = wa.text("wamid.1", "hi");
    *put.method_mut() = http::Method::PUT;
    assert_eq!(bot.handle("whatsapp", put).await.status(), 405);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_wrong_or_missing_signature_is_refused_before_the_body_is_read() {
    let fake = FakeWhatsApp::start().await;
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    let not_json = http::Request::post("/webhooks/whatsapp")
        .header("x-hub-signature-256", "sha256=00")
        .body(bytes::Bytes::from_static(b"{ not json"))
        .unwrap();
    assert_eq!(bot.handle("whatsapp", not_json).await.status(), 401);
    let body = wa.wrap(&[wa.value(
        &[wa.message_object("wamid.1", "text", &serde_json::json!({"body": "hi"}))],
        &[],
    )]);
    let forged = wa.signed_with(&body, "another-secret");
    assert_eq!(bot.handle("whatsapp", forged).await.status(), 401);
    let unsigned = http::Request::post("/webhooks/whatsapp")
        .body(bytes::Bytes::from(body.to_string()))
        .unwrap();
    assert_eq!(bot.handle("whatsapp", unsigned).await.status(), 401);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert!(seen.lock().unwrap().is_empty());
    assert!(fake.calls().is_empty(), "nothing was asked of WhatsApp");
}

#[tokio::test]
async fn a_redelivered_message_runs_once_and_a_batch_runs_each() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    for _ in 0..3 {
        assert_eq!(
            bot.handle("whatsapp", wa.text("wamid.A", "hello"))
                .await
                .status(),
            200
        );
    }
    // Another user's two messages in one delivery: two events.
    let bo = WhatsAppDeliveries::new(APP_SECRET).user("447700900123", "Bo");
    fake.user_wrote(PHONE, "447700900123");
    let batch = bo.messages(&[
        bo.message_object("wamid.B1", "text", &serde_json::json!({"body": "one"})),
        bo.message_object("wamid.B2", "text", &serde_json::json!({"body": "two"})),
    ]);
    assert_eq!(bot.handle("whatsapp", batch).await.status(), 200);
    assert!(bot.idle(Duration::from_secs(5)).await);
    assert_eq!(ids(&seen), ["wamid.A", "wamid.B1", "wamid.B2"]);
    let first = seen.lock().unwrap()[0].clone();
    assert_eq!(
        first.thread.to_string(),
        format!("whatsapp:{PHONE}:{USER}:")
    );
    let m = first.message().unwrap();
    assert!(m.is_dm);
    assert_eq!(m.author.name.as_deref(), Some("Ada"));
    assert_eq!(fake.texts(PHONE, USER), ["echo: hello"]);
    assert_eq!(
        fake.texts(PHONE, "447700900123"),
        ["echo: one", "echo: two"]
    );
}

#[tokio::test]
async fn statuses_are_observable_and_never_run_a_handler_otherwise() {
    let fake = FakeWhatsApp::start().await;
    let seen = Seen::default();
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    // Without a status route: acknowledged, nothing runs.
    let plain = bot(&fake, RuntimeOptions::default(), &seen);
    let answer = plain
        .handle("whatsapp", wa.status("wamid.SENT1", "delivered"))
        .await;
    assert_eq!(answer.status(), 200);
    assert!(plain.idle(Duration::from_secs(5)).await);
    assert!(seen.lock().unwrap().is_empty());
    // With one: the status is an event of its own.
    let statuses = Seen::default();
    let observed = Arc::clone(&statuses);
    let watching = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake))
        .on(chat_whatsapp::routes::status(), move |_c: Ctx, e: Event| {
            let observed = Arc::clone(&observed);
            async move {
                observed.lock().unwrap().push(e);
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    for status in ["sent", "delivered", "read", "read"] {
        watching
            .handle("whatsapp", wa.status("wamid.SENT1", status))
            .await;
    }
    assert!(watching.idle(Duration::from_secs(5)).await);
    let got: Vec<(String, String)> = statuses
        .lock()
        .unwrap()
        .iter()
        .map(|e| match &e.kind {
            EventKind::Other(o) => {
                assert_eq!(o.name, STATUS_EVENT);
                (
                    e.id.to_string(),
                    o.data["status"].as_str().unwrap().to_owned(),
                )
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            ("status:wamid.SENT1:sent".to_owned(), "sent".to_owned()),
            (
                "status:wamid.SENT1:delivered".to_owned(),
                "delivered".to_owned()
            ),
            ("status:wamid.SENT1:read".to_owned(), "read".to_owned()),
        ],
        "each state once"
    );
}

#[tokio::test]
async fn three_messages_in_the_debounce_window_give_one_answer() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let seen = Seen::default();
    let options = RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
        .concurrency(Concurrency::debounce());
    let bot = bot(&fake, options, &seen);
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    for (i, text) in ["hey", "quick question", "how do I reset my password?"]
        .iter()
        .enumerate()
    {
        let answer = bot
            .handle("whatsapp", wa.text(&format!("wamid.D{i}"), text))
            .await;
        assert_eq!(answer.status(), 200);
    }
    assert!(bot.idle(Duration::from_secs(10)).await);
    assert_eq!(ids(&seen), ["wamid.D2"], "the last message runs, once");
    assert_eq!(
        fake.texts(PHONE, USER),
        ["echo: how do I reset my password?"]
    );
}

#[tokio::test]
async fn button_replies_answer_in_the_chat_and_reactions_are_events() {
    let fake = FakeWhatsApp::start().await;
    fake.user_wrote(PHONE, USER);
    let seen = Seen::default();
    let bot = bot(&fake, RuntimeOptions::default(), &seen);
    let wa = WhatsAppDeliveries::new(APP_SECRET);
    let answer = bot
        .handle(
            "whatsapp",
            wa.button_reply("wamid.C1", "echo-again\u{1f}Hello", "Again"),
        )
        .await;
    assert_eq!(answer.status(), 200);
    assert!(answer.body().is_empty(), "Meta reads nothing of the answer");
    bot.handle(
        "whatsapp",
        wa.list_reply("wamid.C2", "pick\u{1f}b", "Option B"),
    )
    .await;
    bot.handle("whatsapp", wa.reaction("wamid.R1", "wamid.SENT", "👍"))
        .await;
    bot.handle("whatsapp", wa.reaction("wamid.R2", "wamid.SENT", ""))
        .await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let seen = seen.lock().unwrap().clone();
    let actions: Vec<(String, Option<String>)> = seen[..2]
        .iter()
        .map(|e| match &e.kind {
            EventKind::Action(a) => (a.action_id.clone(), a.value.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("echo-again".to_owned(), Some("Hello".to_owned())),
            ("pick".to_owned(), Some("b".to_owned()))
        ]
    );
    let reactions: Vec<(String, bool, String)> = seen[2..]
        .iter()
        .map(|e| match &e.kind {
            EventKind::Reaction(r) => (r.emoji.clone(), r.added, r.message_id.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reactions,
        [
            ("thumbs_up".to_owned(), true, "wamid.SENT".to_owned()),
            (String::new(), false, "wamid.SENT".to_owned())
        ]
    );
    assert_eq!(fake.texts(PHONE, USER), ["again: Hello", "again: b"]);
}

#[tokio::test]
async fn several_numbers_each_with_their_token() {
    let fake = FakeWhatsApp::start().await;
    let store: Arc<dyn InstallationStore> =
        Arc::new(chat_installations::MemoryInstallations::new());
    for (phone, token) in [("1001", "EAAG-one"), ("1002", "EAAG-two")] {
        store
            .put(&Installation::new(WHATSAPP, phone, Secret::new(token)))
            .await
            .unwrap();
        fake.user_wrote(phone, USER);
    }
    let whatsapp = WhatsAppAdapter::builder()
        .app_secret(APP_SECRET)
        .verify_token(VERIFY)
        .installations(Arc::clone(&store))
        .api_url(fake.api_url())
        .build()
        .unwrap();
    let seen = Seen::default();
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(whatsapp)
        .on_new_mention(keep(&seen))
        .build()
        .unwrap();
    for (i, phone) in ["1001", "1002", "1003"].iter().enumerate() {
        let wa = WhatsAppDeliveries::new(APP_SECRET).phone_number_id(*phone);
        let answer = bot
            .handle("whatsapp", wa.text(&format!("wamid.N{i}"), "hi"))
            .await;
        assert_eq!(answer.status(), 200);
    }
    assert!(bot.idle(Duration::from_secs(5)).await);
    let mut sends: Vec<(String, String)> = fake
        .calls_of("messages")
        .iter()
        .map(|c| (c.id.clone(), c.token.clone()))
        .collect();
    sends.sort();
    // 1003 is not installed: acknowledged, not answered.
    assert_eq!(
        sends,
        [
            ("1001".to_owned(), "EAAG-one".to_owned()),
            ("1002".to_owned(), "EAAG-two".to_owned())
        ]
    );
    // Single-number mode ignores deliveries for any other number.
    let single_seen = Seen::default();
    let single = bot_for_other_number(&fake, &single_seen);
    single
        .handle(
            "whatsapp",
            WhatsAppDeliveries::new(APP_SECRET)
                .phone_number_id("1002")
                .text("wamid.X", "hi"),
        )
        .await;
    assert!(single.idle(Duration::from_secs(5)).await);
    assert!(single_seen.lock().unwrap().is_empty());
}

fn bot_for_other_number(fake: &FakeWhatsApp, seen: &Seen) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake))
        .on_new_mention(keep(seen))
        .build()
        .unwrap()
}
