//! echo-bot's settings: each one a flag and an environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use chat_runtime::{
    AdmissionOptions, BurstMode, BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions,
    Dispatch, DispatchOptions, LeaseOptions, QueueOptions, RecoveryOptions, RetentionOptions,
    RuntimeOptions, ShutdownMode, TimeoutOptions,
};
use clap::{Parser, ValueEnum};

/// An echo bot for Slack, Linear, Telegram and WhatsApp on chat-rs: it
/// echoes mentions, DMs and messages in subscribed threads (with everything
/// it skipped), slash commands (Telegram's `/echo hi` too) and Linear agent
/// sessions. A Telegram group or private chat and a WhatsApp chat are one
/// conversation each (channel scope): a mention there, any WhatsApp
/// message, or a Telegram private message subscribes the whole chat. A turn whose text (after the mention) starts with
/// `card: <title>` gets a card (the title, the author's name, an `echo-again`
/// button that posts `again: <title>`); `stream: <words…>` streams the words
/// one by one into `echo: <words…>`; `history:` answers `history: N`, the
/// number of earlier messages in the thread; `file: <text>` uploads `echo.txt`
/// holding the text; `attach:` with files attached answers `attach: <name>
/// <size> <sha256>` for each, after downloading it. An edit of a message
/// that mentions it (or of a DM, or in a thread it follows) is answered
/// `edited: <new text>`. `/echo-form` opens a modal whose submission posts
/// `form: <value>` to the command's channel; a reaction added to a message is
/// answered `reaction: <emoji>` in its thread. In a Slack assistant thread
/// it sets suggested prompts and echoes what is asked; its App Home shows
/// `Messages answered: N` (by this process, in the workspace). `/echo-later <seconds> <text>` schedules `<text>`
/// in the command's channel. With NOTIFY_TOKEN set, `POST /notify`
/// (`Authorization: Bearer <NOTIFY_TOKEN>`, a JSON body `{"platform",
/// "tenant", "channel", "thread"?, "text", "key"?}`, or the key in an
/// `Idempotency-Key` header) posts `text` there proactively, once per key.
/// ECHO_DELAY_MS delays every handler (turns, slash commands, clicks,
/// reactions, modal submissions, assistant threads, App Home). An adapter
/// whose secret is not set is not mounted.
#[derive(Debug, Clone, Parser)]
#[command(name = "echo-bot", version)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, env = "BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,

    /// Slack signing secret; without it Slack is not mounted.
    #[arg(long, env = "SLACK_SIGNING_SECRET", hide_env_values = true)]
    pub slack_signing_secret: Option<String>,
    /// Slack bot token (xoxb-…); not used in installation mode.
    #[arg(long, env = "SLACK_BOT_TOKEN", hide_env_values = true)]
    pub slack_bot_token: Option<String>,
    /// The bot's Slack user id; learned from auth.test when unset. Not used
    /// in installation mode (each installation has its own).
    #[arg(long, env = "SLACK_BOT_USER_ID")]
    pub slack_bot_user_id: Option<String>,
    /// Slack Web API base URL.
    #[arg(long, env = "SLACK_API_URL")]
    pub slack_api_url: Option<String>,

    /// Installation mode for Slack: serve every workspace that installed the
    /// app, each with its own token, instead of one SLACK_BOT_TOKEN (not used
    /// then). Installations are stored encrypted in the state backend (memory
    /// or Redis); needs INSTALLATION_KEYS.
    #[arg(long, env = "ECHO_INSTALLATIONS", default_value_t = false)]
    pub installations: bool,
    /// Installation mode: the keys installations are encrypted with,
    /// comma-separated `id:<64 hex>` entries (`openssl rand -hex 32`), the
    /// current key first, then older keys that still decrypt.
    #[arg(long, env = "INSTALLATION_KEYS", hide_env_values = true)]
    pub installation_keys: Option<String>,
    /// Installation mode: the Slack app's Client ID. With SLACK_CLIENT_SECRET
    /// and SLACK_STATE_SECRET it mounts the install flow: GET /slack/install
    /// and GET /slack/oauth/callback.
    #[arg(long, env = "SLACK_CLIENT_ID")]
    pub slack_client_id: Option<String>,
    /// Installation mode: the Slack app's Client Secret.
    #[arg(long, env = "SLACK_CLIENT_SECRET", hide_env_values = true)]
    pub slack_client_secret: Option<String>,
    /// Installation mode: the key that signs the install flow's `state`, at
    /// least 16 bytes; the same on every replica.
    #[arg(long, env = "SLACK_STATE_SECRET", hide_env_values = true)]
    pub slack_state_secret: Option<String>,
    /// Installation mode: the app's Redirect URL, where GET
    /// /slack/oauth/callback is reached from outside; unset: the app's only
    /// registered one.
    #[arg(long, env = "SLACK_REDIRECT_URI")]
    pub slack_redirect_uri: Option<String>,
    /// Installation mode: the bot scopes an install requests, comma-separated.
    #[arg(
        long,
        env = "SLACK_SCOPES",
        value_delimiter = ',',
        default_value = "app_mentions:read,channels:history,groups:history,im:history,mpim:history,chat:write,commands"
    )]
    pub slack_scopes: Vec<String>,
    /// Installation mode: Slack's OAuth base URL; the authorize page is
    /// `{url}/oauth/v2/authorize`, and `oauth.v2.access` and `auth.test` are
    /// called at `{url}/api`.
    #[arg(long, env = "SLACK_OAUTH_URL", default_value = "https://slack.com")]
    pub slack_oauth_url: String,

    /// Linear webhook signing secret; without it Linear is not mounted.
    #[arg(long, env = "LINEAR_WEBHOOK_SECRET", hide_env_values = true)]
    pub linear_webhook_secret: Option<String>,
    /// Linear personal API key.
    #[arg(long, env = "LINEAR_API_KEY", hide_env_values = true)]
    pub linear_api_key: Option<String>,
    /// Linear OAuth access token (actor=app).
    #[arg(long, env = "LINEAR_ACCESS_TOKEN", hide_env_values = true)]
    pub linear_access_token: Option<String>,
    /// The app's Linear user id (its own comments are ignored).
    #[arg(long, env = "LINEAR_APP_USER_ID")]
    pub linear_app_user_id: Option<String>,
    /// Linear GraphQL endpoint.
    #[arg(long, env = "LINEAR_API_URL")]
    pub linear_api_url: Option<String>,

    /// Telegram bot token from @BotFather (`123456:ABC…`); without it
    /// Telegram is not mounted.
    #[arg(long, env = "TELEGRAM_BOT_TOKEN", hide_env_values = true)]
    pub telegram_bot_token: Option<String>,
    /// The `secret_token` the bot's webhook was set with (`setWebhook`);
    /// every delivery must carry it.
    #[arg(long, env = "TELEGRAM_SECRET_TOKEN", hide_env_values = true)]
    pub telegram_secret_token: Option<String>,
    /// Telegram Bot API base URL.
    #[arg(long, env = "TELEGRAM_API_URL")]
    pub telegram_api_url: Option<String>,

    /// The Meta app's secret (deliveries' X-Hub-Signature-256); without it
    /// WhatsApp is not mounted.
    #[arg(long, env = "WHATSAPP_APP_SECRET", hide_env_values = true)]
    pub whatsapp_app_secret: Option<String>,
    /// The verify token entered with the callback URL (the subscription
    /// handshake's hub.verify_token).
    #[arg(long, env = "WHATSAPP_VERIFY_TOKEN", hide_env_values = true)]
    pub whatsapp_verify_token: Option<String>,
    /// The access token that sends for the phone number.
    #[arg(long, env = "WHATSAPP_ACCESS_TOKEN", hide_env_values = true)]
    pub whatsapp_access_token: Option<String>,
    /// The business phone number id (in WhatsApp Manager).
    #[arg(long, env = "WHATSAPP_PHONE_NUMBER_ID")]
    pub whatsapp_phone_number_id: Option<String>,
    /// Graph API base URL with its version.
    #[arg(long, env = "WHATSAPP_API_URL")]
    pub whatsapp_api_url: Option<String>,

    /// The GitHub webhook's secret (mounts /webhooks/github).
    #[arg(long, env = "GITHUB_WEBHOOK_SECRET", hide_env_values = true)]
    pub github_webhook_secret: Option<String>,
    /// A GitHub App's id (with GITHUB_PRIVATE_KEY and GITHUB_APP_SLUG).
    #[arg(long, env = "GITHUB_APP_ID")]
    pub github_app_id: Option<String>,
    /// The App's private key: the PEM itself, or the path of its file.
    #[arg(long, env = "GITHUB_PRIVATE_KEY", hide_env_values = true)]
    pub github_private_key: Option<String>,
    /// The App's slug: it is mentioned as `@<slug>`.
    #[arg(long, env = "GITHUB_APP_SLUG")]
    pub github_app_slug: Option<String>,
    /// A personal access token instead of an App (with GITHUB_LOGIN).
    #[arg(long, env = "GITHUB_TOKEN", hide_env_values = true)]
    pub github_token: Option<String>,
    /// The token user's login: it is mentioned as `@<login>`.
    #[arg(long, env = "GITHUB_LOGIN")]
    pub github_login: Option<String>,
    /// GitHub's REST API base URL (GitHub Enterprise Server's, a fake's).
    #[arg(long, env = "GITHUB_API_URL")]
    pub github_api_url: Option<String>,

    /// PostgreSQL URL (`postgres://user:password@host/db`) for the state;
    /// takes precedence over Redis. Unset with no Redis: in-memory state.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// PostgreSQL schema the tables live in (created and migrated at start).
    #[arg(long, env = "DATABASE_SCHEMA", default_value = "chat")]
    pub database_schema: String,
    /// Namespace of this bot's rows: bots sharing one schema stay apart.
    #[arg(long, env = "DATABASE_NAMESPACE", default_value = "chat")]
    pub database_namespace: String,
    /// Most PostgreSQL connections held.
    #[arg(long, env = "DATABASE_POOL_SIZE", default_value_t = 16)]
    pub database_pool_size: usize,
    /// Timeout of every PostgreSQL call, connecting included (ms).
    #[arg(long, env = "DATABASE_TIMEOUT_MS", default_value_t = 5000)]
    pub database_timeout_ms: u64,

    /// Redis URL; unset (and no DATABASE_URL): in-memory state.
    #[arg(long, env = "REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// Redis Cluster node URLs, comma-separated (instead of REDIS_URL).
    #[arg(
        long,
        env = "REDIS_CLUSTER_URLS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub redis_cluster_urls: Vec<String>,
    /// Prefix of every Redis key.
    #[arg(long, env = "REDIS_PREFIX", default_value = "chat")]
    pub redis_prefix: String,

    /// Dispatch: run the handler before (sync) or after (deferred) the ack.
    #[arg(long, env = "CHAT_DISPATCH", value_enum, default_value_t = DispatchArg::Deferred)]
    pub dispatch: DispatchArg,
    /// What happens to a message that overlaps a running handler.
    #[arg(long, env = "CHAT_CONCURRENCY", value_enum, default_value_t = ConcurrencyArg::Queue)]
    pub concurrency: ConcurrencyArg,
    /// Budget of detached work, waiting included (ms).
    #[arg(long, env = "CHAT_DETACH_TIMEOUT_MS", default_value_t = 60_000)]
    pub detach_timeout_ms: u64,
    /// Cap on detached work in flight.
    #[arg(long, env = "CHAT_MAX_DETACHED", default_value_t = 1024)]
    pub max_detached: usize,
    /// Handlers running inside their request (sync dispatch, slash commands),
    /// at most; past it, the at-capacity answer.
    #[arg(long, env = "CHAT_MAX_INLINE", default_value_t = 256)]
    pub max_inline: usize,
    /// Handlers of one tenant running inside their request, at most.
    #[arg(long, env = "CHAT_MAX_INLINE_PER_TENANT")]
    pub max_inline_per_tenant: Option<usize>,
    /// Cap on one tenant's detached work.
    #[arg(long, env = "CHAT_MAX_DETACHED_PER_TENANT")]
    pub max_detached_per_tenant: Option<usize>,
    /// Queue bound per thread.
    #[arg(long, env = "CHAT_QUEUE_SIZE", default_value_t = 10)]
    pub queue_size: usize,
    /// Debounce quiet interval (ms).
    #[arg(long, env = "CHAT_DEBOUNCE_MS", default_value_t = 1500)]
    pub debounce_ms: u64,
    /// Burst window (ms).
    #[arg(long, env = "CHAT_BURST_WINDOW_MS", default_value_t = 1500)]
    pub burst_window_ms: u64,
    /// Burst: seal a batch early at this many members.
    #[arg(long, env = "CHAT_MAX_BATCH")]
    pub max_batch: Option<usize>,
    /// Concurrent: most handlers per thread at once.
    #[arg(long, env = "CHAT_MAX_CONCURRENT")]
    pub max_concurrent: Option<usize>,
    /// Lease TTL (ms); renewed every third of it.
    #[arg(long, env = "CHAT_LOCK_TTL_MS", default_value_t = 30_000)]
    pub lock_ttl_ms: u64,

    /// Answer the platform "retry" if a delivery is not done after this (ms).
    #[arg(long, env = "CHAT_ACK_TIMEOUT_MS", default_value_t = 2500)]
    pub ack_timeout_ms: u64,
    /// Answer 408 to a request whose body has not arrived within this many ms
    /// of its headers.
    #[arg(long, env = "CHAT_BODY_TIMEOUT_MS", default_value_t = 1000)]
    pub body_timeout_ms: u64,
    /// Forget a subscribed thread after this many ms without an event in it
    /// (default 30 days).
    #[arg(
        long,
        env = "CHAT_SUBSCRIPTION_TTL_MS",
        default_value_t = 2_592_000_000
    )]
    pub subscription_ttl_ms: u64,
    /// Close a connection that has not sent a request's headers within this
    /// many ms.
    #[arg(long, env = "SERVER_HEADER_TIMEOUT_MS", default_value_t = 2000)]
    pub server_header_timeout_ms: u64,
    /// Connections open at once; past it, new ones wait to be accepted.
    #[arg(long, env = "SERVER_MAX_CONNECTIONS", default_value_t = 1024)]
    pub server_max_connections: usize,
    /// Requests handled at once; past it, requests are answered 503.
    #[arg(long, env = "SERVER_MAX_IN_FLIGHT", default_value_t = 512)]
    pub server_max_in_flight: usize,
    /// Answer 503 to a request still running after this many ms.
    #[arg(long, env = "SERVER_REQUEST_TIMEOUT_MS", default_value_t = 10_000)]
    pub server_request_timeout_ms: u64,
    /// Look for threads left by dead replicas this often (ms); 0 turns it off.
    #[arg(long, env = "CHAT_SWEEP_INTERVAL_MS", default_value_t = 30_000)]
    pub sweep_interval_ms: u64,
    /// Timeout of the state call on the ack path, Redis only (ms).
    #[arg(long, env = "REDIS_ACK_TIMEOUT_MS", default_value_t = 5000)]
    pub redis_ack_timeout_ms: u64,
    /// Timeout of every other state call, Redis only (ms).
    #[arg(long, env = "REDIS_TIMEOUT_MS", default_value_t = 5000)]
    pub redis_timeout_ms: u64,
    /// How long an admit whose outcome is unknown is repeated (ms).
    #[arg(long, env = "CHAT_STATE_RETRY_MS", default_value_t = 30_000)]
    pub state_retry_ms: u64,
    /// How many times a run may be lost by a holder that died before the
    /// event is recorded failed (`abandoned`).
    #[arg(long, env = "CHAT_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: u32,
    /// On SIGTERM: let running handlers finish (`drain`), or cancel them at
    /// once (`cancel`); either way what is cancelled is handed back to run on
    /// another replica.
    #[arg(long, env = "CHAT_SHUTDOWN", value_enum, default_value_t = ShutdownArg::Drain)]
    pub shutdown: ShutdownArg,

    /// Do nothing in the handler (no subscribe, no post): measures the runtime
    /// alone, as the benchmarks do.
    #[arg(long, env = "ECHO_NOOP", default_value_t = false)]
    pub echo_noop: bool,
    /// Simulated work at the start of every handler, cut short by its
    /// cancellation (ms): turns, slash commands, clicks, reactions and modal
    /// submissions alike.
    #[arg(long, env = "ECHO_DELAY_MS", default_value_t = 0)]
    pub echo_delay_ms: u64,
    /// Pause between the chunks of a `stream:` answer (ms).
    #[arg(long, env = "ECHO_STREAM_DELAY_MS", default_value_t = 100)]
    pub echo_stream_delay_ms: u64,
    /// Append one JSON line per outcome to this file.
    #[arg(long, env = "ECHO_LEDGER")]
    pub ledger: Option<PathBuf>,
    /// This replica's name in the ledger.
    #[arg(long, env = "REPLICA", default_value = "echo-bot")]
    pub replica: String,
    /// How long shutdown waits for handlers on SIGTERM / SIGINT (ms).
    #[arg(long, env = "SHUTDOWN_DEADLINE_MS", default_value_t = 10_000)]
    pub shutdown_deadline_ms: u64,
    /// Mounts the inspector page at /inspect, opened by this token (at least
    /// 16 characters; `Authorization: Bearer` or the page's login form).
    /// Unset: no inspector. `GET /metrics` is always served.
    #[arg(long, env = "INSPECT_TOKEN", hide_env_values = true)]
    pub inspect_token: Option<String>,
    /// Mounts `POST /notify`, which posts a message proactively (outside any
    /// webhook), opened by this token (`Authorization: Bearer`). Unset: no
    /// `/notify`.
    #[arg(long, env = "NOTIFY_TOKEN", hide_env_values = true)]
    pub notify_token: Option<String>,
}

