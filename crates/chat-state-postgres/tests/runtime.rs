//! The runtime end to end on PostgreSQL: two bots — two replicas — share
//! one database (each through its own connection pool), and the strategies
//! hold across them. Real time, so the handlers' sleeps are short. Skips
//! like the conformance suite without `DATABASE_URL`.

mod common;

chat_testkit::replica_scenarios!({
    let namespace = chat_test_postgres::unique_schema();
    let mut states = Vec::new();
    for _ in 0..2 {
        states.push(common::state_in(&namespace).await?);
    }
    states
});
