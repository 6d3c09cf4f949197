//! Installation mode end to end: the OAuth `actor=app` install flow against a
//! fake Linear OAuth server, installations sealed in the state backend's KV,
//! token refresh before expiry, and signed deliveries through the runtime
//! answered with each organization's own token (the fake GraphQL API records
//! every request's `Authorization` header).
//!
//! The rules every platform keeps run as chat-testkit's installation-mode
//! suite; what is Linear's own (the agent's authorize link, token refresh,
//! client authentication, the viewer query) is tested below it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Installation, InstallationStore, KvStore, Platform, StateBackend, Subscriptions, TenantId,
    ThreadRef,
};
use chat_installations::{EncryptionKey, KeyRing, KvInstallations, MemoryInstallations};
use chat_linear::{
    BuildError, ClientAuth, LinearAdapter, LinearOAuth, LinearOAuthProvider, signature,
};
use chat_runtime::{
    Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, Outcome, OutcomeRecord, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::install_mode::{Answer, InstallModeFixture};
use chat_testkit::{FakeLinear, FakeLinearOAuth, FlakyInstallations, LinearOrganization};
use http::StatusCode;
use serde_json::{Value, json};

const WEBHOOK_SECRET: &str = "lin_wh_installations_secret";
const STATE_SECRET: &str = "a-state-secret-of-32-bytes-long!";
const REDIRECT: &str = "https://agent.example.com/linear/oauth/callback";
const ISSUE: &str = "7b0c1f5e-3a0d-4f43-9a55-1d2b3c4d5e6f";
const PATIENCE: Duration = Duration::from_secs(15);

// ------------------------------------------------------------ the world

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
    accounts: FakeLinearOAuth,
    api: FakeLinear,
    oauth: LinearOAuth,
    bot: Bot,
    outcomes: Outcomes,
}

fn provider(accounts: &FakeLinearOAuth, client_auth: ClientAuth) -> LinearOAuthProvider {
    LinearOAuthProvider::builder()
        .token_url(accounts.token_url())
        .graphql_url(accounts.graphql_url())
        .client_auth(client_auth)
        .build()
        .unwrap()
}

fn oauth_builder(
    accounts: &FakeLinearOAuth,
    store: Arc<dyn InstallationStore>,
) -> chat_linear::LinearOAuthBuilder {
    oauth_builder_with(accounts, store, ClientAuth::Body)
}

fn oauth_builder_with(
    accounts: &FakeLinearOAuth,
    store: Arc<dyn InstallationStore>,
    client_auth: ClientAuth,
) -> chat_linear::LinearOAuthBuilder {
    LinearOAuth::builder(provider(accounts, client_auth))
        .client_id(FakeLinearOAuth::CLIENT_ID)
        .client_secret(FakeLinearOAuth::CLIENT_SECRET)
        .state_secret(STATE_SECRET)
        .redirect_uri(REDIRECT)
        .authorize_url(accounts.authorize_url())
        .installations(store)
}

async fn world() -> World {
    let state = Arc::new(MemoryState::new());
    let keys = KeyRing::new(EncryptionKey::new("k1", &[3; 32]).unwrap());
    let kv = KvInstallations::new(state.clone(), keys);
    let store = Arc::new(FlakyInstallations::new(Arc::new(kv.clone())));
    let accounts = FakeLinearOAuth::start().await;
    for org in ["org-1", "org-2"] {
        accounts.add_organization(LinearOrganization::new(org));
    }
    let api = FakeLinear::start().await;
    let oauth = oauth_builder(&accounts, store.clone()).build().unwrap();
    let linear = LinearAdapter::builder()
        .signing_secret(WEBHOOK_SECRET)
        .installations(store.clone())
        .token_refresh(oauth.clone())
        .endpoint(api.endpoint())
        .build()
        .unwrap();
    let outcomes = Outcomes::default();
    let recorded = outcomes.clone();
    let bot = Bot::builder()
        .state_arc(state.clone())
        .adapter(linear)
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
                .concurrency(Concurrency::queue()),
        )
        .observer(move |r: &OutcomeRecord| recorded.0.lock().unwrap().push(r.clone()))
        .on(
            chat_linear::routes::agent_session_created(),
            |ctx: Ctx, event: Event| async move {
                ctx.thread()
                    .post(format!("answer for {}", event.tenant()))
                    .await?;
                Ok::<_, BoxError>(())
            },
        )
        .on_subscribed_message(|ctx: Ctx, event: Event| async move {
            ctx.thread()
                .post(format!("reply for {}", event.tenant()))
                .await?;
            Ok::<_, BoxError>(())
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
    }
}

// ------------------------------------------------------------ installing