/// `CHAT_SHUTDOWN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShutdownArg {
    /// Let running handlers finish until most of the deadline.
    Drain,
    /// Cancel running handlers at once.
    Cancel,
}

/// `CHAT_DISPATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DispatchArg {
    /// Handler before the acknowledgement.
    Sync,
    /// Handler detached after it.
    Deferred,
}

/// `CHAT_CONCURRENCY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConcurrencyArg {
    /// Drop overlapping messages.
    Drop,
    /// Queue them; the newest runs with the rest skipped.
    Queue,
    /// Keep only the last after a quiet interval.
    Debounce,
    /// Collect a window; one call with the rest skipped.
    Burst,
    /// Collect a window; one call per member.
    BurstEach,
    /// No lock; at most CHAT_MAX_CONCURRENT at once.
    Concurrent,
}

impl Args {
    /// The HTTP server's limits.
    pub fn server_options(&self) -> chat_runtime::server::ServerOptions {
        chat_runtime::server::ServerOptions::default()
            .header_read_timeout(Duration::from_millis(self.server_header_timeout_ms))
            .max_connections(self.server_max_connections)
            .max_in_flight(self.server_max_in_flight)
            .request_timeout(Duration::from_millis(self.server_request_timeout_ms))
    }

    /// The runtime options these settings describe.
    pub fn runtime_options(&self) -> RuntimeOptions {
        let ms = Duration::from_millis;
        let burst = |mode| {
            let mut b = BurstOptions::default()
                .window(ms(self.burst_window_ms))
                .mode(mode);
            if let Some(m) = self.max_batch {
                b = b.max_batch(m);
            }
            Concurrency::Burst(b)
        };
        let concurrency = match self.concurrency {
            ConcurrencyArg::Drop => Concurrency::Drop,
            ConcurrencyArg::Queue => {
                Concurrency::Queue(QueueOptions::default().max_size(self.queue_size))
            }
            ConcurrencyArg::Debounce => {
                Concurrency::Debounce(DebounceOptions::default().interval(ms(self.debounce_ms)))
            }
            ConcurrencyArg::Burst => burst(BurstMode::Collapse),
            ConcurrencyArg::BurstEach => burst(BurstMode::Each),
            ConcurrencyArg::Concurrent => {
                let mut c = ConcurrentOptions::default();
                if let Some(m) = self.max_concurrent {
                    c = c.max(m);
                }
                Concurrency::Concurrent(c)
            }
        };
        RuntimeOptions::default()
            .dispatch(
                DispatchOptions::default()
                    .mode(match self.dispatch {
                        DispatchArg::Sync => Dispatch::Sync,
                        DispatchArg::Deferred => Dispatch::Deferred,
                    })
                    .detach_timeout(ms(self.detach_timeout_ms)),
            )
            .concurrency(concurrency)
            .admission(
                AdmissionOptions::default()
                    .max_detached(self.max_detached)
                    .max_detached_per_tenant(self.max_detached_per_tenant)
                    .max_inline(self.max_inline)
                    .max_inline_per_tenant(self.max_inline_per_tenant),
            )
            .leases(LeaseOptions::default().ttl(ms(self.lock_ttl_ms)))
            .timeouts(
                TimeoutOptions::default()
                    .ack(ms(self.ack_timeout_ms))
                    .body(ms(self.body_timeout_ms))
                    .state_retry(ms(self.state_retry_ms)),
            )
            .retention(RetentionOptions::default().subscription_ttl(ms(self.subscription_ttl_ms)))
            .recovery(
                RecoveryOptions::default()
                    .sweep_interval(
                        (self.sweep_interval_ms > 0).then(|| ms(self.sweep_interval_ms)),
                    )
                    .max_attempts(self.max_attempts)
                    .shutdown(match self.shutdown {
                        ShutdownArg::Drain => ShutdownMode::Drain,
                        ShutdownArg::Cancel => ShutdownMode::Cancel,
                    }),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_runtime_options() {
        let args = Args::parse_from([
            "echo-bot",
            "--concurrency",
            "burst-each",
            "--max-batch",
            "3",
            "--burst-window-ms",
            "200",
            "--lock-ttl-ms",
            "9000",
        ]);
        let o = args.runtime_options();
        assert_eq!(o.dispatch.mode, Dispatch::Deferred);
        assert_eq!(o.leases.ttl, Duration::from_secs(9));
        match o.concurrency {
            Concurrency::Burst(b) => {
                assert_eq!(b.mode, BurstMode::Each);
                assert_eq!(b.max_batch, Some(3));
                assert_eq!(b.window, Duration::from_millis(200));
            }
            other => panic!("got {other:?}"),
        }
        assert!(o.validate().is_ok());
    }

    #[test]
    fn the_help_names_every_environment_variable() {
        use clap::CommandFactory;
        let help = Args::command().render_long_help().to_string();
        for var in [
            "BIND",
            "SLACK_SIGNING_SECRET",
            "SLACK_BOT_TOKEN",
            "SLACK_BOT_USER_ID",
            "SLACK_API_URL",
            "ECHO_INSTALLATIONS",
            "INSTALLATION_KEYS",
            "SLACK_CLIENT_ID",
            "SLACK_CLIENT_SECRET",
            "SLACK_STATE_SECRET",
            "SLACK_REDIRECT_URI",
            "SLACK_SCOPES",
            "SLACK_OAUTH_URL",
            "LINEAR_WEBHOOK_SECRET",
            "LINEAR_API_KEY",
            "LINEAR_ACCESS_TOKEN",
            "LINEAR_APP_USER_ID",
            "LINEAR_API_URL",
            "TELEGRAM_BOT_TOKEN",
            "TELEGRAM_SECRET_TOKEN",
            "TELEGRAM_API_URL",
            "WHATSAPP_APP_SECRET",
            "WHATSAPP_VERIFY_TOKEN",
            "WHATSAPP_ACCESS_TOKEN",
            "WHATSAPP_PHONE_NUMBER_ID",
            "WHATSAPP_API_URL",
            "GITHUB_WEBHOOK_SECRET",
            "GITHUB_APP_ID",
            "GITHUB_PRIVATE_KEY",
            "GITHUB_APP_SLUG",
            "GITHUB_TOKEN",
            "GITHUB_LOGIN",
            "GITHUB_API_URL",
            "REDIS_URL",
            "DATABASE_URL",
            "DATABASE_SCHEMA",
            "DATABASE_NAMESPACE",
            "DATABASE_POOL_SIZE",
            "DATABASE_TIMEOUT_MS",
            "CHAT_DISPATCH",
            "CHAT_CONCURRENCY",
            "CHAT_DETACH_TIMEOUT_MS",
            "CHAT_MAX_DETACHED",
            "CHAT_MAX_DETACHED_PER_TENANT",
            "CHAT_MAX_INLINE",
            "CHAT_MAX_INLINE_PER_TENANT",
            "CHAT_QUEUE_SIZE",
            "CHAT_DEBOUNCE_MS",
            "CHAT_BURST_WINDOW_MS",
            "CHAT_MAX_BATCH",
            "CHAT_MAX_CONCURRENT",
            "CHAT_LOCK_TTL_MS",
            "CHAT_BODY_TIMEOUT_MS",
            "CHAT_SUBSCRIPTION_TTL_MS",
            "SERVER_HEADER_TIMEOUT_MS",
            "SERVER_MAX_CONNECTIONS",
            "SERVER_MAX_IN_FLIGHT",
            "SERVER_REQUEST_TIMEOUT_MS",
            "ECHO_DELAY_MS",
            "INSPECT_TOKEN",
            "NOTIFY_TOKEN",
        ] {
            assert!(help.contains(var), "--help does not mention {var}");
        }
    }
}
