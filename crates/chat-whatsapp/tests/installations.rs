//! Several phone numbers in one process: each number's access token sealed
//! in the state backend's KV (provisioned, not installed through OAuth),
//! and signed deliveries through the runtime answered with each number's
//! own token. The rules every platform keeps run as chat-testkit's
//! token-store suite.

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
use chat_testkit::install_mode::{Answer, InstallModeFixture};
use chat_testkit::signed::WhatsAppDeliveries;
use chat_testkit::{FakeWhatsApp, FlakyInstallations};
use chat_whatsapp::{WHATSAPP, WhatsAppAdapter};
use http::StatusCode;

const APP_SECRET: &str = "whatsapp-installations-app-secret";
const USER: &str = "16505551234";

struct World {
    state: Arc<MemoryState>,
    kv: KvInstallations,
    store: Arc<FlakyInstallations>,
    api: FakeWhatsApp,
    bot: Bot,
    outcomes: Arc<Mutex<Vec<OutcomeRecord>>>,
}

fn token_of(phone: &str) -> String {
    format!("EAAG-token-of-{phone}")
}

async fn world() -> World {
    let state = Arc::new(MemoryState::new());
    let keys = KeyRing::new(EncryptionKey::new("k1", &[5; 32]).unwrap());
    let kv = KvInstallations::new(state.clone(), keys);
    let store = Arc::new(FlakyInstallations::new(Arc::new(kv.clone())));
    let api = FakeWhatsApp::start().await;
    let whatsapp = WhatsAppAdapter::builder()
        .app_secret(APP_SECRET)
        .verify_token("verify")
        .installations(store.clone())
        .api_url(api.api_url())
        .build()
        .unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&outcomes);
    let bot = Bot::builder()
        .state_arc(state.clone())
        .adapter(whatsapp)
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
        bot,
        outcomes,
    }
}

#[async_trait]
impl InstallModeFixture for World {
    fn platform(&self) -> Platform {
        WHATSAPP
    }

    fn accounts(&self) -> [&'static str; 3] {
        ["1001", "1002", "1009"]
    }

    /// Provisioning a number: its token, sealed in the store.
    async fn install(&self, account: &str) -> StatusCode {
        let installation = Installation::new(WHATSAPP, account, Secret::new(token_of(account)));
        match self.store.put(&installation).await {
            Ok(()) => {
                self.api.user_wrote(account, USER);
                StatusCode::OK
            }
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn installations(&self) -> &FlakyInstallations {
        &self.store
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Option<Vec<u8>> {
        let key = self.kv.kv_key(WHATSAPP, tenant);
        self.state.get(&key).await.unwrap().map(|b| b.to_vec())
    }

    fn secrets(&self, account: &str) -> Vec<String> {
        vec![token_of(account)]
    }

    fn authorization(&self, account: &str) -> String {
        format!("Bearer {}", token_of(account))
    }

    async fn deliver_mention(&self, account: &str, id: &str) -> StatusCode {
        let wa = WhatsAppDeliveries::new(APP_SECRET).phone_number_id(account);
        self.bot
            .handle("whatsapp", wa.text(id, "hello"))
            .await
            .status()
    }

    async fn deliver_own_message(&self, _account: &str, _id: &str) -> StatusCode {
        unreachable!("WhatsApp delivers no message of the business number back to it")
    }

    async fn deliver_uninstall(&self, _account: &str, _id: &str) -> StatusCode {
        unreachable!("WhatsApp has no uninstall event")
    }

    async fn idle(&self) -> bool {
        self.bot.idle(Duration::from_secs(15)).await
    }

    fn answers(&self) -> Vec<Answer> {
        self.api
            .calls_of("messages")
            .into_iter()
            .filter(|c| c.status.is_success())
            .map(|c| Answer {
                text: c
                    .body
                    .pointer("/text/body")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                authorization: Some(format!("Bearer {}", c.token)),
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
        ThreadRef::new(WHATSAPP, tenant, USER, "")
    }

    fn build_with_credential_and_installations(&self) -> Result<(), String> {
        WhatsAppAdapter::builder()
            .app_secret(APP_SECRET)
            .verify_token("verify")
            .access_token("EAAG")
            .phone_number_id("1001")
            .installations(self.store.clone())
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn build_without_credentials(&self) -> Result<(), String> {
        WhatsAppAdapter::builder()
            .app_secret(APP_SECRET)
            .verify_token("verify")
            .build()
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

chat_testkit::token_store_conformance!(world());
