//! A scenario harness: a bot on a state backend and the scripted adapter, whose
//! handler does what each event's text says, logging every run.
//!
//! Texts: `ok` (return at once), `sleep:MS` (sleep, cooperatively), `fail`,
//! `panic`, `sleepus:µS`, `wait-cancel` (wait for cancellation, then return), `stubborn:MS`
//! (sleep MS ignoring cancellation); `first-` before any of them applies it on
//! the run's first attempt only; `post+` before any of them first posts
//! `reply:ID` into the thread.
//!
//! A scenario runs on an [`Env`]: the memory backend under tokio's paused clock,
//! or Redis (one server, or the cluster), which judges expiry by its own clock,
//! in real time. Every duration a scenario writes — in texts, in [`Scenario::pass`],
//! in its options, in the instants it expects — is in scenario milliseconds, which
//! the [`Clock`] maps to time: as written and exact under the paused clock;
//! divided by [`Clock::REAL`]'s scale and compared within its margins in real time.

#![allow(
    dead_code,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chat_core::state::{Answer, Call, Intercepted, Interceptor, Op};
use chat_core::{AdmitRequest, Renewal, ScopeKey, StateBackend, StateError, ThreadRef};
use chat_runtime::{
    Bot, CancelCause, Concurrency, Ctx, DispatchOptions, Event, Outcome, OutcomeRecord,
    RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_state_redis::RedisState;
use chat_test_redis::Deployment;
use chat_testkit::ScriptedAdapter;
use tokio::time::Instant;

/// Emits every named scenario `async fn name(env: Env)` of the calling test
/// file as one test per backend: `memory::name` under the paused clock, and
/// `redis::name` and `redis_cluster::name` in real time on a current-thread
/// runtime (skipped with a notice when their server is not configured; see
/// `servers.rs`).
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(start_paused = true)]
                async fn $name() {
                    Box::pin(super::$name($crate::support::Env::memory())).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(env) = $crate::support::Env::redis() else {
                        return;
                    };
                    Box::pin(super::$name(env)).await;
                }
            )*
        }
        mod redis_cluster {
            $(
                #[tokio::test]
                async fn $name() {
                    let Some(env) = $crate::support::Env::redis_cluster() else {
                        return;
                    };
                    Box::pin(super::$name(env)).await;
                }
            )*
        }
    };
}

/// How a scenario's durations map to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// tokio's paused clock: durations as written, instants exact.
    Paused,
    /// Real time: every duration divided by `scale`. An instant is right from
    /// `early` before to `late` after the expected one: Redis's clock counts
    /// whole milliseconds; scheduling and round trips only make things later.
    Real {
        scale: u32,
        early: Duration,
        late: Duration,
    },
}

impl Clock {
    /// Real time for Redis: a scenario's 10 ms step is 1 ms, its usual 1 s
    /// handler 100 ms, while a local round trip is well under 1 ms. The
    /// scenarios space what they check so that a wrong instant misses by more
    /// than these margins.
    pub const REAL: Self = Self::Real {
        scale: 10,
        early: Duration::from_millis(5),
        late: Duration::from_millis(50),
    };

    pub fn is_real(self) -> bool {
        matches!(self, Self::Real { .. })
    }

    /// `ms` scenario milliseconds.
    pub fn ms(self, ms: u64) -> Duration {
        self.scale(Duration::from_millis(ms))
    }

    /// A scenario duration as time.
    pub fn scale(self, d: Duration) -> Duration {
        match self {
            Self::Paused => d,
            Self::Real { scale, .. } => d / scale,
        }
    }

    /// How much earlier and later than expected an instant may be: zero under
    /// the paused clock.
    pub fn margins(self) -> (Duration, Duration) {
        match self {
            Self::Paused => (Duration::ZERO, Duration::ZERO),
            Self::Real { early, late, .. } => (early, late),
        }
    }

