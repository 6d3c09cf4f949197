//! The state backend the runtime calls through: every call timed, and every
//! error counted, by operation (see [`telemetry`](crate::telemetry)).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, DedupeKey, ForceRelease, Handoff,
    KvStore, Lease, LeaseToken, Platform, Recovered, Release, Renewal, ScopeFilter, ScopeKey,
    ScopeView, SetMode, SlotGrant, StateBackend, StateError, TenantId, ThreadRef,
};
use tokio::time::Instant;

use crate::telemetry;

/// Wraps the bot's backend; the runtime never calls the backend around it.
pub(crate) struct Metered(pub(crate) Arc<dyn StateBackend>);

impl std::fmt::Debug for Metered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered").finish_non_exhaustive()
    }
}

fn kind(e: &StateError) -> &'static str {
    match e {
        StateError::Unavailable(_) => "unavailable",
        StateError::Timeout(_) => "timeout",
        StateError::Codec(_) => "codec",
        StateError::InvalidRequest(_) => "invalid-request",
        StateError::Backend(_) => "backend",
        _ => "other",
    }
}

async fn timed<T>(
    op: &'static str,
    call: impl Future<Output = Result<T, StateError>>,
) -> Result<T, StateError> {
    let start = Instant::now();
    let r = call.await;
    telemetry::state_call(op, start.elapsed(), r.as_ref().err().map(kind));
    r
}

#[async_trait]
impl KvStore for Metered {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        timed("kv-get", self.0.get(key)).await
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        timed("kv-set", self.0.set(key, value, ttl, mode)).await
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        timed("kv-delete", self.0.delete(key)).await
    }
}

#[async_trait]
impl StateBackend for Metered {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        timed("admit", self.0.admit(request)).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        timed("renew", self.0.renew(lease, ttl)).await
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        timed("finish", self.0.finish(lease)).await
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        timed("release", self.0.release(lease, how)).await
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        timed("unmark", self.0.unmark(thread, key)).await
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        timed("acquire-slot", self.0.acquire_slot(scope, token, max, ttl)).await
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        timed("request-cancel", self.0.request_cancel(request)).await
    }

    async fn sweep(&self, request: &chat_core::Sweep) -> Result<Vec<Recovered>, StateError> {
        timed("sweep", self.0.sweep(request)).await
    }

    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        timed("subscribe", self.0.subscribe(thread, ttl)).await
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        timed("unsubscribe", self.0.unsubscribe(thread)).await
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        timed("is-subscribed", self.0.is_subscribed(thread)).await
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        timed(
            "unsubscribe-tenant",
            self.0.unsubscribe_tenant(platform, tenant),
        )
        .await
    }

    async fn health(&self) -> Result<(), StateError> {
        timed("health", self.0.health()).await
    }

    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        timed("busy-scopes", self.0.busy_scopes(filter, limit)).await
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        timed("inspect-scope", self.0.inspect_scope(scope)).await
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        timed("force-release", self.0.force_release(scope, fence)).await
    }

    fn shared(&self) -> bool {
        self.0.shared()
    }
}
