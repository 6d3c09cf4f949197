//! Why an install callback or a token refresh failed, and why a flow could
//! not be built.

use chat_core::{AdapterError, InstallationError};
use http::StatusCode;

use super::state::StateRefusal;

/// Why an install's callback or a token refresh failed. Names the failure,
/// never a secret, a code or a token; [`status`](Self::status) is the HTTP
/// answer of a callback.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The user declined, or the platform reported an error on the redirect
    /// (`error=access_denied`), with its code made safe to show.
    #[error("the install was not approved: {0}")]
    Denied(String),
    /// The callback has no `code`.
    #[error("the callback has no code")]
    MissingCode,
    /// The `state` is missing, forged, tampered with, expired, or from another
    /// browser.
    #[error("refused state: {0}")]
    State(#[from] StateRefusal),
    /// The platform refused the code or the refresh token (`invalid_grant`,
    /// `invalid_code`, `bad_client_secret`, …), with its error code.
    #[error("the platform refused: {0}")]
    Refused(String),
    /// The platform could not be reached, or answered something unreadable.
    #[error("the call to the platform failed")]
    Transport(#[source] AdapterError),
    /// An answer lacked what an installation needs.
    #[error("the answer lacks {0}")]
    Incomplete(&'static str),
    /// The installation has no refresh token to renew its access token with.
    #[error("the installation has no refresh token")]
    NoRefreshToken,
    /// The platform's tokens are not refreshed by this flow.
    #[error("this platform's tokens are not refreshed")]
    RefreshUnsupported,
    /// The installation could not be read or stored.
    #[error("storing the installation failed")]
    Store(#[source] InstallationError),
    /// Too many install requests right now (a rate limit of the flow, or its
    /// store of spent states full): try again later.
    #[error("too many install requests; try again in a moment")]
    TooManyRequests,
    /// The flow itself failed (the system's random source, an unencodable
    /// request).
    #[error("the install flow failed: {0}")]
    Internal(&'static str),
}

impl OAuthError {
    /// The HTTP status a callback answers with: 400 for a bad request (no code,
    /// a refused state), 403 when the user declined, 429 past a rate limit,
    /// 502 when the platform's answer failed, 503 when the store did, 500
    /// otherwise.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Denied(_) => StatusCode::FORBIDDEN,
            Self::MissingCode | Self::State(_) => StatusCode::BAD_REQUEST,
            Self::Refused(_) | Self::Transport(_) | Self::Incomplete(_) => StatusCode::BAD_GATEWAY,
            Self::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Self::NoRefreshToken | Self::RefreshUnsupported | Self::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// A platform's answer that failed: its error code when it named one
    /// ([`Refused`](Self::Refused)), else a transport failure.
    pub fn from_platform(e: AdapterError) -> Self {
        match e {
            AdapterError::Api { code } => Self::Refused(safe_code(&code)),
            other => Self::Transport(other),
        }
    }
}

/// A flow could not be built: the setting named is missing or invalid (never
/// its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid OAuth setting: {0}")]
pub struct OAuthBuildError(pub &'static str);

/// A platform's error code, made safe to show and log: ASCII letters, digits
/// and `_`, at most 64 of them.
pub fn safe_code(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_made_safe_to_show() {
        assert_eq!(safe_code("access_denied"), "access_denied");
        assert_eq!(safe_code("<script>x</script>"), "scriptxscript");
        assert_eq!(safe_code(&"a".repeat(100)).len(), 64);
    }

    #[test]
    fn every_failure_has_its_status() {
        assert_eq!(OAuthError::Denied("x".into()).status(), 403);
        assert_eq!(OAuthError::State(StateRefusal::Expired).status(), 400);
        assert_eq!(OAuthError::Refused("invalid_grant".into()).status(), 502);
        assert_eq!(
            OAuthError::Store(InstallationError::Unavailable("down".into())).status(),
            503
        );
        assert!(matches!(
            OAuthError::from_platform(AdapterError::Api {
                code: "invalid_code".into()
            }),
            OAuthError::Refused(c) if c == "invalid_code"
        ));
    }
}
