//! [`MemoryInstallations`]: installations in process memory.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use chat_core::{Installation, InstallationError, InstallationStore, Platform, TenantId};

use crate::kv::check;

type Map = HashMap<(Platform, TenantId), Installation>;

/// An [`InstallationStore`] in process memory: for tests, and for a single
/// process that re-installs on restart. Nothing is encrypted and nothing
/// outlives the process; replicas do not share it (use
/// [`KvInstallations`](crate::KvInstallations) on Redis for that).
///
/// Cheap to clone; clones share the installations. Its `Debug` shows how
/// many installations it holds, never a token.
#[derive(Clone, Default)]
pub struct MemoryInstallations {
    map: Arc<Mutex<Map>>,
}

impl fmt::Debug for MemoryInstallations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryInstallations")
            .field("installations", &self.len())
            .finish()
    }
}

impl MemoryInstallations {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many installations it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl InstallationStore for MemoryInstallations {
    async fn get(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<Option<Installation>, InstallationError> {
        Ok(self.lock().get(&(platform, tenant.clone())).cloned())
    }

    async fn put(&self, installation: &Installation) -> Result<(), InstallationError> {
        check(installation)?;
        self.lock().insert(
            (installation.platform, installation.tenant.clone()),
            installation.clone(),
        );
        Ok(())
    }

    async fn delete(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<bool, InstallationError> {
        Ok(self.lock().remove(&(platform, tenant.clone())).is_some())
    }
}
