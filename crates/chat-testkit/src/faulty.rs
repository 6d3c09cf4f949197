//! [`Faults`]: an [`Interceptor`] that makes a [`StateBackend`] lose replies,
//! run calls twice or late, and stall, on demand — the faults a real network and a real Redis
//! client inflict — so runtime tests can stage them deterministically (on
//! tokio's paused clock with the memory backend, or in real time on Redis).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
pub use chat_core::state::Op;
use chat_core::state::{Answer, Call, Intercepted, Interceptor};
use chat_core::{StateBackend, StateError};

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

/// Faults injected into a backend's calls: an [`Interceptor`] that applies
/// each [`Fault`] to the next call of its [`Op`], then passes calls on
/// unchanged. Wrap a backend in it with [`FaultyState::new`]; keep the
/// `Arc<Faults>` to inject faults while the backend runs.
#[derive(Default)]
pub struct Faults {
    plan: Mutex<VecDeque<(Op, Fault)>>,
    /// Every call of these ops fails as unreachable until cleared.
    cut: Mutex<Vec<Op>>,
    shared: Option<bool>,
}

/// A backend whose calls suffer the [`Faults`] injected into it.
pub type FaultyState = Intercepted<Arc<Faults>>;

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("pending_faults", &self.pending())
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// No fault injected.
    pub fn new() -> Self {
        Self::default()
    }

    /// Says the state is shared (or not) whatever the wrapped backend says: for
    /// tests that run several bots on one in-process backend as replicas.
    #[must_use]
    pub fn shared_as(mut self, shared: bool) -> Self {
        self.shared = Some(shared);
        self
    }

    /// `inner`, with every call going through these faults.
    pub fn wrap(self: &Arc<Self>, inner: Arc<dyn StateBackend>) -> Arc<FaultyState> {
        Arc::new(Intercepted::new(inner, Arc::clone(self)))
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
}

#[async_trait]
impl Interceptor for Faults {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        let timeout = StateError::Timeout(Duration::from_secs(5));
        match self.take(call.op()) {
            None => call.run(next.as_ref()).await,
            Some(Fault::LoseReply) => {
                let _ = call.run(next.as_ref()).await;
                Err(timeout)
            }
            Some(Fault::RunTwice) => {
                let _ = call.clone().run(next.as_ref()).await;
                call.run(next.as_ref()).await
            }
            Some(Fault::RunLate(after)) => {
                let (call, next) = (call.into_owned(), Arc::clone(next));
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = call.run(next.as_ref()).await;
                });
                Err(timeout)
            }
            Some(Fault::Stall(d)) => {
                tokio::time::sleep(d).await;
                call.run(next.as_ref()).await
            }
            Some(_) => Err(StateError::Unavailable("injected: unreachable".into())),
        }
    }

    fn shared(&self, next: &dyn StateBackend) -> bool {
        self.shared.unwrap_or_else(|| next.shared())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
