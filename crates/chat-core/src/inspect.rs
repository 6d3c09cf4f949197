//! What an operator sees of the state: the busy scopes, one scope in full,
//! and a fenced force-release ([`Inspection::busy_scopes`],
//! [`Inspection::inspect_scope`], [`Inspection::force_release`]).
//!
//! [`Inspection::busy_scopes`]: crate::Inspection::busy_scopes
//! [`Inspection::inspect_scope`]: crate::Inspection::inspect_scope
//! [`Inspection::force_release`]: crate::Inspection::force_release

use std::time::Duration;

use crate::id::{EventId, Platform, ScopeKey, TenantId};

/// Which busy scopes to list: all, a platform's, a tenant's, or a channel's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScopeFilter {
    /// Only this platform's scopes.
    pub platform: Option<Platform>,
    /// Only this tenant's (with `platform`).
    pub tenant: Option<TenantId>,
    /// Only this channel's (with `tenant`).
    pub channel: Option<String>,
}

impl ScopeFilter {
    /// Every busy scope.
    pub fn all() -> Self {
        Self::default()
    }

    /// A tenant's busy scopes.
    pub fn tenant(platform: Platform, tenant: impl Into<TenantId>) -> Self {
        Self {
            platform: Some(platform),
            tenant: Some(tenant.into()),
            channel: None,
        }
    }

    /// One channel's busy scopes.
    pub fn channel(
        platform: Platform,
        tenant: impl Into<TenantId>,
        channel: impl Into<String>,
    ) -> Self {
        Self {
            channel: Some(channel.into()),
            ..Self::tenant(platform, tenant)
        }
    }

    /// Whether `scope` passes.
    pub fn matches(&self, scope: &ScopeKey) -> bool {
        self.platform.is_none_or(|p| p == scope.platform)
            && self.tenant.as_ref().is_none_or(|t| *t == scope.tenant)
            && self.channel.as_ref().is_none_or(|c| *c == scope.channel)
    }
}

/// A lease (or a concurrency slot) as the backend holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HolderView {
    /// Who holds it: the first 8 characters of the holder's lease token (the
    /// token itself is the holder's credential and is never shown).
    pub holder: String,
    /// Its fencing number: what [`force_release`](crate::Inspection::force_release)
    /// is checked against.
    pub fence: u64,
    /// How long until it lapses, unless renewed.
    pub expires_in: Duration,
}

impl HolderView {
    /// A view of the holder with lease token `token` (for backends).
    pub fn new(token: &str, fence: u64, expires_in: Duration) -> Self {
        Self {
            holder: token.chars().take(8).collect(),
            fence,
            expires_in,
        }
    }
}

/// An event in a scope's care.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryView {
    /// The event's id.
    pub event_id: EventId,
    /// Its thread id.
    pub thread: String,
    /// How long ago it was admitted.
    pub age: Duration,
}

impl EntryView {
    /// A view (for backends).
    pub fn new(event_id: EventId, thread: impl Into<String>, age: Duration) -> Self {
        Self {
            event_id,
            thread: thread.into(),
            age,
        }
    }
}

/// One busy scope in full: who holds it and what is in its care.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScopeView {
    /// The scope.
    pub scope: ScopeKey,
    /// The exclusive lease, while one is live.
    pub holder: Option<HolderView>,
    /// Live concurrency slots (`Concurrent`).
    pub slots: Vec<HolderView>,
    /// Events handed to a holder and not yet acknowledged (the in-flight
    /// batch; a slot run's event).
    pub in_flight: Vec<EntryView>,
    /// Queued events, oldest first.
    pub queued: Vec<EntryView>,
    /// The debounce event waiting for quiet.
    pub pending: Vec<EntryView>,
    /// Events in burst windows, oldest first.
    pub burst: Vec<EntryView>,
}

impl ScopeView {
    /// An empty view of `scope` (for backends to fill).
    pub fn new(scope: ScopeKey) -> Self {
        Self {
            scope,
            holder: None,
            slots: Vec::new(),
            in_flight: Vec::new(),
            queued: Vec::new(),
            pending: Vec::new(),
            burst: Vec::new(),
        }
    }

    /// Events waiting for a holder: queued, pending and in burst windows.
    pub fn waiting(&self) -> usize {
        self.queued.len() + self.pending.len() + self.burst.len()
    }

    /// Whether nothing holds it and nothing is in its care.
    pub fn is_idle(&self) -> bool {
        self.holder.is_none()
            && self.slots.is_empty()
            && self.in_flight.is_empty()
            && self.waiting() == 0
    }
}

/// What a [`force_release`](crate::Inspection::force_release) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForceRelease {
    /// The lease (or slot) with that fence is gone; what it held and what
    /// waits is left for the next holder (the recovery sweep takes it).
    Released,
    /// Nothing live holds the scope with that fence (it was released,
    /// renewed under a new grant, or lapsed): nothing was changed.
    Stale,
}
