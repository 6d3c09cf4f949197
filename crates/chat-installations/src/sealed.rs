//! The stored form of an installation: the whole installation as JSON,
//! sealed with AES-256-GCM.
//!
//! ```text
//! {"v":2,"kid":"2024-07","rev":1764578700123,"nonce":"<24 hex>","ct":"<hex of ciphertext + 16-byte tag>"}
//! ```
//!
//! * `kid` names the key of the ring that sealed it; any key of the ring opens.
//! * `rev` is the record's revision: above every earlier record of the tenant
//!   the writer knew of (the write time in ms at least). A process that has
//!   seen a revision refuses an older one: a record rolled back to an earlier
//!   sealed copy does not open there.
//! * `nonce` is 96 random bits, new for every write.
//! * The associated data is `chat-installations:v2:{platform}:{tenant}:{rev}`:
//!   a record copied under another tenant's (or platform's) key, or given
//!   another revision, does not open. Records of format 1 (no revision) still
//!   open, as revision 0.

use chat_core::{BoxError, Installation, InstallationError, Platform, TenantId};
use ring::aead::{Aad, NONCE_LEN, Nonce};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use crate::keys::KeyRing;

/// The record format's version.
const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
struct Record {
    v: u32,
    kid: String,
    #[serde(default)]
    rev: u64,
    nonce: String,
    ct: String,
}

/// Why a record could not be opened, without naming a secret.
#[derive(Debug, thiserror::Error)]
enum OpenError {
    #[error("unsupported record version {0}")]
    Version(u32),
    #[error("record is not a sealed installation")]
    Format,
    #[error("authentication failed: tampered, or sealed for another tenant or key")]
    Authentication,
    #[error("the opened record is not an installation")]
    Payload,
    #[error("the opened record names another platform or tenant")]
    Mismatch,
    #[error("the record is older than one this process has seen: rolled back")]
    RolledBack,
}

/// A record older than one this process has seen.
pub(crate) fn rolled_back() -> InstallationError {
    corrupt(OpenError::RolledBack)
}

fn corrupt(e: OpenError) -> InstallationError {
    InstallationError::Corrupt(Box::new(e) as BoxError)
}

fn associated_data(version: u32, platform: Platform, tenant: &TenantId, rev: u64) -> Vec<u8> {
    match version {
        1 => format!("chat-installations:v1:{platform}:{tenant}").into_bytes(),
        _ => format!("chat-installations:v{version}:{platform}:{tenant}:{rev}").into_bytes(),
    }
}

/// Seals `installation` as revision `rev` with the ring's current key and a
/// fresh nonce.
pub(crate) fn seal(
    keys: &KeyRing,
    random: &SystemRandom,
    installation: &Installation,
    rev: u64,
) -> Result<Vec<u8>, InstallationError> {
    let key = keys.current();
    let mut in_out =
        serde_json::to_vec(installation).map_err(|e| InstallationError::Corrupt(Box::new(e)))?;
    let mut nonce = [0u8; NONCE_LEN];
    random
        .fill(&mut nonce)
        .map_err(|_| InstallationError::Unavailable("the system random source failed".into()))?;
    let aad = associated_data(VERSION, installation.platform, &installation.tenant, rev);
    key.aead()
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad.as_slice()),
            &mut in_out,
        )
        .map_err(|_| InstallationError::Invalid("installation too large to encrypt"))?;
    let record = Record {
        v: VERSION,
        kid: key.id().to_owned(),
        rev,
        nonce: hex::encode(nonce),
        ct: hex::encode(&in_out),
    };
    serde_json::to_vec(&record).map_err(|e| InstallationError::Corrupt(Box::new(e)))
}

/// Opens a record stored for `(platform, tenant)`; returns it with its
/// revision.
pub(crate) fn open(
    keys: &KeyRing,
    platform: Platform,
    tenant: &TenantId,
    stored: &[u8],
) -> Result<(Installation, u64), InstallationError> {
    let record: Record = serde_json::from_slice(stored).map_err(|_| corrupt(OpenError::Format))?;
    if !(1..=VERSION).contains(&record.v) {
        return Err(corrupt(OpenError::Version(record.v)));
    }
    let key = keys
        .get(&record.kid)
        .ok_or_else(|| InstallationError::MissingKey {
            key_id: record.kid.clone(),
        })?;
    let nonce: [u8; NONCE_LEN] = hex::decode(&record.nonce)
        .ok()
        .and_then(|n| n.try_into().ok())
        .ok_or_else(|| corrupt(OpenError::Format))?;
    let mut in_out = hex::decode(&record.ct)
        .ok()
        .ok_or_else(|| corrupt(OpenError::Format))?;
    let aad = associated_data(record.v, platform, tenant, record.rev);
    let plain = key
        .aead()
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad.as_slice()),
            &mut in_out,
        )
        .map_err(|_| corrupt(OpenError::Authentication))?;
    let installation: Installation =
        serde_json::from_slice(plain).map_err(|_| corrupt(OpenError::Payload))?;
    if installation.platform != platform || &installation.tenant != tenant {
        return Err(corrupt(OpenError::Mismatch));
    }
    Ok((installation, record.rev))
}

