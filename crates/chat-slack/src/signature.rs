//! Slack request signing: `v0=` HMAC-SHA256 over `v0:{timestamp}:{raw body}`.
//!
//! Every HTTP delivery from Slack (Events API, slash commands, interactivity) is
//! signed the same way. The key is the app's signing secret used as UTF-8 bytes;
//! the message is the exact bytes received, so a form body is signed still
//! URL-encoded and a JSON body must never be re-serialized before the check.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chat_core::WebhookError;
use http::HeaderMap;
use ring::hmac;

/// The header carrying the request's Unix timestamp in seconds.
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// The header carrying `v0=` and 64 lowercase hex digits.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";

const VERSION_PREFIX: &str = "v0=";

/// Computes the `X-Slack-Signature` value for `body` sent at `timestamp`
/// (a decimal string of Unix seconds), as Slack does. For tests and tools that
/// build signed deliveries.
///
/// ```
/// // The example from Slack's documentation.
/// let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
/// assert_eq!(
///     chat_slack::signature::sign("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", body.as_bytes()),
///     "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
/// );
/// ```
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, &base_string(timestamp, body));
    format!("{VERSION_PREFIX}{}", hex::encode(tag.as_ref()))
}

fn base_string(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut base = Vec::with_capacity(4 + timestamp.len() + body.len());
    base.extend_from_slice(b"v0:");
    base.extend_from_slice(timestamp.as_bytes());
    base.push(b':');
    base.extend_from_slice(body);
    base
}

/// Checks signatures with one signing secret. Its `Debug` shows no key material.
pub(crate) struct Verifier {
    key: hmac::Key,
    tolerance: Duration,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("key", &"<redacted>")
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl Verifier {
    pub(crate) fn new(secret: &str, tolerance: Duration) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            tolerance,
        }
    }

    /// Checks the timestamp window (symmetric: `|now - ts| <= tolerance`) and then
    /// the signature over the raw body, in constant time. Errors name what failed
    /// and never carry the expected signature.
    pub(crate) fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), WebhookError> {
        let timestamp = headers
            .get(TIMESTAMP_HEADER)
            .and_then(|v| v.to_str().ok())
            .ok_or(WebhookError::MissingHeader("X-Slack-Request-Timestamp"))?;
        let signature = headers
            .get(SIGNATURE_HEADER)
            .ok_or(WebhookError::MissingHeader("X-Slack-Signature"))?;

        // Digits only: `i64::from_str` would also take a leading `+` or `-`.
        if timestamp.is_empty()
            || timestamp.len() > 18
            || !timestamp.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(WebhookError::MissingHeader("X-Slack-Request-Timestamp"));
        }
        let sent: i128 = timestamp
            .parse()
            .map_err(|_| WebhookError::MissingHeader("X-Slack-Request-Timestamp"))?;
        let now = match now.duration_since(UNIX_EPOCH) {
            Ok(d) => i128::from(d.as_secs()),
            Err(_) => 0,
        };
        if (now - sent).unsigned_abs() > u128::from(self.tolerance.as_secs()) {
            return Err(WebhookError::StaleTimestamp);
        }

        let tag = signature
            .as_bytes()
            .strip_prefix(VERSION_PREFIX.as_bytes())
            .and_then(decode_hex_32)
            .ok_or(WebhookError::BadSignature)?;
        hmac::verify(&self.key, &base_string(timestamp, body), &tag)
            .map_err(|_| WebhookError::BadSignature)
    }
}

