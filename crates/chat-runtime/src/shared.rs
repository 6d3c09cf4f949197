//! [`Shared`]: what every task of one bot shares — its backend, adapters,
//! options, handlers and outcome recorder, the admission counters, the task
//! tracker and the shutdown signals, and this process's registries of the runs
//! in progress, the leases it holds and the holders waiting on a scope.
//!
//! The lowest layer of the runtime: it imports no module that does the work
//! (dispatch, holders, runs, the sweep), and they reach its state only through
//! these methods.

use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use chat_core::{Lease, LeaseToken, Platform, PlatformAdapter, ScopeKey, StateBackend};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::{Admission, Gauge};
use crate::cancel::{Cancel, CancelCause};
use crate::data::AppData;
use crate::metered::Metered;
use crate::options::RuntimeOptions;
use crate::outcome::Recorder;
use crate::router::Handlers;
use crate::telemetry;
use crate::throttle::Throttle;

/// The state one bot's tasks share.
pub(crate) struct Shared {
    state: Arc<dyn StateBackend>,
    adapters: HashMap<String, Arc<dyn PlatformAdapter>>,
    options: RuntimeOptions,
    handlers: Handlers,
    recorder: Recorder,
    data: AppData,
    admission: Admission,
    /// Places for handlers running inside their request.
    inline: Admission,
    tracker: TaskTracker,
    signals: Signals,
    /// Runs in progress per scope, for stop requests that land on this replica.
    runs: Mutex<HashMap<ScopeKey, Vec<RunHandle>>>,
    /// Leases this process holds, given back at shutdown.
    held: Mutex<HashMap<LeaseToken, Lease>>,
    /// Holders waiting on a scope (a burst window, a debounce quiet period), woken
    /// when this process admits an event there that may make them ready early.
    wakers: Mutex<HashMap<ScopeKey, Arc<Notify>>>,
    /// Woken when a local concurrency slot is released.
    slot_freed: Notify,
    sweeper: OnceLock<()>,
    /// Rejected deliveries' log lines, throttled.
    rejections: Throttle,
    shutdown_cancelled: AtomicUsize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut adapters: Vec<&str> = self.adapters.keys().map(String::as_str).collect();
        adapters.sort_unstable();
        f.debug_struct("Bot")
            .field("adapters", &adapters)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The shutdown's stages, as each task observes them.
#[derive(Default)]
pub(crate) struct Signals {
    /// Set when shutdown starts: deliveries are refused.
    closed: AtomicBool,
    draining: CancellationToken,
    shutdown: CancellationToken,
    abandon: CancellationToken,
}

impl Signals {
    /// Whether deliveries are refused.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Starts the shutdown: refuse deliveries and start the drain.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.draining.cancel();
    }

    /// Fired when shutdown starts: holders finish what they run and take no
    /// new work.
    pub(crate) fn draining(&self) -> &CancellationToken {
        &self.draining
    }

    /// Fired when the drain ends: every run still going is cancelled with
    /// `Shutdown` and hands its batch back.
    pub(crate) fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Fired when shutdown's deadline passed: keepers stop renewing.
    pub(crate) fn abandon(&self) -> &CancellationToken {
        &self.abandon
    }
}

/// A run in progress, as a stop request on this replica reaches it.
pub(crate) struct RunHandle {
    pub(crate) cancel: Cancel,
    /// The stop requests its holder has acted on in this batch.
    pub(crate) seen: Arc<AtomicU32>,
    /// The event it runs, and since when (for operators).
    pub(crate) event: Arc<chat_core::Event>,
    pub(crate) started: tokio::time::Instant,
}

impl Shared {
    pub(crate) fn new(
        state: Arc<dyn StateBackend>,
        adapters: HashMap<String, Arc<dyn PlatformAdapter>>,
        options: RuntimeOptions,
        handlers: Handlers,
        recorder: Recorder,
        data: AppData,
    ) -> Self {
        crate::telemetry::describe();
        let gauge = if options.telemetry.tenant_label {
            Gauge::DetachedPerTenant
        } else {
            Gauge::Detached
        };
        Self {
            state: Metered::wrap(state),
            adapters,
            data,
            admission: Admission::new(
                options.admission.max_detached,
                options.admission.max_detached_per_tenant,
                gauge,
            ),
            inline: Admission::new(
                options.admission.max_inline,
                options.admission.max_inline_per_tenant,
                Gauge::Off,
            ),
            options,
            handlers,
            recorder,
            tracker: TaskTracker::new(),
            signals: Signals::default(),
            runs: Mutex::default(),
            held: Mutex::default(),
            wakers: Mutex::default(),
            slot_freed: Notify::new(),
            sweeper: OnceLock::new(),
            rejections: Throttle::default(),
            shutdown_cancelled: AtomicUsize::new(0),
        }
    }

    pub(crate) fn state(&self) -> &Arc<dyn StateBackend> {
        &self.state
    }

