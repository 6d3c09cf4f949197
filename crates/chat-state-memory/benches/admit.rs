//! The memory backend's `admit`: the one state call on the ack path.
//!
//! `cargo bench -p chat-state-memory --bench admit` (or `cargo xtask bench micro`).

use chat_core::Coordination;
use std::sync::atomic::{AtomicU64, Ordering};

use chat_core::{AdmitRequest, Concurrency, Decision, Platform, ThreadRef};
use chat_state_memory::MemoryState;
use chat_testkit::EventBuilder;
use divan::{Bencher, black_box};

fn main() {
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A mention with a fresh id on thread `thread` (channel `C{thread % 8}`).
fn request(thread: u64) -> AdmitRequest {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let t = ThreadRef::new(
        Platform::new("test"),
        "T1",
        format!("C{}", thread % 8),
        format!("{thread}.0"),
    );
    let event = EventBuilder::new(t.clone())
        .id(&format!("e{n}"))
        .mention("hello")
        .build();
    AdmitRequest::new(event, t.thread_scope(), Concurrency::queue())
}

/// A new event on an idle thread: dedupe mark, subscription check, lease
/// granted; then `finish` releases the scope (two calls).
#[divan::bench]
fn admit_then_finish(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = MemoryState::new();
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

/// A new event on a busy thread: queued behind the holder (a full queue evicts
/// its oldest entry, so the queue stays bounded).
#[divan::bench]
fn admit_queued(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = MemoryState::new();
    let held = rt.block_on(state.admit(request(0)));
    assert!(
        matches!(held.map(|a| a.decision), Ok(Decision::Run(_))),
        "the first admit should get the lease"
    );
    bencher
        .with_inputs(|| request(0))
        .bench_local_values(|req| black_box(rt.block_on(state.admit(req)).is_ok()));
}

/// A retry of an event already seen: the dedupe fast path.
#[divan::bench]
fn admit_duplicate(bencher: Bencher<'_, '_>) {
    let rt = runtime();
    let state = MemoryState::new();
    let first = request(1);
    let _ = rt.block_on(state.admit(first.clone()));
    bencher
        .with_inputs(|| first.clone())
        .bench_local_values(|req| black_box(rt.block_on(state.admit(req)).is_ok()));
}
