//! Authenticating as a GitHub App
//! ([docs](https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/about-authentication-with-a-github-app)):
//!
//! * the App signs a JSON Web Token with its private key (RS256; `iat` 60 s
//!   in the past for clock drift, `exp` at most 10 minutes ahead — 9 here —
//!   `iss` the App's id or client id);
//! * with it, `POST /app/installations/{id}/access_tokens` gives an
//!   installation access token that lasts an hour (`expires_at`);
//! * every call for that installation carries the token.
//!
//! [`InstallationTokens`] keeps one token per installation and fetches a new
//! one when less than [`REFRESH_BEFORE`] is left: callers that need a token
//! at the same moment wait for one fetch, never start their own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chat_core::{AdapterError, Secret};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use tokio::time::Instant;

/// How long before its expiry a token is replaced.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);

/// An App's private key, which signs its JSON Web Tokens.
pub struct AppKey {
    issuer: String,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for AppKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppKey")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl AppKey {
    /// The key of App `issuer` (its id, or its client id) from the PEM the
    /// App's settings page downloads (`BEGIN RSA PRIVATE KEY`, PKCS#1) or a
    /// PKCS#8 one (`BEGIN PRIVATE KEY`).
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a PEM that is not an RSA private key.
    pub fn from_pem(issuer: impl Into<String>, pem: &str) -> Result<Self, AdapterError> {
        let invalid = |what: &str| AdapterError::Invalid(format!("the App's private key: {what}"));
        let (label, der) = pem_body(pem).ok_or_else(|| invalid("not a PEM block"))?;
        let key = match label.as_str() {
            "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
            "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
            _ => return Err(invalid("not a private key")),
        }
        .map_err(|e| invalid(&e.to_string()))?;
        let issuer = issuer.into();
        if issuer.is_empty() {
            return Err(AdapterError::Invalid("an empty App id".to_owned()));
        }
        Ok(Self {
            issuer,
            key,
            rng: SystemRandom::new(),
        })
    }

