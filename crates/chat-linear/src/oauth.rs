//! [`LinearOAuth`]: the OAuth `actor=app` install flow of a Linear agent, and
//! the refresh of its tokens — chat-installations' [`OAuthFlow`] with
//! Linear's part, [`LinearOAuthProvider`].
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

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use chat_core::{AdapterError, Installation, Platform, Secret};
use chat_installations::oauth::{
    OAuthClient, OAuthError, OAuthFlow, OAuthFlowBuilder, OAuthProvider, ProviderDefaults,
    safe_code,
};
use http::HeaderValue;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::Value;

use crate::error::BuildError;
use crate::operations;

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

/// The OAuth install flow of a Linear agent (`actor=app`), distributed to many
/// organizations, and the refresh of their tokens (see [`OAuthFlow`] for the
/// routes and their answers). Cheap to clone.
///
/// The callback exchanges the code at the token endpoint, asks GraphQL
/// `viewer { id organization { id } }` for the app user and its organization,
/// and stores the installation (tenant = organization id, bot user = the app
/// user). [`refresh`](OAuthFlow::refresh) and
/// [`fresh_installation`](OAuthFlow::fresh_installation) renew tokens before
/// they expire; the adapter calls them when given this flow
/// ([`LinearAdapterBuilder::token_refresh`](crate::LinearAdapterBuilder::token_refresh)).
///
/// ```no_run
/// use std::sync::Arc;
/// use chat_core::InstallationStore;
/// use chat_linear::{LinearAdapter, LinearOAuth, LinearOAuthProvider};
///
/// # fn setup(store: Arc<dyn InstallationStore>) -> Result<(), Box<dyn std::error::Error>> {
/// let oauth = LinearOAuth::builder(LinearOAuthProvider::new()?)
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
/// // Mount `oauth.install(&parts)` and `oauth.callback(&parts)` on your HTTP server.
/// # Ok(()) }
/// ```
pub type LinearOAuth = OAuthFlow<LinearOAuthProvider>;

/// The builder of a [`LinearOAuth`].
pub type LinearOAuthBuilder = OAuthFlowBuilder<LinearOAuthProvider>;

/// Linear's part of the install flow: `response_type=code` and `actor=app`
/// on the authorize page, the code exchange and the refresh at the token
/// endpoint, and the `viewer` query naming the app user and its organization.
pub struct LinearOAuthProvider {
    token_url: http::Uri,
    graphql_url: http::Uri,
    client_auth: ClientAuth,
    prompt_consent: bool,
    request_timeout: Duration,
    transport: chat_http::Transport,
}

impl fmt::Debug for LinearOAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearOAuthProvider")
            .field("token_url", &self.token_url.to_string())
            .field("graphql_url", &self.graphql_url.to_string())
            .field("client_auth", &self.client_auth)
            .field("prompt_consent", &self.prompt_consent)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`LinearOAuthProvider`].
#[derive(Debug)]
#[must_use]
pub struct LinearOAuthProviderBuilder {
    token_url: String,
    graphql_url: String,
    client_auth: ClientAuth,
    prompt_consent: bool,
    request_timeout: Duration,
}

fn http_url(s: &str, what: &'static str) -> Result<http::Uri, BuildError> {
    s.parse::<http::Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
        .ok_or(BuildError::OAuth(what))
}

impl LinearOAuthProviderBuilder {
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

    /// The timeout of one request to Linear (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Builds the provider; [`BuildError::OAuth`] names an invalid setting.
    pub fn build(self) -> Result<LinearOAuthProvider, BuildError> {
        if self.request_timeout.is_zero() {
            return Err(BuildError::OAuth("request_timeout is zero"));
        }
        let transport = chat_http::Transport::new(&chat_http::Proxy::FromEnv, "chat-linear")?;
        Ok(LinearOAuthProvider {
            token_url: http_url(&self.token_url, "token_url is not an http(s) URL")?,
            graphql_url: http_url(&self.graphql_url, "graphql_url is not an http(s) URL")?,
            client_auth: self.client_auth,
            prompt_consent: self.prompt_consent,
            request_timeout: self.request_timeout,
            transport,
        })
    }
}

impl LinearOAuthProvider {
    /// Settings, with the defaults.
    pub fn builder() -> LinearOAuthProviderBuilder {
        LinearOAuthProviderBuilder {
            token_url: DEFAULT_TOKEN_URL.to_owned(),
            graphql_url: crate::DEFAULT_ENDPOINT.to_owned(),
            client_auth: ClientAuth::Body,
            prompt_consent: false,
            request_timeout: Duration::from_secs(10),
        }
    }

    /// The provider with the defaults: linear.app, form-field client
    /// authentication.
    pub fn new() -> Result<Self, BuildError> {
        Self::builder().build()
    }