/// Decodes exactly 64 **lowercase** hex digits into 32 bytes. Slack sends
/// lowercase, and its own SDKs compare the lowercase string exactly: an
/// uppercase digest is not Slack's and is refused.
fn decode_hex_32(digits: &[u8]) -> Option<[u8; 32]> {
    if !digits
        .iter()
        .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;
    use http::HeaderValue;

    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: u64 = 1_531_420_618;
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const EXPECTED: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn headers(ts: &str, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        // A value that is no header value is left out: the test then sees
        // the header as missing.
        for (name, value) in [(TIMESTAMP_HEADER, ts), (SIGNATURE_HEADER, sig)] {
            if let Ok(value) = HeaderValue::from_str(value) {
                h.insert(name, value);
            }
        }
        h
    }

    fn verifier() -> Verifier {
        Verifier::new(SECRET, Duration::from_secs(300))
    }

    #[test]
    fn the_documented_vector_signs_and_verifies() {
        assert_eq!(sign(SECRET, "1531420618", BODY.as_bytes()), EXPECTED);
        let h = headers("1531420618", EXPECTED);
        assert_eq!(verifier().verify(&h, BODY.as_bytes(), at(TS)), Ok(()));
    }

    /// The right digest in uppercase hex is refused, as Slack's SDKs refuse
    /// it (they compare the lowercase string); so is a mixed-case one.
    #[test]
    fn uppercase_hex_is_refused() {
        let upper = format!("v0={}", EXPECTED[3..].to_ascii_uppercase());
        let h = headers("1531420618", &upper);
        assert_eq!(
            verifier().verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
        let mut mixed = EXPECTED.to_owned();
        mixed.replace_range(3..4, &EXPECTED[3..4].to_ascii_uppercase());
        assert_ne!(mixed, EXPECTED, "the vector starts with a letter");
        let h = headers("1531420618", &mixed);
        assert_eq!(
            verifier().verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
    }

    #[test]
    fn a_tampered_body_fails() {
        let h = headers("1531420618", EXPECTED);
        let tampered = BODY.replace("roadrunner", "coyote");
        assert_eq!(
            verifier().verify(&h, tampered.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
        let mut extra = BODY.as_bytes().to_vec();
        extra.push(b'\n');
        assert_eq!(
            verifier().verify(&h, &extra, at(TS)),
            Err(WebhookError::BadSignature)
        );
    }

    #[test]
    fn a_wrong_secret_fails() {
        let h = headers("1531420618", EXPECTED);
        let other = Verifier::new("8f742231b10e8888abcd99yyyzzz85a6", Duration::from_secs(300));
        assert_eq!(
            other.verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
    }

    #[test]
    fn a_signature_for_another_timestamp_fails() {
        // Same body, signature of the documented vector, but a different signed ts.
        let h = headers("1531420619", EXPECTED);
        assert_eq!(
            verifier().verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
    }

    #[test]
    fn the_window_is_symmetric_and_inclusive() -> TestResult {
        let v = verifier();
        for (skew, ok) in [
            (-301i64, false),
            (-300, true),
            (-299, true),
            (0, true),
            (299, true),
            (300, true),
            (301, false),
        ] {
            // `skew` is how far the request's timestamp is from now.
            let ts = TS
                .checked_add_signed(skew)
                .ok_or("timestamp overflow")?
                .to_string();
            let sig = sign(SECRET, &ts, BODY.as_bytes());
            let got = v.verify(&headers(&ts, &sig), BODY.as_bytes(), at(TS));
            if ok {
                assert_eq!(got, Ok(()), "skew {skew}");
            } else {
                assert_eq!(got, Err(WebhookError::StaleTimestamp), "skew {skew}");
            }
        }
        Ok(())
    }

    #[test]
    fn the_tolerance_is_configurable() {
        let v = Verifier::new(SECRET, Duration::from_secs(10));
        let ts = (TS - 11).to_string();
        let sig = sign(SECRET, &ts, BODY.as_bytes());
        assert_eq!(
            v.verify(&headers(&ts, &sig), BODY.as_bytes(), at(TS)),
            Err(WebhookError::StaleTimestamp)
        );
    }

    #[test]
    fn missing_headers_are_named() {
        let v = verifier();
        let mut h = HeaderMap::new();
        assert_eq!(
            v.verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::MissingHeader("X-Slack-Request-Timestamp"))
        );
        h.insert(TIMESTAMP_HEADER, HeaderValue::from_static("1531420618"));
        assert_eq!(
            v.verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::MissingHeader("X-Slack-Signature"))
        );
        let mut h = HeaderMap::new();
        h.insert(SIGNATURE_HEADER, HeaderValue::from_static(EXPECTED));
        assert_eq!(
            v.verify(&h, BODY.as_bytes(), at(TS)),
            Err(WebhookError::MissingHeader("X-Slack-Request-Timestamp"))
        );
    }

    #[test]
    fn garbage_timestamps_are_invalid_headers() {
        for ts in [
            "",
            "abc",
            "+1531420618",
            "-1",
            "1531420618.5",
            "99999999999999999999999",
        ] {
            let sig = sign(SECRET, ts, BODY.as_bytes());
            assert_eq!(
                verifier().verify(&headers(ts, &sig), BODY.as_bytes(), at(TS)),
                Err(WebhookError::MissingHeader("X-Slack-Request-Timestamp")),
                "{ts:?}"
            );
        }
    }

    #[test]
    fn malformed_signatures_are_bad_signatures() {
        let hex = &EXPECTED[3..];
        for sig in [
            "",
            "v0=",
            hex,
            &format!("v1={hex}"),
            &format!("v0={}", &hex[..62]),
            &format!("v0={hex}00"),
            &format!("v0={}zz", &hex[..62]),
            &format!("V0={hex}"),
        ] {
            assert_eq!(
                verifier().verify(&headers("1531420618", sig), BODY.as_bytes(), at(TS)),
                Err(WebhookError::BadSignature),
                "{sig:?}"
            );
        }
    }

    #[test]
    fn a_reserialized_json_body_fails() -> TestResult {
        let raw = br#"{"token":"x","type":"event_callback",  "event":{"type":"app_mention","text":"a*b"}}"#;
        let ts = "1531420618";
        let sig = sign(SECRET, ts, raw);
        let h = headers(ts, &sig);
        assert_eq!(verifier().verify(&h, raw, at(TS)), Ok(()));
        let value: serde_json::Value = serde_json::from_slice(raw)?;
        let reserialized = serde_json::to_vec(&value)?;
        assert_ne!(reserialized.as_slice(), raw.as_slice());
        assert_eq!(
            verifier().verify(&h, &reserialized, at(TS)),
            Err(WebhookError::BadSignature)
        );
        Ok(())
    }

    #[test]
    fn a_decoded_form_body_fails() {
        // E2: the interactivity body is signed URL-encoded; verifying the decoded
        // JSON fails.
        let raw = "payload=%7B%22type%22%3A%22block_actions%22%2C%22text%22%3A%22%2Abold%2A%22%7D";
        let ts = "1531420618";
        let h = headers(ts, &sign(SECRET, ts, raw.as_bytes()));
        assert_eq!(verifier().verify(&h, raw.as_bytes(), at(TS)), Ok(()));
        let decoded = r#"payload={"type":"block_actions","text":"*bold*"}"#;
        assert_eq!(
            verifier().verify(&h, decoded.as_bytes(), at(TS)),
            Err(WebhookError::BadSignature)
        );
    }

    #[test]
    fn errors_and_debug_never_show_secrets_or_expected_signatures() {
        let h = headers("1531420618", &format!("v0={}", "0".repeat(64)));
        let err = verifier().verify(&h, BODY.as_bytes(), at(TS)).unwrap_err();
        let shown = format!("{err} {err:?} {:?}", verifier());
        assert!(!shown.contains(SECRET));
        assert!(!shown.contains(&EXPECTED[3..]));
    }

    #[test]
    fn a_clock_before_the_epoch_does_not_panic() {
        let h = headers("0", &sign(SECRET, "0", b""));
        assert_eq!(
            verifier().verify(&h, b"", UNIX_EPOCH - Duration::from_secs(5)),
            Ok(())
        );
    }
}
