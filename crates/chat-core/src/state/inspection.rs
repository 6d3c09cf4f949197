//! [`Inspection`]: what an operator reads and the one repair it makes.

use super::*;

/// What operators see of the protocol's state, and the fenced release of a
/// stuck holder. Part of every [`StateBackend`]; reads never change state.
#[async_trait]
pub trait Inspection: Send + Sync + 'static {
    /// Inspection: the busy scopes that pass `filter` — held by a lease or a
    /// slot, or with events in their care (in flight, queued, pending, in
    /// burst windows) — at most `limit`, in no particular order, each as
    /// [`inspect_scope`](Self::inspect_scope) would show it. Every scope of
    /// every replica sharing the store (on a cluster, every node; never a
    /// blocking full-keyspace command). Not atomic across scopes: a scope
    /// that changes during the call shows one state or the other.
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError>;

    /// Inspection: one scope in full, read atomically; `None` when it is
    /// idle (no live lease or slot, nothing in its care).
    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError>;

    /// The operator's release of a stuck holder: if the scope's live lease
    /// (or one of its live slots) carries `fence` — the number the operator
    /// saw in [`inspect_scope`](Self::inspect_scope) — it is deleted;
    /// otherwise nothing changes ([`ForceRelease::Stale`]). Nothing in the
    /// scope's care is dropped: its in-flight batch and waiting entries stay,
    /// the scope needs a holder again, and the next
    /// [`sweep`](Coordination::sweep) (or admit) hands them over — the in-flight
    /// batch as a further attempt. The released holder learns at its next
    /// renewal ([`Renewal::Lost`]); its late `finish` is `Lost`.
    async fn force_release(&self, scope: &ScopeKey, fence: u64)
    -> Result<ForceRelease, StateError>;
}
