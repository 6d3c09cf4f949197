//! How the adapter authenticates: a configured [`Credential`], or in
//! installation mode the organization's installation (refreshed first when
//! its token is about to expire).

use std::fmt;
use std::sync::Arc;

use chat_core::{AdapterError, InstallationStore, Platform, TenantId};
use http::HeaderValue;

use super::LinearAdapter;
use crate::error::BuildError;

/// A Linear credential: a personal API key (sent as `Authorization: <key>`) or
/// an OAuth access token (sent as `Authorization: Bearer <token>`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A personal API key.
    ApiKey(String),
    /// An OAuth access token (an agent installed with `actor=app`).
    AccessToken(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ApiKey(_) => f.write_str("ApiKey(<redacted>)"),
            Self::AccessToken(_) => f.write_str("AccessToken(<redacted>)"),
        }
    }
}

impl Credential {
    /// The `Authorization` header value, marked sensitive.
    pub(super) fn header(&self) -> Result<HeaderValue, BuildError> {
        let value = match self {
            Self::ApiKey(key) => key.clone(),
            Self::AccessToken(token) => format!("Bearer {token}"),
        };
        let mut header =
            HeaderValue::from_str(&value).map_err(|_| BuildError::InvalidCredential)?;
        if value.trim().is_empty() || value.trim() == "Bearer" {
            return Err(BuildError::InvalidCredential);
        }
        header.set_sensitive(true);
        Ok(header)
    }
}

impl LinearAdapter {
    /// The `Authorization` value for a call about `tenant`: its
    /// installation's token (refreshed first when about to expire) in
    /// installation mode, else the configured credential.
    pub(super) async fn auth(
        &self,
        tenant: Option<&TenantId>,
    ) -> Result<HeaderValue, AdapterError> {
        let tenant = self.tenant(tenant);
        let Some(installations) = &self.inner.installations else {
            return self.inner.client.configured_auth(tenant).cloned().ok_or(
                AdapterError::Unsupported("no Linear credential for this organization"),
            );
        };
        let tenant = tenant.ok_or(AdapterError::Unsupported(
            "in installation mode a call names its organization (for_organization)",
        ))?;
        let installation = match &installations.refresh {
            Some(oauth) => oauth
                .fresh_installation(tenant, self.inner.clock.now_ms())
                .await
                .map_err(|e| AdapterError::Transport(Box::new(e)))?,
            None => installations
                .store
                .get(Platform::LINEAR, tenant)
                .await
                .map_err(|e| AdapterError::Transport(Box::new(e)))?,
        }
        .ok_or(AdapterError::Unsupported(
            "the agent is not installed in this organization",
        ))?;
        Credential::AccessToken(installation.access_token.expose().to_owned())
            .header()
            .map_err(|e| AdapterError::Transport(Box::new(e)))
    }

    /// The installation store, in installation mode.
    pub fn installations(&self) -> Option<&Arc<dyn InstallationStore>> {
        self.inner.installations.as_ref().map(|i| &i.store)
    }
}
