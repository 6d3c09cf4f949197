//! The whole StateBackend conformance suite against a real Redis server and a
//! real Redis Cluster, in real time (Redis judges expiry by its own clock), and
//! the race cases again on the multi-threaded runtime.
//!
//! A case skips (with a notice) when its server is not configured; see
//! `common/mod.rs`.

mod common;

mod single {
    chat_testkit::state_backend_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::single().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

mod cluster {
    chat_testkit::state_backend_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::cluster().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

mod single_kv {
    chat_testkit::kv_store_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::single_kv().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

mod cluster_kv {
    chat_testkit::kv_store_conformance!(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        match super::common::cluster_kv().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}

/// The race cases on a current-thread runtime too, where the tasks interleave
/// at every await instead of running in parallel.
mod single_interleaved {
    chat_testkit::race_cases!(
        #[tokio::test]
        match super::common::single().await {
            Some(h) => std::future::ready(h),
            None => return,
        }
    );
}
