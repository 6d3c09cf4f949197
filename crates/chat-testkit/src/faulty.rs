//! [`FaultyState`]: a [`StateBackend`] that loses replies, runs calls twice or
//! late, and stalls, on demand — the faults a real network and a real Redis
//! client inflict — so runtime tests can stage them deterministically (on
//! tokio's paused clock with the memory backend, or in real time on Redis).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, DedupeKey, ForceRelease, Handoff, Lease,
    LeaseToken, Recovered, Release, Renewal, ScopeFilter, ScopeKey, ScopeView, SlotGrant,
    StateBackend, StateError, ThreadRef,
};

/// The protocol calls a fault can be injected into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// [`StateBackend::admit`].
    Admit,
    /// [`StateBackend::renew`].
    Renew,
    /// [`StateBackend::finish`].
    Finish,
    /// [`StateBackend::release`].
    Release,
    /// [`StateBackend::acquire_slot`].
    AcquireSlot,
    /// [`StateBackend::request_cancel`].
    RequestCancel,
    /// [`StateBackend::sweep`].
    Sweep,
}

/// What happens to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The call runs, and its reply is lost: the caller gets a timeout.
    LoseReply,
    /// The call runs twice, as a client that re-sends after a reconnect does:
    /// the caller gets the second answer.
    RunTwice,
    /// The caller gets a timeout at once; the call runs this long later (a
    /// request stuck in a stalled server).
    RunLate(Duration),
    /// The call hangs this long, then runs and answers (a slow server).
    Stall(Duration),
    /// The call never reaches the backend: the caller gets an error.
    Unreachable,
}

/// A [`StateBackend`] wrapper that applies injected [`Fault`]s, each to the
/// next call of its [`Op`], then behaves like the backend it wraps.
pub struct FaultyState {
    inner: Arc<dyn StateBackend>,
    plan: Mutex<VecDeque<(Op, Fault)>>,
    /// Every call of these ops fails as unreachable until cleared.
    cut: Mutex<Vec<Op>>,
    shared: Option<bool>,
}

impl std::fmt::Debug for FaultyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyState")
            .field("pending_faults", &self.pending())
            .finish_non_exhaustive()
    }
}

impl FaultyState {
    /// Wraps `inner`, with no fault injected.
    pub fn new(inner: Arc<dyn StateBackend>) -> Self {
        Self {
            inner,
            plan: Mutex::new(VecDeque::new()),
            cut: Mutex::new(Vec::new()),
            shared: None,
        }
    }

    /// Says the state is shared (or not) whatever the wrapped backend says: for
    /// tests that run several bots on one in-process backend as replicas.
    #[must_use]
    pub fn shared_as(mut self, shared: bool) -> Self {
        self.shared = Some(shared);
        self
    }

    /// The next call of `op` suffers `fault` (faults of one op apply in the
    /// order they were injected).
    pub fn inject(&self, op: Op, fault: Fault) {
        lock(&self.plan).push_back((op, fault));
    }

    /// Every call of `op` fails as unreachable (a replica cut off from the
    /// backend) until [`reconnect`](Self::reconnect).
    pub fn cut(&self, op: Op) {
        lock(&self.cut).push(op);
    }

    /// Undoes every [`cut`](Self::cut).
    pub fn reconnect(&self) {
        lock(&self.cut).clear();
    }

    /// Injected faults not applied yet.
    pub fn pending(&self) -> usize {
        lock(&self.plan).len()
    }

    fn take(&self, op: Op) -> Option<Fault> {
        if lock(&self.cut).contains(&op) {
            return Some(Fault::Unreachable);
        }
        let mut plan = lock(&self.plan);
        let i = plan.iter().position(|(o, _)| *o == op)?;
        plan.remove(i).map(|(_, f)| f)
    }

