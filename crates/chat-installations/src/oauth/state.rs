//! The OAuth `state` parameter of an install flow: signed, expiring, and bound
//! to the browser that started the install.
//!
//! ```text
//! state  = {expires, Unix seconds}.{nonce, 32 hex}.{HMAC-SHA256, 64 hex}
//! signed = "chat-rs-oauth-state:v1:{platform}:{expires}:{nonce}"
//! cookie = {name}={nonce}   (HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=ttl)
//! ```
//!
//! The callback refuses a state whose MAC does not verify (forged or
//! tampered), whose expiry passed, or — with browser binding on — whose nonce
//! is not the one in the install cookie of the browser bringing it back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

const NONCE_LEN: usize = 16;
const VERSION: &str = "v1";

/// Why a `state` was refused. Names the failure, never the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateRefusal {
    /// The callback has no `state`.
    #[error("the callback has no state")]
    Missing,
    /// The state is malformed, or its signature does not verify.
    #[error("the state is invalid")]
    Invalid,
    /// The state's expiry passed.
    #[error("the state expired")]
    Expired,
    /// The browser bringing the state back is not the one that started the
    /// install (its cookie is missing or holds another nonce).
    #[error("the state does not belong to this browser")]
    NotThisBrowser,
    /// The state was already brought back once: each is good for one
    /// callback (a replay would spend a token exchange with the client
    /// secret).
    #[error("the state was already used")]
    Used,
}

/// Issues and checks states with one secret.
pub struct StateSigner {
    key: hmac::Key,
    ttl: Duration,
    platform: String,
    random: SystemRandom,
}

impl std::fmt::Debug for StateSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSigner")
            .field("key", &"<redacted>")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A new state and the nonce its cookie carries. Its `Debug` shows the state
/// (it travels in a URL) and hides the nonce (it binds the browser).
pub struct Issued {
    /// The `state` query parameter to send to the platform.
    pub state: String,
    /// The nonce to keep in the browser's install cookie.
    pub nonce: String,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("state", &self.state)
            .field("nonce", &"<redacted>")
            .finish()
    }
}

impl StateSigner {
    /// A signer with `secret`, whose states live `ttl`, for `platform` (part of
    /// what is signed, so a Slack state never opens a Linear install).
    pub fn new(secret: &[u8], ttl: Duration, platform: &str) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            ttl,
            platform: platform.to_owned(),
            random: SystemRandom::new(),
        }
    }

    /// How long an issued state is valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn signed(&self, expires: u64, nonce: &str) -> String {
        format!(
            "chat-rs-oauth-state:{VERSION}:{}:{expires}:{nonce}",
            self.platform
        )
    }

    /// A fresh state, valid for the signer's TTL from `now`.
    pub fn issue(&self, now: SystemTime) -> Option<Issued> {
        let mut bytes = [0u8; NONCE_LEN];
        self.random.fill(&mut bytes).ok()?;
        let nonce = hex::encode(bytes);
        let expires = unix_secs(now).saturating_add(self.ttl.as_secs().max(1));
        let tag = hmac::sign(&self.key, self.signed(expires, &nonce).as_bytes());
        Some(Issued {
            state: format!("{expires}.{nonce}.{}", hex::encode(tag.as_ref())),
            nonce,
        })
    }

    /// Checks `state` at `now`; with `cookie_nonce`, also that it is the
    /// state of this browser. Returns the state's nonce.
    pub fn check(
        &self,
        state: Option<&str>,
        now: SystemTime,
        cookie_nonce: Option<Option<&str>>,
    ) -> Result<String, StateRefusal> {
        let state = state
            .filter(|s| !s.is_empty())
            .ok_or(StateRefusal::Missing)?;
        let mut parts = state.splitn(3, '.');
        let (Some(expires), Some(nonce), Some(mac)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(StateRefusal::Invalid);
        };
        let well_formed = !expires.is_empty()
            && expires.len() <= 20
            && expires.bytes().all(|b| b.is_ascii_digit())
            && nonce.len() == NONCE_LEN * 2
            && nonce.bytes().all(|b| b.is_ascii_hexdigit());
        if !well_formed {
            return Err(StateRefusal::Invalid);
        }
        let expires_at: u64 = expires.parse().map_err(|_| StateRefusal::Invalid)?;
        let mac = hex::decode(mac).map_err(|_| StateRefusal::Invalid)?;
        hmac::verify(&self.key, self.signed(expires_at, nonce).as_bytes(), &mac)
            .map_err(|_| StateRefusal::Invalid)?;
        if unix_secs(now) > expires_at {
            return Err(StateRefusal::Expired);
        }
        if let Some(cookie) = cookie_nonce
            && cookie != Some(nonce)
        {
            return Err(StateRefusal::NotThisBrowser);
        }
        Ok(nonce.to_owned())
    }
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The value of cookie `name` in the request's `Cookie` headers, if any.
pub fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().trim_matches('"'))
}

