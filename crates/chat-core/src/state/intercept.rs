//! [`Intercepted`]: one wrapper that forwards every part of a
//! [`StateBackend`] and hands each call, as a [`Call`] value, to an
//! [`Interceptor`] — the way a `tower::Layer` sees every request of a service.
//!
//! Metrics, fault injection and test hooks are interceptors: each writes only
//! what it changes, and a method added to the contract is forwarded here once,
//! not in every wrapper.

use std::borrow::Cow;

use bytes::Bytes;

use super::*;
use crate::kv::SetMode;

/// Which method a [`Call`] is: one name for each method of the four parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// [`Coordination::admit`].
    Admit,
    /// [`Coordination::renew`].
    Renew,
    /// [`Coordination::finish`].
    Finish,
    /// [`Coordination::release`].
    Release,
    /// [`Coordination::unmark`].
    Unmark,
    /// [`Coordination::acquire_slot`].
    AcquireSlot,
    /// [`Coordination::request_cancel`].
    RequestCancel,
    /// [`Coordination::sweep`].
    Sweep,
    /// [`Subscriptions::subscribe`].
    Subscribe,
    /// [`Subscriptions::unsubscribe`].
    Unsubscribe,
    /// [`Subscriptions::is_subscribed`].
    IsSubscribed,
    /// [`Subscriptions::unsubscribe_tenant`].
    UnsubscribeTenant,
    /// [`Inspection::busy_scopes`].
    BusyScopes,
    /// [`Inspection::inspect_scope`].
    InspectScope,
    /// [`Inspection::force_release`].
    ForceRelease,
    /// [`StateBackend::health`].
    Health,
    /// [`KvStore::get`].
    KvGet,
    /// [`KvStore::set`].
    KvSet,
    /// [`KvStore::delete`].
    KvDelete,
}

