//! The [`InstallationStore`] contract: one bot installed in many workspaces
//! and organizations, each with its own credentials.
//!
//! An [`Installation`] is what a platform hands back when a workspace installs
//! the bot (Slack `oauth.v2.access`, Linear's OAuth token endpoint): the
//! tenant it is for, the bot's identity in that tenant, and the tokens to
//! call the platform with. Adapters in installation mode look one up per
//! delivery (by the delivery's [`TenantId`]) and per outbound call.
//!
//! ```
//! use chat_core::{Installation, Platform, Secret, TenantId};
//!
//! let installation = Installation::new(Platform::SLACK, "T061EG9R6", Secret::new("xoxb-1-2-3"))
//!     .with_bot_user_id("U0LAN0Z89")
//!     .with_bot_id("B0LAN0Z89")
//!     .with_scopes(["app_mentions:read", "chat:write"]);
//! assert_eq!(installation.tenant, TenantId::new("T061EG9R6"));
//! assert_eq!(installation.access_token.expose(), "xoxb-1-2-3");
//! // Debug output never shows a token.
//! assert!(!format!("{installation:?}").contains("xoxb"));
//! ```

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{BoxError, StateError};
use crate::id::{Platform, TenantId};

/// A credential: an access or refresh token, a client secret.
///
/// Its `Debug` and `Display` print `<redacted>`; the value is reached only
/// through [`expose`](Self::expose), so it cannot end up in a log line by
/// accident. It serializes as the plain string, for stores that encrypt what
/// they write (`chat-installations`' `KvInstallations`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the credential is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

/// The bot installed in one tenant: a Slack workspace (or, for an org-wide
/// install, an Enterprise Grid organization) or a Linear organization.
///
/// Stored and looked up by `(platform, tenant)`. Its `Debug` output never
/// shows a token. Built with [`Installation::new`] and the `with_*` methods;
/// every field is public to read.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Installation {
    /// The platform.
    pub platform: Platform,
    /// The tenant: Slack's enterprise id for an org-wide install, else the
    /// team id; Linear's organization id. The same value the adapter puts in
    /// every event's [`ThreadRef`](crate::ThreadRef) from this tenant.
    pub tenant: TenantId,
    /// The bot's user in this tenant: Slack's bot user (`U…`), Linear's app
    /// user (`query { viewer { id } }`). Messages it wrote are the bot's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_user_id: Option<String>,
    /// Slack's bot id (`B…`), the `bot_id` of the bot's messages; `None` on
    /// platforms without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_id: Option<String>,
    /// The app or OAuth client the installation belongs to (Slack `app_id`,
    /// Linear `oauthClientId`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// The Slack team the app was installed from (`None` for an org-wide
    /// install, and on other platforms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    /// The Slack Enterprise Grid organization, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enterprise_id: Option<String>,
    /// Whether the install covers a whole Enterprise Grid organization (the
    /// tenant is then the enterprise id).
    #[serde(default)]
    pub is_enterprise_install: bool,
    /// The token outbound calls use (Slack `xoxb-…`, a Linear OAuth access
    /// token).
    pub access_token: Secret,
    /// The token that renews [`access_token`](Self::access_token), where the
    /// platform issues one (Linear; Slack with token rotation on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in milliseconds since the Unix epoch;
    /// `None` when it does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The scopes granted.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The user who installed the bot, when the platform says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer_user_id: Option<String>,
    /// When the bot was installed (or its tokens last renewed), in
    /// milliseconds since the Unix epoch.
    #[serde(default)]
    pub installed_at_ms: u64,
}

impl fmt::Debug for Installation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Installation")
            .field("platform", &self.platform)
            .field("tenant", &self.tenant)
            .field("bot_user_id", &self.bot_user_id)
            .field("bot_id", &self.bot_id)
            .field("app_id", &self.app_id)
            .field("team_id", &self.team_id)
            .field("enterprise_id", &self.enterprise_id)
            .field("is_enterprise_install", &self.is_enterprise_install)
            .field("access_token", &self.access_token)
            .field("refresh_token", &self.refresh_token)
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scopes", &self.scopes)
            .field("installer_user_id", &self.installer_user_id)
            .field("installed_at_ms", &self.installed_at_ms)
            .finish()
    }
}

