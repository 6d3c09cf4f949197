//! [`RedisStateBuilder`]: where the server is, the key prefix, the pool and the
//! timeouts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chat_core::StateError;
use redis::AsyncConnectionConfig;
use redis::aio::ConnectionLike;

use crate::RedisState;
use crate::error::from_redis;
use crate::keys::Keys;
use crate::pool::{Connector, Pools};
use crate::scripts::Scripts;

/// The key prefix when none is given.
pub const DEFAULT_PREFIX: &str = "chat";
/// How many connections the calls share when not told (see
/// [`RedisStateBuilder::pool_size`]).
pub const DEFAULT_POOL_SIZE: usize = 1;
/// The timeout of `admit` (the acknowledgement path) when none is given.
///
/// The runtime answers the platform at its own `ack_timeout` (2.5 s) whatever the
/// backend does, and the delivery carries on after that; this timeout only bounds
/// how long the delivery waits for `admit`'s answer. Longer than the runtime's, so
/// an admit that is slow but succeeds is not abandoned (its script may already
/// have marked the event and granted the lease).
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// The timeout of every other call when none is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
enum Target {
    Unset,
    Single(String),
    Cluster(Vec<String>),
}

/// URLs are shown without their passwords.
impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unset => f.write_str("Unset"),
            Self::Single(url) => f.debug_tuple("Single").field(&redacted(url)).finish(),
            Self::Cluster(urls) => f
                .debug_tuple("Cluster")
                .field(&urls.iter().map(|u| redacted(u)).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// A Redis URL for logs and `Debug`: its password replaced by `redacted`.
/// An URL that does not parse is not shown at all.
pub(crate) fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("redacted"));
            }
            u.to_string()
        }
        Err(_) => "<a Redis URL that does not parse>".to_owned(),
    }
}

/// Configures and connects a [`RedisState`]. Its `Debug` shows URLs without
/// their passwords.
///
/// ```no_run
/// # async fn run() -> Result<(), chat_core::StateError> {
/// use std::time::Duration;
/// use chat_state_redis::RedisState;
///
/// let state = RedisState::builder()
///     .url("redis://127.0.0.1:6379")
///     .prefix("mybot")
///     .pool_size(2)
///     .ack_timeout(Duration::from_millis(800))
///     .build()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisStateBuilder {
    target: Target,
    prefix: String,
    pool_size: usize,
    ack_timeout: Duration,
    timeout: Duration,
}

