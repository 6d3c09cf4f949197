//! Webhook signing: `Linear-Signature` is the lowercase hex HMAC-SHA256 of the
//! raw request body, keyed with the webhook's signing secret; the replay guard
//! is the signed body's `webhookTimestamp` (Unix milliseconds), never a header.
//!
//! ```
//! use chat_linear::signature;
//!
//! let body = br#"{"type":"Comment","action":"create","webhookTimestamp":1700000000000}"#;
//! let hex = signature::sign("lin_wh_secret", body);
//! assert_eq!(hex.len(), 64);
//! assert!(hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
//! ```

use std::time::Duration;

use chat_core::WebhookError;
use ring::hmac;
use serde::Deserialize;

/// The header carrying the body's signature.
pub const SIGNATURE_HEADER: &str = "linear-signature";
/// The header carrying the delivery's UUID (unique per payload).
pub const DELIVERY_HEADER: &str = "linear-delivery";
/// The header naming the entity type (`AgentSessionEvent`, `Comment`, …).
pub const EVENT_HEADER: &str = "linear-event";
/// The signed body field holding the send time in Unix milliseconds.
pub const TIMESTAMP_FIELD: &str = "webhookTimestamp";

/// The header name as [`WebhookError::MissingHeader`] reports it.
const SIGNATURE_HEADER_NAME: &str = "Linear-Signature";

/// Signs `body` as Linear does: lowercase hex HMAC-SHA256 keyed with `secret`.
/// For tests and tools that build deliveries.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hex::encode(hmac::sign(&key, body).as_ref())
}

/// Checks the signature header against the raw body, in constant time.
/// A missing header is [`WebhookError::MissingHeader`]; a header that is not
/// 64 hex digits, or a digest that does not match, is
/// [`WebhookError::BadSignature`]. Neither error carries the expected value.
pub(crate) fn verify_signature(
    key: &hmac::Key,
    header: Option<&http::HeaderValue>,
    body: &[u8],
) -> Result<(), WebhookError> {
    let header = header.ok_or(WebhookError::MissingHeader(SIGNATURE_HEADER_NAME))?;
    let tag = decode_hex_32(header.as_bytes()).ok_or(WebhookError::BadSignature)?;
    hmac::verify(key, body, &tag).map_err(|_| WebhookError::BadSignature)
}

/// The part of a verified body the replay guard reads.
#[derive(Deserialize)]
struct Stamp {
    #[serde(rename = "webhookTimestamp", default)]
    webhook_timestamp: Option<serde_json::Value>,
}

/// Checks that the verified body's `webhookTimestamp` lies within `tolerance`
/// of `now_ms`, in either direction. A body that is not a JSON object is
/// [`WebhookError::Malformed`]; one without a usable numeric timestamp cannot
/// be shown fresh and is [`WebhookError::StaleTimestamp`].
pub(crate) fn check_timestamp(
    body: &[u8],
    now_ms: u64,
    tolerance: Duration,
) -> Result<(), WebhookError> {
    crate::json::ensure_object(body)?;
    let stamp: Stamp =
        serde_json::from_slice(body).map_err(|e| crate::json::malformed("body", &e))?;
    let ts = stamp
        .webhook_timestamp
        .as_ref()
        .and_then(serde_json::Value::as_f64)
        .filter(|t| t.is_finite())
        .ok_or(WebhookError::StaleTimestamp)?;
    #[allow(clippy::cast_precision_loss)]
    let skew = (now_ms as f64 - ts).abs();
    #[allow(clippy::cast_precision_loss)]
    let limit = tolerance.as_millis() as f64;
    if skew > limit {
        return Err(WebhookError::StaleTimestamp);
    }
    Ok(())
}

/// Decodes exactly 64 hex digits (either case) into 32 bytes.
fn decode_hex_32(digits: &[u8]) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        let bytes: Vec<u8> = (0u8..32).collect();
        let hex = hex::encode(&bytes);
        assert_eq!(
            decode_hex_32(hex.as_bytes()).map(|b| b.to_vec()),
            Some(bytes.clone())
        );
        assert_eq!(
            decode_hex_32(hex.to_uppercase().as_bytes()).map(|b| b.to_vec()),
            Some(bytes)
        );
        assert_eq!(decode_hex_32(b""), None);
        assert_eq!(decode_hex_32(&hex.as_bytes()[..62]), None);
        let mut bad = hex.into_bytes();
        bad[10] = b'g';
        assert_eq!(decode_hex_32(&bad), None);
    }

    #[test]
    fn sign_matches_a_known_vector() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            sign("Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_window_is_symmetric_and_inclusive() {
        let tol = Duration::from_secs(60);
        let body = |ts: &str| format!(r#"{{"webhookTimestamp":{ts}}}"#);
        assert!(check_timestamp(body("1000000").as_bytes(), 1_060_000, tol).is_ok());
        assert!(check_timestamp(body("1120000").as_bytes(), 1_060_000, tol).is_ok());
        assert_eq!(
            check_timestamp(body("999999").as_bytes(), 1_060_000, tol),
            Err(WebhookError::StaleTimestamp)
        );
        assert_eq!(
            check_timestamp(body("1120001").as_bytes(), 1_060_000, tol),
            Err(WebhookError::StaleTimestamp)
        );
        assert_eq!(
            check_timestamp(body("\"1060000\"").as_bytes(), 1_060_000, tol),
            Err(WebhookError::StaleTimestamp)
        );
        assert_eq!(
            check_timestamp(b"{}", 1_060_000, tol),
            Err(WebhookError::StaleTimestamp)
        );
        assert!(matches!(
            check_timestamp(b"[]", 1_060_000, tol),
            Err(WebhookError::Malformed(_))
        ));
    }
}
