//! chat-testkit's conformance suites against a real PostgreSQL, in real
//! time (expiry is judged by the server's clock).

mod common;

mod kv {
    chat_testkit::kv_store_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::kv().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

mod state {
    chat_testkit::state_backend_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::harness().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

/// The race cases on a current-thread runtime too, where the tasks
/// interleave at every await instead of running in parallel.
mod interleaved {
    chat_testkit::race_cases!(
        #[tokio::test]
        match super::common::harness().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}