/// The revision a stored record names (0 for format 1, or for what is not a
/// record).
pub(crate) fn revision(stored: &[u8]) -> u64 {
    serde_json::from_slice::<Record>(stored).map_or(0, |r| r.rev)
}

/// The key id a stored record names, if it is a record.
pub(crate) fn key_id(stored: &[u8]) -> Option<String> {
    serde_json::from_slice::<Record>(stored).ok().map(|r| r.kid)
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use chat_core::Secret;

    use super::*;
    use crate::keys::EncryptionKey;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn ring(id: &str, byte: u8) -> Result<KeyRing, Box<dyn std::error::Error>> {
        Ok(KeyRing::new(EncryptionKey::new(id, &[byte; 32])?))
    }

    #[test]
    fn sealed_records_open_only_for_their_tenant() -> TestResult {
        let keys = ring("k1", 7)?;
        let random = SystemRandom::new();
        let i = Installation::new(Platform::SLACK, "T1", Secret::new("xoxb-secret"));
        let sealed = seal(&keys, &random, &i, 7)?;
        assert!(!String::from_utf8_lossy(&sealed).contains("xoxb-secret"));
        assert_eq!(key_id(&sealed).as_deref(), Some("k1"));
        assert_eq!(revision(&sealed), 7);
        assert_eq!(open(&keys, Platform::SLACK, &"T1".into(), &sealed)?, (i, 7));
        assert!(matches!(
            open(&keys, Platform::SLACK, &"T2".into(), &sealed),
            Err(InstallationError::Corrupt(_))
        ));
        assert!(matches!(
            open(&keys, Platform::LINEAR, &"T1".into(), &sealed),
            Err(InstallationError::Corrupt(_))
        ));
        Ok(())
    }

    #[test]
    fn every_write_has_its_own_nonce() -> TestResult {
        let keys = ring("k1", 7)?;
        let random = SystemRandom::new();
        let i = Installation::new(Platform::SLACK, "T1", Secret::new("xoxb-secret"));
        assert_ne!(seal(&keys, &random, &i, 1)?, seal(&keys, &random, &i, 1)?);
        Ok(())
    }

    /// The revision is sealed: a record whose `rev` is edited does not open,
    /// and a record of format 1 (before revisions) still does, as revision 0.
    #[test]
    fn the_revision_is_bound_and_format_1_still_opens() -> TestResult {
        let keys = ring("k1", 7)?;
        let random = SystemRandom::new();
        let i = Installation::new(Platform::SLACK, "T1", Secret::new("xoxb-secret"));
        let sealed = String::from_utf8(seal(&keys, &random, &i, 5)?)?;
        let edited = sealed.replace("\"rev\":5", "\"rev\":9");
        assert_ne!(edited, sealed);
        assert!(matches!(
            open(&keys, Platform::SLACK, &"T1".into(), edited.as_bytes()),
            Err(InstallationError::Corrupt(_))
        ));
        // A format-1 record: sealed under the old associated data, no `rev`.
        let mut in_out = serde_json::to_vec(&i)?;
        let nonce = [3u8; NONCE_LEN];
        keys.current()
            .aead()
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&b"chat-installations:v1:slack:T1"[..]),
                &mut in_out,
            )
            .map_err(|_| "sealing failed")?;
        let old = format!(
            r#"{{"v":1,"kid":"k1","nonce":"{}","ct":"{}"}}"#,
            hex::encode(nonce),
            hex::encode(&in_out)
        );
        assert_eq!(
            open(&keys, Platform::SLACK, &"T1".into(), old.as_bytes())?,
            (i, 0)
        );
        Ok(())
    }

    #[test]
    fn garbage_never_panics() -> TestResult {
        let keys = ring("k1", 7)?;
        let t: TenantId = "T1".into();
        for stored in [
            &b""[..],
            b"{}",
            b"[1,2]",
            br#"{"v":1,"kid":"k1","nonce":"00","ct":"00"}"#,
            br#"{"v":1,"kid":"k1","nonce":"000000000000000000000000","ct":"zz"}"#,
            br#"{"v":1,"kid":"k1","nonce":"000000000000000000000000","ct":""}"#,
            br#"{"v":2,"kid":"k1","nonce":"000000000000000000000000","ct":"00"}"#,
            br#"{"v":3,"kid":"k1","nonce":"000000000000000000000000","ct":"00"}"#,
        ] {
            assert!(open(&keys, Platform::SLACK, &t, stored).is_err());
        }
        assert!(matches!(
            open(
                &keys,
                Platform::SLACK,
                &t,
                br#"{"v":1,"kid":"gone","nonce":"","ct":""}"#
            ),
            Err(InstallationError::MissingKey { key_id }) if key_id == "gone"
        ));
        Ok(())
    }
}
