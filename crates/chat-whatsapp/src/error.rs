//! [`BuildError`]: why a [`WhatsAppAdapter`](crate::WhatsAppAdapter) could
//! not be built.

/// Why the builder refused its settings. Never shows a token or a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No app secret: deliveries could not be verified.
    #[error("an app secret is required (X-Hub-Signature-256 is keyed with it)")]
    MissingAppSecret,
    /// No verify token: the subscription handshake could not be answered.
    #[error("a verify token is required (the webhook handshake's hub.verify_token)")]
    MissingVerifyToken,
    /// Neither an access token with its phone number id nor an installation store.
    #[error(
        "credentials are required: an access token with its phone number id (one number) or an installation store (several)"
    )]
    NoCredentials,
    /// Both an access token and an installation store.
    #[error("an access token and an installation store exclude each other")]
    TwoCredentialSources,
    /// An access token without the phone number id it sends from.
    #[error("an access token needs the phone number id it sends from")]
    MissingPhoneNumberId,
    /// A phone number id that is not digits.
    #[error("a phone number id is digits (the id in WhatsApp Manager, not the phone number)")]
    InvalidPhoneNumberId,
    /// An API URL that is not `http(s)://host…`.
    #[error("the Graph API URL must be an http or https URL")]
    InvalidApiUrl,
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built")]
    Http(#[source] chat_core::AdapterError),
}
