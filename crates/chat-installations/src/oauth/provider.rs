//! [`OAuthProvider`]: what a platform supplies to the install flow.

use async_trait::async_trait;
use chat_core::{Installation, Platform, Secret};

use super::error::OAuthError;

/// What a platform supplies to an [`OAuthFlow`](super::OAuthFlow): its
/// defaults, the parameters its authorize page needs, the exchange of a
/// callback's code for an installation, and — when its tokens expire — their
/// refresh. The flow does the rest (the signed, browser-bound `state`, the
/// callback's checks, storing, one refresh at a time per tenant).
///
/// A third platform implements this in its own crate; nothing else changes.
#[async_trait]
pub trait OAuthProvider: Send + Sync + 'static {
    /// The platform whose installations the flow makes.
    fn platform(&self) -> Platform;

    /// The flow's defaults for this platform.
    fn defaults(&self) -> ProviderDefaults;

    /// Checks the flow's settings against the platform's rules; the error
    /// names the setting (e.g. a scope the platform refuses).
    fn check(&self, client: &OAuthClient) -> Result<(), &'static str> {
        let _ = client;
        Ok(())
    }

    /// The authorize URL's parameters besides `client_id`, `scope`,
    /// `redirect_uri` and `state`, which the flow adds.
    fn authorize_params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Exchanges a callback's `code` for the installation it grants, dated
    /// `now_ms`; the flow stores it.
    async fn exchange(
        &self,
        client: &OAuthClient,
        code: &str,
        now_ms: u64,
    ) -> Result<Installation, OAuthError>;

    /// Renews `installation`'s access token with its refresh token, at
    /// `now_ms`; the flow stores the result. By default tokens are not
    /// refreshed ([`OAuthError::RefreshUnsupported`]).
    async fn refresh(
        &self,
        client: &OAuthClient,
        installation: &Installation,
        now_ms: u64,
    ) -> Result<Installation, OAuthError> {
        let _ = (client, installation, now_ms);
        Err(OAuthError::RefreshUnsupported)
    }
}

/// A platform's defaults for its install flow.
#[derive(Debug, Clone)]
pub struct ProviderDefaults {
    pub(super) authorize_url: &'static str,
    pub(super) scopes: &'static [&'static str],
    pub(super) state_cookie: &'static str,
    pub(super) redirect_uri_required: bool,
    pub(super) installed_text: &'static str,
}

impl ProviderDefaults {
    /// The platform's authorize page, and the name of the cookie that binds
    /// an install's `state` to the browser that started it. No default
    /// scopes, the redirect URI optional.
    pub fn new(authorize_url: &'static str, state_cookie: &'static str) -> Self {
        Self {
            authorize_url,
            scopes: &[],
            state_cookie,
            redirect_uri_required: false,
            installed_text: "Installed. You can close this window.",
        }
    }

    /// The scopes asked for when the flow names none.
    #[must_use]
    pub fn scopes(mut self, scopes: &'static [&'static str]) -> Self {
        self.scopes = scopes;
        self
    }

    /// The platform needs the redirect URI with every request.
    #[must_use]
    pub fn redirect_uri_required(mut self) -> Self {
        self.redirect_uri_required = true;
        self
    }

    /// The page a successful install shows when the flow has no success URL.
    #[must_use]
    pub fn installed_text(mut self, text: &'static str) -> Self {
        self.installed_text = text;
        self
    }
}

/// The OAuth client an install flow acts as, as a provider sees it: its id
/// and secret, the redirect URI and the scopes it asks for.
pub struct OAuthClient {
    pub(super) id: String,
    pub(super) secret: Secret,
    pub(super) redirect_uri: Option<String>,
    pub(super) scopes: Vec<String>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("id", &self.id)
            .field("secret", &self.secret)
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl OAuthClient {
    /// The client id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client secret: send it only to the platform's token endpoint.
    pub fn secret(&self) -> &Secret {
        &self.secret
    }

    /// The redirect URI registered with the platform, if the flow has one.
    pub fn redirect_uri(&self) -> Option<&str> {
        self.redirect_uri.as_deref()
    }

    /// The scopes the flow asks for.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}
