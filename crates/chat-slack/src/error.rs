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
    /// No bot token was given.
    #[error("a Slack bot token is required")]
    MissingBotToken,
    /// The bot token cannot be sent in an HTTP header.
    #[error("the Slack bot token is not a valid header value")]
    InvalidBotToken,
    /// The Web API base URL is not an absolute `http(s)` URL.
    #[error("invalid Slack Web API base URL: {0}")]
    InvalidBaseUrl(String),
    /// The HTTP client could not be built (TLS setup).
    #[error("the HTTP client could not be built")]
    HttpClient(#[source] BoxError),
}
