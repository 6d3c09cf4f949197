//! Errors of building the adapter. Inbound failures are
//! [`chat_core::WebhookError`]s and outbound ones [`chat_core::AdapterError`]s.

use chat_core::BoxError;

/// A [`LinearAdapter`](crate::LinearAdapter) could not be built. Never shows
/// the secret or the credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No webhook signing secret was given.
    #[error("a Linear webhook signing secret is required")]
    MissingSigningSecret,
    /// Neither an API key, an OAuth access token nor an installation store
    /// was given.
    #[error("a Linear API key, OAuth access token or installation store is required")]
    MissingCredential,
    /// A credential cannot be sent in an HTTP header.
    #[error("a Linear credential is not a valid header value")]
    InvalidCredential,
    /// The GraphQL endpoint is not an absolute `http(s)` URL.
    #[error("invalid Linear GraphQL endpoint: {0}")]
    InvalidEndpoint(String),
    /// A duration or size option is zero.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
    /// An installation store was given together with a credential: the
    /// adapter takes its credentials from one source.
    #[error("give either Linear credentials or an installation store, not both")]
    CredentialAndInstallations,
    /// An OAuth setting is missing or invalid (named, never its value).
    #[error("invalid OAuth setting: {0}")]
    OAuth(&'static str),
    /// The HTTP client could not be built (TLS setup, or an outbound proxy
    /// that is not an `http://host:port` URL).
    #[error("the HTTP client could not be built")]
    HttpClient(#[source] BoxError),
}

impl From<chat_http::BuildError> for BuildError {
    fn from(e: chat_http::BuildError) -> Self {
        Self::HttpClient(Box::new(e))
    }
}
