//! A scenario harness: a bot on the memory backend and the scripted adapter,
//! whose handler does what each event's text says, logging every run.
//!
//! Texts: `ok` (return at once), `sleep:MS` (sleep, cooperatively), `fail`,
//! `panic`, `sleepus:µS`, `wait-cancel` (wait for cancellation, then return), `stubborn:MS`
//! (sleep MS ignoring cancellation).

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
use bytes::Bytes;
use chat_core::{
    Admission, AdmitRequest, CancelOutcome, CancelRequest, DedupeKey, Handoff, Lease, Renewal,
    ScopeKey, SetMode, StateBackend, StateError, Take, ThreadRef,
};
use chat_runtime::{
    Bot, BotBuilder, CancelCause, Ctx, Event, Outcome, OutcomeRecord, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;
use tokio::time::Instant;

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
    pub state: Arc<Hooked>,
}

pub fn handler(
    log: Log,
) -> impl Fn(Ctx, Event) -> futures_util::future::BoxFuture<'static, Result<(), String>>
+ Send
+ Sync
+ 'static {
    move |ctx: Ctx, event: Event| {
        let log = log.clone();
        Box::pin(async move {
            let text = event.text().unwrap_or_default().to_owned();
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
                });
                runs.len() - 1
            };
            let (verb, arg) = text.split_once(':').unwrap_or((text.as_str(), "0"));
            let ms: u64 = arg.parse().unwrap_or(0);
            let result = match verb {
                "fail" => Err("asked to fail".to_owned()),
                "panic" => panic!("asked to panic"),
                "sleep" => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        () = ctx.cancelled() => {}
                    }
                    Ok(())
                }
                "sleepus" => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_micros(ms)) => {}
                        () = ctx.cancelled() => {}
                    }
                    Ok(())
                }
                "wait-cancel" => {
                    ctx.cancelled().await;
                    Ok(())
                }
                "stubborn" => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
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

impl Scenario {
    pub fn new(options: RuntimeOptions) -> Self {
        Self::with(options, |b| b)
    }

    pub fn with(options: RuntimeOptions, extra: impl FnOnce(BotBuilder) -> BotBuilder) -> Self {
        let log = Log::default();
        let adapter = ScriptedAdapter::new("test");
        let state = Arc::new(Hooked::new());
        let outcomes = log.outcomes.clone();
        let builder = Bot::builder()
            .state_arc(state.clone())
            .adapter(adapter.clone())
            .options(options)
            .observer(move |r: &OutcomeRecord| outcomes.lock().unwrap().push(r.clone()))
            .on_new_mention(handler(log.clone()))
            .on_subscribed_message(handler(log.clone()));
        let bot = extra(builder).build().expect("valid options");
        Self {
            bot,
            adapter,
            log,
            state,
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

    /// Lets (paused) time pass.
    pub async fn pass(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
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

    /// Nothing is left holding or waiting on the thread's scope.
    pub async fn assert_scope_idle(&self, thread: &str) {
        let scope = self.adapter.thread("T1", "C1", thread).thread_scope();
        assert!(
            self.state.sweep_scope(&scope).await,
            "scope {thread} still held or waiting"
        );
    }
}

/// The memory backend with hooks for forcing interleavings and faults.
pub struct Hooked {
    pub inner: MemoryState,
    pub before_finish: Mutex<Option<futures_util::future::BoxFuture<'static, ()>>>,
    pub renew_lost: std::sync::atomic::AtomicBool,
}

impl Hooked {
    pub fn new() -> Self {
        Self {
            inner: MemoryState::new(),
            before_finish: Mutex::new(None),
            renew_lost: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// True when the scope is free: a fresh drop-admit there gets the lease.
    pub async fn sweep_scope(&self, scope: &ScopeKey) -> bool {
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
        match self.inner.admit(req).await.unwrap().decision {
            chat_core::Decision::Run(lease) => {
                self.inner.finish(&lease).await.unwrap();
                true
            }
            _ => false,
        }
    }
}

fn rand_id() -> String {
    chat_core::LeaseToken::generate().as_str()[..8].to_owned()
}

#[async_trait]
impl StateBackend for Hooked {
    async fn admit(&self, r: AdmitRequest) -> Result<Admission, StateError> {
        self.inner.admit(r).await
    }
    async fn renew(&self, l: &Lease, ttl: Duration) -> Result<Renewal, StateError> {
        if self.renew_lost.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(Renewal::Lost);
        }
        self.inner.renew(l, ttl).await
    }
    async fn finish(&self, l: &Lease) -> Result<Handoff, StateError> {
        let hook = self.before_finish.lock().unwrap().take();
        if let Some(hook) = hook {
            hook.await;
        }
        self.inner.finish(l).await
    }
    async fn take(&self, l: &Lease) -> Result<Take, StateError> {
        self.inner.take(l).await
    }
    async fn release(&self, l: &Lease) -> Result<bool, StateError> {
        self.inner.release(l).await
    }
    async fn unmark(&self, t: &ThreadRef, k: &DedupeKey) -> Result<bool, StateError> {
        self.inner.unmark(t, k).await
    }
    async fn acquire_slot(
        &self,
        s: &ScopeKey,
        m: usize,
        ttl: Duration,
    ) -> Result<Option<Lease>, StateError> {
        self.inner.acquire_slot(s, m, ttl).await
    }
    async fn request_cancel(&self, r: CancelRequest) -> Result<CancelOutcome, StateError> {
        self.inner.request_cancel(r).await
    }
    async fn sweep(&self, ttl: Duration, limit: usize) -> Result<Vec<Lease>, StateError> {
        self.inner.sweep(ttl, limit).await
    }
    async fn subscribe(&self, t: &ThreadRef) -> Result<(), StateError> {
        self.inner.subscribe(t).await
    }
    async fn unsubscribe(&self, t: &ThreadRef) -> Result<bool, StateError> {
        self.inner.unsubscribe(t).await
    }
    async fn is_subscribed(&self, t: &ThreadRef) -> Result<bool, StateError> {
        self.inner.is_subscribed(t).await
    }
    async fn kv_get(&self, k: &str) -> Result<Option<Bytes>, StateError> {
        self.inner.kv_get(k).await
    }
    async fn kv_set(
        &self,
        k: &str,
        v: Bytes,
        ttl: Option<Duration>,
        m: SetMode,
    ) -> Result<bool, StateError> {
        self.inner.kv_set(k, v, ttl, m).await
    }
    async fn kv_delete(&self, k: &str) -> Result<bool, StateError> {
        self.inner.kv_delete(k).await
    }
    async fn health(&self) -> Result<(), StateError> {
        self.inner.health().await
    }
}
