//! [`GitHubAdapter`]: the adapter and how it authenticates; its settings in
//! `builder`; the webhook side in `webhook`; comments and reactions in
//! `messaging`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use chat_core::{AdapterError, Secret, TenantId};
use ring::hmac;
use serde_json::json;

use crate::app_auth::{AppKey, InstallationToken, InstallationTokens, TokenSource, instant_of};
use crate::client::GitHubClient;
use crate::inbound::Identity;

mod builder;
mod discussions;
mod messaging;
mod webhook;

pub use builder::GitHubAdapterBuilder;
pub use webhook::{DELIVERY_HEADER, EVENT_HEADER, HOOK_HEADER};

/// How long a delivery's dedupe mark lives: GitHub never resends a
/// delivery by itself, but one can be redelivered by hand or through the
/// API for three days, with the same `X-GitHub-Delivery`
/// ([Redelivering webhooks](https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks)).
pub const DEDUPE_TTL: Duration = Duration::from_secs(3 * 24 * 60 * 60);

/// The largest payload GitHub sends: 25 MB
/// ([Payload cap](https://docs.github.com/en/webhooks/webhook-events-and-payloads#payload-cap)).
pub const MAX_BODY: usize = 25 * 1024 * 1024;

/// The longest comment body GitHub takes, in characters.
pub const MAX_COMMENT_CHARS: usize = 65_536;

/// How the adapter authenticates its calls.
pub(crate) enum Auth {
    /// A personal (or fine-grained) access token, for every repository.
    Token(Secret),
    /// A GitHub App: a token per installation (the event's tenant).
    App(InstallationTokens),
}

/// The GitHub adapter: verifies, parses and answers webhook deliveries,
/// and comments, edits, deletes and reacts through the REST API — as a
/// GitHub App (a token per installation, each a tenant) or with one
/// personal access token.
///
/// Built with [`GitHubAdapter::builder`]. Its `Debug` never shows a token,
/// a key or a secret.
pub struct GitHubAdapter {
    pub(crate) name: String,
    pub(crate) webhook_key: hmac::Key,
    pub(crate) identity: Identity,
    pub(crate) auth: Auth,
    pub(crate) client: GitHubClient,
    pub(crate) max_body: usize,
}

impl std::fmt::Debug for GitHubAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubAdapter")
            .field("name", &self.name)
            .field("login", &self.identity.login)
            .field("app", &matches!(self.auth, Auth::App(_)))
            .field("api", &self.client.api_url())
            .finish_non_exhaustive()
    }
}

impl GitHubAdapter {
    /// Starts configuring an adapter.
    pub fn builder() -> GitHubAdapterBuilder {
        GitHubAdapterBuilder::default()
    }

    /// The REST client.
    pub fn client(&self) -> &GitHubClient {
        &self.client
    }

    /// The login the bot's comments carry (`<app-slug>[bot]` for an App).
    pub fn login(&self) -> &str {
        &self.identity.login
    }

    /// The token for `tenant`'s calls: the installation's (fetched once,
    /// refreshed before it expires), or the personal token.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a tenant that is not an installation
    /// id (App mode); the token fetch's error.
    pub async fn token_for(&self, tenant: &TenantId) -> Result<Secret, AdapterError> {
        match &self.auth {
            Auth::Token(t) => Ok(t.clone()),
            Auth::App(tokens) => {
                let installation: u64 = tenant.as_str().parse().map_err(|_| {
                    AdapterError::Invalid(format!("not a GitHub App installation: {tenant}"))
                })?;
                tokens.get(installation).await
            }
        }
    }
}

impl GitHubAdapter {
    /// Creates a check run in repository `repo` (`owner/name`) of `tenant`
    /// (the App's installation; the App needs *Checks* write); its id.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a malformed repository or summary past
    /// GitHub's 65,535 characters; the call's error.
    pub async fn create_check_run(
        &self,
        tenant: &TenantId,
        repo: &str,
        run: &crate::CheckRun,
    ) -> Result<u64, AdapterError> {
        let valid_repo = repo
            .split_once('/')
            .is_some_and(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'));
        if !valid_repo {
            return Err(AdapterError::Invalid(format!("not a repository: {repo:?}")));
        }
        if run
            .output
            .as_ref()
            .is_some_and(|o| o.summary.chars().count() > 65_535)
        {
            return Err(AdapterError::Invalid(
                "a check run summary of over 65,535 characters".to_owned(),
            ));
        }
        let token = self.token_for(tenant).await?;
        let body = serde_json::to_value(run).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let answer = self
            .client
            .call(
                http::Method::POST,
                &format!("repos/{repo}/check-runs"),
                &token,
                Some(&body),
            )
            .await?;
        answer["id"]
            .as_u64()
            .ok_or_else(|| AdapterError::Decode("a check run answer without id".into()))
    }

    /// Forgets installation `id`'s token (App mode; nothing otherwise).
    pub(crate) fn forget_installation(&self, id: u64) {
        if let Auth::App(tokens) = &self.auth {
            tokens.forget(id);
        }
    }
}

/// Installation tokens from GitHub, asked for with the App's JWT.
pub(crate) struct AppTokens {
    pub(crate) key: Arc<AppKey>,
    pub(crate) client: GitHubClient,
}

#[async_trait]
impl TokenSource for AppTokens {
    async fn fetch(&self, installation: u64) -> Result<InstallationToken, AdapterError> {
        let now = SystemTime::now();
        let jwt = self.key.jwt(now)?;
        let answer = self
            .client
            .call(
                http::Method::POST,
                &format!("app/installations/{installation}/access_tokens"),
                &jwt,
                Some(&json!({})),
            )
            .await?;
        let token = answer["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                AdapterError::Decode("an installation token answer without token".into())
            })?;
        // An hour, GitHub says; its own `expires_at` when it reads.
        let expires_at = answer["expires_at"]
            .as_str()
            .and_then(|at| instant_of(at, now))
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        Ok(InstallationToken {
            token: Secret::new(token),
            expires_at,
        })
    }
}
