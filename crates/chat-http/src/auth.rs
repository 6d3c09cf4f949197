//! What every platform client builds the same way: its bearer header, and
//! the check of its API's base URL.

use chat_core::{AdapterError, Secret};
use http::HeaderValue;

/// `Bearer <token>` as an `Authorization` value, marked sensitive (never
/// logged, never compressed into a shared table).
///
/// # Errors
/// [`AdapterError::Invalid`] for a token that cannot be a header value.
pub fn bearer(token: &Secret) -> Result<HeaderValue, AdapterError> {
    let mut v = HeaderValue::try_from(format!("Bearer {}", token.expose()))
        .map_err(|_| AdapterError::Invalid("a token that is not a header value".to_owned()))?;
    v.set_sensitive(true);
    Ok(v)
}

/// Whether `url` can be a platform API's base URL: `http` or `https`, with
/// a host.
///
/// ```
/// assert!(chat_http::is_base_url("https://api.github.com"));
/// assert!(chat_http::is_base_url("http://127.0.0.1:8080/v21.0"));
/// assert!(!chat_http::is_base_url("ftp://example.com"));
/// assert!(!chat_http::is_base_url("api.github.com"));
/// ```
pub fn is_base_url(url: &str) -> bool {
    url.parse::<http::Uri>()
        .is_ok_and(|u| matches!(u.scheme_str(), Some("https" | "http")) && u.host().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_is_sensitive_and_a_broken_token_refused() {
        let v = bearer(&Secret::new("t0k"));
        assert!(
            v.as_ref()
                .is_ok_and(|v| v.to_str().ok() == Some("Bearer t0k"))
        );
        assert!(v.is_ok_and(|v| v.is_sensitive()));
        assert!(bearer(&Secret::new("a\nb")).is_err());
    }
}
