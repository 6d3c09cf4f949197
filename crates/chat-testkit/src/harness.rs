//! The [`Harness`] every conformance case gets: a backend, a clock, and builders
//! for events on threads no other case uses.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chat_core::{
    Admission, AdmitRequest, Batch, Concurrency, Decision, Event, Gate, Handoff, KvStore, Lease,
    Release, ScopeKey, StateBackend, StateError, ThreadRef,
};

use crate::events::EventBuilder;

/// How a harness moves time forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Tokio's paused clock: [`Harness::advance`] calls `tokio::time::advance`.
    /// For backends on `tokio::time` (the memory backend), in tests run with
    /// `#[tokio::test(start_paused = true)]`.
    Paused,
    /// Real time: [`Harness::advance`] sleeps. For backends whose clock is outside
    /// the process (Redis); pick a `unit` well above the round-trip time.
    Real,
}

impl Clock {
    async fn pass(self, d: Duration) {
        match self {
            Self::Paused => tokio::time::advance(d).await,
            Self::Real => tokio::time::sleep(d).await,
        }
    }
}

/// A name of its own per harness, so cases can share one server (Redis) and run
/// in parallel without seeing each other's keys.
fn unique_name() -> String {
    let n = HARNESSES.fetch_add(1, Ordering::Relaxed);
    format!(
        "conf-{}-{n}-{}",
        std::process::id(),
        chat_core::LeaseToken::generate()
            .as_str()
            .get(..8)
            .unwrap_or("")
    )
}

/// One [`KvStore`] conformance case's view of a store: the store, its clock,
/// and a key prefix no other case uses.
pub struct KvHarness {
    kv: Arc<dyn KvStore>,
    clock: Clock,
    unit: Duration,
    prefix: String,
}

impl std::fmt::Debug for KvHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvHarness")
            .field("clock", &self.clock)
            .field("unit", &self.unit)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl KvHarness {
    /// A harness over a store on tokio's paused clock; one time unit is a second.
    pub fn paused(kv: impl KvStore) -> Self {
        Self::new(Arc::new(kv), Clock::Paused, Duration::from_secs(1))
    }

    /// A harness over a store whose clock runs in real time.
    pub fn real_time(kv: Arc<dyn KvStore>, unit: Duration) -> Self {
        Self::new(kv, Clock::Real, unit)
    }

    /// A harness with an explicit clock and unit.
    pub fn new(kv: Arc<dyn KvStore>, clock: Clock, unit: Duration) -> Self {
        Self {
            kv,
            clock,
            unit,
            prefix: unique_name(),
        }
    }

    /// The store under test.
    pub fn kv(&self) -> &dyn KvStore {
        self.kv.as_ref()
    }

    /// A key of this harness named `name`.
    pub fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    /// `n` time units.
    pub fn t(&self, n: u32) -> Duration {
        self.unit * n
    }

    /// Lets `d` pass on the store's clock.
    pub async fn advance(&self, d: Duration) {
        self.clock.pass(d).await;
    }
}

/// One conformance case's view of a backend.
pub struct Harness {
    backend: Arc<dyn StateBackend>,
    clock: Clock,
    unit: Duration,
    tenant: String,
    counter: AtomicU64,
}

