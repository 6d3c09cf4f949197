//! [`SlackOAuth`]: the OAuth v2 install flow that distributes a bot to many
//! workspaces and fills an [`InstallationStore`](chat_core::InstallationStore)
//! — chat-installations' [`OAuthFlow`] with Slack's part,
//! [`SlackOAuthProvider`].

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use chat_core::{AdapterError, Installation, Platform, Secret};
use chat_installations::oauth::{
    OAuthClient, OAuthError, OAuthFlow, OAuthFlowBuilder, OAuthProvider, ProviderDefaults,
};
use serde::Deserialize;

use crate::client::{DEFAULT_API_BASE_URL, SlackClient};
use crate::error::BuildError;

/// Slack's authorize page for OAuth v2.
pub const DEFAULT_AUTHORIZE_URL: &str = "https://slack.com/oauth/v2/authorize";
/// The cookie that binds an install's `state` to the browser that started it.
pub const DEFAULT_STATE_COOKIE: &str = "chat_rs_slack_oauth";

/// The OAuth v2 install flow of a Slack app distributed to many workspaces
/// (see [`OAuthFlow`] for the routes and their answers).
///
/// The callback exchanges the `code` through `oauth.v2.access`, learns the
/// bot id with `auth.test`, and stores the installation keyed by the
/// enterprise id for an org-wide install, else the team id — the same tenant
/// the adapter reads from every delivery.
///
/// ```no_run
/// use std::sync::Arc;
/// use axum::{Router, routing::get};
/// use chat_core::InstallationStore;
/// use chat_slack::{SlackOAuth, SlackOAuthProvider};
///
/// # fn app(store: Arc<dyn InstallationStore>) -> Result<Router, Box<dyn std::error::Error>> {
/// let oauth = SlackOAuth::builder(SlackOAuthProvider::new()?)
///     .client_id(std::env::var("SLACK_CLIENT_ID")?)
///     .client_secret(std::env::var("SLACK_CLIENT_SECRET")?)
///     .state_secret(std::env::var("SLACK_STATE_SECRET")?)
///     .scopes(["app_mentions:read", "channels:history", "chat:write", "reactions:write"])
///     .redirect_uri("https://bot.example.com/slack/oauth/callback")
///     .success_url("https://bot.example.com/installed")
///     .installations(store)
///     .build()?;
/// let install = oauth.clone();
/// let app = Router::new()
///     .route("/slack/install", get(move |parts: http::request::Parts| {
///         let oauth = install.clone();
///         async move { oauth.install(&parts).map(axum::body::Body::from) }
///     }))
///     .route("/slack/oauth/callback", get(move |parts: http::request::Parts| {
///         let oauth = oauth.clone();
///         async move { oauth.callback(&parts).await.map(axum::body::Body::from) }
///     }));
/// # Ok(app) }
/// ```
pub type SlackOAuth = OAuthFlow<SlackOAuthProvider>;

/// The builder of a [`SlackOAuth`].
pub type SlackOAuthBuilder = OAuthFlowBuilder<SlackOAuthProvider>;

/// Slack's part of the install flow: `user_scope` on the authorize page, the
/// code exchange through `oauth.v2.access` and the bot id through
/// `auth.test`, against the Web API at a configurable base URL.
pub struct SlackOAuthProvider {
    api: SlackClient,
    user_scopes: Vec<String>,
}

impl fmt::Debug for SlackOAuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackOAuthProvider")
            .field("api", &self.api)
            .field("user_scopes", &self.user_scopes)
            .finish()
    }
}

/// Settings of a [`SlackOAuthProvider`].
#[derive(Debug)]
#[must_use]
pub struct SlackOAuthProviderBuilder {
    api_base_url: String,
    user_scopes: Vec<String>,
    request_timeout: Duration,
}

impl SlackOAuthProviderBuilder {
    /// The Web API base URL for `oauth.v2.access` and `auth.test` (default
    /// `https://slack.com/api`).
    pub fn api_base_url(mut self, url: impl Into<String>) -> Self {
        self.api_base_url = url.into();
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

    /// The timeout of one request to Slack (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Builds the provider (its HTTP client).
    pub fn build(self) -> Result<SlackOAuthProvider, BuildError> {
        let api = SlackClient::builder(String::new())
            .base_url(self.api_base_url)
            .max_retries(1)
            .request_timeout(self.request_timeout)
            .build_unauthenticated()?;
        Ok(SlackOAuthProvider {
            api,
            user_scopes: self.user_scopes,
        })
    }
}

impl SlackOAuthProvider {
    /// Settings, with the defaults.
    pub fn builder() -> SlackOAuthProviderBuilder {
        SlackOAuthProviderBuilder {
            api_base_url: DEFAULT_API_BASE_URL.to_owned(),
            user_scopes: Vec::new(),
            request_timeout: Duration::from_secs(10),
        }
    }

    /// The provider with the defaults: slack.com, no user scopes.
    pub fn new() -> Result<Self, BuildError> {
        Self::builder().build()
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

#[async_trait]
impl OAuthProvider for SlackOAuthProvider {
    fn platform(&self) -> Platform {
        Platform::SLACK
    }

    fn defaults(&self) -> ProviderDefaults {
        ProviderDefaults::new(DEFAULT_AUTHORIZE_URL, DEFAULT_STATE_COOKIE)
            .installed_text("The app was installed. You can close this window.")
    }

    fn authorize_params(&self) -> Vec<(&'static str, String)> {
        if self.user_scopes.is_empty() {
            Vec::new()
        } else {
            vec![("user_scope", self.user_scopes.join(","))]
        }
    }

    async fn exchange(
        &self,
        client: &OAuthClient,
        code: &str,
        now_ms: u64,
    ) -> Result<Installation, OAuthError> {
        let mut form = vec![
            ("client_id", client.id()),
            ("client_secret", client.secret().expose()),
            ("code", code),
        ];
        if let Some(uri) = client.redirect_uri() {
            form.push(("redirect_uri", uri));
        }
        let answer = self
            .api
            .call_form_unauthenticated("oauth.v2.access", &form)
            .await
            .map_err(OAuthError::from_platform)?;
        let a = Access::deserialize(&answer)
            .map_err(|e| OAuthError::Transport(AdapterError::Decode(Box::new(e))))?;
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
        let mut installation = Installation::new(Platform::SLACK, tenant, Secret::new(token))
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
        Ok(installation)
    }
}
