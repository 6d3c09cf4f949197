//! [`LinearOAuth`]: the OAuth `actor=app` install flow of a Linear agent,
//! and the refresh of its tokens.
//!
//! What Linear documents (linear.app/developers/oauth-2-0-authentication,
//! /agents): the authorize page is `GET https://linear.app/oauth/authorize`
//! with `client_id`, `redirect_uri`, `response_type=code`, a comma-separated
//! `scope`, `state`, and `actor=app` for an agent; the code is exchanged by
//! `POST https://api.linear.app/oauth/token` with a form body; the answer
//! has `access_token`, `token_type`, `expires_in` (seconds) and `scope`.
//! Applications now get refresh tokens, and access tokens last about a day.
//!
//! Not verified against a copy of the vendor page, so configurable here:
//! the refresh request's parameters (`grant_type=refresh_token` with the
//! `refresh_token`, as OAuth 2.0 specifies), how the client authenticates
//! ([`ClientAuth`]: form fields by default, or HTTP Basic), and the shape of
//! `scope` (a space- or comma-separated string, or an array: all are read).
//! The endpoints themselves are settings too.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::{
    AdapterError, Installation, InstallationError, InstallationStore, Platform, Secret, TenantId,
};
use http::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Response, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use crate::error::BuildError;
use crate::operations;
use chat_core::{Clock, SystemClock};
use chat_installations::oauth_state::{self, StateSigner};

pub use chat_installations::oauth_state::StateError;

/// Linear's authorize page.
pub const DEFAULT_AUTHORIZE_URL: &str = "https://linear.app/oauth/authorize";
/// Linear's token endpoint (code exchange and refresh).
pub const DEFAULT_TOKEN_URL: &str = "https://api.linear.app/oauth/token";
/// The cookie that binds an install's `state` to the browser that started it.
pub const DEFAULT_STATE_COOKIE: &str = "chat_rs_linear_oauth";
/// The scopes an agent asks for by default.
pub const DEFAULT_SCOPES: &[&str] = &["read", "write", "app:assignable", "app:mentionable"];

/// How the OAuth client authenticates to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// `client_id` and `client_secret` as form fields (the default; what
    /// Linear's documented code exchange sends).
    #[default]
    Body,
    /// HTTP Basic with the client id and secret.
    Basic,
}