impl Default for RedisStateBuilder {
    fn default() -> Self {
        Self {
            target: Target::Unset,
            prefix: DEFAULT_PREFIX.to_owned(),
            pool_size: DEFAULT_POOL_SIZE,
            ack_timeout: DEFAULT_ACK_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl RedisStateBuilder {
    /// One Redis server (`redis://[user:password@]host:port[/db]`).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.target = Target::Single(url.into());
        self
    }

    /// A Redis Cluster, reached through any of these nodes (`redis://host:port`);
    /// the client learns the rest of the cluster from them.
    pub fn cluster<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.target = Target::Cluster(urls.into_iter().map(Into::into).collect());
        self
    }

    /// The prefix of every key (default `chat`). Give each bot, or each
    /// environment sharing a server, its own. It must not contain `{` or `}`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How many connections the calls share (default 1). Every call takes
    /// the next one in turn and sends on it at once, whatever is in flight:
    /// concurrent calls go out together, and Redis reads and answers them in
    /// one go, which is what keeps its CPU per call low. More connections
    /// spread the calls thinner (docs/benchmarks.md measures 1, 4 and 16);
    /// raise it only when one socket is measured to be the limit.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// The timeout of `admit`, the call on the acknowledgement path (default
    /// [`DEFAULT_ACK_TIMEOUT`]). Past it `admit` answers [`StateError::Timeout`],
    /// so the delivery can be answered in time for the platform to retry it. It
    /// includes making a connection when none is open.
    pub fn ack_timeout(mut self, timeout: Duration) -> Self {
        self.ack_timeout = timeout;
        self
    }

    /// The timeout of every other call (default 5 s), and of connecting.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Connects: builds the pool, loads the scripts, and checks (with a
    /// `tracing` warning) that the server will not evict keys.
    ///
    /// # Errors
    ///
    /// [`StateError::InvalidRequest`] for a missing or malformed URL, a prefix
    /// with a brace, a zero pool size or timeout; [`StateError::Unavailable`] or
    /// [`StateError::Timeout`] when the server cannot be reached.
    pub async fn build(self) -> Result<RedisState, StateError> {
        if self.prefix.contains(['{', '}']) {
            return Err(StateError::InvalidRequest(
                "the key prefix must not contain `{` or `}`",
            ));
        }
        if self.pool_size == 0 {
            return Err(StateError::InvalidRequest("a pool size of zero"));
        }
        if self.ack_timeout.is_zero() || self.timeout.is_zero() {
            return Err(StateError::InvalidRequest("a zero timeout"));
        }
        let invalid = |_| StateError::InvalidRequest("invalid Redis URL");
        let (pools, nodes) = match &self.target {
            Target::Unset => return Err(StateError::InvalidRequest("no Redis URL given")),
            Target::Single(url) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.timeout))
                    .set_response_timeout(None);
                let client = redis::Client::open(url.as_str()).map_err(invalid)?;
                let connector = Connector::Single { client, config };
                (Pools::new(connector, self.pool_size), Vec::new())
            }
            Target::Cluster(urls) => {
                if urls.is_empty() {
                    return Err(StateError::InvalidRequest("no Redis Cluster URL given"));
                }
                let client = redis::cluster::ClusterClient::new(urls.clone()).map_err(invalid)?;
                (
                    Pools::new(Connector::Cluster(client), self.pool_size),
                    urls.clone(),
                )
            }
        };
        let state = RedisState {
            pools,
            scripts: Arc::new(Scripts::new()),
            keys: Keys::new(&self.prefix),
            ack_timeout: self.ack_timeout,
            timeout: self.timeout,
        };
        tokio::time::timeout(self.timeout, state.start(&nodes))
            .await
            .unwrap_or(Err(StateError::Timeout(self.timeout)))?;
        Ok(state)
    }
}

impl RedisState {
    /// Loads the function library (so each call is one `FCALL`), and
    /// warns when a server may evict keys.
    async fn start(&self, cluster_nodes: &[String]) -> Result<(), StateError> {
        let mut conn = self
            .pools
            .get(self.timeout)
            .await
            .map_err(|e| from_redis(e, self.timeout))?;
        if cluster_nodes.is_empty() {
            check_version(&mut conn, "the server").await?;
            check_eviction(&mut conn, "the server").await;
        } else {
            // Each node has its own configuration: ask every node given.
            for node in cluster_nodes {
                let client = redis::Client::open(node.as_str())
                    .map_err(|_| StateError::InvalidRequest("invalid Redis URL"))?;
                match client.get_multiplexed_async_connection().await {
                    Ok(mut c) => {
                        check_version(&mut c, &redacted(node)).await?;
                        check_eviction(&mut c, &redacted(node)).await;
                    }
                    Err(e) => tracing::warn!(
                        node = %redacted(node),
                        error = %e,
                        "chat-state-redis: could not reach a cluster node to check maxmemory-policy"
                    ),
                }
            }
        }
        // After the version checks: an older server has no FUNCTION.
        self.scripts
            .load_cmd()
            .query_async::<redis::Value>(&mut conn)
            .await
            .map_err(|e| from_redis(e, self.timeout))?;
        Ok(())
    }
}

/// The oldest Redis major version the scripts run on (functions, `PEXPIREAT …
/// GT` / `NX`).
const MIN_MAJOR_VERSION: u32 = 7;

/// A server older than the scripts need: they would fail at their first call.
#[derive(Debug)]
struct TooOld {
    node: String,
    version: String,
}

impl std::fmt::Display for TooOld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs Redis {}; chat-state-redis needs {MIN_MAJOR_VERSION}.0 or newer",
            self.node, self.version
        )
    }
}