    /// Runs `call` (built anew for every run) under the next fault of `op`.
    async fn apply<T, F, Fut>(&self, op: Op, call: F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, StateError>> + Send + 'static,
    {
        let timeout = StateError::Timeout(Duration::from_secs(5));
        match self.take(op) {
            None => call().await,
            Some(Fault::LoseReply) => {
                let _ = call().await;
                Err(timeout)
            }
            Some(Fault::RunTwice) => {
                let _ = call().await;
                call().await
            }
            Some(Fault::RunLate(after)) => {
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = call().await;
                });
                Err(timeout)
            }
            Some(Fault::Stall(d)) => {
                tokio::time::sleep(d).await;
                call().await
            }
            Some(_) => Err(StateError::Unavailable("injected: unreachable".into())),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl StateBackend for FaultyState {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        let inner = Arc::clone(&self.inner);
        self.apply(Op::Admit, move || {
            let (inner, request) = (Arc::clone(&inner), request.clone());
            async move { inner.admit(request).await }
        })
        .await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        let (inner, lease) = (Arc::clone(&self.inner), lease.clone());
        self.apply(Op::Renew, move || {
            let (inner, lease) = (Arc::clone(&inner), lease.clone());
            async move { inner.renew(&lease, ttl).await }
        })
        .await
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        let (inner, lease) = (Arc::clone(&self.inner), lease.clone());
        self.apply(Op::Finish, move || {
            let (inner, lease) = (Arc::clone(&inner), lease.clone());
            async move { inner.finish(&lease).await }
        })
        .await
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        let (inner, lease) = (Arc::clone(&self.inner), lease.clone());
        self.apply(Op::Release, move || {
            let (inner, lease) = (Arc::clone(&inner), lease.clone());
            async move { inner.release(&lease, how).await }
        })
        .await
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        self.inner.unmark(thread, key).await
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        let (inner, scope, token) = (Arc::clone(&self.inner), scope.clone(), token.clone());
        self.apply(Op::AcquireSlot, move || {
            let (inner, scope, token) = (Arc::clone(&inner), scope.clone(), token.clone());
            async move { inner.acquire_slot(&scope, &token, max, ttl).await }
        })
        .await
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        let inner = Arc::clone(&self.inner);
        self.apply(Op::RequestCancel, move || {
            let (inner, request) = (Arc::clone(&inner), request.clone());
            async move { inner.request_cancel(request).await }
        })
        .await
    }

    async fn sweep(&self, request: &chat_core::Sweep) -> Result<Vec<Recovered>, StateError> {
        let (inner, request) = (Arc::clone(&self.inner), request.clone());
        self.apply(Op::Sweep, move || {
            let (inner, request) = (Arc::clone(&inner), request.clone());
            async move { inner.sweep(&request).await }
        })
        .await
    }

    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        self.inner.subscribe(thread, ttl).await
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        self.inner.unsubscribe(thread).await
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        self.inner.is_subscribed(thread).await
    }

    async fn unsubscribe_tenant(
        &self,
        platform: chat_core::Platform,
        tenant: &chat_core::TenantId,
    ) -> Result<u64, StateError> {
        self.inner.unsubscribe_tenant(platform, tenant).await
    }

    async fn health(&self) -> Result<(), StateError> {
        self.inner.health().await
    }

    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        self.inner.busy_scopes(filter, limit).await
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        self.inner.inspect_scope(scope).await
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        self.inner.force_release(scope, fence).await
    }

    fn shared(&self) -> bool {
        self.shared.unwrap_or_else(|| self.inner.shared())
    }
}

#[async_trait::async_trait]
impl chat_core::KvStore for FaultyState {
    async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, StateError> {
        self.inner.get(key).await
    }

    async fn set(
        &self,
        key: &str,
        value: bytes::Bytes,
        ttl: Option<std::time::Duration>,
        mode: chat_core::SetMode,
    ) -> Result<bool, StateError> {
        self.inner.set(key, value, ttl, mode).await
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        self.inner.delete(key).await
    }
}