    /// Every duration of `o` as time (the dedupe TTL included).
    pub fn options(self, o: RuntimeOptions) -> RuntimeOptions {
        let s = |d: Duration| self.scale(d);
        let concurrency = match o.concurrency {
            Concurrency::Queue(mut q) => {
                q.entry_ttl = s(q.entry_ttl);
                Concurrency::Queue(q)
            }
            Concurrency::Debounce(mut d) => {
                d.interval = s(d.interval);
                Concurrency::Debounce(d)
            }
            Concurrency::Burst(mut b) => {
                b.window = s(b.window);
                Concurrency::Burst(b)
            }
            other => other,
        };
        let mut o = o;
        o.concurrency = concurrency;
        o.dispatch.detach_timeout = s(o.dispatch.detach_timeout);
        o.retention.dedupe_ttl = o.retention.dedupe_ttl.map(s);
        o.leases.ttl = s(o.leases.ttl);
        o.leases.max_lifetime = s(o.leases.max_lifetime);
        o.timeouts.sync_slot_wait = s(o.timeouts.sync_slot_wait);
        o.timeouts.ack = s(o.timeouts.ack);
        o.recovery.sweep_interval = o.recovery.sweep_interval.map(s);
        o
    }

    /// Lets `ms` scenario milliseconds pass.
    pub async fn pass(self, ms: u64) {
        tokio::time::sleep(self.ms(ms)).await;
    }

    /// In real time, waits out the late margin (after the instant something
    /// must have happened by); nothing under the paused clock.
    pub async fn slack(self) {
        tokio::time::sleep(self.margins().1).await;
    }

    /// `actual` is `expected_ms` scenario milliseconds: exactly under the paused
    /// clock, within the margins in real time.
    #[track_caller]
    pub fn assert_near(self, actual: Duration, expected_ms: u64, what: &str) {
        let expected = self.ms(expected_ms);
        let (early, late) = self.margins();
        assert!(
            actual + early >= expected && actual <= expected + late,
            "{what}: took {actual:?}, expected {expected:?} (-{early:?}/+{late:?}, {self:?})"
        );
    }
}

/// Where a scenario's state lives.
#[derive(Debug, Clone)]
enum Store {
    Memory,
    Redis(Deployment),
}

/// A backend to run scenarios on, with its clock.
#[derive(Debug, Clone)]
pub struct Env {
    store: Store,
    pub clock: Clock,
}

impl Env {
    /// The memory backend, under tokio's paused clock (the test must start paused).
    pub fn memory() -> Self {
        Self {
            store: Store::Memory,
            clock: Clock::Paused,
        }
    }

    /// The Redis server of `REDIS_URL`, in real time; `None` after the skip
    /// notice (a failure under `CI=true`).
    pub fn redis() -> Option<Self> {
        Some(Self {
            store: Store::Redis(Deployment::single()?),
            clock: Clock::REAL,
        })
    }

    /// The Redis Cluster of `REDIS_CLUSTER_URLS`, in real time.
    pub fn redis_cluster() -> Option<Self> {
        Some(Self {
            store: Store::Redis(Deployment::cluster()?),
            clock: Clock::REAL,
        })
    }

    /// `n` handles on one fresh store, one per replica: the memory backend
    /// shared, or Redis connections (a pool each) under one fresh key prefix.
    pub async fn stores(&self, n: usize) -> Vec<Arc<dyn StateBackend>> {
        match &self.store {
            Store::Memory => {
                let state: Arc<dyn StateBackend> = Arc::new(MemoryState::new());
                vec![state; n]
            }
            Store::Redis(deployment) => {
                let prefix = chat_test_redis::unique_prefix();
                let mut stores: Vec<Arc<dyn StateBackend>> = Vec::with_capacity(n);
                for _ in 0..n {
                    let builder = match deployment {
                        Deployment::Single(url) => RedisState::builder().url(url.as_str()),
                        Deployment::Cluster(urls) => {
                            RedisState::builder().cluster(urls.iter().cloned())
                        }
                    };
                    let state = builder.prefix(&prefix).pool_size(4).build().await.unwrap();
                    // Open the pool's connections now rather than inside a
                    // scenario's timed steps.
                    let pings = futures_util::future::join_all((0..4).map(|_| state.health()));
                    for ping in pings.await {
                        ping.expect("Redis answers");
                    }
                    stores.push(Arc::new(state));
                }
                stores
            }
        }
    }

