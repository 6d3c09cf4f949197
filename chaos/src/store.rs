//! The scenario's state store: a throwaway Redis or PostgreSQL server, the
//! settings that put the replicas on it, the faults it can suffer, and the
//! work it still holds after quiescence.

use chat_core::{Inspection, ScopeFilter};
use chat_state_postgres::PostgresState;
use chat_test_postgres::PostgresServer;

use crate::cluster::Redis;

/// Which store the replicas share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `chat-state-redis` on one Redis.
    Redis,
    /// `chat-state-postgres` on one PostgreSQL.
    Postgres,
}

/// A running store of either kind.
#[derive(Debug)]
pub enum Store {
    /// A Redis server.
    Redis(Redis),
    /// A PostgreSQL server.
    Postgres(PostgresServer),
}

/// The Redis keys that hold a lease or work in a bot's care.
const REDIS_WORK: [&str; 12] = [
    ":lease:",
    ":run:",
    ":runitems:",
    ":outbox:",
    ":wthreads:",
    ":queue:",
    ":pending:",
    ":burst:",
    ":burstmeta:",
    ":slots:",
    ":slotwait:",
    ":slotruns:",
];

impl Store {
    /// Starts a throwaway server of `backend`'s kind.
    pub fn start(backend: Backend) -> Result<Self, String> {
        match backend {
            Backend::Redis => Redis::start()
                .map(Self::Redis)
                .map_err(|e| format!("redis: {e}")),
            Backend::Postgres => PostgresServer::start()
                .map(Self::Postgres)
                .map_err(|e| format!("postgres: {e}")),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        match self {
            Self::Redis(r) => r.port(),
            Self::Postgres(p) => p.port(),
        }
    }

    /// A replica's settings for this store reached at `port` (its own, or
    /// a proxy's), its keys or rows under `namespace`, every state call
    /// bounded at 5 s.
    pub fn env(&self, port: u16, namespace: &str) -> Vec<(String, String)> {
        let v: [(&str, String); 3] = match self {
            Self::Redis(_) => [
                ("REDIS_URL", format!("redis://127.0.0.1:{port}")),
                ("REDIS_PREFIX", namespace.to_owned()),
                ("REDIS_ACK_TIMEOUT_MS", "5000".to_owned()),
            ],
            Self::Postgres(_) => [
                (
                    "DATABASE_URL",
                    format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                ),
                ("DATABASE_NAMESPACE", namespace.to_owned()),
                ("DATABASE_TIMEOUT_MS", "5000".to_owned()),
            ],
        };
        v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// SIGSTOP: the server stops answering; connections stay open.
    pub fn stop(&self) -> Result<(), String> {
        match self {
            Self::Redis(r) => r.stop().map_err(|e| e.to_string()),
            Self::Postgres(p) => p.pause().map_err(|e| e.to_string()),
        }
    }

    /// SIGCONT after [`stop`](Self::stop).
    pub fn resume(&self) -> Result<(), String> {
        match self {
            Self::Redis(r) => r.resume().map_err(|e| e.to_string()),
            Self::Postgres(p) => p.resume().map_err(|e| e.to_string()),
        }
    }

    /// Writes refused for `ms` (Redis's `CLIENT PAUSE … WRITE`); PostgreSQL
    /// has no such switch.
    pub fn pause_writes(&self, ms: u64) -> Result<(), String> {
        match self {
            Self::Redis(r) => r.pause_writes(ms).map_err(|e| e.to_string()),
            Self::Postgres(_) => Err("PostgreSQL cannot pause writes alone".to_owned()),
        }
    }

    /// The server crashes (Redis killed, PostgreSQL stopped `immediate`)
    /// and comes back after `down_ms`: Redis empty, PostgreSQL with every
    /// committed transaction.
    pub async fn crash_and_restart(&mut self, down_ms: u64) -> Result<(), String> {
        match self {
            Self::Redis(r) => {
                tokio::task::block_in_place(|| r.restart_empty()).map_err(|e| e.to_string())
            }
            Self::Postgres(p) => {
                tokio::task::block_in_place(|| p.stop()).map_err(|e| e.to_string())?;
                tokio::time::sleep(std::time::Duration::from_millis(down_ms)).await;
                tokio::task::block_in_place(|| p.restart()).map_err(|e| e.to_string())
            }
        }
    }

    /// What still holds a lease or work under `namespace`: Redis keys, or
    /// PostgreSQL scopes that are not idle.
    pub async fn leftover(&self, namespace: &str) -> Result<Vec<String>, String> {
        match self {
            Self::Redis(r) => Ok(r
                .keys(&format!("{namespace}:*"))
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|k| REDIS_WORK.iter().any(|p| k.contains(p)))
                .collect()),
            Self::Postgres(p) => {
                let state = PostgresState::builder()
                    .url(p.url())
                    .namespace(namespace)
                    .pool_size(1)
                    .build()
                    .await
                    .map_err(|e| e.to_string())?;
                let busy = state
                    .busy_scopes(&ScopeFilter::all(), 100)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(busy.iter().map(|v| format!("{v:?}")).collect())
            }
        }
    }
}
