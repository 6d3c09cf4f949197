//! [`BuildError`]: why a [`GitHubAdapter`](crate::GitHubAdapter) could not be
//! built.

/// Why the builder refused its settings. Never shows a token, a key or a
/// secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No webhook secret: deliveries could not be verified.
    #[error("a webhook secret is required (X-Hub-Signature-256 is keyed with it)")]
    MissingWebhookSecret,
    /// Neither an App (id and private key) nor a personal token.
    #[error(
        "credentials are required: a GitHub App's id and private key, or a personal access token"
    )]
    NoCredentials,
    /// Both an App and a personal token.
    #[error("a GitHub App and a personal access token exclude each other")]
    TwoCredentialSources,
    /// An App without its slug, or a token without the login it acts as:
    /// the bot would not know its own comments nor its mentions.
    #[error(
        "the bot's login is required: the App's slug (app_slug), or the token user's login (login)"
    )]
    MissingLogin,
    /// The App's private key does not read.
    #[error("the App's private key")]
    InvalidPrivateKey(#[source] chat_core::AdapterError),
    /// An API URL that is not `http(s)://host…`.
    #[error("the REST API URL must be an http or https URL")]
    InvalidApiUrl,
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built")]
    Http(#[source] chat_core::AdapterError),
}
