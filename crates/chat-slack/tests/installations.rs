//! Installation mode end to end: the OAuth v2 install flow against a fake
//! Slack OAuth server, installations sealed in the state backend's KV, and
//! signed deliveries through the runtime answered with each workspace's own
//! token (the fake Web API records every call's `Authorization` header).
//!
//! The rules every platform keeps run as chat-testkit's installation-mode
//! suite; what is Slack's own (org-wide installs, revoked tokens, classic bot
//! messages, per-workspace caps) is tested below it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    InstallationStore, KvStore, Platform, StateBackend, Subscriptions, TenantId, ThreadRef,
};
use chat_installations::{EncryptionKey, KeyRing, KvInstallations, MemoryInstallations};
use chat_runtime::{
    AdmissionOptions, Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, Outcome,
    OutcomeRecord, RuntimeOptions,
};
use chat_slack::{BuildError, SlackAdapter, SlackOAuth, SlackOAuthProvider, signature};
use chat_state_memory::MemoryState;
use chat_testkit::install_mode::{Answer, InstallModeFixture};
use chat_testkit::{FakeSlack, FakeSlackOAuth, FlakyInstallations, SlackWorkspace};
use common::SECRET;
use http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

const STATE_SECRET: &str = "a-state-secret-of-32-bytes-long!";
const REDIRECT: &str = "https://bot.example.com/slack/oauth/callback";
const CHANNEL: &str = "C0SAME";
const TS: &str = "1700000000.000100";
const PATIENCE: Duration = Duration::from_secs(15);

fn token(team: &str) -> String {
    format!("xoxb-{team}-only-for-{team}")
}

// ------------------------------------------------------------ the world

/// Every outcome the bot records.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<OutcomeRecord>>>);

impl Outcomes {
    fn all(&self) -> Vec<(Outcome, &'static str)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.outcome, r.reason))
            .collect()
    }
}

struct World {
    state: Arc<MemoryState>,
    kv: KvInstallations,
    store: Arc<FlakyInstallations>,
    accounts: FakeSlackOAuth,
    api: FakeSlack,
    oauth: SlackOAuth,
    bot: Bot,
    outcomes: Outcomes,
    /// Closed: handlers wait for permits (the flooding test).
    gate: Arc<Semaphore>,
}

fn oauth_for(accounts: &FakeSlackOAuth, store: Arc<dyn InstallationStore>) -> SlackOAuth {
    let provider = SlackOAuthProvider::builder()
        .api_base_url(accounts.api_base_url())
        .build()
        .unwrap();
    SlackOAuth::builder(provider)
        .client_id(FakeSlackOAuth::CLIENT_ID)
        .client_secret(FakeSlackOAuth::CLIENT_SECRET)
        .state_secret(STATE_SECRET)
        .scopes(["app_mentions:read", "chat:write"])
        .redirect_uri(REDIRECT)
        .authorize_url(accounts.authorize_url())
        .installations(store)
        .build()
        .unwrap()
}

