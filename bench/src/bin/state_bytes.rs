//! `state-bytes [N]`: what each delivery leaves in the state backend for its
//! dedupe TTL. Admits `N` (default 20,000) Slack mentions in distinct threads
//! the way the ack path does (`admit`, then `finish` when the handler ends),
//! and prints one JSON line:
//!
//! * `memory_bytes_per_delivery`: heap bytes the memory backend holds
//!   afterwards, per delivery (counted by dhat's allocator);
//! * `redis_bytes_per_delivery`: Redis `used_memory` growth per delivery, on a
//!   throwaway `redis-server` of its own; `redis_marks_bytes_per_delivery`:
//!   the same once the one-minute finish memos are gone (what stays for the
//!   dedupe TTL);
//! * `redis_mb_per_sustained_delivery_per_s`: the marks' bytes × Slack's
//!   dedupe TTL — the Redis a steady rate of one delivery a second holds.

#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use chat_core::{AdmitRequest, Concurrency, Decision, Platform, StateBackend, ThreadRef};
use chat_state_memory::MemoryState;
use chat_state_redis::RedisState;
use chat_test_redis::RedisServer;
use chat_testkit::EventBuilder;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The `n`th delivery: a mention in a thread of its own, with the ids a real
/// Slack workspace has.
fn request(n: usize) -> AdmitRequest {
    let ts = format!("17961335{:02}.{:06}", n / 1_000_000, n % 1_000_000);
    let thread = ThreadRef::new(Platform::SLACK, "T0BENCH01", "C00000001", &ts);
    let event = EventBuilder::new(thread.clone())
        .id(&format!("Ev{n:08}"))
        .dedupe(&format!("C00000001:{ts}"))
        .mention("hello")
        .build();
    AdmitRequest::new(event, thread.thread_scope(), Concurrency::Drop)
        .dedupe_ttl(chat_slack::DEDUPE_TTL)
}

async fn deliver(state: &dyn StateBackend, n: usize) -> Result<(), String> {
    for i in 0..n {
        let admission = state.admit(request(i)).await.map_err(|e| e.to_string())?;
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

async fn run(n: usize) -> Result<String, String> {
    // The memory backend: heap bytes held after the deliveries.
    let memory = {
        let state = MemoryState::new();
        deliver(&state, 1).await?;
        let before = dhat::HeapStats::get().curr_bytes;
        deliver(&state, n + 1).await?;
        let after = dhat::HeapStats::get().curr_bytes;
        after.saturating_sub(before) as f64 / n as f64
    };

    // Redis: used_memory growth on a server of its own.
    let redis = RedisServer::start().map_err(|e| e.to_string())?;
    let state = RedisState::builder()
        .url(redis.url())
        .prefix("chat")
        .build()
        .await
        .map_err(|e| e.to_string())?;
    deliver(&state, 1).await?;
    let before = used_memory(&redis)?;
    deliver(&state, n + 1).await?;
    let after = used_memory(&redis)?;
    let keys = redis.dbsize().map_err(|e| e.to_string())?;
    // The finish memos go after a minute; drop them now to see the marks alone.
    for key in redis.keys("chat:*:acked:*").map_err(|e| e.to_string())? {
        redis
            .command(&["UNLINK", &key])
            .map_err(|e| e.to_string())?;
    }
    let marks_only = used_memory(&redis)?;
    let per = |bytes: u64| bytes.saturating_sub(before) as f64 / n as f64;
    let marks = per(marks_only);
    let ttl = chat_slack::DEDUPE_TTL.as_secs_f64();
    Ok(serde_json::json!({
        "deliveries": n,
        "memory_bytes_per_delivery": memory.round(),
        "redis_bytes_per_delivery": per(after).round(),
        "redis_marks_bytes_per_delivery": marks.round(),
        "redis_keys": keys,
        "slack_dedupe_ttl_s": ttl,
        "redis_mb_per_sustained_delivery_per_s": (marks * ttl / 1e6 * 100.0).round() / 100.0,
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
