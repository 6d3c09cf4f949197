//! The memory backend against the whole StateBackend and KvStore conformance suites, under
//! tokio's paused clock; the race cases again on a multi-threaded runtime, where
//! the tasks run in parallel.

use chat_state_memory::MemoryState;
use chat_testkit::Harness;

mod paused {
    use super::*;

    chat_testkit::state_backend_conformance!(
        #[tokio::test(start_paused = true)]
        async {
            Harness::paused(MemoryState::new())
        }
    );
}

mod kv {
    use super::*;

    chat_testkit::kv_store_conformance!(
        #[tokio::test(start_paused = true)]
        async {
            chat_testkit::KvHarness::paused(MemoryState::new())
        }
    );
}

mod parallel {
    use super::*;

    chat_testkit::race_cases!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async {
            // Real time: races do not wait on the clock. One shard, so every task
            // contends on the same lock.
            Harness::real_time(
                std::sync::Arc::new(MemoryState::with_shards(1)),
                std::time::Duration::from_millis(100),
            )
        }
    );
}

#[test]
fn the_suite_has_at_least_forty_cases() {
    assert!(
        chat_testkit::conformance::CASES.len() >= 40,
        "{}",
        chat_testkit::conformance::CASES.len()
    );
}
