//! [`FakeSlackOAuth`] and [`FakeLinearOAuth`]: in-process fakes of the two
//! platforms' OAuth install endpoints, served over HTTP on `127.0.0.1`, for
//! testing install flows end to end without a browser.
//!
//! Each fake has workspaces (organizations) that can approve an install. A
//! test follows the install redirect to the fake's authorize URL and lets a
//! workspace approve it ([`FakeSlackOAuth::approve`], or a `GET` of the
//! authorize URL); the answer is the redirect back to the app's callback,
//! with a one-time `code` and the app's `state`. The token endpoint then
//! exchanges the code for that workspace's tokens, which the fake also knows
//! on its identity endpoint (Slack `auth.test`, Linear's GraphQL `viewer`).

use base64::Engine as _;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use serde_json::{Value, json};

use crate::server::{Server, serve};

/// One call of a fake's token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenRequest {
    /// `authorization_code` (Slack's code exchange has no `grant_type`; the
    /// fake records it as this), or `refresh_token`.
    pub grant_type: String,
    /// The client id sent (form field or HTTP Basic).
    pub client_id: String,
    /// The tenant whose tokens were issued, when the request succeeded.
    pub tenant: Option<String>,
    /// The error code answered, when it failed.
    pub error: Option<String>,
}

/// A Slack workspace (or Enterprise Grid organization) of [`FakeSlackOAuth`].
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlackWorkspace {
    /// The team id (`T…`).
    pub team_id: String,
    /// The organization id (`E…`), for Enterprise Grid.
    pub enterprise_id: Option<String>,
    /// Whether the install is org-wide (the tenant is then the enterprise).
    pub is_enterprise_install: bool,
    /// The bot token its installs get.
    pub bot_token: String,
    /// The bot user (`U…`).
    pub bot_user_id: String,
    /// The bot id (`B…`).
    pub bot_id: String,
    /// A refresh token and lifetime in seconds, for token rotation.
    pub rotation: Option<(String, u64)>,
}

impl fmt::Debug for SlackWorkspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackWorkspace")
            .field("team_id", &self.team_id)
            .field("enterprise_id", &self.enterprise_id)
            .field("bot_user_id", &self.bot_user_id)
            .field("bot_id", &self.bot_id)
            .finish_non_exhaustive()
    }
}

impl SlackWorkspace {
    /// A workspace `team_id` whose installs get `bot_token`, with bot user
    /// `U{team_id}` and bot id `B{team_id}`.
    pub fn new(team_id: &str, bot_token: &str) -> Self {
        Self {
            team_id: team_id.to_owned(),
            enterprise_id: None,
            is_enterprise_install: false,
            bot_token: bot_token.to_owned(),
            bot_user_id: format!("U{team_id}"),
            bot_id: format!("B{team_id}"),
            rotation: None,
        }
    }

    /// The same workspace in Enterprise Grid organization `enterprise_id`,
    /// installed org-wide when `org_wide`.
    #[must_use]
    pub fn in_enterprise(mut self, enterprise_id: &str, org_wide: bool) -> Self {
        self.enterprise_id = Some(enterprise_id.to_owned());
        self.is_enterprise_install = org_wide;
        self
    }

    /// The tenant its installs are keyed by.
    pub fn tenant(&self) -> &str {
        match (&self.enterprise_id, self.is_enterprise_install) {
            (Some(e), true) => e,
            _ => &self.team_id,
        }
    }
}

#[derive(Default)]
struct SlackRecord {
    workspaces: Vec<SlackWorkspace>,
    /// code → (team id, redirect_uri, used)
    codes: HashMap<String, (String, Option<String>, bool)>,
    requests: Vec<TokenRequest>,
    issued: u64,
}