    /// Whether a rejected delivery may be logged now (`Some(held back since)`).
    pub(crate) fn log_rejection(&self) -> Option<u64> {
        self.rejections.admit()
    }

    pub(crate) fn data(&self) -> &AppData {
        &self.data
    }

    pub(crate) fn options(&self) -> &RuntimeOptions {
        &self.options
    }

    pub(crate) fn handlers(&self) -> &Handlers {
        &self.handlers
    }

    pub(crate) fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    pub(crate) fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Places for handlers running inside their request (`max_inline`).
    pub(crate) fn inline(&self) -> &Admission {
        &self.inline
    }

    /// Every task this bot spawns, so shutdown can wait for them.
    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    pub(crate) fn signals(&self) -> &Signals {
        &self.signals
    }

    /// The adapter mounted under `name`.
    pub(crate) fn adapter(&self, name: &str) -> Option<Arc<dyn PlatformAdapter>> {
        self.adapters.get(name).cloned()
    }

    /// An adapter of `platform` (for work recovered from the backend).
    pub(crate) fn adapter_for(&self, platform: &Platform) -> Option<Arc<dyn PlatformAdapter>> {
        self.adapters
            .values()
            .find(|a| a.platform() == *platform)
            .cloned()
    }

    /// Registers a run in progress on `scope`, for stop requests.
    pub(crate) fn run_started(&self, scope: &ScopeKey, run: RunHandle) {
        lock(&self.runs).entry(scope.clone()).or_default().push(run);
    }

    /// Forgets the run whose cancellation is `cancel`.
    pub(crate) fn run_ended(&self, scope: &ScopeKey, cancel: &Cancel) {
        let mut runs = lock(&self.runs);
        if let Some(list) = runs.get_mut(scope) {
            list.retain(|r| !r.cancel.same_as(cancel));
            if list.is_empty() {
                runs.remove(scope);
            }
        }
    }

    /// Every run in progress here: (scope, event, started).
    pub(crate) fn runs(&self) -> Vec<(ScopeKey, Arc<chat_core::Event>, tokio::time::Instant)> {
        lock(&self.runs)
            .iter()
            .flat_map(|(scope, runs)| {
                runs.iter()
                    .map(|r| (scope.clone(), Arc::clone(&r.event), r.started))
            })
            .collect()
    }

    /// Stops every run in progress on `scope` here. `acted_on`: the stop
    /// request's count, which their holders' renewals will report too.
    pub(crate) fn stop_runs(&self, scope: &ScopeKey, acted_on: Option<u32>) {
        if let Some(runs) = lock(&self.runs).get(scope) {
            for run in runs {
                if let Some(count) = acted_on {
                    run.seen.fetch_max(count, Ordering::SeqCst);
                }
                run.cancel.cancel(CancelCause::StopRequested);
            }
        }
    }

    /// Notes a lease this process holds (at its current batch).
    pub(crate) fn hold(&self, lease: &Lease) {
        let mut held = lock(&self.held);
        held.insert(lease.token().clone(), lease.clone());
        telemetry::leases_held(held.len());
    }

    pub(crate) fn unhold(&self, lease: &Lease) {
        let mut held = lock(&self.held);
        held.remove(lease.token());
        telemetry::leases_held(held.len());
    }

    /// Every lease still held, forgotten here (for shutdown to give back).
    pub(crate) fn take_held(&self) -> Vec<Lease> {
        let taken = lock(&self.held).drain().map(|(_, l)| l).collect();
        telemetry::leases_held(0);
        taken
    }

    /// The waker of a holder waiting on `scope` (created for it).
    pub(crate) fn waker(&self, scope: &ScopeKey) -> Arc<Notify> {
        let mut wakers = lock(&self.wakers);
        let waker = Arc::clone(wakers.entry(scope.clone()).or_default());
        telemetry::holders_waiting(wakers.len());
        waker
    }

    pub(crate) fn forget_waker(&self, scope: &ScopeKey) {
        let mut wakers = lock(&self.wakers);
        wakers.remove(scope);
        telemetry::holders_waiting(wakers.len());
    }

    /// Wakes a holder waiting on `scope` here, if there is one.
    pub(crate) fn wake(&self, scope: &ScopeKey) {
        if let Some(waker) = lock(&self.wakers).get(scope) {
            waker.notify_one();
        }
    }

    /// Notified when a local concurrency slot is released.
    pub(crate) fn slot_freed(&self) -> &Notify {
        &self.slot_freed
    }

    /// True once per bot: for the caller that starts the sweep.
    pub(crate) fn claim_sweeper(&self) -> bool {
        self.sweeper.set(()).is_ok()
    }

    /// Counts a run cancelled by the shutdown.
    pub(crate) fn cancelled_by_shutdown(&self) {
        self.shutdown_cancelled.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn shutdown_cancelled(&self) -> usize {
        self.shutdown_cancelled.load(Ordering::SeqCst)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
