//! [`KvInstallations`]: installations in a [`KvStore`], encrypted.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Installation, InstallationError, InstallationStore, KvStore, Platform, SetMode, TenantId,
};
use ring::rand::SystemRandom;

use crate::keys::KeyRing;
use crate::sealed;

/// How many writers a `put` lets go first before it gives up.
const MAX_PUT_RACES: usize = 16;

/// The default prefix of the KV keys.
pub const DEFAULT_KEY_PREFIX: &str = "installation";

/// An [`InstallationStore`] on any [`KvStore`]: with
/// `chat-state-redis`, every replica sharing the Redis sees the same
/// installations at once.
///
/// * Each installation is one KV entry, `{prefix}:{platform}:{tenant}`
///   (`installation:slack:T061EG9R6`), without a TTL.
/// * The whole installation is stored sealed with AES-256-GCM: a random
///   96-bit nonce per write, the platform and tenant as associated data (a
///   record copied to another tenant's key does not open), and the id of the
///   sealing key beside it. See [`KeyRing`] for rotation.
/// * Reads decrypt with whichever key of the ring the record names; a record
///   under a key the ring lacks is [`InstallationError::MissingKey`], a
///   tampered one [`InstallationError::Corrupt`]; backend failures are
///   [`InstallationError::Unavailable`].
/// * Nothing is cached: a `put` or `delete` on one replica is seen by the
///   next `get` on any other.
///
/// Its `Debug` shows key ids, never keys or tokens.
#[derive(Clone)]
pub struct KvInstallations {
    inner: Arc<Inner>,
}

struct Inner {
    kv: Arc<dyn KvStore>,
    keys: KeyRing,
    prefix: String,
    random: SystemRandom,
    /// The highest revision seen per installation, to refuse a rolled-back
    /// record.
    revisions: Mutex<HashMap<(Platform, TenantId), u64>>,
}

impl Inner {
    fn seen(&self, platform: Platform, tenant: &TenantId) -> u64 {
        self.revisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(platform, tenant.clone()))
            .copied()
            .unwrap_or(0)
    }

    /// Records `rev` as seen; `false` when a higher one was seen before.
    fn saw(&self, platform: Platform, tenant: &TenantId, rev: u64) -> bool {
        let mut revisions = self
            .revisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let highest = revisions.entry((platform, tenant.clone())).or_insert(0);
        if rev < *highest {
            return false;
        }
        *highest = rev;
        true
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Debug for KvInstallations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KvInstallations")
            .field("prefix", &self.inner.prefix)
            .field("key_ids", &self.inner.keys.ids().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl KvInstallations {
    /// A store on `kv`, sealing with `keys`, under the key prefix
    /// [`DEFAULT_KEY_PREFIX`].
    pub fn new(kv: Arc<dyn KvStore>, keys: KeyRing) -> Self {
        Self::with_prefix(kv, keys, DEFAULT_KEY_PREFIX)
    }

    /// The same, under another KV key prefix (two bots sharing one backend
    /// and one key prefix of it).
    pub fn with_prefix(kv: Arc<dyn KvStore>, keys: KeyRing, prefix: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                kv,
                keys,
                prefix: prefix.into(),
                random: SystemRandom::new(),
                revisions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The KV key an installation of `tenant` on `platform` is stored under.
    pub fn kv_key(&self, platform: Platform, tenant: &TenantId) -> String {
        format!("{}:{platform}:{tenant}", self.inner.prefix)
    }

    /// The id of the key the stored record of `(platform, tenant)` was sealed
    /// with, or `None` when there is none. For rotation: a record not under
    /// the ring's current key is rewritten by reading it and putting it back.
    pub async fn stored_key_id(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<Option<String>, InstallationError> {
        let stored = self.inner.kv.get(&self.kv_key(platform, tenant)).await?;
        Ok(stored.and_then(|s| sealed::key_id(&s)))
    }

    /// The key ring.
    pub fn keys(&self) -> &KeyRing {
        &self.inner.keys
    }
}

#[async_trait]
impl InstallationStore for KvInstallations {
    async fn get(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<Option<Installation>, InstallationError> {
        let Some(stored) = self.inner.kv.get(&self.kv_key(platform, tenant)).await? else {
            return Ok(None);
        };
        let (installation, rev) = sealed::open(&self.inner.keys, platform, tenant, &stored)?;
        if !self.inner.saw(platform, tenant, rev) {
            return Err(sealed::rolled_back());
        }
        Ok(Some(installation))
    }

    /// Writes the installation with a revision above the stored record's, as
    /// a compare-and-set on that record: when another writer (another
    /// replica refreshing the same token) got in between, the record is read
    /// again and the write tried again, so revisions only ever grow in the
    /// store and no replica's rollback check ever sees one go back.
    async fn put(&self, installation: &Installation) -> Result<(), InstallationError> {
        check(installation)?;
        let (platform, tenant) = (installation.platform, &installation.tenant);
        let key = self.kv_key(platform, tenant);
        for _ in 0..MAX_PUT_RACES {
            let stored = self.inner.kv.get(&key).await?;
            // Above every revision this process or the stored record knows of.
            let rev = now_ms()
                .max(
                    stored
                        .as_deref()
                        .map_or(0, sealed::revision)
                        .saturating_add(1),
                )
                .max(self.inner.seen(platform, tenant).saturating_add(1));
            let sealed = sealed::seal(&self.inner.keys, &self.inner.random, installation, rev)?;
            let mode = match stored {
                Some(current) => SetMode::IfEquals(current),
                None => SetMode::IfAbsent,
            };
            if self
                .inner
                .kv
                .set(&key, Bytes::from(sealed), None, mode)
                .await?
            {
                self.inner.saw(platform, tenant, rev);
                return Ok(());
            }
        }
        Err(InstallationError::Unavailable(
            "the installation kept changing under its write".into(),
        ))
    }

    async fn delete(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<bool, InstallationError> {
        Ok(self.inner.kv.delete(&self.kv_key(platform, tenant)).await?)
    }
}

/// What every store refuses to keep.
pub(crate) fn check(installation: &Installation) -> Result<(), InstallationError> {
    if installation.tenant.as_str().is_empty() {
        return Err(InstallationError::Invalid("empty tenant"));
    }
    if installation.access_token.is_empty() {
        return Err(InstallationError::Invalid("empty access token"));
    }
    Ok(())
}