/// A fake of Slack's OAuth v2: the authorize page
/// (`GET {base}/oauth/v2/authorize`, which approves at once for the
/// workspace named by its `team` parameter, else the first one),
/// `POST {base}/api/oauth.v2.access`, and `POST {base}/api/auth.test` for
/// the tokens it issued.
///
/// The code exchange checks what Slack checks: the client id and secret
/// ([`CLIENT_ID`](Self::CLIENT_ID), [`CLIENT_SECRET`](Self::CLIENT_SECRET)),
/// a known, unused code, and the same `redirect_uri` as the authorize
/// request; failures answer `{"ok": false, "error": …}` with Slack's codes.
///
/// ```
/// use chat_testkit::{FakeSlackOAuth, SlackWorkspace};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let fake = FakeSlackOAuth::start().await;
/// fake.add_workspace(SlackWorkspace::new("T1", "xoxb-T1"));
/// let authorize = format!(
///     "{}?client_id={}&scope=chat:write&state=s1&redirect_uri=https%3A%2F%2Fbot%2Fcb",
///     fake.authorize_url(), FakeSlackOAuth::CLIENT_ID,
/// );
/// let back = fake.approve(&authorize, "T1")?;
/// assert!(back.starts_with("https://bot/cb?code="));
/// assert!(back.ends_with("&state=s1"));
/// # Ok::<_, Box<dyn std::error::Error>>(()) })?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FakeSlackOAuth {
    record: Arc<Mutex<SlackRecord>>,
    base: String,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeSlackOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeSlackOAuth")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeSlackOAuth {
    /// The client id the fake app has.
    pub const CLIENT_ID: &'static str = "1111.2222";
    /// The client secret the fake app has.
    pub const CLIENT_SECRET: &'static str = "fake-slack-client-secret";

    /// Starts the server on `127.0.0.1` and a free port.
    ///
    /// # Panics
    ///
    /// When no local port can be bound (the test cannot run).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeSlackOAuth: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server, or says why it could not.
    pub async fn try_start() -> io::Result<Self> {
        let record = Arc::new(Mutex::new(SlackRecord::default()));
        let router = Router::new()
            .route("/oauth/v2/authorize", get(slack_authorize))
            .route("/api/oauth.v2.access", post(slack_access))
            .route("/api/auth.test", post(slack_auth_test))
            .with_state(Arc::clone(&record));
        let (addr, server) = serve(router).await?;
        Ok(Self {
            record,
            base: format!("http://{addr}"),
            _server: Arc::new(server),
        })
    }

    /// Adds a workspace that can approve installs.
    pub fn add_workspace(&self, workspace: SlackWorkspace) {
        lock(&self.record).workspaces.push(workspace);
    }

    /// The authorize page, for `SlackOAuthBuilder::authorize_url`.
    pub fn authorize_url(&self) -> String {
        format!("{}/oauth/v2/authorize", self.base)
    }

    /// The Web API base, for `SlackOAuthBuilder::api_base_url`.
    pub fn api_base_url(&self) -> String {
        format!("{}/api", self.base)
    }

    /// What a user of workspace `team_id` clicking "Allow" on `authorize_url`
    /// leads to: the callback URL with a fresh code and the request's
    /// `state`. An `Err` says why Slack would have shown an error page
    /// instead (wrong client id, no scope, no state, no redirect URI, an
    /// unknown workspace).
    pub fn approve(&self, authorize_url: &str, team_id: &str) -> Result<String, String> {
        approve_slack(&self.record, authorize_url, Some(team_id))
    }

    /// What the user clicking "Cancel" leads to: the callback URL with
    /// `error=access_denied` and the `state`.
    pub fn deny(&self, authorize_url: &str) -> Result<String, String> {
        let query = query_of(authorize_url);
        let redirect = field(&query, "redirect_uri").ok_or("no redirect_uri")?;
        let state = field(&query, "state").unwrap_or_default();
        Ok(with_query(
            &redirect,
            &[("error", "access_denied"), ("state", &state)],
        ))
    }

    /// Every call of `oauth.v2.access` so far.
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        lock(&self.record).requests.clone()
    }
}