fn cookie_of(response: &http::Response<Bytes>) -> String {
    let set = response
        .headers()
        .get(http::header::SET_COOKIE)
        .expect("the install sets its cookie")
        .to_str()
        .unwrap();
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

/// A browser's request for the install route.
fn install_request() -> http::request::Parts {
    http::Request::new(()).into_parts().0
}

fn callback_request(url: &str, cookie: Option<&str>) -> http::request::Parts {
    let path = url.strip_prefix("https://agent.example.com").unwrap_or(url);
    let mut request = http::Request::get(path);
    if let Some(c) = cookie {
        request = request.header(http::header::COOKIE, c);
    }
    request.body(()).unwrap().into_parts().0
}

async fn install_with(oauth: &LinearOAuth, accounts: &FakeLinearOAuth, org: &str) -> StatusCode {
    let start = oauth.install(&install_request());
    assert_eq!(start.status(), StatusCode::FOUND);
    let cookie = cookie_of(&start);
    let back = accounts.approve(&location_of(&start), org).unwrap();
    oauth
        .callback(&callback_request(&back, Some(&cookie)))
        .await
        .status()
}

async fn install(w: &World, org: &str) -> StatusCode {
    install_with(&w.oauth, &w.accounts, org).await
}

// ------------------------------------------------------------ deliveries

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn delivery(body: &Value, id: &str) -> http::Request<Bytes> {
    let bytes = serde_json::to_vec(body).unwrap();
    http::Request::post("/linear")
        .header("content-type", "application/json; charset=utf-8")
        .header("linear-delivery", id)
        .header(
            signature::SIGNATURE_HEADER,
            signature::sign(WEBHOOK_SECRET, &bytes),
        )
        .body(Bytes::from(bytes))
        .unwrap()
}

/// `AgentSessionEvent` `created` in `org` (the same session id in every org).
fn session_created(org: &str) -> Value {
    json!({
        "type": "AgentSessionEvent", "action": "created",
        "createdAt": "2025-10-09T08:53:20.000Z", "organizationId": org,
        "oauthClientId": FakeLinearOAuth::CLIENT_ID, "appUserId": format!("app-user-{org}"),
        "webhookId": "wh-1", "webhookTimestamp": now_ms(),
        "promptContext": "<issue identifier=\"ENG-42\"></issue>",
        "agentSession": {"id": "session-1", "appUserId": format!("app-user-{org}"),
            "organizationId": org, "issueId": ISSUE, "creatorId": "user-7",
            "status": "pending", "type": "commentThread",
            "createdAt": "2025-10-09T08:53:20.000Z", "updatedAt": "2025-10-09T08:53:20.000Z"}
    })
}

/// A `Comment` `create` in `org` by `user`, under `parent`.
fn comment(org: &str, id: &str, user: &str, parent: Option<&str>) -> Value {
    json!({
        "type": "Comment", "action": "create", "createdAt": "2025-10-09T08:53:20.000Z",
        "organizationId": org, "webhookId": "wh-1", "webhookTimestamp": now_ms(),
        "url": "https://linear.app/acme/issue/ENG-42#comment",
        "data": {"id": id, "body": "still flaky", "issueId": ISSUE, "userId": user,
                 "parentId": parent,
                 "createdAt": "2025-10-09T08:53:20.000Z", "updatedAt": "2025-10-09T08:53:20.000Z"}
    })
}

fn revoked(org: &str) -> Value {
    json!({
        "type": "OAuthApp", "action": "revoked", "createdAt": "2025-10-09T08:53:20.000Z",
        "organizationId": org, "oauthClientId": FakeLinearOAuth::CLIENT_ID,
        "webhookId": "wh-1", "webhookTimestamp": now_ms()
    })
}

async fn deliver(w: &World, body: &Value, id: &str) -> http::Response<Bytes> {
    w.bot.handle("linear", delivery(body, id)).await
}

// ------------------------------------------------------------ the suite

#[async_trait]
impl InstallModeFixture for World {
    fn platform(&self) -> Platform {
        Platform::LINEAR
    }

    fn accounts(&self) -> [&'static str; 3] {
        ["org-1", "org-2", "org-9"]
    }

    async fn install(&self, account: &str) -> StatusCode {
        install(self, account).await
    }

    fn installations(&self) -> &FlakyInstallations {
        &self.store
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Option<Vec<u8>> {
        let key = self.kv.kv_key(Platform::LINEAR, tenant);
        self.state.get(&key).await.unwrap().map(|b| b.to_vec())
    }

    fn secrets(&self, account: &str) -> Vec<String> {
        let mut secrets = self.accounts.access_tokens(account);
        secrets.extend(["lin_oat_".to_owned(), "lin_ort_".to_owned()]);
        secrets
    }

    fn authorization(&self, account: &str) -> String {
        format!(
            "Bearer {}",
            self.accounts.access_tokens(account).pop().unwrap()
        )
    }

    async fn deliver_mention(&self, account: &str, id: &str) -> StatusCode {
        deliver(self, &session_created(account), id).await.status()
    }

    async fn deliver_own_message(&self, account: &str, id: &str) -> StatusCode {
        // A comment by the agent's own app user in a subscribed thread, which
        // would answer it otherwise.
        let thread = InstallModeFixture::thread(self, account);
        self.state
            .subscribe(&thread, chat_core::DEFAULT_SUBSCRIPTION_TTL)
            .await
            .unwrap();
        let own = comment(account, "c-1", &format!("app-user-{account}"), None);
        deliver(self, &own, id).await.status()
    }

    async fn deliver_uninstall(&self, account: &str, id: &str) -> StatusCode {
        deliver(self, &revoked(account), id).await.status()
    }

    async fn idle(&self) -> bool {
        self.bot.idle(PATIENCE).await
    }

    fn answers(&self) -> Vec<Answer> {
        self.api
            .activities()
            .into_iter()
            .filter(|a| a.activity_type() == Some("response"))
            .map(|a| Answer {
                text: a.activity_body().unwrap_or_default().to_owned(),
                authorization: a.authorization,
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
        chat_linear::thread::comment_thread(tenant, ISSUE, "c-1")
    }

    fn build_with_credential_and_installations(&self) -> Result<(), String> {
        let both = LinearAdapter::builder()
            .signing_secret(WEBHOOK_SECRET)
            .access_token("lin_oauth")
            .installations(self.store.clone())
            .build();
        both.map(drop).map_err(|e| e.to_string())
    }

    fn build_without_credentials(&self) -> Result<(), String> {
        let neither = LinearAdapter::builder()
            .signing_secret(WEBHOOK_SECRET)
            .build();
        neither.map(drop).map_err(|e| e.to_string())
    }
}

chat_testkit::install_mode_conformance!(world());

// ------------------------------------------------------------ Linear's own

#[tokio::test]
async fn the_authorize_link_is_an_agents() {
    let w = world().await;
    let (url, _) = w.oauth.authorize().unwrap();
    let query = url.parse::<http::Uri>().unwrap();
    let q: std::collections::HashMap<String, String> =
        serde_urlencoded::from_str(query.query().unwrap()).unwrap();
    assert_eq!(q["actor"], "app");
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["scope"], "read,write,app:assignable,app:mentionable");
    assert_eq!(q["redirect_uri"], REDIRECT);

    assert_eq!(install(&w, "org-1").await, StatusCode::OK);
    let installation = w
        .store
        .get(Platform::LINEAR, &"org-1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        installation.bot_user_id.as_deref(),
        Some("app-user-org-1"),
        "the app user, from the viewer query"
    );
    assert_eq!(
        installation.app_id.as_deref(),
        Some(FakeLinearOAuth::CLIENT_ID)
    );
    assert!(installation.refresh_token.is_some());
    assert!(installation.expires_at_ms.is_some_and(|at| at > now_ms()));
    assert!(installation.scopes.contains(&"app:mentionable".to_owned()));
}

#[tokio::test]
async fn tokens_are_refreshed_once_before_they_expire() {
    let w = world().await;
    // Tokens of this install live 60 s; the flow refreshes 30 s ahead, and
    // the adapter's clock is 45 s ahead: the token is about to expire.
    w.accounts.set_token_lifetime(Duration::from_secs(60));
    let oauth = oauth_builder(&w.accounts, w.store.clone())
        .refresh_margin(Duration::from_secs(30))
        .build()
        .unwrap();
    assert_eq!(
        install_with(&oauth, &w.accounts, "org-1").await,
        StatusCode::OK
    );
    let first = w.accounts.access_tokens("org-1").pop().unwrap();
    w.accounts.set_token_lifetime(Duration::from_secs(3600));
    let linear = LinearAdapter::builder()
        .signing_secret(WEBHOOK_SECRET)
        .installations(w.store.clone())
        .token_refresh(oauth.clone())
        .endpoint(w.api.endpoint())
        .clock(|| SystemTime::now() + Duration::from_secs(45))
        .build()
        .unwrap()
        .for_organization("org-1");

    // Five calls at once: one refresh.
    let calls = (0..5).map(|n| {
        let linear = linear.clone();
        tokio::spawn(async move { linear.thought("session-1", &format!("step {n}")).await })
    });
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let refreshes: Vec<_> = w
        .accounts
        .token_requests()
        .into_iter()
        .filter(|r| r.grant_type == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    assert!(refreshes[0].error.is_none());
    let renewed = w.accounts.access_tokens("org-1").pop().unwrap();
    assert_ne!(renewed, first);
    for call in w.api.activities() {
        assert_eq!(
            call.authorization.as_deref(),
            Some(format!("Bearer {renewed}").as_str())
        );
    }
    let stored = w
        .store
        .get(Platform::LINEAR, &"org-1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.access_token.expose(), renewed);
    assert!(stored.expires_at_ms.unwrap() > now_ms() + 3_000_000);

    // The rotated refresh token is spent: refreshing with the old record is
    // refused, and names why.
    let old = Installation::new(Platform::LINEAR, "org-1", first.as_str().into()).with_refresh(
        Some(format!("lin_ort_org-1_{}", first.rsplit('_').next().unwrap()).into()),
        Some(0),
    );
    let err = oauth.refresh(&old).await.unwrap_err();
    assert_eq!(err.to_string(), "the platform refused: invalid_grant");
}

#[tokio::test]
async fn an_expired_token_whose_refresh_fails_is_an_error_not_a_silent_call() {
    let w = world().await;
    w.accounts.set_token_lifetime(Duration::from_secs(10));
    assert_eq!(install(&w, "org-1").await, StatusCode::OK);
    // Another party spends the refresh token (a replica that lost its write).
    let installation = w
        .store
        .get(Platform::LINEAR, &"org-1".into())
        .await
        .unwrap()
        .unwrap();
    let bystander = MemoryInstallations::new();
    oauth_builder(&w.accounts, Arc::new(bystander))
        .build()
        .unwrap()
        .refresh(&installation)
        .await
        .unwrap();
    let linear = LinearAdapter::builder()
        .signing_secret(WEBHOOK_SECRET)
        .installations(w.store.clone())
        .token_refresh(w.oauth.clone())
        .endpoint(w.api.endpoint())
        .clock(|| SystemTime::now() + Duration::from_secs(60))
        .build()
        .unwrap()
        .for_organization("org-1");
    assert!(linear.thought("session-1", "hello").await.is_err());
    assert!(w.api.calls().is_empty(), "no call with an expired token");
}

#[tokio::test]
async fn http_basic_client_authentication_is_available() {
    let w = world().await;
    let oauth = oauth_builder_with(&w.accounts, w.store.clone(), ClientAuth::Basic)
        .build()
        .unwrap();
    assert_eq!(
        install_with(&oauth, &w.accounts, "org-2").await,
        StatusCode::OK
    );
    assert_eq!(
        w.accounts.token_requests()[0].client_id,
        FakeLinearOAuth::CLIENT_ID
    );
}

#[tokio::test]
async fn token_refresh_and_the_oauth_builder_refuse_missing_settings() {
    let store: Arc<dyn InstallationStore> = Arc::new(MemoryInstallations::new());
    let accounts = FakeLinearOAuth::start().await;
    let oauth = oauth_builder(&accounts, Arc::clone(&store))
        .build()
        .unwrap();
    let refresh_without_store = LinearAdapter::builder()
        .signing_secret(WEBHOOK_SECRET)
        .access_token("lin_oauth")
        .token_refresh(oauth)
        .build();
    assert!(matches!(refresh_without_store, Err(BuildError::OAuth(_))));
    let admin = oauth_builder(&accounts, Arc::clone(&store))
        .scopes(["read", "admin"])
        .build();
    assert!(admin.unwrap_err().to_string().contains("admin"));
    let no_redirect = LinearOAuth::builder(provider(&accounts, ClientAuth::Body))
        .client_id("c")
        .client_secret("s")
        .state_secret(STATE_SECRET)
        .installations(store)
        .build();
    assert!(
        no_redirect
            .unwrap_err()
            .to_string()
            .contains("redirect_uri")
    );
}

// ------------------------------------------------------------ the schema

/// Linear's published schema, kept with the tests (`tests/data/README.md`).
fn schema_path() -> PathBuf {
    std::env::var_os("CHAT_LINEAR_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema.graphql")
        })
}

/// The `viewer` query the install sends validates against Linear's schema.
#[tokio::test]
async fn the_install_viewer_query_validates_against_the_schema() {
    let path = schema_path();
    let w = world().await;
    install(&w, "org-1").await;
    let requests = w.accounts.graphql_requests();
    assert_eq!(requests.len(), 1);
    let source = std::fs::read_to_string(&path).unwrap();
    let schema = apollo_compiler::Schema::parse_and_validate(source, "schema.graphql").unwrap();
    let query = requests[0]["query"].as_str().unwrap();
    let name = requests[0]["operationName"].as_str().unwrap();
    let doc =
        apollo_compiler::ExecutableDocument::parse_and_validate(&schema, query, "viewer.graphql")
            .unwrap_or_else(|e| panic!("{name} does not validate:\n{}", e.errors));
    assert!(doc.operations.get(Some(name)).is_ok());
}
