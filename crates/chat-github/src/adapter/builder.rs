//! [`GitHubAdapterBuilder`].

use std::sync::Arc;

use chat_core::Secret;
use chat_http::HttpOptions;
use ring::hmac;

use super::{AppTokens, Auth, GitHubAdapter, MAX_BODY};
use crate::app_auth::{AppKey, InstallationTokens};
use crate::client::{DEFAULT_API_URL, GitHubClient};
use crate::error::BuildError;
use crate::inbound::Identity;

/// Builds a [`GitHubAdapter`]: the webhook secret, and exactly one of a
/// GitHub App (its id, private key and slug) or a personal access token
/// (with the login of its user).
///
/// ```
/// use chat_github::GitHubAdapter;
///
/// let github = GitHubAdapter::builder()
///     .webhook_secret("webhook-secret")
///     .token("github_pat_…")
///     .login("triage-bot")
///     .build()?;
/// assert_eq!(github.login(), "triage-bot");
/// # Ok::<_, chat_github::BuildError>(())
/// ```
#[derive(Default)]
pub struct GitHubAdapterBuilder {
    name: Option<String>,
    webhook_secret: Option<String>,
    app_id: Option<String>,
    private_key: Option<String>,
    app_slug: Option<String>,
    token: Option<String>,
    login: Option<String>,
    api_url: Option<String>,
    http: HttpOptions,
    max_body: Option<usize>,
}

impl std::fmt::Debug for GitHubAdapterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubAdapterBuilder")
            .field("name", &self.name)
            .field("app_id", &self.app_id)
            .field("app_slug", &self.app_slug)
            .field("login", &self.login)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl GitHubAdapterBuilder {
    /// The adapter's name (its webhook's), default `github`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The webhook's secret, the key of every delivery's signature.
    #[must_use]
    pub fn webhook_secret(mut self, secret: impl Into<String>) -> Self {
        self.webhook_secret = Some(secret.into());
        self
    }

    /// A GitHub App: its id (or client id) and the PEM private key from its
    /// settings page.
    #[must_use]
    pub fn app(mut self, app_id: impl Into<String>, private_key_pem: impl Into<String>) -> Self {
        self.app_id = Some(app_id.into());
        self.private_key = Some(private_key_pem.into());
        self
    }

    /// The App's slug (`https://github.com/apps/<slug>`): it is mentioned
    /// as `@<slug>` and comments as `<slug>[bot]`.
    #[must_use]
    pub fn app_slug(mut self, slug: impl Into<String>) -> Self {
        self.app_slug = Some(slug.into());
        self
    }

    /// A personal (or fine-grained) access token instead of an App.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// With a personal token: the login of its user, which the bot is
    /// mentioned as and comments as.
    #[must_use]
    pub fn login(mut self, login: impl Into<String>) -> Self {
        self.login = Some(login.into());
        self
    }

    /// The REST API's base URL, default [`DEFAULT_API_URL`] (a GitHub
    /// Enterprise Server's `https://HOST/api/v3`, or a fake in tests).
    #[must_use]
    pub fn api_url(mut self, url: impl Into<String>) -> Self {
        self.api_url = Some(url.into());
        self
    }

    /// The outbound HTTP settings.
    #[must_use]
    pub fn http(mut self, options: HttpOptions) -> Self {
        self.http = options;
        self
    }

    /// The largest delivery accepted, default [`MAX_BODY`] (25 MB, the
    /// largest GitHub sends).
    #[must_use]
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body = Some(limit);
        self
    }

    /// Checks the settings and builds the adapter.
    ///
    /// # Errors
    /// A [`BuildError`] naming what is missing, conflicting or malformed.
    pub fn build(self) -> Result<GitHubAdapter, BuildError> {
        let api = self.api_url.as_deref().unwrap_or(DEFAULT_API_URL);
        if !chat_http::is_base_url(api) {
            return Err(BuildError::InvalidApiUrl);
        }
        let secret = self
            .webhook_secret
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::MissingWebhookSecret)?;
        let name = self.name.unwrap_or_else(|| "github".to_owned());
        let client = GitHubClient::new(api, &format!("chat-rs ({name})"), self.http)
            .map_err(BuildError::Http)?;
        let app = self.app_id.zip(self.private_key);
        let token = self.token.filter(|t| !t.is_empty());
        let (auth, identity) = match (app, token) {
            (Some(_), Some(_)) => return Err(BuildError::TwoCredentialSources),
            (None, None) => return Err(BuildError::NoCredentials),
            (Some((id, pem)), None) => {
                let slug = self
                    .app_slug
                    .filter(|s| !s.is_empty())
                    .ok_or(BuildError::MissingLogin)?;
                let key =
                    AppKey::from_pem(id.clone(), &pem).map_err(BuildError::InvalidPrivateKey)?;
                let source = AppTokens {
                    key: Arc::new(key),
                    client: client.clone(),
                };
                let identity = Identity {
                    login: format!("{slug}[bot]"),
                    handle: slug,
                    app_id: id.parse().ok(),
                };
                (
                    Auth::App(InstallationTokens::new(Arc::new(source))),
                    identity,
                )
            }
            (None, Some(token)) => {
                let login = self
                    .login
                    .filter(|l| !l.is_empty())
                    .ok_or(BuildError::MissingLogin)?;
                let identity = Identity {
                    handle: login.clone(),
                    login,
                    app_id: None,
                };
                (Auth::Token(Secret::new(token)), identity)
            }
        };
        Ok(GitHubAdapter {
            name,
            webhook_key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            identity,
            auth,
            client,
            max_body: self.max_body.unwrap_or(MAX_BODY),
        })
    }
}