fn approve_slack(
    record: &Mutex<SlackRecord>,
    authorize_url: &str,
    team: Option<&str>,
) -> Result<String, String> {
    let query = query_of(authorize_url);
    if field(&query, "client_id").as_deref() != Some(FakeSlackOAuth::CLIENT_ID) {
        return Err("invalid_client_id".into());
    }
    if field(&query, "scope").is_none_or(|s| s.is_empty()) {
        return Err("invalid_scope".into());
    }
    let state = field(&query, "state").ok_or("no state")?;
    let redirect = field(&query, "redirect_uri").ok_or("no redirect_uri")?;
    let mut r = lock(record);
    let team = team
        .map(str::to_owned)
        .or_else(|| field(&query, "team"))
        .or_else(|| r.workspaces.first().map(|w| w.team_id.clone()))
        .ok_or("no workspace")?;
    if !r.workspaces.iter().any(|w| w.team_id == team) {
        return Err(format!("unknown workspace {team}"));
    }
    r.issued += 1;
    let code = format!("slack-code-{}-{}", r.issued, team);
    r.codes
        .insert(code.clone(), (team, Some(redirect.clone()), false));
    Ok(with_query(&redirect, &[("code", &code), ("state", &state)]))
}

async fn slack_authorize(State(record): State<Arc<Mutex<SlackRecord>>>, uri: Uri) -> Response {
    match approve_slack(&record, &uri.to_string(), None) {
        Ok(location) => redirect(&location),
        Err(e) => plain(StatusCode::BAD_REQUEST, e),
    }
}

async fn slack_access(
    State(record): State<Arc<Mutex<SlackRecord>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = parse_pairs(&String::from_utf8_lossy(&body));
    let client_id = field(&form, "client_id").unwrap_or_default();
    let mut r = lock(&record);
    let fail = |r: &mut SlackRecord, code: &str| {
        r.requests.push(TokenRequest {
            grant_type: "authorization_code".into(),
            client_id: client_id.clone(),
            tenant: None,
            error: Some(code.to_owned()),
        });
        json_response(&json!({ "ok": false, "error": code }))
    };
    if headers.contains_key(AUTHORIZATION) {
        // Client credentials in a header are fine; a bearer token is not.
        if header(&headers, AUTHORIZATION).is_some_and(|v| v.starts_with("Bearer")) {
            return fail(&mut r, "invalid_auth");
        }
    }
    if client_id != FakeSlackOAuth::CLIENT_ID {
        return fail(&mut r, "invalid_client_id");
    }
    if field(&form, "client_secret").as_deref() != Some(FakeSlackOAuth::CLIENT_SECRET) {
        return fail(&mut r, "bad_client_secret");
    }
    let code = field(&form, "code").unwrap_or_default();
    let Some((team, redirect_uri, used)) = r.codes.get(&code).cloned() else {
        return fail(&mut r, "invalid_code");
    };
    if used {
        return fail(&mut r, "invalid_code");
    }
    if redirect_uri.is_some() && field(&form, "redirect_uri") != redirect_uri {
        return fail(&mut r, "bad_redirect_uri");
    }
    let Some(ws) = r.workspaces.iter().find(|w| w.team_id == team).cloned() else {
        return fail(&mut r, "invalid_code");
    };
    if let Some(entry) = r.codes.get_mut(&code) {
        entry.2 = true;
    }
    r.requests.push(TokenRequest {
        grant_type: "authorization_code".into(),
        client_id,
        tenant: Some(ws.tenant().to_owned()),
        error: None,
    });
    let mut answer = json!({
        "ok": true,
        "access_token": ws.bot_token,
        "token_type": "bot",
        "scope": "app_mentions:read,chat:write",
        "bot_user_id": ws.bot_user_id,
        "app_id": "A0FAKEAPP",
        "team": if ws.is_enterprise_install { Value::Null } else { json!({ "id": ws.team_id, "name": "Fake" }) },
        "enterprise": ws.enterprise_id.as_ref().map(|e| json!({ "id": e, "name": "Fake Org" })),
        "authed_user": { "id": "UINSTALLER" },
        "is_enterprise_install": ws.is_enterprise_install,
    });
    if let Some((refresh, lifetime)) = &ws.rotation {
        answer["refresh_token"] = json!(refresh);
        answer["expires_in"] = json!(lifetime);
    }
    json_response(&answer)
}

