//! Inspector sessions: one random value per login, kept (by its digest) in
//! the bot's state backend with a TTL, so a session works on every replica
//! sharing the state, expires, and ends at logout; and the guard on failed
//! logins.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{KvStore, SetMode, StateError};
use ring::{digest, hmac, rand::SecureRandom};

/// The KV key prefix of sessions.
const PREFIX: &str = "inspector-session";

/// The sessions of one inspector.
pub(crate) struct Sessions {
    kv: Arc<dyn KvStore>,
    ttl: Duration,
    /// Signs each session's CSRF value.
    key: hmac::Key,
    random: ring::rand::SystemRandom,
}

impl Sessions {
    pub(crate) fn new(kv: Arc<dyn KvStore>, ttl: Duration, key: hmac::Key) -> Self {
        Self {
            kv,
            ttl,
            key,
            random: ring::rand::SystemRandom::new(),
        }
    }

    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The KV key of session `id`: its digest, so a reader of the store
    /// cannot present it.
    fn key_of(id: &str) -> String {
        format!(
            "{PREFIX}:{}",
            hex::encode(digest::digest(&digest::SHA256, id.as_bytes()))
        )
    }

    /// A new session, stored for the TTL; its id.
    pub(crate) async fn open(&self) -> Result<String, StateError> {
        let mut bytes = [0u8; 32];
        self.random
            .fill(&mut bytes)
            .map_err(|_| StateError::InvalidRequest("no random session id"))?;
        let id = hex::encode(bytes);
        self.kv
            .set(
                &Self::key_of(&id),
                Bytes::from_static(b"1"),
                Some(self.ttl),
                SetMode::IfAbsent,
            )
            .await?;
        Ok(id)
    }

    /// Whether `id` is a live session.
    pub(crate) async fn is_open(&self, id: &str) -> bool {
        if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        match self.kv.get(&Self::key_of(id)).await {
            Ok(found) => found.is_some(),
            Err(e) => {
                tracing::warn!(error = %e, "inspector: a session could not be checked");
                false
            }
        }
    }

    /// Ends session `id` on every replica.
    pub(crate) async fn close(&self, id: &str) {
        if let Err(e) = self.kv.delete(&Self::key_of(id)).await {
            tracing::warn!(error = %e, "inspector: a session could not be closed; it expires with its TTL");
        }
    }

    /// The CSRF value of forms in session `id`.
    pub(crate) fn csrf(&self, id: &str) -> String {
        hex::encode(hmac::sign(&self.key, format!("csrf:{id}").as_bytes()))
    }
}

/// Failed logins: at most `max` a minute; past it, logins are refused until
/// the minute ends, and one log line per minute tells how many there were.
pub(crate) struct LoginGuard {
    max: u64,
    /// The minute counted (since the Unix epoch) and its failures.
    window: AtomicU64,
    failures: AtomicU64,
}

/// What the guard says of a login attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Check the token.
    Allowed,
    /// Too many failures this minute: refuse without checking.
    Refused,
}

impl LoginGuard {
    pub(crate) fn new(max: u64) -> Self {
        Self {
            max,
            window: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    fn minute(now_ms: u64) -> u64 {
        now_ms / 60_000
    }

    /// Moves to the minute of `now_ms`, reporting the last one's failures.
    fn roll(&self, now_ms: u64) {
        let minute = Self::minute(now_ms);
        let last = self.window.swap(minute, Ordering::SeqCst);
        if last != minute {
            let failed = self.failures.swap(0, Ordering::SeqCst);
            if failed > self.max {
                tracing::warn!(name: "inspector-logins-refused", failed, "inspector: too many wrong tokens in a minute; logins were refused for the rest of it");
            }
        }
    }

    /// Whether a login may be checked at `now_ms`.
    pub(crate) fn attempt(&self, now_ms: u64) -> Attempt {
        self.roll(now_ms);
        if self.failures.load(Ordering::SeqCst) >= self.max {
            Attempt::Refused
        } else {
            Attempt::Allowed
        }
    }

    /// A wrong token was given at `now_ms`: logged once a minute.
    pub(crate) fn failed(&self, now_ms: u64) {
        self.roll(now_ms);
        let n = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            tracing::warn!(name: "inspector-login-refused", "inspector: a wrong token (further ones this minute are counted, not logged)");
        }
        if n == self.max {
            tracing::warn!(name: "inspector-logins-refused", failed = n, "inspector: too many wrong tokens; logins are refused for the rest of the minute");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_failures_a_minute_the_guard_refuses_until_the_next() {
        let g = LoginGuard::new(3);
        let t = 10 * 60_000;
        for _ in 0..3 {
            assert_eq!(g.attempt(t), Attempt::Allowed);
            g.failed(t);
        }
        assert_eq!(g.attempt(t + 59_000), Attempt::Refused);
        assert_eq!(g.attempt(t + 60_000), Attempt::Allowed);
    }
}
