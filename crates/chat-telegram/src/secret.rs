//! The webhook's secret token: what Telegram sends in
//! `X-Telegram-Bot-Api-Secret-Token` on every delivery, as set with
//! [`setWebhook`](https://core.telegram.org/bots/api#setwebhook)'s
//! `secret_token` (1–256 characters of `A-Z`, `a-z`, `0-9`, `_`, `-`).
//! Telegram does not sign its deliveries: this token, compared in constant
//! time before anything is parsed, is the proof a delivery is Telegram's.
//!
//! One bot: the token is configured. Several bots (installation mode): each
//! bot's token is derived from one webhook secret, `{bot id}_{HMAC-SHA256 of
//! the bot id, hex}`, so any replica checks any bot's delivery without a
//! lookup and knows which bot it is for.

use chat_core::WebhookError;
use ring::hmac;

/// The header Telegram sends the secret token in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// How deliveries prove they are Telegram's.
pub(crate) enum Secrets {
    /// One bot: its id, and the token set with `setWebhook`.
    Fixed { bot_id: String, token: String },
    /// Several bots: each one's token derived from the webhook secret.
    Derived(hmac::Key),
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fixed { bot_id, .. } => f
                .debug_struct("Fixed")
                .field("bot_id", bot_id)
                .field("token", &"<redacted>")
                .finish(),
            Self::Derived(_) => f.write_str("Derived(<redacted>)"),
        }
    }
}

/// Whether `token` is one Telegram takes as a `secret_token`.
pub(crate) fn well_formed(token: &str) -> bool {
    (1..=256).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `a == b` in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Secrets {
    /// The secret token of bot `bot_id`: the configured one, or the derived
    /// one.
    pub(crate) fn token_for(&self, bot_id: &str) -> String {
        match self {
            Self::Fixed { token, .. } => token.clone(),
            Self::Derived(key) => {
                let tag = hmac::sign(key, bot_id.as_bytes());
                format!("{bot_id}_{}", hex::encode(tag.as_ref()))
            }
        }
    }

    /// Checks a delivery's secret token; the bot it is for.
    pub(crate) fn verify(&self, headers: &http::HeaderMap) -> Result<String, WebhookError> {
        let given = headers
            .get(SECRET_HEADER)
            .ok_or(WebhookError::MissingHeader(SECRET_HEADER))?
            .as_bytes();
        match self {
            Self::Fixed { bot_id, token } => {
                if same(given, token.as_bytes()) {
                    Ok(bot_id.clone())
                } else {
                    Err(WebhookError::BadSignature)
                }
            }
            Self::Derived(key) => {
                let given = std::str::from_utf8(given).map_err(|_| WebhookError::BadSignature)?;
                let (bot_id, tag) = given.split_once('_').ok_or(WebhookError::BadSignature)?;
                if bot_id.is_empty() || !bot_id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(WebhookError::BadSignature);
                }
                let tag = hex::decode(tag).map_err(|_| WebhookError::BadSignature)?;
                hmac::verify(key, bot_id.as_bytes(), &tag)
                    .map(|()| bot_id.to_owned())
                    .map_err(|_| WebhookError::BadSignature)
            }
        }
    }

    /// The bot of a delivery whose token was checked.
    pub(crate) fn bot_of(&self, headers: &http::HeaderMap) -> Option<String> {
        match self {
            Self::Fixed { bot_id, .. } => Some(bot_id.clone()),
            Self::Derived(_) => headers
                .get(SECRET_HEADER)?
                .to_str()
                .ok()?
                .split_once('_')
                .map(|(id, _)| id.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(token: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(
            SECRET_HEADER,
            http::HeaderValue::from_str(token).unwrap_or_else(|e| panic!("{e}")),
        );
        h
    }

    #[test]
    fn derived_tokens_name_their_bot_and_cannot_be_forged() {
        let secrets = Secrets::Derived(hmac::Key::new(hmac::HMAC_SHA256, b"webhook secret"));
        let token = secrets.token_for("123456");
        assert!(well_formed(&token));
        assert_eq!(
            secrets.verify(&headers(&token)).ok().as_deref(),
            Some("123456")
        );
        // Another bot's id with this bot's tag, a changed tag, a bare id.
        let forged = token.replacen("123456", "654321", 1);
        for bad in [forged.as_str(), "123456_00", "123456", "_abc", "x_y"] {
            assert!(
                matches!(
                    secrets.verify(&headers(bad)),
                    Err(WebhookError::BadSignature)
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            secrets.verify(&http::HeaderMap::new()),
            Err(WebhookError::MissingHeader(_))
        ));
    }

    #[test]
    fn a_fixed_token_is_compared_whole() {
        let secrets = Secrets::Fixed {
            bot_id: "1".into(),
            token: "s3cret-token".into(),
        };
        assert!(secrets.verify(&headers("s3cret-token")).is_ok());
        for bad in ["s3cret-toke", "s3cret-tokeN", "s3cret-token-"] {
            assert!(secrets.verify(&headers(bad)).is_err(), "{bad}");
        }
        assert!(!format!("{secrets:?}").contains("s3cret"));
    }

    #[test]
    fn telegrams_token_rules() {
        assert!(well_formed("a-Z_9"));
        assert!(!well_formed(""));
        assert!(!well_formed("has space"));
        assert!(!well_formed(&"a".repeat(257)));
    }
}
