//! # chat-state-postgres
//!
//! chat-rs's state on PostgreSQL, for teams that run PostgreSQL and no
//! Redis. [`PostgresState`] connects through a pool, creates and migrates
//! its tables and functions in a schema of its own (versioned migrations,
//! safe to run from several replicas at once), and judges every expiry by
//! the database server's clock, read in one place (`now_ms()`), so replicas
//! with skewed clocks agree.
//!
//! It implements the whole [`StateBackend`](chat_core::StateBackend)
//! contract — admission for every strategy, leases with fences, hand-off on
//! finish, claims and the sweep, slots, dedupe marks, subscriptions,
//! inspection and fenced force-release, and the [`KvStore`](chat_core::KvStore)
//! installations and durable runs keep their records in — and passes
//! `chat-testkit`'s conformance suites against a real server. Each call is
//! one PL/pgSQL function call: one transaction and one round trip, so the
//! acknowledgement path costs exactly one, as on Redis.
//!
//! ```no_run
//! # async fn run() -> Result<(), chat_core::StateError> {
//! use chat_core::{KvStore, SetMode};
//! use chat_state_postgres::PostgresState;
//!
//! let state = PostgresState::builder()
//!     .url("postgres://postgres@127.0.0.1:5432/postgres")
//!     .namespace("mybot")
//!     .build()
//!     .await?;
//! state.set("greeting", "hello".into(), None, SetMode::Always).await?;
//! assert_eq!(state.get("greeting").await?.as_deref(), Some(&b"hello"[..]));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod builder;
mod error;
mod kv;
mod migrate;
mod protocol;
mod state;

pub use builder::{
    DEFAULT_NAMESPACE, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA, DEFAULT_TIMEOUT, PostgresStateBuilder,
};
pub use migrate::SCHEMA_VERSION;
pub use state::PostgresState;