impl Op {
    /// The operation's stable name (a metric label): `"admit"`, `"kv-get"`, …
    pub const fn name(self) -> &'static str {
        match self {
            Self::Admit => "admit",
            Self::Renew => "renew",
            Self::Finish => "finish",
            Self::Release => "release",
            Self::Unmark => "unmark",
            Self::AcquireSlot => "acquire-slot",
            Self::RequestCancel => "request-cancel",
            Self::Sweep => "sweep",
            Self::Subscribe => "subscribe",
            Self::Unsubscribe => "unsubscribe",
            Self::IsSubscribed => "is-subscribed",
            Self::UnsubscribeTenant => "unsubscribe-tenant",
            Self::BusyScopes => "busy-scopes",
            Self::InspectScope => "inspect-scope",
            Self::ForceRelease => "force-release",
            Self::Health => "health",
            Self::KvGet => "kv-get",
            Self::KvSet => "kv-set",
            Self::KvDelete => "kv-delete",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One call of a [`StateBackend`] method with its arguments, as a value. The
/// arguments a method borrows stay borrowed; [`into_owned`](Self::into_owned)
/// makes a call that outlives them (to run later, on another task).
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(missing_docs)] // each variant is the method of the same name
pub enum Call<'a> {
    Admit(AdmitRequest),
    Renew {
        lease: Cow<'a, Lease>,
        ttl: Duration,
    },
    Finish(Cow<'a, Lease>),
    Release {
        lease: Cow<'a, Lease>,
        how: Release,
    },
    Unmark {
        thread: Cow<'a, ThreadRef>,
        key: Cow<'a, DedupeKey>,
    },
    AcquireSlot {
        scope: Cow<'a, ScopeKey>,
        token: Cow<'a, LeaseToken>,
        max: Option<usize>,
        ttl: Duration,
    },
    RequestCancel(CancelRequest),
    Sweep(Cow<'a, Sweep>),
    Subscribe {
        thread: Cow<'a, ThreadRef>,
        ttl: Duration,
    },
    Unsubscribe(Cow<'a, ThreadRef>),
    IsSubscribed(Cow<'a, ThreadRef>),
    UnsubscribeTenant {
        platform: Platform,
        tenant: Cow<'a, TenantId>,
    },
    BusyScopes {
        filter: Cow<'a, ScopeFilter>,
        limit: usize,
    },
    InspectScope(Cow<'a, ScopeKey>),
    ForceRelease {
        scope: Cow<'a, ScopeKey>,
        fence: u64,
    },
    Health,
    KvGet(Cow<'a, str>),
    KvSet {
        key: Cow<'a, str>,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    },
    KvDelete(Cow<'a, str>),
}

fn owned<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
    Cow::Owned(c.into_owned())
}

impl Call<'_> {
    /// Which method this is.
    pub fn op(&self) -> Op {
        match self {
            Self::Admit(_) => Op::Admit,
            Self::Renew { .. } => Op::Renew,
            Self::Finish(_) => Op::Finish,
            Self::Release { .. } => Op::Release,
            Self::Unmark { .. } => Op::Unmark,
            Self::AcquireSlot { .. } => Op::AcquireSlot,
            Self::RequestCancel(_) => Op::RequestCancel,
            Self::Sweep(_) => Op::Sweep,
            Self::Subscribe { .. } => Op::Subscribe,
            Self::Unsubscribe(_) => Op::Unsubscribe,
            Self::IsSubscribed(_) => Op::IsSubscribed,
            Self::UnsubscribeTenant { .. } => Op::UnsubscribeTenant,
            Self::BusyScopes { .. } => Op::BusyScopes,
            Self::InspectScope(_) => Op::InspectScope,
            Self::ForceRelease { .. } => Op::ForceRelease,
            Self::Health => Op::Health,
            Self::KvGet(_) => Op::KvGet,
            Self::KvSet { .. } => Op::KvSet,
            Self::KvDelete(_) => Op::KvDelete,
        }
    }

    /// The same call, owning its arguments.
    pub fn into_owned(self) -> Call<'static> {
        match self {
            Self::Admit(r) => Call::Admit(r),
            Self::Renew { lease, ttl } => Call::Renew {
                lease: owned(lease),
                ttl,
            },
            Self::Finish(lease) => Call::Finish(owned(lease)),
            Self::Release { lease, how } => Call::Release {
                lease: owned(lease),
                how,
            },
            Self::Unmark { thread, key } => Call::Unmark {
                thread: owned(thread),
                key: owned(key),
            },
            Self::AcquireSlot {
                scope,
                token,
                max,
                ttl,
            } => Call::AcquireSlot {
                scope: owned(scope),
                token: owned(token),
                max,
                ttl,
            },
            Self::RequestCancel(r) => Call::RequestCancel(r),
            Self::Sweep(s) => Call::Sweep(owned(s)),
            Self::Subscribe { thread, ttl } => Call::Subscribe {
                thread: owned(thread),
                ttl,
            },
            Self::Unsubscribe(t) => Call::Unsubscribe(owned(t)),
            Self::IsSubscribed(t) => Call::IsSubscribed(owned(t)),
            Self::UnsubscribeTenant { platform, tenant } => Call::UnsubscribeTenant {
                platform,
                tenant: owned(tenant),
            },
            Self::BusyScopes { filter, limit } => Call::BusyScopes {
                filter: owned(filter),
                limit,
            },
            Self::InspectScope(s) => Call::InspectScope(owned(s)),
            Self::ForceRelease { scope, fence } => Call::ForceRelease {
                scope: owned(scope),
                fence,
            },
            Self::Health => Call::Health,
            Self::KvGet(k) => Call::KvGet(owned(k)),
            Self::KvSet {
                key,
                value,
                ttl,
                mode,
            } => Call::KvSet {
                key: owned(key),
                value,
                ttl,
                mode,
            },
            Self::KvDelete(k) => Call::KvDelete(owned(k)),
        }
    }

    /// Makes the call on `backend`.
    pub async fn run(self, backend: &dyn StateBackend) -> Result<Answer, StateError> {
        Ok(match self {
            Self::Admit(r) => Answer::Admission(backend.admit(r).await?),
            Self::Renew { lease, ttl } => Answer::Renewal(backend.renew(&lease, ttl).await?),
            Self::Finish(lease) => Answer::Handoff(backend.finish(&lease).await?),
            Self::Release { lease, how } => Answer::Bool(backend.release(&lease, how).await?),
            Self::Unmark { thread, key } => Answer::Bool(backend.unmark(&thread, &key).await?),
            Self::AcquireSlot {
                scope,
                token,
                max,
                ttl,
            } => Answer::SlotGrant(backend.acquire_slot(&scope, &token, max, ttl).await?),
            Self::RequestCancel(r) => Answer::Cancel(backend.request_cancel(r).await?),
            Self::Sweep(s) => Answer::Recovered(backend.sweep(&s).await?),
            Self::Subscribe { thread, ttl } => {
                backend.subscribe(&thread, ttl).await?;
                Answer::Unit
            }
            Self::Unsubscribe(t) => Answer::Bool(backend.unsubscribe(&t).await?),
            Self::IsSubscribed(t) => Answer::Bool(backend.is_subscribed(&t).await?),
            Self::UnsubscribeTenant { platform, tenant } => {
                Answer::Count(backend.unsubscribe_tenant(platform, &tenant).await?)
            }
            Self::BusyScopes { filter, limit } => {
                Answer::Scopes(backend.busy_scopes(&filter, limit).await?)
            }
            Self::InspectScope(s) => Answer::Scope(backend.inspect_scope(&s).await?),
            Self::ForceRelease { scope, fence } => {
                Answer::ForceRelease(backend.force_release(&scope, fence).await?)
            }
            Self::Health => {
                backend.health().await?;
                Answer::Unit
            }
            Self::KvGet(k) => Answer::Value(backend.get(&k).await?),
            Self::KvSet {
                key,
                value,
                ttl,
                mode,
            } => Answer::Bool(backend.set(&key, value, ttl, mode).await?),
            Self::KvDelete(k) => Answer::Bool(backend.delete(&k).await?),
        })
    }
}

/// What a [`Call`] answers: one variant per return type. An interceptor that
/// answers a call itself must answer with the call's own type (a [`Renewal`]
/// for a renew); any other answer reaches the caller as
/// [`StateError::Backend`].
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(missing_docs)] // each variant is the return type of the same name
pub enum Answer {
    Admission(Admission),
    Renewal(Renewal),
    Handoff(Handoff),
    SlotGrant(SlotGrant),
    Cancel(CancelOutcome),
    Recovered(Vec<Recovered>),
    Scopes(Vec<ScopeView>),
    Scope(Option<ScopeView>),
    ForceRelease(ForceRelease),
    /// `release`, `unmark`, `unsubscribe`, `is_subscribed`, `set`, `delete`.
    Bool(bool),
    /// `unsubscribe_tenant`.
    Count(u64),
    /// `get`.
    Value(Option<Bytes>),
    /// `subscribe`, `health`.
    Unit,
}

/// Sees every call an [`Intercepted`] backend gets, and decides what happens:
/// pass it on ([`Call::run`] on `next`), change it, delay it, answer it
/// itself, or fail it. The default passes every call on unchanged.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use chat_core::state::{Answer, Call, Intercepted, Interceptor, Op};
/// use chat_core::{StateBackend, StateError};
///
/// /// Counts admissions, and changes nothing.
/// #[derive(Default)]
/// struct CountAdmits(AtomicU64);
///
/// #[async_trait::async_trait]
/// impl Interceptor for CountAdmits {
///     async fn intercept(
///         &self,
///         call: Call<'_>,
///         next: &Arc<dyn StateBackend>,
///     ) -> Result<Answer, StateError> {
///         if call.op() == Op::Admit {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///         call.run(next.as_ref()).await
///     }
/// }
///
/// fn counted(backend: Arc<dyn StateBackend>) -> Intercepted<CountAdmits> {
///     Intercepted::new(backend, CountAdmits::default())
/// }
/// ```
#[async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// Handles one call; `next` is the wrapped backend.
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        call.run(next.as_ref()).await
    }

    /// What [`StateBackend::shared`] answers; by default, `next`'s answer.
    fn shared(&self, next: &dyn StateBackend) -> bool {
        next.shared()
    }
}

/// A shared interceptor intercepts: a test keeps an `Arc` of its interceptor
/// to steer it while the wrapped backend runs.
#[async_trait]
impl<I: Interceptor + ?Sized> Interceptor for Arc<I> {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        (**self).intercept(call, next).await
    }

    fn shared(&self, next: &dyn StateBackend) -> bool {
        (**self).shared(next)
    }
}

/// A [`StateBackend`] that forwards every call to the backend it wraps
/// through an [`Interceptor`].
pub struct Intercepted<I> {
    next: Arc<dyn StateBackend>,
    interceptor: I,
}

impl<I> fmt::Debug for Intercepted<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Intercepted")
            .field("interceptor", &std::any::type_name::<I>())
            .finish_non_exhaustive()
    }
}