impl Installation {
    /// An installation of the bot in `tenant` on `platform`, with its access
    /// token and nothing else known yet.
    pub fn new(platform: Platform, tenant: impl Into<TenantId>, access_token: Secret) -> Self {
        Self {
            platform,
            tenant: tenant.into(),
            bot_user_id: None,
            bot_id: None,
            app_id: None,
            team_id: None,
            enterprise_id: None,
            is_enterprise_install: false,
            access_token,
            refresh_token: None,
            expires_at_ms: None,
            scopes: Vec::new(),
            installer_user_id: None,
            installed_at_ms: 0,
        }
    }

    /// Sets the bot's user id in the tenant.
    #[must_use]
    pub fn with_bot_user_id(mut self, id: impl Into<String>) -> Self {
        self.bot_user_id = Some(id.into());
        self
    }

    /// Sets Slack's bot id (`B…`).
    #[must_use]
    pub fn with_bot_id(mut self, id: impl Into<String>) -> Self {
        self.bot_id = Some(id.into());
        self
    }

    /// Sets the app (or OAuth client) id.
    #[must_use]
    pub fn with_app_id(mut self, id: impl Into<String>) -> Self {
        self.app_id = Some(id.into());
        self
    }

    /// Sets the Slack team the app was installed from.
    #[must_use]
    pub fn with_team_id(mut self, id: impl Into<String>) -> Self {
        self.team_id = Some(id.into());
        self
    }

    /// Sets the Enterprise Grid organization, and whether the install is
    /// org-wide.
    #[must_use]
    pub fn with_enterprise(mut self, id: impl Into<String>, org_wide: bool) -> Self {
        self.enterprise_id = Some(id.into());
        self.is_enterprise_install = org_wide;
        self
    }

    /// Sets the refresh token and when the access token expires (Unix ms).
    #[must_use]
    pub fn with_refresh(
        mut self,
        refresh_token: Option<Secret>,
        expires_at_ms: Option<u64>,
    ) -> Self {
        self.refresh_token = refresh_token;
        self.expires_at_ms = expires_at_ms;
        self
    }

    /// Sets the granted scopes.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets who installed the bot.
    #[must_use]
    pub fn with_installer(mut self, user_id: impl Into<String>) -> Self {
        self.installer_user_id = Some(user_id.into());
        self
    }

    /// Sets when the bot was installed (Unix ms).
    #[must_use]
    pub fn with_installed_at_ms(mut self, at_ms: u64) -> Self {
        self.installed_at_ms = at_ms;
        self
    }

    /// Whether the access token expires within `margin_ms` of `now_ms` (or
    /// already expired). Always `false` for a token without an expiry.
    pub fn expires_within(&self, now_ms: u64, margin_ms: u64) -> bool {
        self.expires_at_ms
            .is_some_and(|at| at <= now_ms.saturating_add(margin_ms))
    }

    /// Whether `user` (a user or bot id from a payload) is this installation's
    /// bot: its bot user or its bot id.
    pub fn is_bot(&self, user: &str) -> bool {
        !user.is_empty()
            && (self.bot_user_id.as_deref() == Some(user) || self.bot_id.as_deref() == Some(user))
    }
}

