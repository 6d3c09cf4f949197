//! `state-bytes [N]`: what each delivery leaves in the state backend for its
//! dedupe TTL. Admits `N` (default 20,000) Slack mentions in distinct threads
//! the way the ack path does (`admit`, then `finish` when the handler ends),
//! and prints one JSON line:
//!
//! * `memory_bytes_per_delivery`: heap bytes the memory backend holds per
//!   delivery once the one-minute finish memos lapsed (dhat's allocator, on
//!   the paused clock); `…_with_memos`: right after the deliveries;
//! * `redis_marks_bytes_per_delivery`: Redis `used_memory` growth per
//!   delivery on a throwaway `redis-server` of its own, once the finish memos
//!   are gone (what stays for the dedupe TTL): the larger of all deliveries in
//!   one channel (one hash per hour, Redis's general encoding) and spread over
//!   1,000 channels (many small hashes, its compact one);
//!   `redis_bytes_per_delivery`: with the memos, one channel;
//! * `redis_mb_per_sustained_delivery_per_s`: the marks' bytes × how long a
//!   mark is held (Slack's dedupe TTL and half an hour, the hourly hashes'
//!   mean overhang) — the Redis a steady rate of one delivery a second holds.

#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::time::Duration;

use chat_core::{AdmitRequest, Concurrency, Decision, Platform, StateBackend, ThreadRef};
use chat_state_memory::MemoryState;
use chat_state_redis::RedisState;
use chat_test_redis::RedisServer;
use chat_testkit::EventBuilder;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The `n`th delivery: a mention in a thread of its own, in one of `channels`
/// channels, with the ids a real Slack workspace has.
fn request(n: usize, channels: usize) -> AdmitRequest {
    let ts = format!("17961335{:02}.{:06}", n / 1_000_000, n % 1_000_000);
    let channel = format!("C{:08}", n % channels.max(1));
    let thread = ThreadRef::new(Platform::SLACK, "T0BENCH01", &channel, &ts);
    let event = EventBuilder::new(thread.clone())
        .id(&format!("Ev{n:08}"))
        .dedupe(&format!("{channel}:{ts}"))
        .mention("hello")
        .build();
    AdmitRequest::new(event, thread.thread_scope(), Concurrency::Drop)
        .dedupe_ttl(chat_slack::DEDUPE_TTL)
}

/// Deliveries `from..to` over `channels` channels, each admitted and finished.
async fn deliver(
    state: &dyn StateBackend,
    from: usize,
    to: usize,
    channels: usize,
) -> Result<(), String> {
    for i in from..to {
        let admission = state
            .admit(request(i, channels))
            .await
            .map_err(|e| e.to_string())?;
        if let Decision::Run(lease) = admission.decision {
            state.finish(&lease).await.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn used_memory(redis: &RedisServer) -> Result<u64, String> {
    redis
        .info("memory", "used_memory")
        .map_err(|e| e.to_string())
}

/// The memory backend's heap bytes per delivery (dhat), (with the finish
/// memos, settled: once they lapsed), on the paused clock.
async fn memory(n: usize) -> Result<(f64, f64), String> {
    tokio::time::pause();
    let state = MemoryState::new();
    deliver(&state, 0, 1, 1).await?;
    let before = dhat::HeapStats::get().curr_bytes;
    deliver(&state, 1, n + 1, 1).await?;
    let busy = dhat::HeapStats::get().curr_bytes;
    // A minute on, the memos have lapsed; the next delivery purges them.
    tokio::time::advance(Duration::from_secs(61)).await;
    deliver(&state, n + 1, n + 2, 1).await?;
    let settled = dhat::HeapStats::get().curr_bytes;
    tokio::time::resume();
    let per = |bytes: usize| bytes.saturating_sub(before) as f64 / n as f64;
    Ok((per(busy), per(settled)))
}

/// Redis `used_memory` growth per delivery over `channels` channels, on a
/// server of its own: (with the finish memos, marks only), and the key count.
async fn redis(n: usize, channels: usize) -> Result<(f64, f64, u64), String> {
    let redis = RedisServer::start().map_err(|e| e.to_string())?;
    let state = RedisState::builder()
        .url(redis.url())
        .prefix("chat")
        .build()
        .await
        .map_err(|e| e.to_string())?;
    deliver(&state, 0, 1, channels).await?;
    let before = used_memory(&redis)?;
    deliver(&state, 1, n + 1, channels).await?;
    let after = used_memory(&redis)?;
    let keys = redis.dbsize().map_err(|e| e.to_string())?;
    // The finish memos go after a minute; drop them now to see the marks alone.
    for key in redis.keys("chat:{*}:a:*").map_err(|e| e.to_string())? {
        redis
            .command(&["UNLINK", &key])
            .map_err(|e| e.to_string())?;
    }
    let marks_only = used_memory(&redis)?;
    let per = |bytes: u64| bytes.saturating_sub(before) as f64 / n as f64;
    Ok((per(after), per(marks_only), keys))
}

async fn run(n: usize) -> Result<String, String> {
    let (memory_busy, memory_settled) = memory(n).await?;
    let (with_memos, marks, keys) = redis(n, 1).await?;
    let (_, spread, _) = redis(n, 1_000).await?;
    // A mark stays until the last mark of its hour expires: half an hour
    // past its own TTL on average.
    let held = chat_slack::DEDUPE_TTL.as_secs_f64() + 1_800.0;
    let worst = marks.max(spread);
    Ok(serde_json::json!({
        "deliveries": n,
        "memory_bytes_per_delivery": memory_settled.round(),
        "memory_bytes_per_delivery_with_memos": memory_busy.round(),
        "redis_bytes_per_delivery": with_memos.round(),
        "redis_marks_bytes_per_delivery": worst.round(),
        "redis_marks_bytes_one_channel": marks.round(),
        "redis_marks_bytes_1000_channels": spread.round(),
        "redis_keys": keys,
        "slack_dedupe_ttl_s": chat_slack::DEDUPE_TTL.as_secs_f64(),
        "mark_held_s": held,
        "redis_mb_per_sustained_delivery_per_s": (worst * held / 1e6 * 100.0).round() / 100.0,
    })
    .to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let _heap = dhat::Profiler::builder().testing().build();
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    match run(n).await {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("state-bytes: {e}");
            ExitCode::FAILURE
        }
    }
}
