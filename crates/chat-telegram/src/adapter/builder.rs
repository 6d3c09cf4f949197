//! [`TelegramAdapterBuilder`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chat_core::{InstallationStore, Secret};
use chat_http::HttpOptions;
use ring::hmac;

use super::TelegramAdapter;
use crate::client::{DEFAULT_API_URL, TelegramClient, bot_id_of};
use crate::error::BuildError;
use crate::secret::{Secrets, well_formed};

/// Builds a [`TelegramAdapter`]: exactly one of a bot token with its secret
/// token (one bot), or an installation store with a webhook secret (several
/// bots).
///
/// ```
/// use chat_telegram::TelegramAdapter;
///
/// let telegram = TelegramAdapter::builder()
///     .bot_token("123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11")
///     .secret_token("a-secret_token-for-setWebhook")
///     .build()?;
/// assert_eq!(telegram.secret_token_for("123456"), "a-secret_token-for-setWebhook");
/// # Ok::<_, chat_telegram::BuildError>(())
/// ```
#[derive(Default)]
pub struct TelegramAdapterBuilder {
    name: Option<String>,
    bot_token: Option<String>,
    secret_token: Option<String>,
    bot_username: Option<String>,
    installations: Option<Arc<dyn InstallationStore>>,
    webhook_secret: Option<Vec<u8>>,
    api_url: Option<String>,
    http: HttpOptions,
    max_body: Option<usize>,
}

impl std::fmt::Debug for TelegramAdapterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramAdapterBuilder")
            .field("name", &self.name)
            .field("bot_username", &self.bot_username)
            .field("installation_mode", &self.installations.is_some())
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl TelegramAdapterBuilder {
    /// The adapter's name (its webhook's), default `telegram`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// One bot: its token from @BotFather (`123456:ABC…`).
    #[must_use]
    pub fn bot_token(mut self, token: impl Into<String>) -> Self {
        self.bot_token = Some(token.into());
        self
    }

    /// One bot: the `secret_token` its webhook was set with (1–256 of
    /// `A-Z a-z 0-9 _ -`); every delivery must carry it.
    #[must_use]
    pub fn secret_token(mut self, token: impl Into<String>) -> Self {
        self.secret_token = Some(token.into());
        self
    }

    /// The bot's username (without `@`), so `@username` mentions are
    /// recognized before `getMe` was asked. Single-bot mode.
    #[must_use]
    pub fn bot_username(mut self, username: impl Into<String>) -> Self {
        self.bot_username = Some(username.into());
        self
    }

    /// Several bots: their tokens in `store` (an installation per bot, the
    /// tenant its id), instead of one bot token.
    #[must_use]
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.installations = Some(store);
        self
    }

    /// Several bots: the secret each bot's secret token is derived from (at
    /// least 16 bytes; the same on every replica).
    #[must_use]
    pub fn webhook_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.webhook_secret = Some(secret.as_ref().to_vec());
        self
    }

    /// The Bot API's base URL, default `https://api.telegram.org` (a local
    /// Bot API server, or a fake in tests).
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

    /// The largest delivery accepted, default 1 MiB.
    #[must_use]
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body = Some(limit);
        self
    }

    /// Checks the settings and builds the adapter.
    ///
    /// # Errors
    /// A [`BuildError`] naming what is missing, conflicting or malformed.
    pub fn build(self) -> Result<TelegramAdapter, BuildError> {
        let api = self.api_url.as_deref().unwrap_or(DEFAULT_API_URL);
        if !chat_http::is_base_url(api) {
            return Err(BuildError::InvalidApiUrl);
        }
        let mut usernames = HashMap::new();
        let (secrets, token, installations) = match (self.bot_token, self.installations) {
            (Some(_), Some(_)) => return Err(BuildError::TwoCredentialSources),
            (None, None) => return Err(BuildError::NoCredentials),
            (Some(token), None) => {
                let bot_id = bot_id_of(&token);
                if bot_id.is_empty() || !bot_id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(BuildError::InvalidBotToken);
                }
                let secret = self.secret_token.ok_or(BuildError::MissingSecretToken)?;
                if !well_formed(&secret) {
                    return Err(BuildError::InvalidSecretToken);
                }
                if let Some(name) = self.bot_username {
                    usernames.insert(bot_id.to_owned(), name.trim_start_matches('@').to_owned());
                }
                let secrets = Secrets::Fixed {
                    bot_id: bot_id.to_owned(),
                    token: secret,
                };
                (secrets, Secret::new(token), None)
            }
            (None, Some(store)) => {
                let key = self
                    .webhook_secret
                    .ok_or(BuildError::MissingWebhookSecret)?;
                if key.len() < 16 {
                    return Err(BuildError::WeakWebhookSecret);
                }
                let secrets = Secrets::Derived(hmac::Key::new(hmac::HMAC_SHA256, &key));
                (secrets, Secret::new(""), Some(store))
            }
        };
        let client = TelegramClient::new(api, token, self.http).map_err(BuildError::Http)?;
        Ok(TelegramAdapter {
            name: self.name.unwrap_or_else(|| "telegram".to_owned()),
            secrets,
            client,
            installations,
            usernames: Mutex::new(usernames),
            max_body: self.max_body.unwrap_or(1024 * 1024),
            drafts: Mutex::default(),
        })
    }
}