/// A failure of an [`InstallationStore`]. A missing installation is not an
/// error (`Ok(None)`). Never names a token or a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallationError {
    /// The store could not be reached or answered with an error; the caller
    /// may retry (a webhook answers so the platform retries).
    #[error("installation store unavailable")]
    Unavailable(#[source] BoxError),
    /// The stored record was encrypted under a key the store no longer has.
    #[error("no encryption key with id {key_id:?} to read the stored installation")]
    MissingKey {
        /// The key id the record names.
        key_id: String,
    },
    /// The stored record could not be decrypted (tampered, moved to another
    /// tenant's key, or a wrong key under the same id) or decoded.
    #[error("the stored installation could not be decrypted or decoded")]
    Corrupt(#[source] BoxError),
    /// The installation cannot be stored as given (an empty tenant or token).
    #[error("invalid installation: {0}")]
    Invalid(&'static str),
}

impl From<StateError> for InstallationError {
    fn from(e: StateError) -> Self {
        Self::Unavailable(Box::new(e))
    }
}

/// Where installations live: one per `(platform, tenant)`. Object-safe: held
/// as `Arc<dyn InstallationStore>` by adapters and install flows.
///
/// # Contract
///
/// * **Keyed by platform and tenant.** [`put`](Self::put) stores under
///   `(installation.platform, installation.tenant)`; the same tenant id on two
///   platforms names two installations.
/// * **Last write wins.** `put` replaces what was stored for the key (a
///   re-install, a refreshed token); [`get`](Self::get) returns what the last
///   successful `put` stored, on every replica that shares the store, until
///   [`delete`](Self::delete).
/// * **Absence is a value.** `get` of an unknown key is `Ok(None)`; `delete`
///   of one is `Ok(false)`. Both are idempotent, so a platform's retried
///   uninstall event is harmless.
/// * **Errors are failures of the store**: unreachable
///   ([`InstallationError::Unavailable`], worth a retry), or a record that
///   cannot be read ([`MissingKey`](InstallationError::MissingKey),
///   [`Corrupt`](InstallationError::Corrupt), which a retry will not fix).
/// * **Secrets stay secret.** Implementations never log tokens, and their
///   `Debug` shows neither tokens nor keys. Stores that persist outside the
///   process encrypt tokens at rest.
/// * An implementation that caches must say how stale a read may be; a
///   `delete` through it takes effect at once for its own readers.
#[async_trait]
pub trait InstallationStore: Send + Sync + 'static {
    /// The installation of the bot in `tenant` on `platform`, if any.
    async fn get(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<Option<Installation>, InstallationError>;

    /// Stores `installation`, replacing any earlier one for its platform and
    /// tenant.
    async fn put(&self, installation: &Installation) -> Result<(), InstallationError>;

    /// Removes the installation of `tenant` on `platform` (uninstalled, tokens
    /// revoked); returns whether there was one.
    async fn delete(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<bool, InstallationError>;
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn debug_never_shows_tokens() {
        let i = Installation::new(Platform::LINEAR, "org-1", Secret::new("lin_oauth_secret"))
            .with_refresh(Some(Secret::new("lin_refresh_secret")), Some(10));
        let shown = format!("{i:?} {} {:?}", i.access_token, i.refresh_token);
        assert!(!shown.contains("lin_oauth_secret"));
        assert!(!shown.contains("lin_refresh_secret"));
        assert!(shown.contains("org-1"));
    }

    #[test]
    fn installations_round_trip_and_know_their_bot() -> TestResult {
        let i = Installation::new(Platform::SLACK, "E1", Secret::new("xoxb-1"))
            .with_bot_user_id("U1")
            .with_bot_id("B1")
            .with_enterprise("E1", true)
            .with_scopes(["chat:write"]);
        let back: Installation = serde_json::from_slice(&serde_json::to_vec(&i)?)?;
        assert_eq!(back, i);
        assert!(i.is_bot("U1") && i.is_bot("B1"));
        assert!(!i.is_bot("U2") && !i.is_bot(""));
        Ok(())
    }

    #[test]
    fn expiry_is_judged_with_a_margin() {
        let i = Installation::new(Platform::LINEAR, "o", Secret::new("t"))
            .with_refresh(None, Some(1_000));
        assert!(!i.expires_within(0, 500));
        assert!(i.expires_within(600, 500));
        assert!(i.expires_within(2_000, 0));
        let forever = Installation::new(Platform::LINEAR, "o", Secret::new("t"));
        assert!(!forever.expires_within(u64::MAX, u64::MAX));
    }
}
