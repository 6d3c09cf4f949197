//! The runtime's channel-scope scenario with WhatsApp's scope, under paused
//! time: while a turn runs, the same user's next message is the same
//! conversation and is dropped under the drop strategy; another user's chat
//! with the number is a conversation of its own and runs at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_runtime::{
    Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, Outcome, OutcomeRecord, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::signed::WhatsAppDeliveries;
use chat_whatsapp::WhatsAppAdapter;

const APP_SECRET: &str = "scope-app-secret";

#[tokio::test(start_paused = true)]
async fn a_chat_is_one_conversation_and_another_users_chat_another() {
    let whatsapp = WhatsAppAdapter::builder()
        .app_secret(APP_SECRET)
        .verify_token("verify")
        .access_token("EAAG")
        .phone_number_id("106540352242922")
        // Nothing is called: the handler only works.
        .api_url("http://127.0.0.1:9/v21.0")
        .build()
        .unwrap();
    let outcomes: Arc<Mutex<HashMap<String, Outcome>>> = Arc::default();
    let recorded = Arc::clone(&outcomes);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(whatsapp)
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
                .concurrency(Concurrency::Drop),
        )
        .observer(move |r: &OutcomeRecord| {
            recorded
                .lock()
                .unwrap()
                .insert(r.event_id.to_string(), r.outcome);
        })
        .on_new_mention(|_c: Ctx, _e: Event| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    let ada = WhatsAppDeliveries::new(APP_SECRET);
    let bo = WhatsAppDeliveries::new(APP_SECRET).user("447700900123", "Bo");
    for d in [
        ada.text("wamid.A1", "first"),
        ada.text("wamid.A2", "second"),
        bo.text("wamid.B1", "hello"),
    ] {
        assert_eq!(bot.handle("whatsapp", d).await.status(), 200);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(bot.idle(Duration::from_secs(5)).await);
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes.get("wamid.A1"), Some(&Outcome::Ran));
    assert_eq!(outcomes.get("wamid.A2"), Some(&Outcome::Dropped));
    assert_eq!(outcomes.get("wamid.B1"), Some(&Outcome::Ran));
}