async fn slack_auth_test(
    State(record): State<Arc<Mutex<SlackRecord>>>,
    headers: HeaderMap,
) -> Response {
    let token = header(&headers, AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer ").map(str::to_owned))
        .unwrap_or_default();
    let r = lock(&record);
    match r.workspaces.iter().find(|w| w.bot_token == token) {
        Some(ws) => json_response(&json!({
            "ok": true,
            "team_id": ws.team_id,
            "enterprise_id": ws.enterprise_id,
            "user_id": ws.bot_user_id,
            "bot_id": ws.bot_id,
            "is_enterprise_install": ws.is_enterprise_install,
        })),
        None => json_response(&json!({ "ok": false, "error": "invalid_auth" })),
    }
}

/// A Linear organization of [`FakeLinearOAuth`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinearOrganization {
    /// The organization id (the tenant).
    pub id: String,
    /// The agent's app user in it.
    pub app_user_id: String,
}

impl LinearOrganization {
    /// Organization `id` whose app user is `app-user-{id}`.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            app_user_id: format!("app-user-{id}"),
        }
    }
}

#[derive(Default)]
struct LinearRecord {
    organizations: Vec<LinearOrganization>,
    /// code → (organization, redirect_uri, used)
    codes: HashMap<String, (String, String, bool)>,
    /// access token → organization
    access: HashMap<String, String>,
    /// live refresh token → organization
    refresh: HashMap<String, String>,
    requests: Vec<TokenRequest>,
    graphql: Vec<Value>,
    lifetime_secs: u64,
    issued: u64,
}

/// A fake of Linear's OAuth for agents: the authorize page
/// (`GET {base}/oauth/authorize`, which approves at once for the first
/// organization), the token endpoint (`POST {base}/oauth/token`, code
/// exchange and refresh), and a GraphQL endpoint (`POST {base}/graphql`)
/// that answers the `viewer` query for the tokens it issued.
///
/// The authorize request must carry `actor=app`, `response_type=code`, the
/// fake's [`CLIENT_ID`](Self::CLIENT_ID), a scope, a state and a redirect
/// URI. Tokens are `lin_oat_{org}_{n}` (access, valid for
/// [`set_token_lifetime`](Self::set_token_lifetime), 24 h by default) and
/// `lin_ort_{org}_{n}` (refresh); a refresh rotates both and the old refresh
/// token stops working, as OAuth refresh-token rotation does. Errors answer
/// `400 {"error": "invalid_grant" | "invalid_client" | …}`.
#[derive(Clone)]
pub struct FakeLinearOAuth {
    record: Arc<Mutex<LinearRecord>>,
    base: String,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeLinearOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeLinearOAuth")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl FakeLinearOAuth {
    /// The client id the fake application has.
    pub const CLIENT_ID: &'static str = "fake-linear-client";
    /// The client secret the fake application has.
    pub const CLIENT_SECRET: &'static str = "fake-linear-client-secret";

    /// Starts the server on `127.0.0.1` and a free port.
    ///
    /// # Panics
    ///
    /// When no local port can be bound (the test cannot run).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeLinearOAuth: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server, or says why it could not.
    pub async fn try_start() -> io::Result<Self> {
        let record = Arc::new(Mutex::new(LinearRecord {
            lifetime_secs: 86_399,
            ..LinearRecord::default()
        }));
        let router = Router::new()
            .route("/oauth/authorize", get(linear_authorize))
            .route("/oauth/token", post(linear_token))
            .route("/graphql", post(linear_graphql))
            .with_state(Arc::clone(&record));
        let (addr, server) = serve(router).await?;
        Ok(Self {
            record,
            base: format!("http://{addr}"),
            _server: Arc::new(server),
        })
    }

    /// Adds an organization that can approve installs.
    pub fn add_organization(&self, organization: LinearOrganization) {
        lock(&self.record).organizations.push(organization);
    }