/// Why an install's callback or a token refresh failed. Names the failure,
/// never a secret, a code or a token; [`status`](Self::status) is the HTTP
/// answer of a callback.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The user declined, or Linear reported an error on the redirect.
    #[error("the install was not approved: {0}")]
    Denied(String),
    /// The callback has no `code`.
    #[error("the callback has no code")]
    MissingCode,
    /// The `state` is missing, forged, tampered with, expired, or from
    /// another browser.
    #[error("refused state: {0}")]
    State(#[from] StateError),
    /// The token endpoint refused (`invalid_grant`, `invalid_client`, …),
    /// with the OAuth error code.
    #[error("the token endpoint refused: {0}")]
    Refused(String),
    /// The token endpoint or the GraphQL API could not be reached or
    /// answered something unreadable.
    #[error("the call to Linear failed")]
    Transport(#[source] AdapterError),
    /// An answer lacked what an installation needs.
    #[error("the answer lacks {0}")]
    Incomplete(&'static str),
    /// There is no refresh token to renew the access token with.
    #[error("the installation has no refresh token")]
    NoRefreshToken,
    /// The installation could not be stored.
    #[error("storing the installation failed")]
    Store(#[source] InstallationError),
    /// The flow itself failed (the system's random source).
    #[error("the install flow failed: {0}")]
    Internal(&'static str),
}

impl OAuthError {
    /// The HTTP status a callback answers with: 400 for a bad request (no
    /// code, refused state), 403 when the user declined, 502 when Linear's
    /// answer failed, 503 when the store did, 500 otherwise.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Denied(_) => StatusCode::FORBIDDEN,
            Self::MissingCode | Self::State(_) => StatusCode::BAD_REQUEST,
            Self::Refused(_) | Self::Transport(_) | Self::Incomplete(_) => StatusCode::BAD_GATEWAY,
            Self::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::NoRefreshToken | Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The OAuth install flow of a Linear agent (`actor=app`), distributed to
/// many organizations, and the refresh of their tokens. Cheap to clone.
///
/// * [`install`](Self::install) (mount at e.g. `GET /linear/install`)
///   answers `302` to Linear's authorize page with `actor=app`, the scopes,
///   and a fresh `state`: HMAC-signed with the state secret, expiring, and
///   bound to the browser by an `HttpOnly; Secure; SameSite=Lax` cookie.
/// * [`callback`](Self::callback) (mount at the redirect URI) checks the
///   state, exchanges the code at the token endpoint, asks GraphQL
///   `viewer { id organization { id } }` for the app user and its
///   organization, and puts the [`Installation`] (tenant = organization id,
///   bot user = the app user) into the store.
/// * [`refresh`](Self::refresh) renews an installation's access token with
///   its refresh token and stores the result; the adapter calls it before
///   the token expires when given this flow
///   ([`LinearAdapterBuilder::token_refresh`](crate::LinearAdapterBuilder::token_refresh)).
///
/// Its `Debug` never shows the client secret or the state secret.
///
/// ```no_run
/// use std::sync::Arc;
/// use chat_core::InstallationStore;
/// use chat_linear::{LinearAdapter, LinearOAuth};
///
/// # fn setup(store: Arc<dyn InstallationStore>) -> Result<(), Box<dyn std::error::Error>> {
/// let oauth = LinearOAuth::builder()
///     .client_id(std::env::var("LINEAR_CLIENT_ID")?)
///     .client_secret(std::env::var("LINEAR_CLIENT_SECRET")?)
///     .state_secret(std::env::var("LINEAR_STATE_SECRET")?)
///     .redirect_uri("https://agent.example.com/linear/oauth/callback")
///     .installations(Arc::clone(&store))
///     .build()?;
/// let linear = LinearAdapter::builder()
///     .signing_secret(std::env::var("LINEAR_WEBHOOK_SECRET")?)
///     .installations(store)
///     .token_refresh(oauth.clone())
///     .build()?;
/// // Mount `oauth.install()` and `oauth.callback(&parts)` on your HTTP server.
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LinearOAuth {
    inner: Arc<Inner>,
}

struct Inner {
    client_id: String,
    client_secret: Secret,
    scopes: Vec<String>,
    redirect_uri: String,
    authorize_url: reqwest::Url,
    token_url: reqwest::Url,
    graphql_url: reqwest::Url,
    client_auth: ClientAuth,
    prompt_consent: bool,
    success_url: Option<String>,
    refresh_margin: Duration,
    request_timeout: Duration,
    http: reqwest::Client,
    signer: StateSigner,
    cookie: Option<String>,
    store: Arc<dyn InstallationStore>,
    clock: Arc<dyn Clock>,
    /// One refresh at a time per organization in this process.
    refreshing: Mutex<HashMap<TenantId, Arc<tokio::sync::Mutex<()>>>>,
}

impl fmt::Debug for LinearOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.debug_struct("LinearOAuth")
            .field("client_id", &i.client_id)
            .field("client_secret", &i.client_secret)
            .field("scopes", &i.scopes)
            .field("redirect_uri", &i.redirect_uri)
            .field("authorize_url", &i.authorize_url.as_str())
            .field("token_url", &i.token_url.as_str())
            .field("graphql_url", &i.graphql_url.as_str())
            .field("client_auth", &i.client_auth)
            .field("refresh_margin", &i.refresh_margin)
            .field("signer", &i.signer)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`LinearOAuth`]: the client id and secret, a state secret,
/// the redirect URI and an installation store are required.
#[must_use]
pub struct LinearOAuthBuilder {
    client_id: Option<String>,
    client_secret: Option<String>,
    state_secret: Option<String>,
    scopes: Vec<String>,
    redirect_uri: Option<String>,
    authorize_url: String,
    token_url: String,
    graphql_url: String,
    client_auth: ClientAuth,
    prompt_consent: bool,
    success_url: Option<String>,
    state_ttl: Duration,
    refresh_margin: Duration,
    cookie: Option<String>,
    store: Option<Arc<dyn InstallationStore>>,
    clock: Arc<dyn Clock>,
    request_timeout: Duration,
}

impl fmt::Debug for LinearOAuthBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearOAuthBuilder")
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
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

impl Default for LinearOAuthBuilder {
    fn default() -> Self {
        Self {
            client_id: None,
            client_secret: None,
            state_secret: None,
            scopes: DEFAULT_SCOPES.iter().map(|s| (*s).to_owned()).collect(),
            redirect_uri: None,
            authorize_url: DEFAULT_AUTHORIZE_URL.to_owned(),
            token_url: DEFAULT_TOKEN_URL.to_owned(),
            graphql_url: crate::DEFAULT_ENDPOINT.to_owned(),
            client_auth: ClientAuth::Body,
            prompt_consent: false,
            success_url: None,
            state_ttl: Duration::from_secs(600),
            refresh_margin: Duration::from_secs(300),
            cookie: Some(DEFAULT_STATE_COOKIE.to_owned()),
            store: None,
            clock: Arc::new(SystemClock),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// The shortest state secret accepted, in bytes.
const MIN_STATE_SECRET: usize = 16;

fn http_url(s: &str, what: &'static str) -> Result<reqwest::Url, BuildError> {
    reqwest::Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .ok_or(BuildError::OAuth(what))
}

impl LinearOAuthBuilder {
    /// The OAuth application's client id. Required.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The OAuth application's client secret. Required; sent only to the
    /// token endpoint.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The key that signs `state` values (HMAC-SHA256), at least 16 bytes.
    /// Required, and the same on every replica.
    pub fn state_secret(mut self, secret: impl Into<String>) -> Self {
        self.state_secret = Some(secret.into());
        self
    }

    /// The scopes to request (default [`DEFAULT_SCOPES`]); `admin` cannot be
    /// combined with `actor=app`.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The redirect URI registered with the application. Required.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// The authorize page (default [`DEFAULT_AUTHORIZE_URL`]).
    pub fn authorize_url(mut self, url: impl Into<String>) -> Self {
        self.authorize_url = url.into();
        self
    }

    /// The token endpoint (default [`DEFAULT_TOKEN_URL`]).
    pub fn token_url(mut self, url: impl Into<String>) -> Self {
        self.token_url = url.into();
        self
    }

    /// The GraphQL endpoint the `viewer` query goes to (default
    /// `https://api.linear.app/graphql`).
    pub fn graphql_url(mut self, url: impl Into<String>) -> Self {
        self.graphql_url = url.into();
        self
    }

    /// How the client authenticates to the token endpoint (default
    /// [`ClientAuth::Body`]).
    pub fn client_auth(mut self, auth: ClientAuth) -> Self {
        self.client_auth = auth;
        self
    }

    /// Adds `prompt=consent`, so the consent screen always shows — and the
    /// user can pick another workspace (default off).
    pub fn prompt_consent(mut self, on: bool) -> Self {
        self.prompt_consent = on;
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

    /// How long before its expiry an access token is refreshed (default 5
    /// minutes).
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.refresh_margin = margin;
        self
    }

    /// The name of the cookie binding the `state` to the browser (default
    /// [`DEFAULT_STATE_COOKIE`]), or `None` to check signature and expiry
    /// only.
    pub fn state_cookie(mut self, name: Option<&str>) -> Self {
        self.cookie = name.map(str::to_owned);
        self
    }

    /// Where installations go. Required: give the adapter the same store.
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The clock for `state` expiry and token expiry (default: the system
    /// clock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The timeout of one request to Linear (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Builds the flow; [`BuildError::OAuth`] names a missing or invalid
    /// setting.
    pub fn build(self) -> Result<LinearOAuth, BuildError> {
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
        let redirect_uri = self
            .redirect_uri
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::OAuth("redirect_uri is required"))?;
        if self.scopes.is_empty() {
            return Err(BuildError::OAuth("at least one scope is required"));
        }
        if self.scopes.iter().any(|s| s == "admin") {
            return Err(BuildError::OAuth(
                "the admin scope cannot be combined with actor=app",
            ));
        }
        if self.state_ttl.is_zero() || self.request_timeout.is_zero() {
            return Err(BuildError::OAuth("state_ttl or request_timeout is zero"));
        }
        let store = self
            .store
            .ok_or(BuildError::OAuth("an installation store is required"))?;
        let http = reqwest::Client::builder()
            .user_agent(concat!(
                "chat-rs/",
                env!("CARGO_PKG_VERSION"),
                " (chat-linear)"
            ))
            .build()
            .map_err(|e| BuildError::HttpClient(Box::new(e)))?;
        Ok(LinearOAuth {
            inner: Arc::new(Inner {
                client_id,
                client_secret: Secret::new(client_secret),
                scopes: self.scopes,
                redirect_uri,
                authorize_url: http_url(
                    &self.authorize_url,
                    "authorize_url is not an http(s) URL",
                )?,
                token_url: http_url(&self.token_url, "token_url is not an http(s) URL")?,
                graphql_url: http_url(&self.graphql_url, "graphql_url is not an http(s) URL")?,
                client_auth: self.client_auth,
                prompt_consent: self.prompt_consent,
                success_url: self.success_url,
                refresh_margin: self.refresh_margin,
                request_timeout: self.request_timeout,
                http,
                signer: StateSigner::new(state_secret.as_bytes(), self.state_ttl, "linear"),
                cookie: self.cookie.filter(|c| !c.is_empty()),
                store,
                clock: self.clock,
                refreshing: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// What the token endpoint answers.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TokenAnswer {
    access_token: Option<String>,
    refresh_token: Option<String>,
    expires_in: Option<f64>,
    scope: Option<Value>,
    error: Option<String>,
}

/// Scopes as a string (space- or comma-separated) or an array.
fn scopes_of(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => s
            .split([' ', ','])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// An OAuth error code, made safe to show.
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

impl LinearOAuth {
    /// A builder with the defaults.
    pub fn builder() -> LinearOAuthBuilder {
        LinearOAuthBuilder::default()
    }

    /// The installation store the flow writes to.
    pub fn installations(&self) -> &Arc<dyn InstallationStore> {
        &self.inner.store
    }

    /// How long before its expiry an access token is refreshed.
    pub fn refresh_margin(&self) -> Duration {
        self.inner.refresh_margin
    }

    /// A fresh authorize URL and the nonce to bind it to a browser with the
    /// state cookie. [`install`](Self::install) is this as an HTTP answer.
    pub fn authorize(&self) -> Result<(String, String), OAuthError> {
        let i = &self.inner;
        let issued = i
            .signer
            .issue(i.clock.now())
            .ok_or(OAuthError::Internal("no random state"))?;
        let mut url = i.authorize_url.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("client_id", &i.client_id);
            q.append_pair("redirect_uri", &i.redirect_uri);
            q.append_pair("response_type", "code");
            q.append_pair("scope", &i.scopes.join(","));
            q.append_pair("state", &issued.state);
            q.append_pair("actor", "app");
            if i.prompt_consent {
                q.append_pair("prompt", "consent");
            }
        }
        Ok((url.into(), issued.nonce))
    }

    /// The install route: `302` to Linear's authorize page with a new
    /// `state`, and the cookie binding it to this browser.
    pub fn install(&self) -> Response<Bytes> {
        let (url, nonce) = match self.authorize() {
            Ok(pair) => pair,
            Err(e) => return text(e.status(), &e.to_string()),
        };
        let Ok(location) = HeaderValue::from_str(&url) else {
            return text(StatusCode::INTERNAL_SERVER_ERROR, "invalid authorize URL");
        };
        let mut r = empty(StatusCode::FOUND);
        r.headers_mut().insert(LOCATION, location);
        if let Some(name) = &self.inner.cookie
            && let Ok(cookie) = HeaderValue::from_str(&oauth_state::set_cookie(
                name,
                Some(&nonce),
                self.inner.signer.ttl(),
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
                tracing::info!(tenant = %installation.tenant, "linear: installed");
                match self
                    .inner
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
                        "The agent was installed. You can close this window.",
                    ),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "linear: install callback refused");
                text(e.status(), &e.to_string())
            }
        };
        if let Some(name) = &self.inner.cookie
            && let Ok(clear) =
                HeaderValue::from_str(&oauth_state::set_cookie(name, None, Duration::ZERO))
        {
            r.headers_mut().insert(SET_COOKIE, clear);
        }
        r
    }

    /// Completes an install from the callback request: checks the `state`,
    /// exchanges the `code`, discovers the app user and its organization
    /// with the `viewer` query, and stores the installation, which it
    /// returns.
    pub async fn complete(&self, parts: &http::request::Parts) -> Result<Installation, OAuthError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Query {
            code: Option<String>,
            state: Option<String>,
            error: Option<String>,
        }
        let i = &self.inner;
        let query: Query = serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
            .map_err(|_| OAuthError::State(StateError::Invalid))?;
        if let Some(error) = query.error.filter(|e| !e.is_empty()) {
            return Err(OAuthError::Denied(safe_code(&error)));
        }
        let cookie = i
            .cookie
            .as_deref()
            .map(|name| oauth_state::cookie(&parts.headers, name));
        i.signer
            .check(query.state.as_deref(), i.clock.now(), cookie)?;
        let code = query
            .code
            .filter(|c| !c.is_empty())
            .ok_or(OAuthError::MissingCode)?;
        let answer = self
            .token_request(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &i.redirect_uri),
            ])
            .await?;
        let now_ms = millis(i.clock.now());
        let access = answer
            .access_token
            .filter(|t| !t.is_empty())
            .ok_or(OAuthError::Incomplete("an access token"))?;
        let (app_user, organization) = self.viewer(&access).await?;
        let installation = Installation::new(Platform::Linear, organization, Secret::new(access))
            .with_bot_user_id(app_user)
            .with_app_id(i.client_id.clone())
            .with_scopes(scopes_of(answer.scope.as_ref()))
            .with_refresh(
                answer
                    .refresh_token
                    .filter(|t| !t.is_empty())
                    .map(Secret::new),
                expires_at(now_ms, answer.expires_in),
            )
            .with_installed_at_ms(now_ms);
        i.store
            .put(&installation)
            .await
            .map_err(OAuthError::Store)?;
        Ok(installation)
    }

    /// Renews `installation`'s access token with its refresh token, stores
    /// the result (keeping the old refresh token if Linear sends no new
    /// one) and returns it.
    pub async fn refresh(&self, installation: &Installation) -> Result<Installation, OAuthError> {
        let refresh = installation
            .refresh_token
            .as_ref()
            .filter(|t| !t.is_empty())
            .ok_or(OAuthError::NoRefreshToken)?;
        let answer = self
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh.expose()),
            ])
            .await?;
        let now_ms = millis(self.inner.clock.now());
        let mut renewed = installation.clone();
        renewed.access_token = answer
            .access_token
            .filter(|t| !t.is_empty())
            .map(Secret::new)
            .ok_or(OAuthError::Incomplete("an access token"))?;
        if let Some(new_refresh) = answer.refresh_token.filter(|t| !t.is_empty()) {
            renewed.refresh_token = Some(Secret::new(new_refresh));
        }
        renewed.expires_at_ms = expires_at(now_ms, answer.expires_in);
        let scopes = scopes_of(answer.scope.as_ref());
        if !scopes.is_empty() {
            renewed.scopes = scopes;
        }
        self.inner
            .store
            .put(&renewed)
            .await
            .map_err(OAuthError::Store)?;
        Ok(renewed)
    }

    /// The installation of `organization` with an access token that is not
    /// about to expire: refreshed first when it expires within the refresh
    /// margin. One refresh at a time per organization in this process; a
    /// refresh another replica made first is picked up from the store.
    pub async fn fresh_installation(
        &self,
        organization: &TenantId,
        now_ms: u64,
    ) -> Result<Option<Installation>, OAuthError> {
        let margin = u64::try_from(self.inner.refresh_margin.as_millis()).unwrap_or(u64::MAX);
        let store = &self.inner.store;
        let Some(current) = store
            .get(Platform::Linear, organization)
            .await
            .map_err(OAuthError::Store)?
        else {
            return Ok(None);
        };
        if !current.expires_within(now_ms, margin) || current.refresh_token.is_none() {
            return Ok(Some(current));
        }
        let lock = {
            let mut map = self
                .inner
                .refreshing
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            Arc::clone(map.entry(organization.clone()).or_default())
        };
        let _one_at_a_time = lock.lock().await;
        // Another task (or replica) may have refreshed while we waited.
        let Some(current) = store
            .get(Platform::Linear, organization)
            .await
            .map_err(OAuthError::Store)?
        else {
            return Ok(None);
        };
        if !current.expires_within(now_ms, margin) {
            return Ok(Some(current));
        }
        let failed = match self.refresh(&current).await {
            Ok(renewed) => return Ok(Some(renewed)),
            Err(OAuthError::Refused(code)) => {
                // A replica that refreshed first may have rotated the refresh
                // token under us: its result is in the store.
                let latest = store
                    .get(Platform::Linear, organization)
                    .await
                    .map_err(OAuthError::Store)?;
                match latest {
                    Some(l) if l.access_token != current.access_token => return Ok(Some(l)),
                    _ => OAuthError::Refused(code),
                }
            }
            Err(e) => e,
        };
        if current.expires_within(now_ms, 0) {
            return Err(failed);
        }
        // Not expired yet: go on with it, and try again on the next call.
        tracing::warn!(tenant = %organization, error = %failed, "linear: token refresh failed; using the current token until it expires");
        Ok(Some(current))
    }

    async fn token_request(&self, fields: &[(&str, &str)]) -> Result<TokenAnswer, OAuthError> {
        let i = &self.inner;
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        let mut request = i
            .http
            .post(i.token_url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .timeout(i.request_timeout);
        match i.client_auth {
            ClientAuth::Body => {
                form.push(("client_id", &i.client_id));
                form.push(("client_secret", i.client_secret.expose()));
            }
            ClientAuth::Basic => {
                let mut header = HeaderValue::from_str(&format!(
                    "Basic {}",
                    base64(format!("{}:{}", i.client_id, i.client_secret.expose()).as_bytes())
                ))
                .map_err(|_| OAuthError::Internal("client credentials are not a header value"))?;
                header.set_sensitive(true);
                request = request.header(AUTHORIZATION, header);
            }
        }
        let body = serde_urlencoded::to_string(&form)
            .map_err(|_| OAuthError::Internal("the token request could not be encoded"))?;
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        let answer: TokenAnswer = serde_json::from_slice(&bytes).unwrap_or_default();
        if let Some(code) = answer.error.as_deref().filter(|c| !c.is_empty()) {
            return Err(OAuthError::Refused(safe_code(code)));
        }
        if !status.is_success() {
            return Err(OAuthError::Transport(AdapterError::Status(status)));
        }
        Ok(answer)
    }

    /// `viewer { id organization { id } }` with the new token: the app user
    /// and the organization the token is for.
    async fn viewer(&self, access_token: &str) -> Result<(String, String), OAuthError> {
        let i = &self.inner;
        let op = operations::viewer_organization();
        let mut auth = HeaderValue::from_str(&format!("Bearer {access_token}"))
            .map_err(|_| OAuthError::Incomplete("a usable access token"))?;
        auth.set_sensitive(true);
        let response = i
            .http
            .post(i.graphql_url.clone())
            .header(AUTHORIZATION, auth)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .timeout(i.request_timeout)
            .body(op.body().to_string())
            .send()
            .await
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        if !status.is_success() {
            return Err(OAuthError::Transport(AdapterError::Status(status)));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| OAuthError::Transport(AdapterError::Decode(Box::new(e))))?;
        let viewer = answer.pointer("/data/viewer");
        let id = viewer
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(OAuthError::Incomplete("the viewer's id"))?;
        let organization = viewer
            .and_then(|v| v.pointer("/organization/id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(OAuthError::Incomplete("the viewer's organization"))?;
        Ok((id.to_owned(), organization.to_owned()))
    }
}

fn expires_at(now_ms: u64, expires_in: Option<f64>) -> Option<u64> {
    let secs = expires_in.filter(|s| s.is_finite() && *s >= 0.0)?;
    let ms = Duration::try_from_secs_f64(secs).ok()?.as_millis();
    Some(now_ms.saturating_add(u64::try_from(ms).unwrap_or(u64::MAX)))
}

/// Standard base64 with padding (for HTTP Basic).
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn scopes_are_read_in_every_shape() {
        let want = ["read", "write"];
        assert_eq!(scopes_of(Some(&Value::from("read write"))), want);
        assert_eq!(scopes_of(Some(&Value::from("read,write"))), want);
        assert_eq!(scopes_of(Some(&serde_json::json!(["read", "write"]))), want);
        assert!(scopes_of(None).is_empty());
        assert!(scopes_of(Some(&Value::from(3))).is_empty());
    }

    #[test]
    fn expiries_are_bounded() {
        assert_eq!(expires_at(1_000, Some(2.0)), Some(3_000));
        assert_eq!(expires_at(1_000, None), None);
        assert_eq!(expires_at(1_000, Some(-1.0)), None);
        assert_eq!(expires_at(1_000, Some(f64::NAN)), None);
        assert_eq!(expires_at(u64::MAX, Some(1e300)), None);
    }
}
