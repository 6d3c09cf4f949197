//! PostgreSQL and pool failures as [`StateError`]s.

use std::time::Duration;

use chat_core::StateError;
use deadpool_postgres::PoolError;

/// A PostgreSQL error: the connection's (unreachable, closed) or the
/// server's own (a constraint, a function's exception).
pub(crate) fn from_pg(e: tokio_postgres::Error) -> StateError {
    if e.is_closed() || e.as_db_error().is_none() {
        StateError::Unavailable(Box::new(e))
    } else {
        StateError::Backend(Box::new(e))
    }
}

/// A failure to get a connection from the pool.
pub(crate) fn from_pool(e: PoolError, timeout: Duration) -> StateError {
    match e {
        PoolError::Backend(e) => from_pg(e),
        PoolError::Timeout(_) => StateError::Timeout(timeout),
        other => StateError::Unavailable(Box::new(other)),
    }
}