    /// A fresh store.
    pub async fn store(&self) -> Arc<dyn StateBackend> {
        self.stores(1).await.pop().expect("one store")
    }

    /// A scenario on a fresh store; `options` in scenario milliseconds.
    pub async fn scenario(&self, options: RuntimeOptions) -> Scenario {
        Scenario::on(self.store().await, self.clock, options)
    }

    /// `n` replicas on one fresh store, sharing one log and one platform.
    pub async fn replicas(&self, n: usize, options: RuntimeOptions) -> Vec<Scenario> {
        let log = Log::default();
        let adapter = ScriptedAdapter::new("test");
        self.stores(n)
            .await
            .into_iter()
            .map(|state| {
                Scenario::replica(
                    state,
                    self.clock,
                    options.clone(),
                    log.clone(),
                    adapter.clone(),
                    true,
                )
            })
            .collect()
    }
}

/// One handler run.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub text: String,
    pub scope: String,
    pub skipped: Vec<String>,
    pub start: Instant,
    pub end: Option<Instant>,
    pub cause: Option<CancelCause>,
    pub deadline: Option<Instant>,
    pub attempt: u32,
}

#[derive(Clone, Default)]
pub struct Log {
    pub runs: Arc<Mutex<Vec<Run>>>,
    pub outcomes: Arc<Mutex<Vec<OutcomeRecord>>>,
}

pub struct Scenario {
    pub bot: Bot,
    pub adapter: ScriptedAdapter,
    pub log: Log,
    /// The bot's backend: the store, through `faults`, then `hooks`.
    pub state: Arc<dyn StateBackend>,
    /// The store through `faults` only: what another replica would see.
    pub store: Arc<dyn StateBackend>,
    /// Interleavings to force in this bot's state calls.
    pub hooks: Arc<Hooks>,
    /// Faults to inject into this bot's state calls.
    pub faults: Arc<chat_testkit::Faults>,
    pub clock: Clock,
}

/// Deferred dispatch with a generous detach budget, under `concurrency`.
pub fn deferred(concurrency: Concurrency) -> RuntimeOptions {
    RuntimeOptions::default()
        .dispatch(
            DispatchOptions::default()
                .mode(chat_runtime::Dispatch::Deferred)
                .detach_timeout(Duration::from_secs(60)),
        )
        .concurrency(concurrency)
}

