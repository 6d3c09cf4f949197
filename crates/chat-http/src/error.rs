//! Errors of building a [`Transport`](crate::Transport) and of one exchange.

use chat_core::BoxError;

/// A [`Transport`](crate::Transport) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The outbound proxy (configured, or named by `HTTPS_PROXY` /
    /// `ALL_PROXY`) is not an `http://host:port` URL (credentials redacted).
    #[error("unsupported or invalid outbound proxy: {0} (an http:// proxy is required)")]
    InvalidProxy(String),
    /// The product name cannot be sent in a `User-Agent` header.
    #[error("invalid product name for the User-Agent: {0:?}")]
    InvalidUserAgent(String),
    /// The TLS setup failed.
    #[error("the HTTP client could not be built")]
    Tls(#[source] BoxError),
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The request's timeout passed first.
    #[error("the request timed out")]
    TimedOut,
    /// Connecting, writing or reading failed.
    #[error("the request failed")]
    Failed(#[source] BoxError),
    /// The answer was larger than [`MAX_ANSWER_BYTES`](crate::MAX_ANSWER_BYTES).
    #[error("the answer is larger than {} bytes", crate::MAX_ANSWER_BYTES)]
    TooLarge,
    /// A download was redirected more than
    /// [`MAX_REDIRECTS`](crate::MAX_REDIRECTS) times.
    #[error("more than {} redirects", crate::MAX_REDIRECTS)]
    TooManyRedirects,
}

impl TransportError {
    /// As a platform call's error: [`AdapterError::Transport`](chat_core::AdapterError::Transport).
    pub fn into_adapter(self) -> chat_core::AdapterError {
        chat_core::AdapterError::Transport(Box::new(self))
    }
}
