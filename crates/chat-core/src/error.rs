//! Errors of the contracts. Each names what failed — never a secret, a token, an
//! expected signature or message text.

use std::time::Duration;

/// A boxed error source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of the state backend itself. Protocol answers (duplicate, lost
/// lease, full queue) are values, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The backend could not be reached or answered with a connection error.
    #[error("state backend unavailable")]
    Unavailable(#[source] BoxError),
    /// The backend did not answer in time.
    #[error("state backend timed out after {0:?}")]
    Timeout(Duration),
    /// Stored data could not be encoded or decoded.
    #[error("state data could not be encoded or decoded")]
    Codec(#[source] BoxError),
    /// The request breaks the contract (for example a scope whose tag differs
    /// from its event's thread, or a zero bound).
    #[error("invalid state request: {0}")]
    InvalidRequest(&'static str),
    /// The backend answered with an error of its own.
    #[error("state backend error")]
    Backend(#[source] BoxError),
}

/// Why an inbound webhook delivery was refused. The runtime hands it to the
/// adapter, which says it to its platform (see [`Verdict::Rejected`](crate::Verdict::Rejected)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The body is larger than the adapter's cap (answered 413).
    #[error("request body larger than {limit} bytes")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The body could not be read from the connection.
    #[error("request body could not be read")]
    BodyRead,
    /// The body did not arrive within the read deadline (answered 408): a slow
    /// or stalled client.
    #[error("request body not received in time")]
    BodyTimeout,
    /// A header the signature check needs is missing or not valid text.
    #[error("missing or invalid header {0}")]
    MissingHeader(&'static str),
    /// The signature does not match the body (answered 401).
    #[error("signature mismatch")]
    BadSignature,
    /// The signed timestamp is outside the allowed window (answered 401).
    #[error("timestamp outside the allowed window")]
    StaleTimestamp,
    /// The method is not POST.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// The body is not what the platform sends (answered 400).
    #[error("malformed payload: {0}")]
    Malformed(String),
}

impl WebhookError {
    /// Whether the delivery failed authentication (bad signature or timestamp,
    /// missing signature headers): answered 401.
    pub fn is_unauthorized(&self) -> bool {
        matches!(
            self,
            Self::BadSignature | Self::StaleTimestamp | Self::MissingHeader(_)
        )
    }

    /// The HTTP status platforms conventionally get for this error.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Self::TooLarge { .. } => http::StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout => http::StatusCode::REQUEST_TIMEOUT,
            Self::BodyRead | Self::Malformed(_) => http::StatusCode::BAD_REQUEST,
            Self::MissingHeader(_) | Self::BadSignature | Self::StaleTimestamp => {
                http::StatusCode::UNAUTHORIZED
            }
            Self::MethodNotAllowed => http::StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

/// A failure of an outbound platform call (post, edit, react, …).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The platform answered with an error code (Slack `ok:false`, a GraphQL
    /// error).
    #[error("platform error: {code}")]
    Api {
        /// The platform's error code (`channel_not_found`, …).
        code: String,
    },
    /// Rate limited, and the wait would pass the handler's deadline.
    #[error("rate limited; retry after {retry_after:?}")]
    RateLimited {
        /// How long the platform asked to wait.
        retry_after: Duration,
    },
    /// The platform answered with an unexpected HTTP status.
    #[error("unexpected HTTP status {0}")]
    Status(http::StatusCode),
    /// The request could not be sent or the answer not read.
    #[error("transport error")]
    Transport(#[source] BoxError),
    /// The answer could not be decoded.
    #[error("response could not be decoded")]
    Decode(#[source] BoxError),
    /// The message breaks the platform's documented limits, found before any
    /// call (a card with too many blocks, a button label too long, two
    /// buttons with one action id): what and where.
    #[error("the message does not fit the platform: {0}")]
    Invalid(String),
    /// The adapter does not support the operation.
    #[error("operation not supported by this adapter: {0}")]
    Unsupported(&'static str),
    /// The handler's context was cancelled while the call waited.
    #[error("cancelled")]
    Cancelled,
    /// A download was longer than its limit (declared, or as it arrived).
    #[error("the download is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The handler's deadline passed before the call could complete (a rate-limit
    /// wait is never allowed to outlast it).
    #[error("the handler's deadline passed")]
    DeadlineExceeded,
    /// The source of a streamed answer (an LLM's token stream) failed; what
    /// arrived before it stays posted.
    #[error("the streamed answer's source failed")]
    Source(#[source] BoxError),
    /// The platform lets the bot write to this user only within a window
    /// after the user's last message (WhatsApp's 24-hour customer-service
    /// window), and it has closed: the platform's way out (a WhatsApp
    /// template message) is a typed call of its adapter.
    #[error(
        "the conversation's reply window ({window:?} after the user's last message) has closed"
    )]
    WindowClosed {
        /// How long the window stays open after the user's last message.
        window: Duration,
    },
    /// A call with the same idempotency key is in progress elsewhere and did
    /// not finish in time; retrying later returns its result.
    #[error("a post with this idempotency key is still in progress")]
    InProgress,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_errors_know_their_status() {
        assert_eq!(WebhookError::BadSignature.status(), 401);
        assert_eq!(WebhookError::StaleTimestamp.status(), 401);
        assert_eq!(WebhookError::TooLarge { limit: 1 }.status(), 413);
        assert_eq!(WebhookError::Malformed("x".into()).status(), 400);
        assert!(WebhookError::MissingHeader("X-Slack-Signature").is_unauthorized());
    }
}
