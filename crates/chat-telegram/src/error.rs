//! [`BuildError`]: why a [`TelegramAdapter`](crate::TelegramAdapter) could
//! not be built.

/// Why the builder refused its settings. Never shows a token or a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither a bot token nor an installation store.
    #[error("credentials are required: a bot token (one bot) or an installation store (several)")]
    NoCredentials,
    /// Both a bot token and an installation store.
    #[error("a bot token and an installation store exclude each other")]
    TwoCredentialSources,
    /// A bot token not of the form `<digits>:<secret>`.
    #[error("the bot token is not of the form <bot id>:<secret>")]
    InvalidBotToken,
    /// One bot without the secret token its webhook was set with.
    #[error("a secret token is required with a bot token (setWebhook's secret_token)")]
    MissingSecretToken,
    /// A secret token Telegram would refuse.
    #[error("the secret token must be 1-256 characters of A-Z, a-z, 0-9, _ and -")]
    InvalidSecretToken,
    /// Several bots without the webhook secret their tokens derive from.
    #[error("a webhook secret is required with an installation store")]
    MissingWebhookSecret,
    /// A webhook secret shorter than 16 bytes.
    #[error("the webhook secret must be at least 16 bytes")]
    WeakWebhookSecret,
    /// An API URL that is not `http(s)://host…`.
    #[error("the Bot API URL must be an http or https URL")]
    InvalidApiUrl,
    /// The HTTP transport could not be built.
    #[error("the HTTP transport could not be built")]
    Http(#[source] chat_http::BuildError),
}
