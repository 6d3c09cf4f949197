//! [`PostgresStateBuilder`].

use std::time::Duration;

use chat_core::StateError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::error::from_pool;
use crate::migrate::{migrate, valid_schema};
use crate::state::{PostgresState, Sql};

/// The schema when none is given.
pub const DEFAULT_SCHEMA: &str = "chat";
/// The namespace when none is given.
pub const DEFAULT_NAMESPACE: &str = "chat";
/// The pool size when none is given.
pub const DEFAULT_POOL_SIZE: usize = 16;
/// The timeout of every call when none is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A database URL for logs and `Debug`: its password replaced by
/// `redacted`. An URL without `user:password@` is shown as is.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<not a URL>".to_owned();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:redacted@{host}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Configures and connects a [`PostgresState`]: it connects, and brings the
/// schema up to date (versioned migrations, safe to run from several
/// replicas at once). Its `Debug` shows the URL without its password.
///
/// ```no_run
/// # async fn run() -> Result<(), chat_core::StateError> {
/// use std::time::Duration;
/// use chat_state_postgres::PostgresState;
///
/// let state = PostgresState::builder()
///     .url("postgres://bot@db.internal/bot")
///     .schema("chat")
///     .namespace("mybot")
///     .pool_size(32)
///     .timeout(Duration::from_secs(2))
///     .build()
///     .await?;
/// # let _ = state;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStateBuilder {
    url: Option<String>,
    schema: String,
    namespace: String,
    pool_size: usize,
    timeout: Duration,
}

impl Default for PostgresStateBuilder {
    fn default() -> Self {
        Self {
            url: None,
            schema: DEFAULT_SCHEMA.to_owned(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            pool_size: DEFAULT_POOL_SIZE,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for PostgresStateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStateBuilder")
            .field("url", &self.url.as_deref().map(redact))
            .field("schema", &self.schema)
            .field("namespace", &self.namespace)
            .field("pool_size", &self.pool_size)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl PostgresStateBuilder {
    /// The database (`postgres://user:password@host:port/database`; the
    /// options of libpq's connection strings are understood).
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// The schema the tables and functions live in, default `chat`: 1-63
    /// characters of `a-z 0-9 _`, not starting with a digit.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The namespace every row carries, default `chat`: several bots (or
    /// test runs) may share one schema, each seeing only its own state.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The most connections held, default 16.
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// How long a call may take, connection included, default 5 s; past it
    /// the call is [`StateError::Timeout`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Connects and migrates.
    ///
    /// # Errors
    /// [`StateError::InvalidRequest`] for settings out of range (no URL, a
    /// schema name that is not a plain identifier, a zero pool); the
    /// database's refusal or unreachability.
    pub async fn build(self) -> Result<PostgresState, StateError> {
        let url = self
            .url
            .as_deref()
            .ok_or(StateError::InvalidRequest("a database URL is required"))?;
        if !valid_schema(&self.schema) {
            return Err(StateError::InvalidRequest(
                "the schema must be 1-63 characters of a-z, 0-9 and _, not starting with a digit",
            ));
        }
        if self.namespace.is_empty() {
            return Err(StateError::InvalidRequest(
                "the namespace must not be empty",
            ));
        }
        if self.pool_size == 0 {
            return Err(StateError::InvalidRequest(
                "the pool size must be at least 1",
            ));
        }
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|_| StateError::InvalidRequest("the database URL does not parse"))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(self.pool_size)
            .wait_timeout(Some(self.timeout))
            .create_timeout(Some(self.timeout))
            .recycle_timeout(Some(self.timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StateError::Backend(Box::new(e)))?;
        let mut client = tokio::time::timeout(self.timeout, pool.get())
            .await
            .map_err(|_| StateError::Timeout(self.timeout))?
            .map_err(|e| from_pool(e, self.timeout))?;
        let applied = tokio::time::timeout(self.timeout * 4, migrate(&mut client, &self.schema))
            .await
            .map_err(|_| StateError::Timeout(self.timeout * 4))??;
        if !applied.is_empty() {
            tracing::info!(schema = %self.schema, versions = ?applied, "chat-state-postgres: migrated");
        }
        drop(client);
        Ok(PostgresState {
            pool,
            sql: Sql::new(&self.schema),
            namespace: self.namespace,
            url: redact(url),
            timeout: self.timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://bot:s3cret@db:5432/bot"),
            "postgres://bot:redacted@db:5432/bot"
        );
        assert_eq!(redact("postgres://bot@db/bot"), "postgres://bot@db/bot");
        assert_eq!(redact("host=db"), "<not a URL>");
    }
}
