//! Errors of building the adapter or the client. Inbound failures are
//! [`chat_core::WebhookError`]s and outbound ones [`chat_core::AdapterError`]s.

use chat_core::BoxError;

/// A [`SlackAdapter`](crate::SlackAdapter) or [`SlackClient`](crate::SlackClient)
/// could not be built. Never shows the secret or the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No signing secret was given.
    #[error("a Slack signing secret is required")]
    MissingSigningSecret,
    /// Neither a bot token nor an installation store was given (the adapter
    /// needs exactly one), or a token is empty.
    #[error("a Slack bot token or an installation store is required")]
    MissingBotToken,
    /// Both a bot token and an installation store were given: single-token
    /// mode and installation mode exclude each other.
    #[error("give either a Slack bot token or an installation store, not both")]
    TokenAndInstallations,
    /// A bot user id or bot id was configured in installation mode, where
    /// each installation carries its own.
    #[error("bot_user_id and bot_id belong to single-token mode; installations carry their own")]
    IdentityWithInstallations,
    /// The bot token cannot be sent in an HTTP header.
    #[error("the Slack bot token is not a valid header value")]
    InvalidBotToken,
    /// The Web API base URL is not an absolute `http(s)` URL.
    #[error("invalid Slack Web API base URL: {0}")]
    InvalidBaseUrl(String),
    /// The outbound proxy (configured, or named by `HTTPS_PROXY` /
    /// `ALL_PROXY`) is not an `http://host:port` URL (credentials redacted).
    #[error("unsupported or invalid outbound proxy: {0} (an http:// proxy is required)")]
    InvalidProxy(String),
    /// The HTTP client could not be built (TLS setup).
    #[error("the HTTP client could not be built")]
    HttpClient(#[source] BoxError),
}

impl From<chat_http::BuildError> for BuildError {
    fn from(e: chat_http::BuildError) -> Self {
        match e {
            chat_http::BuildError::InvalidProxy(p) => Self::InvalidProxy(p),
            other => Self::HttpClient(Box::new(other)),
        }
    }
}