/// `Set-Cookie` for the install's nonce (or, with `None`, clearing it).
pub fn set_cookie(name: &str, nonce: Option<&str>, ttl: Duration) -> String {
    let (value, max_age) = match nonce {
        Some(n) => (n, ttl.as_secs().max(1)),
        None => ("", 0),
    };
    format!("{name}={value}; Max-Age={max_age}; Path=/; HttpOnly; Secure; SameSite=Lax")
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn states_verify_until_they_expire() -> TestResult {
        let s = StateSigner::new(b"secret-secret-secret", Duration::from_secs(600), "slack");
        let issued = s.issue(at(1_000)).ok_or("no state issued")?;
        assert_eq!(s.check(Some(&issued.state), at(1_500), None)?, issued.nonce);
        assert_eq!(
            s.check(Some(&issued.state), at(1_601), None),
            Err(StateRefusal::Expired)
        );
        assert_eq!(s.check(None, at(1_000), None), Err(StateRefusal::Missing));
        assert_eq!(
            s.check(
                Some(&issued.state),
                at(1_000),
                Some(Some(issued.nonce.as_str()))
            ),
            Ok(issued.nonce.clone())
        );
        assert_eq!(
            s.check(Some(&issued.state), at(1_000), Some(None)),
            Err(StateRefusal::NotThisBrowser)
        );
        Ok(())
    }

    #[test]
    fn forged_tampered_and_foreign_states_are_invalid() -> TestResult {
        let s = StateSigner::new(b"secret-secret-secret", Duration::from_secs(600), "slack");
        let issued = s.issue(at(1_000)).ok_or("no state issued")?;
        // Extending the expiry breaks the signature.
        let (_, rest) = issued
            .state
            .split_once('.')
            .ok_or("a state without a dot")?;
        let extended = format!("9999999999.{rest}");
        assert_eq!(
            s.check(Some(&extended), at(1_000), None),
            Err(StateRefusal::Invalid)
        );
        let other_key = StateSigner::new(b"another-secret-here", Duration::from_secs(600), "slack");
        assert_eq!(
            other_key.check(Some(&issued.state), at(1_000), None),
            Err(StateRefusal::Invalid)
        );
        let other_platform =
            StateSigner::new(b"secret-secret-secret", Duration::from_secs(600), "linear");
        assert_eq!(
            other_platform.check(Some(&issued.state), at(1_000), None),
            Err(StateRefusal::Invalid)
        );
        for junk in [
            "",
            "a.b",
            "1.2.3",
            "1..",
            "x.y.z.w",
            "١٢.ab.cd",
            &"9".repeat(40)[..],
        ] {
            assert!(s.check(Some(junk), at(1_000), None).is_err(), "{junk}");
        }
        Ok(())
    }

    #[test]
    fn cookies_are_found_among_others() -> TestResult {
        let mut h = http::HeaderMap::new();
        h.append(http::header::COOKIE, "a=1; chat=abc".parse()?);
        h.append(http::header::COOKIE, "b=2".parse()?);
        assert_eq!(cookie(&h, "chat"), Some("abc"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "c"), None);
        assert!(set_cookie("chat", None, Duration::from_secs(5)).contains("Max-Age=0"));
        Ok(())
    }
}
