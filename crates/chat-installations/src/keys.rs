//! Encryption keys from configuration, and the [`KeyRing`] that rotates them.

use std::fmt;

use ring::aead::{AES_256_GCM, LessSafeKey, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The length of an AES-256 key in bytes.
pub const KEY_LEN: usize = 32;

/// The longest key id accepted.
const MAX_ID_LEN: usize = 64;

/// A key could not be made or a key ring assembled. Never shows key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key id is empty, longer than 64 characters, or has a character other
    /// than ASCII letters, digits, `-`, `_` and `.`.
    #[error("invalid key id {0:?}: use 1 to 64 of A-Z a-z 0-9 - _ .")]
    InvalidId(String),
    /// A key is not 32 bytes (64 hex digits).
    #[error("key {id:?} is {len} bytes; AES-256 needs 32")]
    Length {
        /// The key's id.
        id: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A key is not hexadecimal.
    #[error("key {0:?} is not hexadecimal")]
    Hex(String),
    /// Two keys of a ring share an id.
    #[error("key id {0:?} appears twice in the key ring")]
    Duplicate(String),
    /// A key ring specification names no key.
    #[error("the key ring is empty")]
    Empty,
    /// A key ring specification entry is not `id:hex`.
    #[error("key ring entry {0} is not of the form id:hex")]
    Entry(usize),
    /// The system's random source failed.
    #[error("the system random source failed")]
    Random,
}

/// One AES-256-GCM key and the id stored beside what it encrypts.
///
/// Its `Debug` shows the id only.
pub struct EncryptionKey {
    id: String,
    key: LessSafeKey,
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptionKey")
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl EncryptionKey {
    /// A key from 32 raw bytes.
    pub fn new(id: impl Into<String>, bytes: &[u8]) -> Result<Self, KeyError> {
        let id = valid_id(id.into())?;
        if bytes.len() != KEY_LEN {
            return Err(KeyError::Length {
                id,
                len: bytes.len(),
            });
        }
        let unbound = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| KeyError::Length {
            id: id.clone(),
            len: bytes.len(),
        })?;
        Ok(Self {
            id,
            key: LessSafeKey::new(unbound),
        })
    }

    /// A key from 64 hexadecimal digits (what `openssl rand -hex 32` prints).
    pub fn from_hex(id: impl Into<String>, hex: &str) -> Result<Self, KeyError> {
        let id = valid_id(id.into())?;
        let bytes = hex::decode(hex.trim()).map_err(|_| KeyError::Hex(id.clone()))?;
        Self::new(id, &bytes)
    }

    /// A fresh random key, for tests and throwaway setups: it cannot be
    /// exported, so what it encrypts is lost with the process. Production
    /// keys come from configuration ([`from_hex`](Self::from_hex)).
    pub fn generate(id: impl Into<String>) -> Result<Self, KeyError> {
        let mut bytes = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| KeyError::Random)?;
        Self::new(id, &bytes)
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn aead(&self) -> &LessSafeKey {
        &self.key
    }
}

/// The keys a store encrypts with: the **current** key writes every record,
/// and any key of the ring decrypts, chosen by the key id stored in the
/// record. Rotating means adding a new current key and keeping the old ones
/// until no record written under them is left.
///
/// ```
/// use chat_installations::{EncryptionKey, KeyRing};
///
/// let old = EncryptionKey::from_hex("2024-01", &"11".repeat(32))?;
/// let new = EncryptionKey::from_hex("2024-07", &"22".repeat(32))?;
/// let ring = KeyRing::new(new).with_previous(old)?;
/// assert_eq!(ring.current_id(), "2024-07");
/// assert_eq!(ring.ids().collect::<Vec<_>>(), ["2024-07", "2024-01"]);
///
/// // The same ring from configuration: the first entry is the current key.
/// let spec = format!("2024-07:{},2024-01:{}", "22".repeat(32), "11".repeat(32));
/// assert_eq!(KeyRing::parse(&spec)?.current_id(), "2024-07");
/// # Ok::<_, chat_installations::KeyError>(())
/// ```
#[derive(Debug)]
pub struct KeyRing {
    /// The current key first, then the previous ones.
    keys: Vec<EncryptionKey>,
}

impl KeyRing {
    /// A ring whose current key is `current`.
    pub fn new(current: EncryptionKey) -> Self {
        Self {
            keys: vec![current],
        }
    }

    /// Adds a previous key: it no longer writes, but still decrypts records
    /// written under it.
    pub fn with_previous(mut self, key: EncryptionKey) -> Result<Self, KeyError> {
        if self.get(key.id()).is_some() {
            return Err(KeyError::Duplicate(key.id));
        }
        self.keys.push(key);
        Ok(self)
    }

    /// A ring from configuration: comma-separated `id:hex` entries, the
    /// current key first, then the previous ones
    /// (`2024-07:<64 hex>,2024-01:<64 hex>`). Whitespace around entries is
    /// ignored. Errors name the failing entry, never its key.
    pub fn parse(spec: &str) -> Result<Self, KeyError> {
        let mut ring: Option<Self> = None;
        for (n, entry) in spec
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let (id, hex) = entry.split_once(':').ok_or(KeyError::Entry(n + 1))?;
            let key = EncryptionKey::from_hex(id.trim(), hex)?;
            ring = Some(match ring {
                None => Self::new(key),
                Some(r) => r.with_previous(key)?,
            });
        }
        ring.ok_or(KeyError::Empty)
    }

    /// The id of the key that writes.
    pub fn current_id(&self) -> &str {
        self.current().id()
    }

    /// Every key id, the current one first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(EncryptionKey::id)
    }

    pub(crate) fn current(&self) -> &EncryptionKey {
        // A ring is built with its current key and never loses it.
        &self.keys[0]
    }

    pub(crate) fn get(&self, id: &str) -> Option<&EncryptionKey> {
        self.keys.iter().find(|k| k.id == id)
    }
}