    /// How long access tokens issued from now on live (`expires_in`).
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        lock(&self.record).lifetime_secs = lifetime.as_secs();
    }

    /// The authorize page, for `LinearOAuthBuilder::authorize_url`.
    pub fn authorize_url(&self) -> String {
        format!("{}/oauth/authorize", self.base)
    }

    /// The token endpoint, for `LinearOAuthBuilder::token_url`.
    pub fn token_url(&self) -> String {
        format!("{}/oauth/token", self.base)
    }

    /// The GraphQL endpoint answering `viewer`, for
    /// `LinearOAuthBuilder::graphql_url`.
    pub fn graphql_url(&self) -> String {
        format!("{}/graphql", self.base)
    }

    /// What an admin of `organization` approving `authorize_url` leads to:
    /// the callback URL with a fresh code and the request's `state`. An
    /// `Err` says why Linear would have refused the request.
    pub fn approve(&self, authorize_url: &str, organization: &str) -> Result<String, String> {
        approve_linear(&self.record, authorize_url, Some(organization))
    }

    /// Every call of the token endpoint so far.
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        lock(&self.record).requests.clone()
    }

    /// The JSON bodies of every GraphQL request so far.
    pub fn graphql_requests(&self) -> Vec<Value> {
        lock(&self.record).graphql.clone()
    }

    /// The access tokens issued for `organization`, oldest first.
    pub fn access_tokens(&self, organization: &str) -> Vec<String> {
        let r = lock(&self.record);
        let mut tokens: Vec<String> = r
            .access
            .iter()
            .filter(|(_, org)| *org == organization)
            .map(|(t, _)| t.clone())
            .collect();
        tokens.sort_by_key(|t| {
            t.rsplit('_')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        });
        tokens
    }
}

fn approve_linear(
    record: &Mutex<LinearRecord>,
    authorize_url: &str,
    organization: Option<&str>,
) -> Result<String, String> {
    let query = query_of(authorize_url);
    if field(&query, "client_id").as_deref() != Some(FakeLinearOAuth::CLIENT_ID) {
        return Err("invalid client_id".into());
    }
    if field(&query, "response_type").as_deref() != Some("code") {
        return Err("response_type must be code".into());
    }
    if field(&query, "actor").as_deref() != Some("app") {
        return Err("an agent installs with actor=app".into());
    }
    if field(&query, "scope").is_none_or(|s| s.is_empty()) {
        return Err("no scope".into());
    }
    let state = field(&query, "state").ok_or("no state")?;
    let redirect = field(&query, "redirect_uri").ok_or("no redirect_uri")?;
    let mut r = lock(record);
    let org = organization
        .map(str::to_owned)
        .or_else(|| r.organizations.first().map(|o| o.id.clone()))
        .ok_or("no organization")?;
    if !r.organizations.iter().any(|o| o.id == org) {
        return Err(format!("unknown organization {org}"));
    }
    r.issued += 1;
    let code = format!("linear-code-{}", r.issued);
    r.codes.insert(code.clone(), (org, redirect.clone(), false));
    Ok(with_query(&redirect, &[("code", &code), ("state", &state)]))
}

async fn linear_authorize(State(record): State<Arc<Mutex<LinearRecord>>>, uri: Uri) -> Response {
    match approve_linear(&record, &uri.to_string(), None) {
        Ok(location) => redirect(&location),
        Err(e) => plain(StatusCode::BAD_REQUEST, e),
    }
}

