//! Several bots in one process: each bot's token sealed in the state
//! backend's KV (provisioned, not installed through OAuth), each bot's
//! secret token derived from one webhook secret, and deliveries through the
//! runtime answered with each bot's own token. The rules every platform
//! keeps run as chat-testkit's token-store suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chat_core::{
    Installation, InstallationStore, KvStore, Platform, Secret, StateBackend, TenantId, ThreadRef,
};
use chat_installations::{EncryptionKey, KeyRing, KvInstallations};
use chat_runtime::{Bot, BoxError, Ctx, Event, OutcomeRecord};
use chat_state_memory::MemoryState;
use chat_telegram::{TELEGRAM, TelegramAdapter};
use chat_testkit::install_mode::{Answer, InstallModeFixture};
use chat_testkit::signed::TelegramDeliveries;
use chat_testkit::{FakeTelegram, FlakyInstallations};
use http::StatusCode;

const WEBHOOK_SECRET: &str = "telegram-installations-webhook-secret";
/// The user who writes to every bot, in a private chat.
const USER: &str = "42";

struct World {
    state: Arc<MemoryState>,
    kv: KvInstallations,
    store: Arc<FlakyInstallations>,
    api: FakeTelegram,
    telegram: Arc<TelegramAdapter>,
    bot: Bot,
    outcomes: Arc<Mutex<Vec<OutcomeRecord>>>,
}

fn token_of(bot: &str) -> String {
    format!("{bot}:AAtoken-of-{bot}")
}

fn adapter(store: Arc<FlakyInstallations>, api: &FakeTelegram) -> TelegramAdapter {
    TelegramAdapter::builder()
        .installations(store)
        .webhook_secret(WEBHOOK_SECRET)
        .api_url(api.api_url())
        .build()
        .unwrap()
}

async fn world() -> World {
    let state = Arc::new(MemoryState::new());
    let keys = KeyRing::new(EncryptionKey::new("k1", &[5; 32]).unwrap());
    let kv = KvInstallations::new(state.clone(), keys);
    let store = Arc::new(FlakyInstallations::new(Arc::new(kv.clone())));
    let api = FakeTelegram::start().await;
    let telegram = Arc::new(adapter(store.clone(), &api));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&outcomes);
    let bot = Bot::builder()
        .state_arc(state.clone())
        .adapter_arc(telegram.clone())
        .observer(move |r: &OutcomeRecord| recorded.lock().unwrap().push(r.clone()))
        .on_new_mention(|ctx: Ctx, event: Event| async move {
            ctx.thread()
                .post(format!("answer for {}", event.tenant()))
                .await?;
            Ok::<_, BoxError>(())
        })
        .build()
        .unwrap();
    World {
        state,
        kv,
        store,
        api,
        telegram,
        bot,
        outcomes,
    }
}

#[async_trait]
impl InstallModeFixture for World {
    fn platform(&self) -> Platform {
        TELEGRAM
    }

    fn accounts(&self) -> [&'static str; 3] {
        ["1001", "1002", "1009"]
    }

    /// Provisioning a bot: its token, sealed in the store.
    async fn install(&self, account: &str) -> StatusCode {
        let installation = Installation::new(TELEGRAM, account, Secret::new(token_of(account)));
        match self.store.put(&installation).await {
            Ok(()) => StatusCode::OK,
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn installations(&self) -> &FlakyInstallations {
        &self.store
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Option<Vec<u8>> {
        let key = self.kv.kv_key(TELEGRAM, tenant);
        self.state.get(&key).await.unwrap().map(|b| b.to_vec())
    }

    fn secrets(&self, account: &str) -> Vec<String> {
        vec![token_of(account)]
    }

    /// Telegram carries the token in the URL, not a header.
    fn authorization(&self, account: &str) -> String {
        token_of(account)
    }

    async fn deliver_mention(&self, account: &str, id: &str) -> StatusCode {
        // Each bot's deliveries carry its own derived secret token; the
        // delivery's identity is its update id, the same for a retry.
        let tg = TelegramDeliveries::new(self.telegram.secret_token_for(account)).private();
        let update = id
            .bytes()
            .fold(7_i64, |h, b| (h * 31 + i64::from(b)) % 1_000_000_007);
        self.bot
            .handle("telegram", tg.message(update, 1, "hello"))
            .await
            .status()
    }

    async fn deliver_own_message(&self, _account: &str, _id: &str) -> StatusCode {
        unreachable!("Telegram delivers no message of a bot back to it")
    }

    async fn deliver_uninstall(&self, _account: &str, _id: &str) -> StatusCode {
        unreachable!("a Telegram bot is not uninstalled by an event")
    }

    async fn idle(&self) -> bool {
        self.bot.idle(Duration::from_secs(15)).await
    }

    fn answers(&self) -> Vec<Answer> {
        self.api
            .calls_of("sendMessage")
            .into_iter()
            .filter(|c| c.ok)
            .map(|c| Answer {
                text: c.body["text"].as_str().unwrap_or_default().to_owned(),
                authorization: Some(c.token),
            })
            .collect()
    }

    fn api_calls(&self) -> usize {
        self.api.calls().len()
    }

    fn outcomes(&self) -> Vec<(&'static str, &'static str)> {
        self.outcomes
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.outcome.name(), r.reason))
            .collect()
    }

    fn state(&self) -> Arc<dyn StateBackend> {
        self.state.clone()
    }

    fn thread(&self, tenant: &str) -> ThreadRef {
        ThreadRef::new(TELEGRAM, tenant, USER, "")
    }

    fn build_with_credential_and_installations(&self) -> Result<(), String> {
        TelegramAdapter::builder()
            .bot_token("1001:AAx")
            .secret_token("secret")
            .installations(self.store.clone())
            .webhook_secret(WEBHOOK_SECRET)
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn build_without_credentials(&self) -> Result<(), String> {
        TelegramAdapter::builder()
            .webhook_secret(WEBHOOK_SECRET)
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

chat_testkit::token_store_conformance!(world());