    /// A JSON Web Token for the App, issued at `now`.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] when signing fails.
    pub fn jwt(&self, now: SystemTime) -> Result<Secret, AdapterError> {
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = serde_json::json!({
            "iat": secs.saturating_sub(60),
            "exp": secs + 9 * 60,
            "iss": self.issuer,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| AdapterError::Invalid("signing the App's JWT failed".to_owned()))?;
        Ok(Secret::new(format!(
            "{signed}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        )))
    }
}

/// The label and the decoded body of the first PEM block in `pem`.
fn pem_body(pem: &str) -> Option<(String, Vec<u8>)> {
    let begin = pem.find("-----BEGIN ")?;
    let rest = &pem[begin + 11..];
    let (label, rest) = rest.split_once("-----")?;
    let end = rest.find(&format!("-----END {label}-----"))?;
    let b64: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD.decode(b64).ok()?;
    Some((label.to_owned(), der))
}

/// An installation access token and when it stops working.
#[derive(Debug, Clone)]
pub struct InstallationToken {
    /// The token.
    pub token: Secret,
    /// When GitHub stops accepting it.
    pub expires_at: Instant,
}

/// Where installation tokens come from: GitHub's
/// `POST /app/installations/{id}/access_tokens`, or a fake in tests.
#[async_trait]
pub trait TokenSource: Send + Sync {
    /// A fresh token for installation `installation`.
    async fn fetch(&self, installation: u64) -> Result<InstallationToken, AdapterError>;
}

/// One token per installation, each replaced when less than
/// [`REFRESH_BEFORE`] is left; one fetch at a time per installation.
pub struct InstallationTokens {
    source: Arc<dyn TokenSource>,
    slots: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<Option<InstallationToken>>>>>,
}

impl std::fmt::Debug for InstallationTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstallationTokens").finish_non_exhaustive()
    }
}

impl InstallationTokens {
    /// Tokens from `source`.
    pub fn new(source: Arc<dyn TokenSource>) -> Self {
        Self {
            source,
            slots: Mutex::default(),
        }
    }

    /// A token for `installation` with at least [`REFRESH_BEFORE`] left.
    ///
    /// # Errors
    /// The source's, when a fetch was needed and failed (the next call
    /// tries again).
    pub async fn get(&self, installation: u64) -> Result<Secret, AdapterError> {
        let slot = Arc::clone(
            self.slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(installation)
                .or_default(),
        );
        let mut held = slot.lock().await;
        if let Some(t) = held.as_ref()
            && t.expires_at > Instant::now() + REFRESH_BEFORE
        {
            return Ok(t.token.clone());
        }
        let fresh = self.source.fetch(installation).await?;
        let token = fresh.token.clone();
        *held = Some(fresh);
        Ok(token)
    }

    /// Forgets `installation`'s token (it was uninstalled or suspended):
    /// the next call fetches a new one.
    pub fn forget(&self, installation: u64) {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&installation);
    }
}

/// The longest an installation token lives.
const TOKEN_LIFE: Duration = Duration::from_secs(3600);

/// `expires_at` (`2016-07-11T22:14:10Z`) as an instant of this process's
/// clock, at most an hour away (a token's life); `None` when it does not
/// read as a UTC timestamp.
pub(crate) fn instant_of(expires_at: &str, now: SystemTime) -> Option<Instant> {
    let at = unix_secs(expires_at)?;
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    let left = Duration::from_secs(at.saturating_sub(now_secs)).min(TOKEN_LIFE);
    Some(Instant::now() + left)
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS(.fff)Z`.
pub(crate) fn unix_secs(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.split('.').next()?;
    let mut t = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if !(1970..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&hh)
        || !(0..=59).contains(&mm)
        || !(0..=60).contains(&ss)
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    const PKCS1: &str = include_str!("../tests/fixtures/test-app-key.pem");
    const PKCS8: &str = include_str!("../tests/fixtures/test-app-key-pkcs8.pem");

    #[test]
    fn the_jwt_is_rs256_with_githubs_claims_and_verifies_with_the_apps_key() {
        use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for pem in [PKCS1, PKCS8] {
            let Ok(key) = AppKey::from_pem("12345", pem) else {
                panic!("the test key reads");
            };
            let Ok(jwt) = key.jwt(now) else {
                panic!("the JWT is signed");
            };
            let parts: Vec<&str> = jwt.expose().split('.').collect();
            assert_eq!(parts.len(), 3);
            let json = |part: &str| -> serde_json::Value {
                URL_SAFE_NO_PAD
                    .decode(part)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default()
            };
            let header = json(parts[0]);
            assert_eq!(header["alg"], "RS256");
            let claims = json(parts[1]);
            assert_eq!(claims["iss"], "12345");
            assert_eq!(claims["iat"], 1_700_000_000 - 60);
            assert_eq!(claims["exp"], 1_700_000_000 + 540);
            let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap_or_default();
            let public =
                UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.key.public().as_ref());
            let signed = format!("{}.{}", parts[0], parts[1]);
            assert!(public.verify(signed.as_bytes(), &signature).is_ok());
            assert!(public.verify(b"another message", &signature).is_err());
        }
    }

    #[test]
    fn a_key_that_is_not_an_rsa_private_key_is_refused() {
        assert!(AppKey::from_pem("1", "not a pem").is_err());
        assert!(AppKey::from_pem("1", &PKCS1.replace("RSA PRIVATE KEY", "CERTIFICATE")).is_err());
        let broken = PKCS1.replacen("MII", "MIX", 1);
        assert!(AppKey::from_pem("1", &broken).is_err());
        assert!(AppKey::from_pem("", PKCS1).is_err());
    }

    #[test]
    fn a_token_is_kept_at_most_an_hour_whatever_it_says() {
        let now = UNIX_EPOCH + Duration::from_secs(1_468_275_250);
        let at = instant_of("9999-01-01T00:00:00Z", now);
        assert!(at.is_some_and(|at| at <= Instant::now() + TOKEN_LIFE));
        let soon = instant_of("2016-07-11T22:24:10Z", now);
        assert!(soon.is_some_and(|soon| soon <= Instant::now() + Duration::from_secs(600)));
    }

    #[test]
    fn timestamps_read_as_unix_seconds() {
        assert_eq!(unix_secs("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_secs("2016-07-11T22:14:10Z"), Some(1_468_275_250));
        assert_eq!(unix_secs("2024-02-29T12:00:00.5Z"), Some(1_709_208_000));
        for bad in [
            "",
            "2016-07-11T22:14:10",
            "2016-13-01T00:00:00Z",
            "x-07-11T22:14:10Z",
        ] {
            assert_eq!(unix_secs(bad), None, "{bad:?}");
        }
    }

    struct Counting {
        fetches: AtomicU32,
        lasts: Duration,
    }

    #[async_trait]
    impl TokenSource for Counting {
        async fn fetch(&self, installation: u64) -> Result<InstallationToken, AdapterError> {
            let n = self.fetches.fetch_add(1, Ordering::SeqCst) + 1;
            // A fetch takes a while: concurrent callers arrive meanwhile.
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(InstallationToken {
                token: Secret::new(format!("ghs_{installation}_{n}")),
                expires_at: Instant::now() + self.lasts,
            })
        }
    }

    /// The token `get` gives, or what went wrong.
    async fn token(tokens: &InstallationTokens, installation: u64) -> String {
        match tokens.get(installation).await {
            Ok(t) => t.expose().to_owned(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_fetch_and_the_token_is_refreshed_before_it_expires() {
        let source = Arc::new(Counting {
            fetches: AtomicU32::new(0),
            lasts: Duration::from_secs(3600),
        });
        let tokens = Arc::new(InstallationTokens::new(source.clone()));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let tokens = Arc::clone(&tokens);
            tasks.push(tokio::spawn(async move { tokens.get(7).await }));
        }
        for t in tasks {
            let token = t.await.ok().and_then(Result::ok);
            assert_eq!(token.as_ref().map(Secret::expose), Some("ghs_7_1"));
        }
        assert_eq!(source.fetches.load(Ordering::SeqCst), 1);

        // 54 minutes on, 6 are left: the same token.
        tokio::time::advance(Duration::from_secs(54 * 60)).await;
        assert_eq!(token(&tokens, 7).await, "ghs_7_1");
        // 56 minutes on, 4 are left: a new one, fetched once.
        tokio::time::advance(Duration::from_secs(2 * 60)).await;
        let (a, b) = tokio::join!(token(&tokens, 7), token(&tokens, 7));
        assert_eq!((a.as_str(), b.as_str()), ("ghs_7_2", "ghs_7_2"));
        assert_eq!(source.fetches.load(Ordering::SeqCst), 2);

        // Another installation has its own token.
        assert_eq!(token(&tokens, 8).await, "ghs_8_3");
        // A forgotten one is fetched again.
        tokens.forget(7);
        assert_eq!(token(&tokens, 7).await, "ghs_7_4");
    }
}
