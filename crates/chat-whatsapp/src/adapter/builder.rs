//! [`WhatsAppAdapterBuilder`].

use std::sync::{Arc, Mutex};

use chat_core::{InstallationStore, Secret};
use chat_http::HttpOptions;
use ring::hmac;

use super::WhatsAppAdapter;
use crate::client::{DEFAULT_API_URL, WhatsAppClient};
use crate::error::BuildError;

/// Builds a [`WhatsAppAdapter`]: the app secret and verify token, and
/// exactly one of an access token with its phone number id (one number) or
/// an installation store (several numbers, each a tenant by its phone number
/// id, its access token in the store).
///
/// ```
/// use chat_whatsapp::WhatsAppAdapter;
///
/// let whatsapp = WhatsAppAdapter::builder()
///     .app_secret("app-secret")
///     .verify_token("verify-me")
///     .access_token("EAAG-access-token")
///     .phone_number_id("106540352242922")
///     .build()?;
/// # let _ = whatsapp;
/// # Ok::<_, chat_whatsapp::BuildError>(())
/// ```
#[derive(Default)]
pub struct WhatsAppAdapterBuilder {
    name: Option<String>,
    app_secret: Option<String>,
    verify_token: Option<String>,
    access_token: Option<String>,
    phone_number_id: Option<String>,
    installations: Option<Arc<dyn InstallationStore>>,
    api_url: Option<String>,
    http: HttpOptions,
    max_body: Option<usize>,
}

impl std::fmt::Debug for WhatsAppAdapterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppAdapterBuilder")
            .field("name", &self.name)
            .field("phone_number_id", &self.phone_number_id)
            .field("installation_mode", &self.installations.is_some())
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl WhatsAppAdapterBuilder {
    /// The adapter's name (its webhook's), default `whatsapp`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The Meta app's secret, the key of every delivery's signature.
    #[must_use]
    pub fn app_secret(mut self, secret: impl Into<String>) -> Self {
        self.app_secret = Some(secret.into());
        self
    }

    /// The verify token entered with the callback URL in the app dashboard,
    /// which the subscription handshake must carry.
    #[must_use]
    pub fn verify_token(mut self, token: impl Into<String>) -> Self {
        self.verify_token = Some(token.into());
        self
    }

    /// One number: the access token (a system user's) that sends for it.
    #[must_use]
    pub fn access_token(mut self, token: impl Into<String>) -> Self {
        self.access_token = Some(token.into());
        self
    }

    /// One number: its phone number id (in WhatsApp Manager; not the phone
    /// number). Deliveries for any other number are ignored.
    #[must_use]
    pub fn phone_number_id(mut self, id: impl Into<String>) -> Self {
        self.phone_number_id = Some(id.into());
        self
    }

    /// Several numbers (of one or several business accounts): their access
    /// tokens in `store`, an installation per phone number id.
    #[must_use]
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.installations = Some(store);
        self
    }

    /// The Graph API's base URL with its version, default
    /// [`DEFAULT_API_URL`] (a fake in tests).
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

    /// The largest delivery accepted, default 3 MiB: Meta's webhook
    /// payloads are up to 3 MB (*Set up webhooks*).
    #[must_use]
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body = Some(limit);
        self
    }

    /// Checks the settings and builds the adapter.
    ///
    /// # Errors
    /// A [`BuildError`] naming what is missing, conflicting or malformed.
    pub fn build(self) -> Result<WhatsAppAdapter, BuildError> {
        let api = self.api_url.as_deref().unwrap_or(DEFAULT_API_URL);
        if !chat_http::is_base_url(api) {
            return Err(BuildError::InvalidApiUrl);
        }
        let app_secret = self
            .app_secret
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::MissingAppSecret)?;
        let verify_token = self
            .verify_token
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::MissingVerifyToken)?;
        let (token, phone_number_id, installations) = match (self.access_token, self.installations)
        {
            (Some(_), Some(_)) => return Err(BuildError::TwoCredentialSources),
            (None, None) => return Err(BuildError::NoCredentials),
            (Some(token), None) => {
                let id = self
                    .phone_number_id
                    .ok_or(BuildError::MissingPhoneNumberId)?;
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(BuildError::InvalidPhoneNumberId);
                }
                (Secret::new(token), Some(id), None)
            }
            (None, Some(store)) => (Secret::new(""), None, Some(store)),
        };
        let client = WhatsAppClient::new(api, &token, self.http).map_err(BuildError::Http)?;
        Ok(WhatsAppAdapter {
            name: self.name.unwrap_or_else(|| "whatsapp".to_owned()),
            app_key: hmac::Key::new(hmac::HMAC_SHA256, app_secret.as_bytes()),
            verify_token: Secret::new(verify_token),
            client,
            phone_number_id,
            installations,
            max_body: self.max_body.unwrap_or(3 * 1024 * 1024),
            recent: Mutex::default(),
        })
    }
}