async fn world_with(options: RuntimeOptions, gated: bool) -> World {
    let state = Arc::new(MemoryState::new());
    let keys = KeyRing::new(EncryptionKey::new("k1", &[7; 32]).unwrap());
    let kv = KvInstallations::new(state.clone(), keys);
    let store = Arc::new(FlakyInstallations::new(Arc::new(kv.clone())));
    let accounts = FakeSlackOAuth::start().await;
    for team in ["T1", "T2"] {
        accounts.add_workspace(SlackWorkspace::new(team, &token(team)));
    }
    accounts.add_workspace(SlackWorkspace::new("T5", &token("E1")).in_enterprise("E1", true));
    let api = FakeSlack::start().await;
    let oauth = oauth_for(&accounts, store.clone());
    let slack = SlackAdapter::builder()
        .signing_secret(SECRET)
        .installations(store.clone())
        .api_base_url(api.base_url())
        .ignore_other_bots(false)
        .build()
        .unwrap();
    let outcomes = Outcomes::default();
    let recorded = outcomes.clone();
    let gate = Arc::new(Semaphore::new(if gated { 0 } else { 1_000 }));
    let handler_gate = Arc::clone(&gate);
    let bot = Bot::builder()
        .state_arc(state.clone())
        .adapter(slack)
        .options(options)
        .observer(move |r: &OutcomeRecord| recorded.0.lock().unwrap().push(r.clone()))
        .on_new_mention(move |ctx: Ctx, event: Event| {
            let gate = Arc::clone(&handler_gate);
            async move {
                let _permit = gate.acquire().await?;
                let text = event.text().unwrap_or_default().to_owned();
                ctx.thread()
                    .post(format!("hello {}: {text}", event.tenant()))
                    .await?;
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    World {
        state,
        kv,
        store,
        accounts,
        api,
        oauth,
        bot,
        outcomes,
        gate,
    }
}

async fn world() -> World {
    world_with(
        RuntimeOptions::default()
            .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
            .concurrency(Concurrency::queue()),
        false,
    )
    .await
}

// ------------------------------------------------------------ installing

/// The nonce the install answer's cookie carries.
fn cookie_of(response: &http::Response<Bytes>) -> String {
    let set = response
        .headers()
        .get(http::header::SET_COOKIE)
        .expect("the install sets its cookie")
        .to_str()
        .unwrap();
    assert!(set.contains("HttpOnly") && set.contains("Secure") && set.contains("SameSite=Lax"));
    set.split(';').next().unwrap().to_owned()
}

fn location_of(response: &http::Response<Bytes>) -> String {
    response
        .headers()
        .get(http::header::LOCATION)
        .expect("a redirect")
        .to_str()
        .unwrap()
        .to_owned()
}

/// The browser coming back to the callback at `url`, with `cookie`.
fn callback_request(url: &str, cookie: Option<&str>) -> http::request::Parts {
    let path = url.strip_prefix("https://bot.example.com").unwrap_or(url);
    let mut request = http::Request::get(path);
    if let Some(c) = cookie {
        request = request.header(http::header::COOKIE, format!("theme=dark; {c}"));
    }
    request.body(()).unwrap().into_parts().0
}

/// A browser's request for the install route.
fn install_request() -> http::request::Parts {
    http::Request::new(()).into_parts().0
}

/// Install → Slack's authorize page → the workspace approves → callback.
async fn install(w: &World, team: &str) -> http::Response<Bytes> {
    let start = w.oauth.install(&install_request());
    assert_eq!(start.status(), StatusCode::FOUND);
    let cookie = cookie_of(&start);
    let authorize = location_of(&start);
    assert!(
        authorize.starts_with(&w.accounts.authorize_url()),
        "{authorize}"
    );
    let back = w.accounts.approve(&authorize, team).unwrap();
    w.oauth
        .callback(&callback_request(&back, Some(&cookie)))
        .await
}

// ------------------------------------------------------------ deliveries

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A signed Events API delivery of `body`, timestamped now.
fn delivery(body: &Value) -> http::Request<Bytes> {
    let bytes = serde_json::to_vec(body).unwrap();
    let ts = now_secs().to_string();
    http::Request::post("/slack/events")
        .header("content-type", "application/json")
        .header(signature::TIMESTAMP_HEADER, &ts)
        .header(
            signature::SIGNATURE_HEADER,
            signature::sign(SECRET, &ts, &bytes),
        )
        .body(Bytes::from(bytes))
        .unwrap()
}

/// An `event_callback` for the installation of `team` (or, org-wide, of
/// `enterprise`), around `event`.
fn envelope(
    team: &str,
    enterprise: Option<&str>,
    event_id: &str,
    event: impl Into<Value>,
) -> Value {
    let event: Value = event.into();
    json!({
        "type": "event_callback",
        "team_id": team,
        "enterprise_id": enterprise,
        "api_app_id": "A0FAKEAPP",
        "event_id": event_id,
        "event_time": now_secs(),
        "authorizations": [{
            "enterprise_id": enterprise,
            "team_id": team,
            "user_id": format!("U{team}"),
            "is_bot": true,
            "is_enterprise_install": enterprise.is_some(),
        }],
        "event": event,
    })
}

fn mention(team: &str, event_id: &str, ts: &str) -> Value {
    envelope(
        team,
        None,
        event_id,
        json!({"type": "app_mention", "user": "UHUMAN", "channel": CHANNEL,
               "text": format!("<@U{team}> hi"), "ts": ts}),
    )
}

async fn deliver(w: &World, body: &Value) -> http::Response<Bytes> {
    w.bot.handle("slack", delivery(body)).await
}

// ------------------------------------------------------------ the suite

#[async_trait]
impl InstallModeFixture for World {
    fn platform(&self) -> Platform {
        Platform::SLACK
    }

    fn accounts(&self) -> [&'static str; 3] {
        ["T1", "T2", "T9"]
    }

    async fn install(&self, account: &str) -> StatusCode {
        let done = install(self, account).await;
        if done.status() == StatusCode::OK {
            let cleared = done.headers().get(http::header::SET_COOKIE).unwrap();
            assert!(cleared.to_str().unwrap().contains("Max-Age=0"));
        }
        done.status()
    }

    fn installations(&self) -> &FlakyInstallations {
        &self.store
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Option<Vec<u8>> {
        let key = self.kv.kv_key(Platform::SLACK, tenant);
        self.state.get(&key).await.unwrap().map(|b| b.to_vec())
    }

    fn secrets(&self, account: &str) -> Vec<String> {
        vec![token(account), "xoxb".to_owned()]
    }

    fn authorization(&self, account: &str) -> String {
        format!("Bearer {}", token(account))
    }

    async fn deliver_mention(&self, account: &str, id: &str) -> StatusCode {
        deliver(self, &mention(account, id, TS)).await.status()
    }

    async fn deliver_own_message(&self, account: &str, id: &str) -> StatusCode {
        // A classic `bot_message` names only the installation's bot id: it is
        // recognized when the installation is resolved (other bots are not
        // ignored in this world).
        let classic = envelope(
            account,
            None,
            id,
            json!({"type": "message", "subtype": "bot_message", "bot_id": format!("B{account}"),
                   "channel": CHANNEL, "text": format!("<@U{account}> classic echo"),
                   "ts": "1700000002.000002"}),
        );
        deliver(self, &classic).await.status()
    }

    async fn deliver_uninstall(&self, account: &str, id: &str) -> StatusCode {
        let gone = envelope(account, None, id, json!({"type": "app_uninstalled"}));
        deliver(self, &gone).await.status()
    }

    async fn idle(&self) -> bool {
        self.bot.idle(PATIENCE).await
    }

    fn answers(&self) -> Vec<Answer> {
        self.api
            .posts()
            .into_iter()
            .map(|p| {
                assert_eq!(p.body["thread_ts"], TS);
                Answer {
                    text: p.body["text"].as_str().unwrap_or_default().to_owned(),
                    authorization: p.authorization,
                }
            })
            .collect()
    }

    fn api_calls(&self) -> usize {
        self.api.calls().len()
    }

    fn outcomes(&self) -> Vec<(&'static str, &'static str)> {
        self.outcomes
            .all()
            .into_iter()
            .map(|(o, r)| (o.name(), r))
            .collect()
    }

    fn state(&self) -> Arc<dyn StateBackend> {
        self.state.clone()
    }

    fn thread(&self, tenant: &str) -> ThreadRef {
        ThreadRef::new(Platform::SLACK, tenant, "C1", TS)
    }

    fn build_with_credential_and_installations(&self) -> Result<(), String> {
        let both = SlackAdapter::builder()
            .signing_secret(SECRET)
            .bot_token("xoxb-1")
            .installations(self.store.clone())
            .build();
        both.map(drop).map_err(|e| e.to_string())
    }

    fn build_without_credentials(&self) -> Result<(), String> {
        let neither = SlackAdapter::builder().signing_secret(SECRET).build();
        neither.map(drop).map_err(|e| e.to_string())
    }
}

chat_testkit::install_mode_conformance!(world());

// ------------------------------------------------------------ Slack's own

#[tokio::test]
async fn an_org_wide_install_is_keyed_by_its_enterprise() {
    let w = world().await;
    assert_eq!(install(&w, "T5").await.status(), StatusCode::OK);
    let installation = w
        .store
        .get(Platform::SLACK, &"E1".into())
        .await
        .unwrap()
        .unwrap();
    assert!(installation.is_enterprise_install);
    assert_eq!(installation.enterprise_id.as_deref(), Some("E1"));
    assert!(
        w.store
            .get(Platform::SLACK, &"T5".into())
            .await
            .unwrap()
            .is_none()
    );

    // A delivery from any workspace of the org names the org-wide install.
    let body = envelope(
        "T77",
        Some("E1"),
        "EvOrg",
        json!({"type": "app_mention", "user": "UHUMAN", "channel": CHANNEL,
               "text": "<@UT5> hi", "ts": TS}),
    );
    assert_eq!(deliver(&w, &body).await.status(), StatusCode::OK);
    assert!(w.bot.idle(PATIENCE).await);
    let posts = w.api.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(
        posts[0].authorization.as_deref(),
        Some(format!("Bearer {}", token("E1")).as_str())
    );
}

#[tokio::test]
async fn revoked_bot_tokens_delete_the_installation_and_revoked_user_tokens_do_not() {
    let w = world().await;
    install(&w, "T1").await;
    let thread = ThreadRef::new(Platform::SLACK, "T1", "C1", TS);
    w.state
        .subscribe(&thread, Duration::from_secs(3600))
        .await
        .unwrap();

    // Revoked user tokens leave the bot installed.
    let users_only = envelope(
        "T1",
        None,
        "EvRevokeUsers",
        json!({"type": "tokens_revoked", "tokens": {"oauth": ["UINSTALLER"], "bot": []}}),
    );
    assert_eq!(deliver(&w, &users_only).await.status(), StatusCode::OK);
    let installed = |w: &World| {
        let store = w.store.clone();
        async move {
            store
                .get(Platform::SLACK, &"T1".into())
                .await
                .unwrap()
                .is_some()
        }
    };
    assert!(installed(&w).await);

    let bot_revoked = envelope(
        "T1",
        None,
        "EvRevokeBot",
        json!({"type": "tokens_revoked", "tokens": {"bot": ["UT1"]}}),
    );
    assert_eq!(deliver(&w, &bot_revoked).await.status(), StatusCode::OK);
    assert!(!installed(&w).await);
    assert!(w.bot.idle(PATIENCE).await);
    assert!(!w.state.is_subscribed(&thread).await.unwrap());
    assert_eq!(
        w.outcomes.all(),
        [
            (Outcome::Ignored, "user-tokens-revoked"),
            (Outcome::Ignored, "tokens-revoked"),
        ]
    );
}

#[tokio::test]
async fn the_bot_user_is_recognized_while_parsing_and_other_bots_are_answered() {
    let w = world().await;
    install(&w, "T1").await;
    // Other bots are not ignored in this world.
    let own_user = envelope(
        "T1",
        None,
        "EvOwn1",
        json!({"type": "message", "user": "UT1", "bot_id": "BT1", "channel": CHANNEL,
               "text": "<@UT1> echo", "ts": "1700000001.000001"}),
    );
    let other_bot = envelope(
        "T1",
        None,
        "EvOther",
        json!({"type": "message", "user": "UOTHERBOT", "bot_id": "BOTHER", "channel": CHANNEL,
               "text": "<@UT1> from another bot", "ts": "1700000003.000003"}),
    );
    for body in [&own_user, &other_bot] {
        assert_eq!(deliver(&w, body).await.status(), StatusCode::OK);
    }
    assert!(w.bot.idle(PATIENCE).await);
    // The bot user (authorizations[0]) is recognized while parsing.
    assert_eq!(
        w.outcomes.all(),
        [(Outcome::Ignored, "adapter"), (Outcome::Ran, "ok")]
    );
    let posts = w.api.posts();
    assert_eq!(posts.len(), 1, "only the other bot's mention is answered");
    assert!(
        posts[0].body["text"]
            .as_str()
            .unwrap()
            .contains("another bot")
    );
}

#[tokio::test]
async fn one_flooding_workspace_is_refused_at_its_cap_while_another_is_admitted() {
    let w = world_with(
        RuntimeOptions::default()
            .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
            .concurrency(Concurrency::queue())
            .admission(
                AdmissionOptions::default()
                    .max_detached(100)
                    .max_detached_per_tenant(2),
            ),
        true,
    )
    .await;
    install(&w, "T1").await;
    install(&w, "T2").await;

    // T1 floods three threads; its handlers hold their places.
    let mut statuses = Vec::new();
    for n in 1..=3 {
        let ts = format!("1700000000.00010{n}");
        statuses.push(
            deliver(&w, &mention("T1", &format!("EvFlood{n}"), &ts))
                .await
                .status(),
        );
    }
    assert_eq!(
        statuses,
        [
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::SERVICE_UNAVAILABLE
        ]
    );
    // T2 still gets in.
    let other = deliver(&w, &mention("T2", "EvCalm", TS)).await;
    assert_eq!(other.status(), StatusCode::OK);
    assert_eq!(w.bot.in_flight(), 3);

    w.gate.add_permits(10);
    assert!(w.bot.idle(PATIENCE).await);
    let posts = w.api.posts();
    assert_eq!(posts.len(), 3);
    assert_eq!(
        posts
            .iter()
            .filter(
                |p| p.authorization.as_deref() == Some(format!("Bearer {}", token("T2")).as_str())
            )
            .count(),
        1
    );
    assert!(
        w.outcomes
            .all()
            .contains(&(Outcome::Rejected, "at-capacity"))
    );
    // The refused delivery was not marked: Slack's retry runs.
    let retry = deliver(&w, &mention("T1", "EvFlood3", "1700000000.000103")).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert!(w.bot.idle(PATIENCE).await);
    assert_eq!(w.api.posts().len(), 4);
}

#[tokio::test]
async fn identity_settings_do_not_mix_with_installations() {
    let store: Arc<dyn InstallationStore> = Arc::new(MemoryInstallations::new());
    let identity = SlackAdapter::builder()
        .signing_secret(SECRET)
        .installations(Arc::clone(&store))
        .bot_user_id("U1")
        .build();
    assert!(matches!(
        identity,
        Err(BuildError::IdentityWithInstallations)
    ));

    let adapter = SlackAdapter::builder()
        .signing_secret(SECRET)
        .installations(Arc::clone(&store))
        .build()
        .unwrap();
    assert!(adapter.identity().await.is_err());
    assert!(adapter.client_for(&"T1".into()).await.is_err());
    assert!(!adapter.client().has_token());
}
