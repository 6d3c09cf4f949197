//! Redis and pool failures as [`StateError`]s.

use std::time::Duration;

use chat_core::StateError;
use redis::RedisError;

/// Whether the connection that produced the error should leave its slot.
///
/// A reply that does not convert (`ErrorKind::Parse`, which redis-rs would
/// reconnect for) leaves it in place: the connection is shared, and a
/// stream that really is corrupt ends the connection's driver, whose next
/// calls fail as dropped.
pub(crate) fn breaks_connection(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_timeout()
        || (e.is_unrecoverable_error() && e.kind() != redis::ErrorKind::Parse)
}

/// A Redis error: unreachable, timed out, or the server's own error (a script
/// error, a key of the wrong type, `CROSSSLOT`, …).
pub(crate) fn from_redis(e: RedisError, timeout: Duration) -> StateError {
    if e.is_timeout() {
        StateError::Timeout(timeout)
    } else if e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_cluster_error()
        || e.is_unrecoverable_error()
    {
        StateError::Unavailable(Box::new(e))
    } else {
        StateError::Backend(Box::new(e))
    }
}

/// A reply of a shape the scripts never send.
pub(crate) fn bad_reply(what: &'static str) -> StateError {
    StateError::Codec(what.into())
}