/// The handler; the durations in texts are scenario milliseconds (microseconds
/// for `sleepus`), mapped to time by `clock`.
pub fn handler(
    log: Log,
    clock: Clock,
) -> impl Fn(Ctx, Event) -> futures_util::future::BoxFuture<'static, Result<(), String>>
+ Send
+ Sync
+ 'static {
    move |ctx: Ctx, event: Event| {
        let log = log.clone();
        Box::pin(async move {
            let text = script_of(&event);
            let index = {
                let mut runs = log.runs.lock().unwrap();
                runs.push(Run {
                    id: event.id.to_string(),
                    text: text.clone(),
                    scope: event.thread.to_string(),
                    skipped: ctx.skipped().iter().map(|e| e.id.to_string()).collect(),
                    start: Instant::now(),
                    end: None,
                    cause: None,
                    deadline: ctx.deadline(),
                    attempt: ctx.attempt(),
                });
                runs.len() - 1
            };
            // `post+VERB`: first post `reply:ID` into the thread, then VERB.
            let text = match text.strip_prefix("post+") {
                Some(rest) => {
                    let _ = ctx.thread().post(format!("reply:{}", event.id)).await;
                    rest.to_owned()
                }
                None => text,
            };
            let (verb, arg) = text.split_once(':').unwrap_or((text.as_str(), "0"));
            // `first-VERB`: VERB on the first attempt only; later attempts (a run
            // repeated after its holder was lost) return at once.
            let verb = match verb.strip_prefix("first-") {
                Some(v) if ctx.attempt() == 1 => v,
                Some(_) => "ok",
                None => verb,
            };
            let n: u64 = arg.parse().unwrap_or(0);
            let (ms, us) = (clock.ms(n), clock.scale(Duration::from_micros(n)));
            let result = match verb {
                "fail" => Err("asked to fail".to_owned()),
                "panic" => panic!("asked to panic"),
                "sleep" => {
                    tokio::select! {
                        () = tokio::time::sleep(ms) => {}
                        () = ctx.cancelled() => {}
                    }
                    Ok(())
                }
                "sleepus" => {
                    tokio::select! {
                        () = tokio::time::sleep(us) => {}
                        () = ctx.cancelled() => {}
                    }
                    Ok(())
                }
                "wait-cancel" => {
                    ctx.cancelled().await;
                    Ok(())
                }
                // Answers its cancellation with a post that takes `arg` ms.
                "answer-cancel" => {
                    ctx.cancelled().await;
                    let thread = ctx.thread();
                    let (_, ()) = tokio::join!(
                        thread.post(format!("stopping:{}", event.id)),
                        tokio::time::sleep(ms)
                    );
                    Ok(())
                }
                "stubborn" => {
                    tokio::time::sleep(ms).await;
                    Ok(())
                }
                _ => Ok(()),
            };
            let mut runs = log.runs.lock().unwrap();
            runs[index].end = Some(Instant::now());
            runs[index].cause = ctx.cancel_cause();
            result
        })
    }
}

/// The action id the scenario bot's action handler is registered for.
pub const ACTION: &str = "go";

/// What an event tells the scenario handler to do: a message's, a slash
/// command's or an agent prompt's text; a click's value; a reaction's emoji; a
/// modal submission's metadata.
pub fn script_of(event: &Event) -> String {
    use chat_core::EventKind;
    match &event.kind {
        EventKind::Action(a) => a.value.clone(),
        EventKind::Reaction(r) => Some(r.emoji.clone()),
        EventKind::ModalSubmit(m) | EventKind::ModalClose(m) => m.metadata.clone(),
        _ => event.text().map(str::to_owned),
    }
    .unwrap_or_default()
}

/// The kinds that run without the strategy's lock, each as a scripted event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlocked {
    Reaction,
    Action,
    SlashCommand,
    ModalSubmit,
}

impl Unlocked {
    pub const ALL: [Self; 4] = [
        Self::Reaction,
        Self::Action,
        Self::SlashCommand,
        Self::ModalSubmit,
    ];

    /// An event of this kind in `thread`, scripted with `script`.
    pub fn event(self, s: &Scenario, thread: &str, id: &str, script: &str) -> Event {
        let b = chat_testkit::EventBuilder::new(s.adapter.thread("T1", "C1", thread)).id(id);
        match self {
            Self::Reaction => b.reaction(script, thread),
            Self::Action => b.action(ACTION, Some(script)),
            Self::SlashCommand => b.slash_command("/go", script),
            Self::ModalSubmit => b.modal_submit("form", script),
        }
        .build()
    }
}

impl Scenario {
    /// A scenario on a fresh memory backend, under the paused clock.
    pub fn new(options: RuntimeOptions) -> Self {
        Self::on(Arc::new(MemoryState::new()), Clock::Paused, options)
    }

    /// A scenario on `state` (through [`Faults`](chat_testkit::Faults) and
    /// [`Hooks`]); `options` in scenario
    /// milliseconds.
    pub fn on(state: Arc<dyn StateBackend>, clock: Clock, options: RuntimeOptions) -> Self {
        let shared = state.shared();
        Self::replica(
            state,
            clock,
            options,
            Log::default(),
            ScriptedAdapter::new("test"),
            shared,
        )
    }

