//! `chat-ops`: the inspector's operations against a bot's Redis or
//! PostgreSQL store, for the engineer on call. `chat-ops --help` lists them.

#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use chat_core::Inspection;
use std::process::ExitCode;
use std::time::Duration;

use chat_core::{ForceRelease, Platform, ScopeFilter, TenantId};
use chat_ops::{parse_scope, view_json, view_text, views_table};
use chat_state_postgres::PostgresState;
use chat_state_redis::RedisState;
use clap::{Parser, Subcommand};

/// Look inside a chat-rs bot's Redis or PostgreSQL state, and unstick a
/// conversation.
#[derive(Debug, Parser)]
#[command(name = "chat-ops", version)]
struct Cli {
    /// The Redis server (`redis://…`).
    #[arg(long, env = "REDIS_URL", global = true)]
    redis_url: Option<String>,
    /// A Redis Cluster instead: its nodes, comma-separated.
    #[arg(long, env = "REDIS_CLUSTER_URLS", value_delimiter = ',', global = true)]
    redis_cluster_urls: Vec<String>,
    /// The key prefix the bot uses.
    #[arg(long, env = "REDIS_PREFIX", default_value = "chat", global = true)]
    prefix: String,
    /// A PostgreSQL store instead (`postgres://…`).
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,
    /// The PostgreSQL schema the bot uses.
    #[arg(long, env = "DATABASE_SCHEMA", default_value = "chat", global = true)]
    database_schema: String,
    /// The PostgreSQL namespace the bot uses.
    #[arg(
        long,
        env = "DATABASE_NAMESPACE",
        default_value = "chat",
        global = true
    )]
    database_namespace: String,
    /// JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// Which scopes.
#[derive(Debug, clap::Args)]
struct Filter {
    /// Only this platform's (`slack`, `linear`, …).
    #[arg(long)]
    platform: Option<String>,
    /// Only this tenant's (with --platform).
    #[arg(long)]
    tenant: Option<String>,
    /// Only this channel's (with --tenant).
    #[arg(long)]
    channel: Option<String>,
    /// At most this many scopes.
    #[arg(long, default_value_t = 1000)]
    limit: usize,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The busy scopes: held, or with events in their care.
    Scopes(Filter),
    /// One scope in full (`platform:tenant:channel:t:<thread>`, `…:c`, or its JSON).
    Scope {
        /// The scope.
        key: String,
    },
    /// Releases a scope's holder, only if its fence is still `--fence`.
    Release {
        /// The scope.
        key: String,
        /// The fence `chat-ops scope` showed.
        #[arg(long)]
        fence: u64,
    },
    /// Events waiting for a holder, per scope and in total.
    QueueDepth(Filter),
}

impl Filter {
    fn scope_filter(&self) -> Result<ScopeFilter, String> {
        let mut f = ScopeFilter::all();
        if let Some(p) = &self.platform {
            f.platform = Some(Platform::parse(p).map_err(|e| e.to_string())?);
        }
        f.tenant = self.tenant.as_deref().map(TenantId::new);
        f.channel = self.channel.clone();
        Ok(f)
    }
}

/// The store: PostgreSQL when `DATABASE_URL` is set, else Redis.
async fn state(cli: &Cli) -> Result<Box<dyn Inspection>, String> {
    if let Some(url) = &cli.database_url {
        let state = PostgresState::builder()
            .url(url.clone())
            .schema(cli.database_schema.clone())
            .namespace(cli.database_namespace.clone())
            .pool_size(2)
            .timeout(Duration::from_secs(10))
            .build()
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Box::new(state));
    }
    let builder = RedisState::builder()
        .prefix(cli.prefix.clone())
        .timeout(Duration::from_secs(10));
    let builder = if cli.redis_cluster_urls.is_empty() {
        let url = cli
            .redis_url
            .clone()
            .ok_or("set REDIS_URL (or --redis-url), REDIS_CLUSTER_URLS, or DATABASE_URL")?;
        builder.url(url)
    } else {
        builder.cluster(cli.redis_cluster_urls.iter().cloned())
    };
    let state = builder.build().await.map_err(|e| e.to_string())?;
    Ok(Box::new(state))
}

async fn run(cli: Cli) -> Result<String, String> {
    let state = state(&cli).await?;
    match &cli.command {
        Command::Scopes(filter) => {
            let views = state
                .busy_scopes(&filter.scope_filter()?, filter.limit)
                .await
                .map_err(|e| e.to_string())?;
            Ok(if cli.json {
                serde_json::Value::Array(views.iter().map(view_json).collect()).to_string()
            } else {
                views_table(&views)
            })
        }
        Command::Scope { key } => {
            let scope = parse_scope(key)?;
            let view = state
                .inspect_scope(&scope)
                .await
                .map_err(|e| e.to_string())?;
            Ok(match (view, cli.json) {
                (Some(v), true) => view_json(&v).to_string(),
                (Some(v), false) => view_text(&v),
                (None, true) => "null".to_owned(),
                (None, false) => format!("{key}: idle (no holder, nothing waiting)\n"),
            })
        }
        Command::Release { key, fence } => {
            let scope = parse_scope(key)?;
            let released = state
                .force_release(&scope, *fence)
                .await
                .map_err(|e| e.to_string())?;
            let word = if released == ForceRelease::Released {
                "released"
            } else {
                "stale"
            };
            if cli.json {
                return Ok(
                    serde_json::json!({ "scope": key, "fence": fence, "result": word }).to_string(),
                );
            }
            match released {
                ForceRelease::Released => Ok(format!(
                    "released {key} (fence {fence}): a replica's next sweep hands its work over\n"
                )),
                _ => Err(format!(
                    "not released: {key} is no longer held with fence {fence}; nothing changed"
                )),
            }
        }
        Command::QueueDepth(filter) => {
            let views = state
                .busy_scopes(&filter.scope_filter()?, filter.limit)
                .await
                .map_err(|e| e.to_string())?;
            let total: usize = views.iter().map(|v| v.waiting()).sum();
            if cli.json {
                let per: serde_json::Map<String, serde_json::Value> = views
                    .iter()
                    .map(|v| (v.scope.to_string(), v.waiting().into()))
                    .collect();
                return Ok(serde_json::json!({ "total": total, "scopes": per }).to_string());
            }
            let mut out = String::new();
            for v in views.iter().filter(|v| v.waiting() > 0) {
                out.push_str(&format!("{:>7}  {}\n", v.waiting(), v.scope));
            }
            out.push_str(&format!("{total:>7}  total\n"));
            Ok(out)
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(out) => {
            print!("{out}");
            if !out.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chat-ops: {e}");
            ExitCode::FAILURE
        }
    }
}