fn valid_id(id: String) -> Result<String, KeyError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(id)
    } else {
        Err(KeyError::InvalidId(id))
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn keys_need_32_bytes_and_a_plain_id() {
        assert!(EncryptionKey::from_hex("k1", &"ab".repeat(32)).is_ok());
        assert_eq!(
            EncryptionKey::from_hex("k1", &"ab".repeat(16)).unwrap_err(),
            KeyError::Length {
                id: "k1".into(),
                len: 16
            }
        );
        assert_eq!(
            EncryptionKey::from_hex("k1", &"zz".repeat(32)).unwrap_err(),
            KeyError::Hex("k1".into())
        );
        assert!(matches!(
            EncryptionKey::from_hex("k 1", &"ab".repeat(32)),
            Err(KeyError::InvalidId(_))
        ));
        assert!(matches!(
            EncryptionKey::from_hex("", &"ab".repeat(32)),
            Err(KeyError::InvalidId(_))
        ));
    }

    #[test]
    fn rings_parse_current_first_and_refuse_duplicates() -> TestResult {
        let a = "aa".repeat(32);
        let b = "bb".repeat(32);
        let ring = KeyRing::parse(&format!(" new:{b} , old:{a} "))?;
        assert_eq!(ring.ids().collect::<Vec<_>>(), ["new", "old"]);
        assert_eq!(
            KeyRing::parse(&format!("k:{a},k:{b}")).unwrap_err(),
            KeyError::Duplicate("k".into())
        );
        assert_eq!(KeyRing::parse(" , ").unwrap_err(), KeyError::Empty);
        assert_eq!(
            KeyRing::parse(&format!("k:{a},nocolon")).unwrap_err(),
            KeyError::Entry(2)
        );
        Ok(())
    }

    #[test]
    fn debug_and_errors_never_show_key_material() -> TestResult {
        let hex = "c0ffee".repeat(10) + "c0ff";
        let key = EncryptionKey::from_hex("k1", &hex)?;
        let ring = KeyRing::new(key);
        assert!(!format!("{ring:?}").contains("c0ffee"));
        let err = KeyRing::parse(&format!("k1:{hex}ff")).unwrap_err();
        assert!(!err.to_string().contains("c0ffee"));
        Ok(())
    }

    #[test]
    fn hex_round_trips() -> TestResult {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex::decode(hex::encode(bytes))?, bytes);
        assert_eq!(hex::decode("ABff")?, [0xab, 0xff]);
        assert!(hex::decode("abc").is_err());
        Ok(())
    }
}