    /// One request to Linear, within the request timeout: its status and
    /// body (capped; a redirect is not followed).
    async fn send(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<(http::StatusCode, bytes::Bytes), OAuthError> {
        let answer = self
            .transport
            .send(request, self.request_timeout)
            .await
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        Ok((answer.status, answer.body))
    }

    async fn token_request(
        &self,
        client: &OAuthClient,
        fields: &[(&str, &str)],
    ) -> Result<TokenAnswer, OAuthError> {
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        let mut request = http::Request::post(self.token_url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        match self.client_auth {
            ClientAuth::Body => {
                form.push(("client_id", client.id()));
                form.push(("client_secret", client.secret().expose()));
            }
            ClientAuth::Basic => {
                let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    client.id(),
                    client.secret().expose()
                ));
                let mut header =
                    HeaderValue::from_str(&format!("Basic {credentials}")).map_err(|_| {
                        OAuthError::Internal("client credentials are not a header value")
                    })?;
                header.set_sensitive(true);
                request = request.header(AUTHORIZATION, header);
            }
        }
        let body = serde_urlencoded::to_string(&form)
            .map_err(|_| OAuthError::Internal("the token request could not be encoded"))?;
        let request = request
            .body(bytes::Bytes::from(body))
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        let (status, bytes) = self.send(request).await?;
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
        let op = operations::viewer_organization();
        let mut auth = HeaderValue::from_str(&format!("Bearer {access_token}"))
            .map_err(|_| OAuthError::Incomplete("a usable access token"))?;
        auth.set_sensitive(true);
        let request = http::Request::post(self.graphql_url.clone())
            .header(AUTHORIZATION, auth)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(bytes::Bytes::from(op.body().to_string()))
            .map_err(|e| OAuthError::Transport(AdapterError::Transport(Box::new(e))))?;
        let (status, bytes) = self.send(request).await?;
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

fn expires_at(now_ms: u64, expires_in: Option<f64>) -> Option<u64> {
    let secs = expires_in.filter(|s| s.is_finite() && *s >= 0.0)?;
    let ms = Duration::try_from_secs_f64(secs).ok()?.as_millis();
    Some(now_ms.saturating_add(u64::try_from(ms).unwrap_or(u64::MAX)))
}

#[async_trait]
impl OAuthProvider for LinearOAuthProvider {
    fn platform(&self) -> Platform {
        Platform::LINEAR
    }

    fn defaults(&self) -> ProviderDefaults {
        ProviderDefaults::new(DEFAULT_AUTHORIZE_URL, DEFAULT_STATE_COOKIE)
            .scopes(DEFAULT_SCOPES)
            .redirect_uri_required()
            .installed_text("The agent was installed. You can close this window.")
    }

    fn check(&self, client: &OAuthClient) -> Result<(), &'static str> {
        if client.scopes().iter().any(|s| s == "admin") {
            return Err("the admin scope cannot be combined with actor=app");
        }
        Ok(())
    }

    fn authorize_params(&self) -> Vec<(&'static str, String)> {
        let mut params = vec![
            ("response_type", "code".to_owned()),
            ("actor", "app".to_owned()),
        ];
        if self.prompt_consent {
            params.push(("prompt", "consent".to_owned()));
        }
        params
    }

    async fn exchange(
        &self,
        client: &OAuthClient,
        code: &str,
        now_ms: u64,
    ) -> Result<Installation, OAuthError> {
        let redirect_uri = client.redirect_uri().unwrap_or_default();
        let answer = self
            .token_request(
                client,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", redirect_uri),
                ],
            )
            .await?;
        let access = answer
            .access_token
            .filter(|t| !t.is_empty())
            .ok_or(OAuthError::Incomplete("an access token"))?;
        let (app_user, organization) = self.viewer(&access).await?;
        Ok(
            Installation::new(Platform::LINEAR, organization, Secret::new(access))
                .with_bot_user_id(app_user)
                .with_app_id(client.id().to_owned())
                .with_scopes(scopes_of(answer.scope.as_ref()))
                .with_refresh(
                    answer
                        .refresh_token
                        .filter(|t| !t.is_empty())
                        .map(Secret::new),
                    expires_at(now_ms, answer.expires_in),
                )
                .with_installed_at_ms(now_ms),
        )
    }

    /// Keeps the old refresh token when Linear sends no new one.
    async fn refresh(
        &self,
        client: &OAuthClient,
        installation: &Installation,
        now_ms: u64,
    ) -> Result<Installation, OAuthError> {
        let refresh = installation
            .refresh_token
            .as_ref()
            .filter(|t| !t.is_empty())
            .ok_or(OAuthError::NoRefreshToken)?;
        let answer = self
            .token_request(
                client,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh.expose()),
                ],
            )
            .await?;
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
        Ok(renewed)
    }
}