static HARNESSES: AtomicU64 = AtomicU64::new(0);

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("clock", &self.clock)
            .field("unit", &self.unit)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// A harness over a backend on tokio's paused clock; one time unit is a second.
    pub fn paused(backend: impl StateBackend) -> Self {
        Self::new(Arc::new(backend), Clock::Paused, Duration::from_secs(1))
    }

    /// A harness over a backend whose clock runs in real time; `unit` is the time
    /// unit every case scales its TTLs and waits by.
    pub fn real_time(backend: Arc<dyn StateBackend>, unit: Duration) -> Self {
        Self::new(backend, Clock::Real, unit)
    }

    /// A harness with an explicit clock and unit.
    pub fn new(backend: Arc<dyn StateBackend>, clock: Clock, unit: Duration) -> Self {
        Self {
            backend,
            clock,
            unit,
            tenant: unique_name(),
            counter: AtomicU64::new(0),
        }
    }

    /// Another harness on the same backend and clock, with a tenant of its own.
    pub fn sibling(&self) -> Self {
        Self::new(self.backend.clone(), self.clock, self.unit)
    }

    /// The backend under test.
    pub fn backend(&self) -> &Arc<dyn StateBackend> {
        &self.backend
    }

    /// `n` time units.
    pub fn t(&self, n: u32) -> Duration {
        self.unit * n
    }

    /// The lease TTL cases use: 3 units.
    pub fn lease_ttl(&self) -> Duration {
        self.t(3)
    }

    /// A sweep of up to 1,000 runs, leased for [`lease_ttl`](Self::lease_ttl).
    pub fn sweep_request(&self) -> chat_core::Sweep {
        chat_core::Sweep::new(self.lease_ttl(), 1000)
    }

    /// The dedupe TTL cases use: 20 units.
    pub fn dedupe_ttl(&self) -> Duration {
        self.t(20)
    }

    /// The harness's tenant (unique per harness).
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Lets `d` pass on the backend's clock.
    pub async fn advance(&self, d: Duration) {
        self.clock.pass(d).await;
    }

    /// A thread of this harness's tenant, in channel `C1`.
    pub fn thread(&self, name: &str) -> ThreadRef {
        self.thread_in("C1", name)
    }

    /// A thread of this harness's tenant in a given channel.
    pub fn thread_in(&self, channel: &str, name: &str) -> ThreadRef {
        ThreadRef::new(
            crate::ScriptedAdapter::PLATFORM,
            self.tenant.as_str(),
            channel,
            name,
        )
    }

    /// A mention on `thread` whose event id and dedupe key are `id`.
    pub fn event(&self, thread: &ThreadRef, id: &str) -> Event {
        EventBuilder::new(thread.clone()).id(id).mention(id).build()
    }

    /// A fresh, unique event id.
    pub fn fresh_id(&self) -> String {
        format!("e{}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    /// The admit request cases use: the thread's own scope, the harness TTLs.
    pub fn request(&self, event: Event, concurrency: Concurrency) -> AdmitRequest {
        let scope = event.thread.thread_scope();
        AdmitRequest::new(event, scope, concurrency)
            .lease_ttl(self.lease_ttl())
            .dedupe_ttl(self.dedupe_ttl())
    }

    /// Admits event `id` on `thread`.
    pub async fn admit(&self, thread: &ThreadRef, id: &str, concurrency: Concurrency) -> Admission {
        self.admit_req(self.request(self.event(thread, id), concurrency))
            .await
    }

    /// Admits a plain message (gate: subscribed) `id` on `thread`.
    pub async fn admit_gated(&self, thread: &ThreadRef, id: &str) -> Admission {
        let req = self
            .request(self.event(thread, id), Concurrency::Drop)
            .gate(Gate::Subscribed);
        self.admit_req(req).await
    }

    /// Admits a request, failing the case on a backend error.
    pub async fn admit_req(&self, req: AdmitRequest) -> Admission {
        ok("admit", self.backend.admit(req).await)
    }

    /// Finishes a lease as its holder does: on `Run`, the lease moves on to the
    /// batch it was handed. Fails the case on a backend error.
    pub async fn finish(&self, lease: &mut Lease) -> Handoff {
        let handoff = self.finish_as(lease).await;
        if let Handoff::Run(batch) = &handoff {
            *lease = lease.clone().at(batch.seq);
        }
        handoff
    }

    /// One `finish` call with the lease as it is (a repeat, or a stale call).
    pub async fn finish_as(&self, lease: &Lease) -> Handoff {
        ok("finish", self.backend.finish(lease).await)
    }

    /// Releases a lease, failing the case on a backend error.
    pub async fn release(&self, lease: &Lease, how: Release) -> bool {
        ok("release", self.backend.release(lease, how).await)
    }

    /// Renews a lease by the harness TTL, failing the case on a backend error.
    pub async fn renew(&self, lease: &Lease) -> chat_core::Renewal {
        ok("renew", self.backend.renew(lease, self.lease_ttl()).await)
    }

    /// The thread scope of `thread`.
    pub fn scope(&self, thread: &ThreadRef) -> ScopeKey {
        thread.thread_scope()
    }
}

/// Unwraps a backend result, failing the case with the operation's name.
pub fn ok<T>(op: &str, r: Result<T, StateError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{op}: the backend failed: {e} ({e:?})"),
    }
}

/// The lease of a `Run` decision, or a failed case.
pub fn expect_run(a: &Admission) -> Lease {
    match &a.decision {
        Decision::Run(lease) => lease.clone(),
        other => panic!("expected Run, got {other:?}"),
    }
}

/// The lease of a `Hold` decision, or a failed case.
pub fn expect_hold(a: &Admission) -> Lease {
    match &a.decision {
        Decision::Hold(lease) => lease.clone(),
        other => panic!("expected Hold, got {other:?}"),
    }
}

/// The event ids of waiting entries, in order.
pub fn ids(entries: &[chat_core::Waiting]) -> Vec<String> {
    entries.iter().map(|w| w.event.id.to_string()).collect()
}

/// The batch of `Handoff::Run`, or a failed case.
pub fn expect_batch(h: Handoff) -> Batch {
    match h {
        Handoff::Run(batch) => batch,
        other => panic!("expected Handoff::Run, got {other:?}"),
    }
}

/// The entries of `Handoff::Run`, or a failed case.
pub fn expect_handoff_run(h: Handoff) -> Vec<chat_core::Waiting> {
    expect_batch(h).entries
}

/// The delay of `Handoff::Wait`, or a failed case.
pub fn expect_wait(h: Handoff) -> std::time::Duration {
    match h {
        Handoff::Wait(d) => d,
        other => panic!("expected Handoff::Wait, got {other:?}"),
    }
}
