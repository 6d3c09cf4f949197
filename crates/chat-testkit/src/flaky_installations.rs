//! [`FlakyInstallations`]: an installation store that fails on demand.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use chat_core::{Installation, InstallationError, InstallationStore, Platform, TenantId};

/// An [`InstallationStore`] around another one that answers every call with
/// [`InstallationError::Unavailable`] while it is [down](Self::set_down) —
/// the store being unreachable, for tests of what the adapters and install
/// flows answer then.
pub struct FlakyInstallations {
    inner: Arc<dyn InstallationStore>,
    down: AtomicBool,
}

impl FlakyInstallations {
    /// `inner`, up.
    pub fn new(inner: Arc<dyn InstallationStore>) -> Self {
        Self {
            inner,
            down: AtomicBool::new(false),
        }
    }

    /// Makes every call fail (`true`) or pass through again (`false`).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), InstallationError> {
        if self.down.load(Ordering::SeqCst) {
            Err(InstallationError::Unavailable("the store is down".into()))
        } else {
            Ok(())
        }
    }
}

impl std::fmt::Debug for FlakyInstallations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlakyInstallations")
            .field("down", &self.down.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl InstallationStore for FlakyInstallations {
    async fn get(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<Option<Installation>, InstallationError> {
        self.check()?;
        self.inner.get(platform, tenant).await
    }

    async fn put(&self, installation: &Installation) -> Result<(), InstallationError> {
        self.check()?;
        self.inner.put(installation).await
    }

    async fn delete(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<bool, InstallationError> {
        self.check()?;
        self.inner.delete(platform, tenant).await
    }
}