impl<I: Interceptor> Intercepted<I> {
    /// Wraps `next`: every call goes through `interceptor`.
    pub fn new(next: Arc<dyn StateBackend>, interceptor: I) -> Self {
        Self { next, interceptor }
    }

    /// The interceptor (to change what it does while calls run).
    pub fn interceptor(&self) -> &I {
        &self.interceptor
    }

    /// The wrapped backend, for calls that must not be intercepted.
    pub fn inner(&self) -> &Arc<dyn StateBackend> {
        &self.next
    }

    async fn call(&self, call: Call<'_>) -> Result<Answer, StateError> {
        self.interceptor.intercept(call, &self.next).await
    }
}

fn mismatch(op: Op, answer: &Answer) -> StateError {
    StateError::Backend(format!("an interceptor answered {op} with {answer:?}").into())
}

/// Unpacks the answer `$call` gets into its `$variant`.
macro_rules! answer {
    ($self:ident, $call:expr, $variant:ident) => {{
        let call = $call;
        let op = call.op();
        match $self.call(call).await? {
            Answer::$variant(v) => Ok(v),
            other => Err(mismatch(op, &other)),
        }
    }};
    ($self:ident, $call:expr) => {{
        let call = $call;
        let op = call.op();
        match $self.call(call).await? {
            Answer::Unit => Ok(()),
            other => Err(mismatch(op, &other)),
        }
    }};
}