    /// One of several bots on one store, sharing one log and one platform (so
    /// runs, outcomes and posts are counted across them), like replicas.
    pub fn replica(
        state: Arc<dyn StateBackend>,
        clock: Clock,
        options: RuntimeOptions,
        log: Log,
        adapter: ScriptedAdapter,
        shared: bool,
    ) -> Self {
        let faults = Arc::new(chat_testkit::Faults::new().shared_as(shared));
        let store: Arc<dyn StateBackend> = faults.wrap(state);
        let hooks = Arc::new(Hooks::default());
        let state: Arc<dyn StateBackend> =
            Arc::new(Intercepted::new(Arc::clone(&store), Arc::clone(&hooks)));
        let outcomes = log.outcomes.clone();
        let bot = Bot::builder()
            .state_arc(state.clone())
            .adapter(adapter.clone())
            .options(clock.options(options))
            .observer(move |r: &OutcomeRecord| outcomes.lock().unwrap().push(r.clone()))
            .on_new_mention(handler(log.clone(), clock))
            .on_subscribed_message(handler(log.clone(), clock))
            .on_reaction(handler(log.clone(), clock))
            .on_action(ACTION, handler(log.clone(), clock))
            .on_any_slash_command(handler(log.clone(), clock))
            .on_modal_submit(None, handler(log.clone(), clock))
            .build()
            .expect("valid options");
        Self {
            bot,
            adapter,
            log,
            state,
            store,
            hooks,
            faults,
            clock,
        }
    }

    pub fn event(&self, thread: &str, id: &str, text: &str) -> Event {
        self.adapter.mention("T1", "C1", thread, id, text)
    }

    /// Delivers a mention; returns the HTTP status.
    pub async fn send(&self, thread: &str, id: &str, text: &str) -> u16 {
        let e = self.event(thread, id, text);
        self.send_event(&e).await
    }

    pub async fn send_event(&self, e: &Event) -> u16 {
        self.bot
            .handle("test", self.adapter.request(e))
            .await
            .status()
            .as_u16()
    }

    /// Lets `ms` scenario milliseconds pass.
    pub async fn pass(&self, ms: u64) {
        self.clock.pass(ms).await;
    }

    /// Lets time pass, 100 scenario ms at a time, until `done` holds or `limit`
    /// ms have passed: for a step whose timing in real time depends on how
    /// busy the machine is (a sweep on another replica), bounded by a limit
    /// far past the step's scenario time instead of a fixed wait.
    pub async fn pass_until(&self, limit: u64, done: impl Fn() -> bool) {
        let mut passed = 0;
        while !done() && passed < limit {
            self.clock.pass(100).await;
            passed += 100;
        }
    }

    /// `ms` scenario milliseconds as time.
    pub fn ms(&self, ms: u64) -> Duration {
        self.clock.ms(ms)
    }

    pub fn runs(&self) -> Vec<Run> {
        self.log.runs.lock().unwrap().clone()
    }

    pub fn ran_ids(&self) -> Vec<String> {
        self.runs().into_iter().map(|r| r.id).collect()
    }

    pub fn outcomes(&self) -> HashMap<String, Vec<Outcome>> {
        let mut map: HashMap<String, Vec<Outcome>> = HashMap::new();
        for r in self.log.outcomes.lock().unwrap().iter() {
            map.entry(r.event_id.to_string())
                .or_default()
                .push(r.outcome);
        }
        map
    }

    pub fn outcome(&self, id: &str) -> Option<Outcome> {
        let o = self.outcomes();
        let list = o.get(id)?;
        assert_eq!(list.len(), 1, "{id} has outcomes {list:?}");
        Some(list[0])
    }