async fn linear_token(
    State(record): State<Arc<Mutex<LinearRecord>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = parse_pairs(&String::from_utf8_lossy(&body));
    let grant = field(&form, "grant_type").unwrap_or_default();
    let basic = format!(
        "Basic {}",
        base64(
            format!(
                "{}:{}",
                FakeLinearOAuth::CLIENT_ID,
                FakeLinearOAuth::CLIENT_SECRET
            )
            .as_bytes()
        )
    );
    let by_basic = header(&headers, AUTHORIZATION).as_deref() == Some(basic.as_str());
    let client_id = if by_basic {
        FakeLinearOAuth::CLIENT_ID.to_owned()
    } else {
        field(&form, "client_id").unwrap_or_default()
    };
    let mut r = lock(&record);
    let fail = |r: &mut LinearRecord, code: &str| {
        r.requests.push(TokenRequest {
            grant_type: grant.clone(),
            client_id: client_id.clone(),
            tenant: None,
            error: Some(code.to_owned()),
        });
        let mut response = json_response(&json!({ "error": code, "error_description": "fake" }));
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response
    };
    let secret_ok = by_basic
        || field(&form, "client_secret").as_deref() == Some(FakeLinearOAuth::CLIENT_SECRET);
    if client_id != FakeLinearOAuth::CLIENT_ID || !secret_ok {
        return fail(&mut r, "invalid_client");
    }
    let org = match grant.as_str() {
        "authorization_code" => {
            let code = field(&form, "code").unwrap_or_default();
            match r.codes.get(&code).cloned() {
                Some((org, redirect_uri, false))
                    if field(&form, "redirect_uri").as_deref() == Some(redirect_uri.as_str()) =>
                {
                    if let Some(entry) = r.codes.get_mut(&code) {
                        entry.2 = true;
                    }
                    org
                }
                _ => return fail(&mut r, "invalid_grant"),
            }
        }
        "refresh_token" => {
            let token = field(&form, "refresh_token").unwrap_or_default();
            match r.refresh.remove(&token) {
                Some(org) => org,
                None => return fail(&mut r, "invalid_grant"),
            }
        }
        _ => return fail(&mut r, "unsupported_grant_type"),
    };
    r.issued += 1;
    let access = format!("lin_oat_{org}_{}", r.issued);
    let refresh = format!("lin_ort_{org}_{}", r.issued);
    r.access.insert(access.clone(), org.clone());
    r.refresh.insert(refresh.clone(), org.clone());
    r.requests.push(TokenRequest {
        grant_type: grant,
        client_id,
        tenant: Some(org),
        error: None,
    });
    json_response(&json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": r.lifetime_secs,
        "scope": "read write app:assignable app:mentionable",
        "refresh_token": refresh,
    }))
}

async fn linear_graphql(
    State(record): State<Arc<Mutex<LinearRecord>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let token = header(&headers, AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer ").map(str::to_owned))
        .unwrap_or_default();
    let mut r = lock(&record);
    r.graphql.push(request.clone());
    let query = request.get("query").and_then(Value::as_str).unwrap_or("");
    let organization = r
        .access
        .get(&token)
        .and_then(|org| r.organizations.iter().find(|o| &o.id == org))
        .cloned();
    let mut response = match organization {
        None => json_response(&json!({ "errors": [{ "message": "Authentication required",
            "extensions": { "code": "AUTHENTICATION_ERROR" } }] })),
        Some(_) if !query.contains("viewer") => json_response(&json!({ "errors": [{
            "message": "the fake answers only viewer",
            "extensions": { "code": "GRAPHQL_VALIDATION_FAILED" } }] })),
        Some(org) => {
            return json_response(&json!({ "data": { "viewer": {
                "id": org.app_user_id, "organization": { "id": org.id } } } }));
        }
    };
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response
}

fn header(headers: &HeaderMap, name: http::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn json_response(value: &Value) -> Response {
    let mut response = Response::new(Body::from(value.to_string()));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

fn plain(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

fn redirect(location: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::FOUND;
    if let Ok(v) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, v);
    }
    response
}

/// The decoded query pairs of a URL (or of a path with a query).
fn query_of(url: &str) -> Vec<(String, String)> {
    url.split_once('?')
        .map(|(_, q)| parse_pairs(q.split('#').next().unwrap_or("")))
        .unwrap_or_default()
}

fn field(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// `application/x-www-form-urlencoded` pairs, decoded.
fn parse_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `base` with `pairs` appended to its query.
fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = base.to_owned();
    let mut sep = if base.contains('?') { '&' } else { '?' };
    for (k, v) in pairs {
        url.push(sep);
        url.push_str(&encode(k));
        url.push('=');
        url.push_str(&encode(v));
        sep = '&';
    }
    url
}

fn base64(input: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_and_encode() {
        assert_eq!(
            parse_pairs("a=1&b=x%2By+z&c=&d"),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "x+y z".to_owned()),
                ("c".to_owned(), String::new()),
                ("d".to_owned(), String::new())
            ]
        );
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%4"), "%4");
        assert_eq!(
            with_query("https://x/cb", &[("state", "a.b c")]),
            "https://x/cb?state=a.b%20c"
        );
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
    }
}
