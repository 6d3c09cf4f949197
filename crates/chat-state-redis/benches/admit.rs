//! The Redis admit round trip: one `FCALL` per `admit`.
//!
//! Needs `REDIS_URL` pointing at a Redis on loopback (`cargo xtask bench micro`
//! starts a throwaway one); without it the benchmark skips with a notice.
//! Keys live under a prefix of their own and expire within a minute.
//!
//! `REDIS_URL=redis://127.0.0.1:6379 cargo bench -p chat-state-redis --bench admit`

// The skip notice is the point: a skipped benchmark must be seen.
#![allow(clippy::print_stderr)]

use chat_core::Coordination;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chat_core::{AdmitRequest, Concurrency, Decision, Platform, ThreadRef};
use chat_state_redis::RedisState;
use chat_testkit::EventBuilder;
use divan::{Bencher, black_box};

/// The Redis to use: `REDIS_URL`, when it names a loopback host.
fn redis_url() -> Option<String> {
    let url = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty())?;
    let host = url
        .strip_prefix("redis://")?
        .rsplit('@')
        .next()?
        .split(['/', ':'])
        .next()?
        .to_owned();
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then_some(url)
}

fn main() {
    if redis_url().is_none() {
        eprintln!(
            "\n!!! SKIPPED: set REDIS_URL to a Redis on loopback (redis://127.0.0.1:PORT) \
             to run the Redis admit benchmark.\n"
        );
        return;
    }
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

fn state(rt: &tokio::runtime::Runtime) -> RedisState {
    let url = redis_url().unwrap_or_default();
    rt.block_on(
        RedisState::builder()
            .url(url)
            .prefix(format!("chatbench{}", std::process::id()))
            .build(),
    )
    .unwrap_or_else(|e| panic!("RedisState: {e}"))
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A mention with a fresh id on thread `thread`, with short TTLs.
fn request(thread: u64) -> AdmitRequest {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let t = ThreadRef::new(Platform::new("test"), "T1", "C1", format!("{thread}.0"));
    let event = EventBuilder::new(t.clone())
        .id(&format!("e{n}"))
        .mention("hello")
        .build();
    AdmitRequest::new(event, t.thread_scope(), Concurrency::queue())
        .dedupe_ttl(Duration::from_secs(60))
        .lease_ttl(Duration::from_secs(10))
}

/// A new event on an idle thread: one `FCALL` (lease granted), then `finish`
/// (a second one) to release the scope.
#[divan::bench]
fn admit_then_finish(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = state(&rt);
    bencher
        .with_inputs(|| request(NEXT.load(Ordering::Relaxed)))
        .bench_local_values(|req| {
            rt.block_on(async {
                if let Ok(a) = state.admit(req).await
                    && let Decision::Run(lease) = a.decision
                {
                    black_box(state.finish(&lease).await.is_ok());
                }
            });
        });
}

/// One admit round trip: a new event on a busy thread, queued.
#[divan::bench]
fn admit_queued(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = state(&rt);
    let busy = u64::MAX / 2 + u64::from(std::process::id());
    let _ = rt.block_on(state.admit(request(busy)));
    bencher
        .with_inputs(|| request(busy))
        .bench_local_values(|req| black_box(rt.block_on(state.admit(req)).is_ok()));
}

/// One admit round trip on the dedupe fast path (a retry).
#[divan::bench]
fn admit_duplicate(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = state(&rt);
    let first = request(1);
    let _ = rt.block_on(state.admit(first.clone()));
    bencher
        .with_inputs(|| first.clone())
        .bench_local_values(|req| black_box(rt.block_on(state.admit(req)).is_ok()));
}

/// 64 admits in flight at once on the connection pool (new events on idle
/// threads), as a busy ack path issues them: throughput per admit.
#[divan::bench]
fn admit_64_concurrent(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = state(&rt);
    bencher
        .counter(divan::counter::ItemsCount::new(64usize))
        .with_inputs(|| {
            let base = NEXT.load(Ordering::Relaxed);
            (0..64).map(|i| request(base + i)).collect::<Vec<_>>()
        })
        .bench_local_values(|reqs| {
            rt.block_on(async {
                let admits = reqs.into_iter().map(|r| state.admit(r));
                black_box(futures_util::future::join_all(admits).await.len())
            })
        });
}
