//! How GitHub proves a delivery is its own
//! ([Validating webhook deliveries](https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries)):
//! `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed
//! with the webhook secret>`, checked in constant time before anything is
//! parsed. The legacy SHA-1 `X-Hub-Signature` is never accepted.

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

/// `X-Hub-Signature-256`'s value for `body` signed with `secret` (tests,
/// tools).
pub fn sign(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Ok(v) = http::HeaderValue::from_str(value) {
            h.insert(SIGNATURE_HEADER, v);
        }
        h
    }

    /// The example of GitHub's documentation.
    #[test]
    fn the_documented_example_verifies() {
        let secret = "It's a Secret to Everybody";
        let signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign(secret, b"Hello, World!"), signature);
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        assert!(verify_signature(&key, &headers(signature), b"Hello, World!").is_ok());
        // Upper-case hex is the same tag.
        let upper = format!("sha256={}", signature[7..].to_uppercase());
        assert!(verify_signature(&key, &headers(&upper), b"Hello, World!").is_ok());
    }

    #[test]
    fn a_changed_body_a_wrong_key_or_another_scheme_is_refused() {
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"s");
        let good = sign("s", b"body");
        assert!(verify_signature(&key, &headers(&good), b"body!").is_err());
        assert!(verify_signature(&key, &headers(&sign("t", b"body")), b"body").is_err());
        assert!(
            verify_signature(&key, &headers(&good.replace("sha256=", "sha1=")), b"body").is_err()
        );
        assert!(verify_signature(&key, &headers("sha256=zz"), b"body").is_err());
        assert!(matches!(
            verify_signature(&key, &http::HeaderMap::new(), b"body"),
            Err(WebhookError::MissingHeader(_))
        ));
    }
}
