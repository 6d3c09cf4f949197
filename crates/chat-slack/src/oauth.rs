//! [`SlackOAuth`]: the OAuth v2 install flow that distributes a bot to many
//! workspaces and fills an [`InstallationStore`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::{
    AdapterError, Installation, InstallationError, InstallationStore, Platform, Secret,
};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Response, StatusCode};
use serde::Deserialize;

use crate::client::{DEFAULT_API_BASE_URL, SlackClient};
use crate::error::BuildError;
use chat_core::{Clock, SystemClock};
use chat_installations::oauth_state::{self, StateSigner};

pub use chat_installations::oauth_state::StateError;

/// Slack's authorize page for OAuth v2.
pub const DEFAULT_AUTHORIZE_URL: &str = "https://slack.com/oauth/v2/authorize";
/// The cookie that binds an install's `state` to the browser that started it.
pub const DEFAULT_STATE_COOKIE: &str = "chat_rs_slack_oauth";

/// Why an install's callback failed. Names the failure, never a secret, a
/// code or a token; [`status`](Self::status) is the HTTP answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The user declined, or Slack reported an error on the redirect
    /// (`error=access_denied`).
    #[error("the install was not approved: {0}")]
    Denied(String),
    /// The callback has no `code`.
    #[error("the callback has no code")]
    MissingCode,
    /// The `state` is missing, forged, tampered with, expired, or from
    /// another browser.
    #[error("refused state: {0}")]
    State(#[from] StateError),
    /// `oauth.v2.access` failed (`invalid_code`, `bad_client_secret`, …, or
    /// Slack could not be reached).
    #[error("exchanging the code failed")]
    Exchange(#[source] AdapterError),
    /// `oauth.v2.access` answered without what an installation needs.
    #[error("the token answer lacks {0}")]
    Incomplete(&'static str),
    /// The installation could not be stored.
    #[error("storing the installation failed")]
    Store(#[source] InstallationError),
    /// The flow itself failed (the system's random source).
    #[error("the install flow failed: {0}")]
    Internal(&'static str),
}

impl OAuthError {
    /// The HTTP status a callback answers with: 400 for a bad request (no
    /// code, refused state), 403 when the user declined, 502 when Slack's
    /// answer failed, 503 when the store did, 500 for [`Internal`](Self::Internal).
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Denied(_) => StatusCode::FORBIDDEN,
            Self::MissingCode | Self::State(_) => StatusCode::BAD_REQUEST,
            Self::Exchange(_) | Self::Incomplete(_) => StatusCode::BAD_GATEWAY,
            Self::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The OAuth v2 install flow of a Slack app distributed to many workspaces:
/// two framework-agnostic handlers to mount on your HTTP server.
///
/// * [`install`](Self::install) (mount at e.g. `GET /slack/install`, the
///   link of an "Add to Slack" button) answers `302` to Slack's authorize
///   page with the app's scopes and a fresh `state`: signed with HMAC-SHA256
///   under the configured state secret, expiring after
///   [`state_ttl`](SlackOAuthBuilder::state_ttl), and bound to the browser
///   by an `HttpOnly; Secure; SameSite=Lax` cookie carrying its nonce.
/// * [`callback`](Self::callback) (mount at the app's Redirect URL, e.g.
///   `GET /slack/oauth/callback`) checks the `state` (signature, expiry,
///   cookie), exchanges the `code` through `oauth.v2.access`, learns the bot
///   id with `auth.test`, and puts the [`Installation`] into the store —
///   keyed by the enterprise id for an org-wide install, else the team id,
///   the same tenant the adapter reads from every delivery. It answers `302`
///   to [`success_url`](SlackOAuthBuilder::success_url) (or a plain `200`),
///   or an error status with a short text ([`OAuthError::status`]).
///   [`complete`](Self::complete) is the same without the HTTP answer.
///
/// The Web API base URL (`oauth.v2.access`, `auth.test`) and the authorize
/// URL are configurable, so tests point them at a fake. Its `Debug` never
/// shows the client secret or the state secret.
///
/// ```no_run
/// use std::sync::Arc;
/// use axum::{Router, routing::get};
/// use chat_core::InstallationStore;
/// use chat_slack::SlackOAuth;
///
/// # fn app(store: Arc<dyn InstallationStore>) -> Result<Router, Box<dyn std::error::Error>> {
/// let oauth = Arc::new(
///     SlackOAuth::builder()
///         .client_id(std::env::var("SLACK_CLIENT_ID")?)
///         .client_secret(std::env::var("SLACK_CLIENT_SECRET")?)
///         .state_secret(std::env::var("SLACK_STATE_SECRET")?)
///         .scopes(["app_mentions:read", "channels:history", "chat:write", "reactions:write"])
///         .redirect_uri("https://bot.example.com/slack/oauth/callback")
///         .success_url("https://bot.example.com/installed")
///         .installations(store)
///         .build()?,
/// );
/// let install = Arc::clone(&oauth);
/// let app = Router::new()
///     .route("/slack/install", get(move || {
///         let oauth = Arc::clone(&install);
///         async move { oauth.install().map(axum::body::Body::from) }
///     }))
///     .route("/slack/oauth/callback", get(move |parts: http::request::Parts| {
///         let oauth = Arc::clone(&oauth);
///         async move { oauth.callback(&parts).await.map(axum::body::Body::from) }
///     }));
/// # Ok(app) }
/// ```
pub struct SlackOAuth {
    client_id: String,
    client_secret: Secret,
    scopes: Vec<String>,
    user_scopes: Vec<String>,
    redirect_uri: Option<String>,
    authorize_url: reqwest::Url,
    success_url: Option<String>,
    api: SlackClient,
    signer: StateSigner,
    cookie: Option<String>,
    store: Arc<dyn InstallationStore>,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for SlackOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackOAuth")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scopes", &self.scopes)
            .field("user_scopes", &self.user_scopes)
            .field("redirect_uri", &self.redirect_uri)
            .field("authorize_url", &self.authorize_url.as_str())
            .field("api", &self.api)
            .field("signer", &self.signer)
            .field("cookie", &self.cookie)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`SlackOAuth`]: the client id and secret, a state secret,
/// the bot scopes and an installation store are required.
#[must_use]
pub struct SlackOAuthBuilder {
    client_id: Option<String>,
    client_secret: Option<String>,
    state_secret: Option<String>,
    scopes: Vec<String>,
    user_scopes: Vec<String>,
    redirect_uri: Option<String>,
    authorize_url: String,
    api_base_url: String,
    success_url: Option<String>,
    state_ttl: Duration,
    cookie: Option<String>,
    store: Option<Arc<dyn InstallationStore>>,
    clock: Arc<dyn Clock>,
    request_timeout: Duration,
}

impl fmt::Debug for SlackOAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackOAuthBuilder")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "state_secret",
                &self.state_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("authorize_url", &self.authorize_url)
            .field("api_base_url", &self.api_base_url)
            .finish_non_exhaustive()
    }
}

impl Default for SlackOAuthBuilder {
    fn default() -> Self {
        Self {
            client_id: None,
            client_secret: None,
            state_secret: None,
            scopes: Vec::new(),
            user_scopes: Vec::new(),
            redirect_uri: None,
            authorize_url: DEFAULT_AUTHORIZE_URL.to_owned(),
            api_base_url: DEFAULT_API_BASE_URL.to_owned(),
            success_url: None,
            state_ttl: Duration::from_secs(600),
            cookie: Some(DEFAULT_STATE_COOKIE.to_owned()),
            store: None,
            clock: Arc::new(SystemClock),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// The shortest state secret accepted, in bytes.
const MIN_STATE_SECRET: usize = 16;

impl SlackOAuthBuilder {
    /// The app's Client ID (Basic Information → App Credentials). Required.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The app's Client Secret. Required; sent only to `oauth.v2.access`.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The key that signs `state` values (HMAC-SHA256), at least 16 bytes;
    /// e.g. `openssl rand -hex 32`. Required. Every replica needs the same
    /// one, since an install may start on one and come back to another.
    pub fn state_secret(mut self, secret: impl Into<String>) -> Self {
        self.state_secret = Some(secret.into());
        self
    }

    /// The bot scopes to request (`app_mentions:read`, `chat:write`, …).
    /// Required.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// User scopes to request as well (default none). The user token is not
    /// stored: the installation keeps the bot token.
    pub fn user_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.user_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The Redirect URL registered in the app's OAuth settings; sent with
    /// the authorize request and the code exchange. Without it, Slack uses
    /// the app's only registered one.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// Slack's authorize page (default [`DEFAULT_AUTHORIZE_URL`]).
    pub fn authorize_url(mut self, url: impl Into<String>) -> Self {
        self.authorize_url = url.into();
        self
    }

    /// The Web API base URL for `oauth.v2.access` and `auth.test` (default
    /// `https://slack.com/api`).
    pub fn api_base_url(mut self, url: impl Into<String>) -> Self {
        self.api_base_url = url.into();
        self
    }

    /// Where the browser goes after a successful install (default: a plain
    /// `200` page).
    pub fn success_url(mut self, url: impl Into<String>) -> Self {
        self.success_url = Some(url.into());
        self
    }

    /// How long an install link's `state` is valid (default 10 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The name of the cookie binding the `state` to the browser (default
    /// [`DEFAULT_STATE_COOKIE`]), or `None` to check signature and expiry
    /// only (for installs started outside a browser, e.g. an install link
    /// sent by email).
    pub fn state_cookie(mut self, name: Option<&str>) -> Self {
        self.cookie = name.map(str::to_owned);
        self
    }

    /// Where installations go. Required: give the adapter the same store.
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The clock for `state` expiry and `installed_at` (default: the system
    /// clock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The timeout of one request to Slack (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Builds the flow; [`BuildError::OAuth`] names a missing or invalid
    /// setting.
    pub fn build(self) -> Result<SlackOAuth, BuildError> {
        let client_id = self
            .client_id
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::OAuth("client_id is required"))?;
        let client_secret = self
            .client_secret
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::OAuth("client_secret is required"))?;
        let state_secret = self
            .state_secret
            .ok_or(BuildError::OAuth("state_secret is required"))?;
        if state_secret.len() < MIN_STATE_SECRET {
            return Err(BuildError::OAuth("state_secret must be at least 16 bytes"));
        }
        if self.scopes.is_empty() {
            return Err(BuildError::OAuth("at least one bot scope is required"));
        }
        if self.state_ttl.is_zero() {
            return Err(BuildError::OAuth("state_ttl is zero"));
        }
        let store = self
            .store
            .ok_or(BuildError::OAuth("an installation store is required"))?;
        let authorize_url = reqwest::Url::parse(&self.authorize_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
            .ok_or(BuildError::OAuth("authorize_url is not an http(s) URL"))?;
        let api = SlackClient::builder(String::new())
            .base_url(self.api_base_url)
            .max_retries(1)
            .request_timeout(self.request_timeout)
            .build_unauthenticated()?;
        Ok(SlackOAuth {
            client_id,
            client_secret: Secret::new(client_secret),
            scopes: self.scopes,
            user_scopes: self.user_scopes,
            redirect_uri: self.redirect_uri.filter(|u| !u.is_empty()),
            authorize_url,
            success_url: self.success_url,
            api,
            signer: StateSigner::new(state_secret.as_bytes(), self.state_ttl, "slack"),
            cookie: self.cookie.filter(|c| !c.is_empty()),
            store,
            clock: self.clock,
        })
    }
}

/// What `oauth.v2.access` answers (only what an installation needs).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Access {
    access_token: Option<String>,
    token_type: Option<String>,
    scope: Option<String>,
    bot_user_id: Option<String>,
    app_id: Option<String>,
    team: Option<IdOnly>,
    enterprise: Option<IdOnly>,
    is_enterprise_install: Option<bool>,
    authed_user: Option<IdOnly>,
    refresh_token: Option<String>,
    expires_in: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IdOnly {
    id: Option<String>,
}

fn present(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

impl SlackOAuth {
    /// A builder with the defaults.
    pub fn builder() -> SlackOAuthBuilder {
        SlackOAuthBuilder::default()
    }

    /// The installation store the flow writes to.
    pub fn installations(&self) -> &Arc<dyn InstallationStore> {
        &self.store
    }

    /// A fresh authorize URL and the nonce to bind it to a browser with the
    /// state cookie. [`install`](Self::install) is this as an HTTP answer;
    /// use this one to render your own "Add to Slack" page.
    pub fn authorize(&self) -> Result<(String, String), OAuthError> {
        let issued = self
            .signer
            .issue(self.clock.now())
            .ok_or(OAuthError::Internal("no random state"))?;
        let mut url = self.authorize_url.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("client_id", &self.client_id);
            q.append_pair("scope", &self.scopes.join(","));
            if !self.user_scopes.is_empty() {
                q.append_pair("user_scope", &self.user_scopes.join(","));
            }
            if let Some(uri) = &self.redirect_uri {
                q.append_pair("redirect_uri", uri);
            }
            q.append_pair("state", &issued.state);
        }
        Ok((url.into(), issued.nonce))
    }

    /// The install route: `302` to Slack's authorize page with a new
    /// `state`, and the cookie binding it to this browser.
    pub fn install(&self) -> Response<Bytes> {
        let (url, nonce) = match self.authorize() {
            Ok(pair) => pair,
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        };
        let Ok(location) = HeaderValue::from_str(&url) else {
            return text(StatusCode::INTERNAL_SERVER_ERROR, "invalid authorize URL");
        };
        let mut r = empty(StatusCode::FOUND);
        r.headers_mut().insert(LOCATION, location);
        if let Some(name) = &self.cookie
            && let Ok(cookie) = HeaderValue::from_str(&oauth_state::set_cookie(
                name,
                Some(&nonce),
                self.signer.ttl(),
            ))
        {
            r.headers_mut().insert(SET_COOKIE, cookie);
        }
        r
    }

    /// The callback route: completes the install ([`complete`](Self::complete))
    /// and answers the browser — `302` to the success URL (or `200`), or the
    /// error's status with a short text. The state cookie is cleared either
    /// way.
    pub async fn callback(&self, parts: &http::request::Parts) -> Response<Bytes> {
        let mut r = match self.complete(parts).await {
            Ok(installation) => {
                tracing::info!(tenant = %installation.tenant, "slack: installed");
                match self
                    .success_url
                    .as_deref()
                    .and_then(|u| HeaderValue::from_str(u).ok())
                {
                    Some(location) => {
                        let mut r = empty(StatusCode::FOUND);
                        r.headers_mut().insert(LOCATION, location);
                        r
                    }
                    None => text(
                        StatusCode::OK,
                        "The app was installed. You can close this window.",
                    ),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "slack: install callback refused");
                text(e.status(), &e.to_string())
            }
        };
        if let Some(name) = &self.cookie
            && let Ok(clear) =
                HeaderValue::from_str(&oauth_state::set_cookie(name, None, Duration::ZERO))
        {
            r.headers_mut().insert(SET_COOKIE, clear);
        }
        r
    }

    /// Completes an install from the callback request: checks the `state`
    /// (signature, expiry, and the browser's cookie), exchanges the `code`
    /// through `oauth.v2.access`, learns the bot id with `auth.test`, and
    /// stores the installation, which it returns.
    pub async fn complete(&self, parts: &http::request::Parts) -> Result<Installation, OAuthError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Query {
            code: Option<String>,
            state: Option<String>,
            error: Option<String>,
        }
        let query: Query = serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
            .map_err(|_| OAuthError::State(StateError::Invalid))?;
        if let Some(error) = query.error.filter(|e| !e.is_empty()) {
            return Err(OAuthError::Denied(safe_code(&error)));
        }
        let cookie = self
            .cookie
            .as_deref()
            .map(|name| oauth_state::cookie(&parts.headers, name));
        self.signer
            .check(query.state.as_deref(), self.clock.now(), cookie)?;
        let code = present(query.code).ok_or(OAuthError::MissingCode)?;
        self.exchange(&code).await
    }

    async fn exchange(&self, code: &str) -> Result<Installation, OAuthError> {
        let mut form = vec![
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.expose()),
            ("code", code),
        ];
        if let Some(uri) = &self.redirect_uri {
            form.push(("redirect_uri", uri));
        }
        let answer = self
            .api
            .call_form_unauthenticated("oauth.v2.access", &form)
            .await
            .map_err(OAuthError::Exchange)?;
        let a = Access::deserialize(&answer)
            .map_err(|e| OAuthError::Exchange(AdapterError::Decode(Box::new(e))))?;
        if a.token_type.as_deref().is_some_and(|t| t != "bot") {
            return Err(OAuthError::Incomplete("a bot token"));
        }
        let token = present(a.access_token).ok_or(OAuthError::Incomplete("a bot token"))?;
        let team = present(a.team.and_then(|t| t.id));
        let enterprise = present(a.enterprise.and_then(|e| e.id));
        let org_wide = a.is_enterprise_install == Some(true);
        let tenant = if org_wide {
            enterprise.clone()
        } else {
            team.clone()
        }
        .ok_or(OAuthError::Incomplete("a team or enterprise id"))?;
        let now_ms = millis(self.clock.now());
        let mut installation = Installation::new(Platform::Slack, tenant, Secret::new(token))
            .with_scopes(
                a.scope
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty()),
            )
            .with_refresh(
                present(a.refresh_token).map(Secret::new),
                a.expires_in
                    .map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
            )
            .with_installed_at_ms(now_ms);
        installation.bot_user_id = present(a.bot_user_id);
        installation.app_id = present(a.app_id);
        installation.team_id = team;
        installation.installer_user_id = present(a.authed_user.and_then(|u| u.id));
        if let Some(e) = enterprise {
            installation = installation.with_enterprise(e, org_wide);
        }
        self.learn_bot_id(&mut installation).await;
        self.store
            .put(&installation)
            .await
            .map_err(OAuthError::Store)?;
        Ok(installation)
    }

    /// `auth.test` with the new token: the bot id (`B…`), which
    /// `oauth.v2.access` does not return. A failure only logs: the bot user
    /// id still recognizes the bot's messages.
    async fn learn_bot_id(&self, installation: &mut Installation) {
        let identity = match self.api.with_token(installation.access_token.expose()) {
            Ok(client) => client.auth_test().await,
            Err(e) => Err(AdapterError::Transport(Box::new(e))),
        };
        match identity {
            Ok(id) => {
                installation.bot_id = id.bot_id;
                if installation.bot_user_id.is_none() {
                    installation.bot_user_id = id.user_id;
                }
            }
            Err(e) => {
                tracing::warn!(tenant = %installation.tenant, error = %e, "slack: auth.test after install failed; bot id unknown");
            }
        }
    }
}

/// Slack's error code from the redirect, made safe to show.
fn safe_code(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(64)
        .collect()
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn empty(status: StatusCode) -> Response<Bytes> {
    let mut r = Response::new(Bytes::new());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn text(status: StatusCode, body: &str) -> Response<Bytes> {
    let mut r = empty(status);
    *r.body_mut() = Bytes::copy_from_slice(body.as_bytes());
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
