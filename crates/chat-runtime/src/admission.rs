//! Admission control: `MaxDetached` and `MaxDetachedPerTenant`, checked before any
//! state is touched. A permit is owned by the detached work it admits and released
//! when that work (lease cleanup included) is done.

use foldhash::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use chat_core::TenantId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::telemetry;

type TenantCounts = Arc<Mutex<HashMap<TenantId, usize>>>;

#[derive(Debug)]
pub(crate) struct Admission {
    global: Arc<Semaphore>,
    per_tenant: Option<(usize, TenantCounts)>,
    gauge: Gauge,
}

/// Which gauge an admission's places show in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gauge {
    /// None (inline work).
    Off,
    /// `chat_detached_runs`.
    Detached,
    /// `chat_detached_runs`, and per tenant.
    DetachedPerTenant,
}

/// One admitted unit of detached work. Dropping it frees its place.
#[derive(Debug)]
pub(crate) struct Permit {
    _global: OwnedSemaphorePermit,
    _tenant: Option<TenantGuard>,
    shown: Option<Option<TenantId>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(tenant) = &self.shown {
            telemetry::detached(-1.0, tenant.as_ref());
        }
    }
}

#[derive(Debug)]
struct TenantGuard {
    tenant: TenantId,
    counts: TenantCounts,
}

impl Drop for TenantGuard {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.tenant);
            }
        }
    }
}

impl Admission {
    pub(crate) fn new(max: usize, per_tenant: Option<usize>, gauge: Gauge) -> Self {
        if gauge != Gauge::Off {
            telemetry::detached_max(max);
        }
        Self {
            global: Arc::new(Semaphore::new(max)),
            per_tenant: per_tenant.map(|m| (m, Arc::default())),
            gauge,
        }
    }

    /// A permit, or `None` at either cap. Never waits.
    pub(crate) fn try_admit(&self, tenant_id: &TenantId) -> Option<Permit> {
        let tenant = tenant_id;
        let global = Arc::clone(&self.global).try_acquire_owned().ok()?;
        let tenant = match &self.per_tenant {
            None => None,
            Some((max, counts)) => {
                let mut map = counts.lock().unwrap_or_else(PoisonError::into_inner);
                let n = map.entry(tenant.clone()).or_insert(0);
                if *n >= *max {
                    return None;
                }
                *n += 1;
                Some(TenantGuard {
                    tenant: tenant.clone(),
                    counts: Arc::clone(counts),
                })
            }
        };
        let shown = match self.gauge {
            Gauge::Off => None,
            Gauge::Detached => Some(None),
            Gauge::DetachedPerTenant => Some(Some(tenant_id.clone())),
        };
        if let Some(t) = &shown {
            telemetry::detached(1.0, t.as_ref());
        }
        Some(Permit {
            _global: global,
            _tenant: tenant,
            shown,
        })
    }

    /// The tenants at their own cap now.
    pub(crate) fn tenants_at_cap(&self) -> Vec<TenantId> {
        let Some((max, counts)) = &self.per_tenant else {
            return Vec::new();
        };
        let counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts
            .iter()
            .filter(|(_, n)| **n >= *max)
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// Places in use.
    pub(crate) fn in_use(&self, max: usize) -> usize {
        max.saturating_sub(self.global.available_permits())
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_bounded_globally_and_per_tenant() -> Result<(), &'static str> {
        let a = Admission::new(3, Some(2), Gauge::Off);
        let t1 = TenantId::new("T1");
        let t2 = TenantId::new("T2");
        let p1 = a.try_admit(&t1).ok_or("first permit")?;
        let _p2 = a.try_admit(&t1).ok_or("second permit")?;
        assert!(a.try_admit(&t1).is_none(), "tenant cap");
        let _p3 = a.try_admit(&t2).ok_or("third permit")?;
        assert!(a.try_admit(&t2).is_none(), "global cap");
        drop(p1);
        assert!(
            a.try_admit(&t1).is_some(),
            "a dropped permit frees its place"
        );
        Ok(())
    }
}
