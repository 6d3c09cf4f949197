//! The recovery sweep: what it asks and what it recovers.

use super::*;

/// A run the recovery [`sweep`](Coordination::sweep) found without a holder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Recovered {
    /// A scope with waiting or in-flight work and no lease: the caller holds it
    /// now and drives it with [`finish`](Coordination::finish) from batch 0.
    Scope(Lease),
    /// A concurrency-slot run whose holder is gone: the caller waits for a slot
    /// with `token` ([`acquire_slot`](Coordination::acquire_slot)) and runs the
    /// batch's event.
    Slot {
        /// The scope.
        scope: ScopeKey,
        /// The waiter's new reservation.
        token: LeaseToken,
        /// The event, with its attempt count.
        batch: Batch,
        /// The concurrency the run was admitted with
        /// ([`AdmitRequest::concurrency`]): its slot is taken under the same
        /// bound, whatever strategy the recovering process has. A run of an
        /// unlocked kind (a reaction, a click, a command) is unbounded.
        concurrency: ConcurrentOptions,
    },
}

/// One call to [`Coordination::sweep`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sweep {
    /// The TTL of the leases (and reservations) the recovered runs get.
    pub lease_ttl: Duration,
    /// The most runs to recover.
    pub limit: usize,
    /// Tenants whose runs the caller has no room for: left for a later sweep
    /// (or another replica).
    pub skip_tenants: Vec<TenantId>,
}

impl Sweep {
    /// Up to `limit` runs, leased for `lease_ttl`, of every tenant.
    pub fn new(lease_ttl: Duration, limit: usize) -> Self {
        Self {
            lease_ttl,
            limit,
            skip_tenants: Vec::new(),
        }
    }

    /// Leaves these tenants' runs alone.
    #[must_use]
    pub fn skip_tenants(mut self, tenants: impl IntoIterator<Item = TenantId>) -> Self {
        self.skip_tenants = tenants.into_iter().collect();
        self
    }

    /// Whether the runs of `scope` may be claimed.
    pub fn wants(&self, scope: &ScopeKey) -> bool {
        !self.skip_tenants.contains(&scope.tenant)
    }
}
