//! The runtime end to end on Redis: two bots — two replicas — share one Redis
//! (each through its own connection pool), and the strategies hold across them.
//! Real time, so the handlers' sleeps are short. Skips like the conformance
//! suite without `REDIS_URL`.

mod common;

chat_testkit::replica_scenarios!({
    let url = common::servers::server_env("REDIS_URL")?;
    let prefix = common::servers::unique_prefix();
    let mut states = Vec::new();
    for _ in 0..2 {
        let state = chat_state_redis::RedisState::builder()
            .url(url.as_str())
            .prefix(prefix.as_str())
            .pool_size(4)
            .build()
            .await
            .unwrap_or_else(|e| panic!("connecting to REDIS_URL: {e}"));
        states.push(state);
    }
    states
});