    /// Every delivery in `ids` has exactly one outcome, and nothing else has one.
    pub fn assert_one_outcome_each(&self, ids: &[&str]) {
        let o = self.outcomes();
        for id in ids {
            match o.get(*id) {
                Some(list) if list.len() == 1 => {}
                other => panic!("{id}: expected exactly one outcome, got {other:?}"),
            }
        }
        let mut extra: Vec<_> = o.keys().filter(|k| !ids.contains(&k.as_str())).collect();
        extra.sort();
        assert!(
            extra.is_empty(),
            "outcomes for unexpected deliveries: {extra:?}"
        );
    }

    /// No two runs on one scope overlapped in time (runs that ended preempted
    /// excepted).
    pub fn assert_no_overlap(&self) {
        let runs = self.runs();
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                if a.scope != b.scope
                    || a.cause == Some(CancelCause::Preempted)
                    || b.cause == Some(CancelCause::Preempted)
                {
                    continue;
                }
                let (ae, be) = (a.end.expect("run ended"), b.end.expect("run ended"));
                assert!(
                    ae <= b.start || be <= a.start,
                    "runs {} and {} overlap",
                    a.id,
                    b.id
                );
            }
        }
    }

    /// The threads' scopes are held by nobody and their work is ready for
    /// another replica at once: one sweep recovers every one of them.
    pub async fn assert_recoverable_now(&self, threads: &[&str]) {
        let recovered = self
            .state
            .sweep(&chat_core::Sweep::new(self.clock.ms(30_000), 1000))
            .await
            .unwrap();
        for thread in threads {
            let scope = self.adapter.thread("T1", "C1", thread).thread_scope();
            assert!(
                recovered
                    .iter()
                    .any(|r| matches!(r, chat_core::Recovered::Scope(l) if *l.scope() == scope)),
                "scope {thread} was not recovered: {recovered:?}"
            );
        }
    }

    /// Nothing is left holding or waiting on the thread's scope.
    pub async fn assert_scope_idle(&self, thread: &str) {
        let scope = self.adapter.thread("T1", "C1", thread).thread_scope();
        assert!(
            sweep_scope(self.store.as_ref(), &scope).await,
            "scope {thread} still held or waiting"
        );
    }
}

/// Hooks for forcing interleavings into a bot's state calls.
#[derive(Default)]
pub struct Hooks {
    /// Runs once, before the next `finish` reaches the store.
    pub before_finish: Mutex<Option<futures_util::future::BoxFuture<'static, ()>>>,
    /// While set, every renewal answers `Lost` without reaching the store.
    pub renew_lost: std::sync::atomic::AtomicBool,
    /// Every `finish` first waits this long (a backend round trip).
    pub finish_latency: Mutex<Duration>,
}

#[async_trait]
impl Interceptor for Hooks {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        match call.op() {
            Op::Renew if self.renew_lost.load(std::sync::atomic::Ordering::SeqCst) => {
                return Ok(Answer::Renewal(Renewal::Lost));
            }
            Op::Finish => {
                let hook = self.before_finish.lock().unwrap().take();
                if let Some(hook) = hook {
                    hook.await;
                }
                let latency = *self.finish_latency.lock().unwrap();
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
            }
            _ => {}
        }
        call.run(next.as_ref()).await
    }
}

/// True when the scope is free: a fresh drop-admit there gets the lease.
pub async fn sweep_scope(store: &dyn StateBackend, scope: &ScopeKey) -> bool {
    let thread = ThreadRef::new(
        scope.platform,
        scope.tenant.clone(),
        scope.channel.clone(),
        "probe",
    );
    let e = chat_testkit::EventBuilder::new(thread)
        .id(&format!("probe-{}", rand_id()))
        .build();
    let req = AdmitRequest::new(e, scope.clone(), chat_core::Concurrency::Drop);
    match store.admit(req).await.unwrap().decision {
        chat_core::Decision::Run(lease) => {
            store.finish(&lease).await.unwrap();
            true
        }
        _ => false,
    }
}

fn rand_id() -> String {
    chat_core::LeaseToken::generate().as_str()[..8].to_owned()
}
