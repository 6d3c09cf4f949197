//! How Meta proves a delivery is its own
//! ([Webhooks](https://developers.facebook.com/docs/graph-api/webhooks/getting-started)):
//!
//! * every `POST` carries `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of
//!   the raw body, keyed with the app secret>`, checked in constant time
//!   before anything is parsed;
//! * subscribing the URL is a `GET` with `hub.mode=subscribe`,
//!   `hub.verify_token` (the token configured in the app dashboard) and
//!   `hub.challenge`, answered with the challenge when the token matches.

use chat_core::WebhookError;
use ring::hmac;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// Checks `X-Hub-Signature-256` over `body`.
pub(crate) fn verify_signature(
    key: &hmac::Key,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<(), WebhookError> {
    let tag = chat_core::adapter::signature_tag(headers, SIGNATURE_HEADER, "sha256=")?;
    hmac::verify(key, body, &tag).map_err(|_| WebhookError::BadSignature)
}

/// The handshake's query: `hub.mode`, `hub.verify_token`, `hub.challenge`.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Handshake {
    #[serde(rename = "hub.mode", default)]
    pub(crate) mode: String,
    #[serde(rename = "hub.verify_token", default)]
    pub(crate) verify_token: String,
    #[serde(rename = "hub.challenge", default)]
    pub(crate) challenge: String,
}

/// Reads a `GET`'s handshake and checks its verify token in constant time.
pub(crate) fn verify_handshake(
    uri: &http::Uri,
    verify_token: &str,
) -> Result<Handshake, WebhookError> {
    let query = uri.query().unwrap_or_default();
    let h: Handshake = serde_urlencoded::from_str(query).map_err(|_| {
        WebhookError::Malformed("whatsapp: a handshake query that does not parse".into())
    })?;
    if h.mode != "subscribe" {
        return Err(WebhookError::Malformed(
            "whatsapp: hub.mode is not subscribe".into(),
        ));
    }
    let (a, b) = (h.verify_token.as_bytes(), verify_token.as_bytes());
    let same = a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
    if !same || verify_token.is_empty() {
        return Err(WebhookError::BadSignature);
    }
    Ok(h)
}

/// `X-Hub-Signature-256`'s value for `body` signed with `app_secret` (tests,
/// tools).
pub fn sign(app_secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, app_secret.as_bytes());
    format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_checked_over_the_raw_bytes() {
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"app-secret");
        let body = br#"{"object":"whatsapp_business_account"}"#;
        let mut h = http::HeaderMap::new();
        h.insert(
            SIGNATURE_HEADER,
            sign("app-secret", body)
                .parse()
                .unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(verify_signature(&key, &h, body).is_ok());
        assert!(matches!(
            verify_signature(&key, &h, b"{}"),
            Err(WebhookError::BadSignature)
        ));
        h.insert(
            SIGNATURE_HEADER,
            "sha1=abc".parse().unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(matches!(
            verify_signature(&key, &h, body),
            Err(WebhookError::BadSignature)
        ));
        assert!(matches!(
            verify_signature(&key, &http::HeaderMap::new(), body),
            Err(WebhookError::MissingHeader(_))
        ));
    }

    #[test]
    fn the_handshake_needs_the_verify_token() {
        let uri: http::Uri = "/wa?hub.mode=subscribe&hub.verify_token=tok&hub.challenge=123"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            verify_handshake(&uri, "tok")
                .map(|h| h.challenge)
                .ok()
                .as_deref(),
            Some("123")
        );
        assert!(verify_handshake(&uri, "other").is_err());
        assert!(verify_handshake(&uri, "").is_err());
        let unsubscribe: http::Uri = "/wa?hub.mode=x&hub.verify_token=tok&hub.challenge=1"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(verify_handshake(&unsubscribe, "tok").is_err());
    }
}