#[async_trait]
impl<I: Interceptor> Coordination for Intercepted<I> {
    async fn admit(&self, request: AdmitRequest) -> Result<Admission, StateError> {
        answer!(self, Call::Admit(request), Admission)
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        let lease = Cow::Borrowed(lease);
        answer!(self, Call::Renew { lease, ttl }, Renewal)
    }

    async fn finish(&self, lease: &Lease) -> Result<Handoff, StateError> {
        answer!(self, Call::Finish(Cow::Borrowed(lease)), Handoff)
    }

    async fn release(&self, lease: &Lease, how: Release) -> Result<bool, StateError> {
        let lease = Cow::Borrowed(lease);
        answer!(self, Call::Release { lease, how }, Bool)
    }

    async fn unmark(&self, thread: &ThreadRef, key: &DedupeKey) -> Result<bool, StateError> {
        let (thread, key) = (Cow::Borrowed(thread), Cow::Borrowed(key));
        answer!(self, Call::Unmark { thread, key }, Bool)
    }

    async fn acquire_slot(
        &self,
        scope: &ScopeKey,
        token: &LeaseToken,
        max: Option<usize>,
        ttl: Duration,
    ) -> Result<SlotGrant, StateError> {
        let (scope, token) = (Cow::Borrowed(scope), Cow::Borrowed(token));
        let call = Call::AcquireSlot {
            scope,
            token,
            max,
            ttl,
        };
        answer!(self, call, SlotGrant)
    }