impl std::error::Error for TooOld {}

/// `redis_version` of an `INFO server` answer.
fn redis_version(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.trim().strip_prefix("redis_version:"))
}

/// Whether `version` (`major.minor.patch`) is older than the scripts need; a
/// version that does not parse is given the benefit of the doubt.
fn too_old(version: &str) -> bool {
    version
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major < MIN_MAJOR_VERSION)
}

/// Refuses a server older than the scripts need; warns when it does not say.
async fn check_version<C: ConnectionLike + Send>(
    conn: &mut C,
    node: &str,
) -> Result<(), StateError> {
    let reply: redis::RedisResult<String> =
        redis::cmd("INFO").arg("server").query_async(conn).await;
    match reply.as_deref().map(redis_version) {
        Ok(Some(version)) if too_old(version) => Err(StateError::Backend(Box::new(TooOld {
            node: node.to_owned(),
            version: version.to_owned(),
        }))),
        Ok(Some(_)) => Ok(()),
        Ok(None) | Err(_) => {
            tracing::warn!(
                node = %node,
                "chat-state-redis: could not read the server's version (INFO server); \
                 it must be Redis {MIN_MAJOR_VERSION}.0 or newer"
            );
            Ok(())
        }
    }
}

/// Warns unless `maxmemory-policy` is `noeviction` on `node` (a label without
/// secrets): every lease, dedupe mark and
/// slot carries a TTL, so `volatile-*` policies evict exactly the keys that
/// keep handlers exclusive and events single, and `allkeys-*` also drop queued
/// events and fences.
async fn check_eviction<C: ConnectionLike + Send>(conn: &mut C, node: &str) {
    let reply: redis::RedisResult<HashMap<String, String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(conn)
        .await;
    match reply {
        Ok(config) => match config.get("maxmemory-policy").map(String::as_str) {
            Some("noeviction") => {}
            Some(policy) => tracing::warn!(
                node = %node,
                policy = %policy,
                "chat-state-redis: maxmemory-policy can evict keys; an evicted lease lets two \
                 handlers run at once, an evicted dedupe mark runs an event twice, an evicted \
                 queue loses events. Set maxmemory-policy to noeviction"
            ),
            None => tracing::warn!(
                node = %node,
                "chat-state-redis: maxmemory-policy not reported; make sure it is noeviction"
            ),
        },
        Err(e) => tracing::warn!(
            node = %node,
            error = %e,
            "chat-state-redis: could not read maxmemory-policy (CONFIG may be disabled); \
             make sure it is noeviction"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_redis_7_are_told_apart() {
        let info = "# Server\r\nredis_version:6.2.14\r\nredis_mode:standalone\r\n";
        assert_eq!(redis_version(info), Some("6.2.14"));
        assert!(too_old("6.2.14"));
        assert!(!too_old("7.0.15"));
        assert!(!too_old("7.4.1"));
        assert!(!too_old("8.0.0"));
        // Not a version: not refused on a guess.
        assert!(!too_old("unknown"));
        assert_eq!(redis_version("# Server\r\nredis_mode:standalone\r\n"), None);
    }

    #[test]
    fn urls_are_shown_without_their_passwords() {
        assert_eq!(
            redacted("redis://user:s3cret@redis.internal:6379/0"),
            "redis://user:redacted@redis.internal:6379/0"
        );
        assert_eq!(
            redacted("redis://:s3cret@10.0.0.1:6379"),
            "redis://:redacted@10.0.0.1:6379"
        );
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert!(!redacted("redis://u:s3cret@[::1").contains("s3cret"));
        let builder = RedisState::builder()
            .url("rediss://bot:s3cret@redis.internal:6380")
            .prefix("p");
        let shown = format!("{builder:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("redis.internal"), "{shown}");
        let cluster =
            RedisState::builder().cluster(["redis://:s3cret@a:7000", "redis://:s3cret@b:7000"]);
        assert!(!format!("{cluster:?}").contains("s3cret"));
    }
}