    async fn request_cancel(&self, request: CancelRequest) -> Result<CancelOutcome, StateError> {
        answer!(self, Call::RequestCancel(request), Cancel)
    }

    async fn sweep(&self, request: &Sweep) -> Result<Vec<Recovered>, StateError> {
        answer!(self, Call::Sweep(Cow::Borrowed(request)), Recovered)
    }
}

#[async_trait]
impl<I: Interceptor> Subscriptions for Intercepted<I> {
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError> {
        let thread = Cow::Borrowed(thread);
        answer!(self, Call::Subscribe { thread, ttl })
    }

    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        answer!(self, Call::Unsubscribe(Cow::Borrowed(thread)), Bool)
    }

    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError> {
        answer!(self, Call::IsSubscribed(Cow::Borrowed(thread)), Bool)
    }

    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError> {
        let tenant = Cow::Borrowed(tenant);
        answer!(self, Call::UnsubscribeTenant { platform, tenant }, Count)
    }
}

#[async_trait]
impl<I: Interceptor> Inspection for Intercepted<I> {
    async fn busy_scopes(
        &self,
        filter: &ScopeFilter,
        limit: usize,
    ) -> Result<Vec<ScopeView>, StateError> {
        let filter = Cow::Borrowed(filter);
        answer!(self, Call::BusyScopes { filter, limit }, Scopes)
    }

    async fn inspect_scope(&self, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
        answer!(self, Call::InspectScope(Cow::Borrowed(scope)), Scope)
    }

    async fn force_release(
        &self,
        scope: &ScopeKey,
        fence: u64,
    ) -> Result<ForceRelease, StateError> {
        let scope = Cow::Borrowed(scope);
        answer!(self, Call::ForceRelease { scope, fence }, ForceRelease)
    }
}

#[async_trait]
impl<I: Interceptor> KvStore for Intercepted<I> {
    async fn get(&self, key: &str) -> Result<Option<Bytes>, StateError> {
        answer!(self, Call::KvGet(Cow::Borrowed(key)), Value)
    }

    async fn set(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
        mode: SetMode,
    ) -> Result<bool, StateError> {
        let key = Cow::Borrowed(key);
        let call = Call::KvSet {
            key,
            value,
            ttl,
            mode,
        };
        answer!(self, call, Bool)
    }

    async fn delete(&self, key: &str) -> Result<bool, StateError> {
        answer!(self, Call::KvDelete(Cow::Borrowed(key)), Bool)
    }
}

#[async_trait]
impl<I: Interceptor> StateBackend for Intercepted<I> {
    async fn health(&self) -> Result<(), StateError> {
        answer!(self, Call::Health)
    }

    fn shared(&self) -> bool {
        self.interceptor.shared(self.next.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_its_own_name() {
        let ops = [
            Op::Admit,
            Op::Renew,
            Op::Finish,
            Op::Release,
            Op::Unmark,
            Op::AcquireSlot,
            Op::RequestCancel,
            Op::Sweep,
            Op::Subscribe,
            Op::Unsubscribe,
            Op::IsSubscribed,
            Op::UnsubscribeTenant,
            Op::BusyScopes,
            Op::InspectScope,
            Op::ForceRelease,
            Op::Health,
            Op::KvGet,
            Op::KvSet,
            Op::KvDelete,
        ];
        let names: std::collections::HashSet<_> = ops.iter().map(|o| o.name()).collect();
        assert_eq!(names.len(), ops.len());
    }
}
